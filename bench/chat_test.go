package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
)

// TestChatReference: prepared without flags, a chat asks built-in tasks'
// questions one after another in one kernel with the reference model;
// each is graded, the first builds the prefix (a cache miss, its set-up in
// the cost line) and the later ones run in the kernel the chat kept; the
// totals are the sums of the questions' figures. A question the reference
// model cannot play is refused without a call, and the chat goes on.
func TestChatReference(t *testing.T) {
	dir, tasks := askData(t)
	var warn strings.Builder
	cfg := AskConfig{DataDir: dir, Rung: rung(t, "D"), Reference: true, Agent: agent.DefaultConfig(), Sandbox: askLocal(t), CacheDir: t.TempDir()}
	s, err := PrepareChat(context.Background(), cfg, &warn)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	chat, err := s.Chat(nil, nil)
	require.NoError(t, err)
	t.Cleanup(chat.Close)

	var calls, prompt, output int
	for i, task := range []int{0, 3, 6} {
		res, err := chat.Ask(context.Background(), tasks[task].Question)
		require.NoError(t, err, warn.String())
		require.Equal(t, agent.Answered, res.Run.Status, "question %d: %v", i, res.Run.Err)
		assert.Equal(t, tasks[task].ID, res.Task.ID)
		assert.True(t, res.Run.Grade.Accurate(), "question %d: %s", i, res.Run.Grade.Reason)
		assert.Equal(t, i+1, res.Stage)
		if i == 0 {
			assert.Equal(t, "miss", res.Cache)
			assert.Contains(t, res.CostLine(), "kernel and prefix")
		} else {
			assert.Empty(t, res.Cache, "question %d built nothing", i)
			assert.Contains(t, res.CostLine(), "in the session's kernel")
		}
		calls += res.Run.Turns
		prompt += res.Run.Usage.PromptTokens
		output += res.Run.Usage.CompletionTokens
	}
	_, err = chat.Ask(context.Background(), "What is the meaning of life?")
	var qe *QuestionError
	require.ErrorAs(t, err, &qe)
	assert.Contains(t, qe.Msg, "plays only the built-in tasks")

	tot := chat.Totals()
	assert.Equal(t, 3, tot.Questions, "the refused question is not counted")
	assert.Equal(t, calls, tot.Calls)
	assert.Equal(t, prompt, tot.Usage.PromptTokens)
	assert.Equal(t, output, tot.Usage.CompletionTokens)
	assert.Contains(t, tot.String(), "[session: 3 questions, 3 calls, ")
}

// TestPrepareChatRefuses: the rungs a chat cannot ask in, and questions
// given in the config, are refused before anything is read.
func TestPrepareChatRefuses(t *testing.T) {
	for _, name := range []string{"A", "C"} {
		_, err := PrepareChat(context.Background(), AskConfig{DataDir: t.TempDir(), Rung: rung(t, name), Reference: true}, nil)
		var ie *InputError
		require.ErrorAs(t, err, &ie, name)
		assert.Contains(t, ie.Msg, "--condition "+name)
	}
	_, err := PrepareChat(context.Background(), AskConfig{DataDir: t.TempDir(), Rung: rung(t, "D"), Reference: true, Question: "q?"}, nil)
	require.Error(t, err)
}
