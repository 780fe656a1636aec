package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/ctxcode/ctxcode/session"
)

// PrefixRole is which prefix a condition's session starts from.
type PrefixRole string

// Prefix roles.
const (
	// PrefixDefault is the run's prefix, which binds the data's variables
	// (B, D, C).
	PrefixDefault PrefixRole = "default"
	// PrefixControl is the control of the run's prefix: the same
	// demonstration, with no variable bound (B0; pm-nobind for pm).
	PrefixControl PrefixRole = "control"
	// PrefixNone is no prefix: a skill document describes the files (A).
	PrefixNone PrefixRole = "none"
)

// Rung is a condition of the ladder (DESIGN.md, "Conditions"): how a
// question is asked. The built-in ones are Ladder's; a variant (bench
// --conditions-file) is a built-in one under another name, with its own
// rules or prefix.
type Rung struct {
	Name     string
	Protocol session.Protocol
	Prefix   PrefixRole
	Mode     Mode // Loop, or OneShot (C)
	// Rules, when not nil, replaces the rules text the first message
	// starts with ("" for none; Config.Rules). Nil for the built-in rungs,
	// whose rules the protocol and the prefix write.
	Rules *string
}

// ladder is the built-in conditions, from the CLI agent to the one shot:
// the one definition of the ladder.
var ladder = [...]Rung{
	{Name: "A", Protocol: session.CLI, Prefix: PrefixNone, Mode: Loop},
	{Name: "B", Protocol: session.Eval, Prefix: PrefixDefault, Mode: Loop},
	{Name: "B0", Protocol: session.Eval, Prefix: PrefixControl, Mode: Loop},
	{Name: "D", Protocol: session.Bare, Prefix: PrefixDefault, Mode: Loop},
	{Name: "C", Protocol: session.TranscriptText, Prefix: PrefixDefault, Mode: OneShot},
}

// Ladder is the built-in conditions, A, B, B0, D, C, in ladder order.
func Ladder() []Rung { return slices.Clone(ladder[:]) }

// LadderNames is the names of the built-in conditions, in ladder order.
func LadderNames() []string {
	names := make([]string, len(ladder))
	for i, r := range ladder {
		names[i] = r.Name
	}
	return names
}

// ConditionsOf is the names of the built-in conditions that speak
// protocol p, in ladder order (B and B0 for eval); none for a protocol no
// rung speaks.
func ConditionsOf(p session.Protocol) []string {
	var names []string
	for _, r := range ladder {
		if r.Protocol == p {
			names = append(names, r.Name)
		}
	}
	return names
}

// BuiltinRung is the built-in condition named name, in any case (b0 is
// B0); false when there is none.
func BuiltinRung(name string) (Rung, bool) {
	for _, r := range ladder {
		if strings.EqualFold(r.Name, name) {
			return r, true
		}
	}
	return Rung{}, false
}

// RulesHash identifies a rules text: its hex SHA-256.
func RulesHash(rules string) string {
	h := sha256.Sum256([]byte(rules))
	return hex.EncodeToString(h[:])
}
