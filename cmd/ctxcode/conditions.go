package main

import (
	"strings"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// The ladder is agent.Ladder's table; this file reads the flags that name
// its rungs and gives each the prefix it starts from.

// parseRung reads ask's --condition, or else --mode and --protocol: the
// rung the question is asked in. With a condition, --mode and --protocol
// may only repeat what it says, and --prefix must fit it. A rung from
// --mode is named by its mode (loop, oneshot).
func parseRung(condition, mode, protocol string, modeSet, protocolSet, prefixSet bool) (agent.Rung, error) {
	switch protocol {
	case "", "bare", "eval":
	case "cli":
		if condition != "" {
			break // only A's, which --condition A says; checked below
		}
		return agent.Rung{}, usagef("--protocol cli is condition A's: ask for it with --condition A")
	default:
		return agent.Rung{}, usagef("--protocol %q: expected bare or eval (one shot always uses the transcript protocol; --condition A the read and bash tools)", protocol)
	}
	if condition == "" {
		pm, err := agent.ParseMode(strings.TrimSpace(mode))
		if err != nil {
			if strings.Contains(mode, ",") {
				return agent.Rung{}, usagef("--mode %q: ask asks one question in one mode; to compare modes over the tasks, run them as conditions of one run: ctxcode bench --conditions D,C", mode)
			}
			return agent.Rung{}, usagef("--mode: %v", err)
		}
		r := agent.Rung{Name: string(pm), Mode: pm, Protocol: pm.Protocol(), Prefix: agent.PrefixDefault}
		if pm == agent.Loop && protocol == "eval" {
			r.Protocol = session.Eval
		}
		return r, nil
	}
	if strings.Contains(condition, ",") {
		return agent.Rung{}, usagef("--condition %q: ask asks one question in one condition; to run several over the tasks, use ctxcode bench --conditions %s", condition, condition)
	}
	r, ok := agent.BuiltinRung(strings.TrimSpace(condition))
	if !ok {
		return agent.Rung{}, usagef("--condition %q: expected one of %s", strings.TrimSpace(condition), strings.Join(agent.LadderNames(), ", "))
	}
	switch {
	case modeSet && mode != string(r.Mode):
		return agent.Rung{}, usagef("--condition %s runs in --mode %s, not %s: drop --mode (--condition names the whole rung)", r.Name, r.Mode, mode)
	case protocolSet && r.Mode == agent.Loop && protocol != string(r.Protocol):
		return agent.Rung{}, usagef("--condition %s uses the %s protocol, not %s: drop --protocol (--condition names the whole rung)", r.Name, r.Protocol, protocol)
	case protocolSet && r.Mode != agent.Loop:
		return agent.Rung{}, usagef("--condition %s is the one shot, which has no --protocol: drop it", r.Name)
	case prefixSet && r.Prefix == agent.PrefixNone:
		return agent.Rung{}, usagef("--condition A runs without a prefix (a skill document describes the files): drop --prefix")
	}
	return r, nil
}

// parseConditions reads bench's --conditions, a comma list of built-in
// conditions.
func parseConditions(list string) ([]agent.Rung, error) {
	names := strings.Join(agent.LadderNames(), ", ")
	var rungs []agent.Rung
	seen := map[string]bool{}
	for _, c := range strings.Split(list, ",") {
		id := strings.TrimSpace(c)
		if id == "" && strings.TrimSpace(list) == "" {
			return nil, usagef("--conditions: name at least one of %s", names)
		}
		r, ok := agent.BuiltinRung(id)
		if !ok {
			return nil, usagef("--conditions %q: expected one of %s (a variant of one comes from --conditions-file)", id, names)
		}
		if seen[r.Name] {
			return nil, usagef("--conditions: %s is named twice", r.Name)
		}
		seen[r.Name] = true
		rungs = append(rungs, r)
	}
	return rungs, nil
}

// needsPrefix says whether a rung starts from a prefix.
func needsPrefix(r agent.Rung) bool { return r.Prefix != agent.PrefixNone }

// ladderPrefixes are the prefixes a run's rungs start from: def, the one
// --prefix named (named) or the default one, and its control, found when a
// rung needs it (controlOf).
type ladderPrefixes struct {
	def     *prefixes.Prefix
	named   bool
	control *prefixes.Prefix
	// controlErr says why there is no control (nil with one).
	controlErr error
}

// controlOf finds the control of def: the prefix given as control when
// there is one (bench's --control), else prefixes.ControlOf.
func controlOf(def, control *prefixes.Prefix) (*prefixes.Prefix, error) {
	if control != nil {
		if !control.BindsNothing() {
			return nil, usagef("--control %s: its name does not end in %s, so it says it binds variables: a control binds nothing (its cells repeat full expressions) and is named NAME%s",
				control.Name, prefixes.NoBindSuffix, prefixes.NoBindSuffix)
		}
		return control, nil
	}
	return prefixes.ControlOf(def)
}

// prefixFor is the prefix rung r starts from (nil for none), for the
// condition flag named: B, D and C (and their variants) the default
// prefix, which binds; B0 its control, which binds nothing.
func (lp ladderPrefixes) prefixFor(r agent.Rung, flag, hint string) (*prefixes.Prefix, error) {
	switch r.Prefix {
	case agent.PrefixNone:
		return nil, nil
	case agent.PrefixControl:
		if lp.controlErr != nil {
			return nil, usagef("%s %s needs the control of prefix %s, the same demonstration with nothing bound: %v; %s",
				flag, r.Name, lp.def.Name, lp.controlErr, hint)
		}
		return lp.control, nil
	}
	if lp.named && lp.def.BindsNothing() {
		// B, D and C are defined over a prefix that binds: this one
		// would make B into B0, and D and C into no rung at all.
		return nil, usagef("%s %s needs a prefix that binds its variables, and --prefix %s binds nothing: run condition B0 over it, or name the prefix it is the control of", flag, r.Name, lp.def.Name)
	}
	return lp.def, nil
}
