package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
)

// recordRun is a run of record tasks (and one that is not), by hand:
//
//	task  parts  level  concepts   B                     D
//	r1    3      easy   a, b       correct 3/3           unexecuted, 3/3 said (0 count)
//	r2    2      hard   b          wrong 1/2             correct 2/2
//	r3    1      hard   -          wrong 0/1 (missing)   infra
//	p4    int    -      a          correct               wrong
func recordRun(t *testing.T) *Run {
	t.Helper()
	rec := func(id string, parts []string, meta map[string]any) datasets.Task {
		gold := map[string]any{}
		for i, p := range parts {
			gold[p] = float64(i)
		}
		return datasets.Task{ID: id, Question: id + "?", AnswerType: datasets.Record, Gold: gold, Meta: meta}
	}
	spec := bench.Spec{Format: bench.FormatVersion, Version: "test", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Models: []bench.ModelInfo{{Name: "m"}}, Conditions: []bench.ConditionInfo{{Name: "B"}, {Name: "D"}},
		Tasks: bench.TaskSource{Kind: "file", File: "tasks.jsonl"}, Reps: 1,
		TaskList: []datasets.Task{
			rec("r1", []string{"x", "y", "z"}, map[string]any{"level": "easy", "concepts": []any{"a", "b"}}),
			rec("r2", []string{"x", "y"}, map[string]any{"level": "hard", "concepts": []any{"b"}}),
			rec("r3", []string{"z"}, map[string]any{"level": "hard"}),
			{ID: "p4", Question: "p4?", AnswerType: datasets.Integer, Gold: 4, Meta: map[string]any{"concepts": []any{"a"}}},
		}}
	trial := func(cond, task, verdict string, parts map[string]string) bench.Trial {
		tr := bench.Trial{Key: bench.Key{Model: "m", Condition: cond, Task: task, Rep: 1}, Attempt: 1, Status: "answered", Class: bench.ClassModel,
			Answer: json.RawMessage("null"), AnswerSource: "executed", Verdict: verdict, Correct: verdict == "correct", AnswerRight: verdict == "correct",
			Parts: parts, Turns: 1, ContextTokens: 100, OutputTokens: 10}
		if verdict == "unexecuted" {
			tr.AnswerSource, tr.AnswerRight = "unexecuted", true
		}
		return tr
	}
	infra := trial("D", "r3", "no_answer", nil)
	infra.Class, infra.Status = bench.ClassInfra, "model_failed"
	return &Run{Dir: "records", Spec: spec, Lines: 8, Final: []bench.Trial{
		trial("B", "r1", "correct", map[string]string{"x": "right", "y": "right", "z": "right"}),
		trial("B", "r2", "wrong", map[string]string{"x": "right", "y": "wrong"}),
		trial("B", "r3", "wrong", map[string]string{"z": "missing"}),
		trial("B", "p4", "correct", nil),
		trial("D", "r1", "unexecuted", map[string]string{"x": "right", "y": "right", "z": "right"}),
		trial("D", "r2", "correct", map[string]string{"x": "right", "y": "right"}),
		infra,
		trial("D", "p4", "wrong", nil),
	}}
}

func TestRecordScores(t *testing.T) {
	rep, err := Build([]*Run{recordRun(t)}, Options{})
	require.NoError(t, err)
	require.Len(t, rep.Rows, 2)
	b, d := rep.Rows[0], rep.Rows[1]
	require.NotNil(t, b.Records)
	require.NotNil(t, d.Records)

	assert.Equal(t, b.Accuracy, b.Records.ABQ, "ABQ is the accuracy")
	assert.InDelta(t, 0.5, b.Records.ABQ.Est, 1e-12)
	assert.InDelta(t, (1+0.5+0+1)/4.0, b.Records.PSAQ.Est, 1e-12)
	assert.InDelta(t, 5/7.0, b.Records.USAQ.Est, 1e-12)
	assert.Equal(t, 7, b.Records.Parts)
	assert.Equal(t, 5, b.Records.PartsRight)
	assert.Equal(t, 4, b.Records.USAQ.Tasks, "the interval is over tasks, not parts")
	assert.Equal(t, 4, b.Records.PSAQ.Tasks)
	for _, iv := range []Interval{b.Records.PSAQ, b.Records.USAQ} {
		assert.Less(t, iv.Lo, iv.Est)
		assert.Greater(t, iv.Hi, iv.Est)
	}

	// D: the unexecuted answer has no part right, the infra trial is out.
	assert.InDelta(t, 1/3.0, d.Records.ABQ.Est, 1e-12)
	assert.InDelta(t, 1/3.0, d.Records.PSAQ.Est, 1e-12)
	assert.InDelta(t, 2/6.0, d.Records.USAQ.Est, 1e-12)
	assert.Equal(t, 3, d.Records.PSAQ.Tasks)

	// bench's table shows the same estimates.
	rows := bench.Summarize(recordRun(t).Spec, recordRun(t).Final)
	assert.InDelta(t, b.Records.PSAQ.Est, rows[0].Records.PSAQ, 1e-12)
	assert.InDelta(t, b.Records.USAQ.Est, rows[0].Records.USAQ, 1e-12)

	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep))
	assert.Contains(t, md.String(), "## Answers by part")
	assert.Contains(t, md.String(), "| model | condition | ABQ | PSAQ | USAQ | parts right |")
	assert.Contains(t, md.String(), "| m | B | 2/4 = 50% [")
	assert.Contains(t, md.String(), "| 5/7 |")
	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, []*Run{recordRun(t)}))
	assert.Contains(t, page.String(), `<section id="records">`)
	assert.Contains(t, page.String(), "<td class=\"n\">5/7</td>")
	js, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"records":{"abq":{"est":0.5,`)
	t.Log("\n" + md.String())
}

func TestBreakdownByMeta(t *testing.T) {
	rep, err := Build([]*Run{recordRun(t)}, Options{By: "level"})
	require.NoError(t, err)
	require.NotNil(t, rep.By)
	assert.Equal(t, "level", rep.By.Field)
	type key struct{ value, cond string }
	got := map[key]GroupRow{}
	var order []string
	for _, g := range rep.By.Rows {
		got[key{g.Value, g.Condition}] = g
		if len(order) == 0 || order[len(order)-1] != g.Value {
			order = append(order, g.Value)
		}
	}
	assert.Equal(t, []string{"easy", "hard", NoValue}, order, "values sorted, the tasks without the field last")
	hard := got[key{"hard", "B"}]
	assert.Equal(t, 2, hard.Tasks)
	assert.Equal(t, 2, hard.Graded)
	assert.Equal(t, 0, hard.Correct)
	require.NotNil(t, hard.Records)
	assert.InDelta(t, 0.25, hard.Records.PSAQ.Est, 1e-12)
	assert.InDelta(t, 1/3.0, hard.Records.USAQ.Est, 1e-12)
	hardD := got[key{"hard", "D"}]
	assert.Equal(t, 1, hardD.Graded, "the infra trial is left out")
	assert.Equal(t, 1, hardD.Infra)
	none := got[key{NoValue, "B"}]
	assert.Equal(t, 1, none.Tasks)
	assert.InDelta(t, 1, none.Accuracy.Est, 1e-12)

	// A list puts a task in each of its groups.
	rep, err = Build([]*Run{recordRun(t)}, Options{By: "concepts"})
	require.NoError(t, err)
	tasks := map[string]int{}
	for _, g := range rep.By.Rows {
		if g.Condition == "B" {
			tasks[g.Value] = g.Tasks
		}
	}
	assert.Equal(t, map[string]int{"a": 2, "b": 2, NoValue: 1}, tasks)

	var md bytes.Buffer
	require.NoError(t, Markdown(&md, rep))
	assert.Contains(t, md.String(), "## By concepts")
	assert.Contains(t, md.String(), "| concepts | tasks | model | condition | accuracy | PSAQ | USAQ |")
	var page bytes.Buffer
	require.NoError(t, HTML(&page, rep, []*Run{recordRun(t)}))
	assert.Contains(t, page.String(), `<section id="by">`)
	js, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"by":{"field":"concepts","rows":[{"value":"a",`)

	// A field no task has names the fields there are.
	_, err = Build([]*Run{recordRun(t)}, Options{By: "difficulty"})
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, ie.Msg, `no task has the meta field "difficulty"; the fields there are: concepts, level`)
	// A run without meta says so.
	r, err := Load(fixture)
	require.NoError(t, err)
	_, err = Build([]*Run{r}, Options{By: "level"})
	require.ErrorAs(t, err, &ie)
	assert.True(t, strings.Contains(ie.Msg, "have no meta"), ie.Msg)
}

func TestNoRecordsNoScores(t *testing.T) {
	rep := buildFixture(t, Options{})
	for _, r := range rep.Rows {
		assert.Nil(t, r.Records)
	}
	assert.Nil(t, rep.By)
}

// TaskShare of 0/1 values is TaskAccuracy, to the bit.
func TestTaskShareOfBooleansIsTaskAccuracy(t *testing.T) {
	correct := []bool{true, false, true, true, false, false, true}
	groups := []int{0, 0, 1, 2, 2, 3, 4}
	values := make([]float64, len(correct))
	for i, c := range correct {
		if c {
			values[i] = 1
		}
	}
	assert.Equal(t, TaskAccuracy(correct, groups, NewRand(3), 500), TaskShare(values, groups, NewRand(3), 500))
}
