package bench

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generatedFile is a file as ctxcode writes one: the mark, stamped.
func generatedFile(body string) []byte {
	return Stamp([]byte("<!-- " + GeneratedMark + " -->\n" + body))
}

func TestOriginOf(t *testing.T) {
	dir := t.TempDir()
	mine := generatedFile("# report\n")
	edited := append(bytes.Clone(mine), "my notes\n"...)
	// Text like a mark before the real one (a model's output quoted in a
	// notebook's cells, which come before its metadata).
	quoted := Stamp([]byte("cell: " + GeneratedMark + "\nmeta: " + GeneratedMark + "\n"))
	quotedAfter := Stamp([]byte("cell: " + generatedTag + strings.Repeat("ab", 32) + "\nmeta: " + GeneratedMark + "\n"))
	for _, tc := range []struct {
		name string
		b    []byte
		want Origin
	}{
		{"stamped", mine, Generated},
		{"stamped, then edited", edited, Changed},
		{"a mark never stamped", []byte("<!-- " + GeneratedMark + " -->\n"), Changed},
		{"no mark", []byte("# my own report\n"), Foreign},
		{"empty", nil, Foreign},
		{"a mark-like text before the mark", quoted, Generated},
		{"a mark-like text of other digits before the mark", quotedAfter, Generated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			require.NoError(t, os.WriteFile(path, tc.b, 0o644))
			got, err := OriginOf(path)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	got, err := OriginOf(filepath.Join(dir, "none"))
	require.NoError(t, err)
	assert.Equal(t, Missing, got)
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(filepath.Join(dir, "stamped"), link))
	got, err = OriginOf(link)
	require.NoError(t, err)
	assert.Equal(t, Foreign, got, "a link is never ctxcode's: it points at someone's file")
	got, err = OriginOf(dir)
	require.NoError(t, err)
	assert.Equal(t, Foreign, got)
	assert.Len(t, GeneratedMark, len(generatedTag)+64)
}

// Starting a run again (--force) removes what the old run made and
// nothing else: its log, its trajectories (named by its lines, or by its
// keys' names when a kill came between a trajectory and its line, whole or
// temporary), and the report's files as ctxcode wrote them; the user's
// files, and the report's files the user changed, stay, and the warning
// names them.
//
// It fails on the code before, which removed notebooks/ and trajectories/
// whole, and report.md and report.html whoever wrote them.
func TestRestartRemovesOnlyWhatTheRunMade(t *testing.T) {
	dir, logged := runOfOneTrial(t)
	write := func(rel string, b []byte) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), b, 0o644))
	}
	unlogged := TrajectoryPath(Key{"openai/gpt-4o-mini", "A", "s-t1-1", 1}, 2) // renamed, then killed before its line
	partial := TrajectoryPath(dirKey("s-t1-1"), 3) + tempSuffix
	gone := []string{SpecFile, TrialsFile, logged.Trajectory, unlogged, partial,
		ReportMarkdown, filepath.Join(NotebookDir, "reference.B.s-t1-1.r1.ipynb")}
	kept := []string{"notes.txt", ReportHTML, filepath.Join(NotebookDir, "reference.B.s-t1-1.r2.ipynb"),
		filepath.Join(NotebookDir, "analysis.ipynb"), filepath.Join(TrajectoryDir, "notes.txt"),
		filepath.Join(TrajectoryDir, "reference.B.s-t9-9.r1.jsonl")} // not a key of the run
	write(logged.Trajectory, []byte("{}\n"))
	write(unlogged, []byte("{}\n"))
	write(partial, []byte("{"))
	write(ReportMarkdown, generatedFile("# report\n"))
	write(filepath.Join(NotebookDir, "reference.B.s-t1-1.r1.ipynb"), generatedFile("{}"))
	write("notes.txt", []byte("mine"))
	write(ReportHTML, []byte("<p>my own page</p>"))
	write(filepath.Join(NotebookDir, "reference.B.s-t1-1.r2.ipynb"), append(generatedFile("{}"), "edited"...))
	write(filepath.Join(NotebookDir, "analysis.ipynb"), []byte("{}"))
	write(filepath.Join(TrajectoryDir, "notes.txt"), []byte("mine"))
	write(filepath.Join(TrajectoryDir, "reference.B.s-t9-9.r1.jsonl"), []byte("mine"))

	warn := startAgain(t, dir)
	for _, rel := range gone {
		if rel == SpecFile || rel == TrialsFile {
			continue // the new run's
		}
		assert.NoFileExists(t, filepath.Join(dir, rel))
	}
	assert.Equal(t, 2, readSpecFile(t, dir).Reps)
	assert.Empty(t, trialLines(t, dir))
	for _, rel := range kept {
		assert.FileExists(t, filepath.Join(dir, rel), "a file of the user's, or changed by the user, stays")
	}
	assert.Contains(t, warn, "kept what the old run did not write, or what was changed since it was written: ")
	for _, rel := range kept[1:] { // the run's folders; a file beside them is plainly the user's
		assert.Contains(t, warn, rel)
	}
	assert.NotContains(t, warn, " notes.txt", "only what is in the run's folders is named")

	// A run whose run.json does not read: what its lines name goes.
	require.NoError(t, os.WriteFile(filepath.Join(dir, SpecFile), []byte("{not json"), 0o644))
	startAgain(t, dir)
	for _, rel := range kept {
		assert.FileExists(t, filepath.Join(dir, rel))
	}
}

func TestRestartRemovesAnEmptyNotebooksFolder(t *testing.T) {
	dir, _ := runOfOneTrial(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, NotebookDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, NotebookDir, "reference.B.s-t1-1.r1.ipynb"), generatedFile("{}"), 0o644))
	warn := startAgain(t, dir)
	assert.NoDirExists(t, filepath.Join(dir, NotebookDir), "a folder the report made and left empty goes")
	assert.NotContains(t, warn, "kept")
}

// runOfOneTrial is a run directory of dirSpec with one trial's line.
func runOfOneTrial(t *testing.T) (string, Trial) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	l, err := Open(dir, dirSpec(), Continue, io.Discard)
	require.NoError(t, err)
	tr := dirTrial(dirKey("s-t1-1"), ClassModel, 1)
	require.NoError(t, l.Append(tr))
	require.NoError(t, l.Close())
	return dir, tr
}

// startAgain starts the run in dir again with two reps (--force), and
// returns the warnings.
func startAgain(t *testing.T, dir string) string {
	t.Helper()
	changed := dirSpec()
	changed.Reps = 2
	var warn bytes.Buffer
	l, err := Open(dir, changed, Restart, &warn)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	return warn.String()
}
