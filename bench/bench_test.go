package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// benchTasks is how many of the tier's tasks a test runs: enough for two
// workers to overlap, few enough to keep the package quick.
const benchTasks = 3

// benchData is a tier-s data set of the test's own and the first
// benchTasks of its tasks, one of each template.
type benchData struct {
	dir      string
	manifest *datasets.Manifest
	tasks    []datasets.Task
}

func newBenchData(t *testing.T) benchData {
	t.Helper()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	d := datasets.Generate(tier, 1)
	dir := filepath.Join(t.TempDir(), "pm-s")
	m, err := d.Write(dir, false)
	require.NoError(t, err)
	all, err := datasets.Tasks(d)
	require.NoError(t, err)
	var tasks []datasets.Task
	seen := map[string]bool{}
	for _, task := range all {
		if !seen[task.Template] && len(tasks) < benchTasks {
			seen[task.Template] = true
			tasks = append(tasks, task)
		}
	}
	require.Len(t, tasks, benchTasks)
	return benchData{dir: dir, manifest: m, tasks: tasks}
}

// benchKernels is where a test's kernels run: Docker when it is there (in
// a session of the test's own, so the test can look for what is left),
// else local Python processes.
type benchKernels struct {
	tr      *countingTransport
	kind    sandbox.Kind
	docker  *client.Client // nil for local kernels
	session string
}

// countingTransport counts the kernels started through it.
type countingTransport struct {
	kernel.Transport
	starts atomic.Int64
}

var _ kernel.Transport = (*countingTransport)(nil)

func (c *countingTransport) Start(ctx context.Context) (kernel.Conn, error) {
	c.starts.Add(1)
	return c.Transport.Start(ctx)
}

func newBenchKernels(t *testing.T, dataDir string) *benchKernels {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := sandbox.Connect(ctx, sandbox.Host{})
	if err == nil {
		t.Cleanup(func() { _ = cli.Close() })
		ok, ierr := sandbox.ImageExists(ctx, cli, sandbox.KernelImage())
		require.NoError(t, ierr)
		if ok {
			return dockerKernels(t, ctx, cli, dataDir)
		}
		err = fmt.Errorf("kernel image %s is missing: build it with ctxcode sandbox build", sandbox.KernelImage())
	}
	if testenv.Strict() {
		t.Fatalf("these tests run their kernels in Docker in CI: %v", err)
	}
	t.Logf("Docker is not there (%v): the kernels run on this host", err)
	python := kerneltest.FindPython(t)
	tr, err := kernel.NewLocalPython(python, false, kernel.LocalConfig{DataDir: dataDir})
	require.NoError(t, err)
	return &benchKernels{tr: &countingTransport{Transport: tr}, kind: sandbox.KindLocal}
}

func dockerKernels(t *testing.T, ctx context.Context, cli *client.Client, dataDir string) *benchKernels {
	t.Helper()
	cfg := sandbox.DefaultConfig()
	cfg.Session = fmt.Sprintf("ctxtest-bench-%d-%s", os.Getpid(), sandbox.NewSessionID())
	tr, cleanup, err := sandbox.Open(ctx, sandbox.OpenOptions{Kind: sandbox.KindDocker, DataDir: dataDir, Docker: &cfg}, &strings.Builder{})
	t.Cleanup(cleanup)
	require.NoError(t, err)
	k := &benchKernels{tr: &countingTransport{Transport: tr}, kind: sandbox.KindDocker, docker: cli, session: cfg.Session}
	t.Cleanup(func() { // so that a failing test leaves nothing behind
		for _, c := range k.containers(t) {
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cli.ContainerRemove(rctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			cancel()
			if err != nil && !client.IsErrNotFound(err) {
				t.Errorf("remove container %.12s: %v", c.ID, err)
			}
		}
	})
	return k
}

// containers lists the containers of the test's session, running or not.
func (k *benchKernels) containers(t *testing.T) []container.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := k.docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSession+"="+k.session))})
	require.NoError(t, err)
	return cs
}

// requireNothingLeft checks that no container of the test's session is
// left once Execute has returned.
func (k *benchKernels) requireNothingLeft(t *testing.T) {
	t.Helper()
	if k.docker == nil {
		return
	}
	var left []string
	for _, c := range k.containers(t) {
		left = append(left, fmt.Sprintf("%.12s %s (%s)", c.ID, c.State, c.Status))
	}
	require.Empty(t, left, "Execute returned and left containers of the run")
}

// benchCondition is a condition as ctxcode bench makes it.
func benchCondition(t *testing.T, name string) Condition {
	t.Helper()
	switch name {
	case "A":
		return Condition{Name: "A", Protocol: session.CLI}
	case "B", "D":
		p, err := prefixes.Load("pm")
		require.NoError(t, err)
		protocol := session.Eval
		if name == "D" {
			protocol = session.Bare
		}
		return Condition{Name: name, Protocol: protocol, Prefix: p}
	case "B0":
		p, err := prefixes.Load("pm" + prefixes.NoBindSuffix)
		require.NoError(t, err)
		return Condition{Name: "B0", Protocol: session.Eval, Prefix: p}
	}
	t.Fatalf("no condition %s", name)
	return Condition{}
}

// reference is the reference model of condition c over tasks, as ctxcode
// bench makes it: the pm solutions over the pm prefix, the self-loading
// ones elsewhere.
func reference(c Condition, tasks []datasets.Task) (*llm.Reference, error) {
	kind := datasets.PythonLoad
	if c.Prefix != nil && c.Prefix.Name == "pm" {
		kind = datasets.PythonPM
	}
	solutions := map[string]string{}
	for _, t := range tasks {
		code, err := datasets.Reference(t, kind)
		if err != nil {
			return nil, err
		}
		solutions[t.Question] = code
	}
	return llm.NewReference(solutions, session.O200kBase), nil
}

// scripted is a model that plays the reference model, except on the tasks
// it has a script for: there it fails with the script's error (as the
// OpenAI client does after its retries), or, with a nil error, waits in
// its call until the run's context ends.
type scripted struct {
	ref       *llm.Reference
	questions []string // longest first
	ids       map[string]string
	script    map[string]error // by task id
	blocked   chan string      // told of every call that waits
	calls     atomic.Int64
}

var _ llm.Model = (*scripted)(nil)

func newScripted(ref *llm.Reference, tasks []datasets.Task, script map[string]error, blocked chan string) *scripted {
	m := &scripted{ref: ref, ids: map[string]string{}, script: script, blocked: blocked}
	for _, t := range tasks {
		m.questions = append(m.questions, t.Question)
		m.ids[t.Question] = t.ID
	}
	sort.Slice(m.questions, func(i, j int) bool { return len(m.questions[i]) > len(m.questions[j]) })
	return m
}

func (m *scripted) Name() string { return "scripted" }

func (m *scripted) Complete(ctx context.Context, req session.Request) (llm.Reply, error) {
	m.calls.Add(1)
	err, ok := m.script[m.task(req)]
	switch {
	case !ok:
		return m.ref.Complete(ctx, req)
	case err != nil:
		return llm.Reply{Attempts: 1}, err
	}
	select {
	case m.blocked <- m.task(req):
	case <-ctx.Done():
	}
	<-ctx.Done()
	return llm.Reply{Attempts: 1}, fmt.Errorf("the request was cancelled: %w", ctx.Err())
}

// task is the id of the task whose question the request asks.
func (m *scripted) task(req session.Request) string {
	for _, q := range m.questions {
		for _, msg := range req.Messages {
			if msg.Role == "user" && strings.Contains(msg.Content, q) {
				return m.ids[q]
			}
		}
	}
	return ""
}

// recorder is an Observer that keeps what it heard and checks that its
// calls never overlap.
type recorder struct {
	mu       sync.Mutex
	inside   atomic.Int32
	overlaps atomic.Int32
	started  [][2]int
	finished []Trial
	onFinish func(Trial)
}

var _ Observer = (*recorder)(nil)

func (r *recorder) enter() func() {
	if r.inside.Add(1) > 1 {
		r.overlaps.Add(1)
	}
	return func() { r.inside.Add(-1) }
}

func (r *recorder) Started(total, done int) {
	defer r.enter()()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, [2]int{total, done})
}

func (r *recorder) Finished(t Trial) {
	defer r.enter()()
	r.mu.Lock()
	r.finished = append(r.finished, t)
	f := r.onFinish
	r.mu.Unlock()
	if f != nil {
		f(t)
	}
}

// benchRun is a run of the reference model (or the one newModel makes)
// over data in the conditions named.
type benchRun struct {
	data     benchData
	kernels  *benchKernels
	conds    []Condition
	spec     Spec
	dir      string
	parallel int
}

func newBenchRun(t *testing.T, parallel int, conds ...string) *benchRun {
	t.Helper()
	data := newBenchData(t)
	b := &benchRun{data: data, kernels: newBenchKernels(t, data.dir), dir: filepath.Join(t.TempDir(), "run"), parallel: parallel}
	for _, name := range conds {
		b.conds = append(b.conds, benchCondition(t, name))
	}
	mb, err := json.Marshal(data.manifest)
	require.NoError(t, err)
	h := sha256.Sum256(mb)
	cfg := benchAgent()
	b.spec = Spec{
		Version:  "test",
		Models:   []ModelInfo{{Name: llm.ReferenceName}},
		Tasks:    TaskSource{Kind: "builtin", Tier: data.manifest.Tier, Seed: data.manifest.Seed},
		TaskList: data.tasks,
		Data:     DataInfo{Dir: data.dir, SHA256: hex.EncodeToString(h[:]), Manifest: data.manifest},
		Reps:     1,
		Budgets:  BudgetsOf(cfg),
		Sandbox:  SandboxInfo{Kind: string(b.kernels.kind)},
	}
	for _, c := range b.conds {
		b.spec.Conditions = append(b.spec.Conditions, c.Info())
	}
	return b
}

func benchAgent() agent.Config {
	cfg := agent.DefaultConfig()
	cfg.CellTimeout = time.Minute // a slow machine is not a failed trial
	return cfg
}

// run is the Run of model, whose For wraps the reference model of each
// condition with wrap (nil: the reference model itself).
func (b *benchRun) run(wrap func(*llm.Reference) llm.Model, obs Observer) *Run {
	m := Model{ModelInfo: ModelInfo{Name: llm.ReferenceName}}
	m.For = func(c Condition) (llm.Model, error) {
		ref, err := reference(c, b.data.tasks)
		if err != nil || wrap == nil {
			return ref, err
		}
		return wrap(ref), nil
	}
	return &Run{
		Spec:       b.spec,
		Models:     []Model{m},
		Conditions: b.conds,
		Tasks:      b.data.tasks,
		DataDir:    b.data.dir,
		Transport:  b.kernels.tr,
		Language:   kernel.Python,
		Agent:      benchAgent(),
		Parallel:   b.parallel,
		Observer:   obs,
	}
}

func (b *benchRun) open(t *testing.T) *Log {
	t.Helper()
	l, err := Open(b.dir, b.spec, Continue, &strings.Builder{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// keys are the run's keys.
func (b *benchRun) keys() []Key {
	var keys []Key
	for _, c := range b.conds {
		for _, task := range b.data.tasks {
			keys = append(keys, Key{Model: llm.ReferenceName, Condition: c.Name, Task: task.ID, Rep: 1})
		}
	}
	return keys
}

// order is the run's keys in the order its trials run.
func (b *benchRun) order() []Key {
	var conds, tasks []string
	for _, c := range b.conds {
		conds = append(conds, c.Name)
	}
	for _, task := range b.data.tasks {
		tasks = append(tasks, task.ID)
	}
	return Order(b.spec.OrderSeed, []string{llm.ReferenceName}, conds, tasks, b.spec.Reps)
}

func execute(t *testing.T, ctx context.Context, r *Run, l *Log) (*Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a hang guard, not a time limit
	defer cancel()
	return r.Execute(ctx, l)
}

// requireTrajectory checks that the trial's trajectory is whole: it reads
// through the schema's reader with nothing skipped, and ends with the
// grade of its task.
func requireTrajectory(t *testing.T, dir string, tr Trial) {
	t.Helper()
	require.Equal(t, TrajectoryPath(tr.Key, tr.Attempt), tr.Trajectory)
	b, err := os.ReadFile(filepath.Join(dir, tr.Trajectory))
	require.NoError(t, err, "the trajectory of %s", tr.Key)
	l, err := session.ReadTrajectory(bytes.NewReader(b))
	require.NoError(t, err, "the trajectory of %s", tr.Key)
	assert.Empty(t, l.Skipped, tr.Trajectory)
	assert.Zero(t, l.Torn, tr.Trajectory)
	last := l.Events[len(l.Events)-1]
	require.NotNil(t, last.Grade, "the last event of %s is the grade of its task", tr.Trajectory)
	assert.Equal(t, tr.Task, last.Grade.Task, tr.Trajectory)
}

// requireNoPartial checks that no trajectory is left half written.
func requireNoPartial(t *testing.T, dir string) {
	t.Helper()
	partial, err := filepath.Glob(filepath.Join(dir, TrajectoryDir, "*"+tempSuffix))
	require.NoError(t, err)
	require.Empty(t, partial)
}

// asWritten is trials as their lines hold them: encoding/json writes an
// answer's JSON compacted, where the trial kept it as the kernel gave it.
func asWritten(t *testing.T, trials []Trial) []Trial {
	t.Helper()
	var out []Trial
	for _, tr := range trials {
		var back Trial
		require.NoError(t, json.Unmarshal([]byte(trialLine(t, tr)), &back))
		out = append(out, back)
	}
	return out
}

func keysOf(trials []Trial) []Key {
	var keys []Key
	for _, t := range trials {
		keys = append(keys, t.Key)
	}
	return keys
}

func TestExecuteRunsEveryTrialOnce(t *testing.T) {
	b := newBenchRun(t, 2, "A", "B")
	l := b.open(t)
	obs := &recorder{}
	r := b.run(nil, obs)
	out, err := execute(t, context.Background(), r, l)
	require.NoError(t, err)
	b.kernels.requireNothingLeft(t)

	keys := b.keys()
	n := len(keys)
	assert.Equal(t, &Outcome{Total: n, Skipped: 0, Ran: n, Final: l.Final()}, out)
	require.Len(t, l.Trials, n, "one line per key")
	assert.ElementsMatch(t, keys, keysOf(l.Trials))
	for _, tr := range l.Trials {
		assert.Equal(t, ClassModel, tr.Class, "%s", tr.Key)
		assert.Equal(t, agent.Answered, tr.Status, "%s: %s", tr.Key, tr.Error)
		assert.True(t, tr.Correct, "%s: %s (answer %s)", tr.Key, tr.GradeReason, tr.Answer)
		assert.Equal(t, string(agent.GradeCorrect), tr.Verdict)
		assert.Equal(t, 1, tr.Attempt)
		assert.Positive(t, tr.Turns)
		assert.Positive(t, tr.ContextTokens)
		assert.LessOrEqual(t, tr.KernelMS, tr.WallMS)
		requireTrajectory(t, b.dir, tr)
	}
	requireNoPartial(t, b.dir)
	assert.Equal(t, l.Trials, trialLines(t, b.dir), "every line is on disk, as the log holds it")

	assert.Equal(t, [][2]int{{n, 0}}, obs.started)
	assert.ElementsMatch(t, l.Trials, obs.finished, "one Finished per trial, with its line")
	assert.Zero(t, obs.overlaps.Load(), "the observer's calls overlapped")

	// Each trial takes a kernel its pool started ahead; a pool starts at
	// most one kernel per worker beyond the trials it serves (the refills
	// under way when it closes).
	pools, starts := 2, int(b.kernels.tr.starts.Load())
	assert.GreaterOrEqual(t, starts, n)
	assert.LessOrEqual(t, starts, n+pools*b.parallel, "kernels started for %d trials", n)

	// Resumed, the run has nothing left to do.
	require.NoError(t, l.Close())
	l = b.open(t)
	assert.Len(t, l.Trials, n)
	obs = &recorder{}
	out, err = execute(t, context.Background(), b.run(nil, obs), l)
	require.NoError(t, err)
	assert.Equal(t, &Outcome{Total: n, Skipped: n, Ran: 0, Final: l.Final()}, out)
	assert.Len(t, l.Trials, n, "nothing ran again")
	assert.Equal(t, [][2]int{{n, n}}, obs.started)
	assert.Empty(t, obs.finished)
	assert.Equal(t, starts, int(b.kernels.tr.starts.Load()), "no kernel was started for a run with nothing to do")
}

func TestExecuteStopsAtARefusedKey(t *testing.T) {
	b := newBenchRun(t, 1, "A")
	l := b.open(t)
	refused := &llm.APIError{Status: 401, Code: "invalid_api_key", Message: "Incorrect API key provided", Model: "gpt-x", BaseURL: "https://api.example.com/v1"}
	script := map[string]error{}
	for _, task := range b.data.tasks {
		script[task.ID] = refused
	}
	var models []*scripted
	obs := &recorder{}
	r := b.run(func(ref *llm.Reference) llm.Model {
		m := newScripted(ref, b.data.tasks, script, nil)
		models = append(models, m)
		return m
	}, obs)
	out, err := execute(t, context.Background(), r, l)
	b.kernels.requireNothingLeft(t)

	var fe *FatalError
	require.ErrorAs(t, err, &fe)
	var ae *llm.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 401, ae.Status)
	assert.Contains(t, err.Error(), "every trial of model reference would fail the same way")
	require.NotNil(t, out)
	assert.Equal(t, len(b.keys()), out.Total)
	assert.Equal(t, 1, out.Ran, "the run stops after the trial that met it")

	require.Len(t, l.Trials, 1)
	tr := l.Trials[0]
	assert.Equal(t, b.order()[0], tr.Key, "the first trial of the run's order")
	assert.Equal(t, ClassInfra, tr.Class, "a refused key is not the model's result")
	assert.Equal(t, agent.ModelFailed, tr.Status)
	assert.Contains(t, tr.Error, "401")
	assert.False(t, tr.Correct)
	assert.False(t, l.Done(tr.Key), "it runs again on resume")
	requireTrajectory(t, b.dir, tr)
	assert.Equal(t, asWritten(t, l.Trials), trialLines(t, b.dir))
	assert.Equal(t, l.Trials, obs.finished)
	require.Len(t, models, 1)
	assert.Equal(t, int64(1), models[0].calls.Load(), "no other trial called the model")
}

func TestExecuteRunsInfraFailuresAgainOnResume(t *testing.T) {
	b := newBenchRun(t, 2, "A", "B")
	l := b.open(t)
	failing := b.data.tasks[1].ID
	script := map[string]error{failing: &llm.APIError{Status: 502, Message: "Bad gateway", Model: "gpt-x", BaseURL: "https://api.example.com/v1"}}
	out, err := execute(t, context.Background(), b.run(func(ref *llm.Reference) llm.Model {
		return newScripted(ref, b.data.tasks, script, nil)
	}, nil), l)
	require.NoError(t, err, "an API failure after the retries is one trial's, not the run's")
	b.kernels.requireNothingLeft(t)
	n := len(b.keys())
	assert.Equal(t, n, out.Ran)

	var infra []Key
	for _, tr := range l.Trials {
		requireTrajectory(t, b.dir, tr)
		if tr.Task == failing {
			assert.Equal(t, ClassInfra, tr.Class, "%s", tr.Key)
			assert.Equal(t, agent.ModelFailed, tr.Status)
			assert.Contains(t, tr.Error, "502")
			infra = append(infra, tr.Key)
			continue
		}
		assert.Equal(t, ClassModel, tr.Class, "%s", tr.Key)
		assert.True(t, tr.Correct, "%s: %s", tr.Key, tr.GradeReason)
	}
	require.Len(t, infra, len(b.conds))
	rows := Summarize(l.Spec, out.Final)
	require.Len(t, rows, len(b.conds))
	for _, row := range rows {
		assert.Equal(t, 1, row.Infra)
		assert.Equal(t, benchTasks-1, row.Graded)
		assert.Equal(t, benchTasks-1, row.Correct)
	}

	require.NoError(t, l.Close())
	l = b.open(t)
	for _, k := range b.keys() {
		assert.Equal(t, k.Task != failing, l.Done(k), "Done(%s)", k)
	}
	obs := &recorder{}
	out, err = execute(t, context.Background(), b.run(nil, obs), l)
	require.NoError(t, err)
	b.kernels.requireNothingLeft(t)
	assert.Equal(t, n, out.Total)
	assert.Equal(t, n-len(infra), out.Skipped)
	assert.Equal(t, len(infra), out.Ran)
	assert.Equal(t, [][2]int{{n, n - len(infra)}}, obs.started)
	assert.ElementsMatch(t, infra, keysOf(obs.finished), "only the infra failures ran again")

	require.Len(t, l.Trials, n+len(infra))
	for _, tr := range l.Trials[n:] {
		assert.Equal(t, 2, tr.Attempt, "%s", tr.Key)
		assert.True(t, strings.HasSuffix(tr.Trajectory, ".a2"+trajectoryExt), tr.Trajectory)
		assert.True(t, tr.Correct, "%s: %s", tr.Key, tr.GradeReason)
		requireTrajectory(t, b.dir, tr)
	}
	for _, tr := range l.Trials[:n] {
		assert.FileExists(t, filepath.Join(b.dir, tr.Trajectory), "the first attempt's trajectory is kept")
	}
	require.Len(t, out.Final, n)
	assert.Equal(t, keysOf(l.Trials[:n]), keysOf(out.Final), "Final keeps the keys' first order")
	for _, tr := range out.Final {
		assert.Equal(t, ClassModel, tr.Class, "%s", tr.Key)
		assert.True(t, l.Done(tr.Key))
	}
}

func TestExecuteCancelled(t *testing.T) {
	b := newBenchRun(t, 2, "B")
	l := b.open(t)
	stuck := b.data.tasks[0].ID
	blocked := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-blocked:
			cancel()
		case <-ctx.Done():
		}
	}()
	out, err := execute(t, ctx, b.run(func(ref *llm.Reference) llm.Model {
		return newScripted(ref, b.data.tasks, map[string]error{stuck: nil}, blocked)
	}, nil), l)
	require.ErrorIs(t, err, context.Canceled)
	var fe *FatalError
	assert.False(t, errors.As(err, &fe), "a cancelled run is not a failed one: %v", err)
	b.kernels.requireNothingLeft(t)
	requireNoPartial(t, b.dir)

	n := len(b.keys())
	require.NotNil(t, out)
	assert.Equal(t, n, out.Total)
	assert.Less(t, out.Ran, n)
	lines := trialLines(t, b.dir)
	assert.Equal(t, asWritten(t, l.Trials), lines, "every line on disk is a whole trial")
	for _, tr := range lines {
		assert.NotEqual(t, stuck, tr.Task, "the trial running at the cancel has no line")
		assert.True(t, tr.Correct, "%s", tr.Key)
		requireTrajectory(t, b.dir, tr)
	}

	// The resumed run finishes it.
	require.NoError(t, l.Close())
	l = b.open(t)
	out, err = execute(t, context.Background(), b.run(nil, nil), l)
	require.NoError(t, err)
	b.kernels.requireNothingLeft(t)
	assert.Equal(t, n-len(lines), out.Ran)
	require.Len(t, out.Final, n)
	assert.ElementsMatch(t, b.keys(), keysOf(out.Final))
	for _, tr := range out.Final {
		assert.True(t, tr.Correct, "%s", tr.Key)
		assert.Equal(t, 1, tr.Attempt, "a trial cut by the cancel had no line, so it is still its first attempt")
	}
}

// warnings is a Warn that is not safe for concurrent use, and notices
// when it is used so.
type warnings struct {
	b        strings.Builder
	inside   atomic.Int32
	overlaps atomic.Int32
}

func (w *warnings) Write(p []byte) (int, error) {
	if w.inside.Add(1) > 1 {
		w.overlaps.Add(1)
	}
	defer w.inside.Add(-1)
	time.Sleep(10 * time.Millisecond) // so that another writer would meet this one
	return w.b.Write(p)
}

// brokenTransport is a machine whose kernels never start.
type brokenTransport struct{ starts atomic.Int64 }

var _ kernel.Transport = (*brokenTransport)(nil)

func (b *brokenTransport) Start(ctx context.Context) (kernel.Conn, error) {
	b.starts.Add(1)
	return nil, errors.New("no space left on device")
}

// noKernelRun is a run of condition A over data whose kernels start on tr.
func noKernelRun(t *testing.T, tr kernel.Transport, obs Observer) (*Run, *Log) {
	t.Helper()
	data := newBenchData(t)
	cond := benchCondition(t, "A")
	spec := Spec{Models: []ModelInfo{{Name: llm.ReferenceName}}, Conditions: []ConditionInfo{cond.Info()},
		TaskList: data.tasks, Reps: 1, Budgets: BudgetsOf(benchAgent())}
	r := &Run{
		Spec: spec,
		Models: []Model{{ModelInfo: ModelInfo{Name: llm.ReferenceName}, For: func(c Condition) (llm.Model, error) {
			return reference(c, data.tasks)
		}}},
		Conditions: []Condition{cond},
		Tasks:      data.tasks,
		DataDir:    data.dir,
		Transport:  tr,
		Language:   kernel.Python,
		Agent:      benchAgent(),
		Parallel:   2,
		Observer:   obs,
	}
	l, err := Open(filepath.Join(t.TempDir(), "run"), spec, Continue, &strings.Builder{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return r, l
}

func TestExecuteStopsWhenKernelsCannotStart(t *testing.T) {
	tr := &brokenTransport{}
	obs := &recorder{}
	r, l := noKernelRun(t, tr, obs)
	warn := &warnings{}
	r.Warn = warn
	out, err := execute(t, context.Background(), r, l)
	var fe *FatalError
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, err.Error(), "condition A: start a kernel")
	assert.Contains(t, err.Error(), "no space left on device")
	assert.Contains(t, warn.b.String(), "trying again", "a failed start is tried again before the run stops")
	assert.Zero(t, warn.overlaps.Load(), "the workers wrote to Warn at once")
	require.NotNil(t, out)
	assert.Equal(t, benchTasks, out.Total)
	assert.Zero(t, out.Ran)
	assert.Empty(t, l.Trials, "a trial without a kernel has no line: it runs on resume")
	assert.Equal(t, [][2]int{{benchTasks, 0}}, obs.started)
	assert.Empty(t, obs.finished)
	assert.GreaterOrEqual(t, tr.starts.Load(), int64(acquireTries))
}

// TestExecutePlanningWatchesTheContext: Ctrl-C while the trials are being
// planned ends the run there, before any is announced or started.
func TestExecutePlanningWatchesTheContext(t *testing.T) {
	tr := &brokenTransport{}
	obs := &recorder{}
	r, l := noKernelRun(t, tr, obs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := r.Execute(ctx, l)
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, out, "no plan, no outcome")
	assert.Empty(t, obs.started, "the run was not announced")
	assert.Zero(t, tr.starts.Load(), "no kernel was started")
}

func TestExecuteStopsWhenAModelCannotBeMade(t *testing.T) {
	tr := &brokenTransport{}
	obs := &recorder{}
	r, l := noKernelRun(t, tr, obs)
	r.Models[0].For = func(Condition) (llm.Model, error) { return nil, errors.New("no API key: set OPENAI_API_KEY") }
	out, err := execute(t, context.Background(), r, l)
	var fe *FatalError
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, err.Error(), "model reference, condition A: no API key")
	assert.Nil(t, out)
	assert.Empty(t, l.Trials)
	assert.Empty(t, obs.started, "nothing started")
	assert.Zero(t, tr.starts.Load(), "no kernel was started")
}

func TestFatal(t *testing.T) {
	api := func(status int, code string) error {
		return &llm.APIError{Status: status, Code: code, BaseURL: "https://api.example.com/v1", Model: "m"}
	}
	for _, tc := range []struct {
		name   string
		status agent.Status
		err    error
		fatal  bool
	}{
		{"key refused", agent.ModelFailed, api(401, "invalid_api_key"), true},
		{"model forbidden", agent.ModelFailed, api(403, ""), true},
		{"no such model", agent.ModelFailed, api(404, "model_not_found"), true},
		{"out of quota", agent.ModelFailed, api(429, "insufficient_quota"), true},
		{"wrapped", agent.ModelFailed, fmt.Errorf("after 3 attempts: %w", api(401, "")), true},
		{"rate limited", agent.ModelFailed, api(429, "rate_limit_exceeded"), false},
		{"server error", agent.ModelFailed, api(500, ""), false},
		{"bad request", agent.ModelFailed, api(400, ""), false},
		{"not an API error", agent.ModelFailed, errors.New("connection reset by peer"), false},
		{"not a model failure", agent.KernelFailed, api(401, ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fatal(&agent.Result{Status: tc.status, Err: tc.err})
			if tc.fatal {
				var ae *llm.APIError
				assert.ErrorAs(t, err, &ae)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestFillClassesAndAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    agent.Result
		class  string
		answer string
	}{
		{"executed", agent.Result{Status: agent.Answered, Answer: `["a", "b"]`, AnswerSource: agent.Executed}, ClassModel, `["a","b"]`},
		{"executed, not JSON", agent.Result{Status: agent.Answered, Answer: `nan`, AnswerSource: agent.Executed}, ClassModel, `"nan"`},
		{"stated", agent.Result{Status: agent.Answered, Answer: `42`, AnswerSource: agent.Stated}, ClassModel, `"42"`},
		{"unexecuted", agent.Result{Status: agent.Answered, Answer: `ada`, AnswerSource: agent.Unexecuted}, ClassModel, `"ada"`},
		{"no answer", agent.Result{Status: agent.NoAnswer}, ClassModel, `null`},
		{"out of turns", agent.Result{Status: agent.MaxTurns}, ClassModel, `null`},
		{"out of prompt tokens", agent.Result{Status: agent.MaxPromptTokens}, ClassModel, `null`},
		{"context window", agent.Result{Status: agent.ContextLength, Err: llm.ErrContextLength}, ClassModel, `null`},
		{"model failed", agent.Result{Status: agent.ModelFailed, Err: errors.New("502 Bad Gateway")}, ClassInfra, `null`},
		{"kernel failed", agent.Result{Status: agent.KernelFailed, Err: errors.New("restart the kernel: no such image")}, ClassInfra, `null`},
		{"kernel died", agent.Result{Status: agent.KernelDied, Death: "oom", Err: errors.New("the kernel died: out of memory")}, ClassModel, `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.res
			res.Turns, res.Usage, res.Wall, res.Setup, res.Restarts = 3, llm.Usage{PromptTokens: 100, CompletionTokens: 10, CachedTokens: 50, Estimated: true}, 2*time.Second, time.Second, 1
			var tr Trial
			fill(&tr, &res)
			assert.Equal(t, res.Status, tr.Status)
			assert.Equal(t, tc.class, tr.Class)
			assert.Equal(t, tc.answer, string(tr.Answer))
			assert.True(t, json.Valid(tr.Answer))
			if res.Err != nil {
				assert.Equal(t, res.Err.Error(), tr.Error)
			}
			assert.Equal(t, 3, tr.Turns)
			assert.Equal(t, 100, tr.ContextTokens)
			assert.Equal(t, 10, tr.OutputTokens)
			assert.Equal(t, 50, tr.CachedTokens)
			assert.True(t, tr.Estimated)
			assert.Equal(t, int64(2000), tr.WallMS)
			assert.Equal(t, int64(1000), tr.KernelMS)
			assert.Equal(t, 1, tr.Restarts)
			assert.Equal(t, res.Death, tr.Death)
			assert.Equal(t, tc.class == ClassModel && tr.Status != agent.Answered && tr.Status != agent.NoAnswer && tr.Status != agent.KernelDied, tr.BudgetStop())
		})
	}
}
