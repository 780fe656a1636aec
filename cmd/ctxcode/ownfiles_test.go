package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
)

// TestReportNeverReplacesTheUsersFiles: report replaces report.md,
// report.html and the notebooks only while they are its own (marked) and
// unchanged; a file it did not write, or one changed since, stops it
// before anything is written (exit 2, the file named, what to do said),
// and --force overwrites it. --md and --html naming one file, or a file of
// the run, are errors.
//
// It fails on the code before: report.md and report.html in the run were
// replaced whoever wrote them, and so was every notebook.
func TestReportNeverReplacesTheUsersFiles(t *testing.T) {
	run := copyDir(t, reportFixture)
	md, html := filepath.Join(run, bench.ReportMarkdown), filepath.Join(run, bench.ReportHTML)

	// A report.md of the user's.
	require.NoError(t, os.WriteFile(md, []byte("# my notes on this run\n"), 0o644))
	got := runCLI(t, "", "report", run)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Equal(t, "ctxcode: report: "+md+" exists and was not written by ctxcode, so it is not replaced: move it away, or pass --force to overwrite it\n", got.stderr)
	assertFile(t, md, "# my notes on this run\n")
	assert.NoFileExists(t, html, "refused before anything is written")
	require.NoError(t, os.Remove(md))

	// Its own files, unchanged, are replaced.
	got = runCLI(t, "", "report", run, "--notebooks")
	require.Equal(t, exitOK, got.code, got.stderr)
	got = runCLI(t, "", "report", run, "--notebooks")
	require.Equal(t, exitOK, got.code, got.stderr)
	for _, p := range []string{md, html} {
		o, err := bench.OriginOf(p)
		require.NoError(t, err)
		assert.Equal(t, bench.Generated, o, p)
	}

	// A report.html the user changed.
	b, err := os.ReadFile(html)
	require.NoError(t, err)
	edited := string(b) + "<!-- my remark -->\n"
	require.NoError(t, os.WriteFile(html, []byte(edited), 0o644))
	got = runCLI(t, "", "report", run)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, html+" exists and was changed since ctxcode wrote it, so it is not replaced: move it away, or pass --force")
	assertFile(t, html, edited)

	// A notebook the user changed (saved by Jupyter, say), and one of
	// the user's in its place.
	nb := filepath.Join(run, bench.NotebookDir, "reference.B.s-t1-1.r1.ipynb")
	nbEdited := editNotebook(t, nb)
	theirs := filepath.Join(run, bench.NotebookDir, "reference.D.s-t1-1.r1.ipynb")
	require.NoError(t, os.WriteFile(theirs, []byte(`{"cells": []}`), 0o644))
	got = runCLI(t, "", "report", run, "--notebooks")
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Equal(t, "ctxcode: report: 3 files exist that ctxcode did not write or that were changed since, so they are not replaced:\n"+
		"  "+html+" (changed since ctxcode wrote it)\n"+
		"  "+nb+" (changed since ctxcode wrote it)\n"+
		"  "+theirs+" (not written by ctxcode)\n"+
		"move them away, or pass --force to overwrite them\n", got.stderr, "every file refused is named at once")
	assertFile(t, nb, nbEdited)
	got = runCLI(t, "", "report", run, "--html", filepath.Join(t.TempDir(), "r.html"))
	require.Equal(t, exitOK, got.code, "without --notebooks the notebooks are not touched: %s", got.stderr)
	assertFile(t, nb, nbEdited)

	// --force overwrites them all.
	got = runCLI(t, "", "report", run, "--notebooks", "--force")
	require.Equal(t, exitOK, got.code, got.stderr)
	for _, p := range []string{html, nb, theirs} {
		o, err := bench.OriginOf(p)
		require.NoError(t, err)
		assert.Equal(t, bench.Generated, o, p)
	}

	// --md and --html naming one file, or a file of the run.
	out := t.TempDir()
	require.NoError(t, os.Symlink(out, filepath.Join(out, "again")))
	log, err := os.ReadFile(filepath.Join(run, bench.TrialsFile))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"one file", []string{"--md", filepath.Join(out, "r"), "--html", filepath.Join(out, "r")},
			"report: the Markdown and the HTML would both be written to " + filepath.Join(out, "r") + ": give --md and --html a file each"},
		{"one file, spelled two ways", []string{"--md", filepath.Join(out, "r"), "--html", filepath.Join(out, "again", ".", "r")}, "give --md and --html a file each"},
		{"the default's path", []string{"--html", md}, "give --md and --html a file each"},
		{"the run's log, forced", []string{"--md", filepath.Join(run, bench.TrialsFile), "--force"}, "is a file of the run in " + run + ": name another file"},
		{"a trajectory", []string{"--html", filepath.Join(run, bench.TrajectoryDir, "x.html")}, "is a file of the run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", append([]string{"report", run}, tc.args...)...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.NoFileExists(t, filepath.Join(out, "r"))
		})
	}
	assertFile(t, filepath.Join(run, bench.TrialsFile), string(log))
}

// TestBenchForceKeepsTheUsersFiles: bench --force over a run with another
// configuration removes what the run and its report made, and keeps the
// user's files in its folders (a notebook of their own, notes among the
// trajectories, a notebook they edited), naming them.
//
// It fails on the code before, which removed notebooks/ and trajectories/
// whole.
func TestBenchForceKeepsTheUsersFiles(t *testing.T) {
	requireDocker(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--model", "reference", "--conditions", "B", "--tier", "s", "--task", "s-t1-1", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	got = runCLI(t, "", "report", out, "--notebooks")
	require.Equal(t, exitOK, got.code, got.stderr)
	old := readTrials(t, out)[0]

	mine := map[string]string{
		filepath.Join(bench.NotebookDir, "analysis.ipynb"): `{"cells": []}`,
		filepath.Join(bench.TrajectoryDir, "notes.txt"):    "what I saw",
		"notes.txt": "mine",
	}
	for rel, text := range mine {
		require.NoError(t, os.WriteFile(filepath.Join(out, rel), []byte(text), 0o644))
	}
	edited := filepath.Join(out, bench.NotebookDir, "reference.B.s-t1-1.r1.ipynb")
	mine[filepath.Join(bench.NotebookDir, "reference.B.s-t1-1.r1.ipynb")] = editNotebook(t, edited)

	got = runCLI(t, "", append(args, "--reps", "2", "--force")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "kept what the old run did not write, or what was changed since it was written: ")
	for rel, text := range mine {
		assertFile(t, filepath.Join(out, rel), text)
		if rel != "notes.txt" {
			assert.Contains(t, got.stderr, rel)
		}
	}
	assert.NoFileExists(t, filepath.Join(out, bench.ReportMarkdown), "the old run's report went with it")
	assert.NoFileExists(t, filepath.Join(out, bench.ReportHTML))
	trials := readTrials(t, out)
	require.Len(t, trials, 2, "the run started again with two reps")
	assert.True(t, trials[0].Started.After(old.Started), "the old trial's line is gone")
	for _, tr := range trials {
		assertWholeTrajectory(t, filepath.Join(out, tr.Trajectory))
	}
}

// editNotebook changes a notebook as a user in Jupyter would (a cell's
// source, the file saved again) and returns its new text.
func editNotebook(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var nb map[string]any
	require.NoError(t, json.Unmarshal(b, &nb))
	cells := nb["cells"].([]any)
	cells[0].(map[string]any)["source"] = []any{"# my own note\n"}
	b, err = json.MarshalIndent(nb, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return string(b)
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, want, string(b), "%s is as it was", path)
}
