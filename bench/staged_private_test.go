package bench

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/session"
)

// failingCall plays the reference model except on its fail-th call, which
// fails as the OpenAI client does after its retries.
type failingCall struct {
	ref   llm.Model
	fail  int64
	calls atomic.Int64
}

func (m *failingCall) Name() string { return "failing" }

func (m *failingCall) Complete(ctx context.Context, req session.Request) (llm.Reply, error) {
	if m.calls.Add(1) == m.fail {
		return llm.Reply{Attempts: 1}, &llm.APIError{Status: 502, Message: "Bad gateway", Model: "gpt-x", BaseURL: "https://api.example.com/v1"}
	}
	return m.ref.Complete(ctx, req)
}

// TestSessionInfraRunsAgainWhole: a session whose second stage met an API
// failure stops there with class infra, and a resume runs it again from
// its first stage, as a second attempt.
func TestSessionInfraRunsAgainWhole(t *testing.T) {
	b := newBenchRun(t, 1, "D")
	var ids []string
	for _, task := range b.data.tasks {
		ids = append(ids, task.ID)
	}
	sessions := []Session{{Name: "sess", Tasks: ids}}
	b.spec.Sessions = sessions
	l := b.open(t)
	r := b.run(func(ref *llm.Reference) llm.Model { return &failingCall{ref: ref, fail: 2} }, nil)
	r.Sessions = sessions
	out, err := execute(t, context.Background(), r, l)
	require.NoError(t, err)
	require.Equal(t, 1, out.Total)
	require.Len(t, out.Final, 1)
	tr := out.Final[0]
	assert.Equal(t, Key{Model: llm.ReferenceName, Condition: "D", Task: "sess", Rep: 1}, tr.Key)
	assert.Equal(t, ClassInfra, tr.Class)
	require.Len(t, tr.Stages, 2, "the session stops at the failed stage")
	assert.True(t, tr.Stages[0].Correct)
	assert.Equal(t, agent.ModelFailed, tr.Stages[1].Status)
	assert.Equal(t, agent.ModelFailed, tr.Status, "the first stage that went wrong")
	assert.False(t, tr.Correct)
	assert.Contains(t, tr.Error, "502")

	require.NoError(t, l.Close())
	l = b.open(t)
	r = b.run(nil, nil)
	r.Sessions = sessions
	out, err = execute(t, context.Background(), r, l)
	require.NoError(t, err)
	assert.Equal(t, 1, out.Ran)
	tr = out.Final[0]
	assert.Equal(t, 2, tr.Attempt)
	assert.Equal(t, ClassModel, tr.Class)
	require.Len(t, tr.Stages, len(ids), "every stage, from the first")
	assert.True(t, tr.Correct)
	assert.Equal(t, agent.Answered, tr.Status)
}

func TestSpecUnitsListSessionsOnce(t *testing.T) {
	tasks := []datasets.Task{{ID: "a", Question: "qa?", Gold: 1}, {ID: "b", Question: "qb?", Gold: "x"}, {ID: "c", Question: "qc?", Gold: 2}, {ID: "d", Question: "qd?"}}
	s := Spec{TaskList: tasks}
	assert.Equal(t, tasks, s.Units(), "without sessions, the tasks")
	s.Sessions = []Session{{Name: "s1", Tasks: []string{"c", "a"}}}
	u := s.Units()
	require.Len(t, u, 3)
	assert.Equal(t, []string{"b", "s1", "d"}, []string{u[0].ID, u[1].ID, u[2].ID}, "a session sits where its first stage was")
	assert.Equal(t, "(1) qc? (2) qa?", u[1].Question)
	assert.Equal(t, []any{2, 1}, u[1].Gold)
}
