package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/session"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestReadConditions(t *testing.T) {
	path := writeFile(t, "conds.jsonl", `# the seed's ablations
{"name": "D-v3", "base": "D", "rules": ""}

{"name": "D-v4", "base": "d", "rules": "Call ANSWER(value) in code."}
{"name": "B-small", "base": "B", "prefix": "small.py"}
`)
	vs, err := ReadConditions(path)
	require.NoError(t, err)
	require.Len(t, vs, 3)
	empty, v4 := "", "Call ANSWER(value) in code."
	assert.Equal(t, Variant{Name: "D-v3", Base: "D", Rules: &empty, Line: 2}, vs[0])
	assert.Equal(t, Variant{Name: "D-v4", Base: "D", Rules: &v4, Line: 4}, vs[1], "a base in any case")
	assert.Equal(t, Variant{Name: "B-small", Base: "B", Prefix: "small.py", Line: 5}, vs[2])
	r := vs[1].Rung()
	assert.Equal(t, agent.Rung{Name: "D-v4", Protocol: session.Bare, Prefix: agent.PrefixDefault, Mode: agent.Loop, Rules: &v4}, r)
}

// TestReadConditionsRefusesEveryBadLine: every problem of the file at once,
// each with its line.
func TestReadConditionsRefusesEveryBadLine(t *testing.T) {
	path := writeFile(t, "conds.jsonl", `{"name": "D-v3", "base": "D", "rules": ""}
{"name": "D-v3", "base": "C"}
{"name": "x", "base": "E"}
{"name": "B0", "base": "B"}
{"name": "y", "base": "D", "rulez": "typo"}
{"name": "z", "base": "D",
{"name": "a b", "base": "D"}
{"base": "D"}
{"name": "w", "base": "A", "prefix": "pm"}
{"name": "v", "base": "D", "rules": 3}
{"name": "u"}
`)
	_, err := ReadConditions(path)
	var ce *ConditionFileError
	require.ErrorAs(t, err, &ce)
	got := map[int]string{}
	for _, p := range ce.Problems {
		got[p.Line] = p.Msg
	}
	for line, want := range map[int]string{
		2:  `name "D-v3": line 1 has it already`,
		3:  `base "E": expected one of A, B, B0, D, C`,
		4:  `name "B0" is a built-in condition's`,
		5:  `unknown field "rulez"`,
		6:  "not a condition",
		7:  `name "a b": use letters, digits`,
		8:  "no name",
		9:  "condition A runs without a prefix",
		10: "rules must be a string",
		11: "no base",
	} {
		assert.Contains(t, got[line], want, "line %d", line)
	}
	assert.NotContains(t, got, 1, "line 1 is good")
	assert.Contains(t, err.Error(), path+":3: base")

	_, err = ReadConditions(writeFile(t, "empty.jsonl", "# nothing\n"))
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "no conditions")
	_, err = ReadConditions(filepath.Join(t.TempDir(), "none.jsonl"))
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "cannot read the conditions file")
}
