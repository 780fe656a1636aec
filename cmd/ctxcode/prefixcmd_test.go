package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrefixShowAndVerify(t *testing.T) {
	requirePython(t)
	dir := filepath.Join(t.TempDir(), "pm")
	got := runCLI(t, "", "data", "gen", "--tier", "s", "--seed", "1", "--out", dir)
	require.Equal(t, 0, got.code, got.stderr)

	got = runCLI(t, "", "prefix", "show", "pm", "--sandbox", "local", "--data", dir)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "Out[2]: (3, 30, 8, 500, 2000)")
	assert.Regexp(t, regexp.MustCompile(`\[prefix pm: 6 cells, \d+ tokens \(o200k_base\) as In/Out text\]\n$`), got.stdout)

	// Each protocol as the model sees it, with the request's token count.
	got = runCLI(t, "", "prefix", "show", "pm", "--sandbox", "local", "--data", dir, "--protocol", "bare", "--question", "How many teams?")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "--- assistant ---\ntasks[-1]\n--- user ---\nOut[5]: \n{'id': 'K00500',")
	assert.Contains(t, got.stdout, "--- user ---\nHow many teams?\n")
	assert.Regexp(t, regexp.MustCompile(`\[prefix pm, protocol bare: 14 messages, 0 tools, \d+ tokens \(o200k_base\) with this question`), got.stdout)

	got = runCLI(t, "", "prefix", "show", "pm", "--sandbox", "local", "--data", dir, "--protocol", "eval", "--json", "--encoding", "cl100k_base")
	require.Equal(t, 0, got.code, got.stderr)
	var req struct {
		Protocol string
		Tools    []struct{ Name string }
		Messages []struct{ Role, Content string }
	}
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &req), got.stdout)
	assert.Equal(t, "eval", req.Protocol)
	require.Len(t, req.Tools, 1)
	assert.Equal(t, "<the question goes here>", req.Messages[len(req.Messages)-1].Content)

	got = runCLI(t, "", "prefix", "show", "pm", "--sandbox", "local", "--data", dir, "--protocol", "all")
	require.Equal(t, 0, got.code, got.stderr)
	for _, row := range []string{`cli\s+A\s+2\s+2\s+\d+`, `eval\s+B, B0\s+14\s+1\s+\d+`, `bare\s+D\s+14\s+0\s+\d+`, `transcript\s+C\s+1\s+0\s+\d+`} {
		assert.Regexp(t, regexp.MustCompile(row), got.stdout)
	}

	got = runCLI(t, "", "prefix", "verify", "pm", "--sandbox", "local", "--data", dir)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "prefix pm: ok: 6 cells, built twice with identical output")

	got = runCLI(t, "", "prefix", "verify", "pm", "--sandbox", "local", "--data", dir, "--max-tokens", "50")
	assert.Equal(t, exitUsage, got.code, "a prefix over budget is not a good prefix")
	assert.Contains(t, got.stderr, "over --max-tokens 50")

	// A prefix whose output changes between builds.
	flaky := filepath.Join(t.TempDir(), "flaky.py")
	require.NoError(t, os.WriteFile(flaky, []byte("# %%\nobject()\n"), 0o644))
	got = runCLI(t, "", "prefix", "verify", flaky, "--sandbox", "local")
	assert.Equal(t, exitUsage, got.code, "a prefix that is not deterministic is not a good prefix")
	assert.Contains(t, got.stderr, "not deterministic")
	assert.Contains(t, got.stderr, "line 2:")
}

func TestPrefixUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"prefix"}, "missing subcommand"},
		{"unknown subcommand", []string{"prefix", "frob"}, `unknown subcommand "frob"`},
		{"no prefix", []string{"prefix", "show"}, "name a prefix (pm"},
		{"unknown prefix", []string{"prefix", "show", "nope"}, "no such built-in prefix"},
		{"bad encoding", []string{"prefix", "show", "pm", "--encoding", "p50k"}, `unknown token encoding "p50k"`},
		{"bad protocol", []string{"prefix", "show", "pm", "--protocol", "tools"}, `unknown protocol "tools": expected bare, eval, transcript or cli`},
		{"json without protocol", []string{"prefix", "show", "pm", "--json"}, "--json prints one request"},
		{"zero budget", []string{"prefix", "show", "pm", "--output-budget", "0"}, "--output-budget 0 would show the model nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, got.code)
			assert.Contains(t, got.stderr, tc.want)
		})
	}
}

func TestPrefixInit(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(`{"a": 1}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "readme.md"), []byte("x"), 0o644))
	out := filepath.Join(t.TempDir(), "mine.py")

	got := runCLI(t, "", "prefix", "init", "--data", dir, "--out", out)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stderr, "skipped readme.md: not .jsonl, .json, .csv or .tsv")
	assert.Contains(t, got.stdout, "ctxcode prefix verify "+out)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(b), `rows = pd.DataFrame(`, "frames by default")

	records := filepath.Join(t.TempDir(), "records.py")
	got = runCLI(t, "", "prefix", "init", "--data", dir, "--out", records, "--style", "records")
	require.Equal(t, 0, got.code, got.stderr)
	b, err = os.ReadFile(records)
	require.NoError(t, err)
	assert.Contains(t, string(b), `rows = load_jsonl("rows.jsonl")`)

	for _, bad := range [][]string{{"--style", "tables"}, {"--lang", "go", "--style", "records"}} {
		got = runCLI(t, "", append([]string{"prefix", "init", "--data", dir}, bad...)...)
		assert.Equal(t, exitUsage, got.code, "%v", bad)
		assert.Contains(t, got.stderr, "--style", "%v", bad)
	}

	require.NoError(t, os.WriteFile(out, []byte("mine"), 0o644))
	got = runCLI(t, "", "prefix", "init", "--data", dir, "--out", out)
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "pass --force")
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "nothing is overwritten without --force")

	got = runCLI(t, "", "prefix", "init", "--data", t.TempDir())
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "no loadable file")
}

// TestPrefixInitRealWorldVerifies: the prefix init writes for the folder of
// odd real-world files (BOM, Latin-1, ragged and ;-separated CSV, .tsv, a
// JSON envelope) passes prefix verify, and init says what it read as
// Latin-1.
func TestPrefixInitRealWorldVerifies(t *testing.T) {
	data := "../../testdata/init-realworld"
	for _, tc := range []struct {
		name, lang, style, sandbox string
	}{
		{"python records", "python", "records", "local"},
		{"go", "go", "", "local"},
		{"python frames", "python", "frames", "docker"}, // the kernel image has pandas
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sandbox == "docker" {
				requireDocker(t)
			} else {
				requirePython(t)
			}
			out := filepath.Join(t.TempDir(), "p."+tc.lang)
			args := []string{"prefix", "init", "--data", data, "--lang", tc.lang, "--out", out}
			if tc.style != "" {
				args = append(args, "--style", tc.style)
			}
			got := runCLI(t, "", args...)
			require.Equal(t, exitOK, got.code, got.stderr)
			if tc.lang == "python" {
				assert.Regexp(t, `ctxcode: prefix init: warning: \S+ is not UTF-8: read as Latin-1`, got.stderr)
			}
			got = runCLI(t, "", "prefix", "verify", out, "--sandbox", tc.sandbox, "--data", data)
			require.Equal(t, exitOK, got.code, got.stderr)
			assert.Contains(t, got.stdout, "built twice with identical output")
		})
	}
}
