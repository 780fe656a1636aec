package bench

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

// TestReadTasksRecords reads record tasks, their per-part grading and meta
// into the task a trial grades against, and back through a task line.
func TestReadTasksRecords(t *testing.T) {
	path := writeTaskFile(t, "tasks.jsonl", strings.Join([]string{
		`{"id": "stats", "question": "Mean and p?", "answer_type": "record", "gold": {"mean": 3.25, "p_value": 0.0412, "kind": "normal", "normal": true}, "decimals": {"mean": 2, "p_value": 4}, "tolerance": {"mean": 0.01}, "meta": {"level": "hard", "concepts": ["Correlation Analysis", "Summary Statistics"], "n": {"any": [1]}}}`,
		`{"id": "one", "question": "Count?", "answer_type": "record", "gold": {"count": 3}, "decimals": 2, "tolerance": 0.001, "accept": [{"count": 4}]}`,
		`{"id": "plain", "question": "Count?", "answer_type": "integer", "gold": 3, "meta": {"level": "easy"}}`,
	}, "\n")+"\n")
	tasks, err := ReadTasks(path)
	require.NoError(t, err)
	require.Len(t, tasks, 3)
	stats := tasks[0]
	assert.Equal(t, map[string]any{"mean": 3.25, "p_value": 0.0412, "kind": "normal", "normal": true}, stats.Gold)
	assert.Equal(t, map[string]int{"mean": 2, "p_value": 4}, stats.PartDecimals)
	assert.Equal(t, map[string]float64{"mean": 0.01}, stats.PartTolerance)
	assert.Equal(t, "hard", stats.Meta["level"])
	assert.Equal(t, map[string]any{"any": []any{1.0}}, stats.Meta["n"], "anything inside meta")
	assert.Equal(t, 2, tasks[1].Decimals)
	assert.Equal(t, []any{map[string]any{"count": 4.0}}, tasks[1].Accept)
	assert.Equal(t, map[string]any{"level": "easy"}, tasks[2].Meta)

	g, err := ResolveGold(context.Background(), nil, nil, stats, taskCellOpts)
	require.NoError(t, err)
	assert.Equal(t, stats.PartDecimals, g.PartDecimals)
	assert.Equal(t, stats.PartTolerance, g.PartTolerance)
	assert.Equal(t, stats.Meta, g.Meta)
	a := datasets.Assess(g, `@mean[3.2531], @p_value[0.04123], @kind[Normal], @normal[True]`)
	assert.True(t, a.Correct, a.Reason)
	a = datasets.Assess(g, `{"mean": 3.25, "p_value": 0.05, "normal": true}`)
	assert.Equal(t, map[string]datasets.PartVerdict{"mean": "right", "p_value": "wrong", "kind": "missing", "normal": "right"}, a.Parts)

	// A task line written back reads the same.
	var b strings.Builder
	for _, task := range tasks {
		line, err := json.Marshal(task)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	assert.Contains(t, b.String(), `"decimals":{"mean":2,"p_value":4}`)
	again, err := ReadTasks(writeTaskFile(t, "again.jsonl", b.String()))
	require.NoError(t, err)
	for i := range again {
		again[i].Line = tasks[i].Line
	}
	assert.Equal(t, tasks, again)
}

func TestResolveGoldRecord(t *testing.T) {
	p := loadUserTasksPrefix(t)
	k := kerneltest.Python(t, userTasksData)
	task := UserTask{ID: "rec", Question: "q?", AnswerType: datasets.Record, Line: 3,
		GoldCode: "ANSWER({'n': len(stations), 'first': stations[0]['name'], 'many': len(stations) > 3})", PartDecimals: map[string]int{"n": 1}}
	got, err := ResolveGold(context.Background(), k, p, task, taskCellOpts)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": 6.0, "first": "Blindern", "many": true}, got.Gold)
	assert.Equal(t, map[string]int{"n": 1}, got.PartDecimals)

	for _, c := range []struct {
		name, code string
		parts      map[string]int
		want       string
	}{
		{"not a dict", "ANSWER(len(stations))", nil, "gold_code answered the number 6, which does not fit answer_type record"},
		{"nested", "ANSWER({'rows': stations[:1]})", nil, `part "rows" is an array of 1 element`},
		{"decimals of no part", "ANSWER({'n': len(stations)})", map[string]int{"m": 2}, `decimals names part "m", which the gold does not have (its parts: "n")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := kerneltest.Python(t, userTasksData)
			task := UserTask{ID: "bad", Question: "q?", AnswerType: datasets.Record, Line: 4, GoldCode: c.code, PartDecimals: c.parts}
			_, err := ResolveGold(context.Background(), k, p, task, taskCellOpts)
			var ge *GoldError
			require.ErrorAs(t, err, &ge)
			assert.Contains(t, err.Error(), "task bad (line 4): ")
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
