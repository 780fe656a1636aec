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
	reports "github.com/ctxcode/ctxcode/report"
)

// TestReportRecordsEndToEnd: a task file of record tasks, run by bench with
// the reference model, is graded part by part in the trial lines, and
// report shows ABQ, PSAQ and USAQ, and --by a meta field.
func TestReportRecordsEndToEnd(t *testing.T) {
	requirePython(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tmp := t.TempDir()
	tasks := filepath.Join(tmp, "tasks.jsonl")
	require.NoError(t, os.WriteFile(tasks, []byte(strings.Join([]string{
		`{"id": "right", "question": "How many stations, and the first's name?", "answer_type": "record", "gold_code": "ANSWER({'n': len(stations), 'first': stations[0]['name']})", "solution": "ANSWER({'n': len(stations), 'first': stations[0]['name'].upper(), 'extra': 1})", "meta": {"level": "easy", "concepts": ["counting"]}}`,
		`{"id": "half", "question": "How many stations, and 7?", "answer_type": "record", "gold": {"n": 6, "m": 7.25}, "decimals": {"m": 2}, "solution": "ANSWER('@n[' + str(len(stations)) + '], @m[0]')", "meta": {"level": "hard", "concepts": ["counting", "guessing"]}}`,
	}, "\n")+"\n"), 0o644))
	out := filepath.Join(tmp, "run")
	got := runCLI(t, "", "bench", "--sandbox", "local", "--model", "reference", "--tasks", tasks,
		"--data", "../../testdata/usertasks/data", "--prefix", "../../testdata/usertasks/prefix.py", "--conditions", "B,C", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, "PSAQ   USAQ")

	_, trials, err := bench.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, trials, 4)
	for _, tr := range trials {
		switch tr.Task {
		case "right":
			assert.True(t, tr.Correct, "%s: %s", tr.Key, tr.GradeReason)
			assert.Equal(t, map[string]string{"n": "right", "first": "right"}, tr.Parts)
			assert.Equal(t, []string{"extra"}, tr.ExtraParts)
		case "half":
			assert.False(t, tr.Correct)
			assert.Equal(t, map[string]string{"n": "right", "m": "wrong"}, tr.Parts, "%s: %s", tr.Key, tr.GradeReason)
		}
	}

	rep := runCLI(t, "", "report", "--json", "--by", "level", out)
	require.Equal(t, exitOK, rep.code, rep.stderr)
	var r reports.Report
	require.NoError(t, json.Unmarshal([]byte(rep.stdout), &r))
	for _, row := range r.Rows {
		require.NotNil(t, row.Records, row.Condition)
		assert.InDelta(t, 0.5, row.Records.ABQ.Est, 1e-12)
		assert.InDelta(t, 0.75, row.Records.PSAQ.Est, 1e-12)
		assert.InDelta(t, 0.75, row.Records.USAQ.Est, 1e-12)
	}
	require.NotNil(t, r.By)
	assert.Len(t, r.By.Rows, 4, "two values × two conditions")
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "## Answers by part")
	assert.Contains(t, string(md), "## By level")

	bad := runCLI(t, "", "report", "--by", "topic", "--force", out)
	assert.Equal(t, exitUsage, bad.code)
	assert.Contains(t, bad.stderr, `no task has the meta field "topic"; the fields there are: concepts, level`)
}
