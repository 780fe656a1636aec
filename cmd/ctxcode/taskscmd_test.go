package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
)

func TestTasksCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pm")
	got := runCLI(t, "", "data", "gen", "--tier", "s", "--seed", "3", "--out", dir)
	require.Equal(t, 0, got.code, got.stderr)

	got = runCLI(t, "", "tasks", "--data", dir, "--json")
	require.Equal(t, 0, got.code, got.stderr)
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 24)
	templates := map[string]int{}
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		templates[m["template"].(string)]++
		assert.Contains(t, m, "gold")
		assert.Contains(t, m, "params")
	}
	assert.Len(t, templates, 8)

	got = runCLI(t, "", "tasks", "--data", dir, "--reference", "python-pm")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "s-t8-3")
	assert.Contains(t, got.stdout, "ANSWER(")

	// A changed file is caught by the manifest.
	f := filepath.Join(dir, "tasks.jsonl")
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f, append(b, '\n'), 0o644))
	got = runCLI(t, "", "tasks", "--data", dir)
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "tasks.jsonl")
}

func TestTasksUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no data", []string{"tasks"}, "--data is required"},
		{"not a dataset", []string{"tasks", "--data", t.TempDir()}, "is not a ctxcode dataset (no manifest.json); make one with `ctxcode data gen`"},
		{"bad reference", []string{"tasks", "--data", "../../testdata/demo", "--reference", "cobol"}, `unknown solution kind "cobol"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, "", tt.args...)
			assert.Equal(t, exitUsage, got.code)
			assert.Contains(t, got.stderr, tt.want)
		})
	}
}

func TestExecWithPrefix(t *testing.T) {
	requirePython(t)
	dir := filepath.Join(t.TempDir(), "pm")
	got := runCLI(t, "", "data", "gen", "--tier", "s", "--seed", "1", "--out", dir)
	require.Equal(t, 0, got.code, got.stderr)

	got = runCLI(t, "", "exec", "--sandbox", "local", "--prefix", "pm", "--data", dir, "--", "len(tasks)")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "Out[2]: (3, 30, 8, 500, 2000)")
	assert.True(t, strings.HasSuffix(got.stdout, "In [7]: len(tasks)\nOut[7]: 500\n"), got.stdout)

	got = runCLI(t, "", "exec", "--sandbox", "local", "--prefix", "pm", "--data", dir, "--json", "--", "len(users)")
	require.Equal(t, 0, got.code, got.stderr)
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 7)
	assert.Contains(t, lines[0], `"prefix":true`)
	assert.NotContains(t, lines[6], `"prefix"`)

	broken := filepath.Join(t.TempDir(), "broken.py")
	require.NoError(t, os.WriteFile(broken, []byte("# %%\nx = 1\n# %%\nundefined_name\n"), 0o644))
	got = runCLI(t, "", "exec", "--sandbox", "local", "--prefix", broken, "--", "1")
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "cell 2 (line 4) failed")
	assert.Contains(t, got.stderr, "NameError")
}

func TestTasksImportDABench(t *testing.T) {
	fixture := filepath.Join("..", "..", "testdata", "dabench")
	golden := filepath.Join("..", "..", "testdata", "golden", "dabench", "tasks.jsonl")
	dir := t.TempDir()
	out := filepath.Join(dir, "tasks.jsonl")
	tables := filepath.Join(dir, "tasks-tables")
	args := []string{"tasks", "import", "--format", "dabench", fixture, "--out", out, "--solutions", filepath.Join(fixture, "solutions.jsonl")}

	got := runCLI(t, "", args...)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, "wrote 4 tasks on 2 tables to "+out+" (tables in "+tables+")\n", got.stdout)
	assert.Equal(t, filepath.Join(fixture, "fix-questions.jsonl")+":5: question 4 has no labels in fix-labels.jsonl: it is left out (its answers are needed to grade it)\n"+
		"ctxcode: tasks import: 1 problem; those lines are left out\n", got.stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(b), "the same file as bench's TestImportDABenchFixture")
	assert.FileExists(t, filepath.Join(tables, "stations", "stations.csv"))

	// Nothing is overwritten without --force: the task file, then the
	// tables folder alone.
	got = runCLI(t, "", args...)
	assert.Equal(t, exitUsage, got.code)
	assert.Equal(t, "ctxcode: tasks import: "+out+" exists; pass --force to overwrite it\n", got.stderr)
	require.NoError(t, os.Remove(out))
	got = runCLI(t, "", args...)
	assert.Equal(t, exitUsage, got.code)
	assert.Equal(t, "ctxcode: "+tables+" exists; pass --force to write the tables into it (its other files are left alone)\n", got.stderr)
	assert.NoFileExists(t, out)

	require.NoError(t, os.WriteFile(out, []byte("old"), 0o644))
	got = runCLI(t, "", append(args, "--force")...)
	require.Equal(t, 0, got.code, got.stderr)
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(b))
}

func TestTasksImportNothing(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "x-questions.jsonl")
	require.NoError(t, os.WriteFile(q, []byte(`{"id": 0, "question": "q?", "file_name": "t.csv"}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x-labels.jsonl"), []byte(`{"id": 1, "common_answers": [["a", "1"]]}`+"\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "x-tables"), 0o755))
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	got := runCLI(t, "", "tasks", "import", "--format", "dabench", dir, "--out", out)
	assert.Equal(t, exitUsage, got.code)
	assert.Equal(t, q+":1: question 0 has no labels in x-labels.jsonl: it is left out (its answers are needed to grade it)\n"+
		filepath.Join(dir, "x-labels.jsonl")+":1: labels of question 1, which x-questions.jsonl does not have: they are left out\n"+
		"ctxcode: tasks import: nothing to import from "+dir+": no question has labels and a table (2 problems above)\n", got.stderr)
	assert.Empty(t, got.stdout)
	assert.NoFileExists(t, out)
	assert.NoDirExists(t, bench.TablesDirFor(out))
}

func TestTasksImportUsageErrors(t *testing.T) {
	fixture := filepath.Join("..", "..", "testdata", "dabench")
	out := filepath.Join(t.TempDir(), "t.jsonl")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no format", []string{fixture, "--out", out}, "--format is required: dabench"},
		{"bad format", []string{"--format", "kaggle", fixture, "--out", out}, `unknown --format "kaggle": expected dabench`},
		{"no folder", []string{"--format", "dabench", "--out", out}, "name the folder to import"},
		{"two folders", []string{"--format", "dabench", fixture, fixture, "--out", out}, "unexpected argument"},
		{"no out", []string{"--format", "dabench", fixture}, "--out is required"},
		{"out's folder missing", []string{"--format", "dabench", fixture, "--out", filepath.Join(out, "x", "t.jsonl")}, "does not exist; make it first"},
		{"not dabench", []string{"--format", "dabench", t.TempDir(), "--out", out}, "holds no *-questions.jsonl"},
		{"no solutions file", []string{"--format", "dabench", fixture, "--out", out, "--solutions", out}, "--solutions " + out + ": no such file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, "", append([]string{"tasks", "import"}, tt.args...)...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tt.want)
			assert.NoFileExists(t, out)
		})
	}
}
