package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const reportFixture = "../../testdata/report/run"

func TestReportWritesBothFiles(t *testing.T) {
	run := copyDir(t, reportFixture)
	got := runCLI(t, "", "report", run, "--notebooks")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "report.md")
	md, err := os.ReadFile(filepath.Join(run, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "## The attribution, paired by task")
	assert.Contains(t, string(md), "](trajectories/reference.A.s-t1-1.r1.jsonl)", "links relative to the report's folder")
	assert.Contains(t, string(md), "](notebooks/reference.A.s-t1-1.r1.ipynb)")
	html, err := os.ReadFile(filepath.Join(run, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), "<html")
	assert.Contains(t, string(html), `href="notebooks/reference.A.s-t1-1.r1.ipynb">notebook</a>`, "the HTML links the notebooks too")
	nbs, err := filepath.Glob(filepath.Join(run, "notebooks", "*.ipynb"))
	require.NoError(t, err)
	assert.Len(t, nbs, 30, "one notebook per trial")
	var nb map[string]any
	b, err := os.ReadFile(nbs[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &nb))
	assert.EqualValues(t, 4, nb["nbformat"])

	// Run again: the report's own files in the run are replaced.
	again := runCLI(t, "", "report", run)
	require.Equal(t, 0, again.code, again.stderr)

	// --json prints every number; --md elsewhere links back into the run.
	out := filepath.Join(t.TempDir(), "r.md")
	js := runCLI(t, "", "report", "--json", "--md", out, "--html", filepath.Join(t.TempDir(), "r.html"), run)
	require.Equal(t, 0, js.code, js.stderr)
	var rep struct {
		Rows []struct {
			Condition string `json:"condition"`
			Correct   int    `json:"correct"`
		} `json:"rows"`
		Layers []any `json:"layers"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &rep))
	assert.Len(t, rep.Rows, 5)
	assert.Len(t, rep.Layers, 4)
	md2, err := os.ReadFile(out)
	require.NoError(t, err)
	rel, err := filepath.Rel(filepath.Dir(out), run)
	require.NoError(t, err)
	assert.Contains(t, string(md2), "]("+filepath.ToSlash(rel)+"/trajectories/")
}

// TestReportTwoRuns: the report of two runs, written in the first, says
// which sections are of the first run only and links the second run's
// trajectories from its own per-task table.
func TestReportTwoRuns(t *testing.T) {
	one, two := copyDir(t, reportFixture), copyDir(t, reportFixture)
	got := runCLI(t, "", "report", one, two)
	require.Equal(t, 0, got.code, got.stderr)
	b, err := os.ReadFile(filepath.Join(one, "report.md"))
	require.NoError(t, err)
	md := string(b)
	assert.Contains(t, md, "## The attribution of run 1 only, paired by task")
	i := strings.Index(md, "## Per task, run 2")
	require.GreaterOrEqual(t, i, 0, md)
	rel, err := filepath.Rel(one, two)
	require.NoError(t, err)
	link := "](" + filepath.ToSlash(rel) + "/trajectories/reference.A.s-t1-1.r1.jsonl)"
	assert.Contains(t, md[i:], link, "run 2's trajectories, relative to the report")
	_, err = os.Stat(filepath.Join(one, filepath.FromSlash(link[2:len(link)-1])))
	assert.NoError(t, err, "the link leads to the file")
	page, err := os.ReadFile(filepath.Join(one, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), `<section id="tasks-2">`)
	assert.Contains(t, string(page), `href="#t-2~reference.A.s-t1-1.r1"`)
}

func TestReportBadInputExitsTwo(t *testing.T) {
	run := copyDir(t, reportFixture)
	existing := filepath.Join(t.TempDir(), "there.md")
	require.NoError(t, os.WriteFile(existing, []byte("mine"), 0o644))
	badPrices := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(badPrices, []byte("[1]"), 0o644))
	misspelled := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(misspelled, []byte(`{"reference": {"inptu": 1, "output": 2}}`), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no run", []string{"report"}, "give the run directory"},
		{"not a run", []string{"report", t.TempDir()}, "not a run directory"},
		{"missing", []string{"report", "/nonexistent/run"}, "no such folder"},
		{"three runs", []string{"report", run, run, run}, "unexpected argument"},
		{"unknown baseline", []string{"report", run, "--baseline", "Z"}, "no condition Z"},
		{"bad prices", []string{"report", run, "--prices", badPrices}, "expected a JSON object"},
		{"misspelled price", []string{"report", run, "--prices", misspelled}, `model reference: unknown field "inptu" (the fields are input, cached_input, output`},
		{"existing md", []string{"report", run, "--md", existing}, "--force"},
		{"by a field no task has", []string{"report", run, "--by", "level"}, "--by level: the run's tasks have no meta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, 2, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.msg)
		})
	}
	b, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "a file of the user's is never overwritten without --force")
	assert.True(t, strings.HasPrefix(runCLI(t, "", "report", run, "--md", existing, "--force").stdout, "wrote "))
}

// --html elsewhere links the notebooks back into the run.
func TestReportHTMLElsewhereLinksNotebooks(t *testing.T) {
	run := copyDir(t, reportFixture)
	out := filepath.Join(t.TempDir(), "r.html")
	got := runCLI(t, "", "report", run, "--notebooks", "--html", out, "--md", filepath.Join(t.TempDir(), "r.md"))
	require.Equal(t, 0, got.code, got.stderr)
	html, err := os.ReadFile(out)
	require.NoError(t, err)
	rel, err := filepath.Rel(filepath.Dir(out), run)
	require.NoError(t, err)
	assert.Contains(t, string(html), `href="`+filepath.ToSlash(rel)+`/notebooks/reference.A.s-t1-1.r1.ipynb"`)
}

// A trajectory path outside the run directory is a warning and no
// notebook: the report reads nothing outside the run.
func TestReportNotebooksStayInTheRun(t *testing.T) {
	run := copyDir(t, reportFixture)
	const inside = "trajectories/reference.A.s-t1-1.r1.jsonl"
	b, err := os.ReadFile(filepath.Join(run, inside))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(run), "outside.jsonl"), b, 0o644))
	trials := filepath.Join(run, "trials.jsonl")
	log, err := os.ReadFile(trials)
	require.NoError(t, err)
	require.Contains(t, string(log), `"`+inside+`"`)
	require.NoError(t, os.WriteFile(trials, []byte(strings.ReplaceAll(string(log), `"`+inside+`"`, `"../outside.jsonl"`)), 0o644))

	got := runCLI(t, "", "report", run, "--notebooks")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stderr, "ctxcode: report: trial reference/A/s-t1-1/r1: the trajectory ../outside.jsonl is outside the run directory: not read; no notebook")
	_, err = os.Stat(filepath.Join(run, "notebooks", "outside.ipynb"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no notebook of the file outside the run")
	nbs, err := filepath.Glob(filepath.Join(run, "notebooks", "*.ipynb"))
	require.NoError(t, err)
	assert.Len(t, nbs, 29, "every other trial's notebook")
}

// A model of the run that --prices has no price for gets a note.
func TestReportPricesNoteUnpricedModels(t *testing.T) {
	run := copyDir(t, reportFixture)
	prices := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}`), 0o644))
	got := runCLI(t, "", "report", run, "--prices", prices)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stderr, "ctxcode: note: no price for model reference in --prices: no money shown for it")
}

// The help texts say what the commands do.
func TestReportAndNotebookHelp(t *testing.T) {
	assert.Contains(t, reportUsage, "cached_input left out is the\ninput price")
	assert.Contains(t, reportUsage, "the Markdown's per-task table, the HTML's transcripts")
	assert.Contains(t, notebookUsage, "Trajectories record the prefix's cells as the kernel built them, with\ntheir outputs")
	assert.NotContains(t, notebookUsage, "not its outputs")
}
