package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/internal/testenv"
)

// TestBenchFullDisk: a run whose folder's disk fills up is an error, not
// a finished run. On a real 32 KiB tmpfs, six trials cannot all keep their
// trajectories: the trial whose trajectory could not be written whole gets
// an infra line (so it runs again), the run stops and exits 1, saying what
// happened and what to do, and no trajectory left in place is empty or
// cut. Once there is room, the same command finishes the run.
//
// It fails on the code before: five of six trajectories were renamed into
// place empty, every line was a model result, and the run exited 0 with
// "6 of 6 trials have a result".
func TestBenchFullDisk(t *testing.T) {
	requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	disk := testenv.Tmpfs(t, 32<<10)
	out := filepath.Join(disk, "run")
	args := []string{"bench", "--model", "reference", "--conditions", "B", "--tier", "s", "--parallel", "1",
		"--task", "s-t1-1,s-t1-2,s-t2-1,s-t2-2,s-t3-1,s-t3-2", "--out", out}

	got := runCLI(t, "", args...)
	assert.Equal(t, exitInfra, got.code, got.stderr)
	assert.Contains(t, got.stderr, "no space left on device")
	assert.Contains(t, got.stderr, "run the same command again")
	assert.NotContains(t, got.stdout, "6 of 6 trials have a result")
	trials := completeTrials(t, out)
	var lost []bench.Trial
	for _, tr := range trials {
		if tr.Class == bench.ClassInfra {
			lost = append(lost, tr)
			assert.Contains(t, tr.Error, "no space left on device", tr.Key.String())
			assert.Empty(t, tr.Trajectory, "%s: a trajectory not written is not named", tr.Key)
			continue
		}
		assertWholeTrajectory(t, filepath.Join(out, tr.Trajectory))
	}
	require.NotEmpty(t, lost, "a trial whose trajectory could not be written is an infra failure")
	assert.Less(t, len(bench.Final(trials)), 6, "the run stopped at the full disk")
	assertNoBrokenTrajectories(t, out)

	// Room again. The report of the stopped run links no trajectory for
	// the lost trial; the same command runs it and the rest.
	testenv.ResizeTmpfs(t, disk, 1<<20)
	rep := runCLI(t, "", "report", out, "--notebooks")
	require.Equal(t, exitOK, rep.code, rep.stderr)
	md, err := os.ReadFile(filepath.Join(out, bench.ReportMarkdown))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "](.)", "no link to a trajectory that was not recorded")
	assert.Contains(t, rep.stderr, "no trajectory was recorded for this trial; no notebook")
	got = runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, "6 of 6 trials have a result")
	final := bench.Final(readTrials(t, out))
	require.Len(t, final, 6)
	for _, tr := range final {
		assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
		assert.True(t, tr.Correct, tr.Key.String())
		assertWholeTrajectory(t, filepath.Join(out, tr.Trajectory))
	}
	for _, tr := range lost {
		assert.Greater(t, bench.Final(readTrials(t, out))[indexOf(final, tr.Key)].Attempt, tr.Attempt, "%s ran again", tr.Key)
	}
	assertNoBrokenTrajectories(t, out)
}

func indexOf(trials []bench.Trial, k bench.Key) int {
	for i, tr := range trials {
		if tr.Key == k {
			return i
		}
	}
	return -1
}

// assertWholeTrajectory: the file is a trajectory written to its end: every
// line an event, the last the grade.
func assertWholeTrajectory(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	last := ""
	n := 0
	for sc.Scan() {
		var e struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "%s line %d", path, n+1)
		last = e.Type
		n++
	}
	require.NoError(t, sc.Err())
	assert.Positive(t, n, "%s is empty", path)
	assert.Equal(t, "grade", last, "%s ends with its grade", path)
}

// assertNoBrokenTrajectories: no empty trajectory is in place, and no
// temporary one is left behind.
func assertNoBrokenTrajectories(t *testing.T, run string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(run, bench.TrajectoryDir))
	require.NoError(t, err)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		assert.Positive(t, info.Size(), "%s is empty", e.Name())
		assert.False(t, strings.HasSuffix(e.Name(), ".partial"), "%s is left behind", e.Name())
	}
}
