package datasets

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAssessRecord(t *testing.T) {
	task := Task{ID: "r1", AnswerType: Record, Decimals: 2,
		Gold:          map[string]any{"mean": 3.25, "p_value": 0.0412, "kind": "normal", "normal": true},
		PartDecimals:  map[string]int{"p_value": 4},
		PartTolerance: map[string]float64{}}
	type parts = map[string]PartVerdict
	all := func(v PartVerdict) parts {
		return parts{"mean": v, "p_value": v, "kind": v, "normal": v}
	}
	tests := []struct {
		name   string
		answer string
		right  bool
		parts  parts
		extra  []string
		reason []string
	}{
		{"every part right", `{"mean": 3.25, "p_value": 0.0412, "kind": "normal", "normal": true}`, true, all(PartRight), nil, nil},
		{"numbers at the label's precision", `{"mean": 3.2531, "p_value": 0.04123, "kind": " NORMAL ", "normal": "yes"}`, true, all(PartRight), nil, nil},
		{"python dict with numpy", `{'mean': np.float64(3.25), 'p_value': 0.0412, 'kind': 'normal', 'normal': True}`, true, all(PartRight), nil, nil},
		{"dict repr in a string", `"{'mean': 3.25, 'p_value': 0.0412, 'kind': 'normal', 'normal': True}"`, true, all(PartRight), nil, nil},
		{"ANSWER: prefix", `ANSWER: {"mean": 3.25, "p_value": 0.0412, "kind": "normal", "normal": false}`, false,
			parts{"mean": PartRight, "p_value": PartRight, "kind": PartRight, "normal": PartWrong}, nil, []string{"3 of 4 parts right", `"normal": expected true, got false`}},
		{"one part wrong", `{"mean": 3.3, "p_value": 0.0412, "kind": "normal", "normal": true}`, false,
			parts{"mean": PartWrong, "p_value": PartRight, "kind": PartRight, "normal": PartRight}, nil, []string{"3 of 4 parts right", `"mean": expected 3.25`, "got 3.3"}},
		{"a part missing", `{"mean": 3.25, "p_value": 0.0412, "normal": true}`, false,
			parts{"mean": PartRight, "p_value": PartRight, "kind": PartMissing, "normal": PartRight}, nil, []string{`"kind" missing`}},
		{"a part null", `{"mean": 3.25, "p_value": 0.0412, "kind": null, "normal": true}`, false,
			parts{"mean": PartRight, "p_value": PartRight, "kind": PartMissing, "normal": PartRight}, nil, []string{`"kind" missing`}},
		{"an extra part is still right", `{"mean": 3.25, "p_value": 0.0412, "kind": "normal", "normal": true, "std": 1}`, true, all(PartRight), []string{"std"}, []string{`extra parts ignored: "std"`}},
		{"names differing in case", `{"Mean": 3.25, "P_VALUE": 0.0412, "kind": "normal", "normal": "True"}`, true, all(PartRight), nil, nil},
		{"the @-text form", `@mean[3.25], @p_value[0.0412], @kind[normal], @normal[yes]`, true, all(PartRight), nil, nil},
		{"the @-text form inside other text", "The mean is @mean[3.25] and\n@p_value[0.0412] @kind[Normal] @normal[true] @x[1].", true, all(PartRight), []string{"x"}, nil},
		{"the @-text form as a string", `"@mean[3.24], @p_value[0.05], @kind[normal], @normal[no]"`, false,
			parts{"mean": PartRight, "p_value": PartWrong, "kind": PartRight, "normal": PartWrong}, nil, []string{"2 of 4 parts right"}},
		{"a non-object answer", `3.25`, false, all(PartMissing), nil, []string{"expected a record of", `"mean"`, "got the number 3.25"}},
		{"a list", `[3.25, 0.0412]`, false, all(PartMissing), nil, []string{"a list of 2 elements"}},
		{"no answer", ``, false, all(PartMissing), nil, []string{"no answer"}},
		{"a nested part", `{"mean": [3.25], "p_value": 0.0412, "kind": "normal", "normal": true}`, false,
			parts{"mean": PartWrong, "p_value": PartRight, "kind": PartRight, "normal": PartRight}, nil, []string{"a list of 1 element"}},
		{"a number as a string", `{"mean": "3.25", "p_value": "0.0412", "kind": "normal", "normal": true}`, true, all(PartRight), nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Assess(task, tc.answer)
			assert.Equal(t, tc.right, a.Correct, a.Reason)
			assert.Equal(t, tc.parts, a.Parts)
			assert.Equal(t, tc.extra, a.Extra)
			for _, r := range tc.reason {
				assert.Contains(t, a.Reason, r)
			}
			ok, why := Grade(task, tc.answer)
			assert.Equal(t, a.Correct, ok)
			assert.Equal(t, a.Reason, why)
		})
	}
}

func TestAssessRecordRules(t *testing.T) {
	// The task's tolerance holds for a part without its own.
	tol := Task{AnswerType: Record, Gold: map[string]any{"a": 100.0, "b": 100.0}, Tolerance: 0.01, PartTolerance: map[string]float64{"b": 0.1}}
	a := Assess(tol, `{"a": 100.9, "b": 109}`)
	assert.True(t, a.Correct, a.Reason)
	a = Assess(tol, `{"a": 102, "b": 109}`)
	assert.Equal(t, map[string]PartVerdict{"a": PartWrong, "b": PartRight}, a.Parts)
	// Without decimals, a number is exact to 1e-6.
	exact := Task{AnswerType: Record, Gold: map[string]any{"a": 3.25}}
	assert.False(t, Assess(exact, `{"a": 3.2531}`).Correct)
	// An accepted record counts.
	acc := Task{AnswerType: Record, Gold: map[string]any{"city": "Oslo"}, Accept: []any{map[string]any{"city": "Christiania"}}}
	assert.True(t, Assess(acc, `@city[christiania]`).Correct)
	a = Assess(acc, `@city[Bergen]`)
	assert.Contains(t, a.Reason, "also accepted")
	// A gold that is not a record cannot be graded.
	bad := Task{ID: "x", AnswerType: Record, Gold: 3.0}
	a = Assess(bad, `{"a": 1}`)
	assert.False(t, a.Correct)
	assert.Contains(t, a.Reason, "cannot grade task x")
	// Other answer types have no parts.
	a = Assess(Task{AnswerType: Integer, Gold: 42}, "42")
	assert.True(t, a.Correct)
	assert.Nil(t, a.Parts)
}

func TestTaskJSON(t *testing.T) {
	// A task without parts is written as it always was.
	old := Task{ID: "s-t4-1", Template: "t4", Question: "q?", Params: map[string]any{}, AnswerType: Number, Gold: 3.14, Tolerance: 0.01, Decimals: 2}
	b, err := json.Marshal(old)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"s-t4-1","template":"t4","question":"q?","params":{},"answer_type":"number","gold":3.14,"tolerance":0.01,"decimals":2}`, string(b))
	var back Task
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, old, back)

	rec := Task{ID: "r", Question: "q?", AnswerType: Record, Gold: map[string]any{"mean": 3.25, "p": 0.04, "kind": "x"},
		Decimals: 2, PartDecimals: map[string]int{"p": 4}, PartTolerance: map[string]float64{"mean": 0.01},
		Meta: map[string]any{"level": "hard", "concepts": []any{"a", "b"}}}
	b, err = json.Marshal(rec)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"tolerance":{"mean":0.01},"decimals":{"mean":2,"p":4},"meta":{"concepts":["a","b"],"level":"hard"}`)
	back = Task{}
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, map[string]int{"mean": 2, "p": 4}, back.PartDecimals)
	assert.Equal(t, map[string]float64{"mean": 0.01}, back.PartTolerance)
	assert.Equal(t, rec.Meta, back.Meta)
	// The same grades either way.
	for _, ans := range []string{`{"mean": 3.26, "p": 0.0401, "kind": "X"}`, `{"mean": 3.3, "p": 0.0401, "kind": "X"}`} {
		assert.Equal(t, Assess(rec, ans), Assess(back, ans), ans)
	}
}
