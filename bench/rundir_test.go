package bench

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
)

// dirSpec is a run's Spec whose every value survives a JSON round trip
// unchanged (numbers as float64, the manifest as a map), so that what
// run.json holds compares equal to it.
func dirSpec() Spec {
	return Spec{
		Format:  FormatVersion,
		Version: "v0.0.0-test",
		Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Models: []ModelInfo{
			{Name: "reference"},
			{Name: "openai/gpt-4o-mini", BaseURL: "https://api.example.com/v1", Temperature: ptr[float32](0)},
		},
		Conditions: []ConditionInfo{
			{Name: "A", Protocol: "cli", FirstRequest: "f1f1"},
			{Name: "B", Protocol: "eval", Prefix: "pm", PrefixSource: "builtin", PrefixSHA256: "aaaa", FirstRequest: "f2f2"},
		},
		Tasks: TaskSource{Kind: "builtin", Tier: "s", Seed: 1},
		TaskList: []datasets.Task{
			{ID: "s-t1-1", Template: "t1", Question: "How many teams?", Params: map[string]any{"team": "T1"}, AnswerType: datasets.Integer, Gold: 3.0},
			{ID: "s-t2-1", Template: "t2", Question: "Who?", Params: map[string]any{}, AnswerType: datasets.String, Gold: "ada"},
		},
		Data:    DataInfo{Dir: "/data/pm-s", SHA256: "d1d1", Manifest: map[string]any{"tier": "s"}},
		Reps:    1,
		Budgets: BudgetsOf(agent.DefaultConfig()),
		Sandbox: SandboxInfo{Kind: "docker", Image: "ctxcode-kernel:test", Network: "none", Memory: 2 << 30,
			CPUs: 1, Pids: 256, TmpSize: 256 << 20, User: "65534:65534"},
		Runtime:  RuntimeInfo{Driver: "python-driver 0123456789abcdef", ImageID: "sha256:1111"},
		Parallel: 4,
	}
}

var dirStarted = time.Date(2025, 1, 2, 4, 0, 0, 0, time.UTC)

// dirTrial is a finished trial line of key k in class.
func dirTrial(k Key, class string, attempt int) Trial {
	t := Trial{Key: k, Attempt: attempt, Class: class, Answer: json.RawMessage("null"),
		Trajectory: TrajectoryPath(k, attempt), Started: dirStarted, Turns: 2, WallMS: 100}
	if class == ClassInfra {
		t.Status, t.Error, t.Verdict = agent.ModelFailed, "500 Internal Server Error", string(agent.GradeNoAnswer)
		return t
	}
	t.Status, t.Answer, t.AnswerSource = agent.Answered, json.RawMessage("42"), agent.Executed
	t.Correct, t.AnswerRight, t.Verdict = true, true, string(agent.GradeCorrect)
	return t
}

func dirKey(task string) Key { return Key{Model: "reference", Condition: "B", Task: task, Rep: 1} }

// openDir opens dir for spec and closes the log when the test ends.
func openDir(t *testing.T, dir string, spec Spec, mode OpenMode) (*Log, string) {
	t.Helper()
	var warn bytes.Buffer
	l, err := Open(dir, spec, mode, &warn)
	require.NoError(t, err, "warnings: %s", warn.String())
	t.Cleanup(func() { _ = l.Close() })
	return l, warn.String()
}

func configError(t *testing.T, err error) *ConfigError {
	t.Helper()
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	return ce
}

func readSpecFile(t *testing.T, dir string) Spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, SpecFile))
	require.NoError(t, err)
	var s Spec
	require.NoError(t, json.Unmarshal(b, &s), "run.json:\n%s", b)
	return s
}

// trialLines reads trials.jsonl line by line, requiring each line to be
// a whole trial that ends in a newline.
func trialLines(t *testing.T, dir string) []Trial {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, TrialsFile))
	require.NoError(t, err)
	if len(b) == 0 {
		return nil
	}
	require.True(t, bytes.HasSuffix(b, []byte("\n")), "trials.jsonl does not end in a newline:\n%s", b)
	var out []Trial
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var tr Trial
		require.NoError(t, json.Unmarshal(sc.Bytes(), &tr), "line %d: %s", len(out)+1, sc.Text())
		out = append(out, tr)
	}
	require.NoError(t, sc.Err())
	return out
}

func writeLines(t *testing.T, dir string, raw string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, TrialsFile), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(raw)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func trialLine(t *testing.T, tr Trial) string {
	t.Helper()
	b, err := json.Marshal(tr)
	require.NoError(t, err)
	return string(b) + "\n"
}

func TestOpenStartsARun(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"new folder", func(t *testing.T) string { return filepath.Join(t.TempDir(), "runs", "one") }},
		{"empty folder", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			spec := dirSpec()
			spec.Format = 0 // Open sets it
			l, warn := openDir(t, dir, spec, Continue)
			assert.Empty(t, warn)
			assert.Empty(t, l.Trials)
			assert.False(t, l.Dropped)

			want := dirSpec()
			assert.Equal(t, want, readSpecFile(t, dir))
			assert.Equal(t, want, l.Spec)
			st, err := os.Stat(filepath.Join(dir, TrialsFile))
			require.NoError(t, err)
			assert.Zero(t, st.Size(), "trials.jsonl starts empty")
			st, err = os.Stat(filepath.Join(dir, TrajectoryDir))
			require.NoError(t, err)
			assert.True(t, st.IsDir())
		})
	}
}

func TestOpenSetsCreated(t *testing.T) {
	spec := dirSpec()
	spec.Created = time.Time{}
	before := time.Now()
	dir := t.TempDir()
	l, _ := openDir(t, dir, spec, Continue)
	assert.False(t, l.Spec.Created.Before(before.Add(-time.Second)), "created %v, before the test started (%v)", l.Spec.Created, before)
	assert.Equal(t, l.Spec.Created, readSpecFile(t, dir).Created)
}

func TestOpenRefusesAFolderThatIsNotARun(t *testing.T) {
	for _, mode := range []struct {
		name string
		mode OpenMode
	}{{"continue", Continue}, {"must resume", MustResume}} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			notes := filepath.Join(dir, "notes.txt")
			require.NoError(t, os.WriteFile(notes, []byte("mine"), 0o644))
			_, err := Open(dir, dirSpec(), mode.mode, &bytes.Buffer{})
			ce := configError(t, err)
			assert.Equal(t, dir, ce.Dir)
			assert.Contains(t, ce.Msg, "holds no run")
			assert.NoFileExists(t, filepath.Join(dir, SpecFile), "a refused folder is left as it was")
			assert.FileExists(t, notes)
		})
	}
	t.Run("restart uses it", func(t *testing.T) {
		dir := t.TempDir()
		notes := filepath.Join(dir, "notes.txt")
		require.NoError(t, os.WriteFile(notes, []byte("mine"), 0o644))
		openDir(t, dir, dirSpec(), Restart)
		assert.Equal(t, dirSpec(), readSpecFile(t, dir))
		b, err := os.ReadFile(notes)
		require.NoError(t, err)
		assert.Equal(t, "mine", string(b))
	})
}

func TestMustResumeNeedsARun(t *testing.T) {
	for _, tc := range []struct {
		name, dir, msg string
	}{
		{"missing folder", filepath.Join(t.TempDir(), "nope"), "no such folder"},
		{"empty folder", t.TempDir(), "no run to resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.dir, dirSpec(), MustResume, &bytes.Buffer{})
			ce := configError(t, err)
			assert.Contains(t, ce.Msg, tc.msg)
			assert.Contains(t, ce.Msg, "drop --resume")
			assert.NoFileExists(t, filepath.Join(tc.dir, SpecFile))
		})
	}
	t.Run("a run resumes", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := openDir(t, dir, dirSpec(), Continue)
		require.NoError(t, l.Append(dirTrial(dirKey("s-t1-1"), ClassModel, 1)))
		require.NoError(t, l.Close())
		l, _ = openDir(t, dir, dirSpec(), MustResume)
		assert.Len(t, l.Trials, 1)
	})
}

func TestAppendAndResume(t *testing.T) {
	dir := t.TempDir()
	l, _ := openDir(t, dir, dirSpec(), Continue)
	k1, k2, k3 := dirKey("s-t1-1"), dirKey("s-t2-1"), Key{Model: "openai/gpt-4o-mini", Condition: "A", Task: "s-t1-1", Rep: 1}
	lines := []Trial{
		dirTrial(k1, ClassInfra, 1),
		dirTrial(k2, ClassInfra, 1),
		dirTrial(k3, ClassModel, 1),
		dirTrial(k1, ClassModel, 2), // k1 ran again and finished
	}
	lines[2].Correct, lines[2].Verdict = false, string(agent.GradeWrong)
	for _, tr := range lines {
		require.NoError(t, l.Append(tr))
	}
	assert.Equal(t, lines, l.Trials)
	require.NoError(t, l.Close())
	require.Error(t, l.Append(lines[0]), "a closed log takes no line")

	l, warn := openDir(t, dir, dirSpec(), Continue)
	assert.Empty(t, warn)
	assert.False(t, l.Dropped)
	assert.Equal(t, lines, l.Trials)
	assert.Equal(t, lines, trialLines(t, dir))

	assert.True(t, l.Done(k1), "the last line of k1 is a model result")
	assert.False(t, l.Done(k2), "the last line of k2 is an infra failure: it runs again")
	assert.True(t, l.Done(k3))
	assert.False(t, l.Done(dirKey("s-t9-9")), "a key without a line is not done")
	assert.Equal(t, lines[3], l.Last[k1])

	// The last line of each key, in the order the keys first appear.
	want := []Trial{lines[3], lines[1], lines[2]}
	assert.Equal(t, want, l.Final())
	assert.Equal(t, want, Final(lines))
}

func TestResumeDropsALineCutByACrash(t *testing.T) {
	good := []Trial{dirTrial(dirKey("s-t1-1"), ClassModel, 1), dirTrial(dirKey("s-t2-1"), ClassInfra, 1)}
	for _, tc := range []struct {
		name string
		tail func(t *testing.T) string
	}{
		{"half a line", func(t *testing.T) string {
			line := trialLine(t, dirTrial(dirKey("s-t3-1"), ClassModel, 1))
			return line[:len(line)/2]
		}},
		{"a whole line without its newline", func(t *testing.T) string {
			line := trialLine(t, dirTrial(dirKey("s-t3-1"), ClassModel, 1))
			return strings.TrimSuffix(line, "\n")
		}},
		{"a garbage last line", func(t *testing.T) string { return "\x00\x00\x00{\"mod\n" }},
		{"a last line that is no trial", func(t *testing.T) string { return "{}\n" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openDir(t, dir, dirSpec(), Continue)
			for _, tr := range good {
				require.NoError(t, l.Append(tr))
			}
			require.NoError(t, l.Close())
			writeLines(t, dir, tc.tail(t))

			l, warn := openDir(t, dir, dirSpec(), Continue)
			assert.True(t, l.Dropped)
			assert.Contains(t, warn, "dropped a trial line cut short by a crash")
			assert.Equal(t, good, l.Trials)
			assert.Equal(t, good, trialLines(t, dir), "the file is cut back to its whole lines")

			next := dirTrial(dirKey("s-t3-1"), ClassModel, 1)
			require.NoError(t, l.Append(next))
			require.NoError(t, l.Close())
			want := append(append([]Trial{}, good...), next)
			assert.Equal(t, want, trialLines(t, dir), "the next line starts on a line of its own")
			_, trials, err := ReadDir(dir)
			require.NoError(t, err)
			assert.Equal(t, want, trials)

			l, warn = openDir(t, dir, dirSpec(), Continue)
			assert.False(t, l.Dropped)
			assert.Empty(t, warn)
			assert.Equal(t, want, l.Trials)
		})
	}
}

func TestResumeRefusesABadLineInTheMiddle(t *testing.T) {
	for _, bad := range []string{"{not json\n", "{}\n", "\n"} {
		t.Run(strings.TrimSpace(bad), func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openDir(t, dir, dirSpec(), Continue)
			require.NoError(t, l.Append(dirTrial(dirKey("s-t1-1"), ClassModel, 1)))
			require.NoError(t, l.Close())
			writeLines(t, dir, bad+trialLine(t, dirTrial(dirKey("s-t2-1"), ClassModel, 1)))
			before, err := os.ReadFile(filepath.Join(dir, TrialsFile))
			require.NoError(t, err)

			_, err = Open(dir, dirSpec(), Continue, &bytes.Buffer{})
			ce := configError(t, err)
			assert.Contains(t, ce.Msg, TrialsFile+" line 2 is not a trial")
			assert.Contains(t, ce.Msg, "remove that line")
			after, err := os.ReadFile(filepath.Join(dir, TrialsFile))
			require.NoError(t, err)
			assert.Equal(t, before, after, "a refused log is left as it was")

			_, _, err = ReadDir(dir)
			assert.Contains(t, configError(t, err).Msg, "line 2")
		})
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *Spec)
		want   []string // the start of each difference, in order
	}{
		{"reps", func(s *Spec) { s.Reps = 3 }, []string{"reps: 1 in the run, 3 now"}},
		{"models", func(s *Spec) { s.Models = s.Models[:1] }, []string{`models: [{"name":"reference"},{"name":"openai/gpt-4o-mini"`}},
		{"model endpoint", func(s *Spec) { s.Models[1].BaseURL = "http://localhost:11434/v1" },
			[]string{"model openai/gpt-4o-mini: endpoint (--base-url) https://api.example.com/v1 in the run, http://localhost:11434/v1 now"}},
		{"sampling seed", func(s *Spec) { s.Models[1].Seed = ptr(7) }, []string{"model openai/gpt-4o-mini: sampling seed (--sample-seed) none in the run, 7 now"}},
		{"temperature", func(s *Spec) { s.Models[1].Temperature = nil }, []string{"model openai/gpt-4o-mini: temperature 0 in the run, none now"}},
		{"first request", func(s *Spec) { s.Conditions[1].FirstRequest = "f3f3" }, []string{"condition B: first request sha256 f2f2 in the run, f3f3 now"}},
		{"prefix and its first request", func(s *Spec) { s.Conditions[1].PrefixSHA256, s.Conditions[1].FirstRequest = "bbbb", "f3f3" },
			[]string{"condition B: prefix pm (sha256 aaaa) in the run, pm (sha256 bbbb) now"}},
		{"memory", func(s *Spec) { s.Sandbox.Memory = 4 << 30 }, []string{"memory (--memory): 2g in the run, 4g now"}},
		{"memory swap", func(s *Spec) { s.Sandbox.MemorySwap = 3 << 30 }, []string{"memory and swap (--memory-swap): none in the run, 3g now"}},
		{"cpus", func(s *Spec) { s.Sandbox.CPUs = 1.5 }, []string{"cpus (--cpus): 1 in the run, 1.5 now"}},
		{"pids", func(s *Spec) { s.Sandbox.Pids = 64 }, []string{"pids (--pids): 256 in the run, 64 now"}},
		{"network", func(s *Spec) { s.Sandbox.Network = "bridge" }, []string{"network (--network): none in the run, bridge now"}},
		{"tmp size", func(s *Spec) { s.Sandbox.TmpSize = 1 << 20 }, []string{"/tmp size (--tmp-size): 256m in the run, 1m now"}},
		{"writable root", func(s *Spec) { s.Sandbox.WritableRoot = true }, []string{"--writable-root: false in the run, true now"}},
		{"driver", func(s *Spec) { s.Runtime.Driver = "python-driver fedcba9876543210" }, []string{"kernel driver: python-driver 0123456789abcdef in the run, python-driver fedcba9876543210 now"}},
		{"image id", func(s *Spec) { s.Runtime.ImageID = "sha256:2222" }, []string{"image id: sha256:1111 in the run, sha256:2222 now"}},
		{"interpreter", func(s *Spec) { s.Runtime.Interpreter = "local /usr/bin/python3.12 1 2" }, []string{"interpreter: none in the run, local /usr/bin/python3.12 1 2 now"}},
		{"parallel", func(s *Spec) { s.Parallel = 2 }, []string{"parallel (--parallel): 4 in the run, 2 now"}},
		{"version", func(s *Spec) { s.Version = "v9" }, []string{"ctxcode version: v0.0.0-test in the run, v9 now"}},
		{"conditions", func(s *Spec) { s.Conditions = append(s.Conditions, ConditionInfo{Name: "D", Protocol: "bare"}) },
			[]string{`conditions: ["A","B"] in the run, ["A","B","D"] now`}},
		{"condition prefix", func(s *Spec) { s.Conditions[1].PrefixSHA256 = "bbbb" }, []string{"condition B: prefix pm (sha256 aaaa) in the run, pm (sha256 bbbb) now"}},
		{"task source", func(s *Spec) { s.Tasks.Seed = 2 }, []string{"tasks: "}},
		{"task list", func(s *Spec) { s.TaskList = s.TaskList[:1] }, []string{"task list: 2 tasks (sha256 "}},
		{"gold", func(s *Spec) { s.TaskList[0].Gold = 4.0 }, []string{"task list: 2 tasks (sha256 "}},
		{"data", func(s *Spec) { s.Data.SHA256 = "d2d2" }, []string{`data: "d1d1" in the run, "d2d2" now`}},
		{"budgets", func(s *Spec) { s.Budgets.MaxTurns = 5 }, []string{"budgets: "}},
		{"sandbox", func(s *Spec) { s.Sandbox = SandboxInfo{Kind: "local"} }, []string{"sandbox (--sandbox): docker in the run, local now"}},
		{"two things", func(s *Spec) { s.Reps = 2; s.Budgets.MaxTurns = 5 }, []string{"reps: ", "budgets: "}},
		{"creation time", func(s *Spec) { s.Created = s.Created.Add(time.Hour) }, nil},
		{"data folder", func(s *Spec) { s.Data.Dir = "/elsewhere" }, nil},
		{"manifest beside its hash", func(s *Spec) { s.Data.Manifest = map[string]any{"tier": "x"} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := dirSpec()
			tc.change(&now)
			diffs := Diff(dirSpec(), now)
			require.Len(t, diffs, len(tc.want), "%q", diffs)
			for i, d := range diffs {
				assert.True(t, strings.HasPrefix(d, tc.want[i]), "difference %q does not start with %q", d, tc.want[i])
			}
		})
	}
	t.Run("task list counts", func(t *testing.T) {
		now := dirSpec()
		now.TaskList = now.TaskList[:1]
		require.Len(t, Diff(dirSpec(), now), 1)
		assert.Contains(t, Diff(dirSpec(), now)[0], "in the run, 1 tasks (sha256 ")
	})
	assert.Empty(t, Diff(dirSpec(), dirSpec()))
}

func TestOpenRefusesAnotherRun(t *testing.T) {
	dir := t.TempDir()
	l, _ := openDir(t, dir, dirSpec(), Continue)
	require.NoError(t, l.Append(dirTrial(dirKey("s-t1-1"), ClassModel, 1)))
	require.NoError(t, l.Close())
	other := dirSpec()
	other.Reps = 3
	other.Data.SHA256 = "d2d2"

	for _, mode := range []OpenMode{Continue, MustResume} {
		_, err := Open(dir, other, mode, &bytes.Buffer{})
		ce := configError(t, err)
		assert.Contains(t, ce.Msg, "holds a run with another configuration")
		assert.Contains(t, ce.Msg, "reps: 1 in the run, 3 now")
		assert.Contains(t, ce.Msg, `data: "d1d1" in the run, "d2d2" now`)
		assert.Contains(t, ce.Msg, "--force")
	}
	assert.Equal(t, dirSpec(), readSpecFile(t, dir), "a refused run is left as it was")
	assert.Len(t, trialLines(t, dir), 1)
}

// TestOpenRefusesAChangedPin: a resume that would run the rest of a run
// in another way than its start (a memory limit, another ctxcode, a
// condition's rules) is refused, naming what changed, and leaves the run
// as it was; --force (Restart) discards it.
//
// It fails on the code before: run.json pinned none of the sandbox's
// limits, the runtime, --parallel or the first requests, and a resume
// under another ctxcode version only warned.
func TestOpenRefusesAChangedPin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *Spec)
		want   string
	}{
		{"memory", func(s *Spec) { s.Sandbox.Memory = 4 << 30 }, "memory (--memory): 2g in the run, 4g now"},
		{"ctxcode version", func(s *Spec) { s.Version = "v9.9.9" }, "ctxcode version: v0.0.0-test in the run, v9.9.9 now"},
		{"first request", func(s *Spec) { s.Conditions[0].FirstRequest = "f9f9" }, "condition A: first request sha256 f1f1 in the run, f9f9 now"},
		{"image id", func(s *Spec) { s.Runtime.ImageID = "sha256:2222" }, "image id: sha256:1111 in the run, sha256:2222 now"},
		{"driver", func(s *Spec) { s.Runtime.Driver = "python-driver ffff" }, "kernel driver: python-driver 0123456789abcdef in the run, python-driver ffff now"},
		{"parallel", func(s *Spec) { s.Parallel = 1 }, "parallel (--parallel): 4 in the run, 1 now"},
		{"temperature", func(s *Spec) { s.Models[1].Temperature = ptr[float32](0.7) }, "model openai/gpt-4o-mini: temperature 0 in the run, 0.7 now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openDir(t, dir, dirSpec(), Continue)
			require.NoError(t, l.Append(dirTrial(dirKey("s-t1-1"), ClassModel, 1)))
			require.NoError(t, l.Close())
			now := dirSpec()
			now.Created, now.Data.Dir = time.Now().UTC(), "/moved/pm-s" // neither is compared
			tc.change(&now)

			for _, mode := range []OpenMode{Continue, MustResume} {
				_, err := Open(dir, now, mode, io.Discard)
				msg := configError(t, err).Msg
				assert.Contains(t, msg, "cannot be resumed with this one")
				assert.Contains(t, msg, tc.want)
				assert.Contains(t, msg, "--force")
				assert.Error(t, Check(dir, &now, mode), "Check refuses it too")
			}
			assert.Equal(t, dirSpec(), readSpecFile(t, dir), "a refused run is left as it was")
			assert.Len(t, trialLines(t, dir), 1)

			l, warn := openDir(t, dir, now, Restart)
			assert.Contains(t, warn, tc.want, "--force says what it discards")
			assert.Empty(t, l.Trials)
			assert.Equal(t, now.Sandbox, readSpecFile(t, dir).Sandbox)
		})
	}
}

// TestOpenResumesTheSameRun: the creation time and where the data folder
// is do not stop a resume.
func TestOpenResumesTheSameRun(t *testing.T) {
	dir := t.TempDir()
	l, _ := openDir(t, dir, dirSpec(), Continue)
	require.NoError(t, l.Append(dirTrial(dirKey("s-t1-1"), ClassModel, 1)))
	require.NoError(t, l.Close())
	now := dirSpec()
	now.Created, now.Data.Dir = time.Now().UTC(), "/moved/pm-s"
	l, warn := openDir(t, dir, now, MustResume)
	assert.Empty(t, warn)
	assert.Len(t, l.Trials, 1)
	assert.Equal(t, dirSpec(), l.Spec, "the run keeps its own Spec")
}

// TestCheckLeavesTheRuntimeToOpen: before the sandbox is open the runtime
// is not known (a zero Runtime), and Check does not refuse over it; Open,
// which knows it, does.
func TestCheckLeavesTheRuntimeToOpen(t *testing.T) {
	dir := t.TempDir()
	l, _ := openDir(t, dir, dirSpec(), Continue)
	require.NoError(t, l.Append(dirTrial(dirKey("s-t1-1"), ClassModel, 1)))
	require.NoError(t, l.Close())
	before := dirSpec()
	before.Runtime = RuntimeInfo{}
	require.NoError(t, Check(dir, &before, MustResume))
	now := dirSpec()
	now.Runtime.ImageID = "sha256:2222"
	_, err := Open(dir, now, MustResume, io.Discard)
	assert.Contains(t, configError(t, err).Msg, "image id: sha256:1111 in the run, sha256:2222 now")
}

// TestOpenRefusesARunThatPinnedLess: a run.json of format 1 (before a run
// pinned its sandbox's limits, sampling, parallelism, runtime and first
// requests) cannot be shown to match this run: a resume is refused with
// what it lacks, unless nothing ran yet; report still reads it; --force
// starts again.
func TestOpenRefusesARunThatPinnedLess(t *testing.T) {
	old := `{"format": 1, "ctxcode_version": "v0.1.0", "created": "2025-01-02T03:04:05Z",
		"models": [{"name": "reference"}], "conditions": [{"name": "B", "protocol": "eval", "prefix": "pm", "prefix_sha256": "aaaa"}],
		"tasks": {"kind": "builtin", "tier": "s", "seed": 1}, "task_list": [], "data": {"dir": "/data", "sha256": "d1d1"},
		"reps": 1, "budgets": {}, "sandbox": {"kind": "docker", "image": "ctxcode-kernel:test"}}`
	write := func(t *testing.T, trials string) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, SpecFile), []byte(old), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, TrialsFile), []byte(trials), 0o644))
		return dir
	}
	line := trialLine(t, dirTrial(dirKey("s-t1-1"), ClassModel, 1))

	t.Run("with trials", func(t *testing.T) {
		dir := write(t, line)
		for _, mode := range []OpenMode{Continue, MustResume} {
			_, err := Open(dir, dirSpec(), mode, io.Discard)
			msg := configError(t, err).Msg
			assert.Contains(t, msg, "run.json is of format 1, written by ctxcode v0.1.0, which did not record the sandbox's limits")
			assert.Contains(t, msg, "--force")
			err = Check(dir, nil, mode)
			assert.Contains(t, configError(t, err).Msg, "is of format 1", "refused before the configuration is known")
		}
		spec, trials, err := ReadDir(dir)
		require.NoError(t, err, "report reads it")
		assert.Equal(t, 1, spec.Format)
		assert.Len(t, trials, 1)

		l, warn := openDir(t, dir, dirSpec(), Restart)
		assert.Contains(t, warn, "is of format 1")
		assert.Empty(t, l.Trials)
		assert.Equal(t, FormatVersion, readSpecFile(t, dir).Format)
	})
	t.Run("without a trial", func(t *testing.T) {
		dir := write(t, "")
		require.NoError(t, Check(dir, nil, Continue))
		l, warn := openDir(t, dir, dirSpec(), Continue)
		assert.Contains(t, warn, "no trial yet")
		assert.Equal(t, dirSpec(), readSpecFile(t, dir))
		require.NoError(t, l.Close())
	})
}

func TestOpenRestartRemovesOnlyTheRun(t *testing.T) {
	dir := t.TempDir()
	l, _ := openDir(t, dir, dirSpec(), Continue)
	tr := dirTrial(dirKey("s-t1-1"), ClassModel, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, tr.Trajectory), []byte("{}\n"), 0o644))
	require.NoError(t, l.Append(tr))
	require.NoError(t, l.Close())
	mine := filepath.Join(dir, "analysis.ipynb")
	require.NoError(t, os.WriteFile(mine, []byte("mine"), 0o644))

	other := dirSpec()
	other.Reps = 2
	l, warn := openDir(t, dir, other, Restart)
	assert.Contains(t, warn, "holds another run (reps: 1 in the run, 2 now)")
	assert.Empty(t, l.Trials)
	assert.Equal(t, other, readSpecFile(t, dir))
	assert.Empty(t, trialLines(t, dir))
	entries, err := os.ReadDir(filepath.Join(dir, TrajectoryDir))
	require.NoError(t, err)
	assert.Empty(t, entries, "the old run's trajectories are gone")
	b, err := os.ReadFile(mine)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "a file of the user's survives")
}

func TestOpenRestartsABrokenRunOnlyWhenForced(t *testing.T) {
	for _, broken := range []string{"{not json", `{"format": 99}`} {
		t.Run(broken, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, SpecFile), []byte(broken), 0o644))
			_, err := Open(dir, dirSpec(), Continue, &bytes.Buffer{})
			assert.Contains(t, configError(t, err).Msg, "--force")
			l, warn := openDir(t, dir, dirSpec(), Restart)
			assert.Contains(t, warn, "starting the run again")
			assert.Empty(t, l.Trials)
			assert.Equal(t, dirSpec(), readSpecFile(t, dir))
		})
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	l, _ := openDir(t, dir, dirSpec(), Continue)
	lines := []Trial{dirTrial(dirKey("s-t1-1"), ClassInfra, 1), dirTrial(dirKey("s-t1-1"), ClassModel, 2)}
	for _, tr := range lines {
		require.NoError(t, l.Append(tr))
	}
	spec, trials, err := ReadDir(dir)
	require.NoError(t, err, "a run still open reads too")
	assert.Equal(t, dirSpec(), *spec)
	assert.Equal(t, lines, trials)

	require.NoError(t, l.Close())
	writeLines(t, dir, `{"model": "ref`)
	_, trials, err = ReadDir(dir)
	require.NoError(t, err)
	assert.Equal(t, lines, trials, "a line cut by a crash is left out")

	_, _, err = ReadDir(t.TempDir())
	assert.Contains(t, configError(t, err).Msg, "not a run directory")
}

func TestTrajectoryPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     Key
		attempt int
		want    string
	}{
		{"plain", Key{"reference", "B0", "s-t1-1", 1}, 1, "reference.B0.s-t1-1.r1.jsonl"},
		{"slash and colon", Key{"meta-llama/llama-3.1:8b", "A", "s-t2-3", 2}, 1, "meta-llama_llama-3.1_8b-" + short("meta-llama/llama-3.1:8b") + ".A.s-t2-3.r2.jsonl"},
		{"other characters", Key{"a b\\c", "B", "id*?é", 1}, 1, "a_b_c-" + short("a b\\c") + ".B.id___-" + short("id*?é") + ".r1.jsonl"},
		{"parent folder", Key{"../..", "B", "t", 1}, 1, ".._..-" + short("../..") + ".B.t.r1.jsonl"},
		{"second attempt", Key{"reference", "B", "s-t1-1", 1}, 2, "reference.B.s-t1-1.r1.a2.jsonl"},
		{"tenth attempt", Key{"reference", "B", "s-t1-1", 3}, 10, "reference.B.s-t1-1.r3.a10.jsonl"},
		{"attempt zero is the first", Key{"reference", "B", "s-t1-1", 1}, 0, "reference.B.s-t1-1.r1.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := TrajectoryPath(tc.key, tc.attempt)
			assert.Equal(t, filepath.Join(TrajectoryDir, tc.want), p)
			assert.True(t, filepath.IsLocal(p), "%s leaves the run directory", p)
			assert.Equal(t, TrajectoryDir, filepath.Dir(p), "%s is not a file of %s/", p, TrajectoryDir)
		})
	}
}

// short is the hash safeName adds to a name it changed.
func short(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:3])
}

// Names that clean up alike keep their files apart.
func TestTrajectoryPathKeepsChangedNamesApart(t *testing.T) {
	a := TrajectoryPath(Key{"org/model", "A", "t1", 1}, 1)
	b := TrajectoryPath(Key{"org:model", "A", "t1", 1}, 1)
	c := TrajectoryPath(Key{"org_model", "A", "t1", 1}, 1)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, c)
	assert.NotEqual(t, b, c)
}

func TestSummarize(t *testing.T) {
	kB := func(task string) Key { return Key{Model: "m1", Condition: "B", Task: task, Rep: 1} }
	right := dirTrial(kB("t1"), ClassModel, 1)
	right.Turns, right.ContextTokens, right.OutputTokens, right.CachedTokens, right.WallMS, right.KernelMS = 2, 1000, 100, 500, 2000, 200
	right.ReasoningTokens, right.PoolWaitMS = 70, 300

	wrong := dirTrial(kB("t2"), ClassModel, 1)
	wrong.Correct, wrong.AnswerRight, wrong.Verdict = false, false, string(agent.GradeWrong)
	wrong.Turns, wrong.ContextTokens, wrong.OutputTokens, wrong.CachedTokens, wrong.WallMS, wrong.KernelMS = 4, 3000, 300, 0, 4000, 400
	wrong.Estimated = true

	unexecRight := dirTrial(kB("t3"), ClassModel, 1)
	unexecRight.Correct, unexecRight.AnswerRight, unexecRight.Verdict, unexecRight.AnswerSource = false, true, string(agent.GradeUnexecuted), agent.Unexecuted
	unexecRight.Turns, unexecRight.ContextTokens, unexecRight.WallMS = 1, 500, 1000

	unexecWrong := unexecRight
	unexecWrong.Key = kB("t4")
	unexecWrong.AnswerRight = false

	budget := dirTrial(kB("t5"), ClassModel, 1)
	budget.Status, budget.Correct, budget.AnswerRight, budget.Verdict, budget.AnswerSource = agent.MaxTurns, false, false, string(agent.GradeNoAnswer), ""
	budget.Turns, budget.ContextTokens, budget.WallMS = 12, 9000, 5000

	tooLong := budget
	tooLong.Key, tooLong.Status = kB("t6"), agent.ContextLength
	promptBudget := budget
	promptBudget.Key, promptBudget.Status = kB("t7"), agent.MaxPromptTokens

	stated := dirTrial(kB("t9"), ClassModel, 1)
	stated.AnswerSource, stated.Literal = agent.Stated, false
	stated.Turns, stated.ContextTokens, stated.WallMS = 1, 500, 1000
	literal := dirTrial(kB("t10"), ClassModel, 1)
	literal.Literal = true
	literal.Turns, literal.ContextTokens, literal.WallMS = 1, 500, 1000
	died := dirTrial(kB("t11"), ClassModel, 1)
	died.Status, died.Death, died.Correct, died.AnswerRight, died.Verdict, died.AnswerSource = agent.KernelDied, "oom", false, false, string(agent.GradeNoAnswer), ""
	died.Turns, died.ContextTokens, died.WallMS = 1, 500, 1000

	infra := dirTrial(kB("t8"), ClassInfra, 1)
	infra.Turns, infra.ContextTokens, infra.OutputTokens, infra.WallMS, infra.KernelMS, infra.PoolWaitMS = 100, 1e6, 1e6, 1e7, 1e7, 1e7
	infra.Estimated = true
	infra.Correct = true // never counted, whatever it says

	other := dirTrial(Key{Model: "m2", Condition: "A", Task: "t1", Rep: 1}, ClassInfra, 1)
	unnamed := dirTrial(Key{Model: "m3", Condition: "A", Task: "t1", Rep: 1}, ClassModel, 1)

	spec := Spec{Models: []ModelInfo{{Name: "m1"}, {Name: "m2"}}, Conditions: []ConditionInfo{{Name: "A"}, {Name: "B"}}}
	final := []Trial{right, other, wrong, unexecRight, unexecWrong, budget, tooLong, promptBudget, infra, stated, literal, died, unnamed}
	rows := Summarize(spec, final)
	require.Len(t, rows, 4, "every (model, condition) of the spec, and no other")
	var names []string
	for _, r := range rows {
		names = append(names, r.Model+"/"+r.Condition)
	}
	assert.Equal(t, []string{"m1/A", "m1/B", "m2/A", "m2/B"}, names, "in the spec's order")
	assert.Equal(t, Row{Model: "m1", Condition: "A"}, rows[0], "no line yet: zero trials")
	assert.Equal(t, Row{Model: "m2", Condition: "B"}, rows[3])

	b := rows[1]
	const n = 10.0
	assert.Equal(t, 11, b.Trials)
	assert.Equal(t, 1, b.Infra)
	assert.Equal(t, 10, b.Graded)
	assert.Equal(t, 3, b.Correct, "right, stated and literal")
	assert.InDelta(t, 3/n, b.Accuracy, 1e-9)
	assert.Equal(t, Sources{Executed: 3, Stated: 1, Unexecuted: 2, UnexecutedRight: 1, None: 4, Literal: 1, LiteralRight: 1}, b.Sources)
	assert.Equal(t, 3, b.BudgetStops)
	assert.Equal(t, 1, b.KernelDied)
	assert.InDelta(t, float64(2+4+1+1+12*3+1+1+1)/n, b.Turns, 1e-9)
	assert.InDelta(t, float64(1000+3000+500+500+9000*3+500*3)/n, b.ContextTokens, 1e-9)
	assert.InDelta(t, float64(100+300)/n, b.OutputTokens, 1e-9)
	assert.InDelta(t, float64(500)/n, b.CachedTokens, 1e-9)
	assert.InDelta(t, float64(70)/n, b.ReasoningTokens, 1e-9)
	assert.InDelta(t, float64(2000+4000+1000+1000+5000*3+1000*3)/n, b.WallMS, 1e-9)
	assert.InDelta(t, float64(200+400)/n, b.KernelMS, 1e-9)
	assert.InDelta(t, float64(300)/n, b.PoolWaitMS, 1e-9, "the infra trial's wait is not in it")
	assert.True(t, b.Estimated)
	assert.Equal(t, []Trial{right, wrong, unexecRight, unexecWrong, budget, tooLong, promptBudget, stated, literal, died}, b.Results,
		"the graded trials, in the lines' order")

	a := rows[2]
	assert.Equal(t, Row{Model: "m2", Condition: "A", Counts: Counts{Trials: 1, Infra: 1}}, a, "only infra: nothing graded, no means")
	assert.Len(t, Summarize(spec, nil), 4)
	assert.Empty(t, Summarize(Spec{}, final))
	assert.Equal(t, Row{}, Sum(nil))
}

// TestLogIsSafeForConcurrentUse reads a log's keys while lines are
// appended, as Execute's workers do (each trial asks for its key's
// attempts while other trials append): run with -race.
func TestLogIsSafeForConcurrentUse(t *testing.T) {
	l, _ := openDir(t, t.TempDir(), dirSpec(), Continue)
	k := dirKey("s-t1-1")
	const n = 50
	appended := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(appended)
		for i := range n {
			assert.NoError(t, l.Append(dirTrial(k, ClassInfra, i+1)))
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-appended:
				return
			default:
				_ = l.attempts(k)
				_ = l.Done(k)
			}
		}
	})
	wg.Wait()
	assert.Equal(t, n, l.attempts(k))
	assert.False(t, l.Done(k))
}

// Two processes never run one run at once: the second Open is refused
// while the first holds the log, and works once it is closed.
func TestOpenLocksTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	first, err := Open(dir, dirSpec(), Continue, io.Discard)
	require.NoError(t, err)
	_, err = Open(dir, dirSpec(), Continue, io.Discard)
	assert.Contains(t, configError(t, err).Msg, "another ctxcode bench is running this run now")
	require.NoError(t, first.Close())
	again, err := Open(dir, dirSpec(), Continue, io.Discard)
	require.NoError(t, err, "the lock ends with the log")
	require.NoError(t, again.Close())
	assert.NoError(t, Check(dir, ptr(dirSpec()), MustResume), "the lock file does not make the folder a stranger's")
}

func ptr[T any](v T) *T { return &v }

// A run whose configuration changed before any trial ran (a model or a
// prefix refused at the start) is started again without --force: nothing
// is lost.
func TestOpenStartsAgainARunWithNoTrial(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	l, err := Open(dir, dirSpec(), Continue, io.Discard)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	changed := dirSpec()
	changed.Reps = 2
	require.NoError(t, Check(dir, &changed, Continue))
	var warn bytes.Buffer
	l, err = Open(dir, changed, Continue, &warn)
	require.NoError(t, err)
	assert.Contains(t, warn.String(), "no trial yet")
	assert.Equal(t, 2, l.Spec.Reps)
	require.NoError(t, l.Append(dirTrial(Key{"reference", "A", "t1", 1}, ClassModel, 1)))
	require.NoError(t, l.Close())

	changed.Reps = 3 // now a trial ran: refused
	_, err = Open(dir, changed, Continue, io.Discard)
	assert.Contains(t, configError(t, err).Msg, "reps: 2 in the run, 3 now")
	assert.Error(t, Check(dir, &changed, Continue))
}

// Where the task file and the prefix file are does not matter; their
// content does.
func TestDiffComparesContentNotPaths(t *testing.T) {
	was, now := dirSpec(), dirSpec()
	was.Tasks = TaskSource{Kind: "file", File: "ut/tasks.jsonl", SHA256: "abc"}
	now.Tasks = TaskSource{Kind: "file", File: "./ut/tasks.jsonl", SHA256: "abc"}
	was.Conditions[1].PrefixSource, now.Conditions[1].PrefixSource = "ut/prefix.py", "/abs/ut/prefix.py"
	assert.Empty(t, Diff(was, now))
	now.Tasks.SHA256 = "def"
	assert.NotEmpty(t, Diff(was, now))
}
