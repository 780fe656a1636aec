package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
)

// sessionStage is one stage of a session of sessionFixture: its status
// and whether it was right; its use comes from the session's per-stage
// use.
type sessionStage struct {
	status  agent.Status
	correct bool
}

var (
	right  = sessionStage{agent.Answered, true}
	wrong  = sessionStage{agent.Answered, false}
	silent = sessionStage{agent.NoAnswer, false}
)

func cutBy(s agent.Status) sessionStage { return sessionStage{s, false} }

// sessionFixture writes, with bench's own log writer, a run of session
// trials: model m, conditions D (context none) and D-staged (context
// staged), sessions s1…s7 of 4 stages, one rep each. Session si uses, at
// each stage, the same amount (so its use at stage n is n times it):
//
//	             D                                D-staged
//	input        1000·i                           600·i
//	output       100·i                            80·i
//	calls        2                                3
//	tool bytes   50·(7−i)                         20·(7−i)
//
//	s1…s4        right ×4                         s1, s3: right ×4
//	s5           right, right, cut (prompt budget) right ×4
//	s6           right, wrong, right, right        right ×4
//	s2 (staged)                                   right, right, cut (context window)
//	s4 (staged)                                   right, no answer, wrong, right
//	s7           infra (left out)                  infra (left out)
//
// A cut session has no stage after its cut; the others have all four.
func sessionFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	spec := bench.Spec{Version: "test", Created: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Models:     []bench.ModelInfo{{Name: "m"}},
		Conditions: []bench.ConditionInfo{{Name: "D", Protocol: "transcript"}, {Name: "D-staged", Protocol: "transcript", Base: "D"}},
		Tasks:      bench.TaskSource{Kind: "file", File: "sessions.jsonl"}, Reps: 1,
		Sandbox: bench.SandboxInfo{Kind: "local"}, Parallel: 1}
	for i := 1; i <= 7; i++ {
		spec.TaskList = append(spec.TaskList, datasets.Task{ID: fmt.Sprintf("s%d", i), Question: fmt.Sprintf("session %d", i), Gold: i})
	}
	l, err := bench.Open(dir, spec, bench.Continue, io.Discard)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()

	all := []sessionStage{right, right, right, right}
	plans := map[string]map[int][]sessionStage{
		"D": {1: all, 2: all, 3: all, 4: all,
			5: {right, right, cutBy(agent.MaxPromptTokens)},
			6: {right, wrong, right, right}},
		"D-staged": {1: all, 3: all, 5: all, 6: all,
			2: {right, right, cutBy(agent.ContextLength)},
			4: {right, silent, wrong, right}},
	}
	for _, cond := range []string{"D", "D-staged"} {
		for i := 1; i <= 7; i++ {
			own := bench.StageUse{Calls: 2, InputTokens: 1000 * i, OutputTokens: 100 * i, ToolResultTokens: 10 * (7 - i), ToolResultBytes: 50 * (7 - i)}
			policy := ""
			if cond == "D-staged" {
				own = bench.StageUse{Calls: 3, InputTokens: 600 * i, OutputTokens: 80 * i, ToolResultTokens: 4 * (7 - i), ToolResultBytes: 20 * (7 - i)}
				policy = "staged"
			}
			name := fmt.Sprintf("s%d", i)
			tr := bench.Trial{Key: bench.Key{Model: "m", Condition: cond, Task: name, Rep: 1}, Attempt: 1,
				Status: agent.Answered, Class: bench.ClassModel, Answer: json.RawMessage("null"), Verdict: "correct", Correct: true,
				Session: name, Context: policy, Trajectory: bench.TrajectoryPath(bench.Key{Model: "m", Condition: cond, Task: name, Rep: 1}, 1)}
			plan := plans[cond][i]
			if i == 7 {
				plan = []sessionStage{right} // its kernel failed at stage 2: infra
				tr.Status, tr.Class, tr.Correct, tr.Verdict = agent.KernelFailed, bench.ClassInfra, false, "no_answer"
			}
			var cum bench.StageUse
			for k, st := range plan {
				cum.Add(own)
				verdict := "correct"
				if !st.correct {
					verdict = "wrong"
				}
				tr.Stages = append(tr.Stages, bench.StageFigures{Stage: k + 1, Task: fmt.Sprintf("%s.q%d", name, k+1), Status: st.status,
					Answer: json.RawMessage("null"), Verdict: verdict, Correct: st.correct, Own: own, Cumulative: cum, PeakRequestTokens: own.InputTokens})
				if !st.correct && tr.Class == bench.ClassModel {
					tr.Correct, tr.Verdict = false, "wrong"
				}
				if st.status != agent.Answered {
					tr.Status = st.status
				}
			}
			if tr.Class == bench.ClassModel && tr.Status == agent.NoAnswer {
				tr.Status = agent.Answered // a later stage answered
			}
			tr.Turns, tr.ContextTokens, tr.OutputTokens = cum.Calls, cum.InputTokens, cum.OutputTokens
			require.NoError(t, l.Append(tr))
		}
	}
	return dir
}

func buildSessionReport(t *testing.T) (*Report, *Run) {
	t.Helper()
	r, err := Load(sessionFixture(t))
	require.NoError(t, err)
	r.Dir = "sessions"
	rep, err := Build([]*Run{r}, Options{})
	require.NoError(t, err)
	return rep, r
}

// The session figures of sessionFixture, each computed by hand.
func TestSessionFigures(t *testing.T) {
	rep, _ := buildSessionReport(t)
	ss := rep.Sessions
	require.NotNil(t, ss)
	assert.Equal(t, 4, ss.MaxStage)
	require.Len(t, ss.Rows, 2)
	d, staged := ss.Rows[0], ss.Rows[1]
	require.Equal(t, "D", d.Condition)
	require.Equal(t, "D-staged", staged.Condition)
	assert.Equal(t, "none", d.Context)
	assert.Equal(t, "staged", staged.Context)
	for _, r := range ss.Rows {
		assert.Equal(t, 6, r.Sessions, "%s: s7 (infra) is left out", r.Condition)
		assert.Equal(t, 1, r.Infra, r.Condition)
		require.Len(t, r.Stages, 4)
	}

	// Accuracy at stage k, of 6 sessions.
	// D: stage 2 s6 wrong; stage 3 s5 cut; stage 4 s5 ended before it.
	// D-staged: stage 2 s4 no answer; stage 3 s2 cut and s4 wrong; stage 4
	// s2 ended before it (s4 right again).
	for _, tc := range []struct {
		row     SessionRow
		correct []int
	}{{d, []int{6, 5, 5, 5}}, {staged, []int{6, 5, 4, 5}}} {
		for k, s := range tc.row.Stages {
			assert.Equal(t, k+1, s.Stage)
			assert.Equal(t, tc.correct[k], s.Correct, "%s stage %d", tc.row.Condition, k+1)
			assert.InDelta(t, float64(tc.correct[k])/6, s.Accuracy.Est, 1e-12, "%s stage %d", tc.row.Condition, k+1)
			// One rep per session: the Wilson interval over the 6 sessions.
			assert.Equal(t, Wilson(tc.correct[k], 6), s.Accuracy, "%s stage %d", tc.row.Condition, k+1)
		}
	}

	// W(n): input tokens at n are n times the session's per stage.
	// D (1000·i): n=1 1000·21/6 = 3500; n=2 7000; n=3 10500 (s5's stage 3
	// counts: it was cut there, with its tokens spent); n=4 s5 left out:
	// 4000·(1+2+3+4+6)/5 = 12800.
	// D-staged (600·i): 2100, 4200, 6300; n=4 s2 left out:
	// 2400·(1+3+4+5+6)/5 = 9120.
	for _, tc := range []struct {
		row  SessionRow
		mean []float64
		left []int
	}{{d, []float64{3500, 7000, 10500, 12800}, []int{0, 0, 0, 1}}, {staged, []float64{2100, 4200, 6300, 9120}, []int{0, 0, 0, 1}}} {
		for k, s := range tc.row.Stages {
			assert.InDelta(t, tc.mean[k], s.W.Mean, 1e-9, "%s W(%d)", tc.row.Condition, k+1)
			assert.Equal(t, tc.left[k], s.EndedBefore, "%s W(%d)", tc.row.Condition, k+1)
			assert.Equal(t, 6-tc.left[k], s.Reached)
			assert.Equal(t, 6-tc.left[k], s.W.N)
			assert.Less(t, s.W.Lo, s.W.Mean)
			assert.Greater(t, s.W.Hi, s.W.Mean)
		}
	}

	// Passed / cut / failed at each n.
	// D: n=1 all passed; n=2 s6 failed; n≥3 s5 cut too.
	// D-staged: n=1 all; n=2 s4 failed; n≥3 s2 cut too.
	for _, r := range ss.Rows {
		var got [][3]int
		for _, s := range r.Stages {
			got = append(got, [3]int{s.Passed, s.BudgetCut, s.Failed})
		}
		assert.Equal(t, [][3]int{{6, 0, 0}, {5, 0, 1}, {4, 1, 1}, {4, 1, 1}}, got, r.Condition)
	}

	// CC_q(n), by Kaplan–Meier over the 6 sessions (inf: not reached).
	inf := math.Inf(1)
	cc := func(r SessionRow, n int, resource string, q float64) CCFigure {
		for _, c := range r.Stages[n-1].CC {
			if c.Resource == resource && c.Q == q {
				return c
			}
		}
		t.Fatalf("no CC %s %.2f at %d", resource, q, n)
		return CCFigure{}
	}
	for _, tc := range []struct {
		name     string
		row      SessionRow
		resource string
		n        int
		q80, q95 float64
	}{
		// D, input tokens.
		// n=1: six events 1000…6000: the share passed is k/6, 5/6 ≥ 0.8 at
		// 5000, 1 at 6000.
		{"D n=1", d, "input_tokens", 1, 5000, 6000},
		// n=2: s1…s5 pass at 2000…10000, s6 failed (+∞, at risk for ever):
		// 5/6 at 10000, never 0.95.
		{"D n=2", d, "input_tokens", 2, 10000, inf},
		// n=3: s1…s4 at 3000…12000, s5 cut at 15000 (after every event),
		// s6 +∞: 4/6 at most.
		{"D n=3", d, "input_tokens", 3, inf, inf},
		// n=4: s1…s4 at 4000, 8000, 12000, 16000; s5 censored at 15000;
		// s6 +∞. S: 5/6, 4/6, 3/6, then at 16000 two at risk (s4, s6):
		// 3/6·1/2 = 1/4, so 3/4 passed: not 0.8.
		{"D n=4", d, "input_tokens", 4, inf, inf},
		// D, calls (2 a stage: ties).
		// n=1: six events at 2: S = 0.
		{"D calls n=1", d, "calls", 1, 2, 2},
		// n=2: five at 4, s6 +∞: 5/6.
		{"D calls n=2", d, "calls", 2, 4, inf},
		// n=3: four events at 6 and s5 censored at 6 (its use at stage 3):
		// events first, so six at risk at 6: S = 2/6, 4/6 passed.
		{"D calls n=3", d, "calls", 3, inf, inf},
		// n=4: four events at 8, s5 censored at 6 (gone), s6 +∞: five at
		// risk at 8, S = 1/5, 4/5 = 0.8 passed at 8.
		{"D calls n=4", d, "calls", 4, 8, inf},
		// D, output tokens and tool bytes at n=1: six events, k/6.
		// Output 100·i: 500, 600. Bytes 50·(7−i) = 300…50: 5th smallest 250.
		{"D output n=1", d, "output_tokens", 1, 500, 600},
		{"D bytes n=1", d, "tool_result_bytes", 1, 250, 300},

		// D-staged, input tokens (600·i).
		// n=1: 3000, 3600.
		{"D-staged n=1", staged, "input_tokens", 1, 3000, 3600},
		// n=2: s4 failed; the others at 1200, 2400, 3600, 6000, 7200: 5/6
		// at 7200.
		{"D-staged n=2", staged, "input_tokens", 2, 7200, inf},
		// n=3: s1 1800, s3 5400, s5 9000, s6 10800; s2 censored at 3600;
		// s4 +∞. S: at 1800 5/6; at 5400 four at risk: 5/6·3/4 = 0.625;
		// at 9000 0.625·2/3 = 0.41667; at 10800 0.41667·1/2 = 0.20833:
		// 0.79167 passed, just short of 0.8.
		{"D-staged n=3", staged, "input_tokens", 3, inf, inf},
		// D-staged, calls (3 a stage).
		// n=4: four events at 12, s2 censored at 9, s4 +∞: five at risk
		// at 12, S = 1/5: 0.8 at 12.
		{"D-staged calls n=4", staged, "calls", 4, 12, inf},
		{"D-staged bytes n=1", staged, "tool_result_bytes", 1, 100, 120},
	} {
		for _, q := range []struct {
			q    float64
			want float64
		}{{0.8, tc.q80}, {0.95, tc.q95}} {
			c := cc(tc.row, tc.n, tc.resource, q.q)
			assert.Equal(t, q.want, c.Budget, "%s: CC_%.2f", tc.name, q.q)
			assert.Equal(t, 6, c.Sessions)
			assert.LessOrEqual(t, c.Lo, c.Budget, "%s: CC_%.2f's interval", tc.name, q.q)
			assert.GreaterOrEqual(t, c.Hi, c.Budget, "%s: CC_%.2f's interval", tc.name, q.q)
		}
	}
	// Every resample of sessions that all pass at 2 calls passes at 2.
	c := cc(d, 1, "calls", 0.8)
	assert.Equal(t, [2]float64{2, 2}, [2]float64{c.Lo, c.Hi})
	// 5 of 6 passing at n = 2: a resample with s6 twice or more does not
	// reach 0.8, so the upper end is not reached.
	c = cc(d, 2, "input_tokens", 0.8)
	assert.True(t, math.IsInf(c.Hi, 1), "%+v", c)
	assert.Less(t, c.Lo, c.Budget)

	// The report is the same to the byte, and its JSON says not reached
	// as null.
	again, _ := buildSessionReport(t)
	js, err := json.Marshal(rep.Sessions)
	require.NoError(t, err)
	js2, err := json.Marshal(again.Sessions)
	require.NoError(t, err)
	assert.Equal(t, string(js), string(js2))
	b, err := json.Marshal(cc(d, 2, "input_tokens", 0.95))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"budget":null`)
}

// sessionOutcome, case by case: the first stage that is not right decides.
func TestSessionOutcome(t *testing.T) {
	st := func(k int, s agent.Status, correct bool, input int) bench.StageFigures {
		return bench.StageFigures{Stage: k, Status: s, Correct: correct, Cumulative: bench.StageUse{InputTokens: input}}
	}
	for _, tc := range []struct {
		name  string
		trial bench.Trial
		n     int
		want  outcome
		input int
	}{
		{"passed", bench.Trial{Stages: []bench.StageFigures{st(1, agent.Answered, true, 10), st(2, agent.Answered, true, 30)}}, 2, passed, 30},
		{"passed so far", bench.Trial{Stages: []bench.StageFigures{st(1, agent.Answered, true, 10), st(2, agent.Answered, false, 30)}}, 1, passed, 10},
		{"cut", bench.Trial{Status: agent.MaxTurns, Stages: []bench.StageFigures{st(1, agent.Answered, true, 10), st(2, agent.MaxTurns, false, 30)}}, 2, cut, 30},
		{"wrong, then cut", bench.Trial{Status: agent.MaxTurns, Stages: []bench.StageFigures{st(1, agent.Answered, false, 10), st(2, agent.MaxTurns, false, 30)}}, 2, failed, 10},
		{"kernel died", bench.Trial{Status: agent.KernelDied, Stages: []bench.StageFigures{st(1, agent.KernelDied, false, 10)}}, 3, failed, 10},
		{"ended on a budget without the stage", bench.Trial{Status: agent.MaxPromptTokens, Stages: []bench.StageFigures{st(1, agent.Answered, true, 10)}}, 3, cut, 10},
		{"ended without the stage", bench.Trial{Status: agent.Answered, Stages: []bench.StageFigures{st(1, agent.Answered, true, 10)}}, 2, failed, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, use := sessionOutcome(tc.trial, tc.n)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.input, use.InputTokens)
		})
	}
}

// A run without session trials has no session section, in any form.
func TestNoSessionsNoSection(t *testing.T) {
	rep := buildFixture(t, Options{})
	assert.Nil(t, rep.Sessions)
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep, ""))
	assert.NotContains(t, md.String(), "Sessions, stage by stage")
	js, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.NotContains(t, string(js), `"sessions"`)
	page, _, _ := htmlPageOf(t)
	assert.NotContains(t, page, "svg.wn")
	assert.NotContains(t, page, `id="sessions"`)
}

func TestGoldenSessionsMarkdown(t *testing.T) {
	rep, _ := buildSessionReport(t)
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep, ""))
	s := md.String()
	i := bytes.Index(md.Bytes(), []byte("\n## Sessions, stage by stage"))
	require.GreaterOrEqual(t, i, 0, "a session section")
	j := bytes.Index(md.Bytes()[i+1:], []byte("\n## "))
	require.Greater(t, j, 0, "a section after it")
	golden(t, "sessions.md", []byte(s[i+1:i+1+j+1]))
}

var (
	wnSVG    = regexp.MustCompile(`(?s)<svg class="wn".*?</svg>`)
	wnSeries = regexp.MustCompile(`(?s)<g class="series" data-run="(\d+)" data-model="([^"]*)" data-condition="([^"]*)">(.*?)</g>`)
	wnDot    = regexp.MustCompile(`<circle class="dot [^"]*" data-stage="(\d+)" cx="([\d.]+)" cy="([\d.]+)" r="4"><title>([^<]*)</title>`)
	wnBar    = regexp.MustCompile(`<path class="errbar [^"]*" d="M([\d.]+) ([\d.]+)V([\d.]+)M`)
	wnLine   = regexp.MustCompile(`<path class="line [^"]*" d="([^"]*)">`)
)

// The page's session section: its tables hold the Markdown's cells, and
// the W(n) chart a line per condition whose points and whiskers sit where
// the Report's numbers say, on one linear scale from 0.
func TestSessionsHTML(t *testing.T) {
	dir := sessionFixture(t)
	page, rep, _ := htmlRender(t, Options{}, dir)
	htmlWellFormed(t, page)
	assert.Contains(t, page, `<a href="#sessions">Sessions</a>`)
	assert.Contains(t, page, `<section id="sessions">`)
	assert.Contains(t, page, "svg.wn{", "the section's CSS")

	// Every row of the section's three tables is a row of the Markdown's.
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep, ""))
	sec := page[strings.Index(page, `<section id="sessions">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	rows := regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(sec, -1)
	require.Len(t, rows, 3+2+2+2*9, "the heads, and the accuracy, W(n) and CC rows")
	for _, r := range rows {
		cells := htmlCells(r[1])
		if len(cells) == 0 {
			continue // a head
		}
		line := "| " + strings.Join(cells, " | ") + " |\n"
		assert.True(t, strings.Contains(md.String(), line), "an HTML row that the Markdown lacks: %s", line)
	}

	svg := wnSVG.FindString(page)
	require.NotEmpty(t, svg, "a W(n) chart")
	series := wnSeries.FindAllStringSubmatch(svg, -1)
	require.Len(t, series, 2, "a line per condition")
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		return v
	}
	// The scale from two points of the first line: y = bottom - k·W.
	first := wnDot.FindAllStringSubmatch(series[0][4], -1)
	require.Len(t, first, 4)
	w1, w4 := rep.Sessions.Rows[0].Stages[0].W.Mean, rep.Sessions.Rows[0].Stages[3].W.Mean
	k := (num(first[0][3]) - num(first[3][3])) / (w4 - w1)
	bottom := num(first[0][3]) + k*w1
	for i, s := range series {
		row := rep.Sessions.Rows[i]
		assert.Equal(t, row.Condition, s[3])
		dots := wnDot.FindAllStringSubmatch(s[4], -1)
		bars := wnBar.FindAllStringSubmatch(s[4], -1)
		require.Len(t, dots, 4, "%s: a point per stage", row.Condition)
		require.Len(t, bars, 4, "%s: a whisker per point", row.Condition)
		line := wnLine.FindStringSubmatch(s[4])
		require.NotNil(t, line)
		assert.Equal(t, 3, strings.Count(line[1], "L"), "%s: the line joins the four points", row.Condition)
		for j, d := range dots {
			st := row.Stages[j]
			assert.Equal(t, fmt.Sprint(st.Stage), d[1])
			assert.InDelta(t, bottom-k*st.W.Mean, num(d[3]), 0.11, "%s stage %d: y", row.Condition, st.Stage)
			assert.InDelta(t, num(d[2]), num(bars[j][1]), 0.06, "%s stage %d: the whisker is plumb with its point", row.Condition, st.Stage)
			assert.InDelta(t, bottom-k*st.W.Lo, num(bars[j][2]), 0.11, "%s stage %d: the whisker's low end", row.Condition, st.Stage)
			assert.InDelta(t, bottom-k*st.W.Hi, num(bars[j][3]), 0.11, "%s stage %d: the whisker's high end", row.Condition, st.Stage)
			if j > 0 {
				assert.Greater(t, num(d[2]), num(dots[j-1][2]), "stages go left to right")
			}
		}
		assert.Contains(t, html.UnescapeString(dots[3][4]), "(1 left out: ended before it)")
	}
	// The two lines' points of a stage are apart, by a few units.
	a, b := wnDot.FindAllStringSubmatch(series[0][4], -1), wnDot.FindAllStringSubmatch(series[1][4], -1)
	assert.InDelta(t, 6, num(b[0][2])-num(a[0][2]), 0.11)
	assert.Contains(t, svg, `<g class="legend">`)
	assert.Contains(t, svg, ">D-staged</text>")
}

// Sessions with reps: every session of sessionFixture run twice, the same
// both times. The reps of a session are one unit: W(n) and CC_q(n) are
// the same to the bit (the same draws of sessions; a Kaplan–Meier step
// of twice the events over twice the sessions at risk is the same step),
// and the accuracy is the same share over the same 6 sessions.
func TestSessionRepsCountOnce(t *testing.T) {
	once, r := buildSessionReport(t)
	var final []bench.Trial
	for _, tr := range r.Final {
		final = append(final, tr)
		tr.Rep = 2
		final = append(final, tr)
	}
	r.Final, r.Spec.Reps = final, 2
	twice, err := Build([]*Run{r}, Options{})
	require.NoError(t, err)
	require.Len(t, twice.Sessions.Rows, 2)
	for i, row := range twice.Sessions.Rows {
		want := once.Sessions.Rows[i]
		assert.Equal(t, 12, row.Sessions)
		assert.Equal(t, 2, row.Infra)
		for k, st := range row.Stages {
			ws := want.Stages[k]
			w := ws.W
			w.N *= 2 // trials
			assert.Equal(t, w, st.W, "%s W(%d)", row.Condition, k+1)
			assert.Equal(t, ws.CC, st.CC, "%s CC at %d", row.Condition, k+1)
			assert.Equal(t, ws.Accuracy.Est, st.Accuracy.Est)
			assert.Equal(t, 6, st.Accuracy.Tasks, "the interval is over 6 sessions, not 12 trials")
			assert.Equal(t, 2*ws.Passed, st.Passed)
		}
	}
}
