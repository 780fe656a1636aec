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

// TestFlagsAfterPositionals puts every flag of each command after its
// positional arguments and checks that each took effect: the flags are not
// dropped, as they were when parsing stopped at the first argument.
func TestFlagsAfterPositionals(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	out := t.TempDir()
	nb := filepath.Join(out, "made-first.ipynb")
	got := runCLI(t, "", "prefix", "export", "--sandbox", "local", "--data", data, "--out", nb, "pm")
	require.Equal(t, exitOK, got.code, got.stderr)
	got = runCLI(t, "", "tasks", "--data", data, "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	var task struct{ Question string }
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(got.stdout, "\n", 2)[0]), &task))

	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, got outcome)
	}{
		{"prefix verify: --max-tokens after the name", []string{"prefix", "verify", "pm", "--sandbox", "local", "--data", data, "--max-tokens", "10"}, exitUsage,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stderr, "over --max-tokens 10") }},
		{"prefix show: --sandbox and --protocol after the name", []string{"prefix", "show", "pm", "--sandbox", "local", "--data", data, "--protocol", "all", "--question", "How many teams?"}, exitOK,
			func(t *testing.T, got outcome) {
				assert.Equal(t, localWarning, got.stderr, "--sandbox local took effect: no container")
				assert.Contains(t, got.stdout, `with the question "How many teams?"`)
				assert.Regexp(t, `transcript\s+C\s+1\s+0\s+\d+`, got.stdout)
			}},
		{"prefix export: --out and --force after the name", []string{"prefix", "export", "pm", "--sandbox", "local", "--data", data, "--out", nb, "--force"}, exitOK,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stdout, "wrote "+nb) }},
		{"prefix import: --out after the notebook", []string{"prefix", "import", nb, "--out", filepath.Join(out, "pm.py")}, exitOK,
			func(t *testing.T, got outcome) { assert.FileExists(t, filepath.Join(out, "pm.py")) }},
		{"prefix init: flags only, in any order", []string{"prefix", "init", "--out", filepath.Join(out, "init.py"), "--data", "../../testdata/demo"}, exitOK,
			func(t *testing.T, got outcome) { assert.FileExists(t, filepath.Join(out, "init.py")) }},
		{"exec: --json and --sandbox after the cells", []string{"exec", "x = 41", "x + 1", "--sandbox", "local", "--json"}, exitOK,
			func(t *testing.T, got outcome) {
				lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
				require.Len(t, lines, 2, got.stdout)
				var rec execRecord
				require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
				assert.Equal(t, "42", rec.Value)
			}},
		{"exec: --prefix and --data after a cell", []string{"exec", "len(teams)", "--prefix", "pm", "--data", data, "--sandbox", "local", "--json"}, exitOK,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stdout, `"value":"3"`) }},
		{"ask: every flag after the question", append([]string{"ask"}, append(strings.Fields(task.Question), "--model", "reference", "--data", data, "--sandbox", "local", "--json")...), exitOK,
			func(t *testing.T, got outcome) {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(got.stdout), &rec), got.stdout)
				assert.Equal(t, "executed", rec["answer_source"])
			}},
		{"ask: --mode, --trajectory and --max-restarts after the question",
			append([]string{"ask"}, append(strings.Fields(task.Question), "--mode", "oneshot", "--trajectory", filepath.Join(out, "t.jsonl"), "--max-restarts", "0",
				"--model", "reference", "--data", data, "--sandbox", "local", "--json")...), exitOK,
			func(t *testing.T, got outcome) {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(got.stdout), &rec), got.stdout)
				assert.Equal(t, "oneshot", rec["mode"])
				assert.FileExists(t, filepath.Join(out, "t.jsonl"))
			}},
		{"exec: --lang and --timeout after the cells", []string{"exec", "x := 41", "x + 1", "--lang", "go", "--timeout", "5s", "--sandbox", "local", "--json"}, exitOK,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stdout, `"value":"42"`) }},
		{"exec: --timeout after the cell takes effect", []string{"exec", "import time; time.sleep(5)", "--timeout", "200ms", "--sandbox", "local", "--json"}, exitOK,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stdout, `"status":"timeout"`) }},
		{"prefix show: --json and --protocol after the name", []string{"prefix", "show", "pm", "--data", data, "--sandbox", "local", "--protocol", "eval", "--json"}, exitOK,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stdout, `"protocol": "eval"`) }},
		{"prefix verify: --timeout after the name takes effect", []string{"prefix", "verify", "pm", "--data", data, "--sandbox", "local", "--timeout", "1ms"}, exitUsage,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stderr, "failed with status timeout") }},
		{"tasks: a stray argument is an error", []string{"tasks", "extra", "--data", data}, exitUsage,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stderr, `unexpected argument "extra"`) }},
		{"data gen: a stray argument is an error", []string{"data", "gen", "more", "--out", filepath.Join(out, "d")}, exitUsage,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stderr, `unexpected argument "more"`) }},
		{"prefix show: a second prefix is an error", []string{"prefix", "show", "pm", "pm-nobind", "--data", data}, exitUsage,
			func(t *testing.T, got outcome) {
				assert.Contains(t, got.stderr, `unexpected argument "pm-nobind": it takes one prefix`)
			}},
		{"prefix import: a second notebook is an error", []string{"prefix", "import", nb, nb}, exitUsage,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stderr, "it takes one notebook") }},
		{"sandbox prune: a stray argument is an error", []string{"sandbox", "prune", "all"}, exitUsage,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stderr, `unexpected argument "all"`) }},
		{"kernel serve: a stray argument is an error", []string{"kernel", "serve", "now", "--lang", "go"}, exitUsage,
			func(t *testing.T, got outcome) { assert.Contains(t, got.stderr, `unexpected argument "now"`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			require.Equal(t, tc.code, got.code, "stdout:\n%s\nstderr:\n%s", got.stdout, got.stderr)
			tc.check(t, got)
		})
	}
	_, err := os.Stat(nb)
	require.NoError(t, err)
}
