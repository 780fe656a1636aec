package bench

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/session"
)

// TestGradeRecordParts grades a record task's answer part by part into the
// trial line and the trajectory's grade event.
func TestGradeRecordParts(t *testing.T) {
	task := &datasets.Task{ID: "stats", AnswerType: datasets.Record, Decimals: 2,
		Gold: map[string]any{"mean": 3.25, "p_value": 0.04, "kind": "normal"}}
	for _, tc := range []struct {
		name    string
		res     agent.Result
		correct bool
		verdict agent.Verdict
		parts   map[string]string
		extra   []string
	}{
		{"right with an extra part", agent.Result{Status: agent.Answered, AnswerSource: agent.Executed, Answer: `{"mean": 3.2531, "p_value": 0.04, "kind": "Normal", "std": 1.2}`},
			true, agent.GradeCorrect, map[string]string{"mean": "right", "p_value": "right", "kind": "right"}, []string{"std"}},
		{"stated text form, one part wrong, one missing", agent.Result{Status: agent.Answered, AnswerSource: agent.Stated, Answer: `@mean[3.25], @p_value[0.06]`},
			false, agent.GradeWrong, map[string]string{"mean": "right", "p_value": "wrong", "kind": "missing"}, nil},
		{"unexecuted keeps its parts", agent.Result{Status: agent.Answered, AnswerSource: agent.Unexecuted, Answer: `{"mean": 3.25, "p_value": 0.04, "kind": "normal"}`},
			false, agent.GradeUnexecuted, map[string]string{"mean": "right", "p_value": "right", "kind": "right"}, nil},
		{"no answer", agent.Result{Status: agent.MaxTurns},
			false, agent.GradeNoAnswer, map[string]string{"mean": "missing", "p_value": "missing", "kind": "missing"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			res := tc.res
			g := grade(task, &res, agent.NewTrajectory(&buf))
			assert.Equal(t, tc.verdict, g.Verdict, g.Reason)
			var tr Trial
			fill(&tr, &res)
			assert.Equal(t, tc.correct, tr.Correct)
			assert.Equal(t, tc.parts, tr.Parts)
			assert.Equal(t, tc.extra, tr.ExtraParts)

			line, err := json.Marshal(tr)
			require.NoError(t, err)
			var back Trial
			require.NoError(t, json.Unmarshal(line, &back))
			assert.Equal(t, tc.parts, back.Parts)

			var ev session.GradeEvent // the event's fields are the line's
			require.NoError(t, json.Unmarshal(buf.Bytes(), &ev), buf.String())
			assert.Equal(t, tc.parts, ev.Parts)
			assert.Equal(t, tc.extra, ev.ExtraParts)
		})
	}

	// Another task has no parts, and its line none.
	res := agent.Result{Status: agent.Answered, AnswerSource: agent.Executed, Answer: "42"}
	grade(&datasets.Task{ID: "n", AnswerType: datasets.Integer, Gold: 42}, &res, nil)
	var tr Trial
	fill(&tr, &res)
	assert.True(t, tr.Correct)
	line, err := json.Marshal(tr)
	require.NoError(t, err)
	assert.NotContains(t, string(line), "parts")

	// A line written before records reads as it did.
	var old Trial
	require.NoError(t, json.Unmarshal([]byte(`{"model":"m","condition":"B","task":"t","rep":1,"attempt":1,"status":"answered","class":"model","answer":42,"correct":true,"answer_right":true,"verdict":"correct"}`), &old))
	assert.Nil(t, old.Parts)
	assert.True(t, old.Correct)
}
