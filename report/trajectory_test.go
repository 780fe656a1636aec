package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schema1 holds trajectories of schema 1 as agent.Run wrote them before
// the schema moved to package session (testdata/trajectories/README.md).
const schema1 = "../testdata/trajectories/schema1"

// TestTrajectoryNotebookSchema1: each schema-1 trajectory, read through
// session.ReadTrajectory, gives the notebook the report's own reader gave
// before (the golden files were written by that code, not by -update).
func TestTrajectoryNotebookSchema1(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(schema1, "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 7)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			nb, err := TrajectoryNotebook(bytes.NewReader(b))
			require.NoError(t, err)
			golden(t, filepath.Join("notebooks", name+".ipynb"), nb)
		})
	}
}

// TestHTMLTranscriptsSchema1: the transcripts of the report fixture's run
// (schema-1 trajectories older still: no prefix results, no kernel
// results beside a cell's output) are the page's as the report's own
// reader wrote them before.
func TestHTMLTranscriptsSchema1(t *testing.T) {
	r, err := Load(fixture)
	require.NoError(t, err)
	rep, err := Build([]*Run{r}, Options{})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, HTML(&b, rep, []*Run{r}))
	page := b.String()
	i := strings.Index(page, `<section id="transcripts">`)
	require.Positive(t, i)
	j := strings.Index(page[i:], "</section>")
	require.Positive(t, j)
	golden(t, "transcripts.html", []byte(page[i:i+j+len("</section>")]+"\n"))
}

// TestTrajectoryNotebookSkipped: what the reader passed over (an unknown
// field, an unknown event kind, a run of a newer schema) does not stop
// the notebook, which says what it was, line by line, after the runs.
func TestTrajectoryNotebookSkipped(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(schema1, "reference-D.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines[0] = strings.Replace(lines[0], `"model":`, `"schema":9,"model":`, 1)
	lines[2] = strings.Replace(lines[2], `"turn":`, `"mood":"calm","turn":`, 1)
	lines = append(lines[:3], append([]string{`{"type":"thought","time":"2026-01-01T00:00:00Z","text":"hm"}` + "\n"}, lines[3:]...)...)
	nb, err := TrajectoryNotebook(strings.NewReader(strings.Join(lines, "")))
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "report", "notebooks", "reference-D.ipynb"))
	require.NoError(t, err)
	assert.Less(t, len(want), len(nb), "the same notebook and a note")
	for _, w := range []string{
		`"*Read past in the trajectory:*\n"`,
		`trajectory schema 9, newer than this version of ctxcode reads (1)`,
		`the field \"mood\" of call events, which this version of ctxcode does not know, is not shown (line 3)`,
		`events of kind \"thought\", which this version of ctxcode does not know, were skipped (line 4)`,
	} {
		assert.Contains(t, string(nb), w)
	}
}
