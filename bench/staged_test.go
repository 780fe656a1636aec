package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// runStaged prepares, opens and executes the run cfg says, and returns
// its outcome.
func runStaged(t *testing.T, cfg bench.Config) *bench.Outcome {
	t.Helper()
	s, err := bench.Prepare(cfg, &strings.Builder{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard, not a time limit
	defer cancel()
	l, cleanup, err := s.Open(ctx, &strings.Builder{})
	defer cleanup()
	require.NoError(t, err)
	defer l.Close()
	out, err := s.Run.Execute(ctx, l)
	require.NoError(t, err)
	return out
}

// requireStageSums checks that a session trial's stages add up: each
// stage's Cumulative is the sum of its Own and those before it, and the
// trial's totals are the last Cumulative.
func requireStageSums(t *testing.T, tr bench.Trial) {
	t.Helper()
	require.NotEmpty(t, tr.Stages, tr.Key.String())
	var sum bench.StageUse
	for i, st := range tr.Stages {
		assert.Equal(t, i+1, st.Stage)
		sum.Add(st.Own)
		assert.Equal(t, sum, st.Cumulative, "%s stage %d", tr.Key, st.Stage)
	}
	last := tr.Stages[len(tr.Stages)-1].Cumulative
	assert.Equal(t, last.InputTokens, tr.ContextTokens, tr.Key.String())
	assert.Equal(t, last.OutputTokens, tr.OutputTokens, tr.Key.String())
	assert.Equal(t, last.Calls, tr.Turns+tr.Folds, "%s: calls are the turns and the folds", tr.Key)
}

// readEvents reads a trial's trajectory.
func readEvents(t *testing.T, dir string, tr bench.Trial) []session.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, tr.Trajectory))
	require.NoError(t, err)
	l, err := session.ReadTrajectory(bytes.NewReader(b))
	require.NoError(t, err)
	require.Empty(t, l.Skipped)
	return l.Events
}

// TestStagedBuiltinRun: --stages 4 over the built-in tasks makes sessions
// of four questions; each is one trial, in one trajectory, whose stages
// are each graded as they end and whose figures sum to the trial's; a
// resume runs nothing again, and one under another context policy is
// refused.
func TestStagedBuiltinRun(t *testing.T) {
	cfg := configS(t)
	cfg.Stages, cfg.Conditions, cfg.Reps = 4, "B,D", 1
	cfg.TaskIDs = []string{"s-s4-1", "s-s4-2"}
	s, err := bench.Prepare(cfg, &strings.Builder{})
	require.NoError(t, err)
	require.Len(t, s.Run.Sessions, 2)
	assert.Len(t, s.Tasks, 8, "only the sessions' tasks")
	assert.Equal(t, 4, s.Source.Stages)
	again, err := bench.Prepare(cfg, &strings.Builder{})
	require.NoError(t, err)
	assert.Equal(t, s.Run.Sessions, again.Run.Sessions, "the same tasks, seed and stages give the same sessions")
	other := bench.BuiltinSessions(s.Tasks, "s", 2, 4)
	require.Len(t, other, 2)
	assert.NotEqual(t, s.Run.Sessions[0].Tasks, other[0].Tasks, "another seed, another order")

	out := runStaged(t, cfg)
	require.Equal(t, 4, out.Total)
	require.Len(t, out.Final, 4)
	stagesOf := map[string][]string{}
	for _, ss := range s.Run.Sessions {
		stagesOf[ss.Name] = ss.Tasks
	}
	for _, tr := range out.Final {
		assert.Equal(t, tr.Task, tr.Session)
		require.Len(t, tr.Stages, 4, tr.Key.String())
		requireStageSums(t, tr)
		assert.True(t, tr.Correct, "%s: the reference model answers every stage", tr.Key)
		for i, st := range tr.Stages {
			assert.Equal(t, stagesOf[tr.Task][i], st.Task)
			assert.True(t, st.Correct, "%s stage %d", tr.Key, st.Stage)
			assert.Positive(t, st.Own.InputTokens)
			assert.Positive(t, st.PeakRequestTokens)
			if i > 0 {
				assert.Greater(t, st.Own.InputTokens, tr.Stages[0].Own.InputTokens, "later stages carry the history")
			}
		}
		// One trajectory: a run per stage with its session and number,
		// each followed by the grade of its task.
		var runs, grades []string
		for _, ev := range readEvents(t, cfg.Out, tr) {
			switch {
			case ev.Run != nil:
				assert.Equal(t, tr.Session, ev.Run.Session)
				runs = append(runs, fmt.Sprintf("%d:%s", ev.Run.Stage, ev.Run.Task))
			case ev.Grade != nil:
				require.Len(t, grades, len(runs)-1, "a grade follows each stage")
				grades = append(grades, fmt.Sprintf("%d:%s", len(runs), ev.Grade.Task))
			}
		}
		var want []string
		for i, id := range stagesOf[tr.Task] {
			want = append(want, fmt.Sprintf("%d:%s", i+1, id))
		}
		assert.Equal(t, want, runs)
		assert.Equal(t, want, grades)
	}

	// A resume: every session has its line.
	out = runStaged(t, cfg)
	assert.Equal(t, 4, out.Skipped)
	assert.Zero(t, out.Ran)

	// Another context policy is another run.
	cfg.Agent.Context = session.Context{Policy: session.PolicyElide, Window: 4000}
	s, err = bench.Prepare(cfg, &strings.Builder{})
	require.NoError(t, err)
	_, cleanup, err := s.Open(context.Background(), &strings.Builder{})
	cleanup()
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), "condition B: context policy none in the run, elide at 0.6 of 4000 tokens")
}

// bigOutputTasks writes a task file of one session of n stages over the
// usertasks data, each of whose solutions prints a long list (cut to the
// output budget) before its answer, and a conditions file of D under
// elide and summarize; the run's own policy is none.
func bigOutputTasks(t *testing.T, n int) bench.Config {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for k := 1; k <= n; k++ {
		lines = append(lines, fmt.Sprintf(`{"id": "big-%d", "session": "big", "stage": %d, "question": "Stage %d: how many numbers does list %d hold, plus %d?", "answer_type": "integer", "gold": %d, "solution": "x%d = list(range(%d, %d))\nprint(x%d)\nANSWER(len(x%d) + %d)"}`,
			k, k, k, k, k, 400+k, k, 10000*k, 10000*k+400, k, k, k))
	}
	lines = append(lines, `{"id": "alone", "question": "How many readings recorded more than 5 mm of rain?", "answer_type": "integer", "gold": 11, "solution": "ANSWER(sum(1 for r in readings if r['rain_mm'] > 5))"}`)
	tasks := filepath.Join(dir, "tasks.jsonl")
	require.NoError(t, os.WriteFile(tasks, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	conds := filepath.Join(dir, "conditions.jsonl")
	require.NoError(t, os.WriteFile(conds, []byte(`{"name": "D-elide", "base": "D", "context": "elide"}
{"name": "D-sum", "base": "D", "context": "summarize"}
`), 0o644))
	cfg := agent.DefaultConfig()
	cfg.Context = session.Context{Policy: session.PolicyNone, Window: 4000}
	return bench.Config{
		Out:            filepath.Join(dir, "run"),
		DataDir:        filepath.Join("..", "testdata", "usertasks", "data"),
		TaskFile:       tasks,
		Prefix:         filepath.Join("..", "testdata", "usertasks", "prefix.py"),
		Conditions:     "D",
		ConditionsFile: conds,
		Models:         []string{llm.ReferenceName},
		Reps:           1,
		Parallel:       2,
		Agent:          cfg,
		Sandbox:        sandbox.OpenOptions{Kind: sandbox.KindLocal},
		Version:        "test",
	}
}

// TestStagedContextPolicies: a 10-stage session whose cells print long
// outputs passes a 4k window under none; elide keeps every request under
// it; summarize folds the history with one extra call per fold, counted in
// the calls and tokens; every stage of every policy is graded right. A
// task of the file in no session is a trial of its own.
func TestStagedContextPolicies(t *testing.T) {
	cfg := bigOutputTasks(t, 10)
	out := runStaged(t, cfg)
	require.Len(t, out.Final, 6, "three conditions of the session and of the task alone")
	byCond := map[string]bench.Trial{}
	for _, tr := range out.Final {
		if tr.Task == "alone" {
			assert.Empty(t, tr.Session)
			assert.Empty(t, tr.Stages)
			assert.True(t, tr.Correct, tr.Key.String())
			continue
		}
		byCond[tr.Condition] = tr
		require.Len(t, tr.Stages, 10, tr.Key.String())
		requireStageSums(t, tr)
		for _, st := range tr.Stages {
			assert.Equal(t, "correct", st.Verdict, "%s stage %d", tr.Key, st.Stage)
		}
		assert.True(t, tr.Correct, tr.Key.String())
	}
	peak := func(tr bench.Trial) int {
		p := 0
		for _, st := range tr.Stages {
			p = max(p, st.PeakRequestTokens)
		}
		return p
	}
	none, elide, sum := byCond["D"], byCond["D-elide"], byCond["D-sum"]
	t.Logf("peak request tokens: none %d, elide %d, summarize %d (%d folds); input tokens: none %d, elide %d, summarize %d",
		peak(none), peak(elide), peak(sum), sum.Folds, none.ContextTokens, elide.ContextTokens, sum.ContextTokens)
	assert.Empty(t, none.Context)
	assert.Greater(t, peak(none), 4000, "without a policy the history outgrows the window")
	assert.Equal(t, "elide", elide.Context)
	assert.LessOrEqual(t, peak(elide), 4000, "elision keeps every request in the window")
	assert.Positive(t, elide.Stages[9].Elided)
	assert.Zero(t, elide.Folds)
	assert.Less(t, elide.ContextTokens, none.ContextTokens)

	// summarize: one call per fold, in the calls and the tokens.
	assert.Equal(t, "summarize", sum.Context)
	require.Positive(t, sum.Folds)
	var folds, turns, prompt, output int
	for _, ev := range readEvents(t, cfg.Out, sum) {
		if c := ev.Call; c != nil {
			if c.Fold {
				folds++
			} else {
				turns++
			}
			prompt += c.Usage.PromptTokens
			output += c.Usage.CompletionTokens
		}
	}
	assert.Equal(t, sum.Folds, folds, "one call per fold")
	assert.Equal(t, sum.Turns, turns)
	assert.Equal(t, 10, sum.Turns, "one cell a stage")
	assert.Equal(t, prompt, sum.ContextTokens, "the folds' tokens are in the totals")
	assert.Equal(t, output, sum.OutputTokens)
	assert.Equal(t, sum.Turns+sum.Folds, sum.Stages[9].Cumulative.Calls)
	assert.LessOrEqual(t, peak(sum), 4000)
}

// TestStagedRefusals: --stages with a task file, or more stages than the
// data has tasks, are refused; so is a variant's bad context policy.
func TestStagedRefusals(t *testing.T) {
	cfg := configS(t)
	cfg.Stages = 25
	_, err := bench.Prepare(cfg, &strings.Builder{})
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), "--stages 25: the data has 24 built-in tasks")

	cfg = bigOutputTasks(t, 2)
	cfg.Stages = 2
	_, err = bench.Prepare(cfg, &strings.Builder{})
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), `--stages cuts the built-in tasks into sessions, and --tasks brings its own`)

	cfg = bigOutputTasks(t, 2)
	cfg.TaskIDs = []string{"big-1"}
	_, err = bench.Prepare(cfg, &strings.Builder{})
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), "--task big-1: the task is stage 1 of session big")

	cfg = bigOutputTasks(t, 2)
	require.NoError(t, os.WriteFile(cfg.ConditionsFile, []byte(`{"name": "D-x", "base": "D", "context": "fold"}
{"name": "D-y", "base": "D", "context": "elide", "soft": 1.5}
`), 0o644))
	_, err = bench.Prepare(cfg, &strings.Builder{})
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), `:1: unknown context policy "fold": expected none, elide, summarize or staged`)
	assert.Contains(t, ie.Error(), `:2: soft 1.5: a share of the window, above 0 and at most 1`)
}

// TestReadTasksSessions: a task file's sessions are checked, each problem
// with its line.
func TestReadTasksSessions(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "other"), 0o755))
	task := func(id, extra string) string {
		return fmt.Sprintf(`{"id": %q, "question": "Q %s?", "answer_type": "integer", "gold": 1%s}`, id, id, extra)
	}
	good := strings.Join([]string{
		task("a2", `, "session": "s1", "stage": 2`),
		task("plain", ""),
		task("a1", `, "session": "s1", "stage": 1`),
	}, "\n")
	path := filepath.Join(dir, "good.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(good), 0o644))
	uts, err := bench.ReadTasks(path)
	require.NoError(t, err)
	assert.Equal(t, []bench.Session{{Name: "s1", Tasks: []string{"a1", "a2"}}}, bench.SessionsOf(uts))

	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"a gap", []string{task("x1", `, "session": "s", "stage": 1`), task("x3", `, "session": "s", "stage": 3`)},
			[]string{`:1: session "s" has no stage 2 (its stages go up to 3)`}},
		{"a stage twice", []string{task("x1", `, "session": "s", "stage": 1`), task("y1", `, "session": "s", "stage": 1`)},
			[]string{`:2: session "s" has stage 1 twice (line 1 has it already)`}},
		{"no stage", []string{task("x1", `, "session": "s"`)}, []string{`:1: session without stage`}},
		{"no session", []string{task("x1", `, "stage": 1`)}, []string{`:1: stage without session`}},
		{"a bad stage", []string{task("x1", `, "session": "s", "stage": 1.5`), task("x2", `, "session": "t", "stage": "2"`)},
			[]string{`:1: stage is 1.5: give the task's place in its session, a whole number from 1 to 100`, `:2: stage is "2"`}},
		{"two folders", []string{task("x1", `, "session": "s", "stage": 1`), task("x2", `, "session": "s", "stage": 2, "data": "other"`)},
			[]string{`:2: session "s": this task's data folder (` + filepath.Join(dir, "other") + `) is not that of its stage on line 1 (--data)`}},
		{"a task's name", []string{task("s", ""), task("x1", `, "session": "s", "stage": 1`)},
			[]string{`:2: session "s" has the name of the task on line 1`}},
		{"a bad name", []string{task("x1", `, "session": "a b", "stage": 1`)}, []string{`:1: session "a b" is not a plain name`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			require.NoError(t, os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")), 0o644))
			_, err := bench.ReadTasks(path)
			var tfe *bench.TaskFileError
			require.ErrorAs(t, err, &tfe)
			for _, w := range tc.want {
				assert.Contains(t, tfe.Error(), path+w)
			}
			assert.Len(t, tfe.Problems, len(tc.want), tfe.Error())
		})
	}
}

// TestStagedBudgetSpansTheSession: --max-prompt-tokens bounds the whole
// session: the stage that would pass what the earlier ones left ends with
// max_prompt_tokens, and the session stops there, cut by its budget.
func TestStagedBudgetSpansTheSession(t *testing.T) {
	cfg := bigOutputTasks(t, 6)
	cfg.Conditions, cfg.ConditionsFile = "D", ""
	cfg.Agent.MaxPromptTokens = 6000 // each stage alone fits it
	out := runStaged(t, cfg)
	var tr bench.Trial
	for _, f := range out.Final {
		if f.Task == "big" {
			tr = f
		}
	}
	require.NotEmpty(t, tr.Stages)
	requireStageSums(t, tr)
	n := len(tr.Stages)
	require.Less(t, n, 6, "the session was cut")
	require.Greater(t, n, 1)
	last := tr.Stages[n-1]
	assert.Equal(t, agent.MaxPromptTokens, last.Status)
	for _, st := range tr.Stages[:n-1] {
		assert.True(t, st.Correct, "stage %d", st.Stage)
		assert.Less(t, st.Own.InputTokens, 6000)
	}
	assert.LessOrEqual(t, tr.ContextTokens, 6000, "the session's prompt tokens stay in its budget")
	assert.Equal(t, agent.MaxPromptTokens, tr.Status)
	assert.True(t, tr.BudgetStop())
	assert.Equal(t, bench.ClassModel, tr.Class)
	assert.False(t, tr.Correct)
}

// TestStagedReferenceSkipsASessionWithoutASolution: the reference model
// has no trial of a session one of whose stages has no solution.
func TestStagedReferenceSkipsASessionWithoutASolution(t *testing.T) {
	cfg := bigOutputTasks(t, 2)
	b, err := os.ReadFile(cfg.TaskFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines[1] = `{"id": "big-2", "session": "big", "stage": 2, "question": "Stage 2?", "answer_type": "integer", "gold": 2}`
	require.NoError(t, os.WriteFile(cfg.TaskFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	s, err := bench.Prepare(cfg, &strings.Builder{})
	require.NoError(t, err)
	require.Len(t, s.Run.Models, 1)
	assert.Equal(t, []string{"big-2", "big"}, s.Run.Models[0].SkipTasks)
	out := runStaged(t, cfg)
	require.Len(t, out.Final, 3, "the task alone, in D and its two variants")
	for _, tr := range out.Final {
		assert.Equal(t, "alone", tr.Task)
	}
}
