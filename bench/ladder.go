package bench

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/prefixes"
)

// The ladder is agent.Ladder's table; this file reads the lists that name
// its rungs and gives each the prefix it starts from.

// ParseConditions reads a comma list of built-in conditions (bench's
// --conditions); an empty list, an unknown name or a name given twice is an
// *InputError.
func ParseConditions(list string) ([]agent.Rung, error) {
	names := strings.Join(agent.LadderNames(), ", ")
	var rungs []agent.Rung
	seen := map[string]bool{}
	for _, c := range strings.Split(list, ",") {
		id := strings.TrimSpace(c)
		if id == "" && strings.TrimSpace(list) == "" {
			return nil, inputErrorf("--conditions: name at least one of %s", names)
		}
		r, ok := agent.BuiltinRung(id)
		if !ok {
			return nil, inputErrorf("--conditions %q: expected one of %s (a variant of one comes from --conditions-file)", id, names)
		}
		if seen[r.Name] {
			return nil, inputErrorf("--conditions: %s is named twice", r.Name)
		}
		seen[r.Name] = true
		rungs = append(rungs, r)
	}
	return rungs, nil
}

// NeedsPrefix says whether a rung starts from a prefix.
func NeedsPrefix(r agent.Rung) bool { return r.Prefix != agent.PrefixNone }

// LadderPrefixes are the prefixes a run's rungs start from: Default, the
// one the user named (Named) or the default one, and its Control, found
// when a rung needs it (ControlOf).
type LadderPrefixes struct {
	Default *prefixes.Prefix
	Named   bool
	Control *prefixes.Prefix
	// ControlErr says why there is no control (nil with one).
	ControlErr error
}

// ControlOf finds the control of def: control when it is given (bench's
// --control; an *InputError when it binds variables), else
// prefixes.ControlOf.
func ControlOf(def, control *prefixes.Prefix) (*prefixes.Prefix, error) {
	if control != nil {
		if !control.BindsNothing() {
			return nil, inputErrorf("--control %s: its name does not end in %s, so it says it binds variables: a control binds nothing (its cells repeat full expressions) and is named NAME%s",
				control.Name, prefixes.NoBindSuffix, prefixes.NoBindSuffix)
		}
		return control, nil
	}
	return prefixes.ControlOf(def)
}

// PrefixFor is the prefix rung r starts from (nil for none), for the
// condition flag named: B, D and C (and their variants) the default
// prefix, which binds; B0 its control, which binds nothing. What cannot
// be is an *InputError that ends with hint.
func (lp LadderPrefixes) PrefixFor(r agent.Rung, flag, hint string) (*prefixes.Prefix, error) {
	switch r.Prefix {
	case agent.PrefixNone:
		return nil, nil
	case agent.PrefixControl:
		if lp.ControlErr != nil {
			return nil, inputErrorf("%s %s needs the control of prefix %s, the same demonstration with nothing bound: %v; %s",
				flag, r.Name, lp.Default.Name, lp.ControlErr, hint)
		}
		return lp.Control, nil
	}
	if lp.Named && lp.Default.BindsNothing() {
		// B, D and C are defined over a prefix that binds: this one
		// would make B into B0, and D and C into no rung at all.
		return nil, inputErrorf("%s %s needs a prefix that binds its variables, and --prefix %s binds nothing: run condition B0 over it, or name the prefix it is the control of", flag, r.Name, lp.Default.Name)
	}
	return lp.Default, nil
}

// variantPrefix loads the prefix a variant names: a built-in one, or a
// file relative to the conditions file's folder. It must fit the variant's
// base: a prefix that binds nothing for B0, one that binds for the others.
func variantPrefix(file string, v Variant) (*prefixes.Prefix, error) {
	name := v.Prefix
	if !slices.Contains(prefixes.Builtins(), name) && !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(file), name)
	}
	p, err := prefixes.Load(name)
	if err != nil {
		return nil, inputErrorf("%s:%d: prefix: %v", file, v.Line, err)
	}
	switch control := v.Rung().Prefix == agent.PrefixControl; {
	case control && !p.BindsNothing():
		return nil, inputErrorf("%s:%d: prefix %s: variant %s of B0 needs a prefix that binds nothing (its name ends in %s)", file, v.Line, p.Name, v.Name, prefixes.NoBindSuffix)
	case !control && p.BindsNothing():
		return nil, inputErrorf("%s:%d: prefix %s binds nothing: variant %s of %s needs a prefix that binds its variables (take base B0 for a control)", file, v.Line, p.Name, v.Name, v.Base)
	}
	return p, nil
}
