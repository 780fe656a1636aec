package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
)

// This file is ctxcode chat's engine: questions asked one after another in
// one live session (agent.Conversation) over the set-up of an ask (the
// data, the prefix, the transcript cache, the model and the sandbox). The
// kernel starts with the first question and lives until Close, so a later
// question can use what an earlier cell bound. The command reads lines and
// Ctrl-C; everything else is here.

// PrepareChat is PrepareAsk for a chat: cfg has no Question nor Task (each
// question comes to Chat.Ask), and its rung is a loop over a prefix (B, B0
// or D). Bad input is an *InputError, found before any kernel starts.
func PrepareChat(ctx context.Context, cfg AskConfig, warn io.Writer) (*AskSetup, error) {
	if cfg.Question != "" || cfg.Task != "" {
		return nil, errors.New("bench.PrepareChat: the questions of a chat come to Chat.Ask, not AskConfig")
	}
	if err := CheckChatRung(cfg.Rung); err != nil {
		return nil, err
	}
	if err := cfg.Agent.Context.Check(); err != nil {
		return nil, inputErrorf("--context: %v", err)
	}
	return prepare(ctx, cfg, warn)
}

// CheckChatRung refuses a rung a chat cannot ask in (an *InputError): the
// one shot (C) and condition A, which has no prefix.
func CheckChatRung(r agent.Rung) error {
	switch {
	case r.Mode != agent.Loop:
		return inputErrorf("--condition %s is the one shot: one code block, run once, answers one question; "+
			"chat asks in the loop: condition B or D (the default)", r.Name)
	case r.Prefix == agent.PrefixNone:
		return inputErrorf("--condition %s runs without a prefix, and nothing it binds outlives a command; "+
			"chat keeps one live session over a prefix: condition B or D (the default)", r.Name)
	}
	return nil
}

// QuestionError is a question a chat did not ask, and why; the chat goes
// on.
type QuestionError struct{ Msg string }

func (e *QuestionError) Error() string { return e.Msg }

// Chat is one live session over an AskSetup: one kernel, one namespace
// and one conversation for all its questions. It is not safe for
// concurrent use: ask one question at a time, then Close it.
type Chat struct {
	s      *AskSetup
	sess   *agent.Session
	conv   *agent.Conversation
	traj   *agent.Trajectory
	key    prefixes.CacheKey
	totals ChatTotals
}

// Chat opens the session of a prepared chat (PrepareChat). traj (nil for
// none) gets each question's run as a stage of session "chat"; obs (nil
// for none) the progress. No kernel starts before the first question.
func (s *AskSetup) Chat(traj *agent.Trajectory, obs agent.Observer) (*Chat, error) {
	cfg := s.cfg.Agent
	cfg.Protocol = s.cfg.Rung.Protocol
	info := agent.Info{Model: s.model.Name(), BaseURL: s.cfg.BaseURL, Session: "chat"}
	if s.manifest != nil {
		info.Data = s.manifest
	}
	key, cached := s.cache.lookup(s.prefix, s.warn)
	sess := &agent.Session{Start: s.kern.ready, Prefix: s.prefix, Cached: cached}
	conv, err := agent.NewConversation(sess, s.model, cfg, info, traj, obs)
	if err != nil {
		return nil, err
	}
	return &Chat{s: s, sess: sess, conv: conv, traj: traj, key: key}, nil
}

// Ask asks question as the next stage of the chat and grades it when it is
// a built-in task's question. Failures of the model, the kernel or the
// budgets are the result's Run.Status. The error is a cancelled context
// (the chat goes on: a cell that ran is killed, and the next question
// restarts the kernel over the prefix and tells the model), a question the
// reference model cannot play (a *QuestionError; nothing was asked), or a
// kernel that could not start or a prefix that does not build (the chat
// cannot go on). The totals count what an interrupted question used too.
func (c *Chat) Ask(ctx context.Context, question string) (*AskResult, error) {
	s := c.s
	question = strings.TrimSpace(question)
	task := taskAsked(s.tasks, question)
	if s.cfg.Reference && task == nil {
		return nil, &QuestionError{Msg: "the reference model plays only the built-in tasks, and this question is not one of them: " +
			"ask one of those (list them with: ctxcode tasks --data " + s.cfg.DataDir + "), or use a real model; the chat goes on"}
	}
	taskID := ""
	if task != nil {
		taskID = task.ID
	}
	res, err := c.conv.Ask(ctx, question, taskID)
	c.totals.Questions++
	if res != nil {
		c.totals.add(res)
		s.cache.keep(c.key, s.prefix, c.sess.Kernel, res, s.warn)
	}
	if err != nil {
		var be *prefixes.BuildError
		if errors.As(err, &be) {
			return nil, &InputError{Msg: err.Error()}
		}
		return nil, err
	}
	out := &AskResult{Question: question, Task: task, Rung: s.cfg.Rung, Prefix: s.prefix, Run: res, Stage: c.conv.Stages()}
	if res.Built != nil {
		out.Cache = s.cache.state(s.prefix, res) // the question that built the prefix
	}
	out.InitTime, s.initTime = s.initTime, 0
	c.totals.Wall += out.InitTime
	if task != nil {
		grade(task, res, c.traj)
	}
	return out, nil
}

// Interrupt stops the question Ask is running, from another goroutine
// (agent.Conversation.Interrupt): a running Python cell is interrupted in
// the kernel, which keeps its namespace, and Ask returns with status
// interrupted. False when that cannot be done (a model call, a cell that
// takes no interrupt): cancel Ask's context then.
func (c *Chat) Interrupt() bool { return c.conv.Interrupt() }

// Totals is what the chat used so far.
func (c *Chat) Totals() ChatTotals { return c.totals }

// Close ends the session: the kernel (its container or process) is closed.
// It may be called more than once.
func (c *Chat) Close() { c.s.Close() }

// taskAsked is the built-in task whose question is q, or nil.
func taskAsked(tasks []datasets.Task, q string) *datasets.Task {
	for i := range tasks {
		if strings.TrimSpace(tasks[i].Question) == q {
			return &tasks[i]
		}
	}
	return nil
}

// ChatTotals is what a chat used over its questions, interrupted ones
// included.
type ChatTotals struct {
	Questions int
	// Calls counts the model calls: the turns, the calls discarded over a
	// stale cached prefix, and the context policy's summary calls.
	Calls int
	// Usage sums the calls' tokens.
	Usage llm.Usage
	// Wall sums the questions' wall times.
	Wall time.Duration
}

func (t *ChatTotals) add(res *agent.Result) {
	t.Calls += res.Turns + res.Discarded + res.Folds
	t.Usage.Add(res.Usage)
	t.Wall += res.Wall
}

// String is the totals as the line chat prints after each answer.
func (t ChatTotals) String() string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	est := ""
	if t.Usage.Estimated {
		est = " (estimated)"
	}
	return fmt.Sprintf("[session: %s, %s, %d input tokens, %d output tokens, %d cached, %.2fs%s]",
		plural(t.Questions, "question", "questions"), plural(t.Calls, "call", "calls"),
		t.Usage.PromptTokens, t.Usage.CompletionTokens, t.Usage.CachedTokens, t.Wall.Seconds(), est)
}

// Record is the totals as a JSON object (chat --json).
func (t ChatTotals) Record() map[string]any {
	return map[string]any{
		"questions":      t.Questions,
		"calls":          t.Calls,
		"context_tokens": t.Usage.PromptTokens,
		"output_tokens":  t.Usage.CompletionTokens,
		"cached_tokens":  t.Usage.CachedTokens,
		"wall_ms":        t.Wall.Milliseconds(),
		"estimated":      t.Usage.Estimated,
	}
}
