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

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/sandbox"
)

var askUsage = helpText("ask")

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
	if err := o.checkFiles("ask"); err != nil {
		return nil, err
	}
	return o, nil
}

func runAsk(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseAsk(args, stderr)
	if err != nil {
		return err
	}
	o.progress = newProgress(stderr)
	paced := paceGC()
	s, err := o.prepare(ctx, stderr)
	paced()
	if err != nil {
		return askError(err)
	}
	defer s.Close()
	traj, closeTraj, err := o.openTrajectory()
	if err != nil {
		return err
	}
	defer closeTraj()
	res, err := s.Ask(ctx, traj, o.progress)
	o.progress.done()
	if err != nil {
		return askError(err)
	}
	if err := traj.Err(); err != nil {
		fmt.Fprintf(stderr, "ctxcode: warning: %v\n", err)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res.Record()); err != nil {
			return err
		}
	} else {
		printResult(stdout, res)
	}
	return exitError(res.Run)
}

// prepare is bench.PrepareAsk over the flags: the built-in data set when
// no --data is given, the ladder's prefixes, the reference or the
// OpenAI-compatible model.
func (o *askOptions) prepare(ctx context.Context, stderr io.Writer) (*bench.AskSetup, error) {
	cfg, err := o.askConfig(stderr)
	if err != nil {
		return nil, err
	}
	return bench.PrepareAsk(ctx, cfg, o.progress)
}

// askConfig is bench.AskConfig over the flags (ask's, and chat's).
func (o *askOptions) askConfig(stderr io.Writer) (bench.AskConfig, error) {
	dataDir := o.dataDir
	if dataDir == "" {
		dir, err := datasets.Builtin(stderr)
		if err != nil {
			return bench.AskConfig{}, err
		}
		dataDir = dir
	}
	noteData(dataDir, o.sandbox.followLinks, stderr)
	cfg := bench.AskConfig{
		DataDir: dataDir, Prefix: o.prefixName, Rung: o.rung, Question: o.question, Task: o.task,
		Reference: o.model == "reference", Agent: o.agent,
		Sandbox: o.sandbox.openOptions(kernel.Python), NoCache: o.noCache,
	}
	cfg.OpenModel = func() (llm.Model, error) {
		return o.openAI(o.model, func(r llm.Retry) { o.progress.note("ctxcode: " + r.String()) }, nil)
	}
	if !cfg.Reference {
		cfg.BaseURL = o.endpoint()
	}
	return cfg, nil
}

// askError is err with bad input (*bench.InputError, *sandbox.InputError)
// made a usage error: exit code 2.
func askError(err error) error {
	var ie *bench.InputError
	var se *sandbox.InputError
	switch {
	case errors.As(err, &ie):
		return usagef("%s", ie.Msg)
	case errors.As(err, &se):
		return usagef("%v", se)
	}
	return err
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

func printResult(w io.Writer, r *bench.AskResult) {
	res := r.Run
	switch {
	case res.Status == agent.Answered && res.AnswerSource == agent.Unexecuted:
		fmt.Fprintf(w, "%s\n(unexecuted: the model stated this answer; no code computed it)\n", res.Answer)
	case res.Status == agent.Answered && res.Literal:
		fmt.Fprintf(w, "%s\n(literal: the model typed this value in its ANSWER call; that cell did not compute it)\n", res.Answer)
	case res.Status == agent.Answered:
		fmt.Fprintln(w, res.Answer)
	default:
		fmt.Fprintf(w, "no answer (%s)\n", res.Status)
	}
	if g := res.Grade; g != nil {
		switch {
		case g.Accurate():
			fmt.Fprintf(w, "correct (task %s)\n", r.Task.ID)
		case g.Verdict == agent.GradeUnexecuted && g.Correct:
			fmt.Fprintf(w, "right but unexecuted (task %s): not counted as correct\n", r.Task.ID)
		default:
			fmt.Fprintf(w, "wrong (task %s): %s\n", r.Task.ID, g.Reason)
		}
	}
	fmt.Fprintln(w, r.CostLine())
}

// exitError maps a run's status to the exit code of DESIGN.md.
func exitError(res *agent.Result) error {
	switch res.Status {
	case agent.Answered:
		return nil
	case agent.ModelFailed, agent.KernelFailed:
		return res.Err
	}
	msg := string(res.Status)
	if res.Err != nil {
		msg += ": " + res.Err.Error()
	}
	return &noAnswerError{msg: "no answer: " + msg}
}

// checkFiles refuses, before any kernel starts, a --data that is not a
// folder and a --trajectory that may not be written, and names the model
// when none was given, for command cmd (ask, chat).
func (o *askOptions) checkFiles(cmd string) error {
	if o.dataDir != "" {
		if err := checkDataDir("--data", o.dataDir); err != nil {
			return err
		}
	}
	if o.trajectory != "" {
		if err := checkOutput("--trajectory", o.trajectory, o.force); err != nil {
			return err
		}
	}
	if o.model == "" {
		m, err := o.defaultModel(cmd)
		if err != nil {
			return err
		}
		o.model = m
	}
	// The reference model runs ctxcode's own solutions, so without Docker
	// they may run on this host; a real model's code never does unless asked.
	o.sandbox.hostFallback = o.model == "reference"
	return nil
}

// openTrajectory creates --trajectory (refused when it exists, without
// --force), for ask and chat; nil, and a no-op close, without the flag.
func (o *askOptions) openTrajectory() (*agent.Trajectory, func(), error) {
	if o.trajectory == "" {
		return nil, func() {}, nil
	}
	f, err := createOutput("--trajectory", o.trajectory, o.force)
	if err != nil {
		return nil, nil, err
	}
	return agent.NewTrajectory(f), func() { _ = f.Close() }, nil
}
