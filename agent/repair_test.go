package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRepairCell(t *testing.T) {
	fences := "removed the Markdown fences around your code"
	prose := "removed the prose around the code block; only the code runs"
	prompts := "removed the interpreter prompts (In [n]:, >>>, ...) before the lines"
	for _, tc := range []struct {
		name, msg, code string
		notes           []string
	}{
		{"plain code", "len(tasks)", "len(tasks)", nil},
		{"fenced", "```python\nlen(tasks)\n```", "len(tasks)", []string{fences}},
		{"fenced without a language", "```\nx = 1\nx\n```\n", "x = 1\nx", []string{fences}},
		{"prose around", "Let me count them.\n```python\nlen(tasks)\n```\nThis prints the count.", "len(tasks)", []string{fences, prose}},
		{"code outside the fence is kept", "n = len(tasks)\n```python\nANSWER(n)\n```", "n = len(tasks)\nANSWER(n)", []string{fences}},
		{"ipython prompts", "In [7]: for t in tasks:\n   ...:     print(t)", "for t in tasks:\n    print(t)", []string{prompts}},
		{"doctest prompts", ">>> x = 1\n>>> x", "x = 1\nx", []string{prompts}},
		{"output after a prompt is not stripped", ">>> x\n1", ">>> x\n1", nil},
		{"two blocks are left alone", "```\na = 1\n```\n```\nb = 2\n```", "```\na = 1\n```\n```\nb = 2\n```", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, notes := repairCell(tc.msg)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.notes, notes)
		})
	}
}

func TestTextAnswer(t *testing.T) {
	for msg, want := range map[string]string{"ANSWER: 42": "42", "  ANSWER:  [\"a\", \"b\"] ": `["a", "b"]`} {
		got, ok := textAnswer(msg)
		assert.True(t, ok, msg)
		assert.Equal(t, want, got)
	}
	for _, msg := range []string{"ANSWER(42)", "The ANSWER: 42", "ANSWER:", "```\nANSWER: 1\n```", "ANSWER: 1\nmore"} {
		_, ok := textAnswer(msg)
		assert.False(t, ok, msg)
	}
}

func TestOneShotCode(t *testing.T) {
	code, notes := oneShotCode("```python\nx = 1\n```\nthen\n```python\nANSWER(x)\n```\n```python\nprint(2)\n```")
	assert.Equal(t, "ANSWER(x)", code)
	assert.Equal(t, []string{"your reply had 3 code blocks; ran block 2, the last that calls ANSWER"}, notes)
	code, notes = oneShotCode("```\na\n```\n```\nb\n```")
	assert.Equal(t, "b", code)
	assert.Equal(t, []string{"your reply had 2 code blocks; ran block 2, the last; none calls ANSWER"}, notes)
	code, notes = oneShotCode("ANSWER(1)")
	assert.Equal(t, "ANSWER(1)", code)
	assert.Empty(t, notes)
}
