package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/sandbox"
)

// askData writes the built-in data set of tier s into a temporary folder.
func askData(t *testing.T) (string, []datasets.Task) {
	t.Helper()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	dir := t.TempDir()
	d := datasets.Generate(tier, 1)
	_, err = d.Write(dir, true)
	require.NoError(t, err)
	tasks, err := datasets.Tasks(d)
	require.NoError(t, err)
	require.NotEmpty(t, tasks)
	return dir, tasks
}

// askLocal is the sandbox of these tests: a local Python kernel, with an
// interpreter that user nobody can reach when the tests run as root (a
// local kernel then runs as nobody).
func askLocal(t *testing.T) sandbox.OpenOptions {
	t.Helper()
	python := kerneltest.FindPython(t)
	if os.Geteuid() == 0 {
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			python = "/usr/bin/python3"
		}
	}
	return sandbox.OpenOptions{Kind: sandbox.KindLocal, Python: python}
}

func rung(t *testing.T, name string) agent.Rung {
	t.Helper()
	r, ok := agent.BuiltinRung(name)
	require.True(t, ok, name)
	return r
}

// TestAskReferenceGradesABuiltinTask: prepared and asked without flags, the
// reference model answers a built-in task in condition D over pm, in a
// local kernel, and the answer is graded right; the built prefix is kept,
// so a second question, in the restarted kernel, starts from the cache.
func TestAskReferenceGradesABuiltinTask(t *testing.T) {
	dir, tasks := askData(t)
	task := tasks[0]
	var warn strings.Builder
	s, err := PrepareAsk(context.Background(), AskConfig{
		DataDir: dir, Rung: rung(t, "D"), Task: task.ID, Reference: true,
		Agent: agent.DefaultConfig(), Sandbox: askLocal(t), CacheDir: t.TempDir(),
	}, &warn)
	require.NoError(t, err)
	t.Cleanup(s.Close)

	for i, cache := range []string{"miss", "hit"} {
		res, err := s.Ask(context.Background(), nil, nil)
		require.NoError(t, err, warn.String())
		require.Equal(t, agent.Answered, res.Run.Status, "question %d: %v\n%s", i, res.Run.Err, warn.String())
		require.NotNil(t, res.Run.Grade)
		assert.True(t, res.Run.Grade.Accurate(), "question %d: %s", i, res.Run.Grade.Reason)
		assert.Equal(t, cache, res.Cache, "question %d", i)

		rec := res.Record()
		assert.Equal(t, task.ID, rec["task"])
		assert.Equal(t, true, rec["correct"])
		assert.Equal(t, "D", rec["condition"])
		assert.Equal(t, task.Question, rec["question"])
		assert.Equal(t, cache, rec["prefix_cache"])
		assert.Regexp(t, `^\[\d+ turns?, \d+ context tokens, .*kernel and prefix`, res.CostLine())
	}
	assert.Equal(t, 1, strings.Count(warn.String(), "without isolation"), "one kernel, restarted for the second question:\n%s", warn.String())
}

// TestAskUnknownTask: a task id the data set does not have is bad input,
// found before any kernel starts, and the message names the ids there are.
func TestAskUnknownTask(t *testing.T) {
	dir, tasks := askData(t)
	_, err := PrepareAsk(context.Background(), AskConfig{
		DataDir: dir, Rung: rung(t, "D"), Task: "no-such-task", Reference: true,
		Agent: agent.DefaultConfig(), Sandbox: sandbox.OpenOptions{Kind: sandbox.KindLocal}, NoCache: true,
	}, &strings.Builder{})
	var ie *InputError
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Contains(t, ie.Msg, `--task "no-such-task": no such task in `+dir)
	assert.Contains(t, ie.Msg, tasks[0].ID)
	assert.Contains(t, ie.Msg, "ctxcode tasks --data "+dir)
}

// TestAskBadInput: what PrepareAsk refuses as the user's to fix.
func TestAskBadInput(t *testing.T) {
	dir, _ := askData(t)
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, []byte("x"), 0o644))
	plain := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(plain, "a.jsonl"), []byte(`{"n": 1}`+"\n"), 0o644))
	for name, tc := range map[string]struct {
		cfg  AskConfig
		want string
	}{
		"no folder":        {AskConfig{DataDir: filepath.Join(dir, "missing"), Question: "q"}, "no such folder"},
		"a file":           {AskConfig{DataDir: notDir, Question: "q"}, "not a folder but a file"},
		"both":             {AskConfig{DataDir: dir, Question: "q", Task: "t"}, "give a question or --task, not both"},
		"neither":          {AskConfig{DataDir: dir}, "give a question, or --task ID"},
		"unknown prefix":   {AskConfig{DataDir: dir, Question: "q", Prefix: "no-such-prefix"}, "no-such-prefix"},
		"task of a folder": {AskConfig{DataDir: plain, Task: "t", Prefix: "pm"}, "--task needs a data set made by `ctxcode data gen`"},
		"reference, own question": {AskConfig{DataDir: dir, Question: "how are you?", Reference: true},
			"the reference model plays only the built-in tasks"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Rung, cfg.NoCache = rung(t, "D"), true
			cfg.OpenModel = func() (llm.Model, error) { return llm.NewReference(nil, ""), nil }
			_, err := PrepareAsk(context.Background(), cfg, &strings.Builder{})
			var ie *InputError
			require.True(t, errors.As(err, &ie), "%v", err)
			assert.Contains(t, ie.Msg, tc.want)
		})
	}
}

// TestAskAnyFolderGetsAPrefixFromInit: a folder that is not a data set gets
// a prefix written by prefix init (and its control for B0), before any
// kernel starts; the question then runs over it.
func TestAskAnyFolderGetsAPrefixFromInit(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte("{\"n\": 1}\n{\"n\": 2}\n{\"n\": 4}\n"), 0o644))
	const question = "what is the sum of n?"
	model := func() (llm.Model, error) {
		code := "import json\nANSWER(sum(json.loads(l)['n'] for l in open('data/items.jsonl')))"
		return llm.NewReference(map[string]string{question: code}, ""), nil
	}

	t.Run("B0", func(t *testing.T) {
		s, err := PrepareAsk(context.Background(), AskConfig{DataDir: dir, Rung: rung(t, "B0"), Question: question, OpenModel: model, NoCache: true}, &strings.Builder{})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		got := s.Prefix()
		require.NotNil(t, got)
		assert.Equal(t, "init:"+dir+" (control)", got.Source)
		assert.True(t, got.BindsNothing(), "B0 starts from the control prefix init wrote: %s", got.Name)
	})

	var warn strings.Builder
	s, err := PrepareAsk(context.Background(), AskConfig{
		DataDir: dir, Rung: rung(t, "D"), Question: question, OpenModel: model,
		Agent: agent.DefaultConfig(), Sandbox: askLocal(t), NoCache: true,
	}, &warn)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	got := s.Prefix()
	require.NotNil(t, got)
	assert.Equal(t, "init:"+dir, got.Source)
	assert.False(t, got.BindsNothing(), got.Name)
	assert.NotEmpty(t, got.Cells)

	res, err := s.Ask(context.Background(), nil, nil)
	require.NoError(t, err, warn.String())
	require.Equal(t, agent.Answered, res.Run.Status, "%v\n%s", res.Run.Err, warn.String())
	assert.Equal(t, "7", res.Run.Answer)
	assert.Nil(t, res.Run.Grade, "a question of the user's is not graded")
	assert.Equal(t, "off", res.Cache)
	assert.Positive(t, res.InitTime)
	assert.Contains(t, res.CostLine(), "prefix init ")
	assert.Contains(t, res.Record(), "prefix_init_ms")
}
