package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// TestWrongAnswersExitZero: a run that finished is a success, whatever its
// answers: ask with a wrong answer, bench whose
// trials are all wrong, and the report of that run all exit 0. Exit 3 is
// for no answer within the budget only.
func TestWrongAnswersExitZero(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	wrong := func() llmtest.Reply { return llmtest.Text("ANSWER(-1)", 700, 5) }

	t.Run("ask one task", func(t *testing.T) {
		srv := llmtest.NewServer(t, wrong())
		got := runCLI(t, "", "ask", "--task", "s-t1-1", "--model", "m", "--base-url", srv.URL, "--data", data, "--sandbox", "local")
		assert.Equal(t, exitOK, got.code, got.stderr)
		assert.Contains(t, got.stdout, "wrong (task s-t1-1)")
	})
	t.Run("bench and report", func(t *testing.T) {
		api := newTaskAPI(t, map[string][]llmtest.Reply{
			tasks["s-t1-1"].Question: {wrong()},
			tasks["s-t4-1"].Question: {wrong()},
		})
		out := filepath.Join(t.TempDir(), "run")
		got := runCLI(t, "", "bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "D",
			"--task", "s-t1-1,s-t4-1", "--sandbox", "local", "--out", out)
		assert.Equal(t, exitOK, got.code, got.stderr)
		assert.Regexp(t, `(?m)^D\s+0/2\s+0%`, got.stdout)
		got = runCLI(t, "", "report", out)
		assert.Equal(t, exitOK, got.code, got.stderr)
	})
}

// TestLiteralAnswersCountedApart: an ANSWER of a value the model typed is
// graded as an executed answer (it counts in accuracy) and flagged literal:
// in the trial's line, on a line of its own under bench's table and in the
// report, and in ask's output. A computed answer is not flagged.
func TestLiteralAnswersCountedApart(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	typed := func(task string) llmtest.Reply {
		return llmtest.Text("ANSWER("+goldText(t, tasks[task].Gold)+")", 700, 5)
	}
	api := newTaskAPI(t, map[string][]llmtest.Reply{
		tasks["s-t1-1"].Question: {typed("s-t1-1")},
		tasks["s-t1-2"].Question: {llmtest.Text("ANSWER(-1)", 700, 5)},
		tasks["s-t5-1"].Question: {answerReply(t, tasks["s-t5-1"].Gold)},
	})
	out := filepath.Join(t.TempDir(), "run")
	got := runCLI(t, "", "bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "D",
		"--task", "s-t1-1,s-t1-2,s-t5-1", "--sandbox", "local", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Regexp(t, `(?m)^D\s+2/3\s`, got.stdout, "the right literal answer counts in accuracy")
	assert.Contains(t, got.stdout, "D        2 literal answer(s), 1 of them right")
	literal := map[string]bool{}
	for _, tr := range readTrials(t, out) {
		literal[tr.Task] = tr.Literal
		assert.Equal(t, "executed", tr.AnswerSource, tr.Task)
	}
	assert.Equal(t, map[string]bool{"s-t1-1": true, "s-t1-2": true, "s-t5-1": false}, literal)

	got = runCLI(t, "", "report", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "m D: 2 literal answer(s), 1 of them right")
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), "2 literal answer(s), 1 of them right")

	srv := llmtest.NewServer(t, typed("s-t1-1"))
	got = runCLI(t, "", "ask", "--task", "s-t1-1", "--model", "m", "--base-url", srv.URL, "--data", data, "--sandbox", "local")
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, "(literal: the model typed this value")
	assert.Contains(t, got.stdout, "correct (task s-t1-1)")
	assert.False(t, strings.Contains(got.stdout, "wrong"), got.stdout)
}
