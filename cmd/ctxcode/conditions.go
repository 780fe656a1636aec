package main

import (
	"strings"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/session"
)

// The ladder is agent.Ladder's table, and bench gives each rung the prefix
// it starts from (bench.LadderPrefixes); this file reads ask's flags that
// name a rung.

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
