package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// pmData writes the s tier, seed 1, into a temporary folder, and gives the
// test a cache folder of its own (privateCache).
func pmData(t *testing.T) string {
	t.Helper()
	privateCache(t)
	dir := filepath.Join(t.TempDir(), "pm")
	got := runCLI(t, "", "data", "gen", "--tier", "s", "--seed", "1", "--out", dir)
	require.Equal(t, 0, got.code, got.stderr)
	return dir
}

// privateCache points the user's cache folder (the built prefixes of ask,
// the built-in data) at a temporary folder for the rest of the test, so
// that no test reads what another kept.
func privateCache(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	return dir
}

func TestAskReference(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	traj := filepath.Join(t.TempDir(), "run.jsonl")

	got := runCLI(t, "", "ask", "--task", "s-t5-1", "--model", "reference", "--data", dir, "--sandbox", "local", "--trajectory", traj)
	require.Equal(t, exitOK, got.code, got.stderr)
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 3, got.stdout)
	assert.Equal(t, "correct (task s-t5-1)", lines[1])
	assert.Regexp(t, regexp.MustCompile(`^\[1 turn, \d+ context tokens, \d+ output tokens, 0 cached, [\d.]+s \(model [\d.]+s, kernel and prefix [\d.]+s\) \(estimated by the tokenizer\)\]$`), lines[2])

	// The trajectory has every event, and is never overwritten without --force.
	assert.Equal(t, []string{"run", "prefix", "call", "cell", "answer", "end", "grade"}, trajectoryEvents(t, traj))
	got = runCLI(t, "", "ask", "--task", "s-t5-1", "--model", "reference", "--data", dir, "--sandbox", "local", "--trajectory", traj)
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "exists; pass --force to overwrite it")

	// One shot, as JSON.
	got = runCLI(t, "", "ask", "--task", "s-t3-2", "--mode", "oneshot", "--model", "reference", "--data", dir, "--sandbox", "local", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &rec), got.stdout)
	for _, k := range []string{"answer", "answer_source", "status", "correct", "turns", "context_tokens", "output_tokens", "cached_tokens", "wall_ms", "estimated"} {
		assert.Contains(t, rec, k)
	}
	assert.Equal(t, "executed", rec["answer_source"])
	assert.Equal(t, true, rec["correct"])
	assert.NotContains(t, got.stdout, `"answer":"\"`, "an executed answer is a JSON value, not JSON in a string")
	assert.Equal(t, "oneshot", rec["mode"])
}

func TestAskReferenceInDocker(t *testing.T) {
	requireDocker(t)
	dir := pmData(t)
	got := runCLI(t, "", "ask", "--task", "s-t6-1", "--model", "reference", "--data", dir)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, "correct (task s-t6-1)")
	assert.Empty(t, got.stderr, "no warning: the cells ran in a container")
}

func TestAskOpenAICompatible(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t,
		llmtest.Reply{Content: "```python\nblocked = [t for t in tasks if t['status'] == 'blocked']\nlen(blocked)\n```",
			Usage: &llmtest.Usage{Prompt: 700, Completion: 30, Cached: 600}},
		llmtest.Reply{Content: "ANSWER(len(blocked))", Usage: &llmtest.Usage{Prompt: 790, Completion: 9, Cached: 700}},
	)
	t.Setenv("OPENAI_API_KEY", "sk-never-shown")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	traj := filepath.Join(t.TempDir(), "run.jsonl")
	got := runCLI(t, "", "ask", "How many tasks are blocked?", "--model", "test-model", "--data", dir, "--sandbox", "local", "--json", "--trajectory", traj)
	require.Equal(t, exitOK, got.code, got.stderr)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &rec), got.stdout)
	assert.Equal(t, "answered", rec["status"])
	assert.EqualValues(t, 2, rec["turns"])
	assert.EqualValues(t, 1490, rec["context_tokens"], "the sums the server reported")
	assert.EqualValues(t, 39, rec["output_tokens"])
	assert.EqualValues(t, 1300, rec["cached_tokens"])
	assert.Equal(t, false, rec["estimated"])
	assert.NotContains(t, rec, "correct", "not a built-in task")
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "test-model", reqs[0].Body.Model)
	b, err := os.ReadFile(traj)
	require.NoError(t, err)
	for _, s := range []string{got.stdout, got.stderr, string(b)} {
		assert.NotContains(t, s, "sk-never-shown")
	}
}

func TestAskNoAnswerExitsThree(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t, llmtest.Text("len(tasks)", 700, 3))
	t.Setenv("OPENAI_API_KEY", "sk-x")
	got := runCLI(t, "", "ask", "How many tasks?", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local", "--max-turns", "1")
	assert.Equal(t, exitNoAnswer, got.code, got.stderr)
	assert.Contains(t, got.stdout, "no answer (max_turns)")
	assert.Contains(t, got.stdout, "[1 turn, 700 context tokens, 3 output tokens, 0 cached")
}

func TestAskModelFailureExitsOne(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t, llmtest.Error(401, "invalid_api_key", "Incorrect API key provided"))
	t.Setenv("OPENAI_API_KEY", "sk-wrong")
	got := runCLI(t, "", "ask", "How many tasks?", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local")
	assert.Equal(t, exitInfra, got.code)
	assert.Contains(t, got.stderr, "OPENAI_API_KEY")
	assert.NotContains(t, got.stderr, "sk-wrong")
}

func TestAskUsageErrors(t *testing.T) {
	dir := pmData(t)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("CTXCODE_MODEL", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to ask", []string{"ask", "--model", "reference"}, "give a question, or --task ID"},
		{"question and task", []string{"ask", "q?", "--task", "s-t1-1", "--model", "reference"}, "not both"},
		{"bad mode", []string{"ask", "q?", "--mode", "twice", "--model", "reference"}, `unknown mode "twice"`},
		{"several modes for one question", []string{"ask", "q?", "--mode", "loop,oneshot", "--model", "reference"}, "ctxcode bench --conditions D,C"},
		{"several conditions for one question", []string{"ask", "q?", "--condition", "B,D", "--model", "reference"}, "use ctxcode bench --conditions B,D"},
		{"every task is bench's", []string{"ask", "--task", "all", "--model", "reference", "--data", dir}, "to run every task, in one condition or several, use ctxcode bench"},
		{"no model", []string{"ask", "q?"}, "no model is configured"},
		{"unknown task", []string{"ask", "--task", "s-t9-9", "--model", "reference", "--data", dir, "--sandbox", "local"}, `--task "s-t9-9": no such task`},
		{"reference off script", []string{"ask", "What is the meaning of life?", "--model", "reference", "--data", dir, "--sandbox", "local"}, "plays only the built-in tasks"},
		{"bad protocol", []string{"ask", "q?", "--protocol", "tools", "--model", "reference"}, `--protocol "tools": expected bare or eval`},
		{"zero turns", []string{"ask", "q?", "--model", "reference", "--max-turns", "0"}, "at least one turn"},
		{"negative restarts", []string{"ask", "q?", "--model", "reference", "--max-restarts", "-1"}, "give 0 (never restart) or more"},
		{"no timeout", []string{"ask", "q?", "--model", "reference", "--timeout", "0s"}, "give a positive duration"},
		{"a local server needs a model name", []string{"ask", "q?", "--base-url", "http://localhost:11434/v1"}, "name the model to ask at http://localhost:11434/v1"},
		{"trajectory in a missing folder", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", dir, "--sandbox", "local", "--trajectory", filepath.Join(dir, "no", "t.jsonl")}, "does not exist; make it first"},
		{"not a folder", []string{"ask", "q?", "--model", "reference", "--data", filepath.Join(dir, "nope")}, "no such folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
		})
	}
}

// TestAskAnyFolder: a folder that is not a ctxcode data set gets a prefix
// from prefix init, on the fly, and the model continues it.
func TestAskAnyFolder(t *testing.T) {
	requirePython(t)
	privateCache(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sales.csv"), []byte("region,amount\nnorth,10\nsouth,32\nnorth,5\n"), 0o644))
	srv := llmtest.NewServer(t, llmtest.Text("ANSWER(sum(int(r['amount']) for r in sales if r['region'] == 'north'))", 500, 20))
	t.Setenv("OPENAI_API_KEY", "sk-x")
	got := runCLI(t, "", "ask", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local", "How much did the north sell?")
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.True(t, strings.HasPrefix(got.stdout, "15\n"), got.stdout)
	first := srv.Requests()[0].Body.Messages
	var prefix strings.Builder
	for _, m := range first {
		prefix.WriteString(m.Content + "\n")
	}
	assert.Contains(t, prefix.String(), `sales = load_csv("sales.csv")`, "the prefix init wrote binds the file")
}

// TestAskRetriesAreVisible: each retry is one line on stderr (what failed,
// the wait, attempt k of n), and the cost line says the run waited; the
// wall time holds the kernel start and the prefix build, apart from the
// model's share.
func TestAskRetriesAreVisible(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	busy := llmtest.Error(429, "rate_limit_exceeded", "Rate limit reached")
	busy.Header = http.Header{"Retry-After": []string{"1"}}
	srv := llmtest.NewServer(t, busy, llmtest.Text("ANSWER(len(tasks))", 700, 5))
	t.Setenv("OPENAI_API_KEY", "sk-x")
	got := runCLI(t, "", "ask", "How many tasks?", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local")
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Regexp(t, `ctxcode: model m: attempt 1 of \d+ failed \(429 Too Many Requests\), retrying in 1s\n`, got.stderr)
	assert.Regexp(t, `\[1 turn, 700 context tokens, 5 output tokens, 0 cached, ([\d.]+)s \(model ([\d.]+)s, kernel and prefix ([\d.]+)s\), 1 retry \(1\.\ds waiting\)\]`, got.stdout)
	m := regexp.MustCompile(`([\d.]+)s \(model ([\d.]+)s, kernel and prefix ([\d.]+)s\)`).FindStringSubmatch(got.stdout)
	require.Len(t, m, 4, got.stdout)
	wall, model, setup := parseSeconds(t, m[1]), parseSeconds(t, m[2]), parseSeconds(t, m[3])
	assert.GreaterOrEqual(t, model, 1.0, "the model's share holds the wait")
	assert.Greater(t, setup, 0.0, "the kernel start and prefix build are counted")
	assert.GreaterOrEqual(t, wall+0.01, model+setup, "wall holds both")

}

func parseSeconds(t *testing.T, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return f
}

// TestAskEveryCondition: --condition names each rung of the ladder; the
// reference model answers a built-in task in each, A's answer stated in
// its final message, the others' executed.
func TestAskEveryCondition(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	sources := map[string]string{}
	for _, cond := range []string{"A", "B", "B0", "D", "C"} {
		got := runCLI(t, "", "ask", "--task", "s-t3-1", "--condition", cond, "--model", "reference", "--data", dir, "--sandbox", "local", "--json")
		require.Equal(t, exitOK, got.code, got.stderr)
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(got.stdout), &rec), got.stdout)
		assert.Equal(t, cond, rec["condition"])
		assert.Equal(t, true, rec["correct"], cond)
		sources[cond], _ = rec["answer_source"].(string)
	}
	assert.Equal(t, map[string]string{"A": "stated", "B": "executed", "B0": "executed", "D": "executed", "C": "executed"}, sources)
}

// TestAskConditionCombinations: what may go with --condition does.
func TestAskConditionCombinations(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"A with its own protocol named", []string{"--condition", "A", "--protocol", "cli"}, `"condition":"A"`},
		{"--prefix with a rung that has one", []string{"--condition", "B", "--prefix", "pm"}, `"condition":"B"`},
		{"B0 with a control named", []string{"--condition", "B0", "--prefix", "pm-nobind"}, `"condition":"B0"`},
		{"B0 finds the control of the prefix named", []string{"--condition", "B0", "--prefix", "pm"}, `"condition":"B0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"ask", "--model", "reference", "--data", dir, "--sandbox", "local", "--json", "--task", "s-t2-1"}, tc.args...)
			got := runCLI(t, "", args...)
			require.Equal(t, exitOK, got.code, got.stderr)
			assert.Contains(t, got.stdout, tc.want)
		})
	}
}
