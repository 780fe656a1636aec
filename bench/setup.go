package bench

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

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/outfile"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// The caps of a run, far above what a run is meant to be, so that a typo
// (--reps 100000000) is refused at once rather than planned for minutes in
// gigabytes of memory.
const (
	MaxReps     = 1000   // repetitions of every trial
	MaxParallel = 256    // trials at once, each with its kernel
	MaxTrials   = 100000 // models x conditions x tasks x reps
)

// Config is a run to build, as plain values (ctxcode bench's flags, checked
// for form): Prepare turns it into a Setup, whose Open makes the Run ready
// to Execute. The zero value of a field is its default where one is said.
type Config struct {
	// Out is the run directory; Mode how Open treats a run already there.
	Out  string
	Mode OpenMode
	// DataDir is the data folder: one made by datasets (its built-in
	// tasks), or the data of TaskFile's tasks that bring none of their
	// own. "" is, without TaskFile, the built-in data of Tier (s, m or xl)
	// and Seed, generated once into the cache folder (datasets.Cached);
	// with TaskFile, that every task brings its own ("data").
	DataDir string
	Tier    string
	Seed    int64
	// TaskFile is a JSON-lines file of the user's tasks (ReadTasks): over
	// DataDir and Prefix, or over their own data folders, whose prefixes
	// prefix init writes (InitPrefix); "" for the data's built-in tasks.
	TaskFile string
	// Prefix is the prefix of B, D and C, a built-in name or a file; ""
	// for pm. Control is its control for B0 ("": prefixes.ControlOf).
	Prefix  string
	Control string
	// Conditions is a comma list of built-in conditions (ParseConditions);
	// ConditionsFile a file of variants (ReadConditions), "" for none.
	Conditions     string
	ConditionsFile string
	// Stages, above 0, cuts the built-in tasks into staged sessions of
	// this many questions (BuiltinSessions), each a trial; a task file
	// groups its own ("session", "stage") and takes none.
	Stages int
	// TaskIDs keeps only these tasks (or sessions, by name); nil keeps
	// all.
	TaskIDs []string
	// Models are the models' names: llm.ReferenceName, or names that
	// OpenModel makes clients of.
	Models []string
	// OpenModel makes the client of a model behind an API; it is called
	// once per such model in Prepare, and its error returned as it is.
	OpenModel func(name string) (llm.Model, error)
	// BaseURL (without credentials) and SampleSeed (nil: none sent) are
	// what run.json records of the API models' endpoint and sampling.
	BaseURL    string
	SampleSeed *int
	Reps       int // at least 1
	// Parallel is how many trials run at once; 0 for DefaultParallel.
	Parallel int
	// OrderSeed draws the trials' order; without OrderSeedSet the run's
	// stored one (StoredOrderSeed) is taken, or a new one drawn.
	OrderSeed    int64
	OrderSeedSet bool
	// PicksData says a Tier or Seed was asked for, which only the
	// built-in tasks take.
	PicksData bool
	Agent     agent.Config
	// Hosts, when not empty, are the Docker daemons the trials spread
	// over (bench --hosts; Run.Hosts): Sandbox configures the containers
	// on each, and its Host is not used.
	Hosts []HostSpec
	// Sandbox says where kernels run; Open fills its Lang, DataDir,
	// FollowLinks and HostFallback (the host when Docker is not there,
	// only for the reference model over the built-in tasks).
	Sandbox sandbox.OpenOptions
	// FollowLinks takes the files links in the data folder lead to
	// outside it.
	FollowLinks bool
	// UnsafeLocal accepts local kernels that can read the run and the
	// golds (kernel.Leaks) for a model behind an API.
	UnsafeLocal bool
	// Version is ctxcode's, recorded in run.json.
	Version string
	// SeeData, when not nil, is told the data folder once it is found,
	// before it is read.
	SeeData func(dir string)
}

// HostFallback says whether the kernels may run on this host when Docker
// is not there: only for ctxcode's own code, the reference model's
// solutions of the built-in tasks (a task file's gold_code and solutions
// are the user's).
func (c Config) HostFallback() bool {
	return len(c.Models) == 1 && c.Models[0] == llm.ReferenceName && c.TaskFile == ""
}

// sandboxFor is where the run's kernels of lang over dataDir start.
func (c Config) sandboxFor(lang kernel.Language, dataDir string) sandbox.OpenOptions {
	opts := c.Sandbox
	opts.Lang, opts.DataDir, opts.FollowLinks, opts.HostFallback = lang, dataDir, c.FollowLinks, c.HostFallback()
	return opts
}

// DefaultParallel is the reference model's one trial per CPU (its trials
// are all kernel work, so more would only queue for the CPUs), or, when a
// model behind an API is in the run, 4 trials per CPU up to 16: those
// trials mostly wait for the API while their kernels idle (an idle kernel
// costs memory, not CPU), and more than 16 at once meets most providers'
// rate limits, which the shared limiter then has to hold back anyway.
func DefaultParallel(models []string) int {
	n := runtime.NumCPU()
	for _, m := range models {
		if m != llm.ReferenceName {
			return min(4*n, 16)
		}
	}
	return max(n, 1)
}

// Setup is what a run is made of, found before any kernel starts. Run is
// the run without its Transport (and without its Tasks while gold_code is
// to run); set its Observer and Warn before Open.
type Setup struct {
	Run      *Run
	DataDir  string
	Manifest *datasets.Manifest // nil for data that is not a datasets folder
	Source   TaskSource
	// Tasks are the run's tasks with their golds; with a task file whose
	// golds come from gold_code, empty until Open resolves them.
	Tasks     []datasets.Task
	UserTasks []UserTask       // with a task file, in its order: those of its good lines
	Prefix    *prefixes.Prefix // Config.Prefix, or pm; nil when every task brings its own data
	// OrderSeed is the run's; OrderSeedDrawn says it was drawn now.
	OrderSeed      int64
	OrderSeedDrawn bool

	cfg      Config
	problems []TaskProblem // of the task file, reported with gold_code's (taskProblems)
	// folders are the data folders the task file's tasks bring, in the
	// order of their first task; ownFolder their folder, by task id.
	folders    []*ownFolder
	ownFolder  map[string]*ownFolder
	transports *transportSet // the kernels' transports, by data folder (Open)
	hostSets   []hostSet     // with Config.Hosts, each host's transports (Open)
	// referenceSkips are the tasks without a solution, which the
	// reference model has no trial of (when some task has one).
	referenceSkips map[string]bool
}

// Check refuses, before anything is read, a Config that cannot be a run:
// numbers out of range, a task file without its data and prefix, files
// that are not there, a run folder that cannot be written or lies in the
// data, a task file a kernel would see, a model named twice. Prepare
// checks it too.
func (c Config) Check() error {
	switch {
	case c.Out == "":
		return inputErrorf("bench: give the run directory with --out RUNDIR (a new folder, or one that holds this run to resume it)")
	case c.Reps < 1:
		return inputErrorf("--reps %d: give 1 or more", c.Reps)
	case c.Reps > MaxReps:
		return inputErrorf("--reps %d: at most %d: each rep runs every (model, condition, task) again", c.Reps, MaxReps)
	case c.Parallel < 0:
		return inputErrorf("--parallel %d: give 1 or more (0: the default)", c.Parallel)
	case len(c.Hosts) > 0 && c.Sandbox.Kind == sandbox.KindLocal:
		return inputErrorf("--hosts names Docker daemons and --sandbox local runs the kernels on this host: drop one of them")
	case c.Parallel > MaxParallel:
		return inputErrorf("--parallel %d: at most %d trials at once, each with a kernel of up to --memory", c.Parallel, MaxParallel)
	case c.TaskFile != "" && c.DataDir != "" && c.Prefix == "":
		return inputErrorf("--tasks needs --data DIR (the folder the tasks without their own \"data\" ask about) and --prefix P (the prefix their gold_code and solutions are written against)")
	case c.TaskFile != "" && c.DataDir == "" && (c.Prefix != "" || c.Control != ""):
		return inputErrorf("--prefix and --control name the prefixes of the tasks over --data, and there is no --data: give --data DIR too, or drop them " +
			"(a task's own data folder starts from the prefix prefix init writes for it)")
	case c.TaskFile != "" && c.PicksData:
		return inputErrorf("--tasks brings its own tasks: drop --tier and --seed")
	case c.DataDir != "" && c.PicksData:
		return inputErrorf("--data names the data: drop --tier and --seed (they pick a built-in data set)")
	case c.OrderSeed < 0:
		return inputErrorf("--order-seed %d: give 0 or more", c.OrderSeed)
	case c.Stages < 0 || c.Stages > MaxStages:
		return inputErrorf("--stages %d: give the questions of a session, 1 to %d (0: none, every task a trial of its own)", c.Stages, MaxStages)
	case c.Stages > 0 && c.TaskFile != "":
		return inputErrorf(`--stages cuts the built-in tasks into sessions, and --tasks brings its own: group a task file's tasks into sessions with "session" and "stage" on their lines, and drop --stages`)
	}
	if err := c.Agent.Context.Check(); err != nil {
		return inputErrorf("--context: %v", err)
	}
	if c.DataDir != "" {
		if err := outfile.CheckDataDir(c.DataDir); err != nil {
			return inputErrorf("--data %v", err)
		}
	}
	for _, f := range []struct{ flag, path, what string }{{"--tasks", c.TaskFile, "tasks"}, {"--conditions-file", c.ConditionsFile, "condition variants"}} {
		if st, err := os.Stat(f.path); f.path != "" && (err != nil || st.IsDir()) {
			return inputErrorf("%s %s: no such file; give a JSON-lines file of %s (see ctxcode bench -h)", f.flag, f.path, f.what)
		}
	}
	if err := checkRunDir(c.Out); err != nil {
		return err
	}
	if c.DataDir != "" && outfile.Inside(c.Out, c.DataDir) {
		// The kernels see the data folder: every later trial could read
		// the earlier ones' lines and golds there.
		return inputErrorf("--out %s is inside --data %s, which every kernel can read: put the run outside the data folder", c.Out, c.DataDir)
	}
	if c.TaskFile != "" && c.DataDir != "" {
		// The golds: a kernel that sees the file (inside the folder, by a
		// link FollowLinks takes, or a hard link) reads them, and
		// condition A's skill document would show a line of it.
		rel, err := kernel.SeenAs(c.DataDir, kernel.WalkOptions{FollowLinks: c.FollowLinks}, c.TaskFile)
		if err != nil {
			return inputErrorf("--tasks %s, --data %s: %v", c.TaskFile, c.DataDir, outfile.UnwrapPath(err))
		}
		if rel != "" {
			return inputErrorf("--tasks %s is inside --data %s (as data/%s), which every kernel can read: the golds would be in reach of the model; "+
				"put the task file outside the data folder", c.TaskFile, c.DataDir, rel)
		}
	}
	seen := map[string]bool{}
	for _, m := range c.Models {
		if seen[m] {
			return inputErrorf("--model: %s is named twice", m)
		}
		seen[m] = true
	}
	return nil
}

// checkRunDir refuses a run folder that cannot be one: a file, or a
// folder whose parent does not exist or takes no files.
func checkRunDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return inputErrorf("--out %s: a file, not a folder: give a folder for the run", dir)
	case err == nil:
		err = outfile.CheckWritableDir(dir, "the run")
	case errors.Is(err, os.ErrNotExist):
		err = outfile.CheckWritableDir(filepath.Dir(filepath.Clean(dir)), dir)
	default:
		return inputErrorf("--out %s: %v", dir, outfile.UnwrapPath(err))
	}
	if err != nil {
		return inputErrorf("--out: %v", err)
	}
	return nil
}

// Prepare finds the data, the tasks, the prefixes, the conditions and the
// models of the run cfg says, and refuses what cannot run (an *InputError)
// before any kernel starts. warn hears of the built-in data's generation.
func Prepare(cfg Config, warn io.Writer) (*Setup, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Parallel == 0 && len(cfg.Hosts) > 0:
		cfg.Parallel = MaxParallel // Open takes the hosts' slots
	case cfg.Parallel == 0:
		cfg.Parallel = DefaultParallel(cfg.Models)
	}
	if err := cfg.checkLocal(); err != nil {
		return nil, err
	}
	s := &Setup{cfg: cfg, Run: &Run{DataDir: cfg.DataDir, Agent: cfg.Agent, Parallel: cfg.Parallel}}
	if err := s.find(warn); err != nil {
		return nil, err
	}
	s.Run.DataDir = s.DataDir
	for _, name := range cfg.Models {
		m := Model{ModelInfo: ModelInfo{Name: name}}
		if name == llm.ReferenceName {
			m.For = func(c Condition) (llm.Model, error) { return s.reference(c, cfg.Agent.Encoding) }
			m.Skip = s.referenceSkips
			for _, ut := range s.UserTasks {
				if m.Skip[ut.ID] {
					m.SkipTasks = append(m.SkipTasks, ut.ID)
				}
			}
			for _, ss := range s.Run.Sessions { // a session with a stage it skips
				for _, id := range ss.Tasks {
					if m.Skip[id] && !m.Skip[ss.Name] {
						m.Skip[ss.Name] = true
						m.SkipTasks = append(m.SkipTasks, ss.Name)
					}
				}
			}
		} else {
			m.BaseURL, m.Seed = cfg.BaseURL, cfg.SampleSeed
			// Made now, so that a model that cannot be made (no key, a bad
			// URL) is refused before the run folder is touched; every
			// condition's trials share the client.
			client, err := cfg.OpenModel(name)
			if err != nil {
				return nil, err
			}
			if oc, ok := client.(*llm.OpenAI); ok {
				if t, sent := oc.Config().SentTemperature(); sent {
					m.Temperature = &t
				}
			}
			m.For = func(Condition) (llm.Model, error) { return client, nil }
		}
		s.Run.Models = append(s.Run.Models, m)
	}
	s.OrderSeed = cfg.OrderSeed
	if !cfg.OrderSeedSet {
		// A resume keeps the order of the run it resumes; a new run draws
		// one, and says which, so that it can be given again.
		seed, ok := StoredOrderSeed(cfg.Out)
		if !ok {
			seed = NewOrderSeed()
		}
		s.OrderSeed, s.OrderSeedDrawn = seed, !ok
	}
	return s, nil
}

// checkLocal refuses a run of a model behind an API in local kernels that
// can read what its model must not (kernel.Leaks: the run directory, with
// the other trials' answers, and the task file, with the golds), unless
// UnsafeLocal accepts it. The reference model plays ctxcode's own
// solutions: nothing to leak to.
func (c Config) checkLocal() error {
	if c.Sandbox.Kind != sandbox.KindLocal || c.UnsafeLocal {
		return nil
	}
	var api []string
	for _, m := range c.Models {
		if m != llm.ReferenceName {
			api = append(api, m)
		}
	}
	if len(api) == 0 {
		return nil
	}
	var secrets []string
	if c.TaskFile != "" {
		secrets = append(secrets, c.TaskFile)
	}
	why := kernel.Leaks(os.Geteuid(), kernel.LocalConfinement(false), secrets...)
	if len(why) == 0 {
		return nil
	}
	return inputErrorf("--sandbox local: %s; model %s could then read answers it must find itself. Use --sandbox docker "+
		"(each kernel in a container that sees only the data), or pass --unsafe-local to accept it",
		strings.Join(why, "; "), strings.Join(api, ", "))
}

// find is Prepare's search for the data, the tasks, the prefix and the
// conditions.
func (s *Setup) find(warn io.Writer) (err error) {
	cfg := s.cfg
	s.DataDir = cfg.DataDir
	defer func() {
		if err != nil && len(s.problems) > 0 { // the task file's problems are reported with what stopped the setup
			err = s.taskProblems(nil, err.Error())
		}
	}()
	if s.DataDir == "" && cfg.TaskFile == "" {
		tier, err := datasets.ParseTier(cfg.Tier)
		if err != nil {
			return inputErrorf("--tier: %v", err)
		}
		if s.DataDir, err = datasets.Cached(tier, cfg.Seed, warn); err != nil {
			return err
		}
	}
	if cfg.SeeData != nil && s.DataDir != "" {
		cfg.SeeData(s.DataDir)
	}
	var d *datasets.Dataset
	var m *datasets.Manifest
	loadErr := datasets.ErrNotDataset // no main data: every task brings its own
	if s.DataDir != "" {
		d, m, loadErr = datasets.Load(s.DataDir)
	}
	switch {
	case loadErr == nil:
		s.Manifest = m
		s.Source = TaskSource{Kind: "builtin", Tier: m.Tier, Seed: m.Seed}
	case errors.Is(loadErr, datasets.ErrNotDataset) && cfg.TaskFile != "":
	case errors.Is(loadErr, datasets.ErrNotDataset):
		return inputErrorf("--data %s is not a ctxcode data set, so it has no built-in tasks: make one with ctxcode data gen, or bring your tasks with --tasks FILE and --prefix P", s.DataDir)
	default:
		return dataError(loadErr)
	}
	if cfg.TaskFile != "" {
		// A bad line is not reported yet: with the missing solutions and
		// the gold_code that fails, all at once (taskProblems).
		uts, err := ReadTasks(cfg.TaskFile)
		var tfe *TaskFileError
		switch {
		case errors.As(err, &tfe) && len(uts) == 0:
			return inputErrorf("%v", err)
		case errors.As(err, &tfe):
			s.problems = tfe.Problems
		case err != nil:
			return err
		}
		b, err := os.ReadFile(cfg.TaskFile)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		s.Source = TaskSource{Kind: "file", File: cfg.TaskFile, SHA256: hex.EncodeToString(h[:])}
		s.UserTasks = uts
	} else if s.Tasks, err = datasets.Tasks(d); err != nil {
		return err
	}
	if cfg.Stages > 0 {
		if err := s.builtinSessions(); err != nil {
			return err
		}
	}
	if len(cfg.TaskIDs) > 0 {
		if err := s.only(cfg.TaskIDs); err != nil {
			return err
		}
	}
	if cfg.TaskFile != "" {
		s.Run.Sessions = SessionsOf(s.UserTasks)
		if err := s.findFolders(); err != nil {
			return err
		}
	}
	if s.DataDir != "" {
		name := cfg.Prefix
		if name == "" {
			name = "pm"
		}
		if s.Prefix, err = prefixes.Load(name); err != nil {
			if cfg.Prefix == "" {
				return err
			}
			return inputErrorf("%v", err)
		}
	}
	if err := s.addConditions(); err != nil {
		return err
	}
	if len(s.folders) > 0 && s.Run.Language != kernel.Python {
		return inputErrorf("--prefix %s is %s, and the tasks that bring their own data start from the Python prefixes prefix init writes: run them in a run of their own", s.Prefix.Name, s.Run.Language)
	}
	for _, name := range cfg.Models {
		if name != llm.ReferenceName {
			continue
		}
		s.skipReference(warn)
		if s.Run.Language != kernel.Python {
			return inputErrorf("--model reference plays Python solutions; prefix %s is %s", s.Prefix.Name, s.Run.Language)
		}
	}
	tasks := max(len(s.Tasks), len(s.UserTasks))
	conds := len(s.Run.Conditions)
	if trials := len(cfg.Models) * conds * tasks * cfg.Reps; trials > MaxTrials {
		return inputErrorf("the run would have %d trials (%d model(s) x %d condition(s) x %d task(s) x %d rep(s)), over the %d one run may have: "+
			"split it (--task, --conditions, --model) or give fewer --reps", trials, len(cfg.Models), conds, tasks, cfg.Reps, MaxTrials)
	}
	return nil
}

// dataError is a data folder's error: the user's (an *InputError) when
// the folder is not a data set it says it is.
func dataError(err error) error {
	for _, bad := range []error{datasets.ErrNotDataset, datasets.ErrDatasetChanged, datasets.ErrMalformed} {
		if errors.Is(err, bad) {
			return inputErrorf("%v", err)
		}
	}
	return err
}

// addConditions gives the run its conditions: the built-in ones of
// Config.Conditions, then the variants of Config.ConditionsFile, each with
// the prefix it starts from. They must all run in one kernel language.
func (s *Setup) addConditions() error {
	cfg := s.cfg
	rungs, err := ParseConditions(cfg.Conditions)
	if err != nil {
		return err
	}
	var variants []Variant
	if cfg.ConditionsFile != "" {
		if variants, err = ReadConditions(cfg.ConditionsFile); err != nil {
			return inputErrorf("%v", err)
		}
	}
	lp := LadderPrefixes{Default: s.Prefix, Named: cfg.Prefix != ""}
	var control *prefixes.Prefix
	if cfg.Control != "" {
		if control, err = prefixes.Load(cfg.Control); err != nil {
			return inputErrorf("--control: %v", err)
		}
	}
	needControl := control != nil
	for _, r := range rungs {
		needControl = needControl || r.Prefix == agent.PrefixControl
	}
	for _, v := range variants {
		needControl = needControl || v.Prefix == "" && v.Rung().Prefix == agent.PrefixControl
	}
	if needControl && s.Prefix != nil {
		lp.Control, lp.ControlErr = ControlOf(s.Prefix, control)
		var ie *InputError
		if errors.As(lp.ControlErr, &ie) {
			return lp.ControlErr
		}
	}
	hint := "write one whose cells repeat full expressions and name it NAME" + prefixes.NoBindSuffix +
		" (ctxcode prefix init writes it beside NAME.py), name it with --control P0, or leave B0 out (--conditions A,B,D,C)"
	run := s.Run
	add := func(r agent.Rung, p *prefixes.Prefix, base string) error {
		lang := kernel.Python // A runs in the Python kernel, for its shell op
		if p != nil {
			lang = p.Language
		}
		if len(run.Conditions) > 0 && lang != run.Language {
			return inputErrorf("--conditions: %s runs in the %s kernel and %s in the %s kernel; run them in two runs", run.Conditions[0].Name, run.Language, r.Name, lang)
		}
		run.Language = lang
		run.Conditions = append(run.Conditions, Condition{Name: r.Name, Protocol: r.Protocol, Prefix: p, Base: base, Rules: r.Rules,
			Context: cfg.Agent.Context, role: r.Prefix})
		return nil
	}
	for _, r := range rungs {
		p, err := lp.PrefixFor(r, "--conditions", hint)
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
			if p, err = lp.PrefixFor(r, fmt.Sprintf("%s:%d: variant", cfg.ConditionsFile, v.Line), hint); err != nil {
				return err
			}
		} else if len(s.folders) > 0 {
			return inputErrorf("%s:%d: variant %s names prefix %s, and tasks of %s bring their own data, whose prefixes prefix init writes: "+
				"leave prefix out of the variant (it then starts from each folder's), or run those tasks apart", cfg.ConditionsFile, v.Line, v.Name, v.Prefix, cfg.TaskFile)
		} else if p, err = variantPrefix(cfg.ConditionsFile, v); err != nil {
			return err
		}
		if err := add(r, p, v.Base); err != nil {
			return err
		}
		c := &run.Conditions[len(run.Conditions)-1]
		if c.Context, err = v.ContextOver(cfg.Agent.Context); err != nil {
			return inputErrorf("%s:%d: variant %s: %v", cfg.ConditionsFile, v.Line, v.Name, err)
		}
	}
	return nil
}

// taskProblems is every problem of the task file found so far, and those
// of more, in the file's order, as one *InputError, followed by also, a
// line of what else stopped the run (nil when there is no problem).
func (s *Setup) taskProblems(more []TaskProblem, also string) error {
	all := append(slices.Clone(s.problems), more...)
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b TaskProblem) int { return cmp.Compare(a.Line, b.Line) })
	msg := (&TaskFileError{Path: s.cfg.TaskFile, Problems: all}).Error()
	if also != "" {
		msg += "\n" + also
	}
	return &InputError{Msg: msg}
}

// only keeps the tasks named in ids, in the run's order.
func (s *Setup) only(ids []string) error {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var known []string
	if s.Run.Sessions != nil {
		return s.onlySessions(want)
	}
	if s.UserTasks != nil {
		var kept []UserTask
		asked := map[string]bool{}
		for _, t := range s.UserTasks {
			known = append(known, t.ID)
			switch {
			case want[t.ID] && t.Session != "":
				return inputErrorf("--task %s: the task is stage %d of session %s, whose stages run together: name the session (--task %s)", t.ID, t.Stage, t.Session, t.Session)
			case want[t.ID] || want[t.Session]:
				kept = append(kept, t)
				delete(want, t.ID)
				asked[t.Session] = true
			}
		}
		for name := range asked {
			delete(want, name)
		}
		s.UserTasks = kept
	} else {
		var kept []datasets.Task
		for _, t := range s.Tasks {
			known = append(known, t.ID)
			if want[t.ID] {
				kept = append(kept, t)
				delete(want, t.ID)
			}
		}
		s.Tasks = kept
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
		return inputErrorf("--task: no task %s%s", strings.Join(missing, ", "), hint)
	}
	return nil
}

// NeedsGolds says whether some user task's gold is computed by its
// gold_code in a kernel (by Open).
func (s *Setup) NeedsGolds() bool {
	for _, ut := range s.UserTasks {
		if ut.GoldCode != "" {
			return true
		}
	}
	return false
}

// resolveGolds computes the gold of every user task that has gold_code,
// each in a fresh kernel over its data folder and that folder's prefix:
// through tr over the main data, through the folder's transport over a
// task's own. Then it refuses the task file with every problem found in
// it: its bad lines, the missing solutions, the gold_code that failed.
func (s *Setup) resolveGolds(ctx context.Context, tr kernel.Transport) error {
	if s.UserTasks == nil || len(s.Tasks) > 0 { // built-in tasks, or resolved already
		return nil
	}
	opts := kernel.ExecOptions{Timeout: s.cfg.Agent.CellTimeout}
	type group struct {
		name   string // the data folder, for a prefix's error
		tr     kernel.Transport
		prefix *prefixes.Prefix
		f      *ownFolder
		tasks  []UserTask
	}
	main := &group{tr: tr, prefix: s.Prefix}
	groups := []*group{main}
	byFolder := map[*ownFolder]*group{}
	for _, ut := range s.UserTasks {
		g := main
		if f := s.ownFolder[ut.ID]; f != nil {
			if g = byFolder[f]; g == nil {
				g = &group{name: f.name, prefix: f.prefix, f: f}
				byFolder[f] = g
				groups = append(groups, g)
			}
		}
		g.tasks = append(g.tasks, ut)
	}
	gold := map[string]datasets.Task{}
	var problems []TaskProblem
	for _, g := range groups {
		if len(g.tasks) == 0 {
			continue
		}
		gtr := g.tr
		if g.f != nil && slices.ContainsFunc(g.tasks, func(ut UserTask) bool { return ut.GoldCode != "" }) {
			var err error
			if gtr, err = s.transports.get(ctx, g.f.dir); err != nil {
				return s.goldsNotRun(ctx, err)
			}
		}
		golds, probs, err := ResolveGolds(ctx, gtr, g.prefix, g.tasks, opts)
		var be *prefixes.BuildError
		switch {
		case err != nil && ctx.Err() == nil && len(s.problems) > 0:
			return s.taskProblems(nil, "(gold_code was not run: "+err.Error()+")")
		case errors.As(err, &be) && g.f != nil:
			return inputErrorf("data %s (%s:%d): %v", g.name, s.cfg.TaskFile, g.f.line, err) // the written prefix's fault
		case errors.As(err, &be):
			return inputErrorf("%v", err) // the prefix's fault
		case err != nil:
			return err
		}
		problems = append(problems, probs...)
		for _, t := range golds {
			gold[t.ID] = t
		}
	}
	if err := s.taskProblems(problems, ""); err != nil {
		return err
	}
	s.Tasks = make([]datasets.Task, 0, len(s.UserTasks))
	for _, ut := range s.UserTasks {
		s.Tasks = append(s.Tasks, gold[ut.ID])
	}
	return nil
}

// goldsNotRun is the error of a sandbox that could not open for gold_code:
// the task file's problems found so far come first.
func (s *Setup) goldsNotRun(ctx context.Context, err error) error {
	if perr := s.taskProblems(nil, "(gold_code was not run: "+err.Error()+")"); perr != nil && ctx.Err() == nil {
		return perr
	}
	return err
}

// reference is the reference model for condition c.
func (s *Setup) reference(c Condition, enc session.Encoding) (llm.Model, error) {
	if s.UserTasks == nil {
		return BuiltinReference(s.Tasks, c.Prefix, enc)
	}
	ci := slices.IndexFunc(s.Run.Conditions, func(o Condition) bool { return o.Name == c.Name })
	if ci < 0 {
		return nil, fmt.Errorf("condition %s is not one of the run's", c.Name)
	}
	solutions, err := s.userReference(ci, c)
	if err != nil {
		return nil, err
	}
	return llm.NewReference(solutions, enc), nil
}

// BuiltinReference is the reference model of the built-in tasks for a
// session that starts from prefix (nil for none): pm's solutions over pm,
// self-contained ones (they load the data) over any other; a Go prefix is
// an *InputError.
func BuiltinReference(tasks []datasets.Task, prefix *prefixes.Prefix, enc session.Encoding) (llm.Model, error) {
	kind := datasets.PythonLoad
	switch {
	case prefix == nil:
	case prefix.Name == "pm":
		kind = datasets.PythonPM
	case prefix.Language == kernel.Go:
		return nil, inputErrorf("--model reference plays Python solutions; prefix %s is Go", prefix.Name)
	}
	solutions := map[string]string{}
	for _, t := range tasks {
		code, err := datasets.Reference(t, kind)
		if err != nil {
			return nil, err
		}
		solutions[t.Question] = code
	}
	return llm.NewReference(solutions, enc), nil
}

// Open makes the run ready to Execute and returns its log. It checks the
// run folder before any kernel starts (whole when every gold is given and
// every prefix known, else all but the comparison of configurations),
// gives the tasks' own data folders their prefixes (those the run folder
// kept, or written now), opens the transport of the main data (warnings
// to warn; a task's own folder's opens when its first kernel starts),
// computes the golds of gold_code, pins the Spec, makes or resumes the
// run folder (Config.Mode; its warnings to Run.Warn) and keeps the
// folders' prefixes in it. A run folder that holds another run is an
// *InputError. The cleanup function, never nil, closes the transports:
// call it after the log is closed.
func (s *Setup) Open(ctx context.Context, warn io.Writer) (_ *Log, cleanup func(), _ error) {
	cfg, run := s.cfg, s.Run
	owarn := &onceWriter{w: warn} // every folder's sandbox says the same
	s.transports = &transportSet{open: func(ctx context.Context, dir string) (kernel.Transport, func(), error) {
		tr, cleanup, err := sandbox.Open(ctx, cfg.sandboxFor(run.Language, dir), owarn)
		if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
			err = inputErrorf("%v", err)
		}
		return tr, cleanup, err
	}}
	cleanup = s.transports.close
	if len(cfg.Hosts) > 0 {
		cleanup = s.closeHosts
		if err := s.openHosts(ctx, owarn); err != nil {
			return nil, cleanup, err
		}
	}
	if len(s.folders) > 0 {
		if err := Check(cfg.Out, nil, cfg.Mode); err != nil {
			return nil, cleanup, inputErrorf("--out %v", err)
		}
		if err := s.folderPrefixes(ctx, owarn); err != nil {
			return nil, cleanup, err
		}
	}
	var known *Spec
	if !s.NeedsGolds() {
		if err := s.resolveGolds(ctx, nil); err != nil { // no kernel: every gold is given
			return nil, cleanup, err
		}
		run.Tasks = s.Tasks
		spec, err := s.Spec(ctx, nil)
		if err != nil {
			return nil, cleanup, err
		}
		known = &spec
	}
	if err := Check(cfg.Out, known, cfg.Mode); err != nil {
		return nil, cleanup, inputErrorf("--out %v", err)
	}
	// The main data's transport; without main data, the first folder's,
	// which says where the kernels run (Spec).
	dir := s.DataDir
	if dir == "" && len(s.folders) == 0 { // no task has data: each is a problem
		return nil, cleanup, s.taskProblems(nil, "")
	}
	if dir == "" {
		dir = s.folders[0].dir
	}
	tr, err := s.transports.get(ctx, dir)
	if err != nil {
		return nil, cleanup, s.goldsNotRun(ctx, err)
	}
	if err := s.resolveGolds(ctx, tr); err != nil {
		return nil, cleanup, err
	}
	if s.DataDir != "" {
		run.Transport = tr
	}
	run.Tasks = s.Tasks
	if run.Spec, err = s.Spec(ctx, tr); err != nil {
		return nil, cleanup, err
	}
	log, err := Open(cfg.Out, run.Spec, cfg.Mode, run.Warn)
	var ce *ConfigError
	if errors.As(err, &ce) {
		return nil, cleanup, inputErrorf("--out %v", err)
	}
	if err != nil {
		return nil, cleanup, err
	}
	if err := keepPrefixes(cfg.Out, s.folders, s.needsControl()); err != nil {
		_ = log.Close()
		return nil, cleanup, fmt.Errorf("keep the data folders' prefixes in %s: %w", cfg.Out, err)
	}
	return log, cleanup, nil
}

// Spec is what run.json records of the run. Its kernels run through tr;
// before tr is open (nil), where they will run is what Config.Sandbox
// says, and the runtime is not known (zero).
func (s *Setup) Spec(ctx context.Context, tr kernel.Transport) (Spec, error) {
	cfg, run := s.cfg, s.Run
	sp := Spec{
		Version:     cfg.Version,
		Tasks:       s.Source,
		Reps:        cfg.Reps,
		Budgets:     BudgetsOf(cfg.Agent),
		Data:        DataInfo{Dir: s.DataDir, FollowLinks: cfg.FollowLinks},
		DataFolders: s.folderInfos(),
		Parallel:    run.Parallel,
		// The order is not a result's: a resume under another seed is
		// refused only when the seed is given (Config.OrderSeedSet).
		OrderSeed: s.OrderSeed,
	}
	sp.TaskList = s.Tasks
	sp.Sessions = run.Sessions
	for _, h := range run.Hosts {
		sp.Hosts = append(sp.Hosts, HostInfo{Name: h.Name, Slots: h.Slots})
	}
	for _, m := range run.Models {
		sp.Models = append(sp.Models, m.ModelInfo)
	}
	for _, c := range run.Conditions {
		ci := c.Info()
		var err error
		if ci.FirstRequest, err = run.FirstRequestSHA256(c, cfg.FollowLinks); err != nil {
			return Spec{}, err
		}
		sp.Conditions = append(sp.Conditions, ci)
	}
	if s.Manifest != nil {
		sp.Data.Manifest = s.Manifest
		b, _ := json.Marshal(s.Manifest)
		h := sha256.Sum256(b)
		sp.Data.SHA256 = hex.EncodeToString(h[:])
	} else if s.DataDir != "" {
		sp.Data.SHA256 = folderHash(s.DataDir, cfg.FollowLinks)
	}
	noIPython := cfg.Sandbox.NoIPython
	sp.Sandbox = SandboxInfo{Kind: string(sandbox.KindLocal), NoIPython: noIPython}
	dc := sandbox.DefaultConfig()
	if cfg.Sandbox.Docker != nil {
		dc = *cfg.Sandbox.Docker
	}
	d, docker := tr.(*sandbox.Docker)
	if docker {
		dc = d.Config()
	}
	if kb, ok := tr.(*sandbox.Kube); ok {
		dc = kb.Config()
		sp.Sandbox = SandboxInfo{Kind: string(sandbox.KindKubernetes), Image: dc.Image, NoIPython: noIPython,
			Memory: dc.Memory, CPUs: dc.CPUs, TmpSize: dc.TmpSize, User: dc.User}
		// The cluster's image is known by its name only: no image id.
		var err error
		sp.Runtime.Driver, err = prefixes.DriverVersion(run.Language)
		return sp, err
	}
	// Else the host: a local sandbox, or no Docker for the reference model.
	if docker || tr == nil && cfg.Sandbox.Kind != sandbox.KindLocal {
		sp.Sandbox = SandboxInfo{Kind: string(sandbox.KindDocker), Image: dc.Image, NoIPython: noIPython,
			Network: dc.Network, Memory: dc.Memory, MemorySwap: dc.Swap, CPUs: dc.CPUs, Pids: dc.Pids, TmpSize: dc.TmpSize,
			User: dc.User, WritableRoot: dc.WritableRoot, KeepCaps: dc.KeepCaps, NewPrivileges: dc.NewPrivileges}
	}
	if tr == nil {
		return sp, nil
	}
	// What runs the cells, as the transcript cache keys it.
	var err error
	if sp.Runtime.Driver, err = prefixes.DriverVersion(run.Language); err != nil {
		return Spec{}, err
	}
	if docker {
		if sp.Runtime.ImageID, err = sandbox.ImageID(ctx, cfg.Sandbox.Host, sp.Sandbox.Image); err != nil {
			return Spec{}, fmt.Errorf("the kernel image %s: %w", sp.Sandbox.Image, err)
		}
	} else {
		sp.Runtime.Interpreter = cfg.sandboxFor(run.Language, "").RuntimeIdentity("")
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
