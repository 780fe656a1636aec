package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

const askUsage = `Usage:
  ctxcode ask [--data DIR] [--prefix P] [--condition A|B|B0|D|C | --mode loop|oneshot]
              [--model M] [--task ID] [--trajectory FILE] [--json] [flags] [QUESTION]

Asks a model a question about the data. The model continues a live session
whose prefix already loaded the data: in the loop (the default, condition D)
each of its messages runs as the next cell until executed code calls
ANSWER(value); in one shot (C) it writes one code block that runs once.
Prints the answer, then one line of cost.

--condition names a rung of the ladder whole: A, the CLI agent (no prefix: a
skill document, and read and bash tools in the same sandbox; it answers with
a final "ANSWER: v"); B, an eval tool over the prefix; B0, the same with a
prefix that binds nothing (the control of --prefix: pm-nobind for pm,
NAME-nobind beside a file NAME.py, or a -nobind prefix named with --prefix);
D, the bare loop; C, the one shot.
--mode and --protocol are the finer controls; they may not contradict it.

Without --data, the built-in project-management data set is used (generated
once into the cache folder, tier xl) with the pm prefix. With --data, a
folder made by "ctxcode data gen" gets pm; any other folder gets a prefix
written on the fly by "ctxcode prefix init".

--task ID asks a built-in task and grades the answer ("ctxcode tasks --data DIR"
lists them). To ask every task, in several conditions, use ctxcode bench: it
runs them in parallel, keeps every trial and resumes.

The prefix's built cells are kept in the cache folder (transcripts/ beside
the built-in data, e.g. ~/.cache/ctxcode/transcripts), keyed by the prefix,
the data (file names, sizes and times), the image or interpreter and the
kernel driver. With an entry, the first request goes out at once while the
kernel starts and builds the prefix; before the model's first cell runs the
live outputs must be the cached ones byte for byte, else the reply is
discarded (counted in the cost) and the request sent again. --no-cache builds
the prefix first and keeps nothing. Condition A has no prefix: its first
request always goes out while the kernel starts.

Models: --model NAME is sent to the OpenAI-compatible endpoint at --base-url
(default $OPENAI_BASE_URL, else OpenAI) with the key in $OPENAI_API_KEY; the
default name is $CTXCODE_MODEL, else gpt-4o-mini. --model reference is the
offline model: it plays each built-in task's reference solution.

Exit codes: 0 answered; 1 kernel, sandbox or model API failure; 2 bad input;
3 no answer within the budget; 130 interrupted (what finished is printed).
`

type askOptions struct {
	sandbox    sandboxFlags
	dataDir    string
	prefixName string
	rung       agent.Rung // the condition (or mode) the question is asked in
	protocol   string
	model      string
	modelFlags
	task       string
	trajectory string
	force      bool
	json       bool
	noCache    bool
	question   string
	progress   *progress // the progress line and retry notes on stderr
}

func parseAsk(args []string, stderr io.Writer) (*askOptions, error) {
	o := &askOptions{}
	fs := newFlagSet("ask", askUsage, stderr)
	o.sandbox.register(fs)
	var mode, condition string
	fs.StringVar(&condition, "condition", "", "the rung of the ladder: A (read and bash tools), B (eval tool), B0 (eval, nothing bound), D (bare loop), C (one shot)")
	fs.StringVar(&o.dataDir, "data", "", "data folder (default: the built-in project-management data, tier xl)")
	fs.StringVar(&o.prefixName, "prefix", "", "prefix: a built-in name or a file (default: pm for ctxcode data, else one written by prefix init)")
	fs.StringVar(&mode, "mode", string(agent.Loop), "loop (the bare loop, condition D) or oneshot (one code block, condition C)")
	fs.StringVar(&o.protocol, "protocol", "", "loop protocol: bare (D, the default) or eval (B, B0: one eval tool)")
	fs.StringVar(&o.model, "model", "", "model name at the endpoint, or reference (default: $CTXCODE_MODEL, else gpt-4o-mini)")
	fs.StringVar(&o.task, "task", "", "a built-in task to ask and grade")
	fs.StringVar(&o.trajectory, "trajectory", "", "write every event of the run to this file, one JSON object per line")
	fs.BoolVar(&o.force, "force", false, "overwrite --trajectory if it exists")
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object")
	fs.BoolVar(&o.noCache, "no-cache", false, "build the prefix before the first request, and keep no built prefix in the cache folder")
	o.modelFlags.register(fs, "seed")
	// Flags may come before or after the question, whose words are joined.
	if err := fs.parse(args, -1, ""); err != nil {
		return nil, err
	}
	if err := o.sandbox.check(); err != nil {
		return nil, err
	}
	o.question = strings.TrimSpace(strings.Join(fs.Args(), " "))
	switch {
	case o.task == "all":
		conds := "A,B,B0,D,C"
		if condition != "" {
			conds = condition
		}
		return nil, usagef("ask --task all: ask answers one question; to run every task, in one condition or several, use ctxcode bench "+
			"(ctxcode bench --model M --conditions %s --data DIR --out RUNDIR): it runs them in parallel, grades each, keeps every trial and resumes", conds)
	case o.question != "" && o.task != "":
		return nil, usagef("ask: give a question or --task, not both")
	case o.question == "" && o.task == "":
		return nil, usagef("ask: give a question, or --task ID for a built-in task\n\n%s", askUsage)
	}
	var err error
	if o.rung, err = parseRung(condition, mode, o.protocol, fs.Changed("mode"), fs.Changed("protocol"), o.prefixName != ""); err != nil {
		return nil, err
	}
	if err := o.modelFlags.check(); err != nil {
		return nil, err
	}
	if o.dataDir != "" {
		if err := checkDataDir("--data", o.dataDir); err != nil {
			return nil, err
		}
	}
	if o.trajectory != "" {
		if err := checkOutput("--trajectory", o.trajectory, o.force); err != nil {
			return nil, err
		}
	}
	if o.model == "" {
		if o.model, err = o.defaultModel("ask"); err != nil {
			return nil, err
		}
	}
	// The reference model runs ctxcode's own solutions, so without Docker
	// they may run on this host; a real model's code never does unless asked.
	o.sandbox.hostFallback = o.model == "reference"
	return o, nil
}

// askSetup is what every question of an ask shares.
type askSetup struct {
	dataDir  string
	manifest *datasets.Manifest
	tasks    []datasets.Task
	prefix   *prefixes.Prefix // the default one; the rung may start from its control
	control  *prefixes.Prefix // its control, when prefix init wrote both; else found for B0
	language kernel.Language  // of the rung's kernel
	rung     askRung
	// initTime is how long prefix init took to write prefix, when ask
	// wrote it (a folder that is not a ctxcode data set); 0 otherwise.
	initTime time.Duration
}

// askRung is the rung with its prefix (nil for none) and the model that
// plays it.
type askRung struct {
	agent.Rung
	prefix *prefixes.Prefix
	model  llm.Model
}

// condition is the ladder's name for the rung as it runs.
func (r askRung) condition() string {
	name := ""
	if r.prefix != nil {
		name = r.prefix.Name
	}
	return agent.Condition(r.Protocol, name)
}

func runAsk(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseAsk(args, stderr)
	if err != nil {
		return err
	}
	o.progress = newProgress(stderr)
	warm := o.warmUp(ctx)
	defer warm.wait()
	paced := paceGC()
	s, err := o.setup(stderr)
	paced()
	if err != nil {
		return err
	}
	var traj *agent.Trajectory
	if o.trajectory != "" {
		f, err := createOutput("--trajectory", o.trajectory, o.force)
		if err != nil {
			return err
		}
		defer f.Close()
		traj = agent.NewTrajectory(f)
	}
	job := askJob{question: o.question, rung: s.rung}
	if o.task != "" {
		t, err := findTask(s.tasks, o.task, s.dataDir)
		if err != nil {
			return err
		}
		job.question, job.task = t.Question, t
	}

	// The question starts in a fresh kernel, which its run starts, in the
	// background when its first request needs none: condition A, or a
	// prefix in the cache.
	cache := o.openCache(s, warm, o.progress)
	kern := &askKernel{o: o, lang: s.language, dataDir: s.dataDir, warn: o.progress}
	defer kern.close()

	res, err := o.ask(ctx, kern, cache, s, job, traj)
	if err != nil {
		return err
	}
	if err := traj.Err(); err != nil {
		fmt.Fprintf(stderr, "ctxcode: warning: %v\n", err)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res.record()); err != nil {
			return err
		}
	} else {
		printResult(stdout, res)
	}
	return res.exitError()
}

// paceGC lets the heap grow to five times what is live (GOGC=400) until the
// function it returns is called, unless GOGC is set. Before the first
// request, ask reads the data set into Go values that live until its tasks
// are made (some 20 MB for the xl tier): at the default pace the collector
// would run over them four times as they arrive, once at this one, which
// saves the start about a fifth of its time.
func paceGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(400)
	return func() { debug.SetGCPercent(old) }
}

type askJob struct {
	question string
	task     *datasets.Task
	rung     askRung
}

// setup finds the data, the tasks, the prefix and the model.
func (o *askOptions) setup(stderr io.Writer) (*askSetup, error) {
	s := &askSetup{dataDir: o.dataDir}
	if s.dataDir == "" {
		dir, err := datasets.Builtin(stderr)
		if err != nil {
			return nil, err
		}
		s.dataDir = dir
	}
	if err := checkDataDir("--data", s.dataDir); err != nil {
		return nil, err
	}
	noteData(s.dataDir, o.sandbox.followLinks, stderr)
	d, m, err := datasets.Load(s.dataDir)
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
	switch {
	case !bench.NeedsPrefix(o.rung):
		// Condition A alone: no prefix, so none is loaded or written.
	case o.prefixName != "":
		if s.prefix, err = prefixes.Load(o.prefixName); err != nil {
			return nil, usagef("%v", err)
		}
	case s.manifest != nil:
		if s.prefix, err = prefixes.Load("pm"); err != nil {
			return nil, err
		}
	default:
		start := time.Now()
		res, err := initPrefixWith(s.dataDir, kernel.Python, o.sandbox.memoryLimit(), o.sandbox.followLinks, stderr)
		s.initTime = time.Since(start)
		if err != nil {
			return nil, usagef("no --prefix, and prefix init could not write one for %s: %v", s.dataDir, err)
		}
		if s.prefix, err = prefixes.Parse("init:"+s.dataDir, res.Source); err != nil {
			return nil, err
		}
		if o.rung.Prefix == agent.PrefixControl { // B0: the control prefix init wrote with it
			if s.control, err = prefixes.Parse("init:"+s.dataDir+" (control)", res.Control); err != nil {
				return nil, err
			}
		}
	}
	if o.task != "" && len(s.tasks) == 0 {
		return nil, usagef("--task needs a data set made by `ctxcode data gen`: %s has no built-in tasks", s.dataDir)
	}
	if o.model == "reference" && o.question != "" && !knownQuestion(s.tasks, o.question) {
		return nil, usagef("the reference model plays only the built-in tasks, and this question is not one of them: ask one with --task ID (list them with: ctxcode tasks --data %s), or use a real model", s.dataDir)
	}
	s.rung = askRung{Rung: o.rung}
	lp := bench.LadderPrefixes{Default: s.prefix, Named: o.prefixName != ""}
	if o.rung.Prefix == agent.PrefixControl {
		lp.Control, lp.ControlErr = bench.ControlOf(s.prefix, s.control)
	}
	if s.rung.prefix, err = lp.PrefixFor(o.rung, "--condition", "pass a prefix that binds nothing with --prefix"); err != nil {
		return nil, err
	}
	s.language = kernel.Python // A runs in the Python kernel, for its shell op
	if s.rung.prefix != nil {
		s.language = s.rung.prefix.Language
	}
	if s.rung.model, err = o.makeModel(s, s.rung.prefix); err != nil {
		return nil, err
	}
	return s, nil
}

// makeModel is the reference model for a rung that starts from prefix
// (nil for none), or the OpenAI-compatible client.
func (o *askOptions) makeModel(s *askSetup, prefix *prefixes.Prefix) (llm.Model, error) {
	if o.model == "reference" {
		return bench.BuiltinReference(s.tasks, prefix, session.Encoding(o.encoding))
	}
	return o.openAI(o.model, func(r llm.Retry) { o.progress.note("ctxcode: " + r.String()) }, nil)
}

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
	var ids []string
	for _, t := range tasks {
		ids = append(ids, t.ID)
	}
	hint := ""
	if len(ids) > 0 {
		hint = fmt.Sprintf(" (%s … %s)", ids[0], ids[len(ids)-1])
	}
	return nil, usagef("--task %q: no such task in %s%s; list them with: ctxcode tasks --data %s", id, dir, hint, dir)
}

// askResult is one answered (or not) question.
type askResult struct {
	job   askJob
	res   *agent.Result
	cache string // what the prefix cache did (askCache.state)
	// initTime is how long prefix init took to write the prefix before
	// the question's run; it counts in the question's wall time.
	initTime time.Duration
}

// wall is the question's wall time: its run's, and prefix init's before it.
func (r askResult) wall() time.Duration { return r.initTime + r.res.Wall }

// ask runs one question in a fresh kernel of kern, over its prefix cached
// in cache when it is there.
func (o *askOptions) ask(ctx context.Context, kern *askKernel, cache askCache, s *askSetup, job askJob, traj *agent.Trajectory) (askResult, error) {
	cfg := o.agent
	cfg.Protocol = job.rung.Protocol
	model := job.rung.model
	info := agent.Info{Model: model.Name(), Question: job.question}
	if o.model != "reference" {
		info.BaseURL = o.endpoint()
	}
	if job.task != nil {
		info.Task = job.task.ID
	}
	if s.manifest != nil {
		info.Data = s.manifest
	}
	// The wall time of a question counts from here: the kernel's start
	// (the first question's) or restart, and the prefix build, are in it.
	started := time.Now()
	key, cached := cache.lookup(job.rung.prefix, o.progress)
	sess := &agent.Session{Start: kern.ready, Prefix: job.rung.prefix, Cached: cached, Started: started}
	if job.rung.prefix == nil {
		// A: no prefix; the skill document describes the files, and read
		// serves them from the folder the kernel shows as data/.
		sess.DataDir, sess.FollowLinks = s.dataDir, o.sandbox.followLinks
	}
	res, err := agent.Run(ctx, sess, model, cfg, info, traj, o.progress)
	o.progress.done()
	cache.keep(key, job.rung.prefix, sess.Kernel, res, o.progress)
	if err != nil {
		var be *prefixes.BuildError
		if errors.As(err, &be) {
			return askResult{}, usagef("%v", err)
		}
		return askResult{}, err
	}
	out := askResult{job: job, res: res, cache: cache.state(job.rung.prefix, res)}
	out.initTime, s.initTime = s.initTime, 0 // counted once, in the first question

	if job.task != nil {
		right, reason := false, ""
		if res.Status == agent.Answered {
			right, reason = datasets.Grade(*job.task, res.Answer)
		}
		// An unexecuted answer is graded and shown, never counted in accuracy.
		traj.Grade(job.task.ID, job.task.Gold, res.SetGrade(right, reason))
	}
	return out, nil
}

// record is the --json form of a result.
func (r askResult) record() map[string]any {
	u := r.res.Usage
	rec := map[string]any{
		"question":       r.job.question,
		"mode":           r.job.rung.Mode,
		"condition":      r.job.rung.condition(),
		"answer":         answerValue(r.res),
		"answer_source":  nullable(r.res.AnswerSource),
		"status":         r.res.Status,
		"turns":          r.res.Turns,
		"context_tokens": u.PromptTokens,
		"output_tokens":  u.CompletionTokens,
		"cached_tokens":  u.CachedTokens,
		"wall_ms":        r.wall().Milliseconds(),
		"setup_ms":       r.res.Setup.Milliseconds(),
		"model_ms":       r.res.Model.Milliseconds(),
		"waited_ms":      r.res.Waited.Milliseconds(),
		"retries":        r.res.Retries,
		"estimated":      u.Estimated,
		"restarts":       r.res.Restarts,
		// Calls sent over a cached prefix that the live one did not match:
		// their tokens are in the counts above.
		"discarded_calls": r.res.Discarded,
	}
	if r.res.Literal && r.res.Status == agent.Answered {
		rec["literal"] = true // ANSWER of a value typed in the cell
	}
	if r.res.Death != "" {
		rec["death"] = r.res.Death
	}
	if r.cache != "" {
		rec["prefix_cache"] = r.cache
	}
	if r.initTime > 0 {
		rec["prefix_init_ms"] = r.initTime.Milliseconds()
	}
	if u.ReasoningTokens > 0 {
		rec["reasoning_tokens"] = u.ReasoningTokens
	}
	if r.job.task != nil {
		rec["task"] = r.job.task.ID
		g := r.res.Grade
		rec["correct"] = g.Accurate()
		rec["verdict"] = g.Verdict
		if r.res.Status == agent.Answered {
			rec["answer_right"] = g.Correct
		}
		if g.Reason != "" {
			rec["grade"] = g.Reason
		}
	}
	if r.res.Err != nil {
		rec["error"] = r.res.Err.Error()
	}
	return rec
}

// answerValue is the answer as a JSON value: the executed value as it is,
// a stated answer as the text the model wrote, null without one.
func answerValue(res *agent.Result) any {
	switch {
	case res.Answer == "":
		return nil
	case res.AnswerSource == agent.Executed && json.Valid([]byte(res.Answer)):
		return json.RawMessage(res.Answer)
	}
	return res.Answer
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func printResult(w io.Writer, r askResult) {
	switch {
	case r.res.Status == agent.Answered && r.res.AnswerSource == agent.Unexecuted:
		fmt.Fprintf(w, "%s\n(unexecuted: the model stated this answer; no code computed it)\n", r.res.Answer)
	case r.res.Status == agent.Answered && r.res.Literal:
		fmt.Fprintf(w, "%s\n(literal: the model typed this value in its ANSWER call; that cell did not compute it)\n", r.res.Answer)
	case r.res.Status == agent.Answered:
		fmt.Fprintln(w, r.res.Answer)
	default:
		fmt.Fprintf(w, "no answer (%s)\n", r.res.Status)
	}
	if g := r.res.Grade; g != nil {
		switch {
		case g.Accurate():
			fmt.Fprintf(w, "correct (task %s)\n", r.job.task.ID)
		case g.Verdict == agent.GradeUnexecuted && g.Correct:
			fmt.Fprintf(w, "right but unexecuted (task %s): not counted as correct\n", r.job.task.ID)
		default:
			fmt.Fprintf(w, "wrong (task %s): %s\n", r.job.task.ID, g.Reason)
		}
	}
	fmt.Fprintln(w, r.costLine())
}

func (r askResult) costLine() string {
	res := r.res
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
	if r.job.rung.prefix == nil {
		setup = "kernel" // A: no prefix to build
	}
	if r.initTime > 0 {
		setup = fmt.Sprintf("prefix init %.2fs, %s", r.initTime.Seconds(), setup)
	}
	discarded := ""
	if res.Discarded > 0 {
		discarded = fmt.Sprintf(", %d discarded call (%d context tokens) over a stale cached prefix", res.Discarded, res.DiscardedUsage.PromptTokens)
	}
	return fmt.Sprintf("[%d %s, %d context tokens, %d output tokens, %d cached, %.2fs (model %.2fs, %s %.2fs)%s%s%s]",
		res.Turns, turns, u.PromptTokens, u.CompletionTokens, u.CachedTokens, r.wall().Seconds(), res.Model.Seconds(), setup, res.Setup.Seconds(),
		discarded, waited, est)
}

// exitError maps a run's status to the exit code of DESIGN.md.
func (r askResult) exitError() error {
	switch r.res.Status {
	case agent.Answered:
		return nil
	case agent.ModelFailed, agent.KernelFailed:
		return r.res.Err
	}
	msg := string(r.res.Status)
	if r.res.Err != nil {
		msg += ": " + r.res.Err.Error()
	}
	return &noAnswerError{msg: "no answer: " + msg}
}
