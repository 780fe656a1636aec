package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestRulesTextReplacesTheRules: a variant's rules text takes the place of
// the protocol's rules and the prefix's own in every protocol, and "" leaves
// none; what is not rules (the prefix's cells, the skill document, the one
// shot's closing instruction) stays.
func TestRulesTextReplacesTheRules(t *testing.T) {
	cells := []Cell{{Code: "x = 1\nx", Result: kernel.Result{Status: kernel.StatusOK, Value: "1"}, From: FromPrefix}}
	input := func(rules *string) Input {
		return Input{Transcript: Transcript{Cells: cells}, Rules: "The prefix's own rules.", Skill: "SKILL DOCUMENT",
			Question: "What is x?", RulesText: rules}
	}
	mine, none := "MY RULES", ""
	for _, p := range Protocols() {
		t.Run(string(p), func(t *testing.T) {
			def, err := Render(p, input(nil))
			require.NoError(t, err)
			got, err := Render(p, input(&mine))
			require.NoError(t, err)
			empty, err := Render(p, input(&none))
			require.NoError(t, err)
			first := got.Messages[0].Content
			assert.True(t, strings.HasPrefix(first, "MY RULES"), first)
			assert.NotContains(t, first, "The prefix's own rules.")
			assert.NotContains(t, first, "live Python session")
			switch p {
			case CLI:
				assert.Equal(t, "MY RULES\n\nSKILL DOCUMENT", first)
				assert.Equal(t, "SKILL DOCUMENT", empty.Messages[0].Content, "the skill document stays")
			case TranscriptText:
				assert.Contains(t, first, "x = 1")
				assert.Contains(t, first, "Reply with one ```python code block")
				assert.True(t, strings.HasPrefix(empty.Messages[0].Content, "In ["), empty.Messages[0].Content)
			default:
				assert.Equal(t, "system", got.Messages[0].Role)
				assert.Equal(t, "MY RULES", first)
				assert.Len(t, got.Messages, len(def.Messages))
				assert.Len(t, empty.Messages, len(def.Messages)-1, "no rules: no system message")
				assert.NotEqual(t, "system", empty.Messages[0].Role)
				assert.Equal(t, def.Stable-1, empty.Stable)
			}
		})
	}
}
