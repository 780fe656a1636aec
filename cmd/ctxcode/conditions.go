package main

import (
	"strings"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// A rung is one way a question is asked: a condition of the ladder
// (DESIGN.md, "Conditions"), or the mode and protocol named by the finer
// flags.
type rung struct {
	label    string // the summary's name for it: a condition (A … D) or a mode
	mode     agent.Mode
	protocol session.Protocol
	prefix   rungPrefix
}

// rungPrefix is which prefix a rung's session starts from.
type rungPrefix int

const (
	defaultPrefix rungPrefix = iota // --prefix, pm for ctxcode data, else one from prefix init
	noBindPrefix                    // the control that binds nothing (pm-nobind for pm)
	noPrefix                        // none: a skill document describes the files (A)
)

// conditionOrder is the ladder, from the CLI agent to the one shot.
var conditionOrder = []string{"A", "B", "B0", "D", "C"}

var conditions = map[string]rung{
	"A":  {label: "A", mode: agent.Loop, protocol: session.CLI, prefix: noPrefix},
	"B":  {label: "B", mode: agent.Loop, protocol: session.Eval},
	"B0": {label: "B0", mode: agent.Loop, protocol: session.Eval, prefix: noBindPrefix},
	"D":  {label: "D", mode: agent.Loop, protocol: session.Bare},
	"C":  {label: "C", mode: agent.OneShot, protocol: session.TranscriptText},
}

// parseRungs reads --condition, or else --mode and --protocol. With a
// condition, --mode and --protocol may only repeat what it says, and
// --prefix must fit it.
func parseRungs(condition, mode, protocol string, modeSet, protocolSet, prefixSet bool) ([]rung, error) {
	switch protocol {
	case "", "bare", "eval":
	case "cli":
		if condition != "" {
			break // only A's, which --condition A says; checked below
		}
		return nil, usagef("--protocol cli is condition A's: ask for it with --condition A")
	default:
		return nil, usagef("--protocol %q: expected bare or eval (one shot always uses the transcript protocol; --condition A the read and bash tools)", protocol)
	}
	if condition == "" {
		var rungs []rung
		for _, m := range strings.Split(mode, ",") {
			pm, err := agent.ParseMode(strings.TrimSpace(m))
			if err != nil {
				return nil, usagef("--mode: %v", err)
			}
			r := rung{label: string(pm), mode: pm, protocol: pm.Protocol()}
			if pm == agent.Loop && protocol == "eval" {
				r.protocol = session.Eval
			}
			rungs = append(rungs, r)
		}
		return rungs, nil
	}
	rungs, err := parseConditions(condition, "--condition", " (a comma list with --task all)")
	if err != nil {
		return nil, err
	}
	onlyA := true
	for _, r := range rungs {
		id := r.label
		switch {
		case modeSet && mode != string(r.mode):
			return nil, usagef("--condition %s runs in --mode %s, not %s: drop --mode (--condition names the whole rung)", id, r.mode, mode)
		case protocolSet && r.mode == agent.Loop && protocol != string(r.protocol):
			return nil, usagef("--condition %s uses the %s protocol, not %s: drop --protocol (--condition names the whole rung)", id, r.protocol, protocol)
		case protocolSet && r.mode != agent.Loop:
			return nil, usagef("--condition %s is the one shot, which has no --protocol: drop it", id)
		}
		onlyA = onlyA && r.prefix == noPrefix
	}
	if prefixSet && onlyA {
		// With other conditions, --prefix is theirs; A never has one.
		return nil, usagef("--condition A runs without a prefix (a skill document describes the files): drop --prefix")
	}
	return rungs, nil
}

// parseConditions reads a comma list of conditions given with flag; hint
// ends the message for a name that is not one.
func parseConditions(list, flag, hint string) ([]rung, error) {
	var rungs []rung
	seen := map[string]bool{}
	for _, c := range strings.Split(list, ",") {
		id := strings.ToUpper(strings.TrimSpace(c))
		if id == "" && strings.TrimSpace(list) == "" {
			return nil, usagef("%s: name at least one of %s", flag, strings.Join(conditionOrder, ", "))
		}
		r, ok := conditions[id]
		if !ok {
			return nil, usagef("%s %q: expected one of %s%s", flag, strings.TrimSpace(c), strings.Join(conditionOrder, ", "), hint)
		}
		if seen[id] {
			return nil, usagef("%s: %s is named twice", flag, id)
		}
		seen[id] = true
		rungs = append(rungs, r)
	}
	return rungs, nil
}

// needsPrefix says whether any rung starts from a prefix.
func needsPrefix(rungs []rung) bool {
	for _, r := range rungs {
		if r.prefix != noPrefix {
			return true
		}
	}
	return false
}

// prefixFor is the prefix rung r starts from, given the default one (nil
// for none): B0 takes the named prefix when it binds nothing, or the
// control of pm.
func prefixFor(r rung, def *prefixes.Prefix, named bool) (*prefixes.Prefix, error) {
	switch r.prefix {
	case noPrefix:
		return nil, nil
	case defaultPrefix:
		if _, condition := conditions[r.label]; condition && named && def.BindsNothing() {
			// B, D and C are defined over a prefix that binds: this one
			// would make B into B0, and D and C into no rung at all.
			return nil, usagef("--condition %s needs a prefix that binds its variables, and --prefix %s binds nothing: use --condition B0 for it, or name the prefix it is the control of", r.label, def.Name)
		}
	case noBindPrefix:
		switch {
		case def.BindsNothing():
			return def, nil
		case named:
			return nil, usagef("--condition B0 needs a prefix that binds nothing (its name ends in %s), and --prefix %s binds: name its control", prefixes.NoBindSuffix, def.Name)
		case def.Name == "pm":
			return prefixes.Load("pm" + prefixes.NoBindSuffix)
		}
		return nil, usagef("--condition B0 needs a prefix that binds nothing, the control of %s: write one whose cells repeat full expressions, name it NAME%s, and pass it with --prefix", def.Name, prefixes.NoBindSuffix)
	}
	return def, nil
}
