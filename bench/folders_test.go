package bench_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/sandbox"
)

// ownDataTasks writes a task file whose tasks bring their own data: a CSV
// table (tables/a) and a JSON-lines table (tables/b), each task with a
// solution that reads its table itself (whatever the prefix binds), one
// gold computed by gold_code in a kernel over its folder, and one task
// without a solution. It returns the task file.
func ownDataTasks(t *testing.T, dir string) string {
	t.Helper()
	write := func(rel, text string) {
		path := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write("tables/a/sales.csv", "region,units\nnorth,3\nsouth,5\nnorth,4\n")
	write("tables/b/events.jsonl", `{"kind": "login", "ms": 12}`+"\n"+`{"kind": "click", "ms": 30}`+"\n"+`{"kind": "login", "ms": 18}`+"\n")
	csvRows := `import csv\nrows = list(csv.DictReader(open('data/sales.csv')))\n`
	jsonRows := `import json\nrows = [json.loads(l) for l in open('data/events.jsonl') if l.strip()]\n`
	lines := []string{
		`{"id": "units", "question": "How many units were sold in all?", "answer_type": "integer", "gold": 12, "data": "tables/a", "solution": "` + csvRows + `ANSWER(sum(int(r['units']) for r in rows))"}`,
		`{"id": "north", "question": "How many sales were in the north?", "answer_type": "integer", "gold": 2, "data": "tables/a/", "solution": "` + csvRows + `ANSWER(sum(r['region'] == 'north' for r in rows))"}`,
		`{"id": "logins", "question": "How many login events are there?", "answer_type": "integer", "gold_code": "` + jsonRows + `ANSWER(sum(r['kind'] == 'login' for r in rows))", "data": "tables/b", "solution": "` + jsonRows + `ANSWER(len([r for r in rows if r['kind'] == 'login']))"}`,
		`{"id": "slowest", "question": "Which kind of event took longest?", "answer_type": "string", "gold": "click", "data": "tables/b"}`,
	}
	write("tasks/tasks.jsonl", "")
	file := filepath.Join(dir, "tasks", "tasks.jsonl")
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], `"data": "tables/`, `"data": "../tables/`)
	}
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return file
}

// runOwnData prepares, opens and executes cfg, as ctxcode bench does.
func runOwnData(t *testing.T, cfg bench.Config, warn *strings.Builder) (*bench.Setup, *bench.Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	s, err := bench.Prepare(cfg, warn)
	if err != nil {
		return nil, nil, err
	}
	s.Run.Warn = warn
	log, cleanup, err := s.Open(ctx, warn)
	defer cleanup()
	if err != nil {
		return s, nil, err
	}
	defer log.Close()
	out, err := s.Run.Execute(ctx, log)
	return s, out, err
}

// TestRunOverTasksOwnData: a task file whose tasks bring their own data
// (a CSV and a JSON-lines table) runs without --data and --prefix: each
// folder gets the prefix and control prefix init writes (records on this
// host, which has no pandas; frames in the kernel image), kept in the run
// folder and pinned in run.json with the data's hash; every trial of the
// reference model is right, the task without a solution is skipped, a
// resume runs nothing again, and a resume after one folder's data changed
// is refused, naming that folder.
func TestRunOverTasksOwnData(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		kerneltest.FindPython(t)
		testOwnData(t, sandbox.OpenOptions{Kind: sandbox.KindLocal}, "records")
	})
	t.Run("docker", func(t *testing.T) {
		ctx := context.Background()
		cli, err := sandbox.Connect(ctx, sandbox.Host{})
		if err != nil {
			testenv.SkipOrFail(t, "docker: %v", err)
		}
		ok, err := sandbox.ImageExists(ctx, cli, sandbox.KernelImage())
		_ = cli.Close()
		require.NoError(t, err)
		if !ok {
			testenv.SkipOrFail(t, "kernel image %s is missing: run `make image`", sandbox.KernelImage())
		}
		testOwnData(t, sandbox.OpenOptions{Kind: sandbox.KindDocker}, "frames")
	})
}

func testOwnData(t *testing.T, sb sandbox.OpenOptions, style string) {
	dir := t.TempDir()
	file := ownDataTasks(t, dir)
	cfg := bench.Config{
		Out:          filepath.Join(dir, "run"),
		TaskFile:     file,
		Conditions:   "A,B,B0,C,D",
		Models:       []string{llm.ReferenceName},
		Reps:         1,
		Parallel:     2,
		OrderSeed:    5,
		OrderSeedSet: true,
		Agent:        agent.DefaultConfig(),
		Sandbox:      sb,
		Version:      "test",
	}
	// The frames prefix imports the kernel image's whole stack (statsmodels,
	// scikit-learn), which a loaded machine takes long over.
	cfg.Agent.CellTimeout = 5 * time.Minute
	var warn strings.Builder
	s, out, err := runOwnData(t, cfg, &warn)
	require.NoError(t, err, warn.String())
	assert.Contains(t, warn.String(), "ctxcode: reference: 1 of 4 tasks have no solution: skipped")
	assert.Equal(t, 15, out.Total, "3 tasks with a solution x 5 conditions")
	assert.Equal(t, 15, out.Ran)
	for _, tr := range out.Final {
		if !assert.True(t, tr.Correct, "%s: %s %s %s %s", tr.Key, tr.Status, tr.Verdict, tr.GradeReason, tr.Error) {
			traj, _ := os.ReadFile(filepath.Join(cfg.Out, tr.Trajectory))
			t.Logf("its trajectory:\n%s", traj)
		}
		assert.NotEqual(t, "slowest", tr.Task)
	}

	b, err := os.ReadFile(filepath.Join(cfg.Out, bench.SpecFile))
	require.NoError(t, err)
	var spec bench.Spec
	require.NoError(t, json.Unmarshal(b, &spec))
	assert.Empty(t, spec.Data.Dir, "no --data")
	require.Len(t, spec.Models, 1)
	assert.Equal(t, []string{"slowest"}, spec.Models[0].SkipTasks)
	require.Len(t, spec.DataFolders, 2)
	assert.Equal(t, "../tables/a", spec.DataFolders[0].Name)
	assert.Equal(t, []string{"units", "north"}, spec.DataFolders[0].Tasks, "tables/a/ is tables/a")
	assert.Equal(t, "../tables/b", spec.DataFolders[1].Name)
	assert.NotEqual(t, spec.DataFolders[0].SHA256, spec.DataFolders[1].SHA256)
	for _, task := range spec.TaskList {
		if task.ID == "logins" {
			assert.EqualValues(t, 2, task.Gold, "gold_code ran over its own folder")
		}
	}
	for _, c := range spec.Conditions {
		assert.Len(t, c.FirstRequest, 64, "condition %s", c.Name)
	}
	require.Len(t, s.Run.Folders, 2)
	b0 := -1
	for i, c := range s.Run.Conditions {
		if c.Name == "B0" {
			b0 = i
		}
	}
	for i, fi := range spec.DataFolders {
		src, err := os.ReadFile(filepath.Join(cfg.Out, fi.Prefix))
		require.NoError(t, err, "the prefix is kept in the run folder")
		assert.Equal(t, fi.PrefixSHA256, sha(src))
		control, err := os.ReadFile(filepath.Join(cfg.Out, fi.Control))
		require.NoError(t, err)
		assert.Equal(t, fi.ControlSHA256, sha(control))
		assert.True(t, strings.HasSuffix(fi.Control, "-nobind.py"), fi.Control)
		assert.Equal(t, style == "frames", strings.Contains(string(src), "import pandas"), "a %s prefix:\n%s", style, src)

		p := s.Run.Folders[i].Prefixes[b0]
		require.NotNil(t, p)
		assert.True(t, p.BindsNothing(), "B0 starts from the folder's control")
		assert.Equal(t, filepath.Join(cfg.Out, fi.Control), p.Source)
	}

	// A resume runs nothing again, with the prefixes the run kept.
	warn.Reset()
	_, out, err = runOwnData(t, cfg, &warn)
	require.NoError(t, err, warn.String())
	assert.Equal(t, 0, out.Ran)
	assert.Equal(t, 15, out.Skipped)

	// One folder's data changes: the resume is refused, naming it.
	events := filepath.Join(dir, "tables", "b", "events.jsonl")
	f, err := os.OpenFile(events, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"kind": "login", "ms": 9}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, _, err = runOwnData(t, cfg, &warn)
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), "data folder ../tables/b: sha256")
	assert.NotContains(t, ie.Error(), "data folder ../tables/a")
	if sb.Kind != sandbox.KindLocal {
		return // the rest is the run folder's, the same in Docker
	}

	// --force starts again: the changed folder's old prefixes are gone
	// with the old run, its new ones kept.
	old := spec.DataFolders[1]
	cfg.Mode = bench.Restart
	_, out, err = runOwnData(t, cfg, &warn)
	require.NoError(t, err, warn.String())
	assert.Equal(t, 15, out.Ran)
	b, err = os.ReadFile(filepath.Join(cfg.Out, bench.SpecFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &spec))
	require.Len(t, spec.DataFolders, 2)
	assert.NotEqual(t, old.SHA256, spec.DataFolders[1].SHA256)
	assert.NoFileExists(t, filepath.Join(cfg.Out, old.Prefix))
	assert.NoFileExists(t, filepath.Join(cfg.Out, old.Control))
	for _, fi := range spec.DataFolders {
		assert.FileExists(t, filepath.Join(cfg.Out, fi.Prefix))
		assert.FileExists(t, filepath.Join(cfg.Out, fi.Control))
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestPrepareTasksWithoutData: without --data, the tasks that bring no
// data of their own are refused, each with its line.
func TestPrepareTasksWithoutData(t *testing.T) {
	dir := t.TempDir()
	file := ownDataTasks(t, dir)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	extra := `{"id": "nowhere", "question": "How many?", "answer_type": "integer", "gold": 1, "solution": "ANSWER(1)"}` + "\n"
	require.NoError(t, os.WriteFile(file, append(b, extra...), 0o644))
	cfg := bench.Config{
		Out: filepath.Join(dir, "run"), TaskFile: file, Conditions: "B", Models: []string{llm.ReferenceName}, Reps: 1,
		Agent: agent.DefaultConfig(), Sandbox: sandbox.OpenOptions{Kind: sandbox.KindLocal}, Version: "test",
	}
	var warn strings.Builder
	_, _, err = runOwnData(t, cfg, &warn)
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), file+`:5: task nowhere has no "data", and there is no --data`)
	assert.NoFileExists(t, filepath.Join(cfg.Out, bench.SpecFile))

	cfg.Prefix = "pm"
	_, err = bench.Prepare(cfg, &warn)
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), "there is no --data")

	// --data that no task is over is refused, not ignored.
	require.NoError(t, os.WriteFile(file, b, 0o644))
	cfg.DataDir = filepath.Join(dir, "tables", "c")
	require.NoError(t, os.MkdirAll(cfg.DataDir, 0o755))
	_, err = bench.Prepare(cfg, &warn)
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), "so none is over --data: drop --data and --prefix")
}

// TestReferenceNeedsASolution: when no task has a solution, the reference
// model has nothing to play, and every task is a problem of the file, as
// before tasks could be skipped.
func TestReferenceNeedsASolution(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tasks.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(
		`{"id": "a", "question": "How many stations?", "answer_type": "integer", "gold": 6}`+"\n"+
			`{"id": "b", "question": "How many readings?", "answer_type": "integer", "gold": 36}`+"\n"), 0o644))
	cfg := bench.Config{
		Out: filepath.Join(dir, "run"), TaskFile: file, Conditions: "B", Models: []string{llm.ReferenceName}, Reps: 1,
		DataDir: filepath.Join("..", "testdata", "usertasks", "data"), Prefix: filepath.Join("..", "testdata", "usertasks", "prefix.py"),
		Agent: agent.DefaultConfig(), Sandbox: sandbox.OpenOptions{Kind: sandbox.KindLocal}, Version: "test",
	}
	var warn strings.Builder
	_, _, err := runOwnData(t, cfg, &warn)
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), file+":1: task a has no solution")
	assert.Contains(t, ie.Error(), file+":2: task b has no solution")
	assert.NotContains(t, warn.String(), "skipped")
}

// TestVariantPrefixWithOwnData: a variant that names its own prefix cannot
// start over the tasks' own folders, whose prefixes prefix init writes.
func TestVariantPrefixWithOwnData(t *testing.T) {
	dir := t.TempDir()
	file := ownDataTasks(t, dir)
	variants := filepath.Join(dir, "variants.jsonl")
	require.NoError(t, os.WriteFile(variants, []byte(`{"name": "B-pm", "base": "B", "prefix": "pm"}`+"\n"), 0o644))
	cfg := bench.Config{
		Out: filepath.Join(dir, "run"), TaskFile: file, Conditions: "B", ConditionsFile: variants, Models: []string{"m"}, Reps: 1,
		OpenModel: func(string) (llm.Model, error) { return nil, nil },
		Agent:     agent.DefaultConfig(), Sandbox: sandbox.OpenOptions{Kind: sandbox.KindDocker}, Version: "test",
	}
	_, err := bench.Prepare(cfg, &strings.Builder{})
	var ie *bench.InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Error(), variants+":1: variant B-pm names prefix pm, and tasks of "+file+" bring their own data")
}
