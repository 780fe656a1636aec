package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
)

// syntheticRun is a run held in memory: model m, the conditions, tasks
// t0…t(n-1), reps each; trial fills in each key's line (its key is set
// already, its class model; return ok false for no line).
func syntheticRun(conds []string, tasks, reps int, trial func(t *bench.Trial, cond string, task, rep int) bool) *Run {
	r := &Run{Dir: "synthetic"}
	r.Spec.Models = []bench.ModelInfo{{Name: "m"}}
	for _, c := range conds {
		r.Spec.Conditions = append(r.Spec.Conditions, bench.ConditionInfo{Name: c})
	}
	r.Spec.Reps = reps
	for i := range tasks {
		r.Spec.TaskList = append(r.Spec.TaskList, datasets.Task{ID: fmt.Sprintf("t%d", i), Question: fmt.Sprintf("question %d?", i), Gold: i})
	}
	for _, c := range conds {
		for i := range tasks {
			for rep := 1; rep <= reps; rep++ {
				t := bench.Trial{Key: bench.Key{Model: "m", Condition: c, Task: fmt.Sprintf("t%d", i), Rep: rep},
					Attempt: 1, Class: bench.ClassModel, Turns: 1, ContextTokens: 1000 + 100*i, OutputTokens: 50 + i,
					Trajectory: fmt.Sprintf("trajectories/m.%s.t%d.r%d.jsonl", c, i, rep)}
				if trial(&t, c, i, rep) {
					r.Final = append(r.Final, t)
					r.Lines++
				}
			}
		}
	}
	return r
}

func buildOne(t *testing.T, r *Run) *Report {
	t.Helper()
	rep, err := Build([]*Run{r}, Options{})
	require.NoError(t, err)
	return rep
}

// The done-when test of issue 21: ten reps of the same answers tell no
// more than one, so the accuracy's interval is the same, to the bit, for
// 10 tasks × 1 rep and for the same 10 tasks × 10 identical reps. (Over
// trials, as Wilson was, the second is about three times narrower.)
func TestAccuracyIntervalIgnoresRepeatedReps(t *testing.T) {
	right := func(task int) bool { return task%10 < 7 } // 7 of 10 tasks right
	run := func(reps int) *Run {
		return syntheticRun([]string{"A", "B"}, 10, reps, func(tr *bench.Trial, cond string, task, rep int) bool {
			tr.Correct = right(task) || (cond == "B" && task == 9)
			return true
		})
	}
	one, ten := buildOne(t, run(1)), buildOne(t, run(10))
	require.Len(t, one.Rows, 2)
	for i := range one.Rows {
		a, b := one.Rows[i].Accuracy, ten.Rows[i].Accuracy
		assert.Equal(t, a, b, "%s: the same interval with 1 rep and with 10 identical reps", one.Rows[i].Condition)
		assert.Equal(t, 10, a.Tasks)
		assert.Equal(t, 10*one.Rows[i].Graded, ten.Rows[i].Graded)
		assert.Less(t, a.Lo, a.Est)
		assert.Greater(t, a.Hi, a.Est)
		assert.Greater(t, a.Hi-a.Lo, 0.4, "%s: 10 tasks tell accuracy within ±20 pp at best", one.Rows[i].Condition)
	}
	assert.InDelta(t, 0.7, one.Rows[0].Accuracy.Est, 1e-15)
	// The paired difference B - A too.
	require.Len(t, one.Versus, 1)
	assert.Equal(t, one.Versus[0].Accuracy, ten.Versus[0].Accuracy, "B vs A: the same accuracy difference")
	assert.InDelta(t, 0.1, one.Versus[0].Accuracy.Est, 1e-15)

	// And the rendered tables agree, apart from the counts of trials.
	var m1, m10 bytes.Buffer
	require.NoError(t, Markdown(&m1, one))
	require.NoError(t, Markdown(&m10, ten))
	assert.Contains(t, m1.String(), "| m | A | 10 | 7/10 = 70% [")
	cell := regexp.MustCompile(`\| m \| A \| \d+ \| \d+/\d+ = (70% \[[^]]*\])`)
	require.Len(t, cell.FindStringSubmatch(m1.String()), 2)
	assert.Equal(t, cell.FindStringSubmatch(m1.String())[1], cell.FindStringSubmatch(m10.String())[1])
}

func TestTaskAccuracy(t *testing.T) {
	groups := func(tasks, reps int) []int {
		var g []int
		for i := range tasks {
			for range reps {
				g = append(g, i)
			}
		}
		return g
	}
	all := func(n int, v bool) []bool {
		b := make([]bool, n)
		for i := range b {
			b[i] = v
		}
		return b
	}

	t.Run("all right keeps a width: Wilson over the tasks", func(t *testing.T) {
		// A bootstrap of ten all-right tasks is [1, 1]; the floor is the
		// Wilson interval of 10 of 10, whatever the reps.
		for _, reps := range []int{1, 3, 10} {
			got := TaskAccuracy(all(10*reps, true), groups(10, reps), NewRand(1), 500)
			w := Wilson(10, 10)
			assert.Equal(t, Interval{Est: 1, Lo: w.Lo, Hi: 1, Tasks: 10}, got, "reps %d", reps)
			assert.InDelta(t, 0.722467, got.Lo, 1e-6)
		}
	})

	t.Run("all wrong", func(t *testing.T) {
		got := TaskAccuracy(all(12, false), groups(4, 3), NewRand(1), 500)
		assert.Equal(t, 0.0, got.Est)
		assert.Equal(t, 0.0, got.Lo)
		assert.InDelta(t, Wilson(0, 4).Hi, got.Hi, 1e-12)
		assert.Equal(t, 4, got.Tasks)
	})

	t.Run("one task: no interval", func(t *testing.T) {
		got := TaskAccuracy([]bool{true, false, true, true}, []int{7, 7, 7, 7}, nil, 0)
		assert.Equal(t, Interval{Est: 0.75, Lo: 0.75, Hi: 0.75, Tasks: 1}, got)
		b, err := json.Marshal(got)
		require.NoError(t, err)
		assert.JSONEq(t, `{"est":0.75,"lo":null,"hi":null,"tasks":1}`, string(b))
	})

	t.Run("no trials", func(t *testing.T) {
		assert.Equal(t, Interval{}, TaskAccuracy(nil, nil, nil, 0))
	})

	t.Run("7 of 10 tasks: inside (0, 1), about Wilson over the tasks", func(t *testing.T) {
		// The bootstrap's percentiles are [0.4, 1.0] here (all ten draws
		// right has probability 0.7^10 = 2.8%); 1 is impossible once a task
		// failed.
		correct := append(all(7, true), all(3, false)...)
		g := groups(10, 1)
		draws, _ := taskDraws([]float64{1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, g, NewRand(1), 2000)
		lo, hi := percentile95(draws)
		assert.Equal(t, [2]float64{0.4, 1}, [2]float64{lo, hi}, "the percentiles")
		got := TaskAccuracy(correct, g, NewRand(1), 2000)
		assert.Less(t, got.Hi, 0.92)
		w := Wilson(7, 10)
		assert.InDelta(t, w.Lo, got.Lo, 0.02)
		assert.InDelta(t, w.Hi, got.Hi, 0.02)
	})

	t.Run("unequal tasks: wider than Wilson over the tasks", func(t *testing.T) {
		// Task 0 has ten right trials, tasks 1…9 one wrong trial each:
		// Est = 10/19, and a draw swings with how often task 0 is drawn, far
		// more than ten one-trial tasks would: n* is about 2.6.
		correct := append(all(10, true), all(9, false)...)
		g := append(make([]int, 10), 1, 2, 3, 4, 5, 6, 7, 8, 9)
		got := TaskAccuracy(correct, g, NewRand(1), 2000)
		assert.InDelta(t, 10.0/19, got.Est, 1e-15)
		vals := make([]float64, 19)
		for i := range 10 {
			vals[i] = 1
		}
		draws, tasks := taskDraws(vals, g, NewRand(1), 2000)
		n := EffectiveTasks(got.Est, draws, tasks)
		assert.InDelta(t, 2.6, n, 0.3)
		wlo, whi := wilson(got.Est, 10)
		assert.Less(t, got.Lo, wlo-0.05)
		assert.Greater(t, got.Hi, whi+0.03)
	})

	t.Run("Wilson at n*, never narrower than Wilson over the tasks", func(t *testing.T) {
		src := NewRand(3)
		for range 20 {
			tasks := 2 + src.IntN(30)
			p := src.Float64()
			var correct []bool
			var g []int
			for task := range tasks {
				for range 1 + src.IntN(5) { // unequal reps
					correct = append(correct, src.Float64() < p)
					g = append(g, task)
				}
			}
			got := TaskAccuracy(correct, g, NewRand(9), 300)
			vals := make([]float64, len(correct))
			for i, c := range correct {
				if c {
					vals[i] = 1
				}
			}
			draws, n := taskDraws(vals, g, NewRand(9), 300)
			require.Equal(t, tasks, n)
			est := stat.Mean(vals, nil)
			lo, hi := wilson(est, EffectiveTasks(est, draws, tasks))
			assert.Equal(t, Interval{Est: est, Lo: lo, Hi: hi, Tasks: tasks}, got)
			wlo, whi := wilson(est, float64(tasks))
			assert.LessOrEqual(t, got.Lo, wlo+1e-12)
			assert.GreaterOrEqual(t, got.Hi, whi-1e-12)
		}
	})

	t.Run("length mismatch panics", func(t *testing.T) {
		assert.Panics(t, func() { TaskAccuracy([]bool{true}, nil, NewRand(1), 10) })
	})
}

// pairedTable is Newcombe's 2×2 table of paired results as per-task
// accuracies: both right, only b right, only a right, neither.
func pairedTable(both, onlyB, onlyA, neither int) (a, b []float64) {
	for _, c := range []struct {
		n    int
		x, y float64
	}{{both, 1, 1}, {onlyB, 0, 1}, {onlyA, 1, 0}, {neither, 0, 0}} {
		for range c.n {
			a, b = append(a, c.x), append(b, c.y)
		}
	}
	return a, b
}

func TestPairedAccuracyDiff(t *testing.T) {
	// Newcombe's method 10 against an independent computation in Python
	// of the 2×2 table's formulas, as R's contingencytables package has
	// them (Newcombe_square_and_add_CI_paired_2x2). Newcombe's own example
	// (36, 12, 2, 0) gives 0.0569 to 0.3404 in his paper (Statistics in
	// Medicine 17:2635, 1998); (1, 1, 7, 12) and (59, 6, 16, 80) are the
	// examples of that package.
	for _, tc := range []struct {
		table  [4]int
		lo, hi float64
	}{
		{[4]int{36, 12, 2, 0}, 0.0569296, 0.3404276},
		{[4]int{1, 1, 7, 12}, -0.5069202, -0.0255591},
		{[4]int{59, 6, 16, 80}, -0.1186212, -0.0046251},
		{[4]int{3, 0, 0, 0}, -0.5614970, 0.5614970},
		{[4]int{6, 2, 1, 1}, -0.2646142, 0.4353856},
		{[4]int{5, 0, 0, 5}, -0.1665932, 0.1665932}, // no discordant pair: phi's correction keeps a width
	} {
		a, b := pairedTable(tc.table[0], tc.table[1], tc.table[2], tc.table[3])
		lo, hi := newcombePaired(a, b)
		assert.InDelta(t, tc.lo, lo, 1e-6, "%v", tc.table)
		assert.InDelta(t, tc.hi, hi, 1e-6, "%v", tc.table)
		got := PairedAccuracyDiff(a, b, NewRand(1), 500)
		boot := MeanDiff(a, b, NewRand(1), 500)
		assert.Equal(t, boot.Est, got.Est)
		assert.Equal(t, min(boot.Lo, lo), got.Lo, "%v", tc.table)
		assert.Equal(t, max(boot.Hi, hi), got.Hi, "%v", tc.table)
		assert.Equal(t, len(a), got.Tasks)
	}

	t.Run("the same in both keeps a width", func(t *testing.T) {
		// The bootstrap of three tasks all right in both is [0, 0].
		a, b := pairedTable(3, 0, 0, 0)
		assert.Equal(t, Interval{Tasks: 3}, MeanDiff(a, b, NewRand(1), 500))
		got := PairedAccuracyDiff(a, b, NewRand(1), 500)
		assert.InDelta(t, -0.5615, got.Lo, 1e-4)
		assert.InDelta(t, 0.5615, got.Hi, 1e-4)
		a, b = pairedTable(30, 0, 0, 0)
		got = PairedAccuracyDiff(a, b, NewRand(1), 500)
		assert.InDelta(t, 0.114, got.Hi, 1e-3, "30 tasks: about ±11 pp")
	})

	t.Run("fractional accuracies", func(t *testing.T) {
		a := []float64{0.5, 1, 0, 2.0 / 3, 1}
		b := []float64{1, 1, 0.5, 2.0 / 3, 1}
		got := PairedAccuracyDiff(a, b, NewRand(1), 500)
		assert.InDelta(t, 0.2, got.Est, 1e-12)
		assert.Less(t, got.Lo, 0.0)
		assert.Greater(t, got.Hi, 0.4)
		assert.GreaterOrEqual(t, got.Lo, -1.0)
		assert.LessOrEqual(t, got.Hi, 1.0)
	})

	t.Run("one task, none", func(t *testing.T) {
		assert.Equal(t, Interval{Est: 1, Lo: 1, Hi: 1, Tasks: 1}, PairedAccuracyDiff([]float64{0}, []float64{1}, nil, 0))
		assert.Equal(t, Interval{}, PairedAccuracyDiff(nil, nil, nil, 0))
	})
}

// MinDetectableDiff against values computed independently with Python's
// standard library:
//
//	from statistics import NormalDist
//	z = NormalDist().inv_cdf
//	(z(0.975) + z(0.8)) * (0.5 / n) ** 0.5
func TestMinDetectableDiff(t *testing.T) {
	for n, want := range map[int]float64{3: 1.1437424, 10: 0.6264535, 30: 0.3616831, 98: 0.2001132, 100: 0.1981020} {
		assert.InDelta(t, want, MinDetectableDiff(n), 1e-6, "n=%d", n)
	}
	assert.True(t, math.IsInf(MinDetectableDiff(0), 1))
}

func TestPowerNote(t *testing.T) {
	assert.Equal(t, "", powerNote(0, false, ""))
	assert.Equal(t, "", powerNote(100, false, ""), "100 tasks are not few")
	assert.Equal(t, "", powerNote(400, true, ""))
	few := powerNote(3, false, "")
	assert.True(t, strings.HasPrefix(few, "Power: with 3 tasks no difference in accuracy can be told apart reliably ("), few)
	assert.Contains(t, few, "(1.96 + 0.84)·√(0.5/n) = 1.98/√3 = 114 pp")
	some := powerNote(30, false, "")
	assert.True(t, strings.HasPrefix(some, "Power: with 30 tasks, a difference in accuracy smaller than about 36 pp is likely to go unseen ("), some)
	assert.Contains(t, powerNote(99, false, ""), "about 20 pp")
	assert.Equal(t, "Power: with 30 paired tasks, a difference in accuracy smaller than about 36 pp is likely to go unseen (1.98/√30 = 36 pp, the rule under the ladder).",
		powerNote(30, true, ""))
	assert.True(t, strings.HasPrefix(powerNote(30, false, "runs/one"), "Power (runs/one): with 30 tasks"))

	// In the pages: under the ladder and under each comparison table.
	rep := buildFixture(t, Options{})
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep))
	assert.Equal(t, 1, strings.Count(md.String(), "\n"+few+"\n"), "under the ladder")
	assert.Equal(t, 2, strings.Count(md.String(), "\n"+powerNote(3, true, "")+"\n"), "under the attribution and the comparisons with A")
	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, nil))
	assert.Equal(t, 3, strings.Count(page.String(), `<p class="power">`))
	assert.True(t, strings.Contains(html.UnescapeString(page.String()), `<p class="power">`+few+`</p>`), "the ladder's note on the page")

	// Many tasks: no note.
	big := syntheticRun([]string{"A", "B"}, 120, 1, func(tr *bench.Trial, _ string, task, _ int) bool {
		tr.Correct = task%2 == 0
		return true
	})
	md.Reset()
	require.NoError(t, Markdown(&md, buildOne(t, big)))
	assert.NotContains(t, md.String(), "Power")
}

// An interval over fewer than two tasks is "n < 2" on both pages and null
// in JSON.
func TestIntervalOverOneTask(t *testing.T) {
	r := syntheticRun([]string{"A", "B"}, 1, 3, func(tr *bench.Trial, cond string, _, rep int) bool {
		tr.Correct = rep != 2
		return true
	})
	rep := buildOne(t, r)
	require.Len(t, rep.Rows, 2)
	for _, row := range rep.Rows {
		assert.Equal(t, 1, row.Accuracy.Tasks)
		assert.Equal(t, 1, row.Context.Tasks)
	}
	require.Len(t, rep.Versus, 1)
	assert.Equal(t, 1, rep.Versus[0].Tasks)

	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep))
	text := md.String()
	assert.Contains(t, text, "| m | A | 3 | 2/3 = 67% [n < 2] | 0 | 0 | 0 | 0/0/0/3 | 1.00 [n < 2] (1.00; 1.00–1.00) | 1000 [n < 2] (1000; 1000–1000) |")
	assert.Contains(t, text, "| B vs A | m | A → B | 1 | 1.000 [n < 2] | 1.000 [n < 2] | +0 pp [n < 2] |")
	assert.Contains(t, text, "0.00s [n < 2]")

	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, nil))
	htmlWellFormed(t, page.String())
	assert.Contains(t, page.String(), `2/3 = <b>67%</b> <span class="ci">[n &lt; 2]</span>`)
	assert.Contains(t, page.String(), `1.000 <span class="ci">[n &lt; 2]</span>`)
	assert.Contains(t, page.String(), `<text class="acc-ci" `, "the ladder chart's accuracy")
	assert.Contains(t, page.String(), `>[n &lt; 2]</text>`)
	assert.NotContains(t, page.String(), `class="errbar`, "no error bars in the plot")

	js, err := json.Marshal(rep)
	require.NoError(t, err)
	var got struct {
		Rows []struct {
			Accuracy map[string]any `json:"accuracy"`
			Context  map[string]any `json:"context_tokens"`
		} `json:"rows"`
		Versus []struct {
			Accuracy map[string]any `json:"accuracy_diff"`
		} `json:"versus_baseline"`
	}
	require.NoError(t, json.Unmarshal(js, &got))
	for _, iv := range []map[string]any{got.Rows[0].Accuracy, got.Rows[0].Context, got.Versus[0].Accuracy} {
		assert.Contains(t, iv, "lo")
		assert.Nil(t, iv["lo"], "lo is null: %v", iv)
		assert.Nil(t, iv["hi"], "hi is null: %v", iv)
		assert.Equal(t, 1.0, iv["tasks"])
	}
	assert.InDelta(t, 2.0/3, got.Rows[0].Accuracy["est"], 1e-15)
}

// A comparison that could not pair every task, or left a pair out of a
// ratio for its zero tokens, says how many and why.
func TestComparisonSaysWhatItDropped(t *testing.T) {
	r := syntheticRun([]string{"A", "B"}, 5, 2, func(tr *bench.Trial, cond string, task, rep int) bool {
		tr.Correct = true
		switch {
		case cond == "B" && task == 1: // every rep an infra failure
			tr.Class, tr.Correct = bench.ClassInfra, false
		case cond == "B" && task == 2 && rep == 2: // no line yet: t2 is paired by its first rep
			return false
		case cond == "A" && task == 3: // a model that wrote nothing
			tr.OutputTokens = 0
		case cond == "B" && task == 4: // no line for any rep: not run yet
			return false
		}
		return true
	})
	rep := buildOne(t, r)
	require.Len(t, rep.Versus, 1)
	c := rep.Versus[0]
	assert.Equal(t, 3, c.Tasks, "t0, t2 and t3 are paired")
	assert.Equal(t, Dropped{NoResult: []string{"t1", "t4"}, ZeroOutput: 1}, c.Dropped)
	assert.Equal(t, 3, c.Context.Tasks)
	assert.Equal(t, 2, c.Output.Tasks, "t3 has no output ratio")
	assert.Equal(t, 3, c.Accuracy.Tasks, "t3 still counts in accuracy")

	want := "B vs A (A → B): 2 tasks of 5 not paired, with no trial with a model result in A or B (t1, t4); 1 pair of 3 left out of the output ratio, with 0 output tokens in A or B."
	assert.Equal(t, want, droppedNote(c))
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep))
	assert.Contains(t, md.String(), "\nDropped pairs:\n\n- "+want+"\n")
	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, nil))
	assert.True(t, strings.Contains(html.UnescapeString(page.String()), `<ul class="dropped"><li>Dropped: `+want+`</li></ul>`), "the note on the page")
	js, err := json.Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"dropped":{"no_result":["t1","t4"],"zero_context":0,"zero_output":1}`)

	// Nothing dropped: no such lines, and an empty list in JSON.
	full := buildFixture(t, Options{})
	for _, c := range append(full.Layers, full.Versus...) {
		assert.False(t, c.Dropped.Any(), c.Name)
	}
	md.Reset()
	require.NoError(t, Markdown(&md, full))
	assert.NotContains(t, md.String(), "Dropped")
	js, err = json.Marshal(full.Versus[0])
	require.NoError(t, err)
	assert.Contains(t, string(js), `"dropped":{"no_result":[],"zero_context":0,"zero_output":0}`)
}

var (
	accCostSVG   = regexp.MustCompile(`(?s)<svg class="acccost" viewBox="0 0 (\d+) (\d+)".*?</svg>`)
	accCostPoint = regexp.MustCompile(`(?s)<g class="point" data-run="(\d+)" data-model="([^"]*)" data-condition="([^"]*)">(.*?)</g>`)
	accCostDot   = regexp.MustCompile(`<circle class="dot [^"]*" cx="([^"]*)" cy="([^"]*)" r="5"><title>([^<]*)</title></circle>`)
	accCostBar   = regexp.MustCompile(`<path class="errbar errbar-(x|y)" d="M([\d.]+) ([\d.]+)(?:H|V)([\d.]+)`)
	accCostLabel = regexp.MustCompile(`<text class="plabel"[^>]*>([^<]*)</text>`)
)

// TestHTMLAccuracyCostPlot parses the plot: a point per (model,
// condition) where x follows the mean context tokens and y the accuracy,
// each with both error bars spanning its intervals.
func TestHTMLAccuracyCostPlot(t *testing.T) {
	page, rep, _ := htmlPageOf(t)
	svg := accCostSVG.FindString(page)
	require.NotEmpty(t, svg, "an accuracy–cost plot")
	assert.Contains(t, page, `<a href="#acccost">Accuracy and cost</a>`)
	points := accCostPoint.FindAllStringSubmatch(svg, -1)
	require.Len(t, points, len(rep.Rows), "a point per condition")
	assert.Equal(t, len(rep.Rows), strings.Count(svg, "<circle "))

	type pt struct{ cx, cy, xlo, xhi, ylo, yhi float64 }
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		return v
	}
	got := map[string]pt{}
	var labels []string
	for _, p := range points {
		dot := accCostDot.FindStringSubmatch(p[4])
		require.NotNil(t, dot, "%s: a dot", p[3])
		q := pt{cx: num(dot[1]), cy: num(dot[2])}
		bars := accCostBar.FindAllStringSubmatch(p[4], -1)
		require.Len(t, bars, 2, "%s: an error bar on each axis", p[3])
		for _, b := range bars {
			if b[1] == "x" { // M lo y H hi
				q.xlo, q.xhi = num(b[2]), num(b[4])
				assert.InDelta(t, q.cy, num(b[3]), 0.06, "%s: the x bar is level with the dot", p[3])
			} else { // M x lo V hi
				q.ylo, q.yhi = num(b[3]), num(b[4])
				assert.InDelta(t, q.cx, num(b[2]), 0.06, "%s: the y bar is plumb with the dot", p[3])
			}
		}
		assert.Contains(t, html.UnescapeString(dot[3]), p[3]+": accuracy ")
		got[p[3]] = q
		for _, l := range accCostLabel.FindAllStringSubmatch(p[4], -1) {
			labels = append(labels, strings.Split(l[1], ", ")...)
		}
	}
	var conds []string
	for _, r := range rep.Rows {
		conds = append(conds, r.Condition)
	}
	assert.ElementsMatch(t, conds, labels, "every condition is named once")

	// Positions follow the Report's numbers: x linear in tokens from 0,
	// y linear in accuracy, 0 at the bottom and 1 at the top.
	a, d := rep.Rows[0], rep.Rows[4]
	require.Equal(t, "A", a.Condition)
	require.Equal(t, "D", d.Condition)
	left := got["A"].cx - (got["A"].cx-got["D"].cx)/(a.Context.Mean-d.Context.Mean)*a.Context.Mean
	scaleX := (got["A"].cx - left) / a.Context.Mean
	for _, r := range rep.Rows {
		p := got[r.Condition]
		assert.InDelta(t, left+scaleX*r.Context.Mean, p.cx, 0.2, "%s: x", r.Condition)
		assert.InDelta(t, left+scaleX*r.Context.Lo, p.xlo, 0.2, "%s: the x bar's low end", r.Condition)
		assert.InDelta(t, left+scaleX*r.Context.Hi, p.xhi, 0.2, "%s: the x bar's high end", r.Condition)
	}
	b0 := got["B0"] // 100%
	bottom := b0.cy + (got["A"].cy-b0.cy)/(1-a.Accuracy.Est)
	for _, r := range rep.Rows {
		p := got[r.Condition]
		y := func(v float64) float64 { return bottom - v*(bottom-b0.cy) }
		assert.InDelta(t, y(r.Accuracy.Est), p.cy, 0.2, "%s: y", r.Condition)
		assert.InDelta(t, y(r.Accuracy.Lo), p.ylo, 0.2, "%s: the y bar's low end", r.Condition)
		assert.InDelta(t, y(r.Accuracy.Hi), p.yhi, 0.2, "%s: the y bar's high end", r.Condition)
	}
	assert.Contains(t, page, "across, the mean context tokens per trial")
}

// With two runs and two models the plot has a point per (run, model,
// condition), and a row without a model result is named, not drawn.
func TestHTMLAccuracyCostPlotManyRows(t *testing.T) {
	r := syntheticRun([]string{"A", "B"}, 4, 1, func(tr *bench.Trial, _ string, task, _ int) bool {
		tr.Correct = task < 2
		return true
	})
	// A second model: m2, whose B trials all failed in the harness.
	r.Spec.Models = append(r.Spec.Models, bench.ModelInfo{Name: "m2"})
	for _, tr := range slicesClone(r.Final) {
		tr.Model = "m2"
		tr.Correct = !tr.Correct
		if tr.Condition == "B" {
			tr.Class = bench.ClassInfra
		}
		r.Final = append(r.Final, tr)
	}
	second := *r
	rep, err := Build([]*Run{r, &second}, Options{})
	require.NoError(t, err)
	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, nil))
	htmlWellFormed(t, page.String())
	svg := accCostSVG.FindString(page.String())
	points := accCostPoint.FindAllStringSubmatch(svg, -1)
	var keys []string
	for _, p := range points {
		keys = append(keys, p[1]+"/"+p[2]+"/"+p[3])
	}
	assert.Equal(t, []string{"1/m/A", "1/m/B", "1/m2/A", "2/m/A", "2/m/B", "2/m2/A"}, keys)
	assert.Contains(t, svg, `class="dot m1"`, "a colour per model")
	assert.Contains(t, svg, `class="dot m0 run2"`, "the second run's points are hollow")
	assert.Contains(t, page.String(), "Not shown, with no trial with a model result: run 1 m2 B, run 2 m2 B.")
}

func slicesClone(ts []bench.Trial) []bench.Trial { return append([]bench.Trial(nil), ts...) }

func TestClusterLabel(t *testing.T) {
	pt := func(run int, model, cond string) htmlPoint { return htmlPoint{Run: run, Model: model, Condition: cond} }
	assert.Equal(t, "B, B0", clusterLabel([]htmlPoint{pt(1, "m", "B"), pt(1, "m", "B0")}, false, false))
	assert.Equal(t, "B, B0 (run 1, run 2)", clusterLabel([]htmlPoint{pt(1, "m", "B"), pt(1, "m", "B0"), pt(2, "m", "B"), pt(2, "m", "B0")}, false, true))
	assert.Equal(t, "run 1 m B, C; run 2 m B", clusterLabel([]htmlPoint{pt(1, "m", "B"), pt(1, "m", "C"), pt(2, "m", "B")}, true, true))
	assert.Equal(t, "D (m, m2)", clusterLabel([]htmlPoint{pt(1, "m", "D"), pt(1, "m2", "D")}, true, false))
}

// TestPoolWaitShownApart: the wait for a pooled kernel, which a trial's
// wall leaves out, is given on a line of its own in both pages, for the
// rows whose trials waited, and not at all when none did.
func TestPoolWaitShownApart(t *testing.T) {
	r := syntheticRun([]string{"A", "B"}, 3, 1, func(tr *bench.Trial, cond string, task, _ int) bool {
		tr.Correct = true
		if cond == "B" {
			tr.PoolWaitMS = int64(1000 * (task + 1))
		}
		return true
	})
	rep := buildOne(t, r)
	const line = "Waiting for a pooled kernel, apart from wall (the harness's time, mean per trial): m B 2.00s (median 2.00s)."
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep))
	assert.Contains(t, md.String(), line)
	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, nil))
	htmlWellFormed(t, page.String())
	assert.Contains(t, page.String(), `<p class="muted pool-wait">Waiting for a pooled kernel, apart from wall (the harness&#39;s time, mean per trial): m B 2.00s (median 2.00s).</p>`)

	none := buildOne(t, syntheticRun([]string{"A"}, 2, 1, func(tr *bench.Trial, _ string, _, _ int) bool { return true }))
	md.Reset()
	page.Reset()
	require.NoError(t, Markdown(&md, none))
	require.NoError(t, HTML(&page, none, nil))
	assert.NotContains(t, md.String(), "Waiting for a pooled kernel")
	assert.NotContains(t, page.String(), "Waiting for a pooled kernel")
}
