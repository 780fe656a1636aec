package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

// Bad input found before any kernel starts and before a run folder is
// made, and reported all at once: the sandbox's limits, an image or a
// network the daemon does not have, every problem of a task file, runs
// too large to be meant.

const (
	userData   = "../../testdata/usertasks/data"
	userPrefix = "../../testdata/usertasks/prefix.py"
)

// goldOnlyTasks writes a task file whose golds are given: a run of it needs
// no kernel before its trials.
func goldOnlyTasks(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "t%d", "question": "How many stations?", "answer_type": "integer", "gold": 6, "solution": "ANSWER(len(stations))"}`+"\n", i)
	}
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestBenchSandboxLimitsRefusedBeforeARunFolder: limits Docker refuses, or
// that no kernel starts with, exit 2 before a run folder is made, every
// one named; so do an image and a network the daemon does not have, and
// more CPUs than it has. Before, the first ran with no limit (--cpus 0,
// --pids 0) or failed at the first trial (exit 1, with a run folder).
func TestBenchSandboxLimitsRefusedBeforeARunFolder(t *testing.T) {
	tasks := goldOnlyTasks(t, 1)
	for _, tc := range []struct {
		name   string
		flags  []string
		want   []string
		docker bool // the daemon knows
	}{
		{"memory below Docker's minimum", []string{"--memory", "1m"}, []string{"--memory 1m: below Docker's minimum of 6m"}, false},
		{"memory 0", []string{"--memory", "0"}, []string{"--memory 0: below Docker's minimum of 6m"}, false},
		{"memory-swap below memory", []string{"--memory", "1g", "--memory-swap", "512m"}, []string{"--memory-swap 512m: below --memory 1g"}, false},
		{"pids 1", []string{"--pids", "1"}, []string{"--pids 1: a kernel needs at least 3"}, false},
		{"pids 2", []string{"--pids", "2"}, []string{"--pids 2: a kernel needs at least 3"}, false},
		{"cpus 0", []string{"--cpus", "0"}, []string{"--cpus 0: give a positive number of CPUs"}, false},
		{"every one at once", []string{"--cpus", "-1", "--pids", "0", "--memory", "4m"},
			[]string{"--memory 4m: below", "--cpus -1: give a positive", "--pids 0: a kernel needs"}, false},
		{"another container's network", []string{"--network", "container:abc"}, []string{"--network container:abc: a kernel never joins another container's network"}, false},
		{"an image that does not exist", []string{"--image", "ctxcode-test-no-such-image:1"},
			[]string{"image ctxcode-test-no-such-image:1 not found", "drop --image"}, true},
		{"a network that does not exist", []string{"--network", "ctxcode-test-no-such-network"},
			[]string{"--network ctxcode-test-no-such-network: the Docker daemon has no such network", "give none"}, true},
		{"more CPUs than the host", []string{"--cpus", "100000"}, []string{"--cpus 100000: the Docker host has"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.docker {
				requireDocker(t)
			}
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"bench", "--model", "reference", "--tasks", tasks, "--data", userData, "--prefix", userPrefix,
				"--conditions", "B", "--out", out}, tc.flags...)
			got := runCLI(t, "", args...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			for _, w := range tc.want {
				assert.Contains(t, got.stderr, w)
			}
			assert.NoDirExists(t, out, "no run folder is made for flags that cannot work")
			assert.Empty(t, got.stdout)
		})
	}
}

// TestMissingImageIsBadInput: exec and ask refuse an --image the daemon
// does not have with exit 2 before a kernel starts (before: exit 1 when
// the kernel's container was made).
func TestMissingImageIsBadInput(t *testing.T) {
	requireDocker(t)
	data := pmData(t)
	for name, args := range map[string][]string{
		"exec": {"exec", "--image", "ctxcode-test-no-such-image:1", "--", "1 + 1"},
		"ask":  {"ask", "--data", data, "--task", "s-t1-1", "--model", "reference", "--image", "ctxcode-test-no-such-image:1"},
	} {
		t.Run(name, func(t *testing.T) {
			got := runCLI(t, "", args...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, "image ctxcode-test-no-such-image:1 not found: pull or build it")
		})
	}
}

// TestBenchReportsEveryTaskProblemAtOnce: a bad line, gold_code that
// raises, gold_code that never answers and gold_code that kills its kernel
// are reported in one message, each at its line in the file's order, with
// exit 2 and no run folder. Before, only the bad line was reported; fixed,
// only the first gold_code. Tasks without the solution --model reference
// plays are no problem: the reference model skips them, and says how many.
func TestBenchReportsEveryTaskProblemAtOnce(t *testing.T) {
	requirePython(t)
	privateCache(t)
	lines := []string{
		`{"id": "ok", "question": "How many stations?", "answer_type": "integer", "gold_code": "ANSWER(len(stations))", "solution": "ANSWER(len(stations))"}`,
		`{"id": "typo", "question": "q?", "answer_type": "integer", "gold": "7", "solution": "ANSWER(7)"}`,
		`{"id": "raises", "question": "q?", "answer_type": "integer", "gold_code": "ANSWER(len(station))", "solution": "ANSWER(1)"}`,
		`# a comment`,
		`{"id": "hangs", "question": "q?", "answer_type": "integer", "gold_code": "while True:\n    pass\nANSWER(1)", "solution": "ANSWER(1)"}`,
		`{"id": "nosol", "question": "q?", "answer_type": "integer", "gold": 3}`,
		`{"id": "exits", "question": "q?", "answer_type": "integer", "gold_code": "import os\nos._exit(3)\nANSWER(1)", "solution": "ANSWER(1)"}`,
		`{"id": "nosol2", "question": "q?", "answer_type": "integer", "gold_code": "ANSWER(len(readings) // 0)"}`,
		`{"id": "latin1", "question": "Which city?", "answer_type": "string", "gold": "Z` + "\xfc" + `rich", "solution": "ANSWER(1)"}`,
	}
	tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
	require.NoError(t, os.WriteFile(tasks, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	out := filepath.Join(t.TempDir(), "run")
	got := runCLI(t, "", "bench", "--sandbox", "local", "--model", "reference", "--tasks", tasks, "--data", userData,
		"--prefix", userPrefix, "--conditions", "B", "--timeout", "2s", "--out", out)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.NoDirExists(t, out)
	assert.Contains(t, got.stderr, "reference: 2 of 6 tasks have no solution: skipped")
	assert.NotContains(t, got.stderr, "has no solution, which --model reference plays")
	want := []string{
		tasks + `:2: gold is the string "7"`,
		tasks + ":3: task raises: gold_code raised NameError",
		tasks + ":5: task hangs: gold_code ran past its timeout (2s)",
		tasks + ":7: task exits: gold_code killed the kernel",
		tasks + ":8: task nosol2: gold_code raised ZeroDivisionError",
		tasks + ":9: not UTF-8 (byte 0xFC at column 80): save the file as UTF-8",
	}
	at := -1
	for _, w := range want {
		i := strings.Index(got.stderr, w)
		if assert.GreaterOrEqual(t, i, 0, "%q is not reported:\n%s", w, got.stderr) {
			assert.Greater(t, i, at, "%q is out of the file's order", w)
			at = i
		}
	}
	assert.NotContains(t, got.stderr, ":1:", "the good task is not a problem")
}

// TestBenchCaps: --reps, --parallel and the number of trials have caps far
// above a meant run, refused at once with exit 2 (before, --reps 100000000
// was planned for minutes in gigabytes of memory, deaf to Ctrl-C).
func TestBenchCaps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tasks int
		flags []string
		want  string
	}{
		{"reps", 1, []string{"--reps", "100000000"}, "--reps 100000000: at most 1000"},
		{"parallel", 1, []string{"--parallel", "257"}, "--parallel 257: at most 256"},
		{"trials", 51, []string{"--reps", "1000", "--conditions", "B,D"},
			"the run would have 102000 trials (1 model(s) x 2 condition(s) x 51 task(s) x 1000 rep(s)), over the 100000 one run may have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"bench", "--model", "reference", "--tasks", goldOnlyTasks(t, tc.tasks), "--data", userData,
				"--prefix", userPrefix, "--conditions", "B", "--out", out}, tc.flags...)
			got := runCLI(t, "", args...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.NoDirExists(t, out)
		})
	}
	var help bytes.Buffer
	assert.Equal(t, exitOK, run(context.Background(), []string{"bench", "-h"}, strings.NewReader(""), &help, &help))
	flat := strings.Join(strings.Fields(help.String()), " ")
	for _, w := range []string{"--reps at most 1000", "--parallel at most 256", "at most 100000 trials"} {
		assert.Contains(t, flat, w, "the help says the caps")
	}
}

// TestUnreadableDataFileIsSkipped: a file of --data that ctxcode cannot
// open is left out of the kernel's data/ with a warning naming it, as
// prefix init skips it, and the rest is there (before: exit 1, "copy data
// into the volume: ... permission denied", or "copy data folder"). ctxcode
// runs as nobody (with the Docker socket's group), and the file is root's,
// mode 0600.
func TestUnreadableDataFileIsSkipped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs ctxcode as another user: needs root")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	home, exe := kerneltest.CopyForNobody(t, exe)
	require.NoError(t, os.Chown(home, nobody, nobody))
	data := filepath.Join(home, "data")
	require.NoError(t, os.Mkdir(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "ok.csv"), []byte("a\n1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(data, "secret.csv"), []byte("token\nhunter2\n"), 0o600))
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			groups := []uint32{}
			if sb == "docker" {
				st, err := os.Stat("/var/run/docker.sock")
				if err != nil {
					t.Skipf("the Docker socket is not /var/run/docker.sock (%v): cannot give nobody its group", err)
				}
				groups = append(groups, st.Sys().(*syscall.Stat_t).Gid)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "exec", "--sandbox", sb, "--data", data, "--", "import os", "sorted(os.listdir('data'))")
			cmd.Dir = home
			cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1", "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "TMPDIR=/tmp")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: groups}}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			require.NoError(t, err, "stderr: %s", stderr.String())
			assert.Contains(t, stdout.String(), "Out[2]: ['ok.csv']", "the rest of the data is there")
			assert.Contains(t, stderr.String(), "ctxcode: warning: skipped "+filepath.Join(data, "secret.csv")+": cannot be opened for reading (permission denied); no kernel sees it\n")
			assert.NotContains(t, stdout.String(), "hunter2")
		})
	}
}
