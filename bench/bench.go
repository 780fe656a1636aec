package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// Condition is a condition as a run asks it: a rung of the ladder
// (agent.Ladder), or a variant of one (a --conditions-file line), with the
// prefix its session starts from.
type Condition struct {
	Name     string // A, B, B0, D, C, or a variant's name
	Protocol session.Protocol
	// Prefix is the prefix the session starts from; nil for A (the cli
	// protocol), whose skill document describes the data instead.
	Prefix *prefixes.Prefix
	// Base is the built-in condition a variant is made from; "" for a
	// built-in condition.
	Base string
	// Rules, when not nil, replaces the rules text of the condition's first
	// message ("" for none): a variant's (agent.Config.Rules).
	Rules *string
	// Context is the context policy its trials run under (session.Context;
	// the zero value is none): a condition's attribute, so that variants
	// can compare policies in one run.
	Context session.Context

	// role is the prefix the condition starts from over a task's own data
	// folder (Folder.Prefixes): none, the folder's prefix, or its control
	// (a variant that names its own prefix is refused with such folders).
	role agent.PrefixRole
}

// Info is what run.json records of c.
func (c Condition) Info() ConditionInfo {
	ci := ConditionInfo{Name: c.Name, Protocol: string(c.Protocol), Base: c.Base, Rules: c.Rules}
	if c.Prefix != nil {
		ci.Prefix, ci.PrefixSource, ci.PrefixSHA256 = c.Prefix.Name, c.Prefix.Source, c.Prefix.Hash()
	}
	if c.Rules != nil {
		ci.RulesSHA256 = agent.RulesHash(*c.Rules)
	}
	ci.Context = contextInfo(c.Context)
	return ci
}

// Model is a model of the run.
type Model struct {
	ModelInfo
	// For returns the model that plays condition c. It is called once per
	// condition before the first trial; the model it returns is used by
	// several trials at once.
	For func(c Condition) (llm.Model, error)
	// Skip are the tasks, by id, the model has no trial of: the reference
	// model's tasks without a solution.
	Skip map[string]bool
}

// FatalError is a failure that every later trial would meet too (an API
// key refused, a model that does not exist, kernels that cannot start):
// the run stops at it, and can be resumed once it is fixed.
type FatalError struct {
	Err error
}

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// Observer hears of a run's progress. Its methods are called from the
// run's goroutines, one call at a time.
type Observer interface {
	// Started is called once before the first trial: the trials of the
	// run, and how many of them the log already held.
	Started(total, done int)
	// Finished is called as each trial's line is written.
	Finished(t Trial)
}

// Run is one experiment: its Spec, and what runs it.
type Run struct {
	Spec       Spec
	Models     []Model
	Conditions []Condition
	Tasks      []datasets.Task // in Spec.TaskList's order
	// Sessions group tasks into staged sessions (Spec.Sessions): a trial
	// of one asks its tasks one after another in one conversation and
	// kernel (runSession). A task in no session is a trial of its own.
	Sessions []Session
	// DataDir is the host folder the kernels show as data/: condition A's
	// read tool serves it and its skill document describes it, with links
	// out of it followed as Spec.Data.FollowLinks says (and the Transport
	// must show them so). "" when every task brings its own (TaskData).
	DataDir string
	// Transport starts the kernels, with DataDir shown to them.
	Transport kernel.Transport
	// Folders are the data folders tasks bring of their own (a task
	// file's "data"), in the order of their first task, and TaskData the
	// folder of each such task, by id; every other task is over DataDir,
	// starting from the Conditions' prefixes.
	Folders  []*Folder
	TaskData map[string]*Folder
	// Language is the kernels' language (Python for A).
	Language kernel.Language
	Agent    agent.Config
	// Parallel is how many trials run at once (at least 1); with Hosts,
	// at most the sum of their slots.
	Parallel int
	// Hosts, when not empty, are the Docker daemons the trials spread
	// over (RunHost): a trial's kernel comes from whichever has a free
	// slot, through its RunHost.Transport instead of the Folders'. A
	// host that stops answering is lost for the rest of the run, and the
	// trials it had run again on the others (Outcome.Lost).
	Hosts    []RunHost
	Observer Observer // may be nil
	// Warn hears of warnings (nil: discarded), one line at a time.
	Warn io.Writer

	mainFolder *Folder // DataDir, Transport and the Conditions' prefixes (main)
}

// work is one trial to run.
type work struct {
	key   Key
	model int            // index in Run.Models
	cond  int            // index in Run.Conditions
	task  *datasets.Task // a session's first stage's
	// stages are a session's tasks in order; nil for a trial of one task.
	stages []*datasets.Task
	pool   *poolRef
	data   *Folder
}

// Outcome is what a run did.
type Outcome struct {
	Total   int     // trials in the run
	Skipped int     // trials the log already held, not run again
	Ran     int     // trials run now
	Final   []Trial // the last line of every key in the log
	// Lost are the hosts (Run.Hosts) lost during the run, in the order
	// they were.
	Lost []LostHost
}

// Execute runs every trial the log of l does not hold yet (or holds as an
// infra failure), Parallel at a time, appending each to l as it ends. It
// returns when all have run, or at the first FatalError, or when ctx ends
// (its error: the trials still running have no line and run again on the
// next resume). Every kernel and pool is closed before it returns.
func (r *Run) Execute(ctx context.Context, l *Log) (*Outcome, error) {
	if r.Warn == nil {
		r.Warn = io.Discard
	}
	r.Agent.Encoding = session.Encoding(r.Spec.Budgets.Encoding)
	models, err := r.models()
	if err != nil {
		return nil, &FatalError{err}
	}
	r.syncMain()
	if r.DataDir != "" {
		for _, c := range r.Conditions {
			if c.Prefix == nil { // made now, so that a folder it cannot read stops the run before it starts
				if _, err = r.main().skillDocument(r.Spec.Data.FollowLinks); err != nil {
					return nil, fmt.Errorf("condition A's skill document: %w", err)
				}
				break
			}
		}
	}
	todo, total, err := r.plan(ctx, l)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Total: total, Skipped: total - len(todo)}
	if r.Observer != nil {
		r.Observer.Started(total, out.Skipped)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	parallel := max(r.Parallel, 1)
	hosts, slots, err := hostsOf(r.Hosts)
	if err != nil {
		return nil, &FatalError{err}
	}
	if len(hosts) > 0 {
		parallel = min(parallel, cap(slots))
	}
	refs, folders := map[*poolRef]bool{}, map[*Folder]bool{}
	for _, w := range todo {
		refs[w.pool], folders[w.data] = true, true
	}
	s := &scheduler{run: r, todo: todo, parallel: parallel, npools: len(refs), pools: map[*poolRef]bool{}, hosts: hosts, slots: slots}
	if len(folders) > 1 && len(hosts) == 0 {
		// Many small pools: the kernels they build ahead are parallel's
		// in all, not each pool's two.
		s.budget = parallel
	}
	var closing sync.WaitGroup // kernels being closed after their trial
	defer closing.Wait()
	defer s.closeAll()

	var wg sync.WaitGroup
	var mu sync.Mutex
	for range min(parallel, len(todo)) {
		wg.Go(func() {
			for {
				w, ok := s.next(ctx)
				if !ok {
					return
				}
				var h *hostState
				if len(hosts) > 0 {
					var serr error
					if h, serr = s.slot(ctx); serr != nil {
						return // ctx ended: the trial has no line and runs on the next resume
					}
				}
				t, again, err := r.trial(ctx, s, w, h, models[w.model][w.cond], l, &closing)
				if h != nil {
					s.release(h)
				}
				if t.Task != "" { // a trial that ended, even one that stops the run
					if aerr := l.Append(t); aerr != nil {
						cancel(&FatalError{aerr})
						return
					}
					mu.Lock()
					out.Ran++
					if r.Observer != nil {
						r.Observer.Finished(t)
					}
					mu.Unlock()
				}
				if err != nil {
					cancel(err)
					return
				}
				if again {
					s.requeue(w)
				}
			}
		})
	}
	wg.Wait()
	s.closeAll()
	closing.Wait()
	out.Final = l.Final()
	s.mu.Lock()
	out.Lost = s.lost
	s.mu.Unlock()
	if err := context.Cause(ctx); err != nil {
		return out, err
	}
	return out, nil
}

// skips says whether m has no trial of the task id, or of the session id
// whose tasks are stages: it has none of a session with a task it skips.
func (m Model) skips(id string, stages []*datasets.Task) bool {
	if m.Skip[id] {
		return true
	}
	for _, t := range stages {
		if m.Skip[t.ID] {
			return true
		}
	}
	return false
}

// models makes each model's player of each condition.
func (r *Run) models() ([][]llm.Model, error) {
	ms := make([][]llm.Model, len(r.Models))
	for i, m := range r.Models {
		for _, c := range r.Conditions {
			lm, err := m.For(c)
			if err != nil {
				return nil, fmt.Errorf("model %s, condition %s: %w", m.Name, c.Name, err)
			}
			ms[i] = append(ms[i], lm)
		}
	}
	return ms, nil
}

// plan lists the trials still to run, in the run's order (Order, drawn
// from Spec.OrderSeed), each with its data folder and the pool of the
// prefix it starts from there. It stops with ctx's error when ctx ends
// (Ctrl-C).
//
// A pool is of one (folder, prefix), and of one stretch of the order in
// which its trials come close together: when the next trial of a (folder,
// prefix) comes later than every (model, condition) of two tasks and
// parallel more trials would take, the pool is closed after its last
// trial and another opened when the next comes near. In a run of one
// folder every condition is asked of every task, so there is one pool per
// prefix, as there always was; in a run of many folders (a table per
// task) a folder's pools live while its tasks run, not until its last
// rep.
func (r *Run) plan(ctx context.Context, l *Log) (todo []work, total int, _ error) {
	type poolKey struct {
		f      *Folder
		prefix string
	}
	type stretch struct {
		ref  *poolRef
		last int // the index in todo of its last trial so far
	}
	open := map[poolKey]*stretch{}
	prefixID := map[*prefixes.Prefix]string{}
	var refs []*poolRef
	models, conds, tasks := map[string]int{}, map[string]int{}, map[string]int{}
	var mnames, cnames, tids []string
	for i, m := range r.Models {
		models[m.Name] = i
		mnames = append(mnames, m.Name)
	}
	for i, c := range r.Conditions {
		conds[c.Name] = i
		cnames = append(cnames, c.Name)
	}
	for i, t := range r.Tasks {
		tasks[t.ID] = i
	}
	tids, sessions := r.units()
	gap := 2*len(r.Models)*len(r.Conditions) + max(r.Parallel, 1)
	for i, k := range Order(r.Spec.OrderSeed, mnames, cnames, tids, r.Spec.Reps) {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		mi := models[k.Model]
		stages := sessions[k.Task]
		if r.Models[mi].skips(k.Task, stages) {
			continue
		}
		total++
		if l.Done(k) {
			continue
		}
		ci := conds[k.Condition]
		task := &r.Tasks[tasks[k.Task]]
		if stages != nil {
			task = stages[0]
		}
		f := r.folderOf(task.ID) // a session's tasks share theirs
		p := f.Prefixes[ci]
		key := poolKey{f: f}
		if p != nil {
			id, ok := prefixID[p]
			if !ok {
				id = p.Name + "\x00" + p.Hash()
				prefixID[p] = id
			}
			key.prefix = id
		}
		st := open[key]
		if st == nil || len(todo)-st.last > gap {
			st = &stretch{ref: &poolRef{prefix: p, data: f}}
			open[key] = st
			refs = append(refs, st.ref)
		}
		st.last = len(todo)
		todo = append(todo, work{key: k, model: mi, cond: ci, task: task, stages: stages, pool: st.ref, data: f})
	}
	for _, w := range todo {
		w.pool.left++
	}
	for _, ref := range refs {
		ref.share = float64(ref.left) / float64(max(len(todo), 1))
	}
	return todo, total, nil
}

// poolRef is the pool of kernels of one prefix (nil: none) over one data
// folder, opened when its first trial is near and closed when its last
// has a kernel.
type poolRef struct {
	prefix *prefixes.Prefix
	data   *Folder
	pool   *sandbox.WarmPool[[]session.Cell]
	// hosted are its pools on the run's hosts (Run.Hosts), by host,
	// opened when a trial of it first takes a slot there.
	hosted map[*hostState]*sandbox.WarmPool[[]session.Cell]
	left   int     // trials still to take a kernel from it
	share  float64 // its part of the trials to run, from 0 to 1
	size   int     // the kernels it keeps ready, once open
}

// scheduler hands out the trials in order and keeps the pools open that
// the next trials need.
type scheduler struct {
	run      *Run
	mu       sync.Mutex
	todo     []work
	parallel int
	npools   int               // the run's pools, open or not
	pools    map[*poolRef]bool // the open ones
	// budget, when above 0, bounds the kernels the open pools keep ready
	// or build, all together (a run of many data folders).
	budget  int
	closing sync.WaitGroup // pools being closed
	warnMu  sync.Mutex     // the workers warn one at a time

	// hosts are the run's hosts (Run.Hosts), none in a run of one;
	// slots holds a token per free slot, and lost the hosts lost so far.
	hosts []*hostState
	slots chan *hostState
	lost  []LostHost
}

// warnf writes a warning line to the run's Warn.
func (s *scheduler) warnf(format string, args ...any) {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	fmt.Fprintf(s.run.Warn, format, args...)
}

// next is the next trial to run, with the pools of the trials after it
// opened ahead; false when there is none or ctx has ended.
func (s *scheduler) next(ctx context.Context) (work, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.todo) == 0 || ctx.Err() != nil {
		return work{}, false
	}
	w := s.todo[0]
	s.todo = s.todo[1:]
	if len(s.hosts) > 0 {
		// Which host a trial's kernel comes from is known once it has a
		// slot (poolOn).
		return w, true
	}
	// Open the pools of the trials that will start soon: those the
	// workers will take after this one.
	s.open(w.pool, true)
	for _, n := range s.todo[:min(len(s.todo), s.parallel)] {
		s.open(n.pool, false)
	}
	return w, true
}

// open opens the pool of ref, unless it is open. Under a budget, a pool
// opened ahead (not needed) gets what is left of it, and is not opened
// when nothing is; one a trial needs now gets at least one kernel.
func (s *scheduler) open(ref *poolRef, needed bool) {
	if ref.pool != nil {
		return
	}
	size := poolSize(s.parallel, s.npools, ref.share, ref.left)
	if s.budget > 0 {
		held := 0
		for o := range s.pools {
			held += min(o.size, o.left)
		}
		room := s.budget - held
		if room < 1 && !needed {
			return
		}
		size = max(1, min(size, room))
	}
	ref.size = size
	var prepare sandbox.Prepare[[]session.Cell]
	if p := ref.prefix; p != nil {
		opts := kernel.ExecOptions{Timeout: s.run.Agent.CellTimeout}
		prepare = func(ctx context.Context, k *kernel.Client) ([]session.Cell, error) {
			return prefixes.Build(ctx, k, p, opts)
		}
	}
	// As many kernels in all as the prefix's trials: none is started for
	// nothing at the end.
	ref.pool = sandbox.NewWarmPool(s.run.Language, ref.data.Transport, size, ref.left, kernel.ClientOptions{}, prepare)
	s.pools[ref] = true
}

// poolSize is how many kernels a pool keeps ready, and builds at once,
// for trials that are share of the run's, in a run of pools pools and
// parallel trials at once, left of its trials still to come. In the
// interleaved order every pool is drawn on all the time, each as often as
// its share: each pool gets its share of parallel + pools kernels (about
// what one pool at a time kept before: kernels waiting in memory beyond
// that buy nothing), so that a pool whose trials come three times as often
// as another's builds three kernels to its one, and at least two (when
// parallel allows), so that a pool whose builds are slow (a control
// prefix that reads its files in every cell) is not left one builder. A
// pool whose ready kernels are all there builds nothing more, so the CPUs
// go to the pools that are behind. For trials that take longer than a
// build (a model behind an API) the kernels are ready long before they are
// asked for. When builds are the slower part (the reference model's trials
// take milliseconds) no size helps: the trials wait for the CPUs that
// build, and Trial.PoolWaitMS says how long.
func poolSize(parallel, pools int, share float64, left int) int {
	size := max(int(math.Round(share*float64(parallel+pools))), min(2, parallel))
	return max(1, min(size, left))
}

// taken is told that a trial of ref has its kernel (or gave up on one):
// the pool of a prefix whose last trial that was is closed.
func (s *scheduler) taken(ref *poolRef) {
	s.mu.Lock()
	ref.left--
	done := ref.left <= 0 && s.pools[ref]
	if done {
		delete(s.pools, ref)
	}
	var pools []*sandbox.WarmPool[[]session.Cell]
	if done {
		pools = ref.detach()
	}
	s.mu.Unlock()
	for _, p := range pools { // off the trial's path: Close waits for the starts under way
		s.closing.Go(func() { _ = p.Close() })
	}
}

// detach takes ref's open pools from it, for closing; a trial of ref run
// again (requeue) opens new ones. The caller holds scheduler.mu.
func (ref *poolRef) detach() []*sandbox.WarmPool[[]session.Cell] {
	var pools []*sandbox.WarmPool[[]session.Cell]
	if ref.pool != nil {
		pools = append(pools, ref.pool)
	}
	for _, p := range ref.hosted {
		pools = append(pools, p)
	}
	ref.pool, ref.hosted = nil, nil
	return pools
}

// closeAll closes every pool still open.
func (s *scheduler) closeAll() {
	s.mu.Lock()
	var pools []*sandbox.WarmPool[[]session.Cell]
	for ref := range s.pools {
		pools = append(pools, ref.detach()...)
	}
	s.pools = map[*poolRef]bool{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Go(func() { _ = p.Close() })
	}
	wg.Wait()
	s.closing.Wait()
}

// acquireTries is how often a trial asks its pool for a kernel before the
// run stops: kernels that cannot start would fail every trial.
const acquireTries = 3

// trial runs one trial, its kernel from host h's pool (nil: the run has
// no Hosts), and returns its line (an empty one when it did not end). The
// error is for a run that must stop: ctx ended (the trial gets no line),
// or a FatalError (with a line when the trial ended in it). again says the
// trial is to run again, on another host: h was lost before the trial had
// its kernel (no line) or while it ran (an infra line).
func (r *Run) trial(ctx context.Context, s *scheduler, w work, h *hostState, model llm.Model, l *Log, closing *sync.WaitGroup) (_ Trial, again bool, _ error) {
	started := time.Now()
	ctx = llm.WithLabel(ctx, "trial "+w.key.String()) // its retry lines say whose they are
	cond := r.Conditions[w.cond]
	pool := w.pool.pool
	if h != nil {
		pool = s.poolOn(w.pool, h)
	}
	var k *kernel.Client
	var cells []session.Cell
	var err error
	for try := 1; ; try++ {
		k, cells, err = pool.Acquire(ctx)
		if err == nil || ctx.Err() != nil || try == acquireTries {
			break
		}
		if h != nil {
			if lost, lerr := s.lostHost(ctx, h); lost {
				s.taken(w.pool)
				return Trial{}, lerr == nil, fatalOrNil(lerr)
			}
		}
		s.warnf("ctxcode: trial %s: no kernel (%v); trying again\n", w.key, err)
	}
	s.taken(w.pool)
	ready := time.Now() // the trial's own time starts with its kernel
	if err != nil {
		if ctx.Err() != nil {
			return Trial{}, false, context.Cause(ctx)
		}
		if h != nil {
			if lost, lerr := s.lostHost(ctx, h); lost {
				return Trial{}, lerr == nil, fatalOrNil(lerr)
			}
		}
		var be *prefixes.BuildError
		if errors.As(err, &be) {
			return Trial{}, false, &FatalError{fmt.Errorf("condition %s: %w", cond.Name, err)}
		}
		return Trial{}, false, &FatalError{fmt.Errorf("condition %s: start a kernel: %w", cond.Name, err)}
	}
	defer func() {
		closing.Add(1)
		go func() { // off the trial's path: a container's removal takes a while
			defer closing.Done()
			_ = k.Close()
		}()
	}()

	attempt := l.attempts(w.key) + 1
	rel := TrajectoryPath(w.key, attempt)
	path := filepath.Join(l.Dir, rel)
	f, err := os.OpenFile(path+tempSuffix, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, trialsFilePerm)
	if err != nil {
		return Trial{}, false, &FatalError{fmt.Errorf("write a trajectory: %w", err)}
	}
	skill := ""
	if w.data.Prefixes[w.cond] == nil {
		if skill, err = w.data.skillDocument(r.Spec.Data.FollowLinks); err != nil {
			_ = f.Close()
			_ = os.Remove(path + tempSuffix)
			return Trial{}, false, &FatalError{fmt.Errorf("condition %s's skill document of %s: %w", cond.Name, w.data.Dir, err)}
		}
	}
	traj := agent.NewTrajectory(f)
	sess, cfg := r.session(w.cond, w.data, skill, r.Spec.Data.FollowLinks)
	sess.Kernel, sess.Cells, sess.Started = k, cells, ready
	info := agent.Info{Condition: cond.Name, Model: r.Models[w.model].Name, BaseURL: r.Models[w.model].BaseURL, Task: w.task.ID,
		Question: w.task.Question}
	if w.data == r.main() {
		info.Data = r.Spec.Data.Manifest
	}
	t := Trial{Key: w.key, Attempt: attempt, Trajectory: rel, Started: started.UTC()}
	if h != nil {
		t.Host = h.Name
	}
	var res *agent.Result
	if w.stages != nil {
		res, err = r.runSession(ctx, w, sess, cfg, info, model, traj, &t)
	} else {
		res, err = agent.Run(ctx, sess, model, cfg, info, traj, nil)
	}
	if ctx.Err() != nil {
		_ = f.Close()
		_ = os.Remove(path + tempSuffix)
		return Trial{}, false, context.Cause(ctx)
	}
	if err != nil {
		// The session did not fit the protocol: nothing ran, and no trial
		// after it would run either.
		_ = f.Close()
		_ = os.Remove(path + tempSuffix)
		return Trial{}, false, &FatalError{fmt.Errorf("trial %s: %w", w.key, err)}
	}
	if w.stages == nil {
		grade(w.task, res, traj)
		fill(&t, res)
		t.Context, t.Folds = policyName(cfg.Context), res.Folds
	}
	t.PoolWaitMS = ready.Sub(started).Milliseconds()
	if err := keepTrajectory(f, traj, path); err != nil {
		// The trial ran, but what it did is not kept: it is not a result,
		// and it runs again. The disk (or the folder) would fail the next
		// trials too: the run stops here, with this line written.
		t.Status, t.Class, t.Error, t.Trajectory = NotRecorded, ClassInfra, fmt.Sprintf("write trajectory %s: %v", rel, err), ""
		return t, false, &FatalError{fmt.Errorf("trial %s: its trajectory could not be written whole (%w), so the trial has no result and runs again; make room in %s",
			w.key, err, l.Dir)}
	}
	if err := fatal(res); err != nil {
		return t, false, &FatalError{fmt.Errorf("trial %s: %w; every trial of model %s would fail the same way: fix it and run again (the run resumes)",
			w.key, err, r.Models[w.model].Name)}
	}
	if h != nil && t.Class == ClassInfra {
		// Its kernel's host may be gone: then the trial runs again on
		// another, in this run, after this line.
		lost, lerr := s.lostHost(ctx, h)
		return t, lost && lerr == nil, fatalOrNil(lerr)
	}
	return t, false, nil
}

// fatalOrNil is err as a FatalError, or nil.
func fatalOrNil(err error) error {
	if err == nil {
		return nil
	}
	return &FatalError{err}
}

// fill copies what a run produced into its trial line.
func fill(t *Trial, res *agent.Result) {
	t.Status, t.Death = res.Status, res.Death
	t.Class = ClassModel
	switch res.Status {
	case agent.ModelFailed, agent.KernelFailed: // agent.KernelDied is the model's
		t.Class = ClassInfra
	}
	if res.Err != nil {
		t.Error = res.Err.Error()
	}
	t.Answer = answerJSON(res)
	t.AnswerSource, t.Literal = res.AnswerSource, res.Literal && res.Status == agent.Answered
	if g := res.Grade; g != nil {
		t.Correct, t.AnswerRight, t.Verdict, t.GradeReason = g.Accurate(), g.Correct, string(g.Verdict), g.Reason
		t.Parts, t.ExtraParts = g.Parts, g.ExtraParts
	}
	u := res.Usage
	t.Turns, t.ContextTokens, t.OutputTokens, t.CachedTokens, t.ReasoningTokens, t.Estimated =
		res.Turns, u.PromptTokens, u.CompletionTokens, u.CachedTokens, u.ReasoningTokens, u.Estimated
	t.WallMS, t.KernelMS, t.ModelMS, t.WaitedMS = res.Wall.Milliseconds(), res.Setup.Milliseconds(), res.Model.Milliseconds(), res.Waited.Milliseconds()
	t.Retries, t.Restarts = res.Retries, res.Restarts
}

// answerJSON is the answer as a JSON value: the executed value as it is,
// a stated or unexecuted answer as a JSON string, null without one.
func answerJSON(res *agent.Result) json.RawMessage {
	switch {
	case res.Answer == "":
		return json.RawMessage("null")
	case res.AnswerSource == agent.Executed && json.Valid([]byte(res.Answer)):
		var b bytes.Buffer
		_ = json.Compact(&b, []byte(res.Answer)) // as the log line holds it
		return b.Bytes()
	}
	b, _ := json.Marshal(res.Answer)
	return b
}

// fatal is a run's API failure that every later trial of its model would
// meet: a refused key (401, 403), a model or endpoint that does not exist
// (404), an account out of quota. Nil for any other result.
func fatal(res *agent.Result) error {
	var ae *llm.APIError
	if res.Status != agent.ModelFailed || !errors.As(res.Err, &ae) {
		return nil
	}
	switch {
	case ae.Status == 401, ae.Status == 403, ae.Status == 404:
		return ae
	case ae.Status == 429 && ae.Code == "insufficient_quota":
		return ae
	}
	return nil
}

// keepTrajectory closes the trajectory f (path's temporary file) and renames
// it into place when it was written whole: every event written, synced,
// not empty; then it syncs the folder, so that the rename outlives a crash
// of the machine as the trial's line will (a line never names a trajectory
// a crash lost). Else it removes it and says why: a trajectory in place is
// always whole.
func keepTrajectory(f *os.File, traj *agent.Trajectory, path string) error {
	err := traj.Err()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(f.Name()); err == nil && st.Size() == 0 {
			err = errors.New("nothing was written")
		}
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return unwrapPath(err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("sync the folder %s: %w", filepath.Base(filepath.Dir(path)), unwrapPath(err))
	}
	return nil
}

// unwrapPath is err without the path of an *os.PathError (the temporary
// file's, which the caller names better), or err.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
