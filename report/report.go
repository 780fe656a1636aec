package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
)

// Resamples is how many bootstrap draws every interval takes; Seed seeds
// them, so that a report of the same run is the same to the byte.
const (
	Resamples = 2000
	Seed      = 1
)

// Run is a run directory as the report reads it.
type Run struct {
	Dir   string
	Spec  bench.Spec
	Final []bench.Trial // the last line of every key
	Lines int           // every line of trials.jsonl
}

// Load reads the run directory dir.
func Load(dir string) (*Run, error) {
	spec, trials, err := bench.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	spec.TaskList = spec.Units() // per session where the trials are sessions
	return &Run{Dir: dir, Spec: *spec, Final: bench.Final(trials), Lines: len(trials)}, nil
}

// MaxTrajectoryBytes bounds the trajectory a report reads (ReadTrajectory),
// so that one runaway trial cannot make a page or a notebook too big to
// open.
const MaxTrajectoryBytes = 16 << 20

// ReadTrajectory reads the trajectory of trial t: at most
// MaxTrajectoryBytes of it, cut saying there was more. Its path is read
// only when it is local to the run directory (filepath.IsLocal: not
// absolute, no "..", relative to r.Dir): a run directory from another
// machine does not make the report read files outside it. The errors are
// sentences that name the path and say what was not done.
func (r *Run) ReadTrajectory(t bench.Trial) (b []byte, cut bool, err error) {
	rel := t.Trajectory
	switch {
	case rel == "":
		return nil, false, errors.New("no trajectory was recorded for this trial")
	case !filepath.IsLocal(filepath.FromSlash(rel)):
		return nil, false, fmt.Errorf("the trajectory %s is outside the run directory: not read", rel)
	}
	f, err := os.Open(filepath.Join(r.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, false, fmt.Errorf("the trajectory %s could not be read: %v", rel, unwrapPath(err))
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, MaxTrajectoryBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("the trajectory %s could not be read: %v", rel, unwrapPath(err))
	}
	if len(b) > MaxTrajectoryBytes {
		return b[:MaxTrajectoryBytes], true, nil
	}
	return b, false, nil
}

// unwrapPath is err without its *fs.PathError's path, which the caller
// names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Price is what a model costs, in USD per million tokens. A prompt's
// cached tokens cost CachedInput and the rest Input; in a prices file
// (ReadPrices) cached_input left out is the Input price.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
}

// priceFields are the fields of a model's price in a prices file.
const priceFields = "input, cached_input, output"

// ReadPrices reads a prices file: a JSON object from model name to
// {"input", "cached_input", "output"}, each in USD per 1M tokens. Input and
// output are required; cached_input, when left out, is the input price
// (cached prompt tokens cost as much as the others). A field of another
// name is an error, not a price of $0.
func ReadPrices(path string) (map[string]Price, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: expected a JSON object from model name to {\"input\", \"cached_input\", \"output\"} in USD per 1M tokens: %v", path, err)
	}
	models := slices.Sorted(maps.Keys(raw))
	p := make(map[string]Price, len(raw))
	for _, m := range models {
		var f struct {
			Input       *float64 `json:"input"`
			CachedInput *float64 `json:"cached_input"`
			Output      *float64 `json:"output"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw[m]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%s: model %s: %s (the fields are %s, in USD per 1M tokens)", path, m, strings.TrimPrefix(err.Error(), "json: "), priceFields)
		}
		if f.Input == nil || f.Output == nil {
			return nil, fmt.Errorf("%s: model %s: both \"input\" and \"output\" are required (USD per 1M tokens; \"cached_input\" may be left out: it is then the input price)", path, m)
		}
		pr := Price{Input: *f.Input, CachedInput: *f.Input, Output: *f.Output}
		if f.CachedInput != nil {
			pr.CachedInput = *f.CachedInput
		}
		if pr.Input < 0 || pr.CachedInput < 0 || pr.Output < 0 {
			return nil, fmt.Errorf("%s: model %s: a negative price", path, m)
		}
		p[m] = pr
	}
	return p, nil
}

// Options shape a report.
type Options struct {
	// Baseline is the condition every other is compared with; default A
	// when the run has it, else its first condition.
	Baseline string
	// Prices, by model name, turn tokens into money; nil: no money. A
	// model of a run with no price here gets no money, and a note.
	Prices map[string]Price
	// Notebooks links each trial's notebook (NotebookPath), which the
	// caller writes with TrajectoryNotebook.
	Notebooks bool
	// By, when set, adds the results by the values of this field of the
	// tasks' meta (Report.By).
	By string
}

// NotebookPath is where the notebook of a trial's trajectory is kept,
// relative to the run directory: notebooks/<the trajectory's name>.ipynb.
func NotebookPath(trajectory string) string {
	base := strings.TrimSuffix(filepath.Base(trajectory), filepath.Ext(trajectory))
	return filepath.ToSlash(filepath.Join(bench.NotebookDir, base+".ipynb"))
}

// Report is every number the pages show.
type Report struct {
	Runs     []RunInfo    `json:"runs"`
	Rows     []Row        `json:"rows"`
	Layers   []Comparison `json:"layers"`
	Baseline string       `json:"baseline"`
	// Versus compares every condition with the baseline, per model.
	Versus []Comparison `json:"versus_baseline"`
	// Tasks are the first run's per-task rows; the attribution (Layers)
	// and Versus are of the first run too.
	Tasks []TaskRow `json:"tasks"`
	// SecondTasks are the second run's per-task rows (two runs only),
	// without notebooks.
	SecondTasks []TaskRow `json:"second_run_tasks,omitempty"`
	// Pairs compares the second run with the first, per condition (two
	// runs only).
	Pairs []Comparison `json:"pairs,omitempty"`
	Notes []string     `json:"notes"`
	// By are the results by a meta field of the tasks (Options.By).
	By *Breakdown `json:"by,omitempty"`
	// Sessions are the figures of session trials (staged workloads),
	// stage by stage; nil for runs without them.
	Sessions *Sessions `json:"sessions,omitempty"`
}

// RunInfo describes a run of the report.
type RunInfo struct {
	Dir        string   `json:"dir"`
	Version    string   `json:"ctxcode_version"`
	Created    string   `json:"created"`
	Models     []string `json:"models"`
	Conditions []string `json:"conditions"`
	Tasks      int      `json:"tasks"`
	TaskSource string   `json:"task_source"`
	Reps       int      `json:"reps"`
	Sandbox    string   `json:"sandbox"`
	Keys       int      `json:"keys"`  // trials with a line
	Lines      int      `json:"lines"` // lines in trials.jsonl, infra reruns included
	Expected   int      `json:"expected"`
	// MinDetectable is MinDetectableDiff of the run's tasks: an upper
	// bound on the smallest accuracy difference between two of its
	// conditions that the run can tell apart (a fraction; null with no
	// task).
	MinDetectable *float64 `json:"min_detectable_accuracy_diff"`
}

// Row is one (model, condition) of a run.
type Row struct {
	Run       int    `json:"run"` // index in Report.Runs
	Model     string `json:"model"`
	Condition string `json:"condition"`
	// Counts are bench.Summarize's: infra trials failed in the harness
	// (not the model's result); Graded = Trials - Infra is the
	// denominator of everything else.
	bench.Counts
	Accuracy    Interval `json:"accuracy"` // over tasks: TaskAccuracy
	BudgetStops int      `json:"budget_stops"`
	KernelDied  int      `json:"kernel_died"` // trials whose own code killed the kernel: graded, wrong
	Sources     Sources  `json:"sources"`
	Turns       Dist     `json:"turns"`
	Context     Dist     `json:"context_tokens"`
	Output      Dist     `json:"output_tokens"`
	Cached      Dist     `json:"cached_tokens"`
	Reasoning   Dist     `json:"reasoning_tokens"`
	WallMS      Dist     `json:"wall_ms"`
	// PoolWaitMS is the trials' wait for a pooled kernel, apart from
	// WallMS: the harness's time; nil when no trial waited.
	PoolWaitMS *Dist  `json:"pool_wait_ms,omitempty"`
	Estimated  bool   `json:"estimated"`
	Money      *Money `json:"money,omitempty"`
	// Records are the scores by part of a run with record tasks
	// (bench.HasRecords); nil for any other run.
	Records *RecordScores `json:"records,omitempty"`
}

// Sources counts the graded trials by where their answer came from.
type Sources struct {
	Executed   int `json:"executed"`
	Stated     int `json:"stated"`
	Unexecuted int `json:"unexecuted"`
	None       int `json:"none"`
	// Literal counts the executed answers whose ANSWER passed a value typed
	// in the cell (also in Executed, and in accuracy); LiteralRight of them
	// matched the gold.
	Literal      int `json:"literal,omitempty"`
	LiteralRight int `json:"literal_right,omitempty"`
}

// Money is a row's cost at its model's price.
type Money struct {
	MeanUSD  float64 `json:"mean_usd"`  // per graded trial
	TotalUSD float64 `json:"total_usd"` // every graded trial
	// CacheSavedUSD is what the cached prompt tokens saved, in all.
	CacheSavedUSD float64 `json:"cache_saved_usd"`
}

// Comparison is condition To against condition From, paired by task: the
// geometric mean of the per-task ratios To/From of context and output
// tokens, and the difference To - From of per-task accuracy.
type Comparison struct {
	Name      string   `json:"name"` // the layer ("representation") or "To vs From"
	Model     string   `json:"model"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Tasks     int      `json:"tasks"` // tasks paired
	Context   Interval `json:"context_ratio"`
	Output    Interval `json:"output_ratio"`
	Accuracy  Interval `json:"accuracy_diff"`
	Dropped   Dropped  `json:"dropped"`
	FromModel string   `json:"from_model,omitempty"` // two runs: the first run's model, when it differs
	// MinDetectable is MinDetectableDiff(Tasks) (null with no task).
	MinDetectable *float64 `json:"min_detectable_accuracy_diff"`
}

// Dropped is what a comparison left out, by why.
type Dropped struct {
	// NoResult are the tasks that could not be paired: From or To has no
	// trial with a model result for them (every rep an infra failure, or
	// not run yet). They are in none of the comparison's figures.
	NoResult []string `json:"no_result"`
	// ZeroContext and ZeroOutput count paired tasks left out of the
	// context or output ratio: a side's mean was 0 tokens, and a ratio
	// of nothing means nothing. They still count in the accuracy.
	ZeroContext int `json:"zero_context"`
	ZeroOutput  int `json:"zero_output"`
}

// Any says the comparison dropped something.
func (d Dropped) Any() bool {
	return len(d.NoResult)+d.ZeroContext+d.ZeroOutput > 0
}

// TaskRow is one task of a run: per condition (in Report.Rows' order),
// its reps' results.
type TaskRow struct {
	Task     string     `json:"task"`
	Question string     `json:"question"`
	Cells    []TaskCell `json:"cells"`
}

// TaskCell is one task in one (model, condition).
type TaskCell struct {
	Model     string   `json:"model"`
	Condition string   `json:"condition"`
	Reps      int      `json:"reps"` // trials with a model result
	Correct   int      `json:"correct"`
	Infra     int      `json:"infra"`
	Turns     float64  `json:"mean_turns"`
	Context   float64  `json:"mean_context_tokens"`
	Trials    []string `json:"trials"` // trajectory paths, relative to the run directory, rep by rep ("": none recorded)
	// Notebooks are the trials' notebooks, relative to the run directory,
	// with Options.Notebooks ("" for a trial without a trajectory).
	Notebooks []string `json:"notebooks,omitempty"`
}

// layers are the seed's attribution, in the ladder's order.
var layers = []struct{ name, from, to string }{
	{"representation", "A", "B0"},
	{"working habits", "B0", "B"},
	{"protocol", "B", "D"},
	{"loop", "D", "C"},
}

// Build computes the report of one run, or of two (the second compared
// with the first).
func Build(runs []*Run, opts Options) (*Report, error) {
	if len(runs) == 0 || len(runs) > 2 {
		return nil, fmt.Errorf("a report is of one run or of two, not %d", len(runs))
	}
	rep := &Report{Notes: []string{}}
	for i, r := range runs {
		rep.Runs = append(rep.Runs, runInfo(r))
		for _, s := range bench.Summarize(r.Spec, r.Final) {
			rep.Rows = append(rep.Rows, buildRow(i, r, s, opts.Prices))
		}
		if missing := rep.Runs[i].Expected - rep.Runs[i].Keys; missing > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d of %d trials have no line yet (the run is unfinished: run bench again to finish it)",
				r.Dir, missing, rep.Runs[i].Expected))
		}
	}
	if opts.Prices != nil {
		rep.Notes = append(rep.Notes, unpriced(runs, opts.Prices)...)
	}
	rep.Sessions = buildSessions(runs, rep.Rows)
	first := runs[0]
	conds := conditionNames(first)
	rep.Baseline = opts.Baseline
	switch {
	case rep.Baseline == "" && slices.Contains(conds, "A"):
		rep.Baseline = "A"
	case rep.Baseline == "" && len(conds) > 0:
		rep.Baseline = conds[0]
	case rep.Baseline != "" && !slices.Contains(conds, rep.Baseline):
		return nil, &InputError{fmt.Sprintf("--baseline %s: the run has no condition %s (it has %v)", rep.Baseline, rep.Baseline, conds)}
	}
	rng := NewRand(Seed)
	all := taskIDs(first)
	for _, m := range first.Spec.Models {
		for _, l := range layers {
			switch {
			case !slices.Contains(conds, l.from) || !slices.Contains(conds, l.to):
				if m.Name == first.Spec.Models[0].Name {
					rep.Notes = append(rep.Notes, fmt.Sprintf("the %s layer (%s vs %s) is left out: the run has no %s", l.name, l.to, l.from, missingOf(conds, l.from, l.to)))
				}
				continue
			}
			rep.Layers = append(rep.Layers, compare(l.name, first, m.Name, l.from, first, m.Name, l.to, all, rng))
		}
		for _, c := range conds {
			if c == rep.Baseline {
				continue
			}
			rep.Versus = append(rep.Versus, compare(c+" vs "+rep.Baseline, first, m.Name, rep.Baseline, first, m.Name, c, all, rng))
		}
	}
	rep.Tasks = taskRows(first, opts.Notebooks)
	if len(runs) == 2 {
		rep.SecondTasks = taskRows(runs[1], false)
		rep.Pairs, rep.Notes = pairRuns(runs[0], runs[1], rng, rep.Notes)
	}
	if opts.By != "" {
		by, err := breakdown(runs, opts.By)
		if err != nil {
			return nil, err
		}
		rep.By = by
	}
	return rep, nil
}

// unpriced are the notes on the models of runs that prices has no price
// for, each model once.
func unpriced(runs []*Run, prices map[string]Price) []string {
	var notes []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, m := range r.Spec.Models {
			if _, ok := prices[m.Name]; ok || seen[m.Name] {
				continue
			}
			seen[m.Name] = true
			notes = append(notes, fmt.Sprintf("no price for model %s in --prices: no money shown for it", m.Name))
		}
	}
	return notes
}

// InputError is a report asked for what the run does not hold.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func runInfo(r *Run) RunInfo {
	ri := RunInfo{Dir: r.Dir, Version: r.Spec.Version, Created: r.Spec.Created.UTC().Format("2006-01-02 15:04 UTC"),
		Tasks: len(r.Spec.TaskList), Reps: r.Spec.Reps, Keys: len(r.Final), Lines: r.Lines}
	ri.Conditions = conditionNames(r)
	for _, m := range r.Spec.Models {
		ri.Models = append(ri.Models, m.Name)
		// A model has no trial of the tasks it skips (the reference model
		// of a task without a solution).
		ri.Expected += len(ri.Conditions) * (ri.Tasks - len(m.SkipTasks)) * ri.Reps
	}
	ri.MinDetectable = minDetectable(ri.Tasks)
	switch s := r.Spec.Tasks; s.Kind {
	case "builtin":
		ri.TaskSource = fmt.Sprintf("built-in, tier %s, seed %d", s.Tier, s.Seed)
	case "file":
		ri.TaskSource = "file " + s.File
	default:
		ri.TaskSource = s.Kind
	}
	ri.Sandbox = r.Spec.Sandbox.Kind
	if r.Spec.Sandbox.Image != "" {
		ri.Sandbox += " " + r.Spec.Sandbox.Image
	}
	return ri
}

func conditionNames(r *Run) []string {
	var names []string
	for _, c := range r.Spec.Conditions {
		names = append(names, c.Name)
	}
	return names
}

func missingOf(conds []string, a, b string) string {
	if !slices.Contains(conds, a) {
		return a
	}
	return b
}

// taskIndex numbers the run's tasks in its task list's order.
func taskIndex(r *Run) map[string]int {
	idx := map[string]int{}
	for i, t := range r.Spec.TaskList {
		idx[t.ID] = i
	}
	return idx
}

// buildRow is the report's row of s, a Row of bench.Summarize for run:
// its counts as they are, and over its graded trials (s.Results) the
// means with their intervals over tasks, medians and quartiles, and money
// at prices. A mean is Describe's over the same trials as s's (the same
// sum over the same trials): bench's end-of-run table and the report show
// the same figures.
func buildRow(run int, r *Run, s bench.Row, prices map[string]Price) Row {
	row := Row{Run: run, Model: s.Model, Condition: s.Condition, Counts: s.Counts, BudgetStops: s.BudgetStops, KernelDied: s.KernelDied, Estimated: s.Estimated,
		Sources: Sources{Executed: s.Executed, Stated: s.Stated, Unexecuted: s.Unexecuted, None: s.None,
			Literal: s.Literal, LiteralRight: s.LiteralRight}}
	idx := taskIndex(r)
	n := len(s.Results)
	groups := make([]int, n)
	correct := make([]bool, n)
	turns, ctx, out, cached, reasoning, wall, poolWait := make([]float64, n), make([]float64, n), make([]float64, n),
		make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	waited := false
	price, priced := prices[s.Model]
	money := &Money{}
	for i, t := range s.Results {
		groups[i], correct[i] = idx[t.Task], t.Correct
		turns[i], ctx[i], out[i], cached[i] = float64(t.Turns), float64(t.ContextTokens), float64(t.OutputTokens), float64(t.CachedTokens)
		reasoning[i], wall[i], poolWait[i] = float64(t.ReasoningTokens), float64(t.WallMS), float64(t.PoolWaitMS)
		waited = waited || t.PoolWaitMS > 0
		if priced {
			uncached := float64(t.ContextTokens - t.CachedTokens)
			usd := (uncached*price.Input + float64(t.CachedTokens)*price.CachedInput + float64(t.OutputTokens)*price.Output) / 1e6
			money.TotalUSD += usd
			money.CacheSavedUSD += float64(t.CachedTokens) * (price.Input - price.CachedInput) / 1e6
		}
	}
	rng := NewRand(Seed)
	row.Turns = Describe(turns, groups, rng, Resamples)
	row.Context = Describe(ctx, groups, rng, Resamples)
	row.Output = Describe(out, groups, rng, Resamples)
	row.Cached = Describe(cached, groups, rng, Resamples)
	row.Reasoning = Describe(reasoning, groups, rng, Resamples)
	row.WallMS = Describe(wall, groups, rng, Resamples)
	row.Accuracy = TaskAccuracy(correct, groups, rng, Resamples)
	if s.Records != nil {
		row.Records = recordScores(s.Results, groups, row.Accuracy)
	}
	if waited { // from a generator of its own: the figures above stay as they were
		d := Describe(poolWait, groups, NewRand(Seed), Resamples)
		row.PoolWaitMS = &d
	}
	if priced && row.Graded > 0 {
		money.MeanUSD = money.TotalUSD / float64(row.Graded)
		row.Money = money
	}
	return row
}

// perTask is each task's mean context, output and accuracy over its
// graded reps in one (model, condition).
type perTask struct {
	context, output, accuracy float64
}

// taskMeans are the tasks with a graded rep in (model, cond) of r, each
// with the means of bench.Sum over its reps.
func taskMeans(r *Run, model, cond string) map[string]perTask {
	byTask := map[string][]bench.Trial{}
	for _, t := range r.Final {
		if t.Model == model && t.Condition == cond {
			byTask[t.Task] = append(byTask[t.Task], t)
		}
	}
	out := map[string]perTask{}
	for task, trials := range byTask {
		if s := bench.Sum(trials); s.Graded > 0 {
			out[task] = perTask{s.ContextTokens, s.OutputTokens, s.Accuracy}
		}
	}
	return out
}

// compare pairs (modelA, from) of run a with (modelB, to) of run b by task,
// over tasks (ids, in a's task order).
func compare(name string, a *Run, modelA, from string, b *Run, modelB, to string, tasks []string, rng *rand.Rand) Comparison {
	ma, mb := taskMeans(a, modelA, from), taskMeans(b, modelB, to)
	var ca, cb, oa, ob, aa, ab []float64
	var dropped Dropped
	for _, id := range tasks {
		x, okA := ma[id]
		y, okB := mb[id]
		if !okA || !okB {
			dropped.NoResult = append(dropped.NoResult, id)
			continue
		}
		ca, cb = append(ca, x.context), append(cb, y.context)
		oa, ob = append(oa, x.output), append(ob, y.output)
		aa, ab = append(aa, x.accuracy), append(ab, y.accuracy)
	}
	c := Comparison{Name: name, Model: modelB, From: from, To: to, Tasks: len(ca), MinDetectable: minDetectable(len(ca))}
	if modelA != modelB {
		c.FromModel = modelA
	}
	c.Context, dropped.ZeroContext = GeoMeanRatio(ca, cb, rng, Resamples)
	c.Output, dropped.ZeroOutput = GeoMeanRatio(oa, ob, rng, Resamples)
	c.Accuracy = PairedAccuracyDiff(aa, ab, rng, Resamples)
	if dropped.NoResult == nil {
		dropped.NoResult = []string{}
	}
	c.Dropped = dropped
	return c
}

// minDetectable is MinDetectableDiff(n), nil with no task.
func minDetectable(n int) *float64 {
	if n <= 0 {
		return nil
	}
	d := MinDetectableDiff(n)
	return &d
}

// taskIDs are the ids of r's task list, in its order.
func taskIDs(r *Run) []string {
	var ids []string
	for _, t := range r.Spec.TaskList {
		ids = append(ids, t.ID)
	}
	return ids
}

func taskRows(r *Run, notebooks bool) []TaskRow {
	var rows []TaskRow
	byKey := map[bench.Key]bench.Trial{}
	for _, t := range r.Final {
		byKey[t.Key] = t
	}
	for _, task := range r.Spec.TaskList {
		tr := TaskRow{Task: task.ID, Question: task.Question}
		for _, m := range r.Spec.Models {
			for _, c := range r.Spec.Conditions {
				cell := TaskCell{Model: m.Name, Condition: c.Name}
				var reps []bench.Trial
				for rep := 1; rep <= r.Spec.Reps; rep++ {
					t, ok := byKey[bench.Key{Model: m.Name, Condition: c.Name, Task: task.ID, Rep: rep}]
					if !ok {
						continue
					}
					reps = append(reps, t)
					cell.Trials = append(cell.Trials, t.Trajectory)
					if notebooks {
						nb := ""
						if t.Trajectory != "" { // none was recorded (bench.NotRecorded)
							nb = NotebookPath(t.Trajectory)
						}
						cell.Notebooks = append(cell.Notebooks, nb)
					}
				}
				s := bench.Sum(reps)
				cell.Reps, cell.Correct, cell.Infra, cell.Turns, cell.Context = s.Graded, s.Correct, s.Infra, s.Turns, s.ContextTokens
				tr.Cells = append(tr.Cells, cell)
			}
		}
		rows = append(rows, tr)
	}
	return rows
}

// pairRuns compares run b with run a condition by condition, paired by
// task: model by model when both runs have the same models, else the
// first model of each. A task is paired only when both runs' task lists
// hold it with the same id, question and gold: two runs of different data
// seeds share ids (s-t1-1) but not what they ask.
func pairRuns(a, b *Run, rng *rand.Rand, notes []string) ([]Comparison, []string) {
	same := len(a.Spec.Models) == len(b.Spec.Models)
	for i := range a.Spec.Models {
		same = same && a.Spec.Models[i].Name == b.Spec.Models[i].Name
	}
	type pair struct{ ma, mb string }
	var pairs []pair
	if same {
		for _, m := range a.Spec.Models {
			pairs = append(pairs, pair{m.Name, m.Name})
		}
	} else {
		pairs = []pair{{a.Spec.Models[0].Name, b.Spec.Models[0].Name}}
		if len(a.Spec.Models) > 1 || len(b.Spec.Models) > 1 {
			notes = append(notes, fmt.Sprintf("the two runs have different models: %s of the first run is paired with %s of the second", pairs[0].ma, pairs[0].mb))
		}
	}
	tasks, note := commonTasks(a.Spec, b.Spec)
	if note != "" {
		notes = append(notes, note)
	}
	bconds := conditionNames(b)
	var out []Comparison
	for _, p := range pairs {
		for _, c := range conditionNames(a) {
			if !slices.Contains(bconds, c) {
				continue
			}
			out = append(out, compare(c+": second run vs first", a, p.ma, c, b, p.mb, c, tasks, rng))
		}
	}
	return out, notes
}

// shownIDs is how many ids a note names before "and n more".
const shownIDs = 5

// commonTasks are the ids of the tasks that x's and y's task lists both
// hold with the same question and gold (golds compared as JSON), in x's
// order; note says which were left out, "" when none was.
func commonTasks(x, y bench.Spec) (ids []string, note string) {
	type task struct{ question, gold string }
	key := func(q string, gold any) task {
		g, err := json.Marshal(gold)
		if err != nil {
			g = []byte(fmt.Sprintf("%#v", gold))
		}
		return task{q, string(g)}
	}
	inY := map[string]task{}
	for _, t := range y.TaskList {
		inY[t.ID] = key(t.Question, t.Gold)
	}
	inX := map[string]bool{}
	var changed, only []string
	for _, t := range x.TaskList {
		inX[t.ID] = true
		switch yt, ok := inY[t.ID]; {
		case !ok:
			only = append(only, t.ID)
		case yt != key(t.Question, t.Gold):
			changed = append(changed, t.ID)
		default:
			ids = append(ids, t.ID)
		}
	}
	for _, t := range y.TaskList {
		if !inX[t.ID] {
			only = append(only, t.ID)
		}
	}
	if len(changed)+len(only) == 0 {
		return ids, ""
	}
	var why []string
	if len(changed) > 0 {
		why = append(why, fmt.Sprintf("%d with the same id but another question or gold (runs of different data?): %s", len(changed), someIDs(changed)))
	}
	if len(only) > 0 {
		why = append(why, fmt.Sprintf("%d in one run only: %s", len(only), someIDs(only)))
	}
	return ids, fmt.Sprintf("the two runs' task lists differ: %d tasks are paired (the same id, question and gold in both), %d left out: %s",
		len(ids), len(changed)+len(only), strings.Join(why, "; "))
}

// someIDs names the first few of ids.
func someIDs(ids []string) string {
	if len(ids) <= shownIDs {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:shownIDs], ", "), len(ids)-shownIDs)
}
