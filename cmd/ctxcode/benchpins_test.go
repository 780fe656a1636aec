package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// readSpec reads run.json of the run in dir.
func readSpec(t *testing.T, dir string) bench.Spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, bench.SpecFile))
	require.NoError(t, err)
	var spec bench.Spec
	require.NoError(t, json.Unmarshal(b, &spec))
	return spec
}

// TestBenchResumeRefusesAChangedPin: run.json pins what decides a run's
// results, and a resume that would change any of it is refused (exit 2,
// before any kernel starts) with the difference named: the memory limit,
// --parallel, the ctxcode version. --force discards the run and starts
// again with the new configuration.
//
// It fails on main: run.json held no limits and no --parallel, so a
// resume with --memory 4g ran on under 4g; another ctxcode version only
// warned.
func TestBenchResumeRefusesAChangedPin(t *testing.T) {
	requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	args := func(more ...string) []string {
		return append([]string{"bench", "--model", "reference", "--conditions", "B,D", "--tier", "s", "--task", "s-t1-1",
			"--parallel", "1", "--out", out}, more...)
	}
	got := runCLI(t, "", args()...)
	require.Equal(t, exitOK, got.code, got.stderr)

	spec := readSpec(t, out)
	assert.Equal(t, bench.FormatVersion, spec.Format)
	assert.Equal(t, "docker", spec.Sandbox.Kind)
	assert.Equal(t, int64(2<<30), spec.Sandbox.Memory)
	assert.Equal(t, "none", spec.Sandbox.Network)
	assert.Equal(t, 1.0, spec.Sandbox.CPUs)
	assert.Equal(t, int64(256), spec.Sandbox.Pids)
	assert.Equal(t, 1, spec.Parallel)
	assert.Equal(t, "python-driver "+kernel.DriverVersion(), spec.Runtime.Driver)
	assert.True(t, strings.HasPrefix(spec.Runtime.ImageID, "sha256:"), spec.Runtime.ImageID)
	require.Len(t, spec.Conditions, 2)
	for _, c := range spec.Conditions {
		assert.Len(t, c.FirstRequest, 64, "condition %s", c.Name)
	}
	assert.NotEqual(t, spec.Conditions[0].FirstRequest, spec.Conditions[1].FirstRequest, "B and D frame the prefix differently")
	log, err := os.ReadFile(filepath.Join(out, bench.TrialsFile))
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		more []string
		want string
	}{
		{"memory", []string{"--memory", "4g", "--resume"}, "memory (--memory): 2g in the run, 4g now"},
		{"memory without --resume", []string{"--memory", "4g"}, "memory (--memory): 2g in the run, 4g now"},
		{"cpus and pids", []string{"--cpus", "0.5", "--pids", "64", "--resume"}, "cpus (--cpus): 1 in the run, 0.5 now\n  pids (--pids): 256 in the run, 64 now"},
		{"network", []string{"--network", "bridge", "--resume"}, "network (--network): none in the run, bridge now"},
		{"parallel", []string{"--parallel", "2", "--resume"}, "parallel (--parallel): 1 in the run, 2 now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", args(tc.more...)...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, "cannot be resumed with this one")
			assert.Contains(t, got.stderr, tc.want)
			assert.Contains(t, got.stderr, "--force")
			after, err := os.ReadFile(filepath.Join(out, bench.TrialsFile))
			require.NoError(t, err)
			assert.Equal(t, string(log), string(after), "nothing ran")
		})
	}

	t.Run("ctxcode version", func(t *testing.T) {
		path := filepath.Join(out, bench.SpecFile)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.WriteFile(path, b, 0o644) })
		old := strings.Replace(string(b), `"ctxcode_version": "`+version+`"`, `"ctxcode_version": "v0.0.1"`, 1)
		require.NotEqual(t, string(b), old)
		require.NoError(t, os.WriteFile(path, []byte(old), 0o644))
		got := runCLI(t, "", args("--resume")...)
		assert.Equal(t, exitUsage, got.code, got.stderr)
		assert.Contains(t, got.stderr, "ctxcode version: v0.0.1 in the run, "+version+" now")
	})

	got = runCLI(t, "", args("--memory", "4g", "--force")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "memory (--memory): 2g in the run, 4g now", "--force says what it discards")
	assert.Equal(t, int64(4<<30), readSpec(t, out).Sandbox.Memory)
	assert.Len(t, readTrials(t, out), 2, "the run started again")
}

// TestBenchResumeRefusesChangedRules: a condition's first request is
// pinned by its hash, so a prefix whose rules changed (its cells did not,
// so its own hash did not) cannot resume a run it started; the rules of
// each condition's request are hashed as the agent renders them.
//
// It fails on main: the prefix's hash covers its cells' code only, and
// the run resumed under the new rules.
func TestBenchResumeRefusesChangedRules(t *testing.T) {
	requirePython(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tmp := t.TempDir()
	src, err := os.ReadFile("../../testdata/usertasks/prefix.py")
	require.NoError(t, err)
	prefix := filepath.Join(tmp, "prefix.py")
	require.NoError(t, os.WriteFile(prefix, src, 0o644))
	out := filepath.Join(tmp, "run")
	args := []string{"bench", "--sandbox", "local", "--model", "reference", "--tasks", "../../testdata/usertasks/tasks.jsonl",
		"--data", "../../testdata/usertasks/data", "--prefix", prefix, "--conditions", "B,D", "--task", "rainy-readings",
		"--parallel", "1", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	was := readSpec(t, out)
	assert.Equal(t, "local", was.Sandbox.Kind)
	assert.Zero(t, was.Sandbox.Memory, "a local kernel has no memory limit of ctxcode's")
	assert.True(t, strings.HasPrefix(was.Runtime.Interpreter, "local /"), was.Runtime.Interpreter)
	assert.Empty(t, was.Runtime.ImageID)

	changed := strings.Replace(string(src), "# rules: The data is loaded:", "# rules: Never print a whole list. The data is loaded:", 1)
	require.NotEqual(t, string(src), changed)
	require.NoError(t, os.WriteFile(prefix, []byte(changed), 0o644))
	got = runCLI(t, "", args...)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, "condition B: first request sha256 "+was.Conditions[0].FirstRequest[:12]+" in the run")
	assert.Contains(t, got.stderr, "condition D: first request sha256 "+was.Conditions[1].FirstRequest[:12]+" in the run")
	assert.NotContains(t, got.stderr, "prefix weather (sha256", "the prefix's cells did not change")
	assert.Len(t, readTrials(t, out), 2, "nothing ran")

	require.NoError(t, os.WriteFile(prefix, src, 0o644))
	got = runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "resuming: 2 of 2 trials already have a result")
}

// TestBenchPinsSampling: run.json records how an API model is sampled, as
// the requests carry it (temperature 0, greedy; the --sample-seed), and a
// resume with another seed is refused.
//
// It fails on main: run.json held no temperature, and the seed was not
// named apart ("models: [...]").
func TestBenchPinsSampling(t *testing.T) {
	requireDocker(t)
	data := pmData(t)
	tasks := builtinTasks(t, data)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	srv := llmtest.NewServer(t, answerReply(t, tasks["s-t1-1"].Gold))
	out := filepath.Join(t.TempDir(), "run")
	args := func(more ...string) []string {
		return append([]string{"bench", "--model", "m", "--base-url", srv.URL, "--data", data, "--conditions", "D",
			"--task", "s-t1-1", "--parallel", "1", "--out", out}, more...)
	}
	got := runCLI(t, "", args("--sample-seed", "7")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.NotNil(t, reqs[0].Body.Seed)
	assert.Equal(t, 7, *reqs[0].Body.Seed)
	require.NotNil(t, reqs[0].Body.Temperature)
	assert.Less(t, *reqs[0].Body.Temperature, 1e-30, "greedy")

	m := readSpec(t, out).Models
	require.Len(t, m, 1)
	require.NotNil(t, m[0].Temperature)
	assert.Zero(t, *m[0].Temperature)
	require.NotNil(t, m[0].Seed)
	assert.Equal(t, 7, *m[0].Seed)

	got = runCLI(t, "", args("--sample-seed", "8", "--resume")...)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, "model m: sampling seed (--sample-seed) 7 in the run, 8 now")
}
