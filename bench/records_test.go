package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
)

func TestSummaryOfRecords(t *testing.T) {
	spec := Spec{Models: []ModelInfo{{Name: "m"}}, Conditions: []ConditionInfo{{Name: "B"}},
		TaskList: []datasets.Task{
			{ID: "r1", AnswerType: datasets.Record, Gold: map[string]any{"a": 1.0, "b": 2.0}},
			{ID: "r2", AnswerType: datasets.Record, Gold: map[string]any{"a": 1.0, "b": 2.0, "c": "x"}},
			{ID: "n", AnswerType: datasets.Integer, Gold: 1},
		}}
	line := func(task, verdict string, parts map[string]string) Trial {
		return Trial{Key: Key{Model: "m", Condition: "B", Task: task, Rep: 1}, Class: ClassModel, Status: "answered", AnswerSource: "executed",
			Verdict: verdict, Correct: verdict == "correct", Parts: parts, WallMS: 1000}
	}
	final := []Trial{
		line("r1", "wrong", map[string]string{"a": "right", "b": "wrong"}),
		line("r2", "wrong", map[string]string{"a": "right", "b": "right", "c": "missing"}),
		line("n", "correct", nil),
	}
	rows := Summarize(spec, final)
	require.Len(t, rows, 1)
	rs := rows[0].Records
	require.NotNil(t, rs)
	assert.Equal(t, 6, rs.Parts)
	assert.Equal(t, 4, rs.PartsRight)
	assert.InDelta(t, (0.5+2/3.0+1)/3, rs.PSAQ, 1e-12)
	assert.InDelta(t, 4/6.0, rs.USAQ, 1e-12)

	var text, js bytes.Buffer
	out := &Outcome{Total: 3, Final: final}
	require.NoError(t, WriteSummary(&text, out, spec, "RUN", false))
	head, rest, _ := strings.Cut(text.String(), "\n")
	assert.True(t, strings.HasSuffix(head, "wall   PSAQ   USAQ"), head)
	assert.Contains(t, rest, "B             1/3         33%      0    0.00               0              0     1.0s    72%    67%\n")
	require.NoError(t, WriteSummary(&js, out, spec, "RUN", true))
	var row map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &row))
	assert.Equal(t, 6.0, row["records"].(map[string]any)["parts"])

	// Without a record task, no columns and no scores.
	spec.TaskList = spec.TaskList[2:]
	rows = Summarize(spec, final[2:])
	assert.Nil(t, rows[0].Records)
	text.Reset()
	require.NoError(t, WriteSummary(&text, &Outcome{Total: 1, Final: final[2:]}, spec, "RUN", false))
	assert.NotContains(t, text.String(), "PSAQ")
	js.Reset()
	require.NoError(t, WriteSummary(&js, &Outcome{Total: 1, Final: final[2:]}, spec, "RUN", true))
	assert.NotContains(t, js.String(), "records")
}
