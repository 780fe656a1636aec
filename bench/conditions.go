package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/session"
)

// Variant is a line of a conditions file (ctxcode bench --conditions-file):
// a built-in condition under a name of its own, with its own rules text or
// prefix, for prompt ablations such as the seed's v3 (no rules) and v4 (one
// sentence on ANSWER) run as conditions of one run.
//
//	{"name": "D-v4", "base": "D", "rules": "Call ANSWER(value) in code when you have the answer."}
//
// Rules replaces the base condition's whole rules text (the protocol's
// rules and the prefix's own), so that a variant says exactly what its
// model reads; "" leaves none. The tools, the prefix's cells, A's skill
// document and C's closing instruction are the base's.
type Variant struct {
	Name string
	Base string // a built-in condition: A, B, B0, D or C
	// Rules replaces the base's rules text; nil keeps it.
	Rules *string
	// Prefix is the prefix the variant starts from in place of the one its
	// base's role gives (a built-in name, or a file, relative to the
	// conditions file's folder); "" for the base's.
	Prefix string
	// Context, Window, Soft, Hard and Recent, when not nil, set the
	// variant's context policy (session.Context) over the run's (--context,
	// --window, ...): {"name": "D-staged", "base": "D", "context": "staged"}.
	Context            *string
	Window             *int
	Soft, Hard, Recent *float64
	Line               int // of the conditions file, from 1
}

// ContextOver is the variant's context policy: run's, with the fields the
// variant sets; an error says what of it makes no sense.
func (v Variant) ContextOver(run session.Context) (session.Context, error) {
	c := run
	if v.Context != nil {
		p, err := session.ParsePolicy(*v.Context)
		if err != nil {
			return c, err
		}
		c.Policy = p
	}
	if v.Window != nil {
		if *v.Window < 1 {
			return c, fmt.Errorf("window %d: give the context window in tokens, 1 or more", *v.Window)
		}
		c.Window = *v.Window
	}
	for _, f := range []struct {
		name string
		v    *float64
		to   *float64
	}{{"soft", v.Soft, &c.Soft}, {"hard", v.Hard, &c.Hard}, {"recent", v.Recent, &c.Recent}} {
		if f.v == nil {
			continue
		}
		if *f.v <= 0 || *f.v > 1 {
			return c, fmt.Errorf("%s %g: a share of the window, above 0 and at most 1", f.name, *f.v)
		}
		*f.to = *f.v
	}
	return c, c.Check()
}

// Rung is the variant as a condition of the ladder: its base's rung under
// its name, with its rules.
func (v Variant) Rung() agent.Rung {
	r, _ := agent.BuiltinRung(v.Base)
	r.Name, r.Rules = v.Name, v.Rules
	return r
}

// ConditionFileError is a conditions file that cannot be used: every
// problem found in it, each with its line. It is the user's input error.
type ConditionFileError struct {
	Path     string
	Problems []TaskProblem
}

func (e *ConditionFileError) Error() string { return problemList(e.Path, e.Problems) }

// validName is what a condition's name may hold: it names files and
// columns.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// conditionLineExample ends the message for a file with no condition.
const conditionLineExample = `{"name": "D-v3", "base": "D", "rules": "..."}`

// ReadConditions reads a conditions file: one JSON object per line, with
// "name" and "base", and "rules" and "prefix" when wanted; blank lines and
// lines that start with # or // are skipped. Every problem is found at once
// and returned as a *ConditionFileError: a line that is not such an object
// (bad JSON, an unknown field, a field of the wrong type), a missing name or
// base, a name that is not a file-safe word or that a built-in condition or
// an earlier line has, a base that is not a built-in condition, a prefix
// given to A (which has none).
func ReadConditions(path string) ([]Variant, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConditionFileError{path, []TaskProblem{{Msg: fmt.Sprintf("cannot read the conditions file: %v", errors.Unwrap(err))}}}
	}
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	var (
		variants []Variant
		problems []TaskProblem
		first    = map[string]int{}
	)
	builtins := strings.Join(agent.LadderNames(), ", ")
	for i, raw := range bytes.Split(src, []byte("\n")) {
		n := i + 1
		line := bytes.TrimSpace(raw)
		if len(line) == 0 || bytes.HasPrefix(line, []byte("#")) || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		problem := func(format string, args ...any) {
			problems = append(problems, TaskProblem{Line: n, Msg: fmt.Sprintf(format, args...)})
		}
		var v struct {
			Name   *string `json:"name"`
			Base   *string `json:"base"`
			Rules  *string `json:"rules"`
			Prefix *string `json:"prefix"`
			// The context policy (Variant.ContextOver).
			Context *string  `json:"context"`
			Window  *int     `json:"window"`
			Soft    *float64 `json:"soft"`
			Hard    *float64 `json:"hard"`
			Recent  *float64 `json:"recent"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&v)
		if err == nil && dec.Decode(&struct{}{}) != io.EOF {
			err = errors.New("more than one JSON value on the line")
		}
		if err != nil {
			problem("not a condition (%v): expected one JSON object per line with name, base and, when wanted, rules, prefix, context, window, soft, hard and recent, such as %s",
				jsonProblem(err), conditionLineExample)
			continue
		}
		ok := true
		switch {
		case v.Name == nil || *v.Name == "":
			problem("no name: give the variant a name of its own, such as D-v3")
			ok = false
		case !validName.MatchString(*v.Name):
			problem("name %q: use letters, digits, '.', '-' and '_' (at most 64), starting with a letter or digit: it names files and report columns", *v.Name)
			ok = false
		default:
			if _, builtin := agent.BuiltinRung(*v.Name); builtin {
				problem("name %q is a built-in condition's (%s): give the variant a name of its own, such as %s-v2", *v.Name, builtins, *v.Name)
				ok = false
			} else if at, dup := first[strings.ToLower(*v.Name)]; dup {
				problem("name %q: line %d has it already; give each variant its own name", *v.Name, at)
				ok = false
			}
		}
		var base agent.Rung
		switch {
		case v.Base == nil || *v.Base == "":
			problem("no base: name the built-in condition the variant changes (%s)", builtins)
			ok = false
		default:
			var known bool
			if base, known = agent.BuiltinRung(*v.Base); !known {
				problem("base %q: expected one of %s", *v.Base, builtins)
				ok = false
			}
		}
		if ok && v.Prefix != nil && base.Prefix == agent.PrefixNone {
			problem("prefix %q: condition %s runs without a prefix (a skill document describes the files): drop prefix, or take another base", *v.Prefix, base.Name)
			ok = false
		}
		if ok && v.Prefix != nil && strings.TrimSpace(*v.Prefix) == "" {
			problem("prefix is empty: name a built-in prefix or a file, or leave prefix out for the base's")
			ok = false
		}
		if !ok {
			continue
		}
		first[strings.ToLower(*v.Name)] = n
		variant := Variant{Name: *v.Name, Base: base.Name, Rules: v.Rules, Line: n,
			Context: v.Context, Window: v.Window, Soft: v.Soft, Hard: v.Hard, Recent: v.Recent}
		if v.Prefix != nil {
			variant.Prefix = *v.Prefix
		}
		if _, err := variant.ContextOver(session.Context{}); err != nil {
			problem("%v", err)
			continue
		}
		variants = append(variants, variant)
	}
	if len(problems) == 0 && len(variants) == 0 {
		problems = append(problems, TaskProblem{Msg: "no conditions: expected one JSON object per line, such as " + conditionLineExample +
			" (blank lines and lines starting with # or // are skipped)"})
	}
	if len(problems) > 0 {
		return nil, &ConditionFileError{path, problems}
	}
	return variants, nil
}

// jsonProblem says what encoding/json found wrong, without its Go type
// names where it can.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be a string", te.Field)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
