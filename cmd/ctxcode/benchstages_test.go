package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
)

// TestBenchStagesFlagsRefused: a bad --stages, --context or --window, and
// --stages with a task file, exit 2 before a run folder is made, saying
// what to give.
func TestBenchStagesFlagsRefused(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tasks := goldOnlyTasks(t, 1)
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"unknown policy", []string{"--context", "fold"}, `--context: unknown context policy "fold": expected none, elide, summarize or staged`},
		{"window 0", []string{"--context", "elide", "--window", "0"}, "--window 0: give the context window in tokens, 1 or more"},
		{"soft above hard", []string{"--context", "staged", "--soft", "0.9", "--hard", "0.5"}, "--context: the soft threshold 0.9 is above the hard one 0.5"},
		{"negative stages", []string{"--stages", "-1"}, "--stages -1: give the questions of a session, 1 to 100"},
		{"stages with a task file", []string{"--stages", "2", "--tasks", tasks, "--data", userData, "--prefix", userPrefix},
			"--stages cuts the built-in tasks into sessions, and --tasks brings its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"bench", "--model", "reference", "--sandbox", "local", "--out", out}, tc.flags...)
			o := runCLI(t, "", args...)
			assert.Equal(t, 2, o.code, o.stderr)
			assert.Contains(t, o.stderr, tc.want)
			assert.NoDirExists(t, out)
		})
	}
}

// TestBenchStagesReference: --stages with the reference model runs each
// session as one trial whose stages are all right, under the context
// policy --context gives, pinned in run.json.
func TestBenchStagesReference(t *testing.T) {
	requirePython(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	o := runCLI(t, "", "bench", "--model", "reference", "--sandbox", "local", "--tier", "s", "--stages", "3", "--task", "s-s3-1,s-s3-2",
		"--conditions", "D", "--context", "staged", "--window", "8000", "--out", out)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "D        2 session(s): 6 of the 6 stages asked right")
	spec, final, err := bench.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, spec.Sessions, 2)
	require.Len(t, spec.Conditions, 1)
	require.NotNil(t, spec.Conditions[0].Context)
	assert.Equal(t, bench.ContextInfo{Policy: "staged", Window: 8000, Soft: 0.6, Hard: 0.85, Recent: 0.3, MinRecent: 2}, *spec.Conditions[0].Context)
	require.Len(t, final, 2)
	for _, tr := range final {
		assert.True(t, strings.HasPrefix(tr.Task, "s-s3-"), tr.Task)
		assert.Equal(t, "staged", tr.Context)
		assert.Len(t, tr.Stages, 3)
		assert.True(t, tr.Correct, "%s: %s", tr.Key, tr.GradeReason)
	}
	for _, tr := range final {
		assert.FileExists(t, filepath.Join(out, tr.Trajectory))
	}
}
