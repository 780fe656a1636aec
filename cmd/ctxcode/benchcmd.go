package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

var benchUsage = helpText("bench")

// The caps of a run, far above what a run is meant to be, so that a typo
// (--reps 100000000) is refused at once rather than planned for minutes in
// gigabytes of memory.
const (
	maxReps     = 1000   // repetitions of every trial
	maxParallel = 256    // trials at once, each with its kernel
	maxTrials   = 100000 // models x conditions x tasks x reps
)

type benchOptions struct {
	sandbox sandboxFlags
	modelFlags
	out        string
	conditions string
	models     []string
	reps       int
	parallel   int
	resume     bool
	force      bool
	tier       string
	seed       int64
	dataDir    string
	taskFile   string
	prefixName string
	taskIDs    []string
	json       bool
	// conditionsFile holds variants of the built-in conditions; control is
	// the --prefix's control, for B0.
	conditionsFile string
	control        string
	orderSeed      int64
	orderSeedSet   bool
	// unsafeLocal accepts local kernels that can read the run and the
	// golds (kernel.Leaks).
	unsafeLocal bool
}

func parseBench(args []string, stderr io.Writer) (*benchOptions, error) {
	o := &benchOptions{}
	fs := newFlagSet("bench", benchUsage, stderr)
	o.sandbox.register(fs)
	o.modelFlags.register(fs, "sample-seed") // --seed is the data's
	var models, tasks string
	fs.StringVar(&o.out, "out", "", "the run directory (required): created, or resumed when it holds this run")
	fs.StringVar(&o.conditions, "conditions", strings.Join(agent.LadderNames(), ","), "the built-in conditions, a comma list of A, B, B0, D, C")
	fs.StringVar(&o.conditionsFile, "conditions-file", "", "variants of the conditions, JSON lines {\"name\", \"base\", \"rules\"?, \"prefix\"?}, run besides --conditions")
	fs.StringVar(&o.control, "control", "", "the control of --prefix, for B0: a prefix that binds nothing (default: NAME-nobind beside --prefix, pm-nobind for pm)")
	fs.Int64Var(&o.orderSeed, "order-seed", 0, "the seed of the order the trials run in (default: drawn, or the run's on a resume)")
	fs.StringVar(&models, "model", "", "models, a comma list: names at the endpoint, or reference (default: $CTXCODE_MODEL, else gpt-4o-mini)")
	fs.IntVar(&o.reps, "reps", 1, fmt.Sprintf("repetitions of every (model, condition, task), at most %d", maxReps))
	fs.IntVar(&o.parallel, "parallel", 0, fmt.Sprintf("trials at once, at most %d (default: the CPUs for reference, 4 per CPU up to 16 for an API model)", maxParallel))
	fs.BoolVar(&o.resume, "resume", false, "resume the run in --out (running the same command again does too); refuse if there is none")
	fs.BoolVar(&o.force, "force", false, "use an --out that holds other files, or discard the run it holds if its configuration differs")
	fs.StringVar(&o.tier, "tier", "xl", "built-in tasks: the data tier, s, m or xl")
	fs.Int64Var(&o.seed, "seed", 1, "built-in tasks: the data generator's seed")
	fs.StringVar(&o.dataDir, "data", "", "the data folder: one made by ctxcode data gen (its built-in tasks), or the data of --tasks")
	fs.StringVar(&o.taskFile, "tasks", "", "your tasks: a JSON-lines file (needs --data and --prefix)")
	fs.StringVar(&o.prefixName, "prefix", "", "the prefix of B, D and C: a built-in name or a file (default pm for ctxcode data)")
	fs.StringVar(&tasks, "task", "", "only these tasks, a comma list of ids")
	fs.BoolVar(&o.json, "json", false, "print the summary as JSON lines, one per model and condition")
	fs.BoolVar(&o.unsafeLocal, "unsafe-local", false, "with --sandbox local, run a model behind an API even where its kernels can read the run and the golds")
	if err := fs.parse(args, 0, ""); err != nil {
		return nil, err
	}
	o.orderSeedSet = fs.Changed("order-seed")
	if err := o.sandbox.check(); err != nil {
		return nil, err
	}
	if err := o.modelFlags.check(); err != nil {
		return nil, err
	}
	switch {
	case o.out == "":
		return nil, usagef("bench: give the run directory with --out RUNDIR (a new folder, or one that holds this run to resume it)")
	case o.reps < 1:
		return nil, usagef("--reps %d: give 1 or more", o.reps)
	case o.reps > maxReps:
		return nil, usagef("--reps %d: at most %d: each rep runs every (model, condition, task) again", o.reps, maxReps)
	case o.parallel < 0:
		return nil, usagef("--parallel %d: give 1 or more (0: the default)", o.parallel)
	case o.parallel > maxParallel:
		return nil, usagef("--parallel %d: at most %d trials at once, each with a kernel of up to --memory", o.parallel, maxParallel)
	case o.taskFile != "" && (o.dataDir == "" || o.prefixName == ""):
		return nil, usagef("--tasks needs --data DIR (the folder the tasks ask about) and --prefix P (the prefix their gold_code and solutions are written against)")
	case o.taskFile != "" && (fs.Changed("tier") || fs.Changed("seed")):
		return nil, usagef("--tasks brings its own tasks: drop --tier and --seed")
	case o.dataDir != "" && (fs.Changed("tier") || fs.Changed("seed")):
		return nil, usagef("--data names the data: drop --tier and --seed (they pick a built-in data set)")
	}
	if o.dataDir != "" {
		if err := checkDataDir("--data", o.dataDir); err != nil {
			return nil, err
		}
	}
	if o.taskFile != "" {
		if st, err := os.Stat(o.taskFile); err != nil || st.IsDir() {
			return nil, usagef("--tasks %s: no such file; give a JSON-lines file of tasks (see ctxcode bench -h)", o.taskFile)
		}
	}
	if o.conditionsFile != "" {
		if st, err := os.Stat(o.conditionsFile); err != nil || st.IsDir() {
			return nil, usagef("--conditions-file %s: no such file; give a JSON-lines file of condition variants (see ctxcode bench -h)", o.conditionsFile)
		}
	}
	if o.orderSeed < 0 {
		return nil, usagef("--order-seed %d: give 0 or more", o.orderSeed)
	}
	if err := checkRunDir(o.out); err != nil {
		return nil, err
	}
	if o.dataDir != "" && inside(o.out, o.dataDir) {
		// The kernels see the data folder: every later trial could read
		// the earlier ones' lines and golds there.
		return nil, usagef("--out %s is inside --data %s, which every kernel can read: put the run outside the data folder", o.out, o.dataDir)
	}
	if o.taskFile != "" {
		// The golds: a kernel that sees the file (inside the folder, by a
		// link --follow-links takes, or a hard link) reads them, and
		// condition A's skill document would show a line of it.
		rel, err := kernel.SeenAs(o.dataDir, kernel.WalkOptions{FollowLinks: o.sandbox.followLinks}, o.taskFile)
		if err != nil {
			return nil, usagef("--tasks %s, --data %s: %v", o.taskFile, o.dataDir, unwrapPath(err))
		}
		if rel != "" {
			return nil, usagef("--tasks %s is inside --data %s (as data/%s), which every kernel can read: the golds would be in reach of the model; "+
				"put the task file outside the data folder", o.taskFile, o.dataDir, rel)
		}
	}
	for _, m := range strings.Split(models, ",") {
		if m = strings.TrimSpace(m); m == "" && strings.TrimSpace(models) != "" {
			return nil, usagef("--model %q: an empty name in the list", models)
		}
		if m != "" {
			o.models = append(o.models, m)
		}
	}
	if len(o.models) == 0 {
		m, err := o.defaultModel("bench")
		if err != nil {
			return nil, err
		}
		o.models = []string{m}
	}
	if dup := duplicate(o.models); dup != "" {
		return nil, usagef("--model: %s is named twice", dup)
	}
	o.taskIDs = splitList(tasks)
	// Only the reference model's code (ctxcode's own solutions) may run on
	// this host when Docker is not there.
	// A task file's gold_code and solutions are the user's code, not ctxcode's.
	o.sandbox.hostFallback = len(o.models) == 1 && o.models[0] == llm.ReferenceName && o.taskFile == ""
	if err := o.checkLocal(); err != nil {
		return nil, err
	}
	if o.parallel == 0 {
		o.parallel = defaultParallel(o.models)
	}
	return o, nil
}

// checkLocal refuses a run of a model behind an API in local kernels that
// can read what its model must not (kernel.Leaks: the run directory, with
// the other trials' answers, and the task file, with the golds), unless
// --unsafe-local accepts it. The reference model plays ctxcode's own
// solutions: nothing to leak to.
func (o *benchOptions) checkLocal() error {
	if o.sandbox.kind != string(sandbox.KindLocal) || o.unsafeLocal {
		return nil
	}
	var api []string
	for _, m := range o.models {
		if m != llm.ReferenceName {
			api = append(api, m)
		}
	}
	if len(api) == 0 {
		return nil
	}
	var secrets []string
	if o.taskFile != "" {
		secrets = append(secrets, o.taskFile)
	}
	why := kernel.Leaks(os.Geteuid(), kernel.LocalConfinement(false), secrets...)
	if len(why) == 0 {
		return nil
	}
	return usagef("--sandbox local: %s; model %s could then read answers it must find itself. Use --sandbox docker "+
		"(each kernel in a container that sees only the data), or pass --unsafe-local to accept it",
		strings.Join(why, "; "), strings.Join(api, ", "))
}

// defaultParallel is the reference model's one trial per CPU (its trials
// are all kernel work, so more would only queue for the CPUs), or, when a
// model behind an API is in the run, 4 trials per CPU up to 16: those
// trials mostly wait for the API while their kernels idle (an idle kernel
// costs memory, not CPU), and more than 16 at once meets most providers'
// rate limits, which the shared limiter then has to hold back anyway.
func defaultParallel(models []string) int {
	n := runtime.NumCPU()
	for _, m := range models {
		if m != llm.ReferenceName {
			return min(4*n, 16)
		}
	}
	return max(n, 1)
}

// checkRunDir refuses an --out that cannot become a run directory: a
// file, or a folder whose parent does not exist or takes no files.
func checkRunDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return usagef("--out %s: a file, not a folder: give a folder for the run", dir)
	case err == nil:
		return checkWritableDir("--out", dir, "the run")
	case errors.Is(err, os.ErrNotExist):
		return checkWritableDir("--out", filepath.Dir(filepath.Clean(dir)), dir)
	}
	return usagef("--out %s: %v", dir, unwrapPath(err))
}

// inside says whether path is dir or in it (after resolving both).
func inside(path, dir string) bool {
	p, d := absPath(path), absPath(dir)
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(r, filepath.Base(p))
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func duplicate(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// benchSetup is what the run is made of, found before any trial.
type benchSetup struct {
	dataDir    string
	manifest   *datasets.Manifest
	source     bench.TaskSource
	tasks      []datasets.Task
	userTasks  []bench.UserTask // with --tasks, in tasks' order: those of its good lines
	taskFile   string
	problems   []bench.TaskProblem // of the task file, reported with gold_code's (taskProblems)
	prefix     *prefixes.Prefix    // --prefix, or pm
	conditions []bench.Condition
	language   kernel.Language
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	s, err := o.setup(stderr)
	if err != nil {
		return err
	}
	drawn := false // the order's seed was drawn now: said once the run is open
	if !o.orderSeedSet {
		// A resume keeps the order of the run it resumes; a new run draws
		// one, and says which, so that it can be given again.
		seed, ok := bench.StoredOrderSeed(o.out)
		if !ok {
			seed = bench.NewOrderSeed()
		}
		o.orderSeed, drawn = seed, !ok
	}
	obs := newBenchProgress(stderr)
	run := &bench.Run{
		Conditions: s.conditions,
		DataDir:    s.dataDir,
		Language:   s.language,
		Agent:      o.agent,
		Parallel:   o.parallel,
		Warn:       obs,
	}
	gate := llm.NewThrottle(0) // one for the endpoint every API model shares
	for _, name := range o.models {
		m := bench.Model{ModelInfo: bench.ModelInfo{Name: name}}
		if name == llm.ReferenceName {
			m.For = func(c bench.Condition) (llm.Model, error) { return s.reference(c, session.Encoding(o.encoding)) }
		} else {
			m.BaseURL = o.endpoint()
			if o.modelFlags.seed >= 0 {
				seed := o.modelFlags.seed
				m.Seed = &seed
			}
			// Made now, so that a model that cannot be made (no key, a bad
			// URL) is refused before the run folder is touched; every
			// condition's trials share the client.
			client, err := o.openAI(name, func(r llm.Retry) { obs.note("ctxcode: " + r.String()) }, gate)
			if err != nil {
				return err
			}
			if oc, ok := client.(*llm.OpenAI); ok {
				if t, sent := oc.Config().SentTemperature(); sent {
					m.Temperature = &t
				}
			}
			m.For = func(bench.Condition) (llm.Model, error) { return client, nil }
		}
		run.Models = append(run.Models, m)
	}
	mode := bench.Continue
	switch {
	case o.force:
		mode = bench.Restart
	case o.resume:
		mode = bench.MustResume
	}
	// The run folder is checked before any kernel starts: whole when the
	// golds are known, else all but the comparison of configurations
	// (gold_code runs in a kernel).
	var known *bench.Spec
	if !s.needsGolds() {
		if err := s.resolveGolds(ctx, nil, o.agent.CellTimeout); err != nil { // no kernel: every gold is given
			return err
		}
		spec, err := o.spec(ctx, s, run, nil)
		if err != nil {
			return err
		}
		known = &spec
	}
	if err := bench.Check(o.out, known, mode); err != nil {
		return usagef("--out %v", err)
	}
	tr, cleanup, err := o.sandbox.transport(ctx, s.language, s.dataDir, stderr)
	if err != nil {
		if perr := s.taskProblems(nil, "(gold_code was not run: "+err.Error()+")"); perr != nil && ctx.Err() == nil {
			return perr // what was found of the task file comes first
		}
		return err
	}
	defer cleanup()
	if err := s.resolveGolds(ctx, tr, o.agent.CellTimeout); err != nil {
		return err
	}
	run.Transport, run.Tasks = tr, s.tasks
	if run.Spec, err = o.spec(ctx, s, run, tr); err != nil {
		return err
	}
	log, err := bench.Open(o.out, run.Spec, mode, obs)
	var ce *bench.ConfigError
	if errors.As(err, &ce) {
		return usagef("--out %v", err)
	}
	if err != nil {
		return err
	}
	defer log.Close()
	if drawn {
		fmt.Fprintf(stderr, "ctxcode: the trials run interleaved in the order of seed %d (kept in run.json; --order-seed %d gives it again)\n", o.orderSeed, o.orderSeed)
	}
	run.Observer = obs
	out, err := run.Execute(ctx, log)
	obs.finish()
	if out != nil {
		if perr := printBenchSummary(stdout, out, run.Spec, o.out, o.json); perr != nil && err == nil {
			err = perr
		}
	}
	if th := gate.Stats(); th.Throttled > 0 {
		fmt.Fprintf(stderr, "ctxcode: the API asked to slow down %d times; the workers waited %s in all\n", th.Throttled, th.Waited.Round(1e6))
	}
	var be *prefixes.BuildError
	switch {
	case err != nil && ctx.Err() != nil:
		if out != nil {
			fmt.Fprintf(stderr, "ctxcode: the run stopped; run the same command again to finish it (%d of %d trials done)\n", len(out.Final), out.Total)
		}
		return err
	case errors.As(err, &be):
		return usagef("%v", err) // the prefix's fault, as in ask
	case err != nil:
		return fmt.Errorf("%w\n(the run in %s resumes: run the same command again once this is fixed)", err, o.out)
	}
	if n := infraCount(out.Final); n > 0 {
		return fmt.Errorf("%d trial(s) ended in an infrastructure failure (kernel, sandbox or API), not the model's result: run the same command again to retry them", n)
	}
	return nil
}

// setup finds the data, the tasks, the prefixes and the conditions, and
// refuses what cannot run, before any kernel starts.
func (o *benchOptions) setup(stderr io.Writer) (_ *benchSetup, err error) {
	s := &benchSetup{dataDir: o.dataDir}
	defer func() {
		if err != nil && len(s.problems) > 0 { // the task file's problems are reported with what stopped the setup
			err = s.taskProblems(nil, err.Error())
		}
	}()
	if s.dataDir == "" {
		dir, err := cachedData(o.tier, o.seed, stderr)
		if err != nil {
			return nil, err
		}
		s.dataDir = dir
	}
	noteData(s.dataDir, o.sandbox.followLinks, stderr)
	d, m, err := datasets.Load(s.dataDir)
	switch {
	case err == nil:
		s.manifest = m
		s.source = bench.TaskSource{Kind: "builtin", Tier: m.Tier, Seed: m.Seed}
	case errors.Is(err, datasets.ErrNotDataset) && o.taskFile != "":
	case errors.Is(err, datasets.ErrNotDataset):
		return nil, usagef("--data %s is not a ctxcode data set, so it has no built-in tasks: make one with ctxcode data gen, or bring your tasks with --tasks FILE and --prefix P", s.dataDir)
	default:
		return nil, dataError(err)
	}
	if o.taskFile != "" {
		// A bad line is not reported yet: with the missing solutions and
		// the gold_code that fails, all at once (taskProblems).
		s.taskFile = o.taskFile
		uts, err := bench.ReadTasks(o.taskFile)
		var tfe *bench.TaskFileError
		switch {
		case errors.As(err, &tfe) && len(uts) == 0:
			return nil, usagef("%v", err)
		case errors.As(err, &tfe):
			s.problems = tfe.Problems
		case err != nil:
			return nil, err
		}
		b, err := os.ReadFile(o.taskFile)
		if err != nil {
			return nil, err
		}
		h := sha256.Sum256(b)
		s.source = bench.TaskSource{Kind: "file", File: o.taskFile, SHA256: hex.EncodeToString(h[:])}
		s.userTasks = uts
	} else if s.tasks, err = datasets.Tasks(d); err != nil {
		return nil, err
	}
	if len(o.taskIDs) > 0 {
		if err := s.only(o.taskIDs); err != nil {
			return nil, err
		}
	}
	switch {
	case o.prefixName != "":
		if s.prefix, err = prefixes.Load(o.prefixName); err != nil {
			return nil, usagef("%v", err)
		}
	default:
		if s.prefix, err = prefixes.Load("pm"); err != nil {
			return nil, err
		}
	}
	if err := o.addConditions(s); err != nil {
		return nil, err
	}
	for _, name := range o.models {
		if name != llm.ReferenceName {
			continue
		}
		for _, ut := range s.userTasks {
			if ut.Solution == "" {
				s.problems = append(s.problems, bench.TaskProblem{Line: ut.Line, Msg: fmt.Sprintf(
					"task %s has no solution, which --model reference plays: add \"solution\" to it, or use a real model", ut.ID)})
			}
		}
		if s.language != kernel.Python {
			return nil, usagef("--model reference plays Python solutions; prefix %s is %s", s.prefix.Name, s.language)
		}
	}
	tasks := max(len(s.tasks), len(s.userTasks))
	if trials := len(o.models) * len(s.conditions) * tasks * o.reps; trials > maxTrials {
		return nil, usagef("the run would have %d trials (%d model(s) x %d condition(s) x %d task(s) x %d rep(s)), over the %d one run may have: "+
			"split it (--task, --conditions, --model) or give fewer --reps", trials, len(o.models), len(s.conditions), tasks, o.reps, maxTrials)
	}
	return s, nil
}

// addConditions gives s the run's conditions: the built-in ones of
// --conditions, then the variants of --conditions-file, each with the
// prefix it starts from. They must all run in one kernel language.
func (o *benchOptions) addConditions(s *benchSetup) error {
	rungs, err := parseConditions(o.conditions)
	if err != nil {
		return err
	}
	var variants []bench.Variant
	if o.conditionsFile != "" {
		if variants, err = bench.ReadConditions(o.conditionsFile); err != nil {
			return usagef("%v", err)
		}
	}
	lp := ladderPrefixes{def: s.prefix, named: o.prefixName != ""}
	var control *prefixes.Prefix
	if o.control != "" {
		if control, err = prefixes.Load(o.control); err != nil {
			return usagef("--control: %v", err)
		}
	}
	needControl := control != nil
	for _, r := range rungs {
		needControl = needControl || r.Prefix == agent.PrefixControl
	}
	for _, v := range variants {
		needControl = needControl || v.Prefix == "" && v.Rung().Prefix == agent.PrefixControl
	}
	if needControl {
		lp.control, lp.controlErr = controlOf(s.prefix, control)
		var ue *usageError
		if errors.As(lp.controlErr, &ue) {
			return lp.controlErr
		}
	}
	hint := "write one whose cells repeat full expressions and name it NAME" + prefixes.NoBindSuffix +
		" (ctxcode prefix init writes it beside NAME.py), name it with --control P0, or leave B0 out (--conditions A,B,D,C)"
	add := func(r agent.Rung, p *prefixes.Prefix, base string) error {
		lang := kernel.Python // A runs in the Python kernel, for its shell op
		if p != nil {
			lang = p.Language
		}
		if len(s.conditions) > 0 && lang != s.language {
			return usagef("--conditions: %s runs in the %s kernel and %s in the %s kernel; run them in two runs", s.conditions[0].Name, s.language, r.Name, lang)
		}
		s.language = lang
		s.conditions = append(s.conditions, bench.Condition{Name: r.Name, Protocol: r.Protocol, Prefix: p, Base: base, Rules: r.Rules})
		return nil
	}
	for _, r := range rungs {
		p, err := lp.prefixFor(r, "--conditions", hint)
		if err != nil {
			return err
		}
		if err := add(r, p, ""); err != nil {
			return err
		}
	}
	for _, v := range variants {
		r := v.Rung()
		var p *prefixes.Prefix
		if v.Prefix == "" {
			if p, err = lp.prefixFor(r, fmt.Sprintf("%s:%d: variant", o.conditionsFile, v.Line), hint); err != nil {
				return err
			}
		} else if p, err = variantPrefix(o.conditionsFile, v); err != nil {
			return err
		}
		if err := add(r, p, v.Base); err != nil {
			return err
		}
	}
	return nil
}

// variantPrefix loads the prefix a variant names: a built-in one, or a
// file relative to the conditions file's folder. It must fit the variant's
// base: a prefix that binds nothing for B0, one that binds for the others.
func variantPrefix(file string, v bench.Variant) (*prefixes.Prefix, error) {
	name := v.Prefix
	if !slices.Contains(prefixes.Builtins(), name) && !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(file), name)
	}
	p, err := prefixes.Load(name)
	if err != nil {
		return nil, usagef("%s:%d: prefix: %v", file, v.Line, err)
	}
	switch control := v.Rung().Prefix == agent.PrefixControl; {
	case control && !p.BindsNothing():
		return nil, usagef("%s:%d: prefix %s: variant %s of B0 needs a prefix that binds nothing (its name ends in %s)", file, v.Line, p.Name, v.Name, prefixes.NoBindSuffix)
	case !control && p.BindsNothing():
		return nil, usagef("%s:%d: prefix %s binds nothing: variant %s of %s needs a prefix that binds its variables (take base B0 for a control)", file, v.Line, p.Name, v.Name, v.Base)
	}
	return p, nil
}

// taskProblems is every problem of the task file found so far, and those
// of more, in the file's order, as one usage error, followed by also, a
// line of what else stopped the run (nil when there is no problem).
func (s *benchSetup) taskProblems(more []bench.TaskProblem, also string) error {
	all := append(slices.Clone(s.problems), more...)
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b bench.TaskProblem) int { return cmp.Compare(a.Line, b.Line) })
	msg := (&bench.TaskFileError{Path: s.taskFile, Problems: all}).Error()
	if also != "" {
		msg += "\n" + also
	}
	return usagef("%s", msg)
}

// only keeps the tasks named in ids, in the run's order.
func (s *benchSetup) only(ids []string) error {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var known []string
	if s.userTasks != nil {
		var kept []bench.UserTask
		for _, t := range s.userTasks {
			known = append(known, t.ID)
			if want[t.ID] {
				kept = append(kept, t)
				delete(want, t.ID)
			}
		}
		s.userTasks = kept
	} else {
		var kept []datasets.Task
		for _, t := range s.tasks {
			known = append(known, t.ID)
			if want[t.ID] {
				kept = append(kept, t)
				delete(want, t.ID)
			}
		}
		s.tasks = kept
	}
	if len(want) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		sort.Strings(missing)
		hint := ""
		if len(known) > 0 {
			hint = fmt.Sprintf(" (the tasks are %s … %s)", known[0], known[len(known)-1])
		}
		return usagef("--task: no task %s%s", strings.Join(missing, ", "), hint)
	}
	return nil
}

// needsGolds says whether some user task's gold is computed by its
// gold_code in a kernel.
func (s *benchSetup) needsGolds() bool {
	for _, ut := range s.userTasks {
		if ut.GoldCode != "" {
			return true
		}
	}
	return false
}

// resolveGolds computes the gold of every user task that has gold_code,
// each in a fresh kernel over the prefix, and then refuses the task file
// with every problem found in it: its bad lines, the missing solutions,
// the gold_code that failed.
func (s *benchSetup) resolveGolds(ctx context.Context, tr kernel.Transport, timeout time.Duration) error {
	if s.userTasks == nil || len(s.tasks) > 0 { // built-in tasks, or resolved already
		return nil
	}
	golds, problems, err := bench.ResolveGolds(ctx, tr, s.prefix, s.userTasks, kernel.ExecOptions{Timeout: timeout})
	var be *prefixes.BuildError
	switch {
	case err != nil && ctx.Err() == nil && len(s.problems) > 0:
		return s.taskProblems(nil, "(gold_code was not run: "+err.Error()+")")
	case errors.As(err, &be):
		return usagef("%v", err) // the prefix's fault
	case err != nil:
		return err
	}
	if err := s.taskProblems(problems, ""); err != nil {
		return err
	}
	s.tasks = golds
	return nil
}

// reference is the reference model for condition c.
func (s *benchSetup) reference(c bench.Condition, enc session.Encoding) (llm.Model, error) {
	if s.userTasks == nil {
		return builtinReference(s.tasks, c.Prefix, enc)
	}
	solutions := map[string]string{}
	for _, ut := range s.userTasks {
		solutions[ut.Question] = ut.Reference(c.Prefix, s.prefix)
	}
	return llm.NewReference(solutions, enc), nil
}

// spec is what run.json records of the run. Its kernels run through tr;
// before tr is open (nil), where they will run is what the flags say, and
// the runtime is not known (zero).
func (o *benchOptions) spec(ctx context.Context, s *benchSetup, run *bench.Run, tr kernel.Transport) (bench.Spec, error) {
	sp := bench.Spec{
		Version:  version,
		Tasks:    s.source,
		Reps:     o.reps,
		Budgets:  bench.BudgetsOf(o.agent),
		Data:     bench.DataInfo{Dir: s.dataDir, FollowLinks: o.sandbox.followLinks},
		Parallel: o.parallel,
		// The order is not a result's: a resume under another seed is
		// refused only when --order-seed asks for it (runBench).
		OrderSeed: o.orderSeed,
	}
	sp.TaskList = s.tasks
	for _, m := range run.Models {
		sp.Models = append(sp.Models, m.ModelInfo)
	}
	for _, c := range s.conditions {
		ci := c.Info()
		var err error
		if ci.FirstRequest, err = run.FirstRequestSHA256(c, o.sandbox.followLinks); err != nil {
			return bench.Spec{}, err
		}
		sp.Conditions = append(sp.Conditions, ci)
	}
	if s.manifest != nil {
		sp.Data.Manifest = s.manifest
		b, _ := json.Marshal(s.manifest)
		h := sha256.Sum256(b)
		sp.Data.SHA256 = hex.EncodeToString(h[:])
	} else {
		sp.Data.SHA256 = folderHash(s.dataDir, o.sandbox.followLinks)
	}
	sp.Sandbox = bench.SandboxInfo{Kind: string(sandbox.KindLocal), NoIPython: o.sandbox.noIPython}
	cfg := o.sandbox.dockerConfig()
	d, docker := tr.(*sandbox.Docker)
	if docker {
		cfg = d.Config()
	}
	// Else the host: --sandbox local, or no Docker for the reference model.
	if docker || tr == nil && o.sandbox.kind != string(sandbox.KindLocal) {
		sp.Sandbox = bench.SandboxInfo{Kind: string(sandbox.KindDocker), Image: cfg.Image, NoIPython: o.sandbox.noIPython,
			Network: cfg.Network, Memory: cfg.Memory, MemorySwap: cfg.Swap, CPUs: cfg.CPUs, Pids: cfg.Pids, TmpSize: cfg.TmpSize,
			User: cfg.User, WritableRoot: cfg.WritableRoot, KeepCaps: cfg.KeepCaps, NewPrivileges: cfg.NewPrivileges}
	}
	if tr == nil {
		return sp, nil
	}
	// What runs the cells, as the transcript cache keys it.
	var err error
	if sp.Runtime.Driver, err = prefixes.DriverVersion(s.language); err != nil {
		return bench.Spec{}, err
	}
	if docker {
		if sp.Runtime.ImageID, err = sandbox.ImageID(ctx, sp.Sandbox.Image); err != nil {
			return bench.Spec{}, fmt.Errorf("the kernel image %s: %w", sp.Sandbox.Image, err)
		}
	} else {
		sp.Runtime.Interpreter = o.sandbox.openOptions(s.language).RuntimeIdentity("")
	}
	return sp, nil
}

// folderHash identifies a data folder that has no manifest as the kernels
// see it (kernel.WalkReadOnly, links out of it followed with followLinks):
// the SHA-256 of every file's path and bytes, in path order.
func folderHash(dir string, followLinks bool) string {
	h := sha256.New()
	_ = kernel.WalkReadOnly(dir, kernel.WalkOptions{FollowLinks: followLinks}, func(e kernel.DataEntry) error {
		if e.Dir {
			return nil
		}
		f, err := kernel.OpenData(e)
		if err != nil {
			return nil
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", e.Rel)
		_, _ = io.Copy(h, io.LimitReader(f, e.Size))
		h.Write([]byte{0})
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

func infraCount(final []bench.Trial) int {
	n := 0
	for _, t := range final {
		if t.Class == bench.ClassInfra {
			n++
		}
	}
	return n
}

// printBenchSummary prints the table per (model, condition), bench.Summarize's
// rows (the figures the report shows), and where the run is.
func printBenchSummary(w io.Writer, out *bench.Outcome, spec bench.Spec, dir string, asJSON bool) error {
	rows := bench.Summarize(spec, out.Final)
	if asJSON {
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	many := false
	for _, r := range rows {
		many = many || r.Model != rows[0].Model
	}
	if many {
		fmt.Fprintf(w, "%-20s ", "model")
	}
	fmt.Fprintf(w, "%-9s %9s %9s %6s %7s %15s %14s %8s\n", "condition", "correct", "accuracy", "infra", "turns", "context tokens", "output tokens", "wall")
	for _, r := range rows {
		if many {
			fmt.Fprintf(w, "%-20s ", r.Model)
		}
		if r.Graded == 0 { // no result (every trial an infra failure, or none ran yet): nothing to average
			fmt.Fprintf(w, "%-9s %9s %9s %6d %7s %15s %14s %8s\n", r.Condition, "-", "-", r.Infra, "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(w, "%-9s %5d/%-3d %8.0f%% %6d %7.2f %15.0f %14.0f %7.1fs\n", r.Condition, r.Correct, r.Graded, 100*r.Accuracy,
			r.Infra, r.Turns, r.ContextTokens, r.OutputTokens, r.WallMS/1000)
	}
	for _, r := range rows {
		if r.Unexecuted > 0 {
			fmt.Fprintf(w, "%-8s %d unexecuted answer(s), %d of them right: stated in text, not computed by code, so not counted in accuracy\n",
				r.Condition, r.Unexecuted, r.UnexecutedRight)
		}
		if r.Literal > 0 {
			fmt.Fprintf(w, "%-8s %d literal answer(s), %d of them right: ANSWER of a value typed in the cell; counted in accuracy\n",
				r.Condition, r.Literal, r.LiteralRight)
		}
		if r.KernelDied > 0 {
			fmt.Fprintf(w, "%-8s %d kernel death(s): the model's own code killed its kernel (status kernel_died); graded wrong\n",
				r.Condition, r.KernelDied)
		}
	}
	for _, r := range rows {
		if r.Estimated {
			fmt.Fprintln(w, "(means per trial; token counts estimated by the tokenizer where the model reported none)")
			break
		}
	}
	var waits []string
	waited := false
	for _, r := range rows {
		if r.Graded > 0 {
			waits = append(waits, fmt.Sprintf("%s %.2fs", r.Condition, r.PoolWaitMS/1000))
			waited = waited || r.PoolWaitMS >= 1
		}
	}
	if waited && !many {
		// The harness's time, not the trials': wall leaves it out.
		fmt.Fprintf(w, "waiting for a pooled kernel, apart from wall (mean per trial): %s\n", strings.Join(waits, ", "))
	}
	// A trial that ended in an infra failure has a line, not a result.
	infra := infraCount(out.Final)
	results := len(out.Final) - infra
	fmt.Fprintf(w, "%d of %d trials have a result (%d run now, %d from before)", results, out.Total, results-out.Skipped, out.Skipped)
	if infra > 0 {
		fmt.Fprintf(w, "; %d ended in an infrastructure failure, to run again when the run resumes", infra)
	}
	fmt.Fprintf(w, "; the run is in %s\n", dir)
	return nil
}
