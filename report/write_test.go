package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
)

// fixtureCopy loads a copy of the fixture run, which the test may write
// into.
func fixtureCopy(t *testing.T) *Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.CopyFS(dir, os.DirFS(fixture)))
	r, err := Load(dir)
	require.NoError(t, err)
	return r
}

func TestWriteAndCheckOutputs(t *testing.T) {
	r := fixtureCopy(t)
	runs := []*Run{r}
	p := DefaultPaths(r.Dir)
	require.NoError(t, CheckOutputs(runs, p, true, false), "nothing is there yet")
	rep, err := Build(runs, Options{Notebooks: true})
	require.NoError(t, err)

	warnings, err := WriteNotebooks(r)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	nbs, err := filepath.Glob(filepath.Join(r.Dir, bench.NotebookDir, "*.ipynb"))
	require.NoError(t, err)
	assert.Len(t, nbs, len(r.Final), "one notebook per trial")

	require.NoError(t, Write(runs, rep, p))
	md, err := os.ReadFile(p.MD)
	require.NoError(t, err)
	assert.Contains(t, string(md), "](trajectories/reference.A.s-t1-1.r1.jsonl)", "links relative to the page's folder")
	html, err := os.ReadFile(p.HTML)
	require.NoError(t, err)
	assert.Contains(t, string(html), `href="notebooks/reference.A.s-t1-1.r1.ipynb"`)

	// Its own files, unchanged, a later report replaces.
	require.NoError(t, CheckOutputs(runs, p, true, false))

	// Elsewhere, the pages link back into the run.
	other := t.TempDir()
	elsewhere := Paths{MD: filepath.Join(other, "r.md"), HTML: filepath.Join(other, "r.html")}
	require.NoError(t, Write(runs, rep, elsewhere))
	md, err = os.ReadFile(elsewhere.MD)
	require.NoError(t, err)
	rel, err := filepath.Rel(other, r.Dir)
	require.NoError(t, err)
	assert.Contains(t, string(md), "]("+filepath.ToSlash(rel)+"/trajectories/")
}

func TestCheckOutputsRefuses(t *testing.T) {
	r := fixtureCopy(t)
	runs := []*Run{r}
	p := DefaultPaths(r.Dir)
	foreign := func(t *testing.T, path string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("mine\n"), 0o644))
	}
	refused := func(t *testing.T, err error, want ...string) {
		t.Helper()
		var ie *InputError
		require.True(t, errors.As(err, &ie), "want an *InputError, got %v", err)
		for _, w := range want {
			assert.Contains(t, ie.Msg, w)
		}
	}

	t.Run("a foreign file without force", func(t *testing.T) {
		foreign(t, p.MD)
		t.Cleanup(func() { _ = os.Remove(p.MD) })
		refused(t, CheckOutputs(runs, p, false, false), p.MD+" exists and was", "move it away, or pass --force")
		assert.NoError(t, CheckOutputs(runs, p, false, true), "force overwrites it")
	})
	t.Run("a foreign notebook, only with notebooks", func(t *testing.T) {
		nb := filepath.Join(r.Dir, filepath.FromSlash(NotebookPath(r.Final[0].Trajectory)))
		foreign(t, nb)
		t.Cleanup(func() { _ = os.Remove(nb) })
		assert.NoError(t, CheckOutputs(runs, p, false, false))
		refused(t, CheckOutputs(runs, p, true, false), nb)
	})
	t.Run("several at once", func(t *testing.T) {
		foreign(t, p.MD)
		foreign(t, p.HTML)
		t.Cleanup(func() { _ = os.Remove(p.MD); _ = os.Remove(p.HTML) })
		refused(t, CheckOutputs(runs, p, false, false), "2 files exist", p.MD, p.HTML)
	})
	t.Run("one file for both", func(t *testing.T) {
		refused(t, CheckOutputs(runs, Paths{MD: p.MD, HTML: p.MD}, false, true), "would both be written to")
	})
	t.Run("a file of the run", func(t *testing.T) {
		for _, name := range []string{bench.SpecFile, bench.TrialsFile, filepath.Join(bench.TrajectoryDir, "x.md")} {
			refused(t, CheckOutputs(runs, Paths{MD: filepath.Join(r.Dir, name), HTML: p.HTML}, false, true),
				"--md "+filepath.Join(r.Dir, name)+" is a file of the run")
		}
	})
	t.Run("a folder", func(t *testing.T) {
		refused(t, CheckOutputs(runs, Paths{MD: p.MD, HTML: t.TempDir()}, false, true), "is a folder")
	})
	for _, name := range []string{"report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(r.Dir, name))
		if err == nil {
			assert.False(t, strings.Contains(string(b), "mine"), "nothing was written")
		}
	}
}

func TestWriteNotebooksWarns(t *testing.T) {
	r := fixtureCopy(t)
	gone := r.Final[0]
	require.NoError(t, os.Remove(filepath.Join(r.Dir, filepath.FromSlash(gone.Trajectory))))
	warnings, err := WriteNotebooks(r)
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "trial "+gone.Key.String())
	assert.Contains(t, warnings[0], "no notebook")
	_, err = os.Stat(filepath.Join(r.Dir, filepath.FromSlash(NotebookPath(gone.Trajectory))))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
