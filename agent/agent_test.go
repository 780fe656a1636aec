package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// pmData writes the s tier (seed 1) once per test binary.
var pmDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ctxcode-agent-test-")
	if err != nil {
		panic(err)
	}
	tier, _ := datasets.ParseTier("s")
	if _, err := datasets.Generate(tier, 1).Write(dir, true); err != nil {
		panic(err)
	}
	pmDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// pmSession is a fresh kernel with the pm prefix built over the s tier.
func pmSession(t *testing.T, name string) *agent.Session {
	t.Helper()
	k := kerneltest.Python(t, pmDir)
	p, err := prefixes.Load(name)
	require.NoError(t, err)
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(t, err)
	return &agent.Session{Kernel: k, Prefix: p, Cells: cells}
}

func openAI(t *testing.T, srv *llmtest.Server) llm.Model {
	t.Helper()
	cfg := llm.DefaultConfig()
	cfg.Model = "scripted"
	cfg.BaseURL = srv.URL
	cfg.APIKey = "sk-test-secret-key"
	cfg.RetryBase = 5 * time.Millisecond
	cfg.RetryMax = 50 * time.Millisecond
	cfg.Timeout = 5 * time.Second
	m, err := llm.NewOpenAI(cfg)
	require.NoError(t, err)
	return m
}

type runOut struct {
	res    *agent.Result
	events []map[string]any
	raw    string
}

func run(t *testing.T, s *agent.Session, m llm.Model, cfg agent.Config, question string) runOut {
	t.Helper()
	var buf bytes.Buffer
	tr := agent.NewTrajectory(&buf)
	res, err := agent.Run(context.Background(), s, m, cfg, agent.Info{Model: m.Name(), Question: question}, tr, nil)
	require.NoError(t, err)
	require.NoError(t, tr.Err())
	// Every event reads through the schema's reader, whole.
	l, err := session.ReadTrajectory(strings.NewReader(buf.String()))
	require.NoError(t, err)
	assert.Empty(t, l.Skipped, "every field the agent writes is in the schema")
	assert.Zero(t, l.Torn)
	out := runOut{res: res, raw: buf.String()}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		ev := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		out.events = append(out.events, ev)
	}
	return out
}

func (o runOut) types() []string {
	var ts []string
	for _, e := range o.events {
		ts = append(ts, e["type"].(string))
	}
	return ts
}

func (o runOut) cells() []map[string]any {
	var cs []map[string]any
	for _, e := range o.events {
		if e["type"] == "cell" {
			cs = append(cs, e)
		}
	}
	return cs
}

func lastUser(r llmtest.Request) string {
	m := r.Body.Messages
	return m[len(m)-1].Content
}

const blockedQ = "How many tasks are blocked?"

func TestBareLoopSuccess(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Reply{Content: "blocked = [t for t in tasks if t['status'] == 'blocked']\nlen(blocked)",
			Usage: &llmtest.Usage{Prompt: 700, Completion: 20, Cached: 640}},
		llmtest.Reply{Content: "ANSWER(len(blocked))", Usage: &llmtest.Usage{Prompt: 760, Completion: 8, Cached: 700, Reasoning: 3}},
	)
	s := pmSession(t, "pm")
	out := run(t, s, openAI(t, srv), agent.Config{}, blockedQ)

	res := out.res
	assert.Equal(t, agent.Answered, res.Status)
	assert.Equal(t, agent.Executed, res.AnswerSource)
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, llm.Usage{PromptTokens: 1460, CompletionTokens: 28, CachedTokens: 1340, ReasoningTokens: 3}, res.Usage,
		"the totals are the sums the server reported")

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	first, second := reqs[0].Body.Messages, reqs[1].Body.Messages
	assert.Equal(t, "system", first[0].Role)
	assert.Equal(t, blockedQ, lastUser(reqs[0]))
	assert.Equal(t, first, second[:len(first)], "the second request extends the first")
	assert.Equal(t, "assistant", second[len(first)].Role)
	n := res.Cells[0].Result.Count
	assert.Equal(t, "Out["+itoa(n)+"]: "+res.Answer, lastUser(reqs[1]), "the cell's real output is the next user message")
	assert.Equal(t, []string{"run", "prefix", "call", "cell", "call", "cell", "answer", "end"}, out.types())
	assert.Equal(t, "D", out.events[0]["condition"])
	assert.NotContains(t, out.raw, "sk-test-secret-key", "the key never reaches the trajectory")
	assert.Equal(t, "Bearer sk-test-secret-key", reqs[0].Header.Get("Authorization"))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBareLoopRepairsAndNotes(t *testing.T) {
	fenced := "Let me count the teams first.\n```python\nlen(teams)\n```"
	srv := llmtest.NewServer(t,
		llmtest.Text(fenced, 700, 20),
		llmtest.Text("len(teams)", 760, 5),
		llmtest.Text("I think about five tasks are blocked here.", 800, 10),
		llmtest.Reply{Content: "", FinishReason: "length", Usage: &llmtest.Usage{Prompt: 840, Completion: 4096}},
		llmtest.Text(">>> ANSWER(len(teams))", 880, 5),
	)
	s := pmSession(t, "pm")
	out := run(t, s, openAI(t, srv), agent.Config{MaxOutputTokens: 4096}, "How many teams are there?")
	require.Equal(t, agent.Answered, out.res.Status)
	assert.Equal(t, "3", out.res.Answer)

	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	// Turn 1: the fences and the prose went; the history holds the cell as
	// it ran, and the trajectory the model's message as it came.
	msgs := reqs[1].Body.Messages
	assert.Equal(t, "len(teams)", msgs[len(msgs)-2].Content)
	assert.Equal(t, "[ctxcode: removed the Markdown fences around your code]\n"+
		"[ctxcode: removed the prose around the code block; only the code runs]\nOut[7]: 3", lastUser(reqs[1]))
	// Turn 2: the same cell again is not run again.
	assert.Equal(t, "[ctxcode: this cell is the same as In [7], the last that ran, and was not run again; its output is above]", lastUser(reqs[2]))
	// Turn 3: prose runs as code; the SyntaxError is real and the note says why.
	assert.Contains(t, lastUser(reqs[3]), "SyntaxError")
	assert.Contains(t, lastUser(reqs[3]), "[ctxcode: your message runs as code: send only code")
	// Turn 4: an empty message cut at the limit is said to be so, and replayed with content.
	msgs = reqs[4].Body.Messages
	assert.Equal(t, "(an empty message)", msgs[len(msgs)-2].Content)
	assert.Contains(t, lastUser(reqs[4]), "[ctxcode: your message was cut at the output-token limit of 4096")
	assert.Contains(t, lastUser(reqs[4]), "[ctxcode: your message has no code")
	cells := out.cells()
	require.Len(t, cells, 5)
	assert.Equal(t, "len(teams)", cells[0]["code"])
	assert.Equal(t, fenced, cells[0]["reply"], "the trajectory keeps the model's message verbatim")
	assert.EqualValues(t, 7, cells[1]["repeat_of"])
	assert.Contains(t, cells[4]["notes"], "removed the interpreter prompts (In [n]:, >>>, ...) before the lines")
}

// TestBareLoopRunsACellAgainAfterTheStateChanged: only the last cell that
// ran is a repeat; after another cell, the same code runs again.
func TestBareLoopRunsACellAgainAfterTheStateChanged(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Text("ANSWER(x)", 700, 3),
		llmtest.Text("x = len(users)", 720, 3),
		llmtest.Text("ANSWER(x)", 740, 3),
	)
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{}, "How many users?")
	require.Equal(t, agent.Answered, out.res.Status, out.raw)
	assert.Equal(t, "30", out.res.Answer)
}

func TestBareLoopStatedAnswerIsUnexecuted(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ANSWER: 42", 700, 4))
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{}, blockedQ)
	assert.Equal(t, agent.Answered, out.res.Status)
	assert.Equal(t, agent.Unexecuted, out.res.AnswerSource)
	assert.Equal(t, "42", out.res.Answer)
	assert.Empty(t, out.res.Cells, "nothing ran")
}

func TestBareLoopKernelDeathRestarts(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Text("x = 1\nimport os\nos._exit(3)", 700, 10),
		llmtest.Text("x", 800, 2),
		llmtest.Text("ANSWER(len(tasks))", 900, 5),
	)
	s := pmSession(t, "pm")
	out := run(t, s, openAI(t, srv), agent.Config{}, "How many tasks are there?")
	require.Equal(t, agent.Answered, out.res.Status, out.raw)
	assert.Equal(t, "500", out.res.Answer, "the prefix was built again: tasks is back")
	assert.Equal(t, 1, out.res.Restarts)
	reqs := srv.Requests()
	notice := lastUser(reqs[1])
	assert.Contains(t, notice, "[ctxcode: the kernel died (python kernel died: exited with status 3)")
	assert.Contains(t, notice, "the prefix ran again (6 cells), so what it bound is back (events, json, load, os, projects, tasks, teams, users)")
	assert.Contains(t, notice, "everything the cells after it defined is lost")
	assert.Contains(t, lastUser(reqs[2]), "NameError: name 'x' is not defined", "the model's own variables are gone")
	assert.Contains(t, out.types(), "restart")
}

func TestBareLoopRestartCap(t *testing.T) {
	die := llmtest.Text("import os; os._exit(1)", 700, 5)
	srv := llmtest.NewServer(t, die, llmtest.Text("import os; os._exit(2)", 700, 5))
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{MaxRestarts: 1}, blockedQ)
	assert.Equal(t, agent.KernelDied, out.res.Status, "the model's code killed it: its result")
	assert.Equal(t, "exit 2", out.res.Death, "the last death's cause")
	assert.ErrorContains(t, out.res.Err, "the kernel died 2 times")
}

func TestBudgets(t *testing.T) {
	t.Run("turns", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("1 + 1", 700, 3), llmtest.Text("2 + 2", 720, 3))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{MaxTurns: 2}, blockedQ)
		assert.Equal(t, agent.MaxTurns, out.res.Status)
		assert.Equal(t, 2, out.res.Turns)
		assert.Equal(t, "max_turns", out.events[len(out.events)-1]["status"])
	})
	t.Run("prompt tokens", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("1 + 1", 900, 3))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{MaxPromptTokens: 1200}, blockedQ)
		assert.Equal(t, agent.MaxPromptTokens, out.res.Status)
		assert.Equal(t, 1, out.res.Turns, "the second call would pass the budget and is not made")
		assert.ErrorContains(t, out.res.Err, "budget of 1200 prompt tokens (900 used)")
	})
	t.Run("a budget the bound passes and the count fits", func(t *testing.T) {
		// The first request is counted before it is sent only when its
		// upper bound (session.BoundRequest) does not fit: the decision is
		// the count's either way.
		s := pmSession(t, "pm")
		req, err := session.Render(session.Bare, s.Prefix.Input(s.Cells, blockedQ))
		require.NoError(t, err)
		n, err := session.CountRequest(session.O200kBase, req)
		require.NoError(t, err)
		require.Greater(t, session.BoundRequest(req), n)
		srv := llmtest.NewServer(t, llmtest.Text("ANSWER(1)", n, 3))
		out := run(t, s, openAI(t, srv), agent.Config{MaxPromptTokens: n}, blockedQ)
		assert.Equal(t, agent.Answered, out.res.Status, "the count fits the budget exactly")
		assert.EqualValues(t, n, out.events[2]["request_tokens_estimate"])

		out = run(t, pmSession(t, "pm"), openAI(t, llmtest.NewServer(t)), agent.Config{MaxPromptTokens: n - 1}, blockedQ)
		assert.Equal(t, agent.MaxPromptTokens, out.res.Status, "one token less: no call")
		assert.Zero(t, out.res.Turns)
	})
	t.Run("prompt tokens the provider counts higher", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("1 + 1", 150_000, 3))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{}, blockedQ)
		assert.Equal(t, agent.MaxPromptTokens, out.res.Status)
		assert.Equal(t, 1, out.res.Turns, "the next request is predicted from the provider's count, not the tokenizer's")
		assert.LessOrEqual(t, out.res.Usage.PromptTokens, 200_000)
	})
	t.Run("rate limited, then served", func(t *testing.T) {
		srv := llmtest.NewServer(t,
			llmtest.Reply{Status: 429, Header: map[string][]string{"Retry-After": {"0"}}, ErrorMessage: "slow down"},
			llmtest.Reply{Status: 503, ErrorMessage: "overloaded"},
			llmtest.Text("ANSWER(len(teams))", 700, 5))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{}, "How many teams?")
		assert.Equal(t, agent.Answered, out.res.Status)
		assert.Equal(t, 1, out.res.Turns, "retries are one turn")
		assert.Equal(t, 700, out.res.Usage.PromptTokens)
		var call map[string]any
		for _, e := range out.events {
			if e["type"] == "call" {
				call = e
			}
		}
		assert.EqualValues(t, 3, call["attempts"])
	})
	t.Run("context length", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Error(400, "context_length_exceeded", "This model's maximum context length is 4096 tokens."))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{}, blockedQ)
		assert.Equal(t, agent.ContextLength, out.res.Status)
	})
	t.Run("unauthorized", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Error(401, "invalid_api_key", "Incorrect API key provided"))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{}, blockedQ)
		assert.Equal(t, agent.ModelFailed, out.res.Status)
		assert.Len(t, srv.Requests(), 1, "401 is not retried")
		assert.NotContains(t, out.raw, "sk-test-secret-key")
	})
}

func TestEvalLoop(t *testing.T) {
	call := func(id, code string) session.ToolCall {
		args, _ := json.Marshal(map[string]string{"code": code})
		return session.ToolCall{ID: id, Name: "eval", Arguments: string(args)}
	}
	srv := llmtest.NewServer(t,
		llmtest.Reply{ToolCalls: []session.ToolCall{call("c1", "len(users)")}, Usage: &llmtest.Usage{Prompt: 800, Completion: 12}},
		llmtest.Reply{ToolCalls: []session.ToolCall{call("c2", "ANSWER(len(users))")}, Usage: &llmtest.Usage{Prompt: 850, Completion: 12}},
	)
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{Protocol: session.Eval}, "How many users?")
	require.Equal(t, agent.Answered, out.res.Status)
	assert.Equal(t, "30", out.res.Answer)
	reqs := srv.Requests()
	require.Len(t, reqs[0].Body.Tools, 1)
	assert.Equal(t, "eval", reqs[0].Body.Tools[0].Function.Name)
	msgs := reqs[1].Body.Messages
	last := msgs[len(msgs)-1]
	assert.Equal(t, "tool", last.Role)
	assert.Equal(t, "c1", last.ToolCallID)
	assert.Equal(t, "Out[7]: 30", last.Content)
	assert.Equal(t, "c1", msgs[len(msgs)-2].ToolCalls[0].ID, "the model's call is replayed with its id")
}

func TestOneShot(t *testing.T) {
	t.Run("answer", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("Here you go:\n```python\nANSWER(len([t for t in tasks if t['status'] == 'done']))\n```\n", 900, 30))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{Protocol: session.TranscriptText}, "How many tasks are done?")
		assert.Equal(t, agent.Answered, out.res.Status)
		assert.Equal(t, agent.Executed, out.res.AnswerSource)
		reqs := srv.Requests()
		require.Len(t, reqs, 1, "one request, no second call")
		require.Len(t, reqs[0].Body.Messages, 1)
		assert.Contains(t, reqs[0].Body.Messages[0].Content, "Question: How many tasks are done?")
	})
	t.Run("no answer", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("```python\nlen(tasks)\n```", 900, 10))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{Protocol: session.TranscriptText}, "How many tasks?")
		assert.Equal(t, agent.NoAnswer, out.res.Status)
		require.Len(t, out.res.Cells, 1)
		assert.Equal(t, "500", out.res.Cells[0].Result.Value, "the block ran once")
	})
}

// TestReferenceAnswersEveryTask runs the offline reference model over all
// 24 built-in tasks of the s tier, in the loop and in one shot, on a local
// kernel, and grades every answer.
func TestReferenceAnswersEveryTask(t *testing.T) {
	referenceEveryTask(t, kerneltest.Python(t, pmDir))
}

// TestReferenceAnswersEveryTaskInDocker does the same in the Docker sandbox.
func TestReferenceAnswersEveryTaskInDocker(t *testing.T) {
	referenceEveryTask(t, dockerKernel(t))
}

func referenceEveryTask(t *testing.T, k kernel.Kernel) {
	tier, _ := datasets.ParseTier("s")
	d := datasets.Generate(tier, 1)
	tasks, err := datasets.Tasks(d)
	require.NoError(t, err)
	require.Len(t, tasks, 24)
	solutions := map[string]string{}
	for _, task := range tasks {
		code, err := datasets.Reference(task, datasets.PythonPM)
		require.NoError(t, err)
		solutions[task.Question] = code
	}
	ref := llm.NewReference(solutions, session.O200kBase)
	p, err := prefixes.Load("pm")
	require.NoError(t, err)
	for _, mode := range []agent.Mode{agent.Loop, agent.OneShot} {
		for _, task := range tasks {
			require.NoError(t, k.Restart(context.Background()))
			sess := &agent.Session{Kernel: k, Prefix: p}
			res, err := agent.Run(context.Background(), sess, ref, agent.Config{Protocol: mode.Protocol()}, agent.Info{Question: task.Question}, nil, nil)
			require.NoError(t, err)
			require.Equal(t, agent.Answered, res.Status, "%s %s: %v", mode, task.ID, res.Err)
			assert.Equal(t, agent.Executed, res.AnswerSource)
			ok, why := datasets.Grade(task, res.Answer)
			assert.True(t, ok, "%s %s: %s", mode, task.ID, why)
			assert.Equal(t, 1, res.Turns)
			assert.True(t, res.Usage.Estimated)
			assert.Positive(t, res.Usage.PromptTokens)
		}
	}
}

func TestLoopStopsAModelThatRepeatsItself(t *testing.T) {
	same := llmtest.Text("len(tasks)", 700, 3)
	srv := llmtest.NewServer(t, same, same, same)
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{}, blockedQ)
	assert.Equal(t, agent.NoAnswer, out.res.Status)
	assert.Equal(t, 3, out.res.Turns)
	assert.ErrorContains(t, out.res.Err, "the same message 3 times in a row")
}

func evalCall(id, code string) session.ToolCall {
	args, _ := json.Marshal(map[string]string{"code": code})
	return session.ToolCall{ID: id, Name: "eval", Arguments: string(args)}
}

// TestEvalLoopHistoryHoldsTheCellAsItRan: a fenced eval argument is
// repaired like a bare message; the replayed call holds the code that ran,
// under the model's id; the trajectory keeps the call as the model sent it.
func TestEvalLoopHistoryHoldsTheCellAsItRan(t *testing.T) {
	sent := evalCall("c1", "```python\nlen(users)\n```")
	srv := llmtest.NewServer(t,
		llmtest.Reply{ToolCalls: []session.ToolCall{sent}, Usage: &llmtest.Usage{Prompt: 800, Completion: 12}},
		llmtest.Reply{ToolCalls: []session.ToolCall{evalCall("c2", "ANSWER(len(users))")}, Usage: &llmtest.Usage{Prompt: 850, Completion: 12}},
	)
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{Protocol: session.Eval}, "How many users?")
	require.Equal(t, agent.Answered, out.res.Status, out.raw)
	msgs := srv.Requests()[1].Body.Messages
	call := msgs[len(msgs)-2].ToolCalls
	require.Len(t, call, 1)
	assert.Equal(t, "c1", call[0].ID)
	assert.Equal(t, `{"code":"len(users)"}`, call[0].Function.Arguments, "the replayed call holds the code that ran")
	assert.Equal(t, "[ctxcode: removed the Markdown fences around your code]\nOut[7]: 30", msgs[len(msgs)-1].Content)
	var first map[string]any
	for _, e := range out.events {
		if e["type"] == "call" {
			first = e
			break
		}
	}
	require.NotNil(t, first)
	calls := first["tool_calls"].([]any)
	assert.Equal(t, sent.Arguments, calls[0].(map[string]any)["arguments"], "the trajectory keeps the model's call verbatim")
}

// TestEvalLoopNotesACutMessage: a message cut at the output-token limit is
// said to be so in the eval loop too: with a broken call, and with no call.
func TestEvalLoopNotesACutMessage(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Reply{ToolCalls: []session.ToolCall{{ID: "c1", Name: "eval", Arguments: `{"code": "len(us`}}, FinishReason: "length",
			Usage: &llmtest.Usage{Prompt: 800, Completion: 100}},
		llmtest.Reply{Content: "Let me count the users by team, then", FinishReason: "length", Usage: &llmtest.Usage{Prompt: 850, Completion: 100}},
		llmtest.Reply{ToolCalls: []session.ToolCall{evalCall("c3", "ANSWER(len(users))")}, Usage: &llmtest.Usage{Prompt: 900, Completion: 12}},
	)
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{Protocol: session.Eval, MaxOutputTokens: 100}, "How many users?")
	require.Equal(t, agent.Answered, out.res.Status, out.raw)
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	msgs := reqs[1].Body.Messages
	last := msgs[len(msgs)-1]
	assert.Equal(t, "tool", last.Role)
	assert.True(t, strings.HasPrefix(last.Content, "[ctxcode: your message was cut at the output-token limit of 100"), last.Content)
	msgs = reqs[2].Body.Messages
	assert.Equal(t, "assistant", msgs[len(msgs)-2].Role)
	assert.Equal(t, "Let me count the users by team, then", msgs[len(msgs)-2].Content)
	last = msgs[len(msgs)-1]
	assert.Equal(t, "user", last.Role, "a message without a call is answered by a user message, not a made-up tool result")
	assert.Contains(t, last.Content, "[ctxcode: your message was cut at the output-token limit of 100")
}

// TestOneShotKernelDeathIsTheModels: one shot does not restart, and a
// kernel its cell killed is the model's result, as in the loop, with how
// it died.
func TestOneShotKernelDeathIsTheModels(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("```python\nimport os; os._exit(4)\n```", 900, 10))
	out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{Protocol: session.TranscriptText}, blockedQ)
	assert.Equal(t, agent.KernelDied, out.res.Status)
	assert.Equal(t, "exit 4", out.res.Death)
	assert.ErrorContains(t, out.res.Err, "exited with status 4")
	assert.Equal(t, 0, out.res.Restarts, "one shot restarts nothing")
	end := out.events[len(out.events)-1]
	assert.Equal(t, "kernel_died", end["status"])
	assert.Equal(t, "exit 4", end["death"])
}

// TestRestartsCountRestartsMade: a death that is not followed by a restart
// is not a restart.
func TestRestartsCountRestartsMade(t *testing.T) {
	t.Run("never restart", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("import os; os._exit(1)", 700, 5))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{MaxRestarts: -1}, blockedQ)
		assert.Equal(t, agent.KernelDied, out.res.Status)
		assert.Equal(t, 0, out.res.Restarts)
		assert.ErrorContains(t, out.res.Err, "the kernel died and a run may make no restarts")
	})
	t.Run("one restart, two deaths", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("import os; os._exit(1)", 700, 5), llmtest.Text("import os; os._exit(2)", 700, 5))
		out := run(t, pmSession(t, "pm"), openAI(t, srv), agent.Config{MaxRestarts: 1}, blockedQ)
		assert.Equal(t, agent.KernelDied, out.res.Status)
		assert.Equal(t, 1, out.res.Restarts)
		assert.EqualValues(t, 1, out.events[len(out.events)-1]["restarts"])
	})
}

// TestResultTimes: a run says how long it took, how much of it the model
// took and how much of that was waiting to retry, and how long the kernel
// start and the prefix build took.
func TestResultTimes(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Reply{Status: 429, Header: map[string][]string{"Retry-After-Ms": {"120"}}, ErrorMessage: "slow down"},
		llmtest.Reply{Content: "ANSWER(len(teams))", Usage: &llmtest.Usage{Prompt: 700, Completion: 5}, Delay: 50 * time.Millisecond},
	)
	started := time.Now()
	k := kerneltest.Python(t, pmDir)
	p, err := prefixes.Load("pm")
	require.NoError(t, err)
	s := &agent.Session{Kernel: k, Prefix: p, Started: started}
	out := run(t, s, openAI(t, srv), agent.Config{}, "How many teams?")
	res := out.res
	require.Equal(t, agent.Answered, res.Status, out.raw)
	assert.Equal(t, 1, res.Retries)
	assert.GreaterOrEqual(t, res.Waited, 50*time.Millisecond, "the wait the server asked for (capped by RetryMax)")
	assert.GreaterOrEqual(t, res.Model, res.Waited+50*time.Millisecond, "the model's share holds the waits and the calls")
	assert.Positive(t, res.Setup, "the kernel start and the prefix build")
	assert.GreaterOrEqual(t, res.Wall, res.Setup+res.Model, "the wall time holds the setup and the model's share")
	assert.GreaterOrEqual(t, time.Since(started), res.Wall)
	end := out.events[len(out.events)-1]
	assert.EqualValues(t, res.Model.Milliseconds(), end["model_ms"])
	assert.EqualValues(t, res.Waited.Milliseconds(), end["waited_ms"])
	assert.EqualValues(t, 1, end["retries"])
}

// TestGradeCountsUnexecutedAnswersApart: every answer is graded; only
// executed (and stated) answers count in accuracy.
func TestGradeCountsUnexecutedAnswersApart(t *testing.T) {
	tests := []struct {
		name     string
		res      agent.Result
		correct  bool
		verdict  agent.Verdict
		accurate bool
	}{
		{"executed, right", agent.Result{Status: agent.Answered, Answer: "3", AnswerSource: agent.Executed}, true, agent.GradeCorrect, true},
		{"executed, wrong", agent.Result{Status: agent.Answered, Answer: "4", AnswerSource: agent.Executed}, false, agent.GradeWrong, false},
		{"stated, right", agent.Result{Status: agent.Answered, Answer: "3", AnswerSource: agent.Stated}, true, agent.GradeCorrect, true},
		{"unexecuted, right", agent.Result{Status: agent.Answered, Answer: "3", AnswerSource: agent.Unexecuted}, true, agent.GradeUnexecuted, false},
		{"unexecuted, wrong", agent.Result{Status: agent.Answered, Answer: "4", AnswerSource: agent.Unexecuted}, false, agent.GradeUnexecuted, false},
		{"no answer", agent.Result{Status: agent.MaxTurns}, false, agent.GradeNoAnswer, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.res
			g := res.SetGrade(tt.correct, "why")
			require.Same(t, g, res.Grade)
			assert.Equal(t, tt.verdict, g.Verdict)
			assert.Equal(t, tt.accurate, g.Accurate())
			assert.Equal(t, tt.correct && tt.res.Status == agent.Answered, g.Correct, "the grade of the answer itself, whatever its source")
			assert.Equal(t, tt.res.AnswerSource, g.Source)
		})
	}
	var buf bytes.Buffer
	tr := agent.NewTrajectory(&buf)
	res := agent.Result{Status: agent.Answered, Answer: "3", AnswerSource: agent.Unexecuted}
	tr.Grade("t01", 3, res.SetGrade(true, ""))
	ev := map[string]any{}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &ev))
	assert.Equal(t, "grade", ev["type"])
	assert.Equal(t, "unexecuted", ev["verdict"])
	assert.Equal(t, true, ev["correct"])
	assert.Equal(t, false, ev["accurate"])
	assert.Equal(t, "unexecuted", ev["source"])
}

// TestFirstRequestIsWhatRunSends: FirstRequest, which a bench run hashes
// to pin each condition's first request, is the request Run sends first,
// message for message and tool for tool, in every protocol.
func TestFirstRequestIsWhatRunSends(t *testing.T) {
	for _, tc := range []struct {
		protocol session.Protocol
		session  func(t *testing.T) *agent.Session
	}{
		{session.Bare, func(t *testing.T) *agent.Session { return pmSession(t, "pm") }},
		{session.Eval, func(t *testing.T) *agent.Session { return pmSession(t, "pm-nobind") }},
		{session.TranscriptText, func(t *testing.T) *agent.Session { return pmSession(t, "pm") }},
		{session.CLI, func(t *testing.T) *agent.Session { return cliSession(t, pmDir) }},
	} {
		t.Run(string(tc.protocol), func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Error(400, "invalid_request_error", "stop here"))
			s := tc.session(t)
			cfg := agent.Config{Protocol: tc.protocol, OutputBudget: 700}
			out := run(t, s, openAI(t, srv), cfg, blockedQ)
			require.Equal(t, agent.ModelFailed, out.res.Status)
			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			sent := reqs[0].Body

			want, err := agent.FirstRequest(s, cfg, blockedQ)
			require.NoError(t, err)
			require.Len(t, sent.Messages, len(want.Messages))
			for i, m := range want.Messages {
				assert.Equal(t, m.Role, sent.Messages[i].Role, "message %d", i)
				assert.Equal(t, m.Content, sent.Messages[i].Content, "message %d", i)
			}
			require.Len(t, sent.Tools, len(want.Tools))
			for i, tool := range want.Tools {
				assert.Equal(t, tool.Name, sent.Tools[i].Function.Name)
				assert.Equal(t, tool.Description, sent.Tools[i].Function.Description)
			}
		})
	}
}
