package bench_test

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
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
)

// configS is a run of the reference model over built-in tasks of tier s,
// in the cache folder of the test's own.
func configS(t testing.TB) bench.Config {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	return bench.Config{
		Out:          filepath.Join(t.TempDir(), "run"),
		Tier:         "s",
		Seed:         1,
		Conditions:   "A,B,B0,D,C",
		Models:       []string{llm.ReferenceName},
		Reps:         2,
		OrderSeed:    7,
		OrderSeedSet: true,
		Agent:        agent.DefaultConfig(),
		Sandbox:      sandbox.OpenOptions{Kind: sandbox.KindLocal},
		Version:      "test",
	}
}

// TestPrepareBuiltinTasks: a Config of built-in tasks becomes a run of
// every condition with the prefix its rung starts from, the tasks asked
// for, and a Spec that pins them before any kernel starts.
func TestPrepareBuiltinTasks(t *testing.T) {
	cfg := configS(t)
	cfg.TaskIDs = []string{"s-t3-2", "s-t1-1"}
	var warn strings.Builder
	s, err := bench.Prepare(cfg, &warn)
	require.NoError(t, err)
	assert.Contains(t, warn.String(), "generating the built-in data set (tier s, seed 1)")
	assert.Equal(t, bench.TaskSource{Kind: "builtin", Tier: "s", Seed: 1}, s.Source)
	assert.Equal(t, s.DataDir, s.Run.DataDir)
	var ids []string
	for _, task := range s.Tasks {
		ids = append(ids, task.ID)
	}
	assert.Equal(t, []string{"s-t1-1", "s-t3-2"}, ids, "the tasks asked for, in the data's order")
	assert.False(t, s.NeedsGolds())

	prefixOf := map[string]string{}
	for _, c := range s.Run.Conditions {
		prefixOf[c.Name] = ""
		if c.Prefix != nil {
			prefixOf[c.Name] = c.Prefix.Name
		}
	}
	assert.Equal(t, map[string]string{"A": "", "B": "pm", "B0": "pm-nobind", "D": "pm", "C": "pm"}, prefixOf)
	assert.Equal(t, bench.DefaultParallel(cfg.Models), s.Run.Parallel, "--parallel 0 is the default")
	assert.Equal(t, int64(7), s.OrderSeed)
	assert.False(t, s.OrderSeedDrawn)
	require.Len(t, s.Run.Models, 1)
	for _, c := range s.Run.Conditions {
		m, err := s.Run.Models[0].For(c)
		require.NoError(t, err, "the reference model plays %s", c.Name)
		assert.Equal(t, llm.ReferenceName, m.Name())
	}

	spec, err := s.Spec(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "test", spec.Version)
	assert.Equal(t, 2, spec.Reps)
	assert.Equal(t, int64(7), spec.OrderSeed)
	assert.Equal(t, s.Run.Parallel, spec.Parallel)
	assert.Equal(t, []bench.ModelInfo{{Name: llm.ReferenceName}}, spec.Models)
	assert.Equal(t, s.Tasks, spec.TaskList)
	assert.Equal(t, "local", spec.Sandbox.Kind)
	assert.Equal(t, bench.RuntimeInfo{}, spec.Runtime, "not known before the sandbox is open")
	assert.NotEmpty(t, spec.Data.SHA256)
	assert.NotNil(t, spec.Data.Manifest)
	require.Len(t, spec.Conditions, 5)
	for _, c := range spec.Conditions {
		assert.Len(t, c.FirstRequest, 64, "condition %s: its first request is pinned", c.Name)
	}
}

// TestPrepareDrawsTheOrder: without a seed given, a new run draws one.
func TestPrepareDrawsTheOrder(t *testing.T) {
	cfg := configS(t)
	cfg.OrderSeedSet, cfg.OrderSeed = false, 0
	s, err := bench.Prepare(cfg, &strings.Builder{})
	require.NoError(t, err)
	assert.True(t, s.OrderSeedDrawn)
}

// TestPrepareTaskFile: a task file over the example's data, with a bad
// line and a task whose data folder is not there, is refused with both problems, in
// the file's order, before any kernel starts; a setup error after them
// comes with them.
func TestPrepareTaskFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tasks.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join([]string{
		`{"id": "rainy", "question": "How many readings recorded more than 5 mm of rain?", "answer_type": "integer", "gold": 11, "solution": "ANSWER(11)"}`,
		`{"id": "broken", "question": `,
		`{"id": "elsewhere", "question": "What is the name of the station at the highest elevation?", "answer_type": "string", "gold": "Finse", "solution": "ANSWER('Finse')", "data": "missing"}`,
	}, "\n")+"\n"), 0o644))
	cfg := bench.Config{
		Out:        filepath.Join(dir, "run"),
		DataDir:    filepath.Join("..", "testdata", "usertasks", "data"),
		TaskFile:   file,
		Prefix:     filepath.Join("..", "testdata", "usertasks", "prefix.py"),
		Conditions: "B,D",
		Models:     []string{llm.ReferenceName},
		Reps:       1,
		Agent:      agent.DefaultConfig(),
		Sandbox:    sandbox.OpenOptions{Kind: sandbox.KindLocal},
	}
	s, err := bench.Prepare(cfg, &strings.Builder{})
	require.NoError(t, err, "the task file's problems are reported with gold_code's, at Open")
	assert.Equal(t, "file", s.Source.Kind)
	assert.Len(t, s.Source.SHA256, 64)
	require.Len(t, s.UserTasks, 1, "the good lines")
	assert.False(t, s.NeedsGolds())

	_, cleanup, err := s.Open(context.Background(), &strings.Builder{})
	cleanup()
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie)
	msg := ie.Error()
	assert.Contains(t, msg, file)
	bad, missing := strings.Index(msg, file+":2: not JSON"), strings.Index(msg, file+`:3: data "missing": `)
	assert.True(t, bad >= 0 && missing > bad, "both problems, in the file's order:\n%s", msg)
	assert.NoDirExists(t, cfg.Out, "no run folder is made")

	cfg.Conditions = "B,Z"
	_, err = bench.Prepare(cfg, &strings.Builder{})
	require.ErrorAs(t, err, &ie)
	assert.True(t, strings.HasPrefix(ie.Error(), file+":2: not JSON"), ie.Error())
	assert.True(t, strings.HasSuffix(ie.Error(), "\n"+`--conditions "Z": expected one of A, B, B0, D, C (a variant of one comes from --conditions-file)`),
		"what stopped the setup follows the file's problems:\n%s", ie.Error())
}

// TestPrepareRefuses: bad input is an *InputError that says what was wrong
// (the message ctxcode bench prints).
func TestPrepareRefuses(t *testing.T) {
	notData := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notData, "x.csv"), []byte("a\n1\n"), 0o644))
	for _, tc := range []struct {
		name   string
		change func(*bench.Config)
		want   string
	}{
		{"no condition", func(c *bench.Config) { c.Conditions = " " }, "--conditions: name at least one of A, B, B0, D, C"},
		{"unknown condition", func(c *bench.Config) { c.Conditions = "B,X" }, `--conditions "X": expected one of`},
		{"condition twice", func(c *bench.Config) { c.Conditions = "B, B" }, "--conditions: B is named twice"},
		{"unknown task", func(c *bench.Config) { c.TaskIDs = []string{"s-t1-1", "nope"} }, "--task: no task nope (the tasks are s-t1-1 … "},
		{"unknown tier", func(c *bench.Config) { c.Tier = "q" }, `--tier: unknown tier "q"`},
		{"not a data set", func(c *bench.Config) { c.DataDir = notData }, "is not a ctxcode data set, so it has no built-in tasks"},
		{"unknown prefix", func(c *bench.Config) { c.Prefix = "no-such-prefix" }, "no-such-prefix"},
		{"control that binds", func(c *bench.Config) { c.Control = "pm" }, "--control pm: its name does not end in -nobind"},
		{"unknown control", func(c *bench.Config) { c.Control = "no-such-control" }, "--control: "},
		{"prefix that binds nothing", func(c *bench.Config) { c.Prefix, c.Conditions = "pm-nobind", "D" }, "--conditions D needs a prefix that binds its variables, and --prefix pm-nobind binds nothing"},
		{"too many trials", func(c *bench.Config) { c.Reps = 1000; c.Models = []string{llm.ReferenceName} }, "over the 100000 one run may have"},
		{"no reps", func(c *bench.Config) { c.Reps = 0 }, "--reps 0: give 1 or more"},
		{"too many at once", func(c *bench.Config) { c.Parallel = bench.MaxParallel + 1 }, "--parallel 257: at most 256"},
		{"model twice", func(c *bench.Config) { c.Models = []string{llm.ReferenceName, llm.ReferenceName} }, "--model: reference is named twice"},
		{"tier with data", func(c *bench.Config) { c.DataDir, c.PicksData = notData, true }, "--data names the data: drop --tier and --seed"},
		{"run inside the data", func(c *bench.Config) { c.DataDir, c.Out = notData, filepath.Join(notData, "run") }, "which every kernel can read: put the run outside the data folder"},
		{"run is a file", func(c *bench.Config) { c.Out = filepath.Join(notData, "x.csv") }, "a file, not a folder"},
		{"no conditions file", func(c *bench.Config) { c.ConditionsFile = filepath.Join(notData, "none.jsonl") }, "--conditions-file " + filepath.Join(notData, "none.jsonl") + ": no such file"},
		{"tasks without prefix", func(c *bench.Config) { c.TaskFile, c.DataDir = filepath.Join(notData, "x.csv"), notData }, "--tasks needs --data DIR"},
		{"golds inside the data", func(c *bench.Config) {
			c.TaskFile, c.DataDir, c.Prefix = filepath.Join(notData, "x.csv"), notData, "pm"
		}, "(as data/x.csv), which every kernel can read: the golds would be in reach of the model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configS(t)
			tc.change(&cfg)
			_, err := bench.Prepare(cfg, &strings.Builder{})
			var ie *bench.InputError
			require.True(t, errors.As(err, &ie), "an *InputError, got %v", err)
			assert.Contains(t, ie.Msg, tc.want)
		})
	}
}

// TestPrepareOpensEveryAPIModel: a model behind an API is made once, in
// Prepare, and its error comes back as it is (before any run folder).
func TestPrepareOpensEveryAPIModel(t *testing.T) {
	cfg := configS(t)
	cfg.Models = []string{"m1", "m2"}
	cfg.Sandbox.Kind = sandbox.KindDocker
	refused := errors.New("no key")
	var asked []string
	cfg.OpenModel = func(name string) (llm.Model, error) {
		asked = append(asked, name)
		return nil, refused
	}
	_, err := bench.Prepare(cfg, &strings.Builder{})
	assert.ErrorIs(t, err, refused)
	assert.Equal(t, []string{"m1"}, asked)
}

// TestLadderPrefixes: each rung's prefix, as ask and bench take it: none
// for A, the default for B, D and C, its control for B0; a missing control
// is an *InputError with the caller's hint.
func TestLadderPrefixes(t *testing.T) {
	pm, err := prefixes.Load("pm")
	require.NoError(t, err)
	control, err := bench.ControlOf(pm, nil)
	require.NoError(t, err)
	assert.Equal(t, "pm-nobind", control.Name)
	_, err = bench.ControlOf(pm, pm)
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie, "a --control that binds")

	lp := bench.LadderPrefixes{Default: pm, Control: control}
	rungs, err := bench.ParseConditions("A,B,B0,D,C")
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range rungs {
		p, err := lp.PrefixFor(r, "--conditions", "the hint")
		require.NoError(t, err)
		assert.Equal(t, r.Name != "A", bench.NeedsPrefix(r))
		got[r.Name] = ""
		if p != nil {
			got[r.Name] = p.Name
		}
	}
	assert.Equal(t, map[string]string{"A": "", "B": "pm", "B0": "pm-nobind", "D": "pm", "C": "pm"}, got)

	lp = bench.LadderPrefixes{Default: pm, ControlErr: errors.New("no control here")}
	b0, _ := agent.BuiltinRung("B0")
	_, err = lp.PrefixFor(b0, "--condition", "the hint")
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "--condition B0 needs the control of prefix pm, the same demonstration with nothing bound: no control here; the hint", ie.Msg)
}
