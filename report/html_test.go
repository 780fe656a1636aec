package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The model's text that the page must show as text: a script in a cell's
// output, markup in the model's message.
const (
	htmlEvilOutput  = `<script>document.title="pwned";console.error("pwned")</script>`
	htmlEvilMessage = `</pre><img src=x onerror="console.error('img')"> & a message`
)

// The trials the fixture's copy edits.
const (
	htmlEvilTrial    = "reference.B.s-t4-2.r1"  // the model's text above
	htmlMissingTrial = "reference.C.s-t8-3.r2"  // its trajectory deleted
	htmlBadLineTrial = "reference.D.s-t1-1.r1"  // a line that is not JSON
	htmlSkipTrial    = "reference.B0.s-t1-1.r1" // an event kind the reader does not know, and a torn last line
	htmlRestartTrial = "reference.D.s-t4-2.r1"  // a kernel restart, written before the cell that killed the kernel
	htmlRepairTrial  = "reference.C.s-t1-1.r1"  // fences the harness took out
	htmlCLITrial     = "reference.A.s-t1-1.r1"  // condition A's bash call
	htmlInfraTrial   = "reference.B.s-t1-1.r2"  // an infra failure
	htmlFixtureTasks = 3                        // tasks of the fixture
	htmlFixtureReps  = 2                        // and reps
)

// htmlFixture copies the report's fixture run (testdata/report/run) to a
// temporary folder and edits the copy's trajectories for the page's edge
// cases (the constants above); the fixture itself stays as it is.
func htmlFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.CopyFS(dir, os.DirFS(fixture)))
	traj := func(name string) string { return filepath.Join(dir, "trajectories", name+".jsonl") }
	editEvents(t, traj(htmlEvilTrial), func(ev map[string]any) []map[string]any {
		switch ev["type"] {
		case "cell":
			ev["output"] = htmlEvilOutput + "\n" + ev["output"].(string)
		case "call":
			ev["content"] = htmlEvilMessage
		}
		return []map[string]any{ev}
	})
	editEvents(t, traj(htmlCLITrial), func(ev map[string]any) []map[string]any {
		if ev["type"] == "cell" { // a read call before the bash one
			read := map[string]any{"type": "cell", "time": ev["time"], "turn": 1, "tool": "read",
				"arguments": `{"path":"data/teams.jsonl","limit":1}`, "code": "", "status": "ok",
				"output": "1\t{\"id\": \"t1\", \"name\": \"Falcon\"}\n[ctxcode: 2 more lines: read on with offset 2]"}
			return []map[string]any{read, ev}
		}
		return []map[string]any{ev}
	})
	require.NoError(t, os.Remove(traj(htmlMissingTrial)))
	b, err := os.ReadFile(traj(htmlBadLineTrial))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines = append(lines[:2], append([]string{"{not json\n"}, lines[2:]...)...)
	require.NoError(t, os.WriteFile(traj(htmlBadLineTrial), []byte(strings.Join(lines, "")), 0o644))
	editEvents(t, traj(htmlSkipTrial), func(ev map[string]any) []map[string]any {
		if ev["type"] == "call" {
			return []map[string]any{ev, {"type": "thought", "time": ev["time"], "text": "a kind of a later version"}}
		}
		return []map[string]any{ev}
	})
	f, err := os.OpenFile(traj(htmlSkipTrial), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"type":"end","time":"2026-`)
	require.NoError(t, errors.Join(err, f.Close()))
	editEvents(t, traj(htmlRestartTrial), func(ev map[string]any) []map[string]any {
		if ev["type"] == "cell" {
			restart := map[string]any{"type": "restart", "time": ev["time"], "restarts": 1, "cause": "the kernel died: exit status 137"}
			return []map[string]any{restart, ev}
		}
		return []map[string]any{ev}
	})
	return dir
}

// editEvents rewrites a trajectory event by event.
func editEvents(t *testing.T, path string, edit func(map[string]any) []map[string]any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(line, &ev))
		for _, e := range edit(ev) {
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(e))
		}
	}
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
}

// htmlRender builds the report of the run directories and renders its page.
func htmlRender(t *testing.T, opts Options, dirs ...string) (string, *Report, []*Run) {
	t.Helper()
	var runs []*Run
	for _, d := range dirs {
		r, err := Load(d)
		require.NoError(t, err)
		runs = append(runs, r)
	}
	rep, err := Build(runs, opts)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, HTML(&b, rep, runs))
	return b.String(), rep, runs
}

// htmlVoid are the elements without an end tag.
var htmlVoid = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
	"img": true, "input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

var (
	htmlStyle = regexp.MustCompile(`(?s)<style>.*?</style>`)
	htmlTag   = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*?)(/?)>`)
	htmlAttr  = regexp.MustCompile(`\s([a-zA-Z:-]+)="([^"]*)"`)
	htmlText  = regexp.MustCompile(`<[^>]*>`)
)

// htmlWellFormed checks that every element the page opens it closes, in
// order, and that no text holds a raw "<" (the escaping would have missed
// it); it returns the tags it read.
func htmlWellFormed(t *testing.T, page string) {
	t.Helper()
	require.True(t, strings.HasPrefix(page, "<!doctype html>\n"), "the page starts with its doctype")
	body := htmlStyle.ReplaceAllString(strings.TrimPrefix(page, "<!doctype html>\n"), "<style></style>")
	var stack []string
	last := 0
	for _, m := range htmlTag.FindAllStringSubmatchIndex(body, -1) {
		text := body[last:m[0]]
		require.NotContains(t, text, "<", "a raw < in the text before offset %d", m[0])
		last = m[1]
		closing, name, selfClosing := body[m[2]:m[3]] == "/", strings.ToLower(body[m[4]:m[5]]), body[m[8]:m[9]] == "/"
		switch {
		case closing:
			require.NotEmpty(t, stack, "</%s> closes nothing (offset %d)", name, m[0])
			require.Equal(t, stack[len(stack)-1], name, "</%s> closes <%s> (offset %d)", name, stack[len(stack)-1], m[0])
			stack = stack[:len(stack)-1]
		case htmlVoid[name] || selfClosing:
		default:
			stack = append(stack, name)
		}
	}
	require.NotContains(t, body[last:], "<")
	require.Empty(t, stack, "elements left open")
}

func htmlPageOf(t *testing.T) (string, *Report, []*Run) {
	t.Helper()
	return htmlRender(t, Options{}, htmlFixture(t))
}

func TestHTMLIsOneSelfContainedPage(t *testing.T) {
	page, _, _ := htmlPageOf(t)
	htmlWellFormed(t, page)
	for _, pat := range []string{
		`(?i)<script`, `(?i)<(link|iframe|object|embed|img|video|audio|source|base|frame)\b`,
		`(?i)@import`, `(?i)url\(`, `(?i)https?:`, `(?i)//[a-z0-9.-]+\.[a-z]{2,}/`, `(?i)http-equiv`,
	} {
		assert.NotRegexp(t, pat, page, "the page must fetch nothing and run nothing")
	}
	// Every link and source is an anchor within the page.
	for _, m := range htmlAttr.FindAllStringSubmatch(page, -1) {
		switch strings.ToLower(m[1]) {
		case "href", "src", "srcset", "action", "formaction", "poster", "xlink:href", "background":
			assert.True(t, strings.HasPrefix(m[2], "#"), "%s=%q leaves the page", m[1], m[2])
		}
		assert.False(t, strings.HasPrefix(strings.ToLower(m[1]), "on"), "an event handler %s", m[1])
	}
	assert.Contains(t, page, `<meta name="viewport" content="width=device-width, initial-scale=1">`)
	assert.Contains(t, page, `.scroll{overflow-x:auto`, "tables scroll in their own box")
}

func TestHTMLEscapesTheModelsText(t *testing.T) {
	page, _, _ := htmlPageOf(t)
	trial := htmlTrialBlock(t, page, "t-"+htmlEvilTrial)
	assert.Contains(t, trial, `&lt;script&gt;document.title=&#34;pwned&#34;;console.error(&#34;pwned&#34;)&lt;/script&gt;`)
	assert.Contains(t, trial, `&lt;/pre&gt;&lt;img src=x onerror=&#34;console.error(&#39;img&#39;)&#34;&gt; &amp; a message`)
	assert.NotContains(t, page, "<script")
	assert.NotContains(t, page, "<img")
}

// htmlTrialBlock is the page's <details> of one trial.
func htmlTrialBlock(t *testing.T, page, id string) string {
	t.Helper()
	start := strings.Index(page, `<details class="trial" id="`+id+`">`)
	require.GreaterOrEqual(t, start, 0, "no transcript %s", id)
	rest := page[start+1:]
	end := len(rest)
	for _, stop := range []string{`<details class="trial"`, `<h3`, `</section>`} {
		if i := strings.Index(rest, stop); i >= 0 && i < end {
			end = i
		}
	}
	return page[start : start+1+end]
}

var htmlBarRE = regexp.MustCompile(`<rect class="bar (bar-context|bar-output)" data-run="(\d+)" data-model="([^"]*)" data-condition="([^"]*)" x="([^"]*)" y="([^"]*)" width="([^"]*)" height="([^"]*)">`)

// htmlBars are the chart's bars by series and "run/model/condition", their
// heights.
func htmlBars(t *testing.T, page string) map[string]map[string][]float64 {
	t.Helper()
	bars := map[string]map[string][]float64{}
	for _, m := range htmlBarRE.FindAllStringSubmatch(page, -1) {
		h, err := strconv.ParseFloat(m[8], 64)
		require.NoError(t, err)
		if bars[m[1]] == nil {
			bars[m[1]] = map[string][]float64{}
		}
		k := m[2] + "/" + html.UnescapeString(m[3]) + "/" + html.UnescapeString(m[4])
		bars[m[1]][k] = append(bars[m[1]][k], h)
	}
	return bars
}

func TestHTMLChartHasABarPerConditionAndSeries(t *testing.T) {
	page, rep, _ := htmlPageOf(t)
	bars := htmlBars(t, page)
	require.Len(t, rep.Rows, 5)
	for _, series := range []string{"bar-context", "bar-output"} {
		assert.Len(t, bars[series], len(rep.Rows), "%s: a bar per condition", series)
		assert.Equal(t, len(rep.Rows), strings.Count(page, `class="bar `+series+`"`))
	}
	// Bar heights follow the Report's means, on one scale per series.
	for series, mean := range map[string]func(Row) float64{
		"bar-context": func(r Row) float64 { return r.Context.Mean },
		"bar-output":  func(r Row) float64 { return r.Output.Mean },
	} {
		first := rep.Rows[0]
		h0 := bars[series]["1/"+first.Model+"/"+first.Condition]
		require.Len(t, h0, 1)
		for _, r := range rep.Rows {
			h := bars[series][fmt.Sprintf("1/%s/%s", r.Model, r.Condition)]
			require.Len(t, h, 1, "%s %s: one bar", series, r.Condition)
			assert.InDelta(t, mean(r)/mean(first), h[0]/h0[0], 0.01, "%s %s: height as the mean", series, r.Condition)
		}
	}
	// The accuracy is marked above each pair, and the axes are named.
	for _, r := range rep.Rows {
		assert.Contains(t, page, fmt.Sprintf(`data-condition="%s">`+"\n"+`<text class="acc" `, r.Condition))
	}
	for _, s := range []string{`class="whisker"`, `viewBox="0 0 `} {
		assert.Contains(t, page, s)
	}
}

// TestHTMLChartPanelsHaveTheirOwnScales: context and output tokens, whose
// scales differ, are each in a panel of its own, one above the other, each
// titled with what it counts and the unit of its axis; no bar of one
// series stands beside a bar of the other on another scale.
func TestHTMLChartPanelsHaveTheirOwnScales(t *testing.T) {
	page, _, _ := htmlPageOf(t)
	titles := regexp.MustCompile(`<g class="panel panel-(\w+)">\n<rect class="swatch swatch-(\w+)"[^>]*></rect><text class="panel-title"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(page, -1)
	require.Len(t, titles, 2, "a panel per series")
	assert.Equal(t, []string{"context", "context", "context tokens per trial (mean)"}, titles[0][1:])
	assert.Equal(t, []string{"output", "output", "output tokens per trial (mean), its own scale"}, titles[1][1:])
	assert.Equal(t, 2, strings.Count(page, `rotate(-90)" text-anchor="middle">tokens</text>`), "each panel's axis names its unit")

	// Where each series' bars stand: all on one baseline per series, the
	// output panel wholly below the context one.
	type span struct{ top, bottom float64 }
	spans := map[string]*span{}
	for _, m := range htmlBarRE.FindAllStringSubmatch(page, -1) {
		y, err := strconv.ParseFloat(m[6], 64)
		require.NoError(t, err)
		h, err := strconv.ParseFloat(m[8], 64)
		require.NoError(t, err)
		sp := spans[m[1]]
		if sp == nil {
			spans[m[1]] = &span{y, y + h}
			continue
		}
		assert.InDelta(t, sp.bottom, y+h, 0.11, "%s: one baseline", m[1])
		sp.top = min(sp.top, y)
	}
	require.Len(t, spans, 2)
	assert.Greater(t, spans["bar-output"].top, spans["bar-context"].bottom, "the output panel is below the context one, not beside it")
	// Each panel's axis runs from 0 at its own baseline.
	ticks := regexp.MustCompile(`<text class="tick (ctx|out)" x="[^"]*" y="([^"]*)" text-anchor="end">0</text>`).FindAllStringSubmatch(page, -1)
	require.Len(t, ticks, 2)
	for _, tk := range ticks {
		y, err := strconv.ParseFloat(tk[2], 64)
		require.NoError(t, err)
		series := map[string]string{"ctx": "bar-context", "out": "bar-output"}[tk[1]]
		assert.InDelta(t, spans[series].bottom+4, y, 0.11, "%s: 0 at its baseline", tk[1])
	}
}

// The ladder's and the comparisons' cells say what the Markdown says, in
// the Markdown's formats.
func TestHTMLNumbersAreTheMarkdowns(t *testing.T) {
	prices := map[string]Price{"reference": {Input: 2.5, CachedInput: 0.25, Output: 10}}
	page, rep, _ := htmlRender(t, Options{Prices: prices}, htmlFixture(t))
	rowRE := regexp.MustCompile(`(?s)<tr data-model="([^"]*)" data-condition="([^"]*)">(.*?)</tr>`)
	rows := rowRE.FindAllStringSubmatch(page, -1)
	require.Len(t, rows, len(rep.Rows))
	for i, r := range rep.Rows {
		require.NotNil(t, r.Money)
		want := []string{r.Model, r.Condition, fmt.Sprint(r.Trials), accuracy(r.Correct, r.Graded, r.Accuracy),
			fmt.Sprint(r.Infra), fmt.Sprint(r.BudgetStops), fmt.Sprint(r.KernelDied),
			fmt.Sprintf("%d/%d/%d/%d", r.Sources.Executed, r.Sources.Stated, r.Sources.Unexecuted, r.Sources.None),
			dist(r.Turns, 2), dist(r.Context, 0), dist(r.Output, 0), dist(r.Cached, 0), wallSeconds(r.WallMS),
			fmt.Sprintf("%.5f", r.Money.MeanUSD), fmt.Sprintf("%.4f", r.Money.TotalUSD), fmt.Sprintf("%.4f", r.Money.CacheSavedUSD)}
		assert.Equal(t, want, htmlCells(rows[i][3]), "ladder row %s", r.Condition)
	}
	tableRE := regexp.MustCompile(`(?s)<table class="comparisons">.*?<tbody>(.*?)</tbody>`)
	var got [][]string
	for _, tb := range tableRE.FindAllStringSubmatch(page, -1) {
		for _, tr := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(tb[1], -1) {
			got = append(got, htmlCells(tr[1]))
		}
	}
	var want [][]string
	for _, c := range append(append([]Comparison{}, rep.Layers...), rep.Versus...) {
		want = append(want, []string{c.Name, c.Model, c.From + " → " + c.To, fmt.Sprint(c.Tasks),
			ratio(c.Context, c.Tasks), ratio(c.Output, c.Tasks), diff(c.Accuracy, c.Tasks)})
	}
	assert.Equal(t, want, got)
	assert.Contains(t, page, "<th class=\"n\">USD per trial</th>")
}

// htmlCells are the texts of a row's cells.
func htmlCells(row string) []string {
	var cells []string
	for _, c := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row, -1) {
		cells = append(cells, strings.TrimSpace(html.UnescapeString(htmlText.ReplaceAllString(c[1], ""))))
	}
	return cells
}

func TestHTMLEveryTrialHasATranscriptAnchor(t *testing.T) {
	page, rep, runs := htmlPageOf(t)
	ids := map[string]int{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		ids[m[1]]++
	}
	for id, n := range ids {
		assert.Equal(t, 1, n, "id %s is not unique", id)
	}
	trials := regexp.MustCompile(`<details class="trial" id="(t-[^"]+)">`).FindAllStringSubmatch(page, -1)
	require.Len(t, trials, len(runs[0].Final))
	require.Len(t, runs[0].Final, len(rep.Rows)*htmlFixtureTasks*htmlFixtureReps)
	for _, tr := range runs[0].Final {
		name := strings.TrimSuffix(filepath.Base(tr.Trajectory), ".jsonl")
		assert.Equal(t, 1, ids["t-"+name], "the transcript of %s", tr.Key)
	}
	// The per-task table links every rep of every cell to its transcript.
	section := page[strings.Index(page, `<section id="tasks">`):]
	section = section[:strings.Index(section, "</section>")]
	links := regexp.MustCompile(`href="#(t-[^"]+)"`).FindAllStringSubmatch(section, -1)
	assert.Len(t, links, len(runs[0].Final))
	for _, l := range links {
		assert.Equal(t, 1, ids[l[1]], "the link to %s", l[1])
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		assert.Equal(t, 1, ids[m[1]], "the link to #%s goes nowhere", m[1])
	}
}

func TestHTMLTranscripts(t *testing.T) {
	page, _, _ := htmlPageOf(t)
	tests := []struct {
		name, trial string
		want        []string
		not         []string
	}{
		{"cli call and stated answer", htmlCLITrial, []string{
			"<summary>", `<span class="cond">A</span> · r1 · <span class="v v-correct">correct</span>`, "2 turns",
			"How many tasks in project", `<span class="lbl">bash $</span><pre>python3 -c `,
			`<span class="hn">[ctxcode: exit status 0]</span>`, `<span class="lbl">read</span><pre>{&#34;path&#34;:&#34;data/teams.jsonl&#34;,&#34;limit&#34;:1}</pre>`,
			`<span class="hn">[ctxcode: 2 more lines: read on with offset 2]</span>`, "Turn 2", `<span class="lbl">model</span><pre>ANSWER: 7</pre>`,
			"<b>Answer</b> <code>7</code> (stated)", "<b>Grade</b>", "gold <code>7</code>", "no prefix: the skill document"}, nil},
		{"repaired transcript reply", htmlRepairTrial, []string{
			`<span class="lbl">In [7]</span>`, `<span class="hn">[ctxcode: removed the Markdown fences around your code]`,
			`<details class="written"><summary>the message as the model wrote it`, "```python", "prefix pm (builtin:pm.py, 6 cells)",
			`<span class="v v-unexecuted">unexecuted</span>`}, nil},
		{"restart", htmlRestartTrial, []string{"the kernel restarted (1): the kernel died: exit status 137"}, nil},
		{"missing trajectory", htmlMissingTrial, []string{`<p class="missing">the trajectory trajectories/` + htmlMissingTrial + `.jsonl could not be read:`},
			[]string{"Turn 1"}},
		// A line in the middle that is not an event: the events before it,
		// and the line, as ctxcode notebook says it.
		{"a line that is not JSON", htmlBadLineTrial, []string{"set up in", "line 3: not JSON (", "it is not read past that line"},
			[]string{"Turn 1", "<b>Grade</b>"}},
		{"an unknown event kind and a torn last line", htmlSkipTrial, []string{"Turn 1", "<b>Grade</b>",
			`events of kind &#34;thought&#34;, which this version of ctxcode does not know, were skipped (line 4)`,
			"line 9 is cut short (the run was stopped while it wrote it), left out"}, nil},
		{"infra failure", htmlInfraTrial, []string{`<span class="v v-infra">infra</span>`, "500 Internal Server Error"}, nil},
		{"the model's text", htmlEvilTrial, []string{`<span class="lbl">model</span><pre>&lt;/pre&gt;`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := htmlTrialBlock(t, page, "t-"+tt.trial)
			for _, w := range tt.want {
				assert.Contains(t, block, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, block, n)
			}
		})
	}
}

// A restart is shown after the cell whose code killed the kernel, though
// the trajectory writes it before that cell's event.
func TestHTMLRestartFollowsItsCell(t *testing.T) {
	page, _, _ := htmlPageOf(t)
	block := htmlTrialBlock(t, page, "t-"+htmlRestartTrial)
	cell, restart := strings.Index(block, `<div class="cell `), strings.Index(block, `<p class="restart">`)
	require.Positive(t, cell)
	require.Positive(t, restart)
	assert.Less(t, cell, restart, "the cell, then the restart it caused")
	assert.Equal(t, 1, strings.Count(block, `<p class="restart">`))
}

// TestRestartsAfterCells: a restart moves after the cell event that
// follows it (the cell whose code killed the kernel); one with no cell
// right after it stays.
func TestRestartsAfterCells(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"kRc", "kcR"},       // call, restart, its cell
		{"kRckRc", "kcRkcR"}, // two turns, each with a restart
		{"kcR", "kcR"},       // a run stopped while restarting: nothing follows
		{"kRk", "kRk"},       // not a cell after it
		{"RcRc", "cRcR"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := restartsAfterCells([]byte(tt.in), func(b byte) bool { return b == 'R' }, func(b byte) bool { return b == 'c' })
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestHTMLTwoRuns(t *testing.T) {
	a, b := htmlFixture(t), htmlFixture(t)
	page, rep, runs := htmlRender(t, Options{}, a, b)
	htmlWellFormed(t, page)
	require.NotEmpty(t, rep.Pairs)
	assert.Contains(t, page, `<section id="pairs">`)
	bars := htmlBars(t, page)
	for _, series := range []string{"bar-context", "bar-output"} {
		assert.Len(t, bars[series], len(rep.Rows), "a bar per run and condition")
	}
	ids := regexp.MustCompile(`<details class="trial" id="([^"]+)">`).FindAllStringSubmatch(page, -1)
	assert.Len(t, ids, len(runs[0].Final)+len(runs[1].Final))
	seen := map[string]bool{}
	for _, m := range ids {
		assert.False(t, seen[m[1]], "id %s twice", m[1])
		seen[m[1]] = true
	}
	assert.True(t, seen["t-2~"+htmlCLITrial], "the second run's transcripts are t-2~NAME")
	assert.Contains(t, page, "<h2>Run 2</h2>")

	// The sections of the first run only say so; each run has its per-task
	// table, which links its own transcripts.
	assert.Contains(t, page, "<h2>The attribution of run 1 only, paired by task</h2>")
	assert.Contains(t, page, "<h2>Every condition against A, run 1 only, paired by task</h2>")
	for i, want := range []struct{ id, title, prefix string }{{"tasks", "Per task, run 1", "t-"}, {"tasks-2", "Per task, run 2", "t-2~"}} {
		start := strings.Index(page, `<section id="`+want.id+`">`)
		require.GreaterOrEqual(t, start, 0, "no section %s", want.id)
		section := page[start:]
		section = section[:strings.Index(section, "</section>")]
		assert.Contains(t, section, "<h2>"+want.title+"</h2>")
		links := regexp.MustCompile(`href="#(t-[^"]+)"`).FindAllStringSubmatch(section, -1)
		assert.Len(t, links, len(runs[i].Final), "%s: a link per trial", want.id)
		for _, l := range links {
			assert.True(t, strings.HasPrefix(l[1], want.prefix) && (i == 1 || !strings.HasPrefix(l[1], "t-2~")), "%s links %s", want.id, l[1])
			assert.True(t, seen[l[1]], "the link to %s goes nowhere", l[1])
		}
		assert.Contains(t, page, `<a href="#`+want.id+`">`+want.title+`</a>`, "the table of contents")
	}
	assert.Equal(t, 1, strings.Count(page, `<line class="sep"`), "a line between the runs' groups")
	assert.Contains(t, page, `>run 2</text>`)
}

// A report without run directories (JSON numbers alone) is still a page.
func TestHTMLWithoutRuns(t *testing.T) {
	_, rep, _ := htmlPageOf(t)
	var b bytes.Buffer
	require.NoError(t, HTML(&b, rep, nil))
	htmlWellFormed(t, b.String())
	assert.NotContains(t, b.String(), `<section id="transcripts">`)
	assert.NotContains(t, b.String(), `href="#t-`, "no links to transcripts that are not there")
}

// The fixture's copy must not touch the fixture.
func TestHTMLFixtureIsACopy(t *testing.T) {
	htmlFixture(t)
	_, err := os.Stat(filepath.Join(fixture, "trajectories", htmlMissingTrial+".jsonl"))
	require.NoError(t, err)
	err = filepath.WalkDir(fixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("pwned")) {
			return fmt.Errorf("%s was edited", p)
		}
		return err
	})
	require.NoError(t, err)
}
