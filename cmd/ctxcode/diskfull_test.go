package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestBenchTornAppend: on a real 2 MiB tmpfs that holds the run's log, a
// resume whose next line does not fit is torn by the full disk: the run
// stops (exit 1) saying what happened and that it resumes once there is
// room, trials.jsonl ends with its last whole line, and after freeing
// space the same command finishes the run with every key once.
//
// The trajectories folder is another (large) disk, bound over the run's
// own, so that only the log's lines meet the full disk; the log is cut to
// its first half (as a kill leaves it), its last line padded so that the
// log's last page has room for only part of the next line, which is torn.
//
// It fails on main: the run stopped on "write trials.jsonl: no space left
// on device" without saying that the line was cut off again, that the
// trial runs again, or to free space.
func TestBenchTornAppend(t *testing.T) {
	requirePython(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	disk := testenv.Tmpfs(t, 2<<20)
	out := filepath.Join(disk, "run")
	var ids []string
	for tmpl := 1; tmpl <= 4; tmpl++ {
		for k := 1; k <= 3; k++ {
			ids = append(ids, fmt.Sprintf("s-t%d-%d", tmpl, k))
		}
	}
	args := []string{"bench", "--sandbox", "local", "--model", "reference", "--conditions", "B", "--tier", "s",
		"--task", strings.Join(ids, ","), "--parallel", "1", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)

	// The trajectories on a disk of their own.
	trajs := filepath.Join(out, bench.TrajectoryDir)
	big := t.TempDir()
	require.NoError(t, syscall.Mount(big, trajs, "", syscall.MS_BIND, ""))
	t.Cleanup(func() { _ = syscall.Unmount(trajs, syscall.MNT_DETACH) })

	// Keep the first half of the lines, the last of them padded with
	// spaces (JSON allows them) so that the log's last page has room for
	// only part of any dropped line.
	path := filepath.Join(out, bench.TrialsFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1] // after the last newline
	const page, room = 4096, 128
	keep := len(lines) / 2
	shortest := len(lines[keep])
	for _, l := range lines[keep:] {
		shortest = min(shortest, len(l))
	}
	require.Greater(t, shortest, room+64, "a dropped line must not fit in the room left")
	size := len(strings.Join(lines[:keep], ""))
	pad := ((page-room-size%page)%page + page) % page
	last := lines[keep-1]
	lines[keep-1] = strings.TrimSuffix(last, "\n") + strings.Repeat(" ", pad) + "\n"
	require.Equal(t, page-room, len(strings.Join(lines[:keep], ""))%page)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines[:keep], "")), 0o644))

	// Fill the disk: the log's last page has room for part of a line.
	filler, err := os.Create(filepath.Join(disk, "filler"))
	require.NoError(t, err)
	chunk := make([]byte, page)
	for {
		if _, err := filler.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	require.NoError(t, filler.Close())

	got = runCLI(t, "", args...)
	assert.Equal(t, exitInfra, got.code, got.stderr)
	assert.Contains(t, got.stderr, "its line was not written")
	assert.Contains(t, got.stderr, "no space left on device")
	assert.Contains(t, got.stderr, "trials.jsonl ends with its last whole line, and the trial runs again when the run resumes")
	assert.Contains(t, got.stderr, "free some space on the disk of "+out)
	assert.Contains(t, got.stderr, "run the same command again")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(after), "\n"), "trials.jsonl ends with a whole line")
	assert.Len(t, readTrials(t, out), keep, "the line that did not fit is gone whole, and none followed it")

	require.NoError(t, os.Remove(filepath.Join(disk, "filler")))
	got = runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, fmt.Sprintf("%d of %d trials have a result", len(ids), len(ids)))
	trials := readTrials(t, out)
	seen := map[bench.Key]int{}
	for _, tr := range trials {
		seen[tr.Key]++
		assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
	}
	assert.Len(t, trials, len(ids), "one line per key")
	assert.Len(t, seen, len(ids))
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s has %d lines", k, n)
	}
}
