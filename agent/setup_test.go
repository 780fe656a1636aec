package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
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

func parsePrefix(t *testing.T, src string) *prefixes.Prefix {
	t.Helper()
	p, err := prefixes.Parse("test.py", []byte(src))
	require.NoError(t, err)
	return p
}

func build(t *testing.T, p *prefixes.Prefix) []session.Cell {
	t.Helper()
	cells, err := prefixes.Build(context.Background(), kerneltest.Python(t, ""), p, kernel.ExecOptions{})
	require.NoError(t, err)
	return cells
}

// TestCachedPrefixSendsTheFirstRequestBeforeTheBuild: with cached cells,
// the first request goes out while the prefix builds. The proof is in the
// order: a prefix cell reads a FIFO that is written only when the server
// receives that request, so the build cannot end before the request came.
// The reply is used only after the live cells were found to be the
// cached ones.
func TestCachedPrefixSendsTheFirstRequestBeforeTheBuild(t *testing.T) {
	dir := gatetest.SharedDir(t)
	gate := filepath.Join(dir, "gate")
	require.NoError(t, os.WriteFile(gate, []byte("open\n"), 0o644))
	p := parsePrefix(t, "# %%\ngate = open("+strconv.Quote(gate)+").read().strip()\ngate\n# %%\nx = 41\n")
	cached := build(t, p) // the gate is a plain file here

	release := gatetest.FIFO(t, gate)
	srv := llmtest.NewServer(t, llmtest.Reply{Content: "ANSWER(x + 1)", Usage: &llmtest.Usage{Prompt: 300, Completion: 5}, OnRequest: release})
	s := &agent.Session{Kernel: kerneltest.Python(t, ""), Prefix: p, Cached: cached}
	out := run(t, s, openAI(t, srv), agent.Config{}, "What is x + 1?")

	res := out.res
	require.Equal(t, agent.Answered, res.Status, out.raw)
	assert.Equal(t, "42", res.Answer)
	assert.Equal(t, agent.CacheVerified, res.Cache)
	assert.Zero(t, res.Discarded)
	assert.Equal(t, 1, res.Turns)
	require.Len(t, res.Built, 2, "the live cells, for the caller to keep")
	assert.Equal(t, "'open'", res.Built[0].Result.Value)
	assert.Equal(t, []string{"run", "prefix", "call", "cell", "answer", "end"}, out.types())
	assert.Equal(t, "verified", out.events[1]["cached"])
}

// TestCachedPrefixThatDiffersIsSentAgain: a prefix whose output changes
// from build to build (a random number). The first request goes out over
// the cached output; the live build differs, so its reply (an answer that
// would end the run) is discarded unread, counted, and the request is sent
// again over the live output. No cell of the model ever ran over the
// stale output.
func TestCachedPrefixThatDiffersIsSentAgain(t *testing.T) {
	p := parsePrefix(t, "# %%\nimport random\nr = random.random()\nr\n")
	cached := build(t, p)
	stale := cached[0].Result.Value

	srv := llmtest.NewServer(t,
		llmtest.Reply{Content: "ANSWER('stale')", Usage: &llmtest.Usage{Prompt: 300, Completion: 5, Cached: 100}},
		llmtest.Reply{Content: "ANSWER(r)", Usage: &llmtest.Usage{Prompt: 310, Completion: 4}},
	)
	s := &agent.Session{Kernel: kerneltest.Python(t, ""), Prefix: p, Cached: cached}
	out := run(t, s, openAI(t, srv), agent.Config{}, "What is r?")

	res := out.res
	require.Equal(t, agent.Answered, res.Status, out.raw)
	live := res.Built[0].Result.Value
	require.NotEqual(t, stale, live)
	assert.Equal(t, live, res.Answer, "the answer came from the request over the live output")
	assert.Equal(t, agent.CacheStale, res.Cache)
	assert.Equal(t, 1, res.Discarded)
	assert.Equal(t, llm.Usage{PromptTokens: 300, CompletionTokens: 5, CachedTokens: 100}, res.DiscardedUsage)
	assert.Equal(t, llm.Usage{PromptTokens: 610, CompletionTokens: 9, CachedTokens: 100}, res.Usage, "the discarded call is in the cost")
	assert.Equal(t, 1, res.Turns, "turns count the calls the run used")

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[0].Body.Messages[2].Content, stale, "the first request was rendered over the cached cells")
	assert.Contains(t, reqs[1].Body.Messages[2].Content, live, "the second over the live ones")
	assert.NotContains(t, reqs[1].Body.Messages[2].Content, stale)

	assert.Equal(t, []string{"run", "prefix", "discarded", "call", "cell", "answer", "end"}, out.types())
	assert.Equal(t, "stale", out.events[1]["cached"])
	assert.Contains(t, out.events[2]["reason"], "prefix cell 1")
	assert.Equal(t, "ANSWER('stale')", out.events[2]["content"])
	assert.EqualValues(t, 1, out.events[len(out.events)-1]["discarded_calls"])
	cells := out.cells()
	require.Len(t, cells, 1, "the discarded reply never ran")
	assert.Equal(t, "ANSWER(r)", cells[0]["code"])
}

// TestConditionAStartsTheKernelWhileTheFirstRequestIsOut: condition A's
// first request needs no kernel, so it goes out before the kernel starts:
// Start waits for the server to have received it. The model's first bash
// call still runs in that kernel.
func TestConditionAStartsTheKernelWhileTheFirstRequestIsOut(t *testing.T) {
	arrived := make(chan struct{})
	srv := llmtest.NewServer(t,
		llmtest.Reply{ToolCalls: []session.ToolCall{bashCall("c1", "wc -l < data/teams.jsonl")},
			Usage: &llmtest.Usage{Prompt: 400, Completion: 20}, OnRequest: func() { close(arrived) }},
		llmtest.Text("ANSWER: 3", 450, 5),
	)
	python := kerneltest.FindPython(t)
	started := false
	s := &agent.Session{DataDir: pmDir, Start: func(ctx context.Context) (kernel.Kernel, error) {
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		started = true
		tr, err := kernel.NewLocalPython(python, false, kernel.LocalConfig{DataDir: pmDir})
		if err != nil {
			return nil, err
		}
		return kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
	}}
	out := run(t, s, openAI(t, srv), cliConfig, "How many teams are there?")
	require.NotNil(t, s.Kernel, "Run hands over the kernel Start made")
	t.Cleanup(func() { _ = s.Kernel.Close() })

	res := out.res
	require.Equal(t, agent.Answered, res.Status, out.raw)
	assert.True(t, started)
	assert.Equal(t, []string{"run", "prefix", "call", "cell", "call", "answer", "end"}, out.types())
	cells := out.cells()
	require.Len(t, cells, 1)
	assert.EqualValues(t, 0, cells[0]["exit_code"], "the bash call ran in the kernel Start made")
	assert.Empty(t, res.Cache, "no prefix, nothing cached")
}

// TestStartFailureIsTheRunsError: a kernel that will not start ends the
// run with Start's error, after the first call went out (condition A) or
// before it (a prefix with nothing cached).
func TestStartFailureIsTheRunsError(t *testing.T) {
	broken := errors.New("no daemon")
	start := func(context.Context) (kernel.Kernel, error) { return nil, broken }
	t.Run("cli", func(t *testing.T) {
		srv := llmtest.NewServer(t, llmtest.Text("ANSWER: 3", 400, 5))
		s := &agent.Session{DataDir: pmDir, Start: start}
		res, err := agent.Run(context.Background(), s, openAI(t, srv), cliConfig, agent.Info{Question: "q?"}, nil, nil)
		require.ErrorIs(t, err, broken)
		assert.Nil(t, s.Kernel)
		assert.Equal(t, 1, res.Turns, "the call went out, and its reply was never used")
		assert.Empty(t, res.Status)
	})
	t.Run("prefix", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		p := parsePrefix(t, "# %%\nx = 1\n")
		s := &agent.Session{Prefix: p, Start: start}
		_, err := agent.Run(context.Background(), s, openAI(t, srv), agent.Config{}, agent.Info{Question: "q?"}, nil, nil)
		require.ErrorIs(t, err, broken)
		assert.Empty(t, srv.Requests(), "without cached cells the request waits for the build")
	})
}

// TestCachedPrefixRunCancelledWhileBuilding: a run cancelled while its
// prefix builds returns at once with the context's error, and the kernel
// it started, for the caller to close.
func TestCachedPrefixRunCancelledWhileBuilding(t *testing.T) {
	dir := gatetest.SharedDir(t)
	gate := filepath.Join(dir, "gate")
	require.NoError(t, os.WriteFile(gate, []byte("open\n"), 0o644))
	p := parsePrefix(t, "# %%\ngate = open("+strconv.Quote(gate)+").read()\n")
	cached := build(t, p)
	gatetest.FIFO(t, gate) // never released: the build waits until cancelled

	ctx, cancel := context.WithCancel(context.Background())
	srv := llmtest.NewServer(t, llmtest.Reply{Content: "ANSWER(1)", Usage: &llmtest.Usage{Prompt: 300, Completion: 5}, OnRequest: cancel})
	python := kerneltest.FindPython(t)
	s := &agent.Session{Prefix: p, Cached: cached, Start: func(ctx context.Context) (kernel.Kernel, error) {
		tr, err := kernel.NewLocalPython(python, false, kernel.LocalConfig{})
		if err != nil {
			return nil, err
		}
		return kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
	}}
	_, err := agent.Run(ctx, s, openAI(t, srv), agent.Config{CellTimeout: time.Minute}, agent.Info{Question: "q?"}, nil, nil)
	require.ErrorIs(t, err, context.Canceled)
	if s.Kernel != nil {
		_ = s.Kernel.Close()
	}
}
