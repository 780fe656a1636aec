package llm

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

func kernelResult(stdout string) kernel.Result {
	return kernel.Result{Status: kernel.StatusOK, Stdout: stdout}
}

const (
	overdueQ    = "How many tasks are overdue?"
	overdueCode = "n = sum(1 for t in tasks if t['due'] < today)\nANSWER(n)\n"
	shortQ      = "How many tasks?"
	shortCode   = "ANSWER(len(tasks))"
)

func newTestReference() *Reference {
	return NewReference(map[string]string{overdueQ: overdueCode, shortQ: shortCode}, session.O200kBase)
}

// render is the request of protocol p for question q after the cells of
// this run so far.
func render(t *testing.T, p session.Protocol, q string, cells ...session.Cell) session.Request {
	t.Helper()
	req, err := session.Render(p, session.Input{
		Transcript: session.Transcript{Cells: []session.Cell{{Code: "tasks = load('tasks')"}, {Code: "len(tasks)"}}},
		Skill:      "data/tasks.jsonl holds the tasks.",
		Question:   q,
		New:        cells,
	})
	require.NoError(t, err)
	return req
}

func TestReferenceProtocols(t *testing.T) {
	args := `{"code":"n = sum(1 for t in tasks if t['due'] < today)\nANSWER(n)\n"}`
	tests := []struct {
		protocol  session.Protocol
		content   string
		toolCalls []session.ToolCall
		finish    string
	}{
		{session.Bare, overdueCode, nil, "stop"},
		{session.Eval, "", []session.ToolCall{{ID: "ref_1", Name: "eval", Arguments: args}}, "tool_calls"},
		{session.TranscriptText, "```python\nn = sum(1 for t in tasks if t['due'] < today)\nANSWER(n)\n```", nil, "stop"},
		{session.CLI, "", []session.ToolCall{{ID: "ref_1", Name: "bash", Arguments: bashArgs(CLICommand(overdueCode))}}, "tool_calls"},
	}
	m := newTestReference()
	for _, tt := range tests {
		t.Run(string(tt.protocol), func(t *testing.T) {
			req := render(t, tt.protocol, overdueQ)
			reply, err := m.Complete(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tt.content, reply.Content)
			assert.Equal(t, tt.toolCalls, reply.ToolCalls)
			assert.Equal(t, tt.finish, reply.FinishReason)

			prompt, err := session.CountRequest(session.O200kBase, req)
			require.NoError(t, err)
			assert.Equal(t, prompt, reply.RequestTokens)
			assert.Equal(t, prompt, reply.Usage.PromptTokens)
			assert.True(t, reply.Usage.Estimated)
			assert.Positive(t, reply.Usage.CompletionTokens)
			assert.Equal(t, 1, reply.Attempts)
			assert.Zero(t, reply.Waited)
			assert.Positive(t, reply.Latency)
		})
	}
}

func bashArgs(command string) string {
	args, err := jsonArguments(map[string]string{"command": command})
	if err != nil {
		panic(err)
	}
	return args
}

// TestReferenceCLI: in condition A the reference model makes one bash
// call that runs the solution, then copies the ANSWER line of its result
// into its final message.
func TestReferenceCLI(t *testing.T) {
	m := newTestReference()
	command := CLICommand(overdueCode)
	ran := func(output string) session.Cell {
		return session.Cell{Code: command, From: session.FromModel,
			Call:   &session.ToolCall{ID: "ref_1", Name: "bash", Arguments: bashArgs(command)},
			Result: kernelResult(output), After: []string{"exit status 0"}}
	}
	t.Run("the call", func(t *testing.T) {
		reply, err := m.Complete(context.Background(), render(t, session.CLI, overdueQ))
		require.NoError(t, err)
		require.Len(t, reply.ToolCalls, 1)
		assert.Equal(t, "bash", reply.ToolCalls[0].Name)
		assert.Empty(t, reply.Content)
		assert.True(t, strings.HasPrefix(command, "python3 -c '"), command)
	})
	t.Run("the answer copied from the output", func(t *testing.T) {
		reply, err := m.Complete(context.Background(), render(t, session.CLI, overdueQ, ran("checking\nANSWER: 17\n")))
		require.NoError(t, err)
		assert.Equal(t, "ANSWER: 17", reply.Content)
		assert.Empty(t, reply.ToolCalls)
		assert.Equal(t, "stop", reply.FinishReason)
	})
	t.Run("no answer in the output", func(t *testing.T) {
		reply, err := m.Complete(context.Background(), render(t, session.CLI, overdueQ, ran("Traceback ...\nNameError: name 'today' is not defined\n")))
		require.NoError(t, err)
		assert.Equal(t, referenceCLINoAnswerText, reply.Content)
		assert.NotContains(t, reply.Content, "ANSWER:")
	})
}

// TestCLICommandRunsInSh runs the command the reference model sends
// through /bin/sh and python3: quotes, backslashes and newlines of the
// solution survive, and the shim prints the answer's JSON.
func TestCLICommandRunsInSh(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.SkipOrFail(t, "no python3 on PATH: %v", err)
	}
	code := "names = ['O\\'Brien', \"it's\", 'a\\\\b', 'Équipe']\nprint('before')\nANSWER(sorted(names))\nprint('never')\n"
	out, err := exec.Command("/bin/sh", "-c", CLICommand(code)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "before\n"+`ANSWER: ["O'Brien", "a\\b", "it's", "Équipe"]`+"\n", string(out))
}

func TestReferenceUsageCountsTheReply(t *testing.T) {
	m := newTestReference()
	reply, err := m.Complete(context.Background(), render(t, session.Bare, overdueQ))
	require.NoError(t, err)
	want, err := session.CountTokens(session.O200kBase, overdueCode)
	require.NoError(t, err)
	assert.Equal(t, want, reply.Usage.CompletionTokens)

	reply, err = m.Complete(context.Background(), render(t, session.Eval, overdueQ))
	require.NoError(t, err)
	call := reply.ToolCalls[0]
	want, err = session.CountTokens(session.O200kBase, call.Name+call.Arguments)
	require.NoError(t, err)
	assert.Equal(t, want, reply.Usage.CompletionTokens)
}

func TestReferenceUnknownQuestion(t *testing.T) {
	m := newTestReference()
	for _, p := range []session.Protocol{session.Bare, session.Eval, session.TranscriptText, session.CLI} {
		t.Run(string(p), func(t *testing.T) {
			reply, err := m.Complete(context.Background(), render(t, p, "Which project has the most events?"))
			require.NoError(t, err)
			assert.Equal(t, referenceUnknownText, reply.Content)
			assert.Contains(t, reply.Content, "`ctxcode tasks --data DIR`")
			assert.Empty(t, reply.ToolCalls)
			assert.True(t, reply.Usage.Estimated)
		})
	}
}

func TestReferenceAlreadyPlayed(t *testing.T) {
	m := newTestReference()
	played := session.Cell{Code: overdueCode, From: session.FromModel}
	for _, p := range []session.Protocol{session.Bare, session.Eval} {
		t.Run(string(p), func(t *testing.T) {
			reply, err := m.Complete(context.Background(), render(t, p, overdueQ, played))
			require.NoError(t, err)
			assert.Equal(t, referencePlayedText, reply.Content)
			assert.Empty(t, reply.ToolCalls)
			assert.NotContains(t, reply.Content, "ANSWER")
		})
	}
	t.Run("the prefix is not the model's move", func(t *testing.T) {
		// A solution that happens to equal a prefix cell still gets played.
		m := NewReference(map[string]string{overdueQ: "len(tasks)"}, "")
		reply, err := m.Complete(context.Background(), render(t, session.Bare, overdueQ))
		require.NoError(t, err)
		assert.Equal(t, "len(tasks)", reply.Content)
	})
}

func TestReferenceCallIDsCount(t *testing.T) {
	// Another cell ran first (say, after a restart): the id follows it.
	req := render(t, session.Eval, overdueQ, session.Cell{Code: "print(1)", From: session.FromModel})
	reply, err := newTestReference().Complete(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, reply.ToolCalls, 1)
	assert.Equal(t, "ref_2", reply.ToolCalls[0].ID, "one call of this run before it; the prefix's calls do not count")
}

func TestReferenceFindsQuestions(t *testing.T) {
	m := newTestReference()
	t.Run("the transcript's question line", func(t *testing.T) {
		req := render(t, session.TranscriptText, shortQ)
		reply, err := m.Complete(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, "```python\n"+shortCode+"\n```", reply.Content)
	})
	t.Run("a question inside a longer message, longest match first", func(t *testing.T) {
		req := session.Request{Protocol: session.Bare, Messages: []session.Message{
			{Role: "user", Content: "Please answer this: " + overdueQ + " Thanks."},
		}}
		reply, err := m.Complete(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, overdueCode, reply.Content, "not the solution of the shorter question it contains")
	})
	t.Run("surrounding space", func(t *testing.T) {
		m := NewReference(map[string]string{"  " + shortQ + "\n": shortCode}, "")
		reply, err := m.Complete(context.Background(), render(t, session.Bare, shortQ+"\n"))
		require.NoError(t, err)
		assert.Equal(t, shortCode, reply.Content)
	})
}

func TestReferenceName(t *testing.T) {
	var m Model = newTestReference()
	assert.Equal(t, "reference", m.Name())
}

func TestReferenceCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newTestReference().Complete(ctx, render(t, session.Bare, overdueQ))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestReferenceRepliesAreDeterministic(t *testing.T) {
	m := newTestReference()
	req := render(t, session.Eval, overdueQ)
	a, err := m.Complete(context.Background(), req)
	require.NoError(t, err)
	b, err := m.Complete(context.Background(), req)
	require.NoError(t, err)
	a.Latency, b.Latency = 0, 0
	assert.Equal(t, a, b)
	assert.False(t, strings.Contains(a.ToolCalls[0].Arguments, `\u003c`), "arguments are JSON without HTML escapes")
	var args map[string]string
	require.NoError(t, json.Unmarshal([]byte(a.ToolCalls[0].Arguments), &args))
	assert.Equal(t, overdueCode, args["code"])
}

func TestReferenceUnknownProtocol(t *testing.T) {
	req := render(t, session.Bare, overdueQ)
	req.Protocol = "chat"
	reply, err := newTestReference().Complete(context.Background(), req)
	require.NoError(t, err)
	assert.Contains(t, reply.Content, `protocol "chat"`)
	assert.Empty(t, reply.ToolCalls)
}

// TestReferenceInAConversation: the reference model answers the question
// being answered, not the first one of the conversation; plays a solution
// again for a later stage that asks the same question; and drops the
// leading one-line bindings an earlier stage ran.
func TestReferenceInAConversation(t *testing.T) {
	const (
		teamQ    = "Which team is biggest?"
		teamCode = "from collections import Counter\nteam_of = {p['id']: p['team_id'] for p in projects}\nc = Counter(team_of[t['project_id']] for t in tasks)\nANSWER(c.most_common(1)[0][0])\n"
		openQ    = "Which team has most open tasks?"
		openCode = "from collections import Counter\nteam_of = {p['id']: p['team_id'] for p in projects}\nc = Counter(team_of[t['project_id']] for t in tasks if t['open'])\nANSWER(c.most_common(1)[0][0])\n"
	)
	m := NewReference(map[string]string{overdueQ: overdueCode, teamQ: teamCode, openQ: openCode}, session.O200kBase)
	ran := func(code string) session.Cell {
		return session.Cell{Code: code, From: session.FromModel, Result: kernel.Result{Status: kernel.StatusOK, Answer: []byte(`"x"`)}}
	}
	ask := func(p session.Protocol, earlier []session.Stage, q string) Reply {
		req, err := session.Render(p, session.Input{
			Transcript: session.Transcript{Cells: []session.Cell{{Code: "tasks = load('tasks')"}}},
			Earlier:    earlier, Question: q,
		})
		require.NoError(t, err)
		r, err := m.Complete(context.Background(), req)
		require.NoError(t, err)
		return r
	}
	first := []session.Stage{{Question: teamQ, Cells: []session.Cell{ran(teamCode)}}}
	assert.Equal(t, "c = Counter(team_of[t['project_id']] for t in tasks if t['open'])\nANSWER(c.most_common(1)[0][0])\n",
		ask(session.Bare, first, openQ).Content, "the import and team_of ran in the first stage: they are reused")
	assert.Equal(t, overdueCode, ask(session.Bare, first, overdueQ).Content, "nothing of it to reuse")
	assert.Equal(t, "ANSWER(c.most_common(1)[0][0])\n", ask(session.Bare, first, teamQ).Content,
		"the same question again: c is still bound to what it computed")

	// team_of bound again since: it is not reused, nor what follows it.
	rebound := append(first, session.Stage{Question: overdueQ, Cells: []session.Cell{ran("team_of = {}\nANSWER(0)")}})
	assert.Equal(t, openCode[len("from collections import Counter\n"):], ask(session.Bare, rebound, openQ).Content)

	// A restart since lost what was bound.
	restarted := []session.Stage{{Question: teamQ, Cells: []session.Cell{{Code: teamCode, Notes: []string{"the kernel died (x) and was restarted"}}}}}
	assert.Equal(t, openCode, ask(session.Bare, restarted, openQ).Content)

	// Eval reads the earlier calls' code; the transcript plays it whole.
	call := ask(session.Eval, first, openQ)
	require.Len(t, call.ToolCalls, 1)
	assert.NotContains(t, call.ToolCalls[0].Arguments, "team_of = ")
	assert.Contains(t, ask(session.TranscriptText, first, openQ).Content, "team_of = ")

	// A fold request gets the questions and answers it folds.
	fold := session.FoldRequest(session.Input{Earlier: []session.Stage{{Question: teamQ, Cells: []session.Cell{ran(teamCode)}}}, Question: openQ}, 2)
	r, err := m.Complete(context.Background(), fold)
	require.NoError(t, err)
	assert.Equal(t, "Question: "+teamQ+"\nANSWER: \"x\"", r.Content)
}
