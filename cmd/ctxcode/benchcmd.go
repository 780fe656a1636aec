package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

var benchUsage = helpText("bench")

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
	// picksData says --tier or --seed was given.
	picksData bool
	// stages cuts the built-in tasks into sessions; policy is --context,
	// whose figures (--window, ...) go to agent.Context.
	stages int
	policy string
	// hosts are --hosts: the daemons the trials spread over.
	hosts []hostSlots
}

func parseBench(args []string, stderr io.Writer) (*benchOptions, error) {
	o := &benchOptions{}
	fs := newFlagSet("bench", benchUsage, stderr)
	o.sandbox.register(fs)
	o.modelFlags.register(fs, "sample-seed") // --seed is the data's
	var models, tasks, hosts string
	registerHosts(fs, &hosts)
	fs.StringVar(&o.out, "out", "", "the run directory (required): created, or resumed when it holds this run")
	fs.StringVar(&o.conditions, "conditions", strings.Join(agent.LadderNames(), ","), "the built-in conditions, a comma list of A, B, B0, D, C")
	fs.StringVar(&o.conditionsFile, "conditions-file", "", "variants of the conditions, JSON lines {\"name\", \"base\", \"rules\"?, \"prefix\"?}, run besides --conditions")
	fs.StringVar(&o.control, "control", "", "the control of --prefix, for B0: a prefix that binds nothing (default: NAME-nobind beside --prefix, pm-nobind for pm)")
	fs.Int64Var(&o.orderSeed, "order-seed", 0, "the seed of the order the trials run in (default: drawn, or the run's on a resume)")
	fs.StringVar(&models, "model", "", "models, a comma list: names at the endpoint, or reference (default: $CTXCODE_MODEL, else gpt-4o-mini)")
	fs.IntVar(&o.reps, "reps", 1, fmt.Sprintf("repetitions of every (model, condition, task), at most %d", bench.MaxReps))
	fs.IntVar(&o.parallel, "parallel", 0, fmt.Sprintf("trials at once, at most %d (default: the CPUs for reference, 4 per CPU up to 16 for an API model)", bench.MaxParallel))
	fs.BoolVar(&o.resume, "resume", false, "resume the run in --out (running the same command again does too); refuse if there is none")
	fs.BoolVar(&o.force, "force", false, "use an --out that holds other files, or discard the run it holds if its configuration differs")
	fs.StringVar(&o.tier, "tier", "xl", "built-in tasks: the data tier, s, m or xl")
	fs.Int64Var(&o.seed, "seed", 1, "built-in tasks: the data generator's seed")
	fs.StringVar(&o.dataDir, "data", "", "the data folder: one made by ctxcode data gen (its built-in tasks), or the data of the --tasks without their own \"data\"")
	fs.StringVar(&o.taskFile, "tasks", "", "your tasks: a JSON-lines file (needs --data and --prefix for tasks without their own \"data\" folder)")
	fs.StringVar(&o.prefixName, "prefix", "", "the prefix of B, D and C: a built-in name or a file (default pm for ctxcode data)")
	fs.StringVar(&tasks, "task", "", "only these tasks, a comma list of ids")
	fs.BoolVar(&o.json, "json", false, "print the summary as JSON lines, one per model and condition")
	fs.IntVar(&o.stages, "stages", 0, "built-in tasks: sessions of N questions each, asked in one conversation and kernel as one trial (see Staged workloads)")
	fs.StringVar(&o.policy, "context", "none", "every condition's context policy: none, elide, summarize or staged (a variant may set its own)")
	fs.IntVar(&o.agent.Context.Window, "window", session.DefaultWindow, "the context window, in tokens, the policy's thresholds are shares of")
	fs.Float64Var(&o.agent.Context.Soft, "soft", session.DefaultSoft, "elide and staged: elide stale cell outputs past this share of the window")
	fs.Float64Var(&o.agent.Context.Hard, "hard", session.DefaultHard, "summarize and staged: fold the old middle into a summary past this share of the window")
	fs.Float64Var(&o.agent.Context.Recent, "recent", session.DefaultRecent, "the share of the window the last turns keep whole")
	fs.BoolVar(&o.unsafeLocal, "unsafe-local", false, "with --sandbox local, run a model behind an API even where its kernels can read the run and the golds")
	if err := fs.parse(args, 0, ""); err != nil {
		return nil, err
	}
	o.orderSeedSet = fs.Changed("order-seed")
	if hosts != "" {
		if fs.Changed("docker-host") {
			return nil, usagef("--hosts names the daemons, and --docker-host one: drop --docker-host (or name its daemon in --hosts)")
		}
		if o.sandbox.kind == string(sandbox.KindKubernetes) {
			return nil, usagef("--hosts spreads trials over Docker daemons, and --sandbox kubernetes over a cluster's nodes: drop one of them")
		}
		var err error
		if o.hosts, err = parseHosts(hosts); err != nil {
			return nil, err
		}
	}
	if err := o.sandbox.check(); err != nil {
		return nil, err
	}
	if err := o.modelFlags.check(); err != nil {
		return nil, err
	}
	if o.out == "" {
		return nil, usagef("bench: give the run directory with --out RUNDIR (a new folder, or one that holds this run to resume it)")
	}
	o.picksData = fs.Changed("tier") || fs.Changed("seed")
	policy, err := session.ParsePolicy(o.policy)
	if err != nil {
		return nil, usagef("--context: %v", err)
	}
	o.agent.Context.Policy = policy
	if o.agent.Context.Window < 1 {
		return nil, usagef("--window %d: give the context window in tokens, 1 or more", o.agent.Context.Window)
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
	o.taskIDs = splitList(tasks)
	cfg := o.config()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	// Only the reference model's code (ctxcode's own solutions) may run on
	// this host when Docker is not there (runtimeIdentity reads it).
	o.sandbox.hostFallback = cfg.HostFallback()
	return o, nil
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

// config is the run the flags ask for.
func (o *benchOptions) config() bench.Config {
	mode := bench.Continue
	switch {
	case o.force:
		mode = bench.Restart
	case o.resume:
		mode = bench.MustResume
	}
	cfg := bench.Config{
		Out: o.out, Mode: mode,
		DataDir: o.dataDir, Tier: o.tier, Seed: o.seed, TaskFile: o.taskFile,
		Prefix: o.prefixName, Control: o.control,
		Conditions: o.conditions, ConditionsFile: o.conditionsFile, TaskIDs: o.taskIDs,
		Models: o.models, BaseURL: o.endpoint(),
		PicksData: o.picksData, Stages: o.stages,
		Reps: o.reps, Parallel: o.parallel, OrderSeed: o.orderSeed, OrderSeedSet: o.orderSeedSet,
		Agent:       o.agent,
		Sandbox:     o.sandbox.openOptions(""),
		FollowLinks: o.sandbox.followLinks,
		UnsafeLocal: o.unsafeLocal,
		Version:     version,
	}
	for _, h := range o.hosts {
		cfg.Hosts = append(cfg.Hosts, bench.HostSpec{Host: h.host, Slots: h.slots})
	}
	if o.modelFlags.seed >= 0 {
		seed := o.modelFlags.seed
		cfg.SampleSeed = &seed
	}
	return cfg
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	obs := newBenchProgress(stderr)
	gate := llm.NewThrottle(0) // one for the endpoint every API model shares
	cfg := o.config()
	cfg.OpenModel = func(name string) (llm.Model, error) {
		return o.openAI(name, func(r llm.Retry) { obs.note("ctxcode: " + r.String()) }, gate)
	}
	cfg.SeeData = func(dir string) { noteData(dir, o.sandbox.followLinks, stderr) }
	for i := range cfg.Hosts {
		cfg.Hosts[i].EnsureImage = copyImage(stderr) // a host without the kernel image gets this daemon's
	}
	s, err := bench.Prepare(cfg, stderr)
	if err != nil {
		return err
	}
	run := s.Run
	run.Warn, run.Observer = obs, obs
	log, cleanup, err := s.Open(ctx, stderr)
	defer cleanup()
	if err != nil {
		return err
	}
	defer log.Close()
	if s.OrderSeedDrawn {
		fmt.Fprintf(stderr, "ctxcode: the trials run interleaved in the order of seed %d (kept in run.json; --order-seed %d gives it again)\n", s.OrderSeed, s.OrderSeed)
	}
	out, err := run.Execute(ctx, log)
	obs.finish()
	if out != nil {
		if perr := bench.WriteSummary(stdout, out, run.Spec, o.out, o.json); perr != nil && err == nil {
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
	if n := bench.InfraCount(out.Final); n > 0 {
		return fmt.Errorf("%d trial(s) ended in an infrastructure failure (kernel, sandbox or API), not the model's result: run the same command again to retry them", n)
	}
	return nil
}

// copyImage is bench --hosts' way to put the kernel image on a host that
// lacks it: copied from the daemon this machine names (DOCKER_HOST, the
// current context or the local socket) through the API, once, with a
// progress bar in bytes.
func copyImage(stderr io.Writer) func(ctx context.Context, h sandbox.Host, image string) error {
	return func(ctx context.Context, h sandbox.Host, image string) error {
		from, err := sandbox.Connect(ctx, sandbox.Host{})
		if err != nil {
			return fmt.Errorf("copy the kernel image to %s: %w", h.Describe(), err)
		}
		defer from.Close()
		to, err := sandbox.Connect(ctx, h)
		if err != nil {
			return err
		}
		defer to.Close()
		fmt.Fprintf(stderr, "ctxcode: %s has no %s: copying it there from this machine's daemon\n", h.Describe(), image)
		var bar *progressbar.ProgressBar
		_, err = sandbox.EnsureImage(ctx, from, to, image, func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(stderr), progressbar.OptionShowBytes(true),
					progressbar.OptionSetDescription("copying the kernel image"), progressbar.OptionThrottle(250*time.Millisecond),
					progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }))
			}
			if done > bar.GetMax64() {
				bar.ChangeMax64(done) // the stream is a little larger than the image's size
			}
			_ = bar.Set64(done)
		})
		if bar != nil {
			_ = bar.Finish()
		}
		return err
	}
}
