package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
