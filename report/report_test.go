package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/report")

// fixture is a small run made by ctxcode bench and then edited so that it
// holds every kind of line (testdata/report/README.md).
const fixture = "../testdata/report/run"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", "report", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./report -update to write %s", path)
	assert.Equal(t, string(want), string(got), "%s differs (go test ./report -update rewrites it)", path)
}

func buildFixture(t *testing.T, opts Options) *Report {
	t.Helper()
	r, err := Load(fixture)
	require.NoError(t, err)
	r.Dir = "testdata/report/run" // as the goldens name it, wherever the test runs
	rep, err := Build([]*Run{r}, opts)
	require.NoError(t, err)
	return rep
}

func TestGoldenMarkdownAndJSON(t *testing.T) {
	rep := buildFixture(t, Options{})
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep, "run"))
	golden(t, "report.md", md.Bytes())
	js, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	golden(t, "report.json", append(js, '\n'))

	again := buildFixture(t, Options{})
	js2, err := json.MarshalIndent(again, "", "  ")
	require.NoError(t, err)
	assert.Equal(t, string(js), string(js2), "a report of the same run is the same to the byte")
}

// The Markdown's numbers are those of a recomputation straight from
// trials.jsonl, by code that shares nothing with Build.
func TestMarkdownMatchesARecomputation(t *testing.T) {
	f, err := os.Open(filepath.Join(fixture, "trials.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	last := map[string]map[string]any{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		k := fmt.Sprint(m["model"], "/", m["condition"], "/", m["task"], "/", m["rep"])
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = m
	}
	type sums struct{ trials, infra, graded, correct, budget, died, ctx, out int }
	by := map[string]*sums{}
	for _, k := range order {
		m := last[k]
		c := m["condition"].(string)
		if by[c] == nil {
			by[c] = &sums{}
		}
		s := by[c]
		s.trials++
		if m["class"] == "infra" {
			s.infra++
			continue
		}
		s.graded++
		if m["correct"] == true {
			s.correct++
		}
		switch m["status"] {
		case "max_turns", "max_prompt_tokens", "context_length_exceeded":
			s.budget++
		case "kernel_died":
			s.died++
		}
		s.ctx += int(m["context_tokens"].(float64))
		s.out += int(m["output_tokens"].(float64))
	}
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, buildFixture(t, Options{}), ""))
	rows := map[string]string{}
	for _, line := range strings.Split(md.String(), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) > 3 && strings.HasPrefix(line, "| reference | ") {
			rows[cells[1]] = line
		}
	}
	require.Len(t, by, 5)
	for c, s := range by {
		line := rows[c]
		require.NotEmpty(t, line, "no ladder row for %s", c)
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		assert.Equal(t, fmt.Sprint(s.trials), cells[2], "%s trials", c)
		assert.True(t, strings.HasPrefix(cells[3], fmt.Sprintf("%d/%d = %.0f%%", s.correct, s.graded, 100*float64(s.correct)/float64(s.graded))), "%s accuracy: %s", c, cells[3])
		assert.Equal(t, fmt.Sprint(s.infra), cells[4], "%s infra", c)
		assert.Equal(t, fmt.Sprint(s.budget), cells[5], "%s budget stops", c)
		assert.Equal(t, fmt.Sprint(s.died), cells[6], "%s kernel deaths", c)
		assert.True(t, strings.HasPrefix(cells[9], fmt.Sprintf("%.0f [", float64(s.ctx)/float64(s.graded))), "%s context mean: %s", c, cells[9])
		assert.True(t, strings.HasPrefix(cells[10], fmt.Sprintf("%.0f [", float64(s.out)/float64(s.graded))), "%s output mean: %s", c, cells[10])
	}
}

func TestAttributionLayers(t *testing.T) {
	rep := buildFixture(t, Options{})
	var names []string
	for _, l := range rep.Layers {
		names = append(names, l.Name+" "+l.From+"→"+l.To)
	}
	assert.Equal(t, []string{"representation A→B0", "working habits B0→B", "protocol B→D", "loop D→C"}, names)
	for _, l := range rep.Layers {
		assert.LessOrEqual(t, l.Context.Lo, l.Context.Est, l.Name)
		assert.GreaterOrEqual(t, l.Context.Hi, l.Context.Est, l.Name)
		assert.Equal(t, 3, l.Tasks, "%s: every task has a model result in both conditions", l.Name)
	}
	// B0 over A is well below 1: the prefix's representation is the big saving.
	assert.Less(t, rep.Layers[0].Context.Hi, 0.6)
	assert.Equal(t, "A", rep.Baseline)
	assert.Len(t, rep.Versus, 4)

	// Without A the representation layer is left out, with a note.
	r, err := Load(fixture)
	require.NoError(t, err)
	var conds []bench.ConditionInfo
	for _, c := range r.Spec.Conditions {
		if c.Name != "A" {
			conds = append(conds, c)
		}
	}
	r.Spec.Conditions = conds
	rep, err = Build([]*Run{r}, Options{})
	require.NoError(t, err)
	assert.Len(t, rep.Layers, 3)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "representation layer (B0 vs A) is left out")
	assert.Equal(t, "B", rep.Baseline, "without A the baseline is the first condition")

	_, err = Build([]*Run{r}, Options{Baseline: "Z"})
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Msg, "no condition Z")
}

func TestPricesMakeMoney(t *testing.T) {
	rep := buildFixture(t, Options{Prices: map[string]Price{"reference": {Input: 1, CachedInput: 0.5, Output: 4}}})
	for _, r := range rep.Rows {
		require.NotNil(t, r.Money, r.Condition)
		// No cached tokens in the fixture: the mean is the mean of input and
		// output at their prices.
		want := (r.Context.Mean*1 + r.Output.Mean*4) / 1e6
		assert.InDelta(t, want, r.Money.MeanUSD, 1e-12, r.Condition)
		assert.InDelta(t, want*float64(r.Graded), r.Money.TotalUSD, 1e-9, r.Condition)
	}
	assert.Nil(t, buildFixture(t, Options{}).Rows[0].Money, "no money without prices")
}

func TestTwoRunsArePaired(t *testing.T) {
	a, err := Load(fixture)
	require.NoError(t, err)
	b, err := Load(fixture)
	require.NoError(t, err)
	for i := range b.Final { // the second run: every context doubled
		b.Final[i].ContextTokens *= 2
	}
	rep, err := Build([]*Run{a, b}, Options{})
	require.NoError(t, err)
	require.Len(t, rep.Pairs, 5)
	for _, p := range rep.Pairs {
		assert.InDelta(t, 2, p.Context.Est, 1e-9, p.Name)
		assert.InDelta(t, 2, p.Context.Lo, 1e-9, p.Name)
		assert.InDelta(t, 1, p.Output.Est, 1e-9, p.Name)
	}
	assert.Len(t, rep.Rows, 10, "each run's rows")
}

// TestGoldenTwoRuns: a report of two runs says which sections cover the
// first run only, and has a per-task table for each run, each linking its
// own run's trajectories.
func TestGoldenTwoRuns(t *testing.T) {
	var runs []*Run
	for _, dir := range []string{"runs/one", "runs/two"} {
		r, err := Load(fixture)
		require.NoError(t, err)
		r.Dir = dir
		runs = append(runs, r)
	}
	rep, err := Build(runs, Options{})
	require.NoError(t, err)
	require.Len(t, rep.SecondTasks, htmlFixtureTasks)
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep, "one", "two"))
	golden(t, "two-runs.md", md.Bytes())
	js, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	golden(t, "two-runs.json", append(js, '\n'))

	text := md.String()
	for _, h := range []string{"## The attribution of run 1 only, paired by task", "## Every condition against A, run 1 only, paired by task",
		"## The second run against the first, paired by (condition, task)", "## Per task, run 1", "## Per task, run 2"} {
		assert.Contains(t, text, "\n"+h+"\n")
	}
	run2 := text[strings.Index(text, "## Per task, run 2"):]
	assert.Contains(t, run2, "[r1](two/trajectories/reference.A.s-t1-1.r1.jsonl)", "run 2's table links run 2's trajectories")
	assert.NotContains(t, run2, "](one/")
	assert.Equal(t, len(runs[1].Final), strings.Count(run2, "](two/trajectories/"), "a link per trial of run 2")
}

// Two runs of different data seeds share task ids but not their questions
// or golds: those tasks are not paired, and a note says which.
func TestTwoRunsPairOnlyTheSameTasks(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(task *bench.Spec)
		note string
	}{
		{"another question", func(s *bench.Spec) { s.TaskList[0].Question += " (seed 2)" }, "1 with the same id but another question or gold"},
		{"another gold", func(s *bench.Spec) { s.TaskList[0].Gold = 999 }, "1 with the same id but another question or gold"},
		{"a task of one run only", func(s *bench.Spec) { s.TaskList[0].ID = "s-t9-9" }, "2 in one run only: s-t1-1, s-t9-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Load(fixture)
			require.NoError(t, err)
			b, err := Load(fixture)
			require.NoError(t, err)
			require.Equal(t, "s-t1-1", b.Spec.TaskList[0].ID)
			tc.edit(&b.Spec)
			rep, err := Build([]*Run{a, b}, Options{})
			require.NoError(t, err)
			require.Len(t, rep.Pairs, 5)
			for _, p := range rep.Pairs {
				assert.Equal(t, 2, p.Tasks, "%s: s-t1-1 is not paired", p.Name)
			}
			notes := strings.Join(rep.Notes, "\n")
			assert.Contains(t, notes, "2 tasks are paired (the same id, question and gold in both)")
			assert.Contains(t, notes, tc.note)
			assert.Contains(t, notes, "s-t1-1")
		})
	}

	// The same task lists: every task paired, no note; golds compare as
	// JSON (3 and 3.0 are one gold).
	a, err := Load(fixture)
	require.NoError(t, err)
	b, err := Load(fixture)
	require.NoError(t, err)
	if g, ok := b.Spec.TaskList[0].Gold.(float64); ok {
		b.Spec.TaskList[0].Gold = int(g)
	}
	rep, err := Build([]*Run{a, b}, Options{})
	require.NoError(t, err)
	for _, p := range rep.Pairs {
		assert.Equal(t, 3, p.Tasks, p.Name)
	}
	assert.NotContains(t, strings.Join(rep.Notes, "\n"), "task lists differ")
}

func TestSomeIDs(t *testing.T) {
	assert.Equal(t, "a, b", someIDs([]string{"a", "b"}))
	assert.Equal(t, "a, b, c, d, e and 2 more", someIDs([]string{"a", "b", "c", "d", "e", "f", "g"}))
}

func TestUnpricedModelsHaveANote(t *testing.T) {
	rep := buildFixture(t, Options{Prices: map[string]Price{"gpt-4o-mini": {Input: 1, CachedInput: 1, Output: 1}}})
	assert.Nil(t, rep.Rows[0].Money)
	assert.Contains(t, rep.Notes, "no price for model reference in --prices: no money shown for it")
	rep = buildFixture(t, Options{Prices: map[string]Price{"reference": {Input: 1, CachedInput: 1, Output: 1}}})
	assert.NotContains(t, strings.Join(rep.Notes, "\n"), "no price")
	assert.NotContains(t, strings.Join(buildFixture(t, Options{}).Notes, "\n"), "no price", "no note without --prices")
}

func TestReadPrices(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	p, err := ReadPrices(write("p.json", `{"gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.6}, "free": {"input": 0, "output": 0}}`))
	require.NoError(t, err)
	assert.Equal(t, Price{0.15, 0.075, 0.6}, p["gpt-4o-mini"])
	assert.Equal(t, Price{}, p["free"])

	p, err = ReadPrices(write("nocache.json", `{"m": {"input": 2, "output": 8}}`))
	require.NoError(t, err)
	assert.Equal(t, Price{Input: 2, CachedInput: 2, Output: 8}, p["m"], "cached_input left out is the input price, not free")

	for _, tc := range []struct{ name, body, msg string }{
		{"not an object", `[1, 2]`, "expected a JSON object from model name"},
		{"negative", `{"m": {"input": -1, "output": 1}}`, "model m: a negative price"},
		{"misspelled", `{"m": {"inptu": 1, "output": 1}}`, `model m: unknown field "inptu" (the fields are input, cached_input, output`},
		{"no input", `{"m": {"output": 1}}`, `model m: both "input" and "output" are required`},
		{"no output", `{"m": {"input": 1, "cached_input": 0.5}}`, `model m: both "input" and "output" are required`},
		{"not a number", `{"m": {"input": "1", "output": 1}}`, "model m: cannot unmarshal string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPrices(write(tc.name+".json", tc.body))
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

// A trajectory path outside the run directory is never read, by the page
// or by the notebooks.
func TestReadTrajectory(t *testing.T) {
	r, err := Load(fixture)
	require.NoError(t, err)
	tr := r.Final[0]
	b, cut, err := r.ReadTrajectory(tr)
	require.NoError(t, err)
	assert.False(t, cut)
	assert.True(t, bytes.HasPrefix(b, []byte(`{"type":"run"`)))

	// A trajectory beside the run directory, and one named absolutely.
	outside := filepath.Join(t.TempDir(), "outside.jsonl")
	require.NoError(t, os.WriteFile(outside, b, 0o644))
	r.Dir = filepath.Join(filepath.Dir(outside), "run")
	require.NoError(t, os.CopyFS(r.Dir, os.DirFS(fixture)))
	for _, tc := range []struct{ name, path, msg string }{
		{"none", "", "no trajectory was recorded for this trial"},
		{"dot-dot", "../outside.jsonl", "the trajectory ../outside.jsonl is outside the run directory: not read"},
		{"dot-dot inside", "trajectories/../../outside.jsonl", "the trajectory trajectories/../../outside.jsonl is outside the run directory: not read"},
		{"absolute", outside, "the trajectory " + outside + " is outside the run directory: not read"},
		{"missing", "trajectories/nonexistent.jsonl", "the trajectory trajectories/nonexistent.jsonl could not be read: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr.Trajectory = tc.path
			_, _, err := r.ReadTrajectory(tr)
			assert.EqualError(t, err, tc.msg)
		})
	}

	// The page says so in the trial's place.
	r.Final[0].Trajectory = "../outside.jsonl"
	rep, err := Build([]*Run{r}, Options{})
	require.NoError(t, err)
	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, []*Run{r}))
	assert.Contains(t, page.String(), "is outside the run directory: not read")
}

// With Options.Notebooks each trial of the first run links to its notebook
// from its transcript's summary line, relative to the page.
func TestHTMLLinksNotebooks(t *testing.T) {
	r, err := Load(fixture)
	require.NoError(t, err)
	rep, err := Build([]*Run{r}, Options{Notebooks: true})
	require.NoError(t, err)
	var page bytes.Buffer
	require.NoError(t, HTMLAt(&page, rep, []*Run{r}, "../run"))
	html := page.String()
	assert.Equal(t, len(r.Final), strings.Count(html, `">notebook</a></summary>`), "one link per trial")
	assert.Contains(t, html, `<a class="nb" href="../run/notebooks/reference.A.s-t1-1.r1.ipynb">notebook</a></summary>`)

	page.Reset()
	require.NoError(t, HTML(&page, rep, []*Run{r}))
	assert.Contains(t, page.String(), `href="notebooks/reference.A.s-t1-1.r1.ipynb"`, "HTML: a page in the run directory")

	rep, err = Build([]*Run{r}, Options{})
	require.NoError(t, err)
	page.Reset()
	require.NoError(t, HTML(&page, rep, []*Run{r}))
	assert.NotContains(t, page.String(), ">notebook</a>", "no links without notebooks")
}

// TestKernelDeathsCountAsWrong: a trial whose kernel the model's code
// killed (kernel_died, class model) is graded and wrong, in the accuracy
// denominator, and counted in its own column; an older run's kernel_failed
// line (class infra) stays out of it.
func TestKernelDeathsCountAsWrong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.CopyFS(dir, os.DirFS(fixture)))
	base := buildFixture(t, Options{})
	f, err := os.OpenFile(filepath.Join(dir, "trials.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	line := func(task, status, class, death string) string {
		return fmt.Sprintf(`{"model":"reference","condition":"C","task":%q,"rep":9,"attempt":1,"status":%q,"class":%q,"death":%q,`+
			`"answer":null,"correct":false,"answer_right":false,"verdict":"no_answer","turns":1,"context_tokens":700,"output_tokens":10,`+
			`"cached_tokens":0,"reasoning_tokens":0,"estimated":false,"wall_ms":100,"kernel_ms":10,"model_ms":50,"waited_ms":0,"retries":0,`+
			`"restarts":0,"trajectory":"","started":"2026-12-01T12:30:00Z"}`+"\n", task, status, class, death)
	}
	_, err = f.WriteString(line("s-t1-1", "kernel_died", "model", "oom") + line("s-t1-2", "kernel_failed", "infra", ""))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r, err := Load(dir)
	require.NoError(t, err)
	rep, err := Build([]*Run{r}, Options{})
	require.NoError(t, err)
	row := func(rep *Report) Row {
		for _, r := range rep.Rows {
			if r.Condition == "C" {
				return r
			}
		}
		t.Fatal("no row for C")
		return Row{}
	}
	before, after := row(base), row(rep)
	assert.Equal(t, before.Trials+2, after.Trials)
	assert.Equal(t, before.Graded+1, after.Graded, "the death is graded")
	assert.Equal(t, before.Correct, after.Correct, "and wrong")
	assert.Equal(t, before.Infra+1, after.Infra, "an older run's kernel_failed stays infra")
	assert.Equal(t, before.KernelDied+1, after.KernelDied)
	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep, ""))
	assert.Contains(t, md.String(), "| kernel deaths |")
}
