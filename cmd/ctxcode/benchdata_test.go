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
)

// TestBenchTasksWithTheirOwnData: ctxcode bench --tasks over a file whose
// tasks each bring their own table (a CSV and a JSON-lines file), without
// --data and --prefix: every condition answers every task, run.json pins
// both folders, a second run resumes with nothing to do, and one after a
// table changed is refused (exit 2), naming its folder.
func TestBenchTasksWithTheirOwnData(t *testing.T) {
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			if sb == "docker" {
				requireDocker(t)
			}
			testBenchOwnData(t, sb)
		})
	}
}

func testBenchOwnData(t *testing.T, sb string) {
	dir := t.TempDir()
	write := func(rel, text string) {
		path := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write("tables/a/sales.csv", "region,units\nnorth,3\nsouth,5\nnorth,4\n")
	write("tables/b/events.jsonl", `{"kind": "login"}`+"\n"+`{"kind": "click"}`+"\n"+`{"kind": "login"}`+"\n")
	write("tasks.jsonl", strings.Join([]string{
		`{"id": "units", "question": "How many units were sold?", "answer_type": "integer", "gold": 12, "data": "tables/a",` +
			` "solution": "import csv\nANSWER(sum(int(r['units']) for r in csv.DictReader(open('data/sales.csv'))))"}`,
		`{"id": "logins", "question": "How many logins are there?", "answer_type": "integer", "gold": 2, "data": "tables/b",` +
			` "solution": "import json\nANSWER(sum(json.loads(l)['kind'] == 'login' for l in open('data/events.jsonl') if l.strip()))"}`,
		`{"id": "kinds", "question": "How many kinds of event are there?", "answer_type": "integer", "gold": 2, "data": "tables/b"}`, // no solution
	}, "\n")+"\n")
	out := filepath.Join(dir, "run")
	args := []string{"bench", "--sandbox", sb, "--timeout", "5m", "--model", "reference", "--tasks", filepath.Join(dir, "tasks.jsonl"),
		"--conditions", "A,B,B0,C,D", "--parallel", "2", "--out", out}

	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	for _, c := range []string{"A", "B", "B0", "C", "D"} {
		assert.Regexp(t, `(?m)^`+c+`\s+2/2\s+100%`, got.stdout, "condition %s", c)
	}
	assert.Contains(t, got.stderr, "reference: 1 of 3 tasks have no solution: skipped")
	assert.Len(t, readTrials(t, out), 10)
	rep := runCLI(t, "", "report", out)
	require.Equal(t, exitOK, rep.code, rep.stderr)
	assert.NotContains(t, rep.stderr, "have no line yet", "the skipped task is no missing trial")
	b, err := os.ReadFile(filepath.Join(out, bench.SpecFile))
	require.NoError(t, err)
	var spec bench.Spec
	require.NoError(t, json.Unmarshal(b, &spec))
	require.Len(t, spec.DataFolders, 2)
	assert.Equal(t, []string{"tables/a", "tables/b"}, []string{spec.DataFolders[0].Name, spec.DataFolders[1].Name})
	for _, f := range spec.DataFolders {
		src, err := os.ReadFile(filepath.Join(out, f.Prefix))
		require.NoError(t, err)
		assert.Equal(t, sb == "docker", strings.Contains(string(src), "import pandas"),
			"DataFrames in the kernel image, records on this host (no pandas): %s", src)
		assert.FileExists(t, filepath.Join(out, f.Control))
	}

	got = runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stderr, "10 of 10 trials already have a result")
	assert.Len(t, readTrials(t, out), 10, "nothing ran again")

	write("tables/b/events.jsonl", `{"kind": "login"}`+"\n")
	got = runCLI(t, "", args...)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, "data folder tables/b: sha256")
	assert.Len(t, readTrials(t, out), 10)
}
