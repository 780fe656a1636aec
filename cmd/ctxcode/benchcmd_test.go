package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// The faults `ctxcode bench` must survive, each a test: a run that ends,
// is killed, is interrupted, meets a failing API, a dying kernel or a
// wrong answer, and input it must refuse before any kernel starts. Runs are
// small (a few tasks of tier s) and their kernels run in Docker.

// TestBenchReferenceEveryCondition: every condition answers both tasks;
// each trial has a line, a trajectory that ends graded, and run.json says
// what ran. The same command again runs nothing.
func TestBenchReferenceEveryCondition(t *testing.T) {
	requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--model", "reference", "--conditions", "A,B,B0,D,C", "--tier", "s",
		"--task", "s-t1-1,s-t4-1", "--parallel", "2", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	conds := []string{"A", "B", "B0", "D", "C"}
	for _, c := range conds {
		assert.Regexp(t, `(?m)^`+c+`\s+2/2\s+100%\s+0\s`, got.stdout, "condition %s", c)
	}
	assert.Contains(t, got.stdout, "10 of 10 trials have a result (10 run now, 0 from before)")

	trials := readTrials(t, out)
	require.Len(t, trials, 10)
	var want, keys []bench.Key
	for _, c := range conds {
		for _, task := range []string{"s-t1-1", "s-t4-1"} {
			want = append(want, bench.Key{Model: "reference", Condition: c, Task: task, Rep: 1})
		}
	}
	for _, tr := range trials {
		keys = append(keys, tr.Key)
		assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
		assert.True(t, tr.Correct, "%s: %s", tr.Key, tr.Verdict)
		assert.Equal(t, 1, tr.Attempt, tr.Key.String())
		assert.Equal(t, bench.TrajectoryPath(tr.Key, 1), tr.Trajectory)
		types := trajectoryEvents(t, filepath.Join(out, tr.Trajectory))
		assert.Contains(t, types, "grade", tr.Key.String())
		assert.Equal(t, "run", types[0], tr.Key.String())
	}
	assert.ElementsMatch(t, want, keys, "one line per key")
	assertNoPartials(t, out)

	b, err := os.ReadFile(filepath.Join(out, bench.SpecFile))
	require.NoError(t, err)
	var spec bench.Spec
	require.NoError(t, json.Unmarshal(b, &spec))
	assert.Equal(t, 1, spec.Reps)
	assert.Equal(t, "builtin", spec.Tasks.Kind)
	assert.Equal(t, "s", spec.Tasks.Tier)
	require.Len(t, spec.Models, 1)
	assert.Equal(t, "reference", spec.Models[0].Name)
	var names, taskIDs []string
	for _, c := range spec.Conditions {
		names = append(names, c.Name)
	}
	for _, task := range spec.TaskList {
		taskIDs = append(taskIDs, task.ID)
	}
	assert.Equal(t, conds, names)
	assert.Equal(t, []string{"s-t1-1", "s-t4-1"}, taskIDs)

	log, err := os.ReadFile(filepath.Join(out, bench.TrialsFile))
	require.NoError(t, err)
	again := runCLI(t, "", args...)
	require.Equal(t, exitOK, again.code, again.stderr)
	assert.Contains(t, again.stderr, "resuming: 10 of 10 trials already have a result")
	assert.Contains(t, again.stdout, "10 of 10 trials have a result (0 run now, 10 from before)")
	for _, c := range conds {
		assert.Regexp(t, `(?m)^`+c+`\s+2/2\s+100%`, again.stdout, "the summary covers the trials from before")
	}
	after, err := os.ReadFile(filepath.Join(out, bench.TrialsFile))
	require.NoError(t, err)
	assert.Equal(t, string(log), string(after), "nothing ran again")
}

// killedArgs is a run long enough to be stopped in the middle: 12 tasks
// in two conditions, two at a time.
func killedArgs(out string) []string {
	var ids []string
	for tmpl := 1; tmpl <= 4; tmpl++ {
		for k := 1; k <= 3; k++ {
			ids = append(ids, fmt.Sprintf("s-t%d-%d", tmpl, k))
		}
	}
	return []string{"bench", "--model", "reference", "--conditions", "B,D", "--tier", "s",
		"--task", strings.Join(ids, ","), "--parallel", "2", "--out", out}
}

const killedTotal = 24

// TestBenchKilledResumes: a run killed with SIGKILL mid-run resumes: every
// trial that had a line keeps it and never runs again, the others run, and
// the containers the killed process left are removed by the resume's sweep.
func TestBenchKilledResumes(t *testing.T) {
	cli := requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	args := killedArgs(out)
	p := startBench(t, args...)
	p.waitLines(t, out, 3)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
	pid := p.cmd.Process.Pid

	before := completeTrials(t, out)
	require.Less(t, len(before), killedTotal, "killed before the end")
	assert.NotEmpty(t, containersOf(t, cli, pid), "SIGKILL leaves the kernels' containers behind")
	// A create the killed process had sent is finished by the daemon after
	// the kill (some 150ms later here); a sweep can remove only the
	// containers that exist when it runs.
	settleContainers(t, cli, pid)

	got := runCLI(t, "", append(args, "--resume")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, fmt.Sprintf("resuming: %d of %d trials already have a result", len(before), killedTotal))
	assert.Contains(t, got.stdout, fmt.Sprintf("%d of %d trials have a result (%d run now, %d from before)",
		killedTotal, killedTotal, killedTotal-len(before), len(before)))

	trials := readTrials(t, out)
	require.Len(t, trials, killedTotal, "one line per key: no finished trial ran again")
	assert.Equal(t, before, trials[:len(before)], "the lines from before the kill are kept as they were")
	count := keyCounts(trials)
	assert.Len(t, count, killedTotal)
	for k, n := range count {
		assert.Equal(t, 1, n, k.String())
	}
	for _, tr := range trials {
		assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
		assert.True(t, tr.Correct, tr.Key.String())
		assert.FileExists(t, filepath.Join(out, tr.Trajectory))
	}
	assertNoPartials(t, out)
	assert.Empty(t, containersOf(t, cli, pid), "the resume's sweep removed the killed run's containers")
}

// TestBenchInterruptedResumes: Ctrl-C stops a run with exit code 130, its
// containers removed and what finished kept (the trials it stopped have no
// line, not an infra one); running the same command again finishes it.
func TestBenchInterruptedResumes(t *testing.T) {
	cli := requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	args := killedArgs(out)
	p := startBench(t, args...)
	p.waitLines(t, out, 2)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatal("ctxcode bench did not end after SIGINT")
	}
	var exitErr *exec.ExitError
	require.ErrorAs(t, p.err, &exitErr, p.stderr.String())
	assert.Equal(t, exitInterrupted, exitErr.ExitCode(), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "run the same command again to finish it")
	assert.Contains(t, p.stdout.String(), "trials have a result", "the summary of what finished")
	assert.Empty(t, containersOf(t, cli, p.cmd.Process.Pid), "no container of the interrupted run is left")

	b, err := os.ReadFile(filepath.Join(out, bench.TrialsFile))
	require.NoError(t, err)
	assert.True(t, len(b) == 0 || b[len(b)-1] == '\n', "no line cut short")
	before := readTrials(t, out)
	require.Less(t, len(before), killedTotal, "interrupted before the end")
	for _, tr := range before {
		assert.Equal(t, bench.ClassModel, tr.Class, "%s: a trial stopped by Ctrl-C has no line", tr.Key)
	}

	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	trials := readTrials(t, out)
	require.Len(t, trials, killedTotal)
	assert.Equal(t, before, trials[:len(before)])
	count := keyCounts(trials)
	assert.Len(t, count, killedTotal)
	for k, n := range count {
		assert.Equal(t, 1, n, k.String())
	}
	for _, tr := range trials {
		assert.True(t, tr.Correct, tr.Key.String())
	}
	assertNoPartials(t, out)
}

// quick500 is a 500 that asks for a 1ms wait before the retry (the CLI
// has no flag for the retries' waits; Retry-After-Ms keeps them quick).
func quick500() llmtest.Reply {
	fail := llmtest.Error(500, "server_error", "The server had an error while processing your request")
	fail.Header = http.Header{"Retry-After-Ms": []string{"1"}}
	return fail
}

// TestBenchServerErrorsAreInfra: a trial whose every attempt gets a 500 is
// an infra failure, not the model's: its line says so, the others go on,
// and the run exits 1 asking to run it again. Running it again asks the
// model only for that trial, appends its new line and exits 0.
func TestBenchServerErrorsAreInfra(t *testing.T) {
	requireDocker(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	// 1 + llm.DefaultMaxRetries attempts, each a quick 500.
	var failing []llmtest.Reply
	for range 6 {
		failing = append(failing, quick500())
	}
	api := newTaskAPI(t, map[string][]llmtest.Reply{
		tasks["s-t1-1"].Question: append(failing, answerReply(t, tasks["s-t1-1"].Gold)),
		tasks["s-t1-2"].Question: {answerReply(t, tasks["s-t1-2"].Gold)},
		tasks["s-t5-1"].Question: {answerReply(t, tasks["s-t5-1"].Gold)},
	})
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "D",
		"--task", "s-t1-1,s-t1-2,s-t5-1", "--parallel", "2", "--out", out}

	got := runCLI(t, "", args...)
	assert.Equal(t, exitInfra, got.code, got.stderr)
	assert.Contains(t, got.stderr, "1 trial(s) ended in an infrastructure failure")
	assert.Contains(t, got.stderr, "run the same command again to retry them")
	assert.Contains(t, got.stderr, "attempt 1 of 6 failed (500")
	assert.Regexp(t, `(?m)^D\s+2/2\s+100%\s+1\s`, got.stdout, "the infra failure is counted apart, not in accuracy")
	first := readTrials(t, out)
	require.Len(t, first, 3)
	for _, tr := range first {
		if tr.Task == "s-t1-1" {
			assert.Equal(t, bench.ClassInfra, tr.Class)
			assert.Equal(t, "model_error", string(tr.Status))
			assert.Contains(t, tr.Error, "gave up after attempt 6 of 6")
			assert.Equal(t, 5, tr.Retries)
			assert.False(t, tr.Correct)
		} else {
			assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
			assert.True(t, tr.Correct, tr.Key.String())
		}
		assert.FileExists(t, filepath.Join(out, tr.Trajectory))
	}
	assert.Equal(t, map[string]int{tasks["s-t1-1"].Question: 6, tasks["s-t1-2"].Question: 1, tasks["s-t5-1"].Question: 1}, api.counts())

	got = runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "resuming: 2 of 3 trials already have a result")
	assert.Regexp(t, `(?m)^D\s+3/3\s+100%\s+0\s`, got.stdout)
	assert.Equal(t, map[string]int{tasks["s-t1-1"].Question: 7, tasks["s-t1-2"].Question: 1, tasks["s-t5-1"].Question: 1}, api.counts(),
		"only the infra trial asked the model again")
	trials := readTrials(t, out)
	require.Len(t, trials, 4, "one new line")
	assert.Equal(t, first, trials[:3])
	last := trials[3]
	assert.Equal(t, "s-t1-1", last.Task)
	assert.Equal(t, 2, last.Attempt)
	assert.Equal(t, bench.ClassModel, last.Class)
	assert.True(t, last.Correct)
	assert.Equal(t, bench.TrajectoryPath(last.Key, 2), last.Trajectory, "the first attempt's trajectory is kept")
	assert.FileExists(t, filepath.Join(out, last.Trajectory))
	assert.FileExists(t, filepath.Join(out, first[0].Trajectory))
}

// TestBenchRetryLinesNameTheirTrial: trials that run at once and are both
// retried print retry lines that each say whose they are.
func TestBenchRetryLinesNameTheirTrial(t *testing.T) {
	requireDocker(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	fail := quick500()
	api := newTaskAPI(t, map[string][]llmtest.Reply{
		tasks["s-t1-1"].Question: {fail, answerReply(t, tasks["s-t1-1"].Gold)},
		tasks["s-t1-2"].Question: {fail, fail, answerReply(t, tasks["s-t1-2"].Gold)},
	})
	out := filepath.Join(t.TempDir(), "run")
	got := runCLI(t, "", "bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "D",
		"--task", "s-t1-1,s-t1-2", "--parallel", "2", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	var retries []string
	for _, l := range strings.Split(got.stderr, "\n") {
		if strings.Contains(l, " failed (500") {
			retries = append(retries, l)
		}
	}
	assert.ElementsMatch(t, []string{
		"ctxcode: trial m/D/s-t1-1/r1: model m: attempt 1 of 6 failed (500 Internal Server Error), retrying in 1ms",
		"ctxcode: trial m/D/s-t1-2/r1: model m: attempt 1 of 6 failed (500 Internal Server Error), retrying in 1ms",
		"ctxcode: trial m/D/s-t1-2/r1: model m: attempt 2 of 6 failed (500 Internal Server Error), retrying in 1ms",
	}, retries, got.stderr)
}

// TestBenchKernelDeathRestarts: a cell that kills the kernel inside a
// trial restarts it; the trial answers after the restart, told what
// happened, and the other trials of the run go on.
func TestBenchKernelDeathRestarts(t *testing.T) {
	requireDocker(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dies := tasks["s-t1-1"].Question
	api := newTaskAPI(t, map[string][]llmtest.Reply{
		dies:                     {llmtest.Text("import os; os._exit(1)", 700, 10), answerReply(t, tasks["s-t1-1"].Gold)},
		tasks["s-t1-2"].Question: {answerReply(t, tasks["s-t1-2"].Gold)},
		tasks["s-t5-1"].Question: {answerReply(t, tasks["s-t5-1"].Gold)},
	})
	out := filepath.Join(t.TempDir(), "run")
	got := runCLI(t, "", "bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "D",
		"--task", "s-t1-1,s-t1-2,s-t5-1", "--parallel", "2", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Regexp(t, `(?m)^D\s+3/3\s+100%\s+0\s`, got.stdout)
	trials := readTrials(t, out)
	require.Len(t, trials, 3)
	for _, tr := range trials {
		assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
		assert.True(t, tr.Correct, "%s: %s %s", tr.Key, tr.Status, tr.Error)
		if tr.Task == "s-t1-1" {
			assert.GreaterOrEqual(t, tr.Restarts, 1, "the kernel was restarted")
			assert.Equal(t, 2, tr.Turns)
			assert.Contains(t, trajectoryEvents(t, filepath.Join(out, tr.Trajectory)), "restart")
		} else {
			assert.Zero(t, tr.Restarts, tr.Key.String())
		}
	}
	reqs := api.requests(dies)
	require.Len(t, reqs, 2)
	var seen strings.Builder
	for _, m := range reqs[1].Body.Messages {
		seen.WriteString(m.Content + "\n")
	}
	assert.Contains(t, seen.String(), "restarted", "the model is told the kernel was restarted")
}

// TestBenchWrongAnswer: a wrong answer is the model's result: graded
// wrong, counted in accuracy, exit 0, and never run again.
func TestBenchWrongAnswer(t *testing.T) {
	requireDocker(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	wrong := llmtest.Text("ANSWER(-1)", 700, 5)
	api := newTaskAPI(t, map[string][]llmtest.Reply{ // one reply per condition
		tasks["s-t1-1"].Question: {wrong, wrong},
		tasks["s-t5-1"].Question: {wrong, wrong},
	})
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "D,C",
		"--task", "s-t1-1,s-t5-1", "--parallel", "2", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Regexp(t, `(?m)^D\s+0/2\s+0%\s+0\s`, got.stdout)
	assert.Regexp(t, `(?m)^C\s+0/2\s+0%\s+0\s`, got.stdout)
	trials := readTrials(t, out)
	require.Len(t, trials, 4)
	for _, tr := range trials {
		assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
		assert.Equal(t, "answered", string(tr.Status), tr.Key.String())
		assert.Equal(t, "executed", tr.AnswerSource, tr.Key.String())
		assert.JSONEq(t, "-1", string(tr.Answer), tr.Key.String())
		assert.False(t, tr.Correct, tr.Key.String())
		assert.Equal(t, "wrong", tr.Verdict, tr.Key.String())
	}

	got = runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "resuming: 4 of 4 trials already have a result")
	assert.Regexp(t, `(?m)^D\s+0/2\s+0%`, got.stdout)
	assert.Len(t, readTrials(t, out), 4, "a wrong answer is not run again")
	assert.Equal(t, map[string]int{tasks["s-t1-1"].Question: 2, tasks["s-t5-1"].Question: 2}, api.counts())
}

// TestBenchBadInputExitsTwoBeforeAnyKernel: bad flags and files exit 2
// with a message that says what is wrong, before the sandbox is opened:
// Docker is unreachable and the model is behind an API (no fallback to
// this host), so a case that got as far as the sandbox would exit 1.
func TestBenchBadInputExitsTwoBeforeAnyKernel(t *testing.T) {
	data := pmData(t)
	tmp := t.TempDir()
	badTasks := filepath.Join(tmp, "bad.jsonl")
	require.NoError(t, os.WriteFile(badTasks, []byte(
		`{"id": "one", "question": "How many stations?", "answer_type": "integer", "gold": 6}`+"\n"+
			`{"id": "two", "question": "How many readings?", "answer_type": "Int", "gold": 36}`+"\n"), 0o644))
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	model := []string{"--model", "m", "--base-url", "http://127.0.0.1:9/v1"}
	out := filepath.Join(tmp, "run")
	user := []string{"--data", "../../testdata/usertasks/data", "--prefix", "../../testdata/usertasks/prefix.py"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no --out", []string{"--data", data}, "give the run directory with --out RUNDIR"},
		{"--reps 0", []string{"--data", data, "--reps", "0", "--out", out}, "--reps 0: give 1 or more"},
		{"unknown condition", []string{"--data", data, "--conditions", "B,E", "--out", out}, "E"},
		{"--tasks without --prefix", []string{"--tasks", "../../testdata/usertasks/tasks.jsonl", "--data", "../../testdata/usertasks/data", "--out", out}, "--tasks needs --data DIR"},
		{"--tasks with a bad line", append([]string{"--tasks", badTasks, "--out", out}, user...), "bad.jsonl:2:"},
		{"--tasks that does not exist", append([]string{"--tasks", filepath.Join(tmp, "none.jsonl"), "--out", out}, user...), "no such file"},
		{"--out is a file", []string{"--data", data, "--out", badTasks}, "a file, not a folder"},
		{"unknown task", []string{"--data", data, "--task", "s-t9-9", "--out", out}, "--task: no task s-t9-9"},
		{"--out inside --data", []string{"--data", data, "--out", filepath.Join(data, "run")}, "inside --data"},
		{"--out is --data", []string{"--data", data, "--out", data}, "inside --data"},
		{"an empty model name", []string{"--data", data, "--model", "m,", "--out", out}, "an empty name in the list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", append(append([]string{"bench"}, model...), tc.args...)...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.NotContains(t, got.stderr, "docker daemon not reachable", "found before the sandbox is opened")
			assert.Empty(t, got.stdout)
		})
	}
	got := runCLI(t, "", append(append([]string{"bench"}, model...), append([]string{"--tasks", badTasks, "--out", out}, user...)...)...)
	assert.Contains(t, got.stderr, "unknown answer_type", "the line's problem is named")
	assert.NoDirExists(t, out, "no run directory was made")

	// A model that cannot be made is refused before the run folder is
	// made, so that fixing it needs no --force.
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	got = runCLI(t, "", "bench", "--model", "gpt-4o-mini", "--data", data, "--out", out)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.NoDirExists(t, out, "no run directory was made for a model that cannot be asked")
}

// TestBenchRunDirRefused: an --out that cannot take this run exits 2 and
// is left as it was: a folder with other files (unless --force), no run
// to --resume, a run with another configuration (the difference named).
func TestBenchRunDirRefused(t *testing.T) {
	requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tmp := t.TempDir()
	base := []string{"bench", "--model", "reference", "--conditions", "B", "--tier", "s", "--task", "s-t1-1"}
	cmd := func(out string, more ...string) []string {
		return append(append(append([]string{}, base...), "--out", out), more...)
	}

	other := filepath.Join(tmp, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644))
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a folder that holds no run", cmd(other), "the folder is not empty and holds no run"},
		{"--resume without a folder", cmd(filepath.Join(tmp, "none"), "--resume"), "there is no run to resume"},
		{"--resume of an empty folder", cmd(empty, "--resume"), "there is no run to resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.Empty(t, got.stdout)
		})
	}
	assert.NoDirExists(t, filepath.Join(tmp, "none"))
	assert.NoFileExists(t, filepath.Join(empty, bench.SpecFile))
	assert.NoFileExists(t, filepath.Join(other, bench.SpecFile))

	got := runCLI(t, "", cmd(other, "--force")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Len(t, readTrials(t, other), 1)
	b, err := os.ReadFile(filepath.Join(other, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "--force uses the folder, keeping its other files")

	log, err := os.ReadFile(filepath.Join(other, bench.TrialsFile))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		more []string
		want string
	}{
		{"reps", []string{"--reps", "2"}, "reps: 1 in the run, 2 now"},
		{"reps with --resume", []string{"--reps", "2", "--resume"}, "reps: 1 in the run, 2 now"},
		{"conditions", []string{"--conditions", "B,D"}, "conditions: "},
		{"tasks", []string{"--task", "s-t1-1,s-t1-2"}, "task list: 1 tasks"},
	} {
		t.Run("another config: "+tc.name, func(t *testing.T) {
			got := runCLI(t, "", cmd(other, tc.more...)...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, "holds a run with another configuration")
			assert.Contains(t, got.stderr, tc.want)
			assert.Contains(t, got.stderr, "--force")
			assert.Empty(t, got.stdout)
			after, err := os.ReadFile(filepath.Join(other, bench.TrialsFile))
			require.NoError(t, err)
			assert.Equal(t, string(log), string(after))
		})
	}

	got = runCLI(t, "", cmd(other, "--reps", "2", "--force")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "reps: 1 in the run, 2 now", "--force says what it discards")
	assert.Len(t, readTrials(t, other), 2, "the run started again with two reps")
}

// TestBenchCutLineRunsAgain: a last line cut short by a crash (kill -9
// in the middle of a write) is dropped when the run is opened again, and
// its trial runs again; the lines before it are kept.
func TestBenchCutLineRunsAgain(t *testing.T) {
	requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--model", "reference", "--conditions", "B", "--tier", "s", "--task", "s-t1-1,s-t3-1", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	whole := readTrials(t, out)
	require.Len(t, whole, 2)
	path := filepath.Join(out, bench.TrialsFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)-20], 0o644)) // the second line, cut

	got = runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "dropped a trial line cut short by a crash")
	assert.Contains(t, got.stderr, "resuming: 1 of 2 trials already have a result")
	trials := readTrials(t, out)
	require.Len(t, trials, 2, "the cut line is gone and its trial has a whole one")
	assert.Equal(t, whole[0], trials[0])
	assert.Equal(t, whole[1].Key, trials[1].Key)
	assert.True(t, trials[1].Correct)
	assert.FileExists(t, filepath.Join(out, trials[1].Trajectory))
}

// TestBenchRunDirCheckedBeforeAnyKernel: an --out that cannot take the
// run is bad input, found before any kernel starts (DESIGN.md, exit codes):
// before gold_code runs in a kernel, and before the sandbox is opened, so
// that a machine without Docker hears of the folder first.
//
// It fails today: runBench opens the sandbox and resolves the golds (in a
// kernel) before bench.Open looks at --out.
func TestBenchRunDirCheckedBeforeAnyKernel(t *testing.T) {
	requirePython(t)
	tmp := t.TempDir()
	other := filepath.Join(tmp, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644))
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	refused := []struct {
		name string
		args []string
		want string
	}{
		{"a folder that holds no run", []string{"--out", other}, "the folder is not empty and holds no run"},
		{"--resume without a folder", []string{"--out", filepath.Join(tmp, "none"), "--resume"}, "there is no run to resume"},
		{"--resume of an empty folder", []string{"--out", empty, "--resume"}, "there is no run to resume"},
	}

	t.Run("gold_code has not run", func(t *testing.T) {
		// The kernel (on this host, as nobody when the test is root) marks
		// a folder anyone may write to when gold_code runs.
		marks, err := os.MkdirTemp("", "ctxcode-gold-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(marks) })
		require.NoError(t, os.Chmod(marks, 0o777))
		marker := filepath.Join(marks, "ran")
		task := map[string]any{"id": "n", "question": "How many stations?", "answer_type": "integer",
			"gold_code": fmt.Sprintf("open(%q, 'w').write('ran')\nANSWER(len(stations))", marker), "solution": "ANSWER(len(stations))"}
		line, err := json.Marshal(task)
		require.NoError(t, err)
		tasks := filepath.Join(tmp, "tasks.jsonl")
		require.NoError(t, os.WriteFile(tasks, append(line, '\n'), 0o644))
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				got := runCLI(t, "", append([]string{"bench", "--sandbox", "local", "--model", "reference", "--tasks", tasks,
					"--data", "../../testdata/usertasks/data", "--prefix", "../../testdata/usertasks/prefix.py", "--conditions", "B"}, tc.args...)...)
				assert.Equal(t, exitUsage, got.code, got.stderr)
				assert.Contains(t, got.stderr, tc.want)
				assert.NoFileExists(t, marker, "gold_code ran in a kernel before --out was refused")
				_ = os.Remove(marker)
			})
		}
	})

	t.Run("before the sandbox", func(t *testing.T) {
		data := pmData(t)
		t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
		t.Setenv("OPENAI_API_KEY", "sk-test")
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				got := runCLI(t, "", append([]string{"bench", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--data", data}, tc.args...)...)
				assert.Equal(t, exitUsage, got.code, got.stderr)
				assert.Contains(t, got.stderr, tc.want)
				assert.NotContains(t, got.stderr, "docker daemon not reachable")
			})
		}
	})
}

// TestBenchConditionsMessages: a bad --conditions is named as the flag it
// is, --conditions, with what bench expects; ask's hints (its singular
// --condition, "--task all") do not apply to bench.
//
// It fails today: bench reuses ask's parseRungs and its messages.
func TestBenchConditionsMessages(t *testing.T) {
	data := pmData(t)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	for _, tc := range []struct {
		name, conditions, want string
	}{
		{"unknown", "B,E", "E"},
		{"named twice", "B,B", "B is named twice"},
		{"empty", "", "--conditions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", "bench", "--model", "reference", "--data", data, "--conditions", tc.conditions, "--out", filepath.Join(t.TempDir(), "run"))
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, "--conditions", "the flag bench has")
			assert.Contains(t, got.stderr, tc.want)
			assert.NotContains(t, got.stderr, "--condition ", "ask's flag, not bench's")
			assert.NotContains(t, got.stderr, "--task all", "ask's hint, not bench's")
			assert.NotContains(t, got.stderr, "loop", "nobody named loop")
		})
	}
}

// TestBenchUserTasks: the example of testdata/usertasks (gold given and
// gold_code) runs in every condition that has a prefix and in A, and the
// reference model answers every task.
func TestBenchUserTasks(t *testing.T) {
	requireDocker(t)
	out := filepath.Join(t.TempDir(), "run")
	got := runCLI(t, "", "bench", "--model", "reference", "--tasks", "../../testdata/usertasks/tasks.jsonl",
		"--data", "../../testdata/usertasks/data", "--prefix", "../../testdata/usertasks/prefix.py",
		"--conditions", "A,B,D,C", "--parallel", "2", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	for _, c := range []string{"A", "B", "D", "C"} {
		assert.Regexp(t, `(?m)^`+c+`\s+5/5\s+100%\s+0\s`, got.stdout, "condition %s", c)
	}
	trials := readTrials(t, out)
	require.Len(t, trials, 20)
	for _, tr := range trials {
		assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
		assert.True(t, tr.Correct, "%s: %s %s", tr.Key, tr.Verdict, tr.GradeReason)
	}
	assert.Len(t, keyCounts(trials), 20)

	b, err := os.ReadFile(filepath.Join(out, bench.SpecFile))
	require.NoError(t, err)
	var spec bench.Spec
	require.NoError(t, json.Unmarshal(b, &spec))
	assert.Equal(t, "file", spec.Tasks.Kind)
	assert.NotEmpty(t, spec.Tasks.SHA256)
	require.Len(t, spec.TaskList, 5)
	for _, task := range spec.TaskList {
		assert.NotNil(t, task.Gold, "%s: gold_code resolved into the run's task list", task.ID)
	}
}

// readTrials parses every line of the run's trials.jsonl; each must be a
// trial.
func readTrials(t *testing.T, dir string) []bench.Trial {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, bench.TrialsFile))
	require.NoError(t, err)
	return parseTrials(t, string(b))
}

// completeTrials parses the lines of trials.jsonl that end in a newline:
// after a kill, a last line may be cut short.
func completeTrials(t *testing.T, dir string) []bench.Trial {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, bench.TrialsFile))
	require.NoError(t, err)
	s := string(b)
	return parseTrials(t, s[:strings.LastIndexByte(s, '\n')+1])
}

func parseTrials(t *testing.T, s string) []bench.Trial {
	t.Helper()
	var trials []bench.Trial
	for i, line := range strings.SplitAfter(s, "\n") {
		if line == "" {
			continue
		}
		var tr bench.Trial
		require.NoError(t, json.Unmarshal([]byte(line), &tr), "line %d: %s", i+1, line)
		require.NotEmpty(t, tr.Task, "line %d", i+1)
		trials = append(trials, tr)
	}
	return trials
}

func keyCounts(trials []bench.Trial) map[bench.Key]int {
	n := map[bench.Key]int{}
	for _, tr := range trials {
		n[tr.Key]++
	}
	return n
}

// trajectoryEvents are the kinds of a trajectory's events, read through
// the schema's reader, whole.
func trajectoryEvents(t *testing.T, path string) []string {
	t.Helper()
	var kinds []string
	for _, e := range readTrajectory(t, path).Events {
		kinds = append(kinds, e.Kind)
	}
	require.NotEmpty(t, kinds, path)
	return kinds
}

// readTrajectory reads the trajectory at path through the schema's
// reader: no error, nothing skipped, no torn line.
func readTrajectory(t *testing.T, path string) *session.TrajectoryLog {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	l, err := session.ReadTrajectory(f)
	require.NoError(t, err, path)
	assert.Empty(t, l.Skipped, path)
	assert.Zero(t, l.Torn, path)
	return l
}

// assertNoPartials checks that no trajectory was left half-written.
func assertNoPartials(t *testing.T, dir string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, bench.TrajectoryDir, "*.partial"))
	require.NoError(t, err)
	assert.Empty(t, left, "every trajectory is complete and in place")
}

// builtinTasks are the built-in tasks of a data folder, by id.
func builtinTasks(t *testing.T, dir string) map[string]datasets.Task {
	t.Helper()
	d, _, err := datasets.Load(dir)
	require.NoError(t, err)
	ts, err := datasets.Tasks(d)
	require.NoError(t, err)
	byID := map[string]datasets.Task{}
	for _, task := range ts {
		byID[task.ID] = task
	}
	return byID
}

// answerReply is the bare-protocol reply that answers gold.
func answerReply(t *testing.T, gold any) llmtest.Reply {
	t.Helper()
	b, err := json.Marshal(gold)
	require.NoError(t, err)
	return llmtest.Text(fmt.Sprintf("import json\nANSWER(json.loads(%s))", strconv.Quote(string(b))), 700, 12)
}

// taskAPI is an OpenAI-compatible endpoint whose replies depend on the
// task a request is about: it finds the task's question in the request's
// messages and passes the request to that question's llmtest server, which
// serves its own script in order. Trials running in parallel thus each get
// their replies, whatever the order of their requests, and every script
// must be consumed by the end of the test.
type taskAPI struct {
	URL string

	t       *testing.T
	servers map[string]*llmtest.Server // by question
}

func newTaskAPI(t *testing.T, scripts map[string][]llmtest.Reply) *taskAPI {
	t.Helper()
	a := &taskAPI{t: t, servers: map[string]*llmtest.Server{}}
	for q, replies := range scripts {
		a.servers[q] = llmtest.NewServer(t, replies...)
	}
	hs := httptest.NewServer(http.HandlerFunc(a.handle))
	t.Cleanup(hs.Close)
	a.URL = hs.URL + "/v1"
	return a
}

func (a *taskAPI) handle(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		a.t.Errorf("taskAPI: read request: %v", err)
		return
	}
	var body llmtest.RequestBody
	if err := json.Unmarshal(raw, &body); err != nil {
		a.t.Errorf("taskAPI: not a chat completion request: %v", err)
	}
	var to []string
	for q := range a.servers {
		for _, m := range body.Messages {
			if strings.Contains(m.Content, q) {
				to = append(to, q)
				break
			}
		}
	}
	if len(to) != 1 {
		a.t.Errorf("taskAPI: a request about %d scripted questions (%q), not one", len(to), to)
		http.Error(w, `{"error":{"message":"no script for this request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, a.servers[to[0]].URL+"/chat/completions", bytes.NewReader(raw))
	if err != nil {
		a.t.Errorf("taskAPI: %v", err)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if r.Context().Err() == nil {
			a.t.Errorf("taskAPI: pass the request on: %v", err)
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// counts is how many requests each question got.
func (a *taskAPI) counts() map[string]int {
	n := map[string]int{}
	for q, s := range a.servers {
		n[q] = len(s.Requests())
	}
	return n
}

func (a *taskAPI) requests(question string) []llmtest.Request {
	return a.servers[question].Requests()
}

// benchProcess is `ctxcode bench` run as a process of its own (the test
// binary as the CLI), to be signalled. One goroutine owns Wait: it sets
// err and closes done.
type benchProcess struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	err            error
}

func startBench(t *testing.T, args ...string) *benchProcess {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	p := &benchProcess{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitLines waits until the run's log has at least n complete lines; the
// process ending first fails the test.
func (p *benchProcess) waitLines(t *testing.T, dir string, n int) {
	t.Helper()
	path := filepath.Join(dir, bench.TrialsFile)
	deadline := time.After(120 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			t.Fatalf("ctxcode bench ended (%v) before %d trials had a line:\n%s", p.err, n, p.stderr.String())
		case <-deadline:
			t.Fatalf("no %d trial lines after 120s:\n%s", n, p.stderr.String())
		case <-tick.C:
			if b, err := os.ReadFile(path); err == nil && bytes.Count(b, []byte("\n")) >= n {
				return
			}
		}
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// settleContainers waits until the containers of pid have not changed
// for a second (for at most 30s).
func settleContainers(t *testing.T, cli *client.Client, pid int) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	prev, since, start := containersOf(t, cli, pid), time.Now(), time.Now()
	for time.Since(since) < time.Second && time.Since(start) < 30*time.Second {
		<-tick.C
		if cur := containersOf(t, cli, pid); !slices.Equal(cur, prev) {
			prev, since = cur, time.Now()
		}
	}
}

// containersOf lists the containers, running or not, labelled with the
// owner pid.
func containersOf(t *testing.T, cli *client.Client, pid int) []string {
	t.Helper()
	byPID := filters.NewArgs(filters.Arg("label", sandbox.LabelPID+"="+strconv.Itoa(pid)))
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: byPID})
	require.NoError(t, err)
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID[:12])
	}
	slices.Sort(ids)
	return ids
}
