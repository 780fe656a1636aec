package bench

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
)

// The files of a run directory.
const (
	SpecFile      = "run.json"
	TrialsFile    = "trials.jsonl"
	TrajectoryDir = "trajectories"
	lockFile      = ".lock" // held by the process running the run
	FormatVersion = 2
	// pinFormat is the first format whose run.json pins the runtime, the
	// sandbox's limits, the sampling, the parallelism and the first
	// requests; an older run is read (report) but not resumed.
	pinFormat      = 2
	oldestFormat   = 1
	tempSuffix     = ".partial"
	trajectoryExt  = ".jsonl"
	maxLineBytes   = 64 << 20
	specFilePerm   = 0o640
	runDirPerm     = 0o750 // closed to other users: a local kernel (nobody) must not read the trials
	trialsFilePerm = 0o640
)

// Error classes of a trial (see the package comment).
const (
	ClassModel = "model"
	ClassInfra = "infra"
)

// NotRecorded is the status of a trial that ran but whose trajectory could
// not be written whole (a full disk, say): its class is ClassInfra, so it
// runs again.
const NotRecorded agent.Status = "not_recorded"

// Spec is what a run is: everything that decides its trials' results. It
// is written to run.json before the first trial, and a run is resumed only
// with the same Spec (Diff says what differs), by the same ctxcode version.
type Spec struct {
	Format     int             `json:"format"`
	Version    string          `json:"ctxcode_version"`
	Created    time.Time       `json:"created"`
	Models     []ModelInfo     `json:"models"`
	Conditions []ConditionInfo `json:"conditions"`
	Tasks      TaskSource      `json:"tasks"`
	// TaskList is every task with its gold, so that the run directory
	// alone can be graded and reported on.
	TaskList []datasets.Task `json:"task_list"`
	// Sessions are the staged sessions the tasks are grouped into (a
	// task file's "session" and "stage", or --stages), each a trial keyed
	// by its name; a task in none is a trial of its own.
	Sessions []Session `json:"sessions,omitempty"`
	Data     DataInfo  `json:"data"`
	// DataFolders are the data folders tasks of a task file bring ("data"
	// on their lines), in the order of their first task, each with the
	// prefixes written for it; Data is the run's --data (empty without
	// one: every task brings its own).
	DataFolders []FolderInfo `json:"data_folders,omitempty"`
	Reps        int          `json:"reps"`
	Budgets     Budgets      `json:"budgets"`
	Sandbox     SandboxInfo  `json:"sandbox"`
	// Runtime is what runs the cells; zero in a Spec given to Check means
	// not known yet (it is once the sandbox is open).
	Runtime RuntimeInfo `json:"runtime"`
	// Parallel is how many trials ran at once (--parallel): the load on
	// the machine and on the API, and so the timeouts and rate limits a
	// trial meets.
	Parallel int `json:"parallel"`
	// OrderSeed draws the order the trials run in (Order); a resume keeps
	// it, so the trials left run in the order they would have.
	OrderSeed int64 `json:"order_seed"`
	// Hosts are the daemons the trials spread over (bench --hosts), as
	// the latest start or resume named them; none in a run of one. They
	// say where trials ran, not what a trial is: a resume may name other
	// hosts (Diff does not compare them), but the width it runs at is
	// Parallel, which it does compare (give --parallel to keep it).
	Hosts []HostInfo `json:"hosts,omitempty"`
}

// HostInfo is one daemon of a run spread over several.
type HostInfo struct {
	Name  string `json:"name"`  // as --hosts named it
	Slots int    `json:"slots"` // trials at once on it
}

// ModelInfo names a model of the run and how it is sampled.
type ModelInfo struct {
	Name    string `json:"name"`
	BaseURL string `json:"base_url,omitempty"` // without credentials; empty for reference
	Seed    *int   `json:"seed,omitempty"`     // the sampling seed sent, if any
	// Temperature is the sampling temperature the requests ask for (0:
	// greedy); nil when they carry none (the reference model, or an OpenAI
	// reasoning model, which takes only its provider's default).
	Temperature *float32 `json:"temperature,omitempty"`
	// SkipTasks are the tasks the model has no trial of (Model.Skip: the
	// reference model's tasks without a solution), so that a report
	// expects none.
	SkipTasks []string `json:"skip_tasks,omitempty"`
}

// ConditionInfo names a condition of the run and the prefix it starts from.
type ConditionInfo struct {
	Name         string `json:"name"`
	Protocol     string `json:"protocol"`
	Prefix       string `json:"prefix,omitempty"` // empty for A
	PrefixSource string `json:"prefix_source,omitempty"`
	PrefixSHA256 string `json:"prefix_sha256,omitempty"`
	// FirstRequest is the SHA-256 of the condition's first request with a
	// placeholder question, as the agent renders it (Run.FirstRequestSHA256):
	// its rules, its tools, the prefix's code or the skill document, over
	// the main data, or, when every task brings its own, over the first
	// task's folder (whose prefix Prefix then names; every folder's
	// prefixes are pinned in Spec.DataFolders).
	FirstRequest string `json:"first_request_sha256,omitempty"`
	// Base is the built-in condition a variant (--conditions-file) is made
	// from; empty for a built-in condition.
	Base string `json:"base,omitempty"`
	// Rules is a variant's rules text, which replaced its base's ("" for
	// none), and RulesSHA256 its hash; both absent when the condition has
	// its own rules.
	Rules       *string `json:"rules,omitempty"`
	RulesSHA256 string  `json:"rules_sha256,omitempty"`
	// Context is the condition's context policy with its figures; absent
	// for none.
	Context *ContextInfo `json:"context,omitempty"`
}

// TaskSource says where the tasks came from: the built-in generator (Kind
// "builtin", Tier, Seed) or a user's file (Kind "file", File, SHA256).
type TaskSource struct {
	Kind   string `json:"kind"`
	Tier   string `json:"tier,omitempty"`
	Seed   int64  `json:"seed,omitempty"`
	File   string `json:"file,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Stages is --stages: the built-in tasks were cut into sessions of
	// this many questions (BuiltinSessions); 0 for none.
	Stages int `json:"stages,omitempty"`
}

// DataInfo identifies the data the kernels see. Dir is where it was on the
// machine that started the run; a resume elsewhere compares the hash.
type DataInfo struct {
	Dir      string `json:"dir"`
	SHA256   string `json:"sha256"` // of the manifest, or of every file's name and bytes
	Manifest any    `json:"manifest,omitempty"`
	// FollowLinks says that the kernels saw the files links in Dir lead to
	// outside it (--follow-links); without it they are left out.
	FollowLinks bool `json:"follow_links,omitempty"`
}

// Budgets are the agent's limits of every trial.
type Budgets struct {
	MaxTurns        int    `json:"max_turns"`
	MaxPromptTokens int    `json:"max_prompt_tokens"`
	MaxOutputTokens int    `json:"max_output_tokens"`
	CellTimeoutMS   int64  `json:"cell_timeout_ms"`
	OutputBudget    int    `json:"output_budget"`
	MaxRestarts     int    `json:"max_restarts"`
	Encoding        string `json:"encoding"`
}

// BudgetsOf records cfg's budgets.
func BudgetsOf(cfg agent.Config) Budgets {
	return Budgets{cfg.MaxTurns, cfg.MaxPromptTokens, cfg.MaxOutputTokens, cfg.CellTimeout.Milliseconds(),
		cfg.OutputBudget, cfg.MaxRestarts, string(cfg.Encoding)}
}

// SandboxInfo says where the kernels ran and within which limits. The
// limits, the network and the rights are Docker's (sandbox.Config); a local
// kernel has none of them, and they are zero.
type SandboxInfo struct {
	Kind      string `json:"kind"` // docker, local or kubernetes
	Image     string `json:"image,omitempty"`
	NoIPython bool   `json:"no_ipython,omitempty"`
	Network   string `json:"network,omitempty"`
	// Memory and MemorySwap are bytes (MemorySwap 0: as Memory, no swap);
	// TmpSize the bytes of /tmp.
	Memory        int64   `json:"memory,omitempty"`
	MemorySwap    int64   `json:"memory_swap,omitempty"`
	CPUs          float64 `json:"cpus,omitempty"`
	Pids          int64   `json:"pids,omitempty"`
	TmpSize       int64   `json:"tmp_size,omitempty"`
	User          string  `json:"user,omitempty"`
	WritableRoot  bool    `json:"writable_root,omitempty"`
	KeepCaps      bool    `json:"keep_caps,omitempty"`
	NewPrivileges bool    `json:"new_privileges,omitempty"`
}

// RuntimeInfo is what runs the cells, and so decides every output a model
// reads: the kernel driver and the interpreter.
type RuntimeInfo struct {
	// Driver is prefixes.DriverVersion of the kernels' language.
	Driver string `json:"driver"`
	// ImageID is the Docker image's id; the image holds the interpreter.
	ImageID string `json:"image_id,omitempty"`
	// Interpreter is a local kernel's interpreter as the transcript cache
	// keys it: its path, size and modification time (and the driver's
	// flags).
	Interpreter string `json:"interpreter,omitempty"`
}

// Key identifies a trial within a run.
type Key struct {
	Model     string `json:"model"`
	Condition string `json:"condition"`
	Task      string `json:"task"`
	Rep       int    `json:"rep"` // from 1
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s/r%d", k.Model, k.Condition, k.Task, k.Rep)
}

// Trial is one line of trials.jsonl: a finished trial.
type Trial struct {
	Key
	Attempt int          `json:"attempt"` // 1 for a key's first run; more when an infra failure ran again
	Status  agent.Status `json:"status"`
	Class   string       `json:"class"` // ClassModel or ClassInfra
	Error   string       `json:"error,omitempty"`
	// Death says how the model's code killed the kernel, with status
	// kernel_died (class model): "exit 1", "oom", "deadline", "signal
	// SIGKILL". A line of an older ctxcode has status kernel_failed and
	// class infra for these; it runs again on resume, as every infra line.
	Death string `json:"death,omitempty"`
	// Answer is the executed value as JSON, or the text the model stated;
	// null without an answer.
	Answer       json.RawMessage `json:"answer"`
	AnswerSource string          `json:"answer_source,omitempty"`
	// Literal flags an executed answer whose ANSWER passed a literal typed
	// in the cell (agent.Result.Literal): it counts in accuracy and is
	// counted apart.
	Literal bool `json:"literal,omitempty"`
	// Correct counts in accuracy; AnswerRight says the answer matched the
	// gold whatever its source (an unexecuted answer may be right and not
	// count). Verdict is agent.Verdict's text.
	Correct         bool   `json:"correct"`
	AnswerRight     bool   `json:"answer_right"`
	Verdict         string `json:"verdict"`
	GradeReason     string `json:"grade_reason,omitempty"`
	Turns           int    `json:"turns"`
	ContextTokens   int    `json:"context_tokens"`
	OutputTokens    int    `json:"output_tokens"`
	CachedTokens    int    `json:"cached_tokens"`
	ReasoningTokens int    `json:"reasoning_tokens"`
	Estimated       bool   `json:"estimated"`
	// WallMS is the trial's own time: from the moment it has its kernel
	// (prefix built) to its end. PoolWaitMS is the time before it, spent
	// waiting for the pool to have a kernel ready: the harness's, not the
	// trial's (a pool that keeps up makes it 0). KernelMS is the part of
	// WallMS before the first model request; ModelMS the model calls,
	// retries and waits included; WaitedMS the part of ModelMS spent
	// waiting to retry.
	WallMS     int64 `json:"wall_ms"`
	PoolWaitMS int64 `json:"pool_wait_ms"`
	KernelMS   int64 `json:"kernel_ms"`
	ModelMS    int64 `json:"model_ms"`
	WaitedMS   int64 `json:"waited_ms"`
	// Host is the daemon the trial's kernel ran on, in a run spread over
	// several (Spec.Hosts); "" in a run of one.
	Host       string    `json:"host,omitempty"`
	Retries    int       `json:"retries"`
	Restarts   int       `json:"restarts"`
	Trajectory string    `json:"trajectory"` // relative to the run directory
	Started    time.Time `json:"started"`    // when the trial asked for its kernel

	// Parts is, for a record task, each gold part's verdict: "right",
	// "wrong" or "missing" (datasets.PartVerdict), whatever the answer's
	// source; ExtraParts the parts the answer has and the gold has not.
	Parts      map[string]string `json:"parts,omitempty"`
	ExtraParts []string          `json:"extra_parts,omitempty"`

	// Session names the session of a trial that is one (a staged
	// workload: several questions asked one after another in one
	// conversation and kernel); its Key.Task is the session's name too.
	// Stages holds each stage in order, as far as the session got; the
	// trial's own figures (Turns, ContextTokens, OutputTokens, ...) are
	// the sums of its stages'. Correct is true when every stage's is.
	// Both are empty for a trial of one question.
	Session string         `json:"session,omitempty"`
	Stages  []StageFigures `json:"stages,omitempty"`
	// Context is the context policy the trial ran under (session.Policy's
	// name: none, elide, summarize, staged); "" is none. Folds counts the
	// summary calls the policy made: they are in the tokens and in the
	// stages' Calls (Turns + Folds), not in Turns.
	Context string `json:"context,omitempty"`
	Folds   int    `json:"folds,omitempty"`
}

// StageFigures is one stage of a session trial: its task and verdict, what
// the stage itself used, and what the session had used by its end.
type StageFigures struct {
	Stage   int             `json:"stage"` // from 1
	Task    string          `json:"task"`
	Status  agent.Status    `json:"status"`
	Answer  json.RawMessage `json:"answer"`
	Verdict string          `json:"verdict"`
	Correct bool            `json:"correct"`
	// Own is what this stage used; Cumulative what stages 1..Stage used
	// together (the sum of their Own).
	Own        StageUse `json:"own"`
	Cumulative StageUse `json:"cumulative"`
	// PeakRequestTokens is the largest request of the stage, in the
	// tokenizer's count: what a context window must hold.
	PeakRequestTokens int `json:"peak_request_tokens"`
	// Elided is how many cell outputs the stage's last request showed as
	// stubs (the context policy's elision).
	Elided int `json:"elided,omitempty"`
}

// StageUse is what a stage (or stages) used, in each resource CC(n) is
// measured in.
type StageUse struct {
	// Calls counts model calls: the turns and the policy's summary calls.
	Calls        int `json:"calls"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// ToolResultTokens and ToolResultBytes measure the cell outputs the
	// model read, each once, as first shown (within the output budget).
	ToolResultTokens int `json:"tool_result_tokens"`
	ToolResultBytes  int `json:"tool_result_bytes"`
}

// Add adds v to u.
func (u *StageUse) Add(v StageUse) {
	u.Calls += v.Calls
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.ToolResultTokens += v.ToolResultTokens
	u.ToolResultBytes += v.ToolResultBytes
}

// BudgetStop says the trial ended because a budget ran out.
func (t Trial) BudgetStop() bool {
	switch t.Status {
	case agent.MaxTurns, agent.MaxPromptTokens, agent.ContextLength:
		return true
	}
	return false
}

// ConfigError is a run directory that cannot take this run: it holds
// another run, or files that are not a run. It is the user's to fix.
type ConfigError struct {
	Dir string
	Msg string
}

func (e *ConfigError) Error() string { return e.Dir + ": " + e.Msg }

// Log is an open run directory: its Spec and the trials it holds.
type Log struct {
	Dir  string
	Spec Spec
	// Trials are the lines already in the log, in order; Last holds the
	// last line of each key.
	Trials []Trial
	Last   map[Key]Trial
	// Dropped is true when a line cut by a crash was removed.
	Dropped bool

	mu   sync.Mutex
	f    *os.File
	lock *os.File // flock'ed while the log is open
}

// OpenMode says how Open treats a directory that already holds a run.
type OpenMode int

const (
	// Continue resumes a run with the same Spec (a new directory starts
	// one); a run with another Spec is refused.
	Continue OpenMode = iota
	// MustResume refuses a directory that holds no run.
	MustResume
	// Restart removes a run with another Spec (its run.json, trials.jsonl
	// and trajectories, nothing else) and starts again; a folder with other
	// files is used as it is.
	Restart
)

// Open opens the run directory dir for spec, creating it when missing. In
// a directory that holds a run with the same Spec, the trials already done
// are read; one with a different Spec (Diff), or written by another
// ctxcode version, or of a format that pinned less (format 1), is refused
// with the differences named (a *ConfigError), unless mode is Restart. A
// non-empty directory that holds no run is refused unless mode is
// Restart. warn hears of a line cut by a crash, and of what a restart
// discards.
func Open(dir string, spec Spec, mode OpenMode, warn io.Writer) (*Log, error) {
	spec.Format = FormatVersion
	if _, _, _, err := inspect(dir, &spec, mode); err != nil {
		return nil, err // refused before anything is written
	}
	if err := os.MkdirAll(dir, runDirPerm); err != nil {
		return nil, err
	}
	if err := closeToOthers(dir); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	// Again under the lock: another process may have started the run
	// between the first look and the lock.
	st, old, why, err := inspect(dir, &spec, mode)
	var l *Log
	switch {
	case err != nil:
	case st == newRun:
		l, err = create(dir, spec)
	case st == emptyRun:
		fmt.Fprintf(warn, "ctxcode: %s holds a run with another configuration but no trial yet (%s): starting it again with this one\n", dir, why)
		l, err = restart(dir, old, spec, warn)
	case st == otherRun:
		fmt.Fprintf(warn, "ctxcode: %s holds another run (%s); --force: starting again\n", dir, why)
		l, err = restart(dir, old, spec, warn)
	case st == brokenRun:
		fmt.Fprintf(warn, "ctxcode: %s: %s; --force: starting the run again\n", dir, why)
		l, err = restart(dir, nil, spec, warn)
	default:
		l, err = resume(dir, *old, warn)
	}
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	l.lock = lock
	return l, nil
}

// closeToOthers takes other users' access to the folder dir away (a
// folder the user made, or a run of an older ctxcode): what is inside is
// then out of their reach, whatever its own mode.
func closeToOthers(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if perm := st.Mode().Perm(); perm&0o007 != 0 {
		return os.Chmod(dir, perm&^0o007)
	}
	return nil
}

// lockDir takes the run directory's lock, so that two processes never run
// one run at once (they would run the same trials and interleave their
// lines). The lock is the kernel's: it ends with the process, however it
// ends.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, trialsFilePerm)
	if err != nil {
		return nil, &ConfigError{dir, fmt.Sprintf("cannot lock the run folder: %v", err)}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &ConfigError{dir, "another ctxcode bench is running this run now: wait for it to end, or give another --out"}
		}
		return nil, &ConfigError{dir, fmt.Sprintf("cannot lock the run folder: %v", err)}
	}
	return f, nil
}

// Check says, without writing anything, whether Open would refuse dir: a
// *ConfigError, or nil. With spec nil (not known yet: the golds of a
// user's tasks are computed in a kernel) the configurations are not
// compared, and with spec's Runtime zero (not known before the sandbox is
// open) the runtimes are not; Open compares them.
func Check(dir string, spec *Spec, mode OpenMode) error {
	if spec != nil {
		s := *spec
		s.Format = FormatVersion
		if s.Runtime == (RuntimeInfo{}) {
			if old, err := readSpec(dir); err == nil {
				s.Runtime = old.Runtime
			}
		}
		spec = &s
	}
	_, _, _, err := inspect(dir, spec, mode)
	return err
}

// dirState is what a run directory holds.
type dirState int

const (
	newRun    dirState = iota // nothing: a run starts
	sameRun                   // this run: it resumes
	otherRun                  // a run with another configuration; mode is Restart
	emptyRun                  // a run with another configuration and no trial line: it starts again
	brokenRun                 // a run.json that does not parse; mode is Restart
)

// inspect reads what dir holds and refuses what mode does not allow; why
// names the differences of otherRun or the fault of brokenRun. A nil
// spec matches any run.
func inspect(dir string, spec *Spec, mode OpenMode) (st dirState, old *Spec, why string, err error) {
	entries, err := os.ReadDir(dir)
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return e.Name() == lockFile })
	switch {
	case errors.Is(err, os.ErrNotExist):
		if mode == MustResume {
			return 0, nil, "", &ConfigError{dir, "no such folder: there is no run to resume (drop --resume to start one)"}
		}
	case err != nil:
		return 0, nil, "", &ConfigError{dir, fmt.Sprintf("cannot read the run folder: %v", err)}
	}
	old, err = readSpec(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) && len(entries) > 0 && mode != Restart:
		return 0, nil, "", &ConfigError{dir, fmt.Sprintf("the folder is not empty and holds no run (no %s): give another --out, or --force to use it", SpecFile)}
	case errors.Is(err, os.ErrNotExist) && mode == MustResume:
		return 0, nil, "", &ConfigError{dir, fmt.Sprintf("there is no run to resume (no %s): drop --resume to start one", SpecFile)}
	case errors.Is(err, os.ErrNotExist):
		return newRun, nil, "", nil
	case err != nil && mode == Restart:
		return brokenRun, nil, err.Error(), nil
	case err != nil:
		return 0, nil, "", &ConfigError{dir, fmt.Sprintf("%v: fix it, or --force to start the run again", err)}
	}
	var diffs []string
	if old.Format < pinFormat {
		diffs = append(diffs, fmt.Sprintf("%s is of format %d, written by ctxcode %s, which did not record the sandbox's limits, "+
			"the sampling, --parallel, the kernel driver, the interpreter, the image or the conditions' first requests: "+
			"whether this run would run its trials as they ran cannot be checked (ctxcode report still reads it)",
			SpecFile, old.Format, old.Version))
	}
	if spec != nil {
		diffs = append(diffs, Diff(*old, *spec)...)
	}
	if len(diffs) == 0 || spec == nil && (mode == Restart || !hasTrials(dir)) {
		// Without a spec, a run with no trial line is judged by Open.
		return sameRun, old, "", nil
	}
	if mode == Restart {
		return otherRun, old, strings.Join(diffs, "; "), nil
	}
	if mode != MustResume && !hasTrials(dir) {
		// Nothing ran (a model or prefix refused before the first
		// trial): nothing is lost by starting again.
		return emptyRun, old, strings.Join(diffs, "; "), nil
	}
	return 0, nil, "", &ConfigError{dir, "holds a run with another configuration, so it cannot be resumed with this one:\n  " +
		strings.Join(diffs, "\n  ") + "\ngive another --out for a new run, or --force to discard this one and start again"}
}

// hasTrials says whether the run in dir has a trial line, or something
// that may be one.
func hasTrials(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, TrialsFile))
	return !errors.Is(err, os.ErrNotExist) && (err != nil || st.Size() > 0)
}

// StoredOrderSeed is the order seed of the run in dir, so that a resume
// keeps its order; false when dir holds no run.json that reads.
func StoredOrderSeed(dir string) (int64, bool) {
	s, err := readSpec(dir)
	if err != nil {
		return 0, false
	}
	return s.OrderSeed, true
}

func readSpec(dir string) (*Spec, error) {
	b, err := os.ReadFile(filepath.Join(dir, SpecFile))
	if err != nil {
		return nil, err
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s is not a run's configuration: %v", SpecFile, err)
	}
	if s.Format < oldestFormat || s.Format > FormatVersion {
		return nil, fmt.Errorf("%s has format %d; this ctxcode reads formats %d to %d", SpecFile, s.Format, oldestFormat, FormatVersion)
	}
	return &s, nil
}

func create(dir string, spec Spec) (*Log, error) {
	// run.json first: a kill before it leaves the folder as it was.
	if err := os.MkdirAll(dir, runDirPerm); err != nil {
		return nil, err
	}
	if spec.Created.IsZero() {
		spec.Created = time.Now().UTC()
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileSync(filepath.Join(dir, SpecFile), append(b, '\n')); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, TrajectoryDir), runDirPerm); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, TrialsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, trialsFilePerm)
	if err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &Log{Dir: dir, Spec: spec, Last: map[Key]Trial{}, f: f}, nil
}

// restart removes the files of the run in dir (old's, nil when its
// run.json does not read), and nothing of the user's (removeRun), and
// creates a new one; warn hears of the files it kept.
func restart(dir string, old *Spec, spec Spec, warn io.Writer) (*Log, error) {
	kept, err := removeRun(dir, old)
	if err != nil {
		return nil, err
	}
	if len(kept) > 0 {
		fmt.Fprint(warn, keptNote(dir, kept))
	}
	return create(dir, spec)
}

func resume(dir string, spec Spec, warn io.Writer) (*Log, error) {
	path := filepath.Join(dir, TrialsFile)
	_, serr := os.Stat(path)
	created := errors.Is(serr, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, trialsFilePerm)
	if err != nil {
		return nil, err
	}
	l := &Log{Dir: dir, Spec: spec, Last: map[Key]Trial{}}
	good, err := l.read(f)
	if err != nil {
		_ = f.Close()
		return nil, &ConfigError{dir, err.Error()}
	}
	if created {
		// The folder holds the new file's name only once it is synced.
		if err := syncDir(dir); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if st, err := f.Stat(); err == nil && st.Size() > good {
		// The last line was cut by a crash: drop it, so the next line
		// starts on a line of its own. Its trial runs again.
		if err := f.Truncate(good); err != nil {
			_ = f.Close()
			return nil, err
		}
		l.Dropped = true
		fmt.Fprintf(warn, "ctxcode: %s: dropped a trial line cut short by a crash; that trial runs again\n", path)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, TrajectoryDir), runDirPerm); err != nil {
		_ = f.Close()
		return nil, err
	}
	l.f = f
	return l, nil
}

// read loads the trials of r and returns the length of its complete,
// well-formed lines. Only the last line may be bad (cut by a crash); a bad
// line before it is an error.
func (l *Log) read(r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var good int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return good, nil
		}
		if err != nil && err != io.EOF {
			return good, err
		}
		var t Trial
		perr := json.Unmarshal(line, &t)
		if perr == nil && t.Task == "" {
			perr = errors.New("no task")
		}
		if err == io.EOF || perr != nil {
			if err == io.EOF { // the last line, cut short: dropped
				return good, nil
			}
			if _, peek := br.Peek(1); peek == io.EOF {
				return good, nil // a bad last line: cut mid-write
			}
			return good, fmt.Errorf("%s line %d is not a trial (%v): remove that line to resume; its trial runs again", TrialsFile, n, perr)
		}
		good += int64(len(line))
		l.Trials = append(l.Trials, t)
		l.Last[t.Key] = t
	}
}

// Done says whether the key has a final line: one whose class is not infra.
func (l *Log) Done(k Key) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.Last[k]
	return ok && t.Class != ClassInfra
}

// Attempts is how many lines the key has.
func (l *Log) attempts(k Key) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, t := range l.Trials {
		if t.Key == k {
			n++
		}
	}
	return n
}

// Append writes t as one line, flushes and fsyncs it. A line that could
// not be written whole (a full disk) is cut off again, and the error says
// so: the log ends with its last whole line, the trial has no line and
// runs again when the run resumes. It is safe for concurrent use.
func (l *Log) Append(t Trial) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("the run log is closed")
	}
	if err := l.write(append(b, '\n')); err != nil {
		fix := "fix that"
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			fix = "free some space on the disk of " + l.Dir
		}
		kept := TrialsFile + " ends with its last whole line"
		if l.f == nil { // the cut line stayed: resume drops it
			kept = "the run drops the cut line when it resumes"
		}
		return fmt.Errorf("trial %s: its line was not written (%w); %s, and the trial runs again when the run resumes: %s",
			t.Key, err, kept, fix)
	}
	l.Trials = append(l.Trials, t)
	l.Last[t.Key] = t
	return nil
}

// write appends line to the log file and syncs it. A line that could not
// be written whole (a full disk) is cut off again, so that the log keeps
// only whole lines and a later line does not follow half of one; a log
// that cannot be cut back is closed, and takes no more lines.
func (l *Log) write(line []byte) error {
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("write %s: %w", TrialsFile, err)
	}
	_, err = l.f.Write(line)
	if err == nil {
		if err = l.f.Sync(); err != nil {
			err = fmt.Errorf("sync %s: %w", TrialsFile, unwrapPath(err))
		}
	} else {
		err = fmt.Errorf("write %s: %w", TrialsFile, unwrapPath(err))
	}
	if err == nil {
		return nil
	}
	if terr := l.f.Truncate(st.Size()); terr != nil {
		_ = l.f.Close()
		l.f = nil
		return fmt.Errorf("%w; and the line could not be cut off again (%v): the run drops it when it resumes", err, unwrapPath(terr))
	}
	return err
}

// Final is the last line of every key, in the order the keys first
// appear in the log.
func (l *Log) Final() []Trial {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Final(l.Trials)
}

// Final is the last line of every key of trials, in the order the keys
// first appear.
func Final(trials []Trial) []Trial {
	idx := map[Key]int{}
	var out []Trial
	for _, t := range trials {
		if i, ok := idx[t.Key]; ok {
			out[i] = t
			continue
		}
		idx[t.Key] = len(out)
		out = append(out, t)
	}
	return out
}

// Close closes the log file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.f != nil { // nil once closed, or after a line that could not be cut off again
		err = l.f.Close()
	}
	l.f = nil
	if l.lock != nil {
		_ = l.lock.Close() // releases the flock
		l.lock = nil
	}
	return err
}

// ReadDir reads a finished or unfinished run directory, for reports: its
// Spec and its trials, a line cut by a crash left out.
func ReadDir(dir string) (*Spec, []Trial, error) {
	spec, err := readSpec(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, &ConfigError{dir, fmt.Sprintf("not a run directory (no %s)", SpecFile)}
		}
		return nil, nil, &ConfigError{dir, err.Error()}
	}
	f, err := os.Open(filepath.Join(dir, TrialsFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return spec, nil, nil
		}
		return nil, nil, err
	}
	defer f.Close()
	l := &Log{Last: map[Key]Trial{}}
	if _, err := l.read(f); err != nil {
		return nil, nil, &ConfigError{dir, err.Error()}
	}
	return spec, l.Trials, nil
}

// TrajectoryPath is where the trajectory of a key's attempt is kept,
// relative to the run directory.
func TrajectoryPath(k Key, attempt int) string {
	name := fmt.Sprintf("%s.%s.%s.r%d", safeName(k.Model), safeName(k.Condition), safeName(k.Task), k.Rep)
	if attempt > 1 {
		name += fmt.Sprintf(".a%d", attempt)
	}
	return filepath.Join(TrajectoryDir, name+trajectoryExt)
}

// safeName keeps a name's letters, digits, dot, dash and underscore, and
// replaces the rest (a model's slash, say) with an underscore; a name so
// changed gets a short hash of itself, so that "a/b" and "a:b" keep files
// apart.
func safeName(s string) string {
	var b strings.Builder
	changed := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	if changed {
		h := sha256.Sum256([]byte(s))
		b.WriteString("-" + hex.EncodeToString(h[:3]))
	}
	return b.String()
}

// Diff names what differs between the Spec of a run and another, one
// phrase per field, named as the flag that sets it where one does
// ("memory (--memory): 2g in the run, 4g now"); the creation time is not
// compared, nor where the data folder, the task file and a prefix's file
// are (their content is).
func Diff(was, now Spec) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	field := func(name string, a, b any) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			add("%s: %s in the run, %s now", name, clip(string(ja)), clip(string(jb)))
		}
	}
	if was.Version != now.Version {
		add("ctxcode version: %s in the run, %s now (finish the run with the ctxcode that started it)", was.Version, now.Version)
	}
	diffs = append(diffs, diffModels(was.Models, now.Models)...)
	field("conditions", conditionNames(was.Conditions), conditionNames(now.Conditions))
	if equalNames(was.Conditions, now.Conditions) {
		// The prefix's content decides, not where its file is.
		for _, a := range was.Conditions {
			for _, b := range now.Conditions {
				switch {
				case a.Name != b.Name:
				case a.Protocol != b.Protocol:
					add("condition %s: protocol %s in the run, %s now", a.Name, a.Protocol, b.Protocol)
				case a.Base != b.Base:
					add("condition %s: base %q in the run, %q now", a.Name, a.Base, b.Base)
				case a.RulesSHA256 != b.RulesSHA256:
					add("condition %s: rules (sha256 %s) in the run, rules (sha256 %s) now",
						a.Name, ownRules(head12(a.RulesSHA256)), ownRules(head12(b.RulesSHA256)))
				case a.Prefix != b.Prefix || a.PrefixSHA256 != b.PrefixSHA256:
					add("condition %s: prefix %s (sha256 %s) in the run, %s (sha256 %s) now",
						a.Name, a.Prefix, head12(a.PrefixSHA256), b.Prefix, head12(b.PrefixSHA256))
				case !sameJSON(a.Context, b.Context):
					add("condition %s: context policy %s in the run, %s now (--context, --window, or the variant's)",
						a.Name, contextText(a.Context), contextText(b.Context))
				case a.FirstRequest != b.FirstRequest:
					add("condition %s: first request sha256 %s in the run, %s now (its rules, tools or framing changed)",
						a.Name, orNone(head12(a.FirstRequest)), orNone(head12(b.FirstRequest)))
				}
			}
		}
	}
	// A task file's content decides, not where it is.
	wt, nt := was.Tasks, now.Tasks
	wt.File, nt.File = "", ""
	field("tasks", wt, nt)
	if ha, hb := taskListHash(was.TaskList), taskListHash(now.TaskList); ha != hb {
		add("task list: %d tasks (sha256 %s) in the run, %d tasks (sha256 %s) now",
			len(was.TaskList), ha[:12], len(now.TaskList), hb[:12])
	}
	field("sessions", was.Sessions, now.Sessions)
	field("data", was.Data.SHA256, now.Data.SHA256)
	diffs = append(diffs, diffFolders(was.DataFolders, now.DataFolders)...)
	field("data follow_links (--follow-links)", was.Data.FollowLinks, now.Data.FollowLinks)
	field("reps", was.Reps, now.Reps)
	field("budgets", was.Budgets, now.Budgets)
	diffs = append(diffs, diffSandbox(was.Sandbox, now.Sandbox)...)
	diffs = append(diffs, diffRuntime(was.Runtime, now.Runtime)...)
	if was.Parallel != now.Parallel {
		add("parallel (--parallel): %d in the run, %d now", was.Parallel, now.Parallel)
	}
	field("order seed (--order-seed)", was.OrderSeed, now.OrderSeed)
	return diffs
}

// diffModels names what differs of the models: their list, or, model by
// model, where they are asked and how they are sampled.
func diffModels(was, now []ModelInfo) []string {
	same := len(was) == len(now)
	for i := range was {
		same = same && was[i].Name == now[i].Name
	}
	if !same {
		ja, _ := json.Marshal(was)
		jb, _ := json.Marshal(now)
		return []string{fmt.Sprintf("models: %s in the run, %s now", clip(string(ja)), clip(string(jb)))}
	}
	var diffs []string
	for i, a := range was {
		b := now[i]
		if a.BaseURL != b.BaseURL {
			diffs = append(diffs, fmt.Sprintf("model %s: endpoint (--base-url) %s in the run, %s now", a.Name, orNone(a.BaseURL), orNone(b.BaseURL)))
		}
		if s, t := optional(a.Seed), optional(b.Seed); s != t {
			diffs = append(diffs, fmt.Sprintf("model %s: sampling seed (--sample-seed) %s in the run, %s now", a.Name, s, t))
		}
		if s, t := optional(a.Temperature), optional(b.Temperature); s != t {
			diffs = append(diffs, fmt.Sprintf("model %s: temperature %s in the run, %s now", a.Name, s, t))
		}
	}
	return diffs
}

// diffSandbox names what differs of where the kernels run, as the flags
// that set it.
func diffSandbox(was, now SandboxInfo) []string {
	var diffs []string
	add := func(name, a, b string) {
		if a != b {
			diffs = append(diffs, fmt.Sprintf("%s: %s in the run, %s now", name, a, b))
		}
	}
	if was.Kind != now.Kind { // the rest differs with it
		return []string{fmt.Sprintf("sandbox (--sandbox): %s in the run, %s now", was.Kind, now.Kind)}
	}
	add("image (--image)", orNone(was.Image), orNone(now.Image))
	add("--no-ipython", fmt.Sprint(was.NoIPython), fmt.Sprint(now.NoIPython))
	add("network (--network)", orNone(was.Network), orNone(now.Network))
	add("memory (--memory)", byteSize(was.Memory), byteSize(now.Memory))
	add("memory and swap (--memory-swap)", byteSize(was.MemorySwap), byteSize(now.MemorySwap))
	add("cpus (--cpus)", fmt.Sprint(was.CPUs), fmt.Sprint(now.CPUs))
	add("pids (--pids)", fmt.Sprint(was.Pids), fmt.Sprint(now.Pids))
	add("/tmp size (--tmp-size)", byteSize(was.TmpSize), byteSize(now.TmpSize))
	add("user (--user)", orNone(was.User), orNone(now.User))
	add("--writable-root", fmt.Sprint(was.WritableRoot), fmt.Sprint(now.WritableRoot))
	add("--keep-caps", fmt.Sprint(was.KeepCaps), fmt.Sprint(now.KeepCaps))
	add("--new-privileges", fmt.Sprint(was.NewPrivileges), fmt.Sprint(now.NewPrivileges))
	return diffs
}

// diffRuntime names what differs of what runs the cells.
func diffRuntime(was, now RuntimeInfo) []string {
	var diffs []string
	if was.Driver != now.Driver {
		diffs = append(diffs, fmt.Sprintf("kernel driver: %s in the run, %s now", orNone(was.Driver), orNone(now.Driver)))
	}
	if was.ImageID != now.ImageID {
		diffs = append(diffs, fmt.Sprintf("image id: %s in the run, %s now (the image was rebuilt or replaced)", orNone(was.ImageID), orNone(now.ImageID)))
	}
	if was.Interpreter != now.Interpreter {
		diffs = append(diffs, fmt.Sprintf("interpreter: %s in the run, %s now", orNone(was.Interpreter), orNone(now.Interpreter)))
	}
	return diffs
}

// byteSize writes n bytes as the size flags take them: 2g, 512m, or bytes;
// "none" for 0.
func byteSize(n int64) string {
	const gib, mib, kib = 1 << 30, 1 << 20, 1 << 10
	switch {
	case n == 0:
		return "none"
	case n%gib == 0:
		return fmt.Sprintf("%dg", n/gib)
	case n%mib == 0:
		return fmt.Sprintf("%dm", n/mib)
	case n%kib == 0:
		return fmt.Sprintf("%dk", n/kib)
	}
	return fmt.Sprint(n)
}

// optional writes *p, or "none".
func optional[T any](p *T) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ownRules is h, or "none: its own" for the hash of rules a condition
// does not have.
func ownRules(h string) string {
	if h == "" {
		return "none: its own"
	}
	return h
}

func conditionNames(cs []ConditionInfo) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

func equalNames(a, b []ConditionInfo) bool {
	x, y := conditionNames(a), conditionNames(b)
	sort.Strings(x)
	sort.Strings(y)
	return strings.Join(x, ",") == strings.Join(y, ",")
}

func taskListHash(ts []datasets.Task) string {
	b, _ := json.Marshal(ts)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func head12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:157] + "..."
	}
	return s
}

// writeFileSync writes b to path through a temporary file, fsync'd and
// renamed into place.
func writeFileSync(path string, b []byte) error {
	tmp := path + tempSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, specFilePerm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // a folder left as it was can be used again without --force
		return fmt.Errorf("write %s: %w", filepath.Base(path), unwrapPath(err))
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
