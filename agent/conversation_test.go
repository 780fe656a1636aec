package agent_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/internal/gatetest"
	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// TestConversationInterruptedCell: a stage cancelled while its cell runs
// (Ctrl-C in chat) keeps that cell in the history; the next stage restarts
// the kernel over the prefix, and the note saying so is on the interrupted
// cell, not on the cell before it, which ran to the end.
func TestConversationInterruptedCell(t *testing.T) {
	started := filepath.Join(gatetest.SharedDir(t), "started")
	release := gatetest.FIFO(t, started)
	long := "open(" + strconv.Quote(started) + ").read()\nimport time\ntime.sleep(600)"
	srv := llmtest.NewServer(t,
		llmtest.Text("x = 41\nx", 700, 5),
		llmtest.Text(long, 750, 10),
		llmtest.Text("ANSWER(len(tasks))", 800, 5),
	)
	s := pmSession(t, "pm")
	conv, err := agent.NewConversation(s, openAI(t, srv), agent.Config{CellTimeout: 10 * time.Minute}, agent.Info{Session: "s"}, nil, nil)
	require.NoError(t, err)

	// The cell has opened the gate's other end when release returns: it runs.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	released := make(chan struct{})
	go func() {
		defer close(released)
		release()
		cancel()
	}()
	_, err = conv.Ask(ctx, "First question?", "")
	require.ErrorIs(t, err, context.Canceled)
	<-released

	res, err := conv.Ask(context.Background(), "Second question?", "")
	require.NoError(t, err)
	require.Equal(t, agent.Answered, res.Status, res.Err)
	assert.Equal(t, "500", res.Answer, "the prefix ran again: tasks is back")

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	msgs := reqs[2].Body.Messages
	note := "[ctxcode: the user interrupted this cell, which stopped the kernel"
	var after []string // the message after each of the model's cells
	for i, m := range msgs[:len(msgs)-1] {
		if m.Role == "assistant" && (m.Content == "x = 41\nx" || m.Content == long) {
			after = append(after, msgs[i+1].Content)
		}
	}
	require.Len(t, after, 2, "both cells of the first stage are in the history")
	assert.NotContains(t, after[0], note, "the cell that ran to the end has no note")
	assert.Contains(t, after[0], "41")
	assert.Contains(t, after[1], note)
	assert.Contains(t, after[1], "what later cells bound is lost")
	assert.Equal(t, "Second question?", msgs[len(msgs)-1].Content)
}
