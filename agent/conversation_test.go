package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/internal/gatetest"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// converse asks the questions one after another in one conversation over
// s, and returns the results and the trajectory as read back.
func converse(t *testing.T, s *agent.Session, srv *llmtest.Server, cfg agent.Config, questions ...string) ([]*agent.Result, *session.TrajectoryLog) {
	t.Helper()
	var buf bytes.Buffer
	tr := agent.NewTrajectory(&buf)
	m := openAI(t, srv)
	c, err := agent.NewConversation(s, m, cfg, agent.Info{Model: m.Name(), Session: "s1"}, tr, nil)
	require.NoError(t, err)
	var out []*agent.Result
	for i, q := range questions {
		res, err := c.Ask(context.Background(), q, fmt.Sprintf("t%d", i+1))
		require.NoError(t, err)
		out = append(out, res)
	}
	assert.Equal(t, len(questions), c.Stages())
	require.NoError(t, tr.Err())
	l, err := session.ReadTrajectory(strings.NewReader(buf.String()))
	require.NoError(t, err)
	assert.Empty(t, l.Skipped, "every field the agent writes is in the schema")
	return out, l
}

func TestConversationLaterQuestionsUseEarlierCells(t *testing.T) {
	q1, q2, q3 := "Which statuses are there?", "How many tasks are blocked?", "What is the first status, in order?"
	srv := llmtest.NewServer(t,
		llmtest.Text("top = sorted({t['status'] for t in tasks})\nANSWER(top)", 700, 20),
		llmtest.Text("ANSWER(sum(1 for t in tasks if t['status'] == 'blocked'))", 800, 20),
		llmtest.Text("ANSWER(top[0])", 900, 5),
	)
	s := pmSession(t, "pm")
	res, l := converse(t, s, srv, agent.Config{}, q1, q2, q3)
	for i, r := range res {
		assert.Equal(t, agent.Answered, r.Status, "stage %d: %v", i+1, r.Err)
		assert.Equal(t, agent.Executed, r.AnswerSource)
		assert.Equal(t, 1, r.Turns)
	}
	assert.Contains(t, res[0].Answer, `"blocked"`)
	var top []string
	require.NoError(t, json.Unmarshal([]byte(res[0].Answer), &top))
	assert.Equal(t, fmt.Sprintf("%q", top[0]), res[2].Answer, "the third question used what the first bound")

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	third := reqs[2].Body.Messages
	var users []string
	for _, m := range third {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	assert.Contains(t, users, q1)
	assert.Contains(t, users, q2)
	assert.Equal(t, q3, third[len(third)-1].Content, "the question being answered comes last")
	assert.Equal(t, len(reqs[1].Body.Messages)+3, len(third), "the second stage added its cell (2 messages) and the third its question")
	for i := range reqs[1].Body.Messages {
		assert.Equal(t, reqs[1].Body.Messages[i], third[i], "the history is replayed byte for byte (message %d)", i)
	}

	runs := l.Runs()
	require.Len(t, runs, 3, "each question is a run of its own")
	for i, r := range runs {
		assert.Equal(t, "s1", r.Run.Session)
		assert.Equal(t, i+1, r.Run.Stage)
		require.NotNil(t, r.End)
		assert.Equal(t, "answered", r.End.Status)
	}
	assert.NotNil(t, runs[0].Prefix, "the prefix event comes with the first stage")
	assert.Nil(t, runs[1].Prefix)
	assert.Positive(t, runs[0].End.ToolResultBytes)
}

// bigCell prints n numbers (about 6n characters of many tokens, cut at
// the output budget), then answers n.
func bigCell(n int) string {
	return fmt.Sprintf("print(' '.join(str(i * 7919 %% 100003) for i in range(%d)))\nANSWER(%d)", n, n)
}

func TestConversationElisionKeepsRequestsUnderTheWindow(t *testing.T) {
	const stages, window = 10, 4000
	peak := func(policy session.Policy) ([]*agent.Result, []llmtest.Request) {
		var replies []llmtest.Reply
		for i := range stages {
			replies = append(replies, llmtest.Text(bigCell(500+i), 0, 0))
		}
		srv := llmtest.NewServer(t, replies...)
		var qs []string
		for i := range stages {
			qs = append(qs, fmt.Sprintf("Question %d: print some numbers.", i+1))
		}
		res, _ := converse(t, pmSession(t, "pm"), srv, agent.Config{Context: session.Context{Policy: policy, Window: window}}, qs...)
		return res, srv.Requests()
	}
	none, _ := peak(session.PolicyNone)
	elide, reqs := peak(session.PolicyElide)
	maxNone, maxElide := 0, 0
	for i := range stages {
		assert.Equal(t, agent.Answered, none[i].Status)
		assert.Equal(t, agent.Answered, elide[i].Status, "stage %d is still answered", i+1)
		assert.Equal(t, fmt.Sprint(500+i), elide[i].Answer)
		maxNone = max(maxNone, none[i].PeakRequestTokens)
		maxElide = max(maxElide, elide[i].PeakRequestTokens)
	}
	t.Logf("largest request: %d tokens without a policy, %d with elision (window %d)", maxNone, maxElide, window)
	assert.Greater(t, maxNone, window, "without a policy the history outgrows the window")
	assert.LessOrEqual(t, maxElide, window, "elision keeps every request within the window")
	assert.Positive(t, elide[stages-1].Elided)
	last := reqs[len(reqs)-1].Body.Messages
	stubs := 0
	for _, m := range last {
		if strings.Contains(m.Content, "output elided to save context") {
			stubs++
			assert.Contains(t, m.Content, "_stdout[", "a stub says where the full output still is")
		}
	}
	assert.Equal(t, elide[stages-1].Elided, stubs)
	assert.NotContains(t, last[len(last)-1].Content, "elided", "the question is never touched")
}

func TestConversationSummaryFolds(t *testing.T) {
	const window = 2500
	// A model that answers fold requests with a summary and cells with a
	// big output, so that the history passes the hard threshold.
	var qs []string
	for i := range 6 {
		qs = append(qs, fmt.Sprintf("Stage %d: print some numbers.", i+1))
	}
	m := &foldingModel{}
	var buf bytes.Buffer
	tr := agent.NewTrajectory(&buf)
	c, err := agent.NewConversation(pmSession(t, "pm"), m, agent.Config{Context: session.Context{Policy: session.PolicySummarize, Window: window}},
		agent.Info{Model: "folding", Session: "s1"}, tr, nil)
	require.NoError(t, err)
	folds, turns := 0, 0
	var usage int
	for i, q := range qs {
		res, err := c.Ask(context.Background(), q, "")
		require.NoError(t, err)
		assert.Equal(t, agent.Answered, res.Status, "stage %d", i+1)
		folds += res.Folds
		turns += res.Turns
		usage += res.Usage.PromptTokens
	}
	t.Logf("%d folds over %d turns", folds, turns)
	require.Positive(t, folds, "the history passed the hard threshold")
	assert.Equal(t, folds, m.folds, "one call per fold")
	assert.Equal(t, turns, m.turns)
	assert.Equal(t, m.prompt, usage, "the folds' tokens are counted")

	l, err := session.ReadTrajectory(&buf)
	require.NoError(t, err)
	foldEvents := 0
	for _, e := range l.Events {
		if e.Call != nil && e.Call.Fold {
			foldEvents++
			assert.Positive(t, e.Call.Folded)
			assert.Contains(t, e.Call.Content, "summary")
		}
	}
	assert.Equal(t, folds, foldEvents)
	summary, _ := c.History()
	assert.Contains(t, summary, "summary", "the history keeps the last summary")
	assert.NotEmpty(t, m.lastTurn, "turns were made after a fold")
	assert.Contains(t, m.lastTurn, "were folded into this summary", "the request after a fold shows the summary")
	assert.Equal(t, qs[len(qs)-1], m.lastQuestion, "the question is never folded")
}

// foldingModel answers a fold request with a summary and any other request
// with a cell that prints 1200 characters and answers; it counts its calls
// and the prompt tokens it reports (the request's count).
type foldingModel struct {
	folds, turns, prompt   int
	lastTurn, lastQuestion string
}

func (m *foldingModel) Name() string { return "folding" }

func (m *foldingModel) Complete(_ context.Context, req session.Request) (llm.Reply, error) {
	n, err := session.CountRequest(session.O200kBase, req)
	if err != nil {
		return llm.Reply{}, err
	}
	m.prompt += n
	reply := llm.Reply{FinishReason: "stop", Attempts: 1, Usage: llm.Usage{PromptTokens: n, CompletionTokens: 10}}
	if req.Protocol == session.Summary {
		m.folds++
		assert.Empty(nil, req.Tools)
		reply.Content = fmt.Sprintf("summary %d of the earlier stages", m.folds)
		return reply, nil
	}
	m.turns++
	var all strings.Builder
	for _, msg := range req.Messages {
		all.WriteString(msg.Content + "\n")
	}
	if m.folds > 0 {
		m.lastTurn = all.String()
	}
	m.lastQuestion = req.Messages[req.Asked].Content
	reply.Content = bigCell(300 + m.turns)
	return reply, nil
}

func TestConversationInterruptKeepsTheNamespace(t *testing.T) {
	fifo := filepath.Join(gatetest.SharedDir(t), "started")
	require.NoError(t, syscall.Mkfifo(fifo, 0o666))
	require.NoError(t, os.Chmod(fifo, 0o666))
	srv := llmtest.NewServer(t,
		llmtest.Text("partial = len(tasks)\nwith open("+strconv.Quote(fifo)+", 'w') as f: f.write('in')\nimport time\ntime.sleep(300)", 700, 20),
		llmtest.Text("ANSWER(partial)", 800, 5),
	)
	s := pmSession(t, "pm")
	m := openAI(t, srv)
	var buf bytes.Buffer
	c, err := agent.NewConversation(s, m, agent.Config{CellTimeout: 10 * time.Minute}, agent.Info{Model: m.Name(), Session: "chat"}, agent.NewTrajectory(&buf), nil)
	require.NoError(t, err)
	assert.False(t, c.Interrupt(), "nothing runs yet")

	type out struct {
		res *agent.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := c.Ask(context.Background(), "How many tasks?", "")
		done <- out{res, err}
	}()
	b, err := os.ReadFile(fifo) // the cell is running
	require.NoError(t, err)
	require.Equal(t, "in", string(b))
	require.True(t, c.Interrupt())
	first := <-done
	require.NoError(t, first.err)
	assert.Equal(t, agent.Interrupted, first.res.Status)
	assert.Equal(t, 1, first.res.Turns, "no model call after the interrupt")
	require.Len(t, first.res.Cells, 1)
	assert.Equal(t, "CellInterrupted", first.res.Cells[0].Result.Error.Name)

	second, err := c.Ask(context.Background(), "And now?", "")
	require.NoError(t, err)
	assert.Equal(t, agent.Answered, second.Status)
	var n int
	require.NoError(t, json.Unmarshal([]byte(second.Answer), &n))
	assert.Positive(t, n, "what the interrupted cell bound is still bound")
	assert.Zero(t, second.Restarts)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[1].Body.Messages[len(reqs[1].Body.Messages)-2].Content, "CellInterrupted",
		"the model reads that its cell was interrupted")
}

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

// TestConversationCancelledInSetUp: a stage cancelled while its kernel was
// being set up leaves a kernel without the prefix; the next stage builds it
// and answers (the chat goes on).
func TestConversationCancelledInSetUp(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Text("ANSWER(len(tasks))", 800, 5))
	p, err := prefixes.Load("pm")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	s := &agent.Session{Prefix: p, Start: func(context.Context) (kernel.Kernel, error) {
		k := kerneltest.Python(t, pmDir)
		cancel() // the user's Ctrl-C, as the kernel has started and the prefix is to be built
		return k, nil
	}}
	c, err := agent.NewConversation(s, openAI(t, srv), agent.Config{}, agent.Info{Session: "chat"}, nil, nil)
	require.NoError(t, err)
	_, err = c.Ask(ctx, "How many tasks?", "")
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, s.Kernel, "the kernel it started is the session's, to close")

	res, err := c.Ask(context.Background(), "How many tasks, then?", "")
	require.NoError(t, err)
	assert.Equal(t, agent.Answered, res.Status, "%v", res.Err)
	assert.Equal(t, "500", res.Answer, "the prefix was built before the second question")
	assert.NotEmpty(t, s.Cells)
}
