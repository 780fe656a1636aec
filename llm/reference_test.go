package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/session"
)

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
		{session.CLI, referenceCLIText, nil, "stop"},
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

func TestReferenceCLIReplyCarriesNoCode(t *testing.T) {
	reply, err := newTestReference().Complete(context.Background(), render(t, session.CLI, overdueQ))
	require.NoError(t, err)
	assert.NotContains(t, reply.Content, "ANSWER")
	assert.Contains(t, reply.Content, "bare, eval and transcript")
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
	for _, p := range []session.Protocol{session.Bare, session.Eval, session.TranscriptText} {
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
