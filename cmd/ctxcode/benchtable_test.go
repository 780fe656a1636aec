package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	reports "github.com/ctxcode/ctxcode/report"
)

// The figures of bench's end-of-run table and of the report are one
// aggregation's (bench.Summarize): for the same run, every figure the
// table prints is the report's.

// TestBenchTableMatchesReport: a real run of the reference model (local
// kernels; answers stated in A, executed in B and C; kernels waited for)
// prints a table, and --json rows on resume, whose every figure is the
// report's of the run.
func TestBenchTableMatchesReport(t *testing.T) {
	requirePython(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--sandbox", "local", "--model", "reference", "--conditions", "A,B,C", "--tier", "s",
		"--task", "s-t1-1,s-t3-2,s-t4-1", "--parallel", "2", "--out", out}
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	rep := reportOf(t, out)
	assertTableIsReport(t, got.stdout, rep)

	again := runCLI(t, "", append(args, "--json")...)
	require.Equal(t, exitOK, again.code, again.stderr)
	assertJSONRowsAreReport(t, again.stdout, rep)
}

// TestBenchTableMatchesReportOnFixture: the report's fixture run, changed
// so that every line of the table has something to say (a literal answer,
// a kernel death, pool waits, and token counts estimated in some
// conditions only, not the first), prints the report's figures.
func TestBenchTableMatchesReportOnFixture(t *testing.T) {
	run := copyDir(t, reportFixture)
	path := filepath.Join(run, bench.TrialsFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []string
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var tr map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &tr))
		cond, status := tr["condition"], tr["status"]
		switch {
		case cond == "A":
			tr["estimated"] = false // only later rows estimate: the note is still printed
		case cond == "B" && status == "answered":
			tr["pool_wait_ms"] = 1000 + 250*i
		case cond == "D" && tr["correct"] == true && tr["task"] == "s-t1-1":
			tr["literal"] = true
		case cond == "B0" && tr["task"] == "s-t4-2":
			tr["status"], tr["death"], tr["correct"], tr["answer_right"], tr["verdict"] = "kernel_died", "oom", false, false, "no_answer"
			tr["answer"], tr["answer_source"] = nil, ""
		}
		nb, err := json.Marshal(tr)
		require.NoError(t, err)
		lines = append(lines, string(nb))
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))

	spec, trials, err := bench.ReadDir(run)
	require.NoError(t, err)
	final := bench.Final(trials)
	outcome := &bench.Outcome{Total: len(final), Final: final} // all from before, but for the infra failure that runs again
	for _, tr := range final {
		if tr.Class != bench.ClassInfra {
			outcome.Skipped++
		}
	}
	rep := reportOf(t, run)
	var text, rows bytes.Buffer
	require.NoError(t, bench.WriteSummary(&text, outcome, *spec, run, false))
	require.NoError(t, bench.WriteSummary(&rows, outcome, *spec, run, true))
	for _, want := range []string{"literal answer(s)", "kernel death(s)", "unexecuted answer(s)", "waiting for a pooled kernel", "estimated by the tokenizer"} {
		assert.Contains(t, text.String(), want, "the fixture has something for each line")
	}
	assertTableIsReport(t, text.String(), rep)
	assertJSONRowsAreReport(t, rows.String(), rep)
}

// reportOf is `ctxcode report --json` of run.
func reportOf(t *testing.T, run string) reports.Report {
	t.Helper()
	got := runCLI(t, "", "report", "--json", run)
	require.Equal(t, exitOK, got.code, got.stderr)
	var rep reports.Report
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &rep))
	require.NotEmpty(t, rep.Rows)
	return rep
}

var (
	tableRow   = regexp.MustCompile(`(?m)^(\S+)\s+(\d+)/(\d+)\s+(\d+)%\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+([\d.]+)s$`)
	tableEmpty = regexp.MustCompile(`(?m)^(\S+)\s+-\s+-\s+(\d+)\s+-\s+-\s+-\s+-$`)
	unexecLine = regexp.MustCompile(`(?m)^(\S+)\s+(\d+) unexecuted answer\(s\)`)
	literLine  = regexp.MustCompile(`(?m)^(\S+)\s+(\d+) literal answer\(s\), (\d+) of them right`)
	deathLine  = regexp.MustCompile(`(?m)^(\S+)\s+(\d+) kernel death\(s\)`)
	waitLine   = regexp.MustCompile(`(?m)^waiting for a pooled kernel, apart from wall \(mean per trial\): (.*)$`)
)

// assertTableIsReport checks every figure of bench's table (one model) is
// the report's, printed as the table prints it.
func assertTableIsReport(t *testing.T, table string, rep reports.Report) {
	t.Helper()
	rows := map[string]reports.Row{}
	for _, r := range rep.Rows {
		rows[r.Condition] = r
	}
	seen := 0
	for _, m := range tableRow.FindAllStringSubmatch(table, -1) {
		r, ok := rows[m[1]]
		require.True(t, ok, "the table's row %q is a row of the report", m[0])
		seen++
		want := []string{m[1], strconv.Itoa(r.Correct), strconv.Itoa(r.Graded), fmt.Sprintf("%.0f", 100*r.Accuracy.Est), strconv.Itoa(r.Infra),
			fmt.Sprintf("%.2f", r.Turns.Mean), fmt.Sprintf("%.0f", r.Context.Mean), fmt.Sprintf("%.0f", r.Output.Mean), fmt.Sprintf("%.1f", r.WallMS.Mean/1000)}
		assert.Equal(t, want, m[1:], "condition %s: correct/graded, accuracy, infra, turns, context, output, wall", m[1])
	}
	for _, m := range tableEmpty.FindAllStringSubmatch(table, -1) {
		seen++
		assert.Equal(t, 0, rows[m[1]].Graded, m[0])
		assert.Equal(t, strconv.Itoa(rows[m[1]].Infra), m[2], m[0])
	}
	assert.Equal(t, len(rep.Rows), seen, "one row a condition, as in the report:\n%s", table)

	count := func(re *regexp.Regexp) map[string]string {
		got := map[string]string{}
		for _, m := range re.FindAllStringSubmatch(table, -1) {
			got[m[1]] = strings.Join(m[2:], "/")
		}
		return got
	}
	unexec, literal, deaths := map[string]string{}, map[string]string{}, map[string]string{}
	estimated := false
	for _, r := range rep.Rows {
		if r.Sources.Unexecuted > 0 {
			unexec[r.Condition] = strconv.Itoa(r.Sources.Unexecuted)
		}
		if r.Sources.Literal > 0 {
			literal[r.Condition] = fmt.Sprintf("%d/%d", r.Sources.Literal, r.Sources.LiteralRight)
		}
		if r.KernelDied > 0 {
			deaths[r.Condition] = strconv.Itoa(r.KernelDied)
		}
		estimated = estimated || r.Estimated
	}
	assert.Equal(t, unexec, count(unexecLine), "unexecuted answers")
	assert.Equal(t, literal, count(literLine), "literal answers, and how many were right")
	assert.Equal(t, deaths, count(deathLine), "kernel deaths")
	assert.Equal(t, estimated, strings.Contains(table, "token counts estimated by the tokenizer"), "the estimated note")

	if m := waitLine.FindStringSubmatch(table); m != nil {
		for _, w := range strings.Split(m[1], ", ") {
			cond, secs, _ := strings.Cut(w, " ")
			mean := 0.0
			if d := rows[cond].PoolWaitMS; d != nil {
				mean = d.Mean
			}
			assert.Equal(t, fmt.Sprintf("%.2fs", mean/1000), secs, "condition %s: the wait for a pooled kernel", cond)
		}
	}
}

// assertJSONRowsAreReport checks every figure of bench's --json rows is
// the report's, to the bit.
func assertJSONRowsAreReport(t *testing.T, lines string, rep reports.Report) {
	t.Helper()
	var rows []bench.Row
	dec := json.NewDecoder(strings.NewReader(lines))
	for dec.More() {
		var r bench.Row
		require.NoError(t, dec.Decode(&r))
		rows = append(rows, r)
	}
	require.Len(t, rows, len(rep.Rows))
	for i, r := range rows {
		w := rep.Rows[i]
		wait := 0.0
		if w.PoolWaitMS != nil {
			wait = w.PoolWaitMS.Mean
		}
		want := bench.Row{Model: w.Model, Condition: w.Condition, Counts: w.Counts,
			Accuracy: w.Accuracy.Est, BudgetStops: w.BudgetStops, KernelDied: w.KernelDied,
			Sources: bench.Sources{Executed: w.Sources.Executed, Stated: w.Sources.Stated, Unexecuted: w.Sources.Unexecuted,
				None: w.Sources.None, Literal: w.Sources.Literal, LiteralRight: w.Sources.LiteralRight, UnexecutedRight: r.UnexecutedRight},
			Turns: w.Turns.Mean, ContextTokens: w.Context.Mean, OutputTokens: w.Output.Mean, CachedTokens: w.Cached.Mean,
			ReasoningTokens: w.Reasoning.Mean, WallMS: w.WallMS.Mean, KernelMS: r.KernelMS, PoolWaitMS: wait, Estimated: w.Estimated}
		assert.Equal(t, want, r, "row %d (the report has no figure for unexecuted answers that were right, nor for kernel time)", i)
	}
}
