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

func TestReportBadInputExitsTwo(t *testing.T) {
	run := copyDir(t, reportFixture)
	existing := filepath.Join(t.TempDir(), "there.md")
	require.NoError(t, os.WriteFile(existing, []byte("mine"), 0o644))
	badPrices := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(badPrices, []byte("[1]"), 0o644))
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
		{"existing md", []string{"report", run, "--md", existing}, "--force"},
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
