package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/session"
)

// Conditions as data, one runner, in an interleaved order (issue 21,
// items 4 and 7).

// TestBenchFirstTrialsSpanEveryCondition: the trials of 5 conditions x 10
// tasks run interleaved, so the first fifth of the lines already spans
// every condition; the order's seed is printed and kept in run.json; a
// resume keeps it, and a resume told another seed is refused.
func TestBenchFirstTrialsSpanEveryCondition(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	var ids []string
	for tmpl := 1; tmpl <= 5; tmpl++ {
		for k := 1; k <= 2; k++ {
			ids = append(ids, fmt.Sprintf("s-t%d-%d", tmpl, k))
		}
	}
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--model", "reference", "--sandbox", "local", "--data", data, "--conditions", "A,B,B0,D,C",
		"--task", strings.Join(ids, ","), "--parallel", "2", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	m := regexp.MustCompile(`in the order of seed (\d+) \(kept in run.json; --order-seed (\d+) gives it again\)`).FindStringSubmatch(got.stderr)
	require.Len(t, m, 3, got.stderr)
	spec := readSpec(t, out)
	assert.Equal(t, m[1], fmt.Sprint(spec.OrderSeed))

	trials := readTrials(t, out)
	require.Len(t, trials, 50)
	first := map[string]int{}
	for _, tr := range trials[:10] {
		first[tr.Condition]++
	}
	assert.Len(t, first, 5, "the first 20%% of the trials span every condition: %v", first)
	for _, tr := range trials {
		assert.True(t, tr.Correct, "%s: %s", tr.Key, tr.GradeReason)
	}

	again := runCLI(t, "", args...)
	require.Equal(t, exitOK, again.code, again.stderr)
	assert.NotContains(t, again.stderr, "in the order of seed", "a resume keeps the run's order")
	assert.Equal(t, spec.OrderSeed, readSpec(t, out).OrderSeed)

	other := runCLI(t, "", append(args, "--order-seed", fmt.Sprint(spec.OrderSeed+1))...)
	assert.Equal(t, exitUsage, other.code, other.stderr)
	assert.Contains(t, other.stderr, "order seed (--order-seed)")
}

// TestBenchVariantRulesInFirstRequest: variants from --conditions-file run
// beside D in one run; each variant's first request starts with its own
// rules ("" leaves no system message), D's with the built-in ones, and
// run.json records each variant with its base and its rules' hash.
func TestBenchVariantRulesInFirstRequest(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	const v4 = "Write Python; call ANSWER(value) in code once you have the value. (variant v4)"
	conds := filepath.Join(t.TempDir(), "conds.jsonl")
	require.NoError(t, os.WriteFile(conds, []byte(`# the seed's v3 and v4
{"name": "D-v3", "base": "D", "rules": ""}
{"name": "D-v4", "base": "D", "rules": "`+v4+`"}
`), 0o644))
	srv := llmtest.NewServer(t, llmtest.Text("ANSWER(len(tasks))", 700, 5), llmtest.Text("ANSWER(len(tasks))", 700, 5),
		llmtest.Text("ANSWER(len(tasks))", 700, 5))
	t.Setenv("OPENAI_API_KEY", "sk-test")
	out := filepath.Join(t.TempDir(), "run")
	got := runCLI(t, "", "bench", "--model", "m", "--base-url", srv.URL, "--sandbox", "local", "--data", data,
		"--conditions", "D", "--conditions-file", conds, "--task", "s-t1-1", "--parallel", "1", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	for _, c := range []string{"D", "D-v3", "D-v4"} {
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(c)+`\s+\d/1\s`, got.stdout, "condition %s", c)
	}

	// The requests, by the condition of the trial that sent them, in the
	// order they came (one trial at a time).
	trials := readTrials(t, out)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	require.Len(t, trials, 3)
	first := map[string]llmtest.RequestBody{}
	for i, tr := range trials {
		first[tr.Condition] = reqs[i].Body
	}
	assert.Equal(t, "system", first["D"].Messages[0].Role)
	assert.Contains(t, first["D"].Messages[0].Content, "live Python session", "D keeps its own rules")
	assert.Equal(t, "system", first["D-v4"].Messages[0].Role)
	assert.Equal(t, v4, first["D-v4"].Messages[0].Content, "the variant's rules replace D's")
	assert.NotEqual(t, "system", first["D-v3"].Messages[0].Role, "no rules: no system message")
	assert.Equal(t, len(first["D"].Messages)-1, len(first["D-v3"].Messages), "the same prefix and question")

	spec := readSpec(t, out)
	require.Len(t, spec.Conditions, 3)
	v3, v4c := spec.Conditions[1], spec.Conditions[2]
	assert.Equal(t, "D-v3", v3.Name)
	assert.Equal(t, "D", v3.Base)
	assert.Equal(t, agent.RulesHash(""), v3.RulesSHA256)
	assert.Equal(t, "D-v4", v4c.Name)
	assert.Equal(t, agent.RulesHash(v4), v4c.RulesSHA256)
	require.NotNil(t, v4c.Rules)
	assert.Equal(t, v4, *v4c.Rules)
	assert.Empty(t, spec.Conditions[0].RulesSHA256, "a built-in condition has its own rules")
	for _, tr := range trials {
		b, err := os.ReadFile(filepath.Join(out, tr.Trajectory))
		require.NoError(t, err)
		line, _, _ := strings.Cut(string(b), "\n")
		assert.Contains(t, line, `"condition":"`+tr.Condition+`"`, "the trajectory names the variant")
	}
}

// TestBenchConditionsFileRefused: a bad conditions file is refused before
// any kernel starts or any run folder is made, every problem named with its
// line; so is a variant whose prefix does not fit its base.
func TestBenchConditionsFileRefused(t *testing.T) {
	data := pmData(t)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"every bad line", write("bad.jsonl", `{"name": "D-v3", "base": "D"}
{"name": "D-v3", "base": "D", "rules": "x"}
{"name": "C", "base": "D"}
{"name": "q", "base": "Z"}
{"name": "r", "base": "D", "prompt": "x"}
not json
`), []string{"bad.jsonl:2: name \"D-v3\": line 1 has it already", "bad.jsonl:3: name \"C\" is a built-in condition's",
			"bad.jsonl:4: base \"Z\": expected one of A, B, B0, D, C", "bad.jsonl:5: not a condition (unknown field \"prompt\")", "bad.jsonl:6: not a condition"}},
		{"a control's prefix for B", write("ctl.jsonl", `{"name": "B-x", "base": "B", "prefix": "pm-nobind"}`+"\n"),
			[]string{"ctl.jsonl:1: prefix pm-nobind binds nothing"}},
		{"no such prefix", write("none.jsonl", "\n"+`{"name": "D-x", "base": "D", "prefix": "nope.py"}`+"\n"),
			[]string{"none.jsonl:2: prefix:", "nope.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			got := runCLI(t, "", "bench", "--model", "reference", "--data", data, "--conditions-file", tc.file, "--out", out)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			for _, w := range tc.want {
				assert.Contains(t, got.stderr, w)
			}
			assert.NotContains(t, got.stderr, "docker daemon not reachable")
			assert.NoDirExists(t, out)
		})
	}
}

// TestBenchB0OnUserTasks: over a prefix prefix init wrote (which writes
// its control NAME-nobind.py beside NAME.py), user tasks run in A, B, B0,
// D and C in one run, B0 from the control; --control names a control that
// is not beside the prefix, and without one B0 is refused, saying how to
// name it.
func TestBenchB0OnUserTasks(t *testing.T) {
	requirePython(t)
	privateCache(t)
	data, err := filepath.Abs("../../testdata/usertasks/data")
	require.NoError(t, err)
	dir := t.TempDir()
	prefix := filepath.Join(dir, "weather.py")
	got := runCLI(t, "", "prefix", "init", "--data", data, "--out", prefix, "--style", "records") // local kernels: no pandas here
	require.Equal(t, exitOK, got.code, got.stderr)
	control := filepath.Join(dir, "weather-nobind.py")
	require.FileExists(t, control, "prefix init writes the control beside the prefix")
	assert.Contains(t, got.stdout, control)

	tasks := filepath.Join(dir, "tasks.jsonl")
	require.NoError(t, os.WriteFile(tasks, []byte(`{"id": "rainy", "question": "How many readings recorded more than 5 mm of rain?", "answer_type": "integer", "gold": 11, "solution": "ANSWER(sum(1 for r in readings if r['rain_mm'] > 5))"}
{"id": "stations", "question": "How many stations are there?", "answer_type": "integer", "gold": 6, "solution": "ANSWER(len(stations))"}
{"id": "warmest", "question": "Which station id recorded the highest temperature?", "answer_type": "string", "gold_code": "ANSWER(max(readings, key=lambda r: r['temp_c'])['station_id'])", "solution": "ANSWER(max(readings, key=lambda r: r['temp_c'])['station_id'])"}
`), 0o644))
	out := filepath.Join(dir, "run")
	got = runCLI(t, "", "bench", "--model", "reference", "--sandbox", "local", "--tasks", tasks, "--data", data, "--prefix", prefix,
		"--conditions", "A,B,B0,D,C", "--parallel", "2", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	for _, c := range []string{"A", "B", "B0", "D", "C"} {
		assert.Regexp(t, `(?m)^`+c+`\s+3/3\s+100%\s+0\s`, got.stdout, "condition %s", c)
	}
	spec := readSpec(t, out)
	byName := map[string]bench.ConditionInfo{}
	for _, c := range spec.Conditions {
		byName[c.Name] = c
	}
	assert.Equal(t, "data-nobind", byName["B0"].Prefix)
	assert.Equal(t, control, byName["B0"].PrefixSource)
	assert.Equal(t, "data", byName["B"].Prefix)

	// A prefix alone in its folder has no control beside it.
	alone := filepath.Join(t.TempDir(), "weather.py")
	b, err := os.ReadFile(prefix)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(alone, b, 0o644))
	args := []string{"bench", "--model", "reference", "--sandbox", "local", "--tasks", tasks, "--data", data, "--prefix", alone,
		"--conditions", "B0", "--task", "stations", "--out", filepath.Join(t.TempDir(), "run")}
	got = runCLI(t, "", args...)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, "--conditions B0 needs the control of prefix data")
	assert.Contains(t, got.stderr, "weather-nobind.py")
	assert.Contains(t, got.stderr, "--control")
	got = runCLI(t, "", append(args, "--control", control)...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Regexp(t, `(?m)^B0\s+1/1\s+100%`, got.stdout)
	got = runCLI(t, "", append(args, "--control", prefix, "--out", filepath.Join(t.TempDir(), "run2"))...)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, "a control binds nothing")
}

// TestBenchKeepsFinishedWorkAndCountsUnexecutedApart: what ask --task all
// showed, bench shows: a model failure (a refused key) stops the run and
// keeps the trial that finished; its answer, stated in text, is graded and
// shown apart, not counted in accuracy.
func TestBenchKeepsFinishedWorkAndCountsUnexecutedApart(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	gold, err := json.Marshal(tasks["s-t1-1"].Gold)
	require.NoError(t, err)
	t.Setenv("OPENAI_API_KEY", "sk-x")
	api := newTaskAPI(t, map[string][]llmtest.Reply{
		tasks["s-t1-1"].Question: {llmtest.Text("ANSWER: "+string(gold), 700, 10)},
		tasks["s-t2-1"].Question: {llmtest.Error(401, "invalid_api_key", "Incorrect API key provided")},
	})
	out := filepath.Join(t.TempDir(), "run")
	// Order seed 3 asks s-t1-1 first (checked below).
	args := []string{"bench", "--model", "m", "--base-url", api.URL, "--sandbox", "local", "--data", data, "--conditions", "D",
		"--task", "s-t1-1,s-t2-1", "--parallel", "1", "--order-seed", "3", "--out", out}
	require.Equal(t, "s-t1-1", bench.Order(3, []string{"m"}, []string{"D"}, []string{"s-t1-1", "s-t2-1"}, 1)[0].Task)
	got := runCLI(t, "", args...)
	assert.Equal(t, exitInfra, got.code, got.stderr)
	assert.Contains(t, got.stderr, "OPENAI_API_KEY", "the failure says what to check")
	assert.Regexp(t, `(?m)^D\s+0/1\s+0%`, got.stdout, "the unexecuted answer is not accuracy")
	assert.Contains(t, got.stdout, "1 unexecuted answer(s), 1 of them right")
	trials := readTrials(t, out)
	require.Len(t, trials, 2, "the finished trial's line, and the failed one's")
	assert.Equal(t, "s-t1-1", trials[0].Task)
	assert.Equal(t, "unexecuted", trials[0].AnswerSource)
	assert.False(t, trials[0].Correct)
	assert.True(t, trials[0].AnswerRight)
	assert.Equal(t, "model_error", string(trials[1].Status))
}

// TestAskB0OverAnyFolder: over a folder that is not a ctxcode data set,
// ask writes the prefix and its control on the fly, and B0 starts from the
// control.
func TestAskB0OverAnyFolder(t *testing.T) {
	requirePython(t)
	privateCache(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sales.csv"), []byte("region,amount\nnorth,10\nsouth,32\nnorth,5\n"), 0o644))
	srv := llmtest.NewServer(t, llmtest.Reply{ToolCalls: []session.ToolCall{{ID: "c1", Name: "eval", Arguments: `{"code": "ANSWER(15)"}`}},
		Usage: &llmtest.Usage{Prompt: 500, Completion: 5}})
	t.Setenv("OPENAI_API_KEY", "sk-x")
	got := runCLI(t, "", "ask", "--condition", "B0", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local", "--json",
		"How much did the north sell?")
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, `"condition":"B0"`)
	msgs := srv.Requests()[0].Body.Messages
	require.NotEmpty(t, msgs)
	assert.Contains(t, msgs[0].Content, "No data variable is bound", "the control's rules")
	var all strings.Builder
	for _, m := range msgs {
		all.WriteString(m.Content + "\n")
	}
	for _, tc := range srv.Requests()[0].Body.Messages {
		for _, call := range tc.ToolCalls {
			all.WriteString(call.Function.Arguments + "\n")
		}
	}
	assert.Contains(t, all.String(), `load_csv(\"sales.csv\")`, "every cell loads the file")
	assert.NotContains(t, all.String(), `sales = load_csv`, "nothing is bound")
}
