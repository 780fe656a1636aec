package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/outfile"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
)

// This file is ctxcode ask's engine: one question, in one condition, in a
// fresh kernel over its prefix (built, or taken from the transcript cache
// and checked), graded when it is a built-in task. The command reads the
// flags into an AskConfig, prints an AskResult and maps its errors to exit
// codes; everything else is here.

// AskConfig is what one ask needs: plain values, no flags.
type AskConfig struct {
	// DataDir is the data folder (required). A data set made by
	// datasets.Generate brings its tasks and the pm prefix; any other
	// folder gets a prefix written on the fly by prefixes.InitWith.
	DataDir string
	// Prefix names the prefix (prefixes.Load): a built-in name or a file.
	// "" for the default above.
	Prefix string
	// Rung is the condition the question is asked in.
	Rung agent.Rung
	// Question is the question to ask, or Task the id of a built-in task
	// of DataDir to ask and grade: one of the two.
	Question string
	Task     string
	// Reference says the model is the offline reference model, which plays
	// only the built-in tasks: a Question that is not one is refused.
	Reference bool
	// OpenModel makes the model behind an API that plays the rung; not
	// called for the reference model, which is BuiltinReference over the
	// data set's tasks. Required unless Reference.
	OpenModel func() (llm.Model, error)
	// BaseURL is the model's endpoint, without credentials, for the
	// trajectory's header; "" for none (the reference model).
	BaseURL string
	// Agent is the run's budgets and rendering; its Protocol is the rung's.
	Agent agent.Config
	// Sandbox says where the kernel runs; Lang and DataDir are set here.
	Sandbox sandbox.OpenOptions
	// NoCache builds the prefix before the first request and keeps nothing
	// in the transcript cache.
	NoCache bool
	// CacheDir is the transcript cache's folder; "" is prefixes.CacheDir().
	CacheDir string
}

// AskSetup is a prepared ask: the data, its tasks, the prefix, the model
// and the question, found before any kernel starts. Close it.
type AskSetup struct {
	cfg      AskConfig
	warn     io.Writer
	manifest *datasets.Manifest
	tasks    []datasets.Task
	prefix   *prefixes.Prefix // the rung's; nil for none
	model    llm.Model
	question string
	task     *datasets.Task
	// initTime is how long prefix init took to write the default prefix,
	// when it wrote it (a folder that is not a data set); it counts in
	// the first question's wall time.
	initTime time.Duration
	cache    askCache
	kern     askKernel
}

// PrepareAsk finds the data, its tasks, the prefix (writing one with
// prefix init for a folder that is not a data set), the rung's prefix and
// model, and the question, and opens the transcript cache. Bad input is an
// *InputError. It writes notes and warnings to warn, which must be safe
// to write from another goroutine (the kernel starts in the background).
func PrepareAsk(ctx context.Context, cfg AskConfig, warn io.Writer) (*AskSetup, error) {
	switch {
	case cfg.Question != "" && cfg.Task != "":
		return nil, inputErrorf("ask: give a question or --task, not both")
	case cfg.Question == "" && cfg.Task == "":
		return nil, inputErrorf("ask: give a question, or --task ID for a built-in task")
	}
	return prepare(ctx, cfg, warn)
}

// prepare is PrepareAsk's work, and PrepareChat's (no question yet).
func prepare(ctx context.Context, cfg AskConfig, warn io.Writer) (*AskSetup, error) {
	if cfg.OpenModel == nil && !cfg.Reference {
		return nil, errors.New("bench: AskConfig.OpenModel is nil")
	}
	if err := checkAskData(cfg.DataDir); err != nil {
		return nil, err
	}
	s := &AskSetup{cfg: cfg, warn: warn, question: cfg.Question}
	// The image's id, for the cache's key, is asked of Docker while the
	// data loads.
	var imageID string
	var wg sync.WaitGroup
	defer wg.Wait()
	if s.usesCache() && cfg.Sandbox.Kind != sandbox.KindLocal && cfg.Sandbox.Kind != sandbox.KindKubernetes {
		image := ""
		if cfg.Sandbox.Docker != nil {
			image = cfg.Sandbox.Docker.Image
		}
		wg.Go(func() { imageID, _ = sandbox.ImageID(ctx, cfg.Sandbox.Host, image) })
	}

	d, m, err := datasets.Load(cfg.DataDir)
	switch {
	case err == nil:
		s.manifest = m
		if s.tasks, err = datasets.Tasks(d); err != nil {
			return nil, err
		}
	case errors.Is(err, datasets.ErrNotDataset):
	default:
		return nil, dataError(err)
	}
	def, control, err := s.loadPrefix(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Task != "" && len(s.tasks) == 0 {
		return nil, inputErrorf("--task needs a data set made by `ctxcode data gen`: %s has no built-in tasks", cfg.DataDir)
	}
	if cfg.Reference && cfg.Question != "" && !knownQuestion(s.tasks, cfg.Question) {
		return nil, inputErrorf("the reference model plays only the built-in tasks, and this question is not one of them: ask one with --task ID (list them with: ctxcode tasks --data %s), or use a real model", cfg.DataDir)
	}
	lp := LadderPrefixes{Default: def, Named: cfg.Prefix != ""}
	if cfg.Rung.Prefix == agent.PrefixControl {
		lp.Control, lp.ControlErr = ControlOf(def, control)
	}
	if s.prefix, err = lp.PrefixFor(cfg.Rung, "--condition", "pass a prefix that binds nothing with --prefix"); err != nil {
		return nil, err
	}
	if cfg.Reference {
		s.model, err = BuiltinReference(s.tasks, s.prefix, cfg.Agent.Encoding)
	} else {
		s.model, err = cfg.OpenModel()
	}
	if err != nil {
		return nil, err
	}
	if cfg.Task != "" {
		if s.task, err = findTask(s.tasks, cfg.Task, cfg.DataDir); err != nil {
			return nil, err
		}
		s.question = s.task.Question
	}

	// The question starts in a fresh kernel, which its run starts, in the
	// background when its first request needs none: condition A, or a
	// prefix in the cache.
	opts := cfg.Sandbox
	opts.Lang, opts.DataDir = kernel.Python, cfg.DataDir // A runs in the Python kernel, for its shell op
	if s.prefix != nil {
		opts.Lang = s.prefix.Language
	}
	s.kern = askKernel{opts: opts, warn: warn}
	s.cache = s.openCache(&wg, &imageID)
	return s, nil
}

// checkAskData refuses a data folder that is not one.
func checkAskData(dir string) error {
	if dir == "" {
		return inputErrorf("--data: no data folder given")
	}
	if err := outfile.CheckDataDir(dir); err != nil {
		return inputErrorf("--data %v", err)
	}
	return nil
}

// loadPrefix is the default prefix (nil for a rung without one) and, when
// prefix init wrote it for B0, its control.
func (s *AskSetup) loadPrefix(ctx context.Context) (def, control *prefixes.Prefix, err error) {
	cfg := s.cfg
	switch {
	case cfg.Rung.Prefix == agent.PrefixNone:
		// Condition A alone: no prefix, so none is loaded or written.
		return nil, nil, nil
	case cfg.Prefix != "":
		if def, err = prefixes.Load(cfg.Prefix); err != nil {
			return nil, nil, inputErrorf("%v", err)
		}
		return def, nil, nil
	case s.manifest != nil:
		def, err = prefixes.Load("pm")
		return def, nil, err
	}
	start := time.Now()
	res, err := InitPrefix(ctx, cfg.DataDir, cfg.Sandbox, s.warn)
	s.initTime = time.Since(start)
	if ie := (*InitError)(nil); errors.As(err, &ie) {
		return nil, nil, inputErrorf("no --prefix, and prefix init could not write one for %s: %v", cfg.DataDir, ie.Err)
	}
	if err != nil {
		return nil, nil, err
	}
	if def, err = prefixes.Parse("init:"+cfg.DataDir, res.Source); err != nil {
		return nil, nil, err
	}
	if cfg.Rung.Prefix == agent.PrefixControl { // B0: the control prefix init wrote with it
		if control, err = prefixes.Parse("init:"+cfg.DataDir+" (control)", res.Control); err != nil {
			return nil, nil, err
		}
	}
	return def, control, nil
}

// Prefix is the prefix the rung starts from (nil for none).
func (s *AskSetup) Prefix() *prefixes.Prefix { return s.prefix }

func knownQuestion(tasks []datasets.Task, q string) bool {
	for _, t := range tasks {
		if t.Question == q {
			return true
		}
	}
	return false
}

func findTask(tasks []datasets.Task, id, dir string) (*datasets.Task, error) {
	for i := range tasks {
		if tasks[i].ID == id {
			return &tasks[i], nil
		}
	}
	hint := ""
	if len(tasks) > 0 {
		hint = fmt.Sprintf(" (%s … %s)", tasks[0].ID, tasks[len(tasks)-1].ID)
	}
	return nil, inputErrorf("--task %q: no such task in %s%s; list them with: ctxcode tasks --data %s", id, dir, hint, dir)
}

// Close closes the kernel, if one started. It may be called more than once.
func (s *AskSetup) Close() { s.kern.close() }

// Ask asks the question in a fresh kernel (started the first time,
// restarted after), over its prefix cached when it is there, and grades
// the answer of a task. Failures of the model, the kernel or the budgets
// are the result's Run.Status; the error is for a cancelled context, a
// kernel that could not start (a *sandbox.InputError when the sandbox's
// options are bad), and a prefix that does not build (an *InputError).
// traj (nil for none) gets the run's events, obs (nil for none) its
// progress.
func (s *AskSetup) Ask(ctx context.Context, traj *agent.Trajectory, obs agent.Observer) (*AskResult, error) {
	cfg := s.cfg.Agent
	cfg.Protocol = s.cfg.Rung.Protocol
	info := agent.Info{Model: s.model.Name(), Question: s.question, BaseURL: s.cfg.BaseURL}
	if s.task != nil {
		info.Task = s.task.ID
	}
	if s.manifest != nil {
		info.Data = s.manifest
	}
	// The wall time of a question counts from here: the kernel's start
	// (the first question's) or restart, and the prefix build, are in it.
	started := time.Now()
	key, cached := s.cache.lookup(s.prefix, s.warn)
	sess := &agent.Session{Start: s.kern.ready, Prefix: s.prefix, Cached: cached, Started: started}
	if s.prefix == nil {
		// A: no prefix; the skill document describes the files, and read
		// serves them from the folder the kernel shows as data/.
		sess.DataDir, sess.FollowLinks = s.cfg.DataDir, s.cfg.Sandbox.FollowLinks
	}
	res, err := agent.Run(ctx, sess, s.model, cfg, info, traj, obs)
	s.cache.keep(key, s.prefix, sess.Kernel, res, s.warn)
	if err != nil {
		var be *prefixes.BuildError
		if errors.As(err, &be) {
			return nil, &InputError{Msg: err.Error()}
		}
		return nil, err
	}
	out := &AskResult{Question: s.question, Task: s.task, Rung: s.cfg.Rung, Prefix: s.prefix, Run: res, Cache: s.cache.state(s.prefix, res)}
	out.InitTime, s.initTime = s.initTime, 0 // counted once, in the first question
	if s.task != nil {
		// An unexecuted answer is graded and shown, never counted in accuracy.
		grade(s.task, res, traj)
	}
	return out, nil
}

// askKernel is the one kernel of an ask: started by the first question's
// run (in the background, agent.Session.Start), restarted by each later
// one's, closed at the end.
type askKernel struct {
	opts sandbox.OpenOptions
	warn io.Writer // safe to write from the run's goroutine
	k    kernel.Kernel
	stop func() error
}

// ready is agent.Session.Start: a fresh kernel, the first time started
// (the transport opened), afterwards restarted.
func (a *askKernel) ready(ctx context.Context) (kernel.Kernel, error) {
	if a.k != nil {
		if err := a.k.Restart(ctx); err != nil {
			return nil, fmt.Errorf("restart the kernel: %w", err)
		}
		return a.k, nil
	}
	if a.stop != nil { // a start that failed
		_ = a.stop()
	}
	k, stop, err := sandbox.Start(ctx, a.opts, a.warn)
	a.k, a.stop = k, stop
	return k, err
}

func (a *askKernel) close() {
	if a.stop != nil {
		_ = a.stop()
	}
	a.k, a.stop = nil, nil
}

// AskResult is one asked question, answered or not.
type AskResult struct {
	Question string
	Task     *datasets.Task // nil for a question of the user's
	Rung     agent.Rung
	Prefix   *prefixes.Prefix // the rung's; nil for none
	Run      *agent.Result    // graded for a task
	// Cache is what the transcript cache did for the run: off, miss, hit
	// (the cached cells were the live ones) or stale (they were not: a
	// call was discarded); "" without a prefix.
	Cache string
	// InitTime is how long prefix init took to write the prefix before the
	// question's run; it counts in the question's wall time.
	InitTime time.Duration
	// Stage is the question's place in a chat (1 for the first); 0 for ask.
	// A later question runs in the kernel the chat kept: its cost line
	// shows no set-up unless it built the prefix.
	Stage int
}

// Wall is the question's wall time: its run's, and prefix init's before it.
func (r *AskResult) Wall() time.Duration { return r.InitTime + r.Run.Wall }

// Condition is the ladder's name for the rung as it ran.
func (r *AskResult) Condition() string {
	name := ""
	if r.Prefix != nil {
		name = r.Prefix.Name
	}
	return agent.Condition(r.Rung.Protocol, name)
}

// Record is the result as one JSON object (ask --json).
func (r *AskResult) Record() map[string]any {
	res := r.Run
	u := res.Usage
	rec := map[string]any{
		"question":       r.Question,
		"mode":           r.Rung.Mode,
		"condition":      r.Condition(),
		"answer":         r.AnswerValue(),
		"answer_source":  nullable(res.AnswerSource),
		"status":         res.Status,
		"turns":          res.Turns,
		"context_tokens": u.PromptTokens,
		"output_tokens":  u.CompletionTokens,
		"cached_tokens":  u.CachedTokens,
		"wall_ms":        r.Wall().Milliseconds(),
		"setup_ms":       res.Setup.Milliseconds(),
		"model_ms":       res.Model.Milliseconds(),
		"waited_ms":      res.Waited.Milliseconds(),
		"retries":        res.Retries,
		"estimated":      u.Estimated,
		"restarts":       res.Restarts,
		// Calls sent over a cached prefix that the live one did not match:
		// their tokens are in the counts above.
		"discarded_calls": res.Discarded,
	}
	if res.Literal && res.Status == agent.Answered {
		rec["literal"] = true // ANSWER of a value typed in the cell
	}
	if res.Death != "" {
		rec["death"] = res.Death
	}
	if r.Cache != "" {
		rec["prefix_cache"] = r.Cache
	}
	if r.InitTime > 0 {
		rec["prefix_init_ms"] = r.InitTime.Milliseconds()
	}
	if u.ReasoningTokens > 0 {
		rec["reasoning_tokens"] = u.ReasoningTokens
	}
	if r.Task != nil {
		rec["task"] = r.Task.ID
		g := res.Grade
		rec["correct"] = g.Accurate()
		rec["verdict"] = g.Verdict
		if res.Status == agent.Answered {
			rec["answer_right"] = g.Correct
		}
		if g.Reason != "" {
			rec["grade"] = g.Reason
		}
		if g.Parts != nil {
			rec["parts"] = g.Parts
		}
		if len(g.ExtraParts) > 0 {
			rec["extra_parts"] = g.ExtraParts
		}
	}
	if res.Err != nil {
		rec["error"] = res.Err.Error()
	}
	return rec
}

// AnswerValue is the answer as a JSON value: the executed value as it is,
// a stated answer as the text the model wrote, nil without one.
func (r *AskResult) AnswerValue() any {
	switch res := r.Run; {
	case res.Answer == "":
		return nil
	case res.AnswerSource == agent.Executed && json.Valid([]byte(res.Answer)):
		return json.RawMessage(res.Answer)
	default:
		return res.Answer
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CostLine is the one line of cost ask prints after the answer: turns,
// tokens, wall time and where it went, discarded calls and retries.
func (r *AskResult) CostLine() string {
	res := r.Run
	u := res.Usage
	est := ""
	if u.Estimated {
		est = " (estimated by the tokenizer)"
	}
	turns := "turns"
	if res.Turns == 1 {
		turns = "turn"
	}
	waited := ""
	if res.Retries > 0 {
		retries := "retries"
		if res.Retries == 1 {
			retries = "retry"
		}
		waited = fmt.Sprintf(", %d %s (%.1fs waiting)", res.Retries, retries, res.Waited.Seconds())
	}
	setup := "kernel and prefix"
	if r.Prefix == nil {
		setup = "kernel" // A: no prefix to build
	}
	if r.InitTime > 0 {
		setup = fmt.Sprintf("prefix init %.2fs, %s", r.InitTime.Seconds(), setup)
	}
	timing := fmt.Sprintf("model %.2fs, %s %.2fs", res.Model.Seconds(), setup, res.Setup.Seconds())
	if r.Stage > 1 && res.Built == nil && r.InitTime == 0 {
		timing = fmt.Sprintf("model %.2fs, in the session's kernel", res.Model.Seconds())
	}
	discarded := ""
	if res.Discarded > 0 {
		discarded = fmt.Sprintf(", %d discarded call (%d context tokens) over a stale cached prefix", res.Discarded, res.DiscardedUsage.PromptTokens)
	}
	return fmt.Sprintf("[%d %s, %d context tokens, %d output tokens, %d cached, %.2fs (%s)%s%s%s]",
		res.Turns, turns, u.PromptTokens, u.CompletionTokens, u.CachedTokens, r.Wall().Seconds(), timing,
		discarded, waited, est)
}
