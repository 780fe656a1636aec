package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctxcode/ctxcode/session"
)

func TestConditionsOf(t *testing.T) {
	tests := []struct {
		p    session.Protocol
		want []string
	}{
		{session.CLI, []string{"A"}},
		{session.Eval, []string{"B", "B0"}},
		{session.Bare, []string{"D"}},
		{session.TranscriptText, []string{"C"}},
		{"smoke", nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.p), func(t *testing.T) {
			assert.Equal(t, tt.want, ConditionsOf(tt.p))
		})
	}
	var all []string
	for _, p := range session.Protocols() {
		all = append(all, ConditionsOf(p)...)
	}
	assert.ElementsMatch(t, LadderNames(), all, "every rung speaks one protocol")
}
