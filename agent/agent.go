// Package agent runs a model inside a live session until executed code
// answers the question.
//
// The bare loop (condition D): render the session in the bare protocol, ask
// the model, run its message as the next cell, append the cell's output as
// the next user message, and so on until executed code calls ANSWER(value).
// The eval loop (B, B0) is the same with one eval(code) tool. The one-shot
// mode (C) makes one request in the transcript protocol, runs the one code
// block of the reply once, and stops: no retry, no second call. The cli
// loop (A) has no prefix: a skill document describes the files, the model
// calls read(path, offset, limit) and bash(command) (served as cli.go
// says), and its final message "ANSWER: <value>" is the answer, stated.
//
// What the loop does for the model, always disclosed in a note that begins
// the cell's output:
//   - repairs of obvious mistakes: Markdown fences, prose around a single
//     code block, interpreter prompts. It never rewrites what code means.
//   - a cell identical to the last cell that ran is not run again; the note
//     points to its output.
//   - a message cut at the output-token limit, or an empty one, is said to
//     be so.
//   - a kernel that dies (out of memory, exit, hard timeout) is restarted,
//     the prefix is built again, and the note says what is bound again and
//     what was lost; at most MaxRestarts times per run. A death with no
//     restart left (one shot has none) ends the run as the model's result,
//     KernelDied; a restart that fails is the harness's, KernelFailed.
//
// The history holds each cell as it ran: after a repair, the next request
// holds the code that ran (in the eval loop, the model's call with the
// code that ran as its argument), the note begins its output, and the
// trajectory keeps the model's message verbatim (its call event).
//
// In B, B0, C and D, a message that is "ANSWER: <value>" in plain text
// ends the run too, but the answer is marked unexecuted: it did not come
// from code that ran.
// Every answer can be graded (Result.SetGrade); an unexecuted one never
// counts in accuracy.
// Budgets (turns, prompt tokens) end a run with their own status, never a
// crash. Everything is written to the Trajectory as it happens.
//
// A run may begin before its kernel is ready (Session.Start): its first
// request goes out while the kernel starts when it needs no kernel (cli)
// or has an earlier build of the prefix to be rendered over
// (Session.Cached). No cell runs before the live prefix is built and its
// request found byte for byte the one that was sent; a reply over cached
// outputs that turn out stale is discarded unread, counted, and the
// request sent again (setup.go).
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// Mode is how the model works: in a loop, or in one shot.
type Mode string

// Modes.
const (
	Loop    Mode = "loop"    // D: the bare completion loop
	OneShot Mode = "oneshot" // C: one request, one code block, run once
)

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Loop, OneShot:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown mode %q: expected loop or oneshot", s)
}

// Protocol is the protocol of the mode: bare for the loop, transcript for
// one shot.
func (m Mode) Protocol() session.Protocol {
	if m == OneShot {
		return session.TranscriptText
	}
	return session.Bare
}

// Config holds a run's budgets. The zero value of each field means its
// default.
type Config struct {
	// Protocol is bare (D, the default), eval (B, B0) or cli (A) for the
	// loop, and transcript (C) for one shot.
	Protocol session.Protocol
	// MaxTurns is the most model calls in a run; default 12.
	MaxTurns int
	// MaxPromptTokens is the most prompt tokens summed over the run's calls;
	// default 200,000. A call that would pass it is not made.
	MaxPromptTokens int
	// MaxOutputTokens is the model's limit per call, recorded here; the
	// model enforces it.
	MaxOutputTokens int
	// CellTimeout is the soft time limit of one cell, and of one bash
	// command in cli (its process group is killed at it); default 30 s.
	CellTimeout time.Duration
	// OutputBudget is how many characters of a cell's output the model
	// reads; default session.DefaultBudget, negative for no limit.
	OutputBudget int
	// MaxRestarts is how often a dead kernel is restarted in one run;
	// default 3, negative for never.
	MaxRestarts int
	// Encoding counts tokens for the prompt budget before a call.
	Encoding session.Encoding
	// Rules, when not nil, replaces the rules text the first message
	// starts with (session.Input.RulesText; "" for none): a condition
	// variant's (Rung.Rules). Nil keeps the protocol's and the prefix's.
	Rules *string
	// Context is the context policy of a conversation (session.Context);
	// the zero value is none: every request shows the whole history.
	Context session.Context
}

// DefaultConfig is the bare loop with every default budget.
func DefaultConfig() Config {
	return Config{
		Protocol:        session.Bare,
		MaxTurns:        12,
		MaxPromptTokens: 200_000,
		CellTimeout:     kernel.DefaultTimeout,
		OutputBudget:    session.DefaultBudget,
		MaxRestarts:     3,
		Encoding:        session.O200kBase,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Protocol == "" {
		c.Protocol = d.Protocol
	}
	if c.MaxTurns <= 0 {
		c.MaxTurns = d.MaxTurns
	}
	if c.MaxPromptTokens <= 0 {
		c.MaxPromptTokens = d.MaxPromptTokens
	}
	if c.CellTimeout <= 0 {
		c.CellTimeout = d.CellTimeout
	}
	if c.OutputBudget == 0 {
		c.OutputBudget = d.OutputBudget
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = d.MaxRestarts
	}
	if c.Encoding == "" {
		c.Encoding = d.Encoding
	}
	return c
}

// Status is how a run ended.
type Status string

// Statuses.
const (
	Answered        Status = "answered"                // an answer: executed, stated (A), or unexecuted
	NoAnswer        Status = "no_answer"               // the model stopped, or one shot ran without ANSWER
	MaxTurns        Status = "max_turns"               // the turn budget ran out
	MaxPromptTokens Status = "max_prompt_tokens"       // the prompt-token budget ran out
	ContextLength   Status = "context_length_exceeded" // the model's context window was too small
	KernelDied      Status = "kernel_died"             // the model's code killed the kernel more often than MaxRestarts, or at all in one shot (Result.Death)
	KernelFailed    Status = "kernel_failed"           // the kernel could not be restarted, or failed by no act of the cells
	ModelFailed     Status = "model_error"             // the model's API failed
	Interrupted     Status = "interrupted"             // the user stopped the stage (Conversation.Interrupt)
)

// Answer sources (DESIGN.md, "Answers and accuracy").
const (
	Executed   = "executed"   // ANSWER(value) ran in the kernel
	Stated     = "stated"     // condition A's final "ANSWER: <value>", the protocol's own way to answer
	Unexecuted = "unexecuted" // the model wrote "ANSWER: <value>" as text in B, B0, C or D
)

// Result is what a run produced and what it cost.
type Result struct {
	Status       Status
	Answer       string // the value as JSON (executed) or the text the model wrote (stated, unexecuted)
	AnswerSource string // Executed, Stated, Unexecuted, or "" without an answer
	// Literal flags an executed answer whose ANSWER call passed a literal
	// typed in the cell (ANSWER(42)): no code computed the value there. It
	// counts in accuracy as any executed answer and is counted apart.
	Literal bool
	// Grade is the answer's grade against a task's gold, set by the caller
	// that knows the task (SetGrade); nil when not graded.
	Grade *Grade
	Turns int // model calls
	Usage llm.Usage
	// Wall is the run's wall time: from Session.Started (else from the call
	// of Run) to its end, so the kernel start, the prefix build, the model
	// calls and the cells.
	Wall time.Duration
	// Setup is the part of Wall until the kernel had started (from
	// Session.Started) and the prefix was built. It comes before the first
	// model call, or, when that call went out at once (Session.Start,
	// Session.Cached), it overlaps it.
	Setup time.Duration
	// Model is the part of Wall spent in model calls, the retries and the
	// waits between them included (the sum of llm.Reply.Latency).
	Model time.Duration
	// Waited is the part of Model spent waiting to retry (the sum of
	// llm.Reply.Waited); Retries is how many attempts were made again.
	Waited  time.Duration
	Retries int
	Cells   []session.Cell // the cells of the run, after the prefix
	// Restarts is how many times the kernel was restarted (not how often
	// it died: a death with no restart left is not a restart).
	Restarts int
	Err      error // the cause, for ModelFailed, KernelDied and KernelFailed
	// Death says how the kernel died, for KernelDied: "exit 1", "oom",
	// "deadline", "signal SIGKILL" (kernel.Death).
	Death string
	// Built is the prefix as this run built it, its live cells, for the
	// caller to keep; nil when Session.Cells was given or the build failed.
	Built []session.Cell
	// Cache says what became of Session.Cached: CacheVerified, CacheStale,
	// or "" without cached cells.
	Cache CacheUse
	// Discarded counts the model calls whose replies were thrown away
	// unread, sent over cached prefix cells the live build did not match.
	// Their tokens are in Usage (and in the prompt budget) and in
	// DiscardedUsage; they are not in Turns, which counts the calls the
	// run used.
	Discarded      int
	DiscardedUsage llm.Usage
	// Folds counts the context policy's summary calls (Config.Context):
	// their tokens are in Usage (and the prompt budget), and they are not
	// in Turns. Elided is how many cell outputs the last request showed as
	// stubs; PeakRequestTokens the largest request, in the tokenizer's
	// count.
	Folds             int
	Elided            int
	PeakRequestTokens int
	// ToolResultTokens and ToolResultBytes measure the cell outputs the
	// model read in this run, each once, as first shown.
	ToolResultTokens int
	ToolResultBytes  int
}

// CacheUse is what became of a run's cached prefix cells.
type CacheUse string

// Uses of cached cells.
const (
	CacheVerified CacheUse = "verified" // the live cells rendered the same: the first reply was used
	CacheStale    CacheUse = "stale"    // they did not: the first reply was discarded and the request sent again
)

// Verdict is how a graded answer counts.
type Verdict string

// Verdicts. Accuracy counts GradeCorrect only; an unexecuted answer is
// GradeUnexecuted whether it matches the gold or not (Grade.Correct says
// which), so that it is counted on its own line.
const (
	GradeCorrect    Verdict = "correct"    // an executed or stated answer that matches the gold
	GradeWrong      Verdict = "wrong"      // an executed or stated answer that does not
	GradeUnexecuted Verdict = "unexecuted" // an answer no code computed: wrong in accuracy
	GradeNoAnswer   Verdict = "no_answer"  // the run gave no answer
)

// Grade is an answer graded against a task's gold.
type Grade struct {
	Verdict Verdict
	// Correct says the answer matches the gold, whatever its source: an
	// unexecuted answer may be correct and still not count.
	Correct bool
	Reason  string // why it does not match, when it does not
	Source  string // the answer's source, as Result.AnswerSource
	Literal bool   // the answer is literal (Result.Literal)
	// Parts is, for a task whose answer is a record of named parts, the
	// verdict of each of the gold's parts ("right", "wrong", "missing");
	// ExtraParts the parts the answer has and the gold has not. The caller
	// that grades sets them; nil for any other task.
	Parts      map[string]string
	ExtraParts []string
}

// Accurate says the grade counts as correct in accuracy.
func (g *Grade) Accurate() bool { return g != nil && g.Verdict == GradeCorrect }

// SetGrade records the grade of r's answer: correct and reason are what the
// task's grader said of r.Answer (ignored without an answer). It returns
// the grade, also kept in r.Grade.
func (r *Result) SetGrade(correct bool, reason string) *Grade {
	g := &Grade{Correct: correct, Reason: reason, Source: r.AnswerSource, Literal: r.Literal}
	switch {
	case r.Status != Answered:
		g.Verdict, g.Correct, g.Source, g.Literal = GradeNoAnswer, false, "", false
		if g.Reason == "" {
			g.Reason = "no answer (" + string(r.Status) + ")"
		}
	case r.AnswerSource == Unexecuted:
		g.Verdict = GradeUnexecuted
	case correct:
		g.Verdict = GradeCorrect
	default:
		g.Verdict = GradeWrong
	}
	if g.Correct {
		g.Reason = ""
	}
	r.Grade = g
	return g
}

// Session is where a run works: a kernel, the prefix and its built cells;
// for condition A (the cli protocol), a kernel that serves the shell op,
// the skill document and the data folder, and no prefix.
//
// A run need not wait for its kernel to send its first request (DESIGN.md,
// "Starting fast without pretending"): with Start instead of Kernel, Run
// starts the kernel in the background, and so it builds the prefix when
// Cells is nil. The first request then goes out at once when it needs no
// kernel: in cli, and with Cached cells, an earlier build of the prefix.
// Before the model's first cell runs, Run waits for the kernel and the
// live prefix, and the first request rendered over the live cells must be
// byte for byte the one that was sent over the cached ones; if it is not,
// the reply is discarded unread, counted (Result.Discarded, its tokens in
// Result.Usage) and the request sent again over the live cells. Every
// output the model reads is real.
type Session struct {
	// Kernel runs the cells; nil with Start.
	Kernel kernel.Kernel
	// Start, when Kernel is nil, gives the kernel the run works in: it
	// starts one (or restarts one the caller keeps), blocking until it
	// answers. Run calls it once, in a goroutine of its own that it waits
	// for before it returns, and sets Kernel to what it returned (also when
	// Run fails after it, so the caller can close it). When Start fails it
	// leaves nothing to close, and Kernel stays nil.
	Start func(ctx context.Context) (kernel.Kernel, error)
	// Prefix is the prefix of the bare, eval and transcript protocols; nil
	// for cli.
	Prefix *prefixes.Prefix
	// Cells is the built prefix; Run builds it in Kernel when nil.
	Cells []session.Cell
	// Cached is an earlier build of Prefix (a cache entry), for a run that
	// builds it (Cells nil): the first request is sent over these cells
	// while the live build runs, and checked against it as said above.
	Cached []session.Cell
	// Skill is the skill document of the cli protocol (condition A); Run
	// writes it with prefixes.SkillDocument when empty.
	Skill string
	// DataDir is the host folder the kernel shows as data/: the cli
	// protocol's read tool serves its files, those kernel.WalkReadOnly
	// takes. Required for cli.
	DataDir string
	// FollowLinks says that the kernel's data/ holds the files links in
	// DataDir lead to outside it (the user's --follow-links), so read
	// serves them too.
	FollowLinks bool
	// Started is when the kernel began to start, so that Result.Wall and
	// Result.Setup include the start; zero is when Run is called.
	Started time.Time
}

// Info is what the caller knows about a run, for the trajectory's header
// (session.RunEvent).
type Info struct {
	// Condition names the run's condition in the trajectory (a variant's
	// name, say); "" names it from the protocol and the prefix (Condition).
	Condition string
	Model     string
	BaseURL   string
	Task      string
	Data      any // the data set's manifest, written as JSON
	Question  string
	// Session names a conversation's session in its runs (NewConversation).
	Session string
}

// Observer hears about a run's progress (for a progress line); nil is fine.
type Observer interface {
	Progress(turn int, usage llm.Usage, running string)
}

// Run asks model the question in s, in the mode of cfg.Protocol, and
// returns what happened. Failures of the model, the kernel or the budgets
// are a Result's Status; the error is for a cancelled context, a kernel
// that Session.Start could not start, a prefix that does not build, and a
// session that does not fit the protocol (a cli session without a kernel
// that serves the shell op, or without its data folder; a prefix missing,
// or given to cli), found before any cell runs.
func Run(ctx context.Context, s *Session, model llm.Model, cfg Config, info Info, tr *Trajectory, obs Observer) (*Result, error) {
	c, err := newConversation(s, model, cfg, info, tr, obs)
	if err != nil {
		return nil, err
	}
	return c.ask(ctx, info.Question, info.Task)
}

// ask runs one question as the next stage of c (the only one, for Run).
func (c *Conversation) ask(ctx context.Context, question, task string) (*Result, error) {
	r, s, cfg, info := c.r, c.r.s, c.r.cfg, c.info
	r.started = s.Started
	if r.started.IsZero() || c.stages > 0 {
		r.started = time.Now()
	}
	r.res = &Result{}
	c.stages++
	prefixName := ""
	var pinfo *session.PrefixInfo
	var skill *session.SkillInfo
	if s.Prefix != nil {
		prefixName = s.Prefix.Name
		pi := prefixInfoOf(s.Prefix)
		pinfo = &pi
	} else {
		si := skillInfoOf(s.Skill)
		skill = &si
	}
	cond := info.Condition
	if cond == "" {
		cond = Condition(cfg.Protocol, prefixName)
	}
	var rules string
	if cfg.Rules != nil {
		rules = RulesHash(*cfg.Rules)
	}
	var data json.RawMessage
	if info.Data != nil {
		var err error
		if data, err = session.MarshalJSON(info.Data); err != nil {
			return nil, fmt.Errorf("the data set's manifest: %w", err)
		}
	}
	ev := session.RunEvent{Model: info.Model, BaseURL: info.BaseURL, Task: task, Data: data, Question: question,
		Condition: cond, Protocol: cfg.Protocol, Prefix: pinfo, Skill: skill, Rules: rules, Budgets: budgetsOf(cfg)}
	if c.staged {
		ev.Session, ev.Stage = info.Session, c.stages
		if cfg.Context.Policy != "" {
			ev.Context = cfg.Context.String()
		}
	}
	r.tr.Run(ev)
	cells := s.Cells
	if s.Kernel == nil || s.Cells == nil && s.Prefix != nil {
		// Something is still to be set up: it runs in the background, and
		// the first request waits for it unless it needs nothing of it.
		st := r.startSetup(ctx)
		defer func() {
			st.stop(s)
			r.setup = nil // a set-up left unsettled (cancelled) is not the next stage's
		}()
		cells = s.Cached
		if s.Prefix != nil && s.Cached == nil {
			if err := r.settle(ctx); err != nil {
				return nil, err
			}
			cells = s.Cells
		}
	} else {
		r.res.Setup = time.Since(r.started)
		if c.stages == 1 {
			r.emitPrefix()
		}
	}
	r.in = firstInput(s, cells, question, cfg)
	r.in.Earlier, r.in.Summary = c.earlier, c.summary
	var err error
	if cfg.Protocol == session.TranscriptText {
		err = r.oneShot(ctx)
	} else {
		err = r.loop(ctx)
	}
	r.res.Wall = time.Since(r.started)
	r.res.Cells = r.in.New
	c.earlier = append(r.in.Earlier, session.Stage{Question: question, Cells: r.in.New})
	c.summary = r.in.Summary
	// The end's figures are the run's so far, also when it was cut short.
	end := session.EndEvent{Status: string(r.res.Status), Answer: r.res.Answer, AnswerSource: r.res.AnswerSource, Turns: r.res.Turns,
		ContextTokens: r.res.Usage.PromptTokens, OutputTokens: r.res.Usage.CompletionTokens, CachedTokens: r.res.Usage.CachedTokens,
		Estimated: r.res.Usage.Estimated, Restarts: r.res.Restarts, Death: r.res.Death, WallMS: r.res.Wall.Milliseconds(),
		SetupMS: r.res.Setup.Milliseconds(), ModelMS: r.res.Model.Milliseconds(), WaitedMS: r.res.Waited.Milliseconds(),
		Retries: r.res.Retries, Discarded: r.res.Discarded}
	if c.staged {
		end.Folds, end.Elided, end.PeakRequestTokens = r.res.Folds, r.res.Elided, r.res.PeakRequestTokens
		end.ToolResultTokens, end.ToolResultBytes = r.res.ToolResultTokens, r.res.ToolResultBytes
	}
	if err != nil {
		end.Status = "cancelled"
		if ctx.Err() == nil {
			end.Status = "error" // the session could not be set up
		}
		end.Error = err.Error()
		r.tr.End(end)
		return r.res, err
	}
	if r.res.Err != nil {
		end.Error = r.res.Err.Error()
	}
	r.tr.End(end)
	return r.res, nil
}

// firstInput is what the first request of a run in s renders: the prefix
// over cells (or, without a prefix, the skill document), the question and
// the output budget.
func firstInput(s *Session, cells []session.Cell, question string, cfg Config) session.Input {
	var in session.Input
	if s.Prefix != nil {
		in = s.Prefix.Input(cells, question)
	} else {
		in = session.Input{Skill: s.Skill, Question: question}
	}
	in.Budget = cfg.OutputBudget
	in.RulesText = cfg.Rules
	return in
}

// FirstRequest is the first request Run sends for question in s with
// cfg, over s.Cells (s.Skill for cli), without a kernel: what a caller
// hashes to pin a condition's rules, tools and framing.
func FirstRequest(s *Session, cfg Config, question string) (session.Request, error) {
	cfg = cfg.withDefaults()
	return session.Render(cfg.Protocol, firstInput(s, s.Cells, question, cfg))
}

// check says whether the session fits the protocol, before anything runs;
// for cli it writes the skill document when the session has none. A kernel
// still to start is checked once it has (settle).
func (r *runner) check() error {
	s, p := r.s, r.cfg.Protocol
	if s.Kernel == nil && s.Start == nil {
		return errors.New("the session has no kernel: give Session.Kernel, or Session.Start to start one")
	}
	switch p {
	case session.Bare, session.Eval, session.TranscriptText:
		if s.Prefix == nil {
			return fmt.Errorf("protocol %s needs a prefix; only cli (condition A) runs without one", p)
		}
		return nil
	case session.CLI:
	default:
		return fmt.Errorf("protocol %s: the agent runs the bare, eval and cli loops and the transcript one shot", p)
	}
	if s.Prefix != nil {
		return fmt.Errorf("protocol cli (condition A) runs without a prefix, but the session has prefix %s: "+
			"leave Session.Prefix nil; the skill document describes the data", s.Prefix.Name)
	}
	if s.Kernel != nil {
		if err := checkShell(s.Kernel); err != nil {
			return err
		}
	}
	if s.DataDir == "" {
		return errors.New("condition A's read tool needs the session's data folder (Session.DataDir), the folder the kernel shows as data/")
	}
	if st, err := os.Stat(s.DataDir); err != nil || !st.IsDir() {
		return fmt.Errorf("condition A's data folder %s is not a folder: give the folder the kernel shows as data/", s.DataDir)
	}
	if strings.TrimSpace(s.Skill) == "" {
		skill, err := prefixes.SkillDocument(s.DataDir, s.FollowLinks)
		if err != nil {
			return fmt.Errorf("condition A's skill document: %w", err)
		}
		s.Skill = skill
	}
	return nil
}

// checkShell says whether k can serve condition A's bash tool.
func checkShell(k kernel.Kernel) error {
	if _, ok := k.(kernel.Sheller); !ok || k.Language() != kernel.Python {
		return fmt.Errorf("condition A's bash tool needs a kernel that serves the shell op, and the %s kernel does not: "+
			"run condition A in a Python kernel", k.Language())
	}
	return nil
}

// Condition names the condition of the ladder a run belongs to: the rung
// of Ladder with protocol p whose prefix role fits prefix, the name of the
// run's prefix ("" for none): B0's control when the name ends in
// "-nobind", else B's.
func Condition(p session.Protocol, prefix string) string {
	role := PrefixDefault
	switch {
	case p == session.CLI:
		role = PrefixNone
	case strings.HasSuffix(prefix, prefixes.NoBindSuffix):
		role = PrefixControl
	}
	name := ""
	for _, r := range ladder {
		if r.Protocol == p && (name == "" || r.Prefix == role) {
			name = r.Name
		}
	}
	if name == "" {
		return "A"
	}
	return name
}

func prefixInfoOf(p *prefixes.Prefix) session.PrefixInfo {
	return session.PrefixInfo{Name: p.Name, Source: p.Source, SHA256: p.Hash(), Cells: len(p.Cells)}
}

// skillInfoOf identifies condition A's skill document in the trajectory.
func skillInfoOf(skill string) session.SkillInfo {
	h := sha256.Sum256([]byte(skill))
	return session.SkillInfo{SHA256: hex.EncodeToString(h[:]), Bytes: len(skill)}
}

func budgetsOf(c Config) session.Budgets {
	return session.Budgets{MaxTurns: c.MaxTurns, MaxPromptTokens: c.MaxPromptTokens, MaxOutputTokens: c.MaxOutputTokens,
		CellTimeoutMS: c.CellTimeout.Milliseconds(), OutputBudget: c.OutputBudget, MaxRestarts: c.MaxRestarts}
}

type runner struct {
	s       *Session
	model   llm.Model
	cfg     Config
	tr      *session.TrajectoryWriter
	obs     Observer
	res     *Result
	in      session.Input
	started time.Time
	// lastPrompt and lastEstimate are the provider's and the tokenizer's
	// counts of the last request, to predict the next.
	lastPrompt, lastEstimate int
	// lastCode and lastCount are the last cell that ran in the kernel since
	// it (re)started: only running it again is a repeat.
	lastCode  string
	lastCount int
	// deaths counts the kernel's deaths in the run (restarted or not).
	deaths int
	// lastCall is the last tool call of the cli protocol served since the
	// kernel (re)started: only serving it again is a repeat; lastCallCell
	// is its cell's number in the run, from 1.
	lastCall     string
	lastCallCell int
	// setup is the kernel's start and the prefix's build while they run in
	// the background; nil once settled (or when nothing was to be set up).
	// staleWhy says how the cached cells differed from the live ones.
	setup    *setup
	staleWhy string
	// inCell says a cell is running in the kernel (a cancel then kills it).
	inCell bool
	// running is the kernel of a Python cell in flight, for Interrupt from
	// another goroutine; interrupted says the user asked the stage to stop.
	running     atomic.Pointer[kernel.Kernel]
	interrupted atomic.Bool
}

func (r *runner) execOptions() kernel.ExecOptions {
	return kernel.ExecOptions{Timeout: r.cfg.CellTimeout}
}

func (r *runner) progress(running string) {
	if r.obs != nil {
		r.obs.Progress(r.res.Turns, r.res.Usage, running)
	}
}

// send makes one model call within the budgets; ok is false when the run
// ended (its status is set). ev is the call's event, for the caller to
// write; nil when no call was made.
func (r *runner) send(ctx context.Context) (reply llm.Reply, ok bool, ev *session.CallEvent, err error) {
	if r.stopped() {
		return reply, false, nil, nil
	}
	if r.res.Turns >= r.cfg.MaxTurns {
		r.res.Status = MaxTurns
		return reply, false, nil, nil
	}
	req, counted, ok, err := r.render(ctx)
	if err != nil || !ok {
		return reply, false, nil, err
	}
	// The next request is the last one plus what the turn added: predict it
	// from the provider's last count when there is one, since providers
	// count more than the cookbook's arithmetic (system tokens, templates).
	predict := func(estimate int) int {
		if r.lastPrompt > 0 && estimate > r.lastEstimate {
			return r.lastPrompt + estimate - r.lastEstimate
		}
		return estimate
	}
	// When the request's upper bound fits the budget, so does its count,
	// which is then made while the request is out (see session.CountLater);
	// else the count decides, before the call.
	var count func() (int, error)
	if counted > 0 {
		if predicted := predict(counted); r.res.Usage.PromptTokens+predicted > r.cfg.MaxPromptTokens {
			r.res.Status = MaxPromptTokens
			r.res.Err = fmt.Errorf("the next request (about %d tokens) would take the run past its budget of %d prompt tokens (%d used)",
				predicted, r.cfg.MaxPromptTokens, r.res.Usage.PromptTokens)
			return reply, false, nil, nil
		}
		count = func() (int, error) { return counted, nil }
	} else if bound := session.BoundRequest(req); r.res.Usage.PromptTokens+max(bound, predict(bound)) <= r.cfg.MaxPromptTokens {
		count = session.CountLater(r.cfg.Encoding, req)
	} else {
		estimate, err := session.CountRequest(r.cfg.Encoding, req)
		if err != nil {
			return reply, false, nil, err
		}
		if predicted := predict(estimate); r.res.Usage.PromptTokens+predicted > r.cfg.MaxPromptTokens {
			r.res.Status = MaxPromptTokens
			r.res.Err = fmt.Errorf("the next request (about %d tokens) would take the run past its budget of %d prompt tokens (%d used)",
				predicted, r.cfg.MaxPromptTokens, r.res.Usage.PromptTokens)
			return reply, false, nil, nil
		}
		count = func() (int, error) { return estimate, nil }
	}
	r.res.Turns++
	r.progress("waiting for the model")
	reply, err = r.model.Complete(ctx, req)
	r.res.Model += reply.Latency
	r.res.Waited += reply.Waited
	r.res.Retries += max(reply.Attempts-1, 0)
	estimate, cerr := count()
	if cerr != nil {
		return reply, false, nil, cerr
	}
	r.res.PeakRequestTokens = max(r.res.PeakRequestTokens, estimate)
	ev = &session.CallEvent{Turn: r.res.Turns, Messages: len(req.Messages), RequestTokens: estimate,
		LatencyMS: reply.Latency.Milliseconds(), Attempts: reply.Attempts, WaitedMS: reply.Waited.Milliseconds()}
	if err != nil {
		if ctx.Err() != nil {
			return reply, false, nil, ctx.Err()
		}
		ev.Error = err.Error()
		r.res.Err = err
		r.res.Status = ModelFailed
		if errors.Is(err, llm.ErrContextLength) {
			r.res.Status = ContextLength
		}
		return reply, false, ev, nil
	}
	r.res.Usage.Add(reply.Usage)
	r.lastPrompt, r.lastEstimate = reply.Usage.PromptTokens, estimate
	ev.Usage = reply.Usage
	ev.FinishReason, ev.Content, ev.ToolCalls = reply.FinishReason, reply.Content, reply.ToolCalls
	return reply, true, ev, nil
}

// maxSameReplies is how many identical replies in a row end a loop: a
// model that repeats itself will not answer, and every turn costs more.
const maxSameReplies = 3

func (r *runner) loop(ctx context.Context) error {
	last, same := "", 0
	for {
		reply, ok, err := r.call(ctx)
		if err != nil || !ok {
			return err
		}
		said := reply.Content
		for _, c := range reply.ToolCalls {
			said += "\x00" + c.Name + "\x00" + c.Arguments
		}
		if said == last {
			same++
		} else {
			last, same = said, 1
		}
		if same >= maxSameReplies {
			r.res.Status = NoAnswer
			r.res.Err = fmt.Errorf("the model sent the same message %d times in a row", same)
			return nil
		}
		if r.cfg.Protocol == session.Eval || r.cfg.Protocol == session.CLI {
			cut := reply.FinishReason == "length"
			if len(reply.ToolCalls) == 0 {
				if !cut {
					// A message without a call ends a tool loop.
					r.finishText(reply.Content)
					return nil
				}
				// Cut before it made its call: say so, and go on.
				noCall := "your message made no eval call: run code with the eval tool; to answer, call ANSWER(value) in code"
				if r.cfg.Protocol == session.CLI {
					noCall = "your message made no tool call: use read or bash; to answer, send a final message \"ANSWER: <value>\""
				}
				c := session.Cell{From: session.FromModel, Reply: reply.Content, Notes: []string{r.cutNote(), noCall}}
				if strings.TrimSpace(c.Reply) == "" {
					c.Reply = emptyMessage
				}
				r.add(c, 0)
				continue
			}
			for i, call := range reply.ToolCalls {
				cut := cut && i == len(reply.ToolCalls)-1
				var done bool
				if r.cfg.Protocol == session.CLI {
					done, err = r.cliCall(ctx, reply.Content, call, cut)
				} else {
					done, err = r.evalCall(ctx, reply.Content, call, cut)
				}
				if err != nil || done {
					return err
				}
				reply.Content = "" // said once, with the first call
			}
			continue
		}
		if v, ok := textAnswer(reply.Content); ok {
			r.answer(v, Unexecuted)
			return nil
		}
		code, notes := repairCell(reply.Content)
		if reply.FinishReason == "length" {
			notes = append([]string{r.cutNote()}, notes...)
		}
		c := session.Cell{Code: code, Notes: notes, From: session.FromModel}
		if code != reply.Content {
			c.Reply = reply.Content // the trajectory keeps the message as it came
		}
		if strings.TrimSpace(code) == "" {
			c.Reply = reply.Content
			if strings.TrimSpace(reply.Content) == "" {
				c.Reply = emptyMessage
			}
			c.Notes = append(c.Notes, "your message has no code: send the next cell as code only, or call ANSWER(value) in code")
			r.add(c, 0)
			continue
		}
		done, err := r.runCell(ctx, c)
		if err != nil || done {
			return err
		}
	}
}

// evalCall runs one eval tool call as a cell, its code repaired as a bare
// message is (fences, prose, prompts); cut says the message was cut at the
// output-token limit. The history replays the call with the code that ran
// (session.Render); the trajectory's call event keeps it as it came.
func (r *runner) evalCall(ctx context.Context, said string, call session.ToolCall, cut bool) (bool, error) {
	c := session.Cell{From: session.FromModel, Reply: said, Call: &call}
	if cut {
		c.Notes = []string{r.cutNote()}
	}
	args := map[string]any{}
	code, isString := "", false
	if err := json.Unmarshal([]byte(call.Arguments), &args); err == nil {
		code, isString = args["code"].(string)
	}
	switch {
	case call.Name != "eval":
		c.Notes = append(c.Notes, fmt.Sprintf("there is no tool %q; the one tool is eval(code)", call.Name))
	case !isString:
		c.Notes = append(c.Notes, `the arguments must be a JSON object {"code": "<the cell>"}`)
	}
	if call.Name != "eval" || !isString {
		r.add(c, 0)
		return false, nil
	}
	code, notes := repairCell(code)
	c.Code, c.Notes = code, append(c.Notes, notes...)
	if strings.TrimSpace(code) == "" {
		c.Notes = append(c.Notes, "the call has no code: send the next cell as its code, or call ANSWER(value) in code")
		r.add(c, 0)
		return false, nil
	}
	return r.runCell(ctx, c)
}

// runCell runs c unless it repeats an earlier cell; done is true when the
// run ended (an answer, or a kernel that cannot be kept alive).
func (r *runner) runCell(ctx context.Context, c session.Cell) (done bool, err error) {
	if r.lastCount > 0 && strings.TrimSpace(c.Code) == r.lastCode {
		n := r.lastCount
		c.Notes = append(c.Notes, fmt.Sprintf("this cell is the same as In [%d], the last that ran, and was not run again; its output is above", n))
		r.add(c, n)
		return false, nil
	}
	if r.stopped() {
		return true, nil // interrupted as the last cell ended: this one does not run
	}
	r.inCell = true
	k := r.s.Kernel
	r.running.Store(&k) // before the progress line that says the cell runs
	r.progress(firstLine(c.Code))
	res, err := r.s.Kernel.Execute(ctx, c.Code, r.execOptions())
	r.running.Store(nil)
	r.inCell = ctx.Err() != nil && err != nil
	if err != nil {
		if ctx.Err() != nil {
			if r.inCell {
				// Cancelled as it ran (Ctrl-C in chat): the cell stays in
				// the history, so that the note of the next stage's restart
				// (Conversation.recover) goes on it, not on the cell before.
				r.add(c, 0)
			}
			return true, ctx.Err()
		}
		return r.restart(ctx, c, err)
	}
	c.Result = res
	r.lastCode, r.lastCount = strings.TrimSpace(c.Code), res.Count
	if res.Status == kernel.StatusError && res.Error != nil && res.Error.Name == "SyntaxError" && looksLikeProse(c.Code) {
		c.Notes = append(c.Notes, "your message runs as code: send only code, no prose; to answer, call ANSWER(value) in code")
	}
	r.add(c, 0)
	if res.Answered() {
		r.res.Literal = res.AnswerLiteral
		r.answer(string(res.Answer), Executed)
		return true, nil
	}
	return r.stopped(), nil
}

// restart brings a dead kernel back with the prefix built again, and tells
// the model in the cell's output what happened.
//
// A death the cell caused (kernel.Death: an exit, out of memory, a kill at
// the hard deadline) that no restart is left for ends the run as the
// model's result, KernelDied; any other failure of the kernel, and a
// restart that fails, as the harness's, KernelFailed.
func (r *runner) restart(ctx context.Context, c session.Cell, cause error) (bool, error) {
	r.deaths++
	why := clip(cause.Error(), 400)
	if r.res.Restarts >= max(r.cfg.MaxRestarts, 0) {
		c.Notes = append(c.Notes, "the kernel died: "+why)
		r.add(c, 0)
		r.died(cause)
		if r.cfg.MaxRestarts < 0 {
			r.res.Err = fmt.Errorf("the kernel died and a run may make no restarts: %w", cause)
		} else {
			r.res.Err = fmt.Errorf("the kernel died %d times, more than the %d restarts a run may make; last: %w", r.deaths, r.cfg.MaxRestarts, cause)
		}
		return true, nil
	}
	r.res.Restarts++
	r.progress("restarting the kernel")
	r.lastCode, r.lastCount, r.lastCall = "", 0, ""
	c.Restarted = true
	note := "the kernel died (" + why + ") and was restarted"
	err := r.s.Kernel.Restart(ctx)
	if err == nil && r.s.Prefix != nil {
		_, err = prefixes.Build(ctx, r.s.Kernel, r.s.Prefix, r.execOptions())
	}
	r.tr.Restart(session.RestartEvent{Restarts: r.res.Restarts, Cause: cause.Error(), Error: errString(err)})
	if err != nil {
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		c.Notes = append(c.Notes, note+", but the session could not be rebuilt")
		r.add(c, 0)
		r.res.Status = KernelFailed
		r.res.Err = fmt.Errorf("restart the kernel: %w", err)
		return true, nil
	}
	if r.s.Prefix == nil {
		// cli: no prefix to build again, and no state between bash calls
		// but the files under /tmp, which a new sandbox does not have.
		c.Notes = append(c.Notes, note+"; files written under /tmp may be gone: write them again if you need them")
		r.add(c, 0)
		return false, nil
	}
	note += fmt.Sprintf("; the prefix ran again (%d cells), so what it bound is back", len(r.s.Prefix.Cells))
	if names := r.boundNames(ctx); names != "" {
		note += " (" + names + ")"
	}
	note += "; everything the cells after it defined is lost, Out[n] and _stdout[n] of earlier cells too: compute it again"
	c.Notes = append(c.Notes, note)
	r.add(c, 0)
	return false, nil
}

// died sets the status of a run that ends on a dead kernel: KernelDied
// with its Death when the cell killed it, else KernelFailed.
func (r *runner) died(cause error) {
	r.res.Status = KernelFailed
	if d := kernel.Death(cause); d != "" {
		r.res.Status, r.res.Death = KernelDied, d
	}
}

// boundNames lists the names bound in a Python kernel, for the note after a
// restart; "" when they cannot be listed.
func (r *runner) boundNames(ctx context.Context) string {
	if r.s.Kernel.Language() != kernel.Python {
		return ""
	}
	res, err := r.s.Kernel.Execute(ctx, "print(', '.join(sorted(n for n in globals() if not n.startswith('_') "+
		"and n not in ('In', 'Out', 'exit', 'quit', 'get_ipython', 'ANSWER', 'display', 'open'))))", r.execOptions())
	if err != nil || res.Status != kernel.StatusOK {
		return ""
	}
	return clip(strings.TrimSpace(res.Stdout), 300)
}

// add appends a cell to the run and writes its event.
func (r *runner) add(c session.Cell, repeatOf int) { r.addCell(c, repeatOf, nil) }

// addShell appends a cell that ran a bash command and writes its event,
// with how the command ended.
func (r *runner) addShell(c session.Cell, sh *kernel.ShellResult) { r.addCell(c, 0, sh) }

func (r *runner) addCell(c session.Cell, repeatOf int, sh *kernel.ShellResult) {
	r.in.New = append(r.in.New, c)
	output := c.Output(r.in.Transcript.Language, r.cfg.OutputBudget)
	var tool, args string
	if r.cfg.Protocol == session.CLI {
		output = session.CLIOutput(c, r.cfg.OutputBudget)
		if c.Call != nil {
			tool, args = c.Call.Name, c.Call.Arguments
		}
	}
	r.countOutput(output)
	var exit *int
	var signal string
	var timedOut bool
	if sh != nil {
		exit, signal, timedOut = &sh.ExitCode, sh.Signal, sh.TimedOut
	}
	r.tr.Cell(session.CellEvent{Turn: r.res.Turns, Count: c.Result.Count, Tool: tool, Arguments: args, Code: c.Code, Reply: c.Reply,
		Notes: c.Notes, After: c.After, RepeatOf: repeatOf, Status: c.Result.Status, ExitCode: exit, Signal: signal, TimedOut: timedOut,
		Output: output, DroppedBytes: c.Result.DroppedBytes, ElapsedMS: c.Result.ElapsedMS, Answer: c.Result.Answer,
		Stdout: c.Result.Stdout, Stderr: c.Result.Stderr, Value: c.Result.Value, Error: c.Result.Error})
}

func (r *runner) answer(value, source string) {
	r.res.Status, r.res.Answer, r.res.AnswerSource = Answered, value, source
	r.tr.Answer(session.AnswerEvent{Value: value, Source: source, Literal: r.res.Literal})
}

// finishText ends a run on a message without code: an answer in text, or
// none. In the cli protocol (condition A) the final message is the
// protocol's own way to answer, and its answer is stated; elsewhere the
// answer did not come from code that ran, and is unexecuted.
func (r *runner) finishText(text string) {
	if r.cfg.Protocol == session.CLI {
		if v, ok := statedAnswer(text); ok {
			r.answer(v, Stated)
			return
		}
		r.res.Status = NoAnswer
		return
	}
	if v, ok := textAnswer(text); ok {
		r.answer(v, Unexecuted)
		return
	}
	r.res.Status = NoAnswer
}

// oneShot makes one request in the transcript protocol and runs the one
// code block of the reply once.
func (r *runner) oneShot(ctx context.Context) error {
	reply, ok, err := r.call(ctx)
	if err != nil || !ok {
		return err
	}
	if v, ok := textAnswer(reply.Content); ok {
		r.answer(v, Unexecuted)
		return nil
	}
	code, notes := oneShotCode(reply.Content)
	if reply.FinishReason == "length" {
		notes = append([]string{r.cutNote()}, notes...)
	}
	c := session.Cell{Code: code, Notes: notes, Reply: reply.Content, From: session.FromModel}
	if strings.TrimSpace(code) == "" {
		c.Notes = append(c.Notes, "the reply has no code")
		r.add(c, 0)
		r.res.Status = NoAnswer
		return nil
	}
	r.inCell = true
	k := r.s.Kernel
	r.running.Store(&k) // before the progress line that says the cell runs
	r.progress(firstLine(code))
	res, err := r.s.Kernel.Execute(ctx, code, r.execOptions())
	r.running.Store(nil)
	r.inCell = ctx.Err() != nil && err != nil
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// One shot runs once: no restart, and a kernel its cell killed is
		// the model's result, as in the loop.
		c.Notes = append(c.Notes, "the kernel died: "+clip(err.Error(), 400))
		r.add(c, 0)
		r.died(err)
		r.res.Err = fmt.Errorf("the kernel died running the one-shot cell: %w", err)
		return nil
	}
	c.Result = res
	r.add(c, 0)
	if res.Answered() {
		r.res.Literal = res.AnswerLiteral
		r.answer(string(res.Answer), Executed)
		return nil
	}
	if !r.stopped() {
		r.res.Status = NoAnswer
	}
	return nil
}

// emptyMessage stands for an empty model message in the transcript: chat
// APIs refuse an assistant message without content.
const emptyMessage = "(an empty message)"

func (r *runner) cutNote() string {
	limit := ""
	if r.cfg.MaxOutputTokens > 0 {
		limit = fmt.Sprintf(" of %d", r.cfg.MaxOutputTokens)
	}
	shorter := "send shorter cells"
	if r.cfg.Protocol == session.CLI {
		shorter = "send shorter commands"
	}
	return "your message was cut at the output-token limit" + limit + "; what arrived ran as it is: " + shorter
}

func looksLikeProse(code string) bool {
	line := strings.TrimSpace(firstLine(code))
	if line == "" || strings.ContainsAny(line, "()[]{}=#") {
		return false
	}
	return len(strings.Fields(line)) >= 3
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// clip is s on one line, at most about n characters: its head and its tail
// (kernel.Cut), since a dead kernel's cause is often at the end of its
// stderr (a Python traceback's last line).
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	head, tail, dropped := kernel.Cut(s, n)
	if dropped == 0 {
		return s
	}
	return strings.TrimSpace(head) + " … " + strings.TrimSpace(tail)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
