package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// Conversation is one live session in which questions are asked one after
// another (ctxcode chat, a staged workload's session): one kernel, one
// namespace and one conversation for all of them. Each question is a stage
// and runs as Run runs one question, over the history of the stages before
// it (their questions and the cells they ran, as they ran), so a later
// question can use what an earlier cell bound. Each stage is a run of its
// own in the trajectory, with its session and stage number; the prefix
// event comes with the first. The context policy of Config.Context decides
// what of the history each request shows (session.Context).
//
// A stage cancelled while a cell ran (Ctrl-C in chat) killed the kernel:
// the next stage starts by restarting it and building the prefix again,
// and its first request says so in a note on the cancelled stage's last
// cell. A Conversation is not safe for concurrent use: ask one question at
// a time.
type Conversation struct {
	r      *runner
	info   Info
	staged bool // the runs carry session and stage numbers
	// stages is how many questions were asked; earlier and summary are the
	// history the next question is asked over.
	stages  int
	earlier []session.Stage
	summary string
	// cancelled says the last stage was cancelled: its kernel may be dead
	// (recover).
	cancelled bool
}

// NewConversation checks s as Run does and returns a conversation in it.
// info.Question and info.Task are ignored (each Ask gives its own);
// info.Session names the session in the trajectory. The caller closes the
// kernel (Session.Kernel, set once the first stage started it).
func NewConversation(s *Session, model llm.Model, cfg Config, info Info, tr *Trajectory, obs Observer) (*Conversation, error) {
	if err := cfg.Context.Check(); err != nil {
		return nil, err
	}
	c, err := newConversation(s, model, cfg, info, tr, obs)
	if err != nil {
		return nil, err
	}
	c.staged = true
	return c, nil
}

func newConversation(s *Session, model llm.Model, cfg Config, info Info, tr *Trajectory, obs Observer) (*Conversation, error) {
	cfg = cfg.withDefaults()
	r := &runner{s: s, model: model, cfg: cfg, tr: tr.writer(), obs: obs, res: &Result{}}
	if err := r.check(); err != nil {
		return nil, err
	}
	return &Conversation{r: r, info: info}, nil
}

// Ask asks question, of task ("" for none, as in chat), as the next stage,
// and returns what happened as Run does. The error is a cancelled context
// or a session that could not be set up; the conversation goes on after
// either (a cancelled stage stays in the history with the cells that ran).
func (c *Conversation) Ask(ctx context.Context, question, task string) (*Result, error) {
	if err := c.recover(ctx); err != nil {
		return nil, err
	}
	c.r.interrupted.Store(false)
	res, err := c.ask(ctx, question, task)
	if err != nil && ctx.Err() != nil {
		c.cancelled = true
	}
	return res, err
}

// Interrupt stops the stage Ask is running; call it from another
// goroutine (Ctrl-C in chat). During a Python cell it interrupts the
// kernel: the cell ends with an error, what it bound so far and the
// namespace stay, and the stage ends after it with status Interrupted, its
// cells kept in the history. Between cells the stage ends before its next
// model call. It reports whether the stage will end so; false when no cell
// is running (a model call is: only cancelling Ask's context stops it) or
// the kernel takes no interrupt (the Go kernel; condition A's bash). The
// caller then cancels the context, which during a cell kills the kernel:
// the next stage restarts it. A cell that ignores the interrupt (stuck in
// native code) runs on until its timeout; cancelling the context ends it.
func (c *Conversation) Interrupt() bool {
	r := c.r
	kp := r.running.Load()
	if kp == nil {
		return false
	}
	in, ok := (*kp).(interface{ Interrupt() error })
	if !ok {
		return false
	}
	r.interrupted.Store(true)
	if err := in.Interrupt(); err != nil {
		r.interrupted.Store(false)
		return false
	}
	return true
}

// SetMaxPromptTokens sets the prompt-token budget of the stages asked
// after it (Config.MaxPromptTokens, which otherwise bounds each stage on
// its own): a caller whose budget spans the session passes what is left of
// it before each stage. n below 1 is taken as 1, a budget no call fits.
func (c *Conversation) SetMaxPromptTokens(n int) { c.r.cfg.MaxPromptTokens = max(n, 1) }

// Stages is how many questions were asked.
func (c *Conversation) Stages() int { return c.stages }

// History is the conversation so far: the summary of folded turns ("" for
// none) and the stages since, each with the cells it ran.
func (c *Conversation) History() (string, []session.Stage) { return c.summary, c.earlier }

// recover, after a cancelled stage, makes sure the kernel lives and holds
// the prefix: a cancel kills a running cell with its kernel, and one
// during the kernel's start, the prefix's build or a restart leaves it
// dead or half-built. Such a kernel is restarted and the prefix built
// again, and a note on the last cell of the history tells the model what
// was lost.
func (c *Conversation) recover(ctx context.Context) error {
	if !c.cancelled {
		return nil
	}
	r, s := c.r, c.r.s
	killed := r.inCell
	if s.Kernel == nil {
		c.cancelled, r.inCell = false, false
		return nil // the next stage starts one
	}
	if !killed && (s.Prefix == nil || s.Cells != nil) && alive(ctx, s.Kernel) {
		c.cancelled = false
		return nil
	}
	r.progress("restarting the kernel")
	r.lastCode, r.lastCount, r.lastCall = "", 0, ""
	err := s.Kernel.Restart(ctx)
	var cells []session.Cell
	if err == nil && s.Prefix != nil {
		cells, err = prefixes.Build(ctx, s.Kernel, s.Prefix, r.execOptions())
	}
	cause := "the user interrupted the session while the kernel was starting or being restarted"
	if killed {
		cause = "the user interrupted a running cell"
	}
	r.tr.Restart(session.RestartEvent{Cause: cause, Error: errString(err)})
	if err != nil {
		return fmt.Errorf("restart the kernel after the interrupt: %w", err)
	}
	c.cancelled, r.inCell = false, false
	if s.Cells == nil {
		s.Cells = cells
	}
	note := "the user interrupted this cell, which stopped the kernel; it was restarted"
	if !killed {
		note = "the user interrupted the session after this cell, which stopped the kernel; it was restarted"
	}
	if s.Prefix != nil {
		note += fmt.Sprintf(" and the prefix ran again (%d cells), so what it bound is back", len(s.Prefix.Cells))
		if names := r.boundNames(ctx); names != "" {
			note += " (" + names + ")"
		}
		note += "; what later cells bound is lost: compute it again"
	}
	for i := len(c.earlier) - 1; i >= 0; i-- {
		st := &c.earlier[i]
		if k := len(st.Cells); k > 0 {
			cells := append([]session.Cell(nil), st.Cells...)
			cells[k-1].After = append(append([]string(nil), cells[k-1].After...), note)
			cells[k-1].Restarted = true
			st.Cells = cells
			break
		}
	}
	return nil
}

// alive says whether k answers (a kernel that can say: kernel.Client).
func alive(ctx context.Context, k kernel.Kernel) bool {
	p, ok := k.(interface {
		Ping(context.Context, time.Duration) error
	})
	return !ok || p.Ping(ctx, 30*time.Second) == nil
}

// fold makes the context policy's summary call over the first n turns of
// the history, counts it, and replaces the turns with the summary. ok is
// false when the run ended (the model failed: its status is set).
func (r *runner) fold(ctx context.Context, n int) (bool, error) {
	req := session.FoldRequest(r.in, n)
	estimate, err := session.CountRequest(r.cfg.Encoding, req)
	if err != nil {
		return false, err
	}
	if predicted := r.res.Usage.PromptTokens + estimate; predicted > r.cfg.MaxPromptTokens {
		r.res.Status = MaxPromptTokens
		r.res.Err = fmt.Errorf("folding the history (about %d tokens) would take the run past its budget of %d prompt tokens (%d used)",
			estimate, r.cfg.MaxPromptTokens, r.res.Usage.PromptTokens)
		return false, nil
	}
	r.progress("folding earlier turns into a summary")
	reply, err := r.model.Complete(ctx, req)
	r.res.Model += reply.Latency
	r.res.Waited += reply.Waited
	r.res.Retries += max(reply.Attempts-1, 0)
	r.res.Folds++
	r.res.PeakRequestTokens = max(r.res.PeakRequestTokens, estimate)
	ev := session.CallEvent{Turn: r.res.Turns, Messages: len(req.Messages), RequestTokens: estimate, LatencyMS: reply.Latency.Milliseconds(),
		Attempts: reply.Attempts, WaitedMS: reply.Waited.Milliseconds(), Fold: true, Folded: n}
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		ev.Error = err.Error()
		r.tr.Call(ev)
		r.res.Err = fmt.Errorf("fold the history into a summary: %w", err)
		r.res.Status = ModelFailed
		if errors.Is(err, llm.ErrContextLength) {
			r.res.Status = ContextLength
		}
		return false, nil
	}
	r.res.Usage.Add(reply.Usage)
	ev.Usage, ev.FinishReason, ev.Content = reply.Usage, reply.FinishReason, reply.Content
	r.tr.Call(ev)
	summary := strings.TrimSpace(reply.Content)
	if summary == "" {
		summary = "(the summary came back empty)"
	}
	r.in = session.Folded(r.in, n, summary)
	return true, nil
}

// render is the next request under the context policy, folding the
// history first when the policy says so; estimate is its count when the
// policy counted it (0 when not). ok is false when the run ended.
func (r *runner) render(ctx context.Context) (req session.Request, estimate int, ok bool, err error) {
	if r.cfg.Context.Policy == "" || r.cfg.Context.Policy == session.PolicyNone {
		req, err = session.Render(r.cfg.Protocol, r.in)
		return req, 0, err == nil, err
	}
	for {
		plan, err := r.cfg.Context.Plan(r.cfg.Encoding, r.cfg.Protocol, r.in)
		if err != nil {
			return req, 0, false, err
		}
		if plan.Fold == 0 {
			r.res.Elided = plan.Elided
			return plan.Request, plan.Tokens, true, nil
		}
		if ok, err := r.fold(ctx, plan.Fold); !ok || err != nil {
			return req, 0, false, err
		}
	}
}

// countOutput adds a cell output the model reads to the run's tool-result
// figures.
func (r *runner) countOutput(output string) {
	r.res.ToolResultBytes += len(output)
	if n, err := session.CountTokens(r.cfg.Encoding, output); err == nil {
		r.res.ToolResultTokens += n
	}
}

// stopped says the user interrupted the stage, and ends it so.
func (r *runner) stopped() bool {
	if !r.interrupted.Load() {
		return false
	}
	r.res.Status = Interrupted
	r.res.Err = errors.New("interrupted by the user")
	return true
}
