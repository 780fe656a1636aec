package report

// The session section of report.html (a run with session trials only):
// the three tables of the Markdown's section, in its formats, and the W(n)
// chart. Like the other charts it is SVG written by hand, styled by the
// page's CSS, with classes and data attributes a test can find:
//
//	<svg class="wn">
//	  <g class="series" data-run data-model data-condition>
//	    <path class="line sN">          the means, stage to stage
//	    <path class="errbar sN">        a point's bootstrap 95% interval (none over fewer than two sessions)
//	    <circle class="dot sN" data-stage>  a point, with a <title>
//	  <g class="legend">                a swatch and a name per series
//
// N is the series' colour (s0…s5, then again, dashed). The points of one
// stage are set a little apart sideways, so that their whiskers do not
// hide one another.

import (
	"fmt"
	"html/template"
	"strings"
)

// htmlSessions is the session section: its tables, ready to print, and
// the chart.
type htmlSessions struct {
	Accuracy, W, CC htmlStageTable
	Chart           htmlWn
}

// htmlStageTable is a table of the section: its head and its rows' cells.
type htmlStageTable struct {
	Class string
	Head  []string
	Rows  [][]template.HTML
}

// htmlWn is the W(n) chart's geometry, in the SVG's user units.
type htmlWn struct {
	W, H, MinWidth, MaxWidth int
	Left, Right, Top, Bottom float64
	XTicks, YTicks           []htmlAxisTick
	XTitleY, YTitleX         float64
	MidX, MidY               float64
	Series                   []htmlWnSeries
	Legend                   []htmlWnKey
}

type htmlWnSeries struct {
	Run              int
	Model, Condition string
	Class            string
	Line             string // the path through the means
	Points           []htmlWnPoint
}

type htmlWnPoint struct {
	Stage  int
	CX, CY float64
	Bar    string // the whisker's path, "" for none
	Title  string
}

// htmlWnKey is a legend entry: a swatch from X to X+wnSwatch at Y, its
// label after it.
type htmlWnKey struct {
	Class, Label string
	X, Y         float64
}

// The chart's layout, in user units.
const (
	wnW       = 560.0
	wnLeft    = 64.0
	wnRight   = 20.0
	wnTop     = 20.0
	wnH       = 260.0
	wnPad     = 28.0 // from the plot's sides to the first and last stage
	wnSwatch  = 22.0
	wnKeyH    = 20.0
	wnColours = 6
)

// wnLabel names a session row in the chart and its legend.
func wnLabel(r SessionRow, models, runs bool) string {
	label := r.Condition
	if models {
		label = r.Model + " " + label
	}
	if runs {
		label = fmt.Sprintf("run %d %s", r.Run+1, label)
	}
	return label
}

// wnChart lays out the W(n) chart of ss: a line per row, through its mean
// cumulative input tokens at each stage, each point with its interval.
func wnChart(ss *Sessions, manyRuns bool) htmlWn {
	c := htmlWn{W: int(wnW), Left: wnLeft, Right: wnW - wnRight, Top: wnTop, Bottom: wnTop + wnH}
	c.XTitleY = c.Bottom + 38
	c.YTitleX, c.MidX, c.MidY = 16, (c.Left+c.Right)/2, (c.Top+c.Bottom)/2
	c.MinWidth = int(0.6 * wnW)
	c.MaxWidth = int(1.3 * wnW)

	top := 0.0
	models := map[string]bool{}
	for _, r := range ss.Rows {
		models[r.Model] = true
		for _, s := range r.Stages {
			if s.W.N > 0 {
				top = max(top, s.W.Mean, s.W.Hi)
			}
		}
	}
	yTop, yStep := niceScale(top)
	y := func(v float64) float64 { return c.Bottom - v/yTop*(c.Bottom-c.Top) }
	x := func(n int) float64 {
		if ss.MaxStage <= 1 {
			return c.MidX
		}
		return c.Left + wnPad + float64(n-1)/float64(ss.MaxStage-1)*(c.Right-c.Left-2*wnPad)
	}
	for v := 0.0; v <= yTop+yStep/2; v += yStep {
		c.YTicks = append(c.YTicks, htmlAxisTick{y(v), tickLabel(v)})
	}
	for n := 1; n <= ss.MaxStage; n++ {
		c.XTicks = append(c.XTicks, htmlAxisTick{x(n), fmt.Sprint(n)})
	}

	m := len(ss.Rows)
	dodge := min(6, 36/float64(max(m, 1)))
	for i, r := range ss.Rows {
		label := wnLabel(r, len(models) > 1, manyRuns)
		s := htmlWnSeries{Run: r.Run + 1, Model: r.Model, Condition: r.Condition, Class: fmt.Sprintf("s%d", i%wnColours)}
		if i >= wnColours {
			s.Class += " alt"
		}
		dx := (float64(i) - float64(m-1)/2) * dodge
		var line strings.Builder
		move := true
		for _, st := range r.Stages {
			if st.W.N == 0 {
				move = true // no session reached it: the line breaks
				continue
			}
			p := htmlWnPoint{Stage: st.Stage, CX: x(st.Stage) + dx, CY: y(st.W.Mean)}
			cmd := "L"
			if move {
				cmd, move = "M", false
			}
			fmt.Fprintf(&line, "%s%.1f %.1f", cmd, p.CX, p.CY)
			if st.W.Tasks >= 2 && st.W.Lo < st.W.Hi {
				lo, hi := y(st.W.Lo), y(st.W.Hi)
				p.Bar = fmt.Sprintf("M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f",
					p.CX, lo, hi, p.CX-plotCap, lo, p.CX+plotCap, p.CX-plotCap, hi, p.CX+plotCap)
			}
			mean, ci, left := wParts(st)
			p.Title = fmt.Sprintf("%s, stage %d: W = %s", label, st.Stage, mean)
			if ci != "" {
				p.Title += " [" + ci + "]"
			}
			p.Title += " input tokens over " + plural(st.Reached, "session")
			if left != "" {
				p.Title += " (" + left + ": ended before it)"
			}
			s.Points = append(s.Points, p)
		}
		s.Line = line.String()
		c.Series = append(c.Series, s)
	}

	// The legend, under the axis title, in rows as wide as the plot.
	kx, ky := c.Left, c.XTitleY+26
	for _, s := range c.Series {
		label := s.Condition
		for _, r := range ss.Rows {
			if r.Run+1 == s.Run && r.Model == s.Model && r.Condition == s.Condition {
				label = wnLabel(r, len(models) > 1, manyRuns)
			}
		}
		w := wnSwatch + 6 + plotCharW*float64(len([]rune(label))) + 18
		if kx > c.Left && kx+w > c.Right {
			kx, ky = c.Left, ky+wnKeyH
		}
		c.Legend = append(c.Legend, htmlWnKey{Class: s.Class, Label: label, X: kx, Y: ky})
		kx += w
	}
	c.H = int(ky + 10)
	return c
}

// sessionsHTML is the session section of rep, nil without one.
func sessionsHTML(rep *Report) *htmlSessions {
	ss := rep.Sessions
	if ss == nil || ss.MaxStage == 0 {
		return nil
	}
	many := len(rep.Runs) > 1
	lead := []string{"model", "condition"}
	if many {
		lead = append([]string{"run"}, lead...)
	}
	labels := func(r SessionRow) []template.HTML {
		var cells []template.HTML
		for _, l := range sessionLabels(r, many) {
			cells = append(cells, template.HTML(template.HTMLEscapeString(l)))
		}
		return cells
	}
	stages := func(prefix string) []string {
		var h []string
		for n := 1; n <= ss.MaxStage; n++ {
			h = append(h, fmt.Sprintf("%s%d", prefix, n))
		}
		return h
	}
	ci := func(s string) template.HTML {
		return template.HTML(` <span class="ci">[` + template.HTMLEscapeString(s) + `]</span>`)
	}
	h := &htmlSessions{Chart: wnChart(ss, many)}
	h.Accuracy = htmlStageTable{Class: "stage-accuracy", Head: append(append(append([]string{}, lead...), "context", "sessions", "infra"), stages("stage ")...)}
	h.W = htmlStageTable{Class: "wn", Head: append(append([]string{}, lead...), stages("n = ")...)}
	h.CC = htmlStageTable{Class: "ccn", Head: append(append(append([]string{}, lead...), "resource", "q"), stages("n = ")...)}
	esc := func(s string) template.HTML { return template.HTML(template.HTMLEscapeString(s)) }
	for _, r := range ss.Rows {
		acc := append(labels(r), esc(r.Context), esc(fmt.Sprint(r.Sessions)), esc(fmt.Sprint(r.Infra)))
		w := labels(r)
		counts := append(labels(r), "passed / cut / failed", "")
		for _, s := range r.Stages {
			acc = append(acc, accuracyHTML(s.Correct, r.Sessions, s.Accuracy))
			mean, bounds, left := wParts(s)
			cell := esc(mean)
			if bounds != "" {
				cell += ci(bounds)
			}
			if left != "" {
				cell += template.HTML(` <span class="q">(` + template.HTMLEscapeString(left) + `)</span>`)
			}
			w = append(w, cell)
			counts = append(counts, esc(countsText(s)))
		}
		h.Accuracy.Rows = append(h.Accuracy.Rows, acc)
		h.W.Rows = append(h.W.Rows, w)
		h.CC.Rows = append(h.CC.Rows, counts)
		for f := range len(ccResources) * len(ccQ) {
			cells := append(labels(r), esc(ccResources[f/len(ccQ)].label), esc(fmt.Sprintf("%.2f", ccQ[f%len(ccQ)])))
			for _, s := range r.Stages {
				est, bounds := ccParts(s.CC[f])
				cell := esc(est)
				if s.CC[f].Reached() {
					cell = "<b>" + cell + "</b>"
				}
				if bounds != "" {
					cell += ci(bounds)
				}
				cells = append(cells, cell)
			}
			h.CC.Rows = append(h.CC.Rows, cells)
		}
	}
	return h
}

// sessionsCSS styles the session section; the page carries it only when
// it has one.
const sessionsCSS = `svg.wn{display:block;width:100%;height:auto;margin:0 auto}
svg.wn text{fill:var(--fg);font-size:12px;font-family:inherit}
svg.wn .tick{font-size:11px;fill:var(--muted)}
svg.wn .axis-title{font-size:11.5px}
svg.wn .grid line{stroke:var(--line);stroke-width:1}
svg.wn .baseline{stroke:var(--muted);stroke-width:1}
svg.wn .line{fill:none;stroke-width:2}
svg.wn .errbar{fill:none;stroke-width:1.4;opacity:.8}
svg.wn .swatch{stroke-width:3}
svg.wn .dot{stroke:var(--bg);stroke-width:1.5}
svg.wn .alt{stroke-dasharray:5 3}
svg.wn .dot.alt{stroke-dasharray:none}
svg.wn .s0{stroke:var(--ctx)}svg.wn .dot.s0{fill:var(--ctx);stroke:var(--bg)}
svg.wn .s1{stroke:var(--out)}svg.wn .dot.s1{fill:var(--out);stroke:var(--bg)}
svg.wn .s2{stroke:var(--ok)}svg.wn .dot.s2{fill:var(--ok);stroke:var(--bg)}
svg.wn .s3{stroke:var(--infra)}svg.wn .dot.s3{fill:var(--infra);stroke:var(--bg)}
svg.wn .s4{stroke:var(--bad)}svg.wn .dot.s4{fill:var(--bad);stroke:var(--bg)}
svg.wn .s5{stroke:var(--warn)}svg.wn .dot.s5{fill:var(--warn);stroke:var(--bg)}
@media (max-width:640px){svg.wn text,svg.wn .tick,svg.wn .axis-title{font-size:14px}}
`

// wnSource is the session section's template, used by htmlSource.
const wnSource = `{{define "sessions"}}
<section id="sessions">
<h2>Sessions, stage by stage</h2>
<p class="lede">{{sessionsMethod}}</p>
<h3>Accuracy by stage</h3>
<p class="lede">{{stageAccuracyMethod}}</p>
{{template "stagetable" .Accuracy}}
<h3>W(n), cumulative input tokens</h3>
<p class="lede">{{wnMethod}}</p>
{{template "stagetable" .W}}
{{- with .Chart}}
<figure class="chart">
<div class="scroll">
<svg class="wn" viewBox="0 0 {{.W}} {{.H}}" style="min-width:{{.MinWidth}}px;max-width:{{.MaxWidth}}px" role="img" aria-labelledby="wn-title">
<title id="wn-title">Cumulative input tokens against the stage, one line per condition, with bootstrap 95% intervals over sessions</title>
{{- $p := .}}
<g class="grid">{{range .YTicks}}<line x1="{{f $p.Left}}" x2="{{f $p.Right}}" y1="{{f .At}}" y2="{{f .At}}"></line>{{end}}{{range .XTicks}}<line x1="{{f .At}}" x2="{{f .At}}" y1="{{f $p.Top}}" y2="{{f $p.Bottom}}"></line>{{end}}</g>
<g class="axis">{{range .YTicks}}<text class="tick" x="{{f (add $p.Left -6)}}" y="{{f (add .At 4)}}" text-anchor="end">{{.Label}}</text>{{end}}
{{- range .XTicks}}<text class="tick" x="{{f .At}}" y="{{f (add $p.Bottom 16)}}" text-anchor="middle">{{.Label}}</text>{{end}}
<text class="axis-title" transform="translate({{f .YTitleX}} {{f .MidY}}) rotate(-90)" text-anchor="middle">cumulative input tokens, W(n) (mean)</text>
<text class="axis-title" x="{{f .MidX}}" y="{{f .XTitleY}}" text-anchor="middle">stage n</text></g>
<line class="baseline" x1="{{f .Left}}" x2="{{f .Right}}" y1="{{f .Bottom}}" y2="{{f .Bottom}}"></line><line class="baseline" x1="{{f .Left}}" x2="{{f .Left}}" y1="{{f .Top}}" y2="{{f .Bottom}}"></line>
{{- range .Series}}
<g class="series" data-run="{{.Run}}" data-model="{{.Model}}" data-condition="{{.Condition}}">
{{- $s := .}}
<path class="line {{.Class}}" d="{{.Line}}"></path>
{{- range .Points}}{{if .Bar}}<path class="errbar {{$s.Class}}" d="{{.Bar}}"></path>{{end}}{{end}}
{{- range .Points}}<circle class="dot {{$s.Class}}" data-stage="{{.Stage}}" cx="{{f .CX}}" cy="{{f .CY}}" r="4"><title>{{.Title}}</title></circle>{{end}}
</g>
{{- end}}
<g class="legend">{{range .Legend}}<line class="swatch {{.Class}}" x1="{{f .X}}" x2="{{f (add .X 22)}}" y1="{{f (add .Y -4)}}" y2="{{f (add .Y -4)}}"></line><text x="{{f (add .X 28)}}" y="{{f .Y}}">{{.Label}}</text>{{end}}</g>
</svg>
</div>
<figcaption>One line per condition: across, the stage n; up, W(n), the mean input tokens of stages 1..n together, over the sessions that reached stage n, with its bootstrap 95% interval over sessions as a whisker (none over fewer than two sessions). A session that ended before stage n is left out at n, so a line may step where sessions drop out: the table above says how many. The points of one stage are set a little apart sideways so that their whiskers stay apart.</figcaption>
</figure>
{{- end}}
<h3>CC_q(n), the budget a share q of sessions needs</h3>
<p class="lede">{{ccMethod}}</p>
{{template "stagetable" .CC}}
</section>
{{end}}
{{define "stagetable"}}<div class="scroll"><table class="{{.Class}}">
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}
<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}
</tbody></table></div>{{end}}`
