package report

// The accuracy–cost plot of report.html: one point per row of the ladder
// (model, condition, and run with two runs), x its mean context tokens per
// trial, y its accuracy, each with its interval as an error bar. Like the
// ladder chart it is SVG written by hand (see ladderChart for why), styled
// by the page's CSS, with classes and data attributes a test can find:
//
//	<svg class="acccost">
//	  <g class="point" data-run data-model data-condition>
//	    <path class="errbar errbar-x">   the bootstrap 95% interval of the mean context tokens
//	    <path class="errbar errbar-y">   the accuracy's 95% interval over tasks
//	    <circle class="dot">             the point, with a <title>
//	    <text class="plabel">            its label (one for points on top of one another)
//
// An error bar is left out where its interval is over fewer than two tasks
// (the point's title says n < 2). A row without a trial with a model
// result has no point; the caption names it.

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// htmlAccCost is the accuracy–cost plot's geometry, in the SVG's user
// units.
type htmlAccCost struct {
	W, H, MinWidth, MaxWidth int
	Left, Right, Top, Bottom float64
	XTicks, YTicks           []htmlAxisTick
	XTitleY, YTitleX, MidX   float64
	MidY                     float64
	Points                   []htmlPoint
	Missing                  []string // rows without a point
}

type htmlAxisTick struct {
	At    float64 // x of an x tick, y of a y tick
	Label string
}

type htmlPoint struct {
	Run              int
	Model, Condition string
	Class            string // the dot's colour (m0…m3) and, for a second run, run2
	CX, CY           float64
	XBar, YBar       string // the error bars' paths, "" for none
	Title            string
	Label            string // "" for a point that another's label names
	LX, LY           float64
	Anchor           string // start, middle or end
}

// The plot's layout, in user units.
const (
	plotW       = 560.0
	plotLeft    = 56.0
	plotRight   = 20.0
	plotTop     = 20.0
	plotH       = 260.0
	plotDot     = 5.0
	plotCap     = 4.0  // half an error bar's cap
	plotFont    = 14.0 // a label's size on a phone (12 elsewhere), in user units
	plotCharW   = 8.6  // an estimate of the width of a label's character (bold) at plotFont
	plotColours = 4    // classes m0…m3, by model
)

// accCostChart lays out the accuracy–cost plot of rep's rows.
func accCostChart(rep *Report) htmlAccCost {
	p := htmlAccCost{W: int(plotW), Left: plotLeft, Right: plotW - plotRight, Top: plotTop, Bottom: plotTop + plotH}
	p.XTitleY = p.Bottom + 40
	p.H = int(p.XTitleY + 12)
	p.YTitleX, p.MidX, p.MidY = 16, (p.Left+p.Right)/2, (p.Top+p.Bottom)/2
	p.MinWidth = int(0.6 * float64(p.W))
	p.MaxWidth = int(1.3 * float64(p.W))

	xTop, xStep := niceScale(maxOf(rep.Rows, func(r Row) Dist { return r.Context }))
	x := func(v float64) float64 { return p.Left + v/xTop*(p.Right-p.Left) }
	y := func(v float64) float64 { return p.Bottom - v*(p.Bottom-p.Top) }
	for v := 0.0; v <= xTop+xStep/2; v += xStep {
		p.XTicks = append(p.XTicks, htmlAxisTick{x(v), tickLabel(v)})
	}
	for v := 0; v <= 100; v += 20 {
		p.YTicks = append(p.YTicks, htmlAxisTick{y(float64(v) / 100), fmt.Sprint(v)})
	}

	models := map[string]int{}
	for _, r := range rep.Rows {
		if _, ok := models[r.Model]; !ok {
			models[r.Model] = len(models)
		}
	}
	// What a label must not cover: the dots and the error bars, and the
	// labels placed before it.
	var taken []box
	for _, r := range rep.Rows {
		if r.Graded == 0 {
			continue
		}
		cx, cy := x(r.Context.Mean), y(r.Accuracy.Est)
		taken = append(taken, box{cx - plotDot - 1, cy - plotDot - 1, cx + plotDot + 1, cy + plotDot + 1})
		if r.Context.Tasks >= 2 {
			taken = append(taken, box{x(r.Context.Lo), cy - plotCap, x(r.Context.Hi), cy + plotCap})
		}
		if r.Accuracy.Tasks >= 2 {
			taken = append(taken, box{cx - plotCap, y(r.Accuracy.Hi), cx + plotCap, y(r.Accuracy.Lo)})
		}
	}
	for _, r := range rep.Rows {
		label := r.Condition
		if len(models) > 1 {
			label = r.Model + " " + label
		}
		if len(rep.Runs) > 1 {
			label = fmt.Sprintf("run %d %s", r.Run+1, label)
		}
		if r.Graded == 0 {
			p.Missing = append(p.Missing, label)
			continue
		}
		pt := htmlPoint{Run: r.Run + 1, Model: r.Model, Condition: r.Condition, Label: label,
			Class: fmt.Sprintf("m%d", models[r.Model]%plotColours),
			CX:    x(r.Context.Mean), CY: y(r.Accuracy.Est)}
		if r.Run > 0 {
			pt.Class += " run2"
		}
		if r.Context.Tasks >= 2 && r.Context.Lo < r.Context.Hi {
			lo, hi := x(r.Context.Lo), x(r.Context.Hi)
			pt.XBar = fmt.Sprintf("M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f",
				lo, pt.CY, hi, lo, pt.CY-plotCap, pt.CY+plotCap, hi, pt.CY-plotCap, pt.CY+plotCap)
		}
		if r.Accuracy.Tasks >= 2 && r.Accuracy.Lo < r.Accuracy.Hi {
			lo, hi := y(r.Accuracy.Lo), y(r.Accuracy.Hi)
			pt.YBar = fmt.Sprintf("M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f",
				pt.CX, lo, hi, pt.CX-plotCap, lo, pt.CX+plotCap, pt.CX-plotCap, hi, pt.CX+plotCap)
		}
		pt.Title = fmt.Sprintf("%s: accuracy %d/%d = %.0f%% [%s] over %s; context tokens per trial %.0f [%s]",
			label, r.Correct, r.Graded, 100*r.Accuracy.Est, bracket(r.Accuracy.Tasks, "%.0f", 100*r.Accuracy.Lo, 100*r.Accuracy.Hi),
			plural(r.Accuracy.Tasks, "task"), r.Context.Mean, bracket(r.Context.Tasks, "%.0f", r.Context.Lo, r.Context.Hi))
		p.Points = append(p.Points, pt)
	}
	// Points on top of one another (closer than a dot) share one label,
	// their names joined, by the first of them: a label of its own each
	// would land by another point.
	labelled := make([]bool, len(p.Points))
	for i := range p.Points {
		if labelled[i] {
			continue
		}
		cluster := []htmlPoint{p.Points[i]}
		for j := i + 1; j < len(p.Points); j++ {
			if !labelled[j] && math.Abs(p.Points[j].CX-p.Points[i].CX) < plotDot && math.Abs(p.Points[j].CY-p.Points[i].CY) < plotDot {
				cluster = append(cluster, p.Points[j])
				labelled[j] = true
				p.Points[j].Label = ""
			}
		}
		pt := &p.Points[i]
		if len(cluster) > 1 {
			pt.Label = clusterLabel(cluster, len(models) > 1, len(rep.Runs) > 1)
		}
		pt.LX, pt.LY, pt.Anchor, taken = placeLabel(pt.CX, pt.CY, pt.Label, taken, p)
	}
	return p
}

// box is a rectangle in the plot's units.
type box struct{ x0, y0, x1, y1 float64 }

// placeLabel puts a point's label in the first place around it (the four
// corners, then one and two lines farther up or down) where it covers no
// dot, error bar or other label and stays inside the plot's box; where
// there is none, in the place where it covers the least. It returns the
// text's position and anchor, and taken with the label's box added.
func placeLabel(cx, cy float64, label string, taken []box, p htmlAccCost) (x, y float64, anchor string, _ []box) {
	w := plotCharW*float64(len([]rune(label))) + 2
	const gap = 7.0
	type spot struct {
		dx, dy float64
		anchor string
	}
	var spots []spot
	for _, dy := range []float64{0, plotFont, 2 * plotFont} {
		spots = append(spots,
			spot{gap, -gap - dy, "start"}, spot{gap, gap + plotFont - 2 + dy, "start"},
			spot{-gap, -gap - dy, "end"}, spot{-gap, gap + plotFont - 2 + dy, "end"})
	}
	bounds := box{p.Left + 2, p.Top - 14, float64(p.W) - 2, p.Bottom - 2}
	boxOf := func(s spot) box {
		x0 := cx + s.dx
		if s.anchor == "end" {
			x0 -= w
		}
		by := cy + s.dy
		return box{x0, by - plotFont + 2, x0 + w, by + 3}
	}
	choice, least := spots[0], math.Inf(1)
	for _, s := range spots {
		b := boxOf(s)
		// What it covers, and (far worse) what of it falls outside.
		cost := 100 * (b.area() - b.intersect(bounds))
		for _, t := range taken {
			cost += b.intersect(t)
		}
		if cost < least {
			choice, least = s, cost
		}
		if cost == 0 {
			break
		}
	}
	return cx + choice.dx, cy + choice.dy, choice.anchor, append(taken, boxOf(choice))
}

func (a box) area() float64 { return (a.x1 - a.x0) * (a.y1 - a.y0) }

// intersect is the area a and b share.
func (a box) intersect(b box) float64 {
	return max(0, min(a.x1, b.x1)-max(a.x0, b.x0)) * max(0, min(a.y1, b.y1)-max(a.y0, b.y0))
}

// clusterLabel names the rows of points on top of one another, shortly:
// "B, B0"; "B, B0 (run 1, run 2)" when each run (or model) has the same
// conditions there; else "run 1 B, B0; run 2 C".
func clusterLabel(pts []htmlPoint, models, runs bool) string {
	var prefixes []string
	conds := map[string][]string{}
	for _, pt := range pts {
		var pre []string
		if runs {
			pre = append(pre, fmt.Sprintf("run %d", pt.Run))
		}
		if models {
			pre = append(pre, pt.Model)
		}
		k := strings.Join(pre, " ")
		if _, ok := conds[k]; !ok {
			prefixes = append(prefixes, k)
		}
		conds[k] = append(conds[k], pt.Condition)
	}
	same := true
	for _, k := range prefixes {
		same = same && slices.Equal(conds[k], conds[prefixes[0]])
	}
	switch {
	case len(prefixes) == 1 && prefixes[0] == "":
		return strings.Join(conds[""], ", ")
	case same && len(prefixes) > 1:
		return strings.Join(conds[prefixes[0]], ", ") + " (" + strings.Join(prefixes, ", ") + ")"
	}
	var parts []string
	for _, k := range prefixes {
		parts = append(parts, k+" "+strings.Join(conds[k], ", "))
	}
	return strings.Join(parts, "; ")
}

// missingText is the caption's note on rows without a point.
func (p htmlAccCost) MissingText() string {
	if len(p.Missing) == 0 {
		return ""
	}
	return "Not shown, with no trial with a model result: " + strings.Join(p.Missing, ", ") + "."
}

// accCostSource is the plot's template, used by htmlSource.
const accCostSource = `{{define "acccost"}}<figure class="chart">
<div class="scroll">
<svg class="acccost" viewBox="0 0 {{.W}} {{.H}}" style="min-width:{{.MinWidth}}px;max-width:{{.MaxWidth}}px" role="img" aria-labelledby="acccost-title">
<title id="acccost-title">Accuracy against mean context tokens per trial, one point per condition, with the intervals of both</title>
{{- $p := .}}
<g class="grid">{{range .YTicks}}<line x1="{{f $p.Left}}" x2="{{f $p.Right}}" y1="{{f .At}}" y2="{{f .At}}"></line>{{end}}{{range .XTicks}}<line x1="{{f .At}}" x2="{{f .At}}" y1="{{f $p.Top}}" y2="{{f $p.Bottom}}"></line>{{end}}</g>
<g class="axis">{{range .YTicks}}<text class="tick" x="{{f (add $p.Left -6)}}" y="{{f (add .At 4)}}" text-anchor="end">{{.Label}}</text>{{end}}
{{- range .XTicks}}<text class="tick" x="{{f .At}}" y="{{f (add $p.Bottom 16)}}" text-anchor="middle">{{.Label}}</text>{{end}}
<text class="axis-title" transform="translate({{f .YTitleX}} {{f .MidY}}) rotate(-90)" text-anchor="middle">accuracy (%)</text>
<text class="axis-title" x="{{f .MidX}}" y="{{f .XTitleY}}" text-anchor="middle">context tokens per trial (mean)</text></g>
<line class="baseline" x1="{{f .Left}}" x2="{{f .Right}}" y1="{{f .Bottom}}" y2="{{f .Bottom}}"></line><line class="baseline" x1="{{f .Left}}" x2="{{f .Left}}" y1="{{f .Top}}" y2="{{f .Bottom}}"></line>
{{- range .Points}}
<g class="point" data-run="{{.Run}}" data-model="{{.Model}}" data-condition="{{.Condition}}">
{{- if .XBar}}<path class="errbar errbar-x" d="{{.XBar}}"></path>{{end}}
{{- if .YBar}}<path class="errbar errbar-y" d="{{.YBar}}"></path>{{end}}
<circle class="dot {{.Class}}" cx="{{f .CX}}" cy="{{f .CY}}" r="5"><title>{{.Title}}</title></circle>
{{- if .Label}}<text class="plabel" x="{{f .LX}}" y="{{f .LY}}" text-anchor="{{.Anchor}}">{{.Label}}</text>{{end}}
</g>
{{- end}}
</svg>
</div>
<figcaption>One point per row of the ladder: across, the mean context tokens per trial (the prompt tokens of all its model calls, summed) with the bootstrap 95% interval over tasks; up, the accuracy with its 95% interval over tasks, as in the ladder. Up and to the left is better: more right answers for fewer tokens. A bar is left out where its interval is over fewer than two tasks (n &lt; 2).{{with .MissingText}} {{.}}{{end}}</figcaption>
</figure>{{end}}`
