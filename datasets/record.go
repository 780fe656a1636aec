package datasets

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// PartVerdict is how one part of a record answer was graded.
type PartVerdict string

// Part verdicts.
const (
	PartRight   PartVerdict = "right"
	PartWrong   PartVerdict = "wrong"
	PartMissing PartVerdict = "missing" // the answer has no such part, or it is null
)

// Assessment is an answer graded against a task: Grade's verdict and
// reason, and, for a Record task, the verdict of each of the gold's parts
// and the answer's extra parts.
type Assessment struct {
	Correct bool
	Reason  string
	// Parts has a verdict for each part of the gold, for a Record task;
	// nil for any other. The task is right when every part is right.
	Parts map[string]PartVerdict
	// Extra are the parts the answer has and the gold has not, sorted:
	// reported, not wrong.
	Extra []string
}

// PartsRight counts the right parts.
func (a Assessment) PartsRight() int {
	n := 0
	for _, v := range a.Parts {
		if v == PartRight {
			n++
		}
	}
	return n
}

// Assess grades answer against t as Grade does and, for a Record task, says
// how each part went. A record answer is a JSON object or Python dict
// ({"mean": 3.25, "kind": "normal"}), or the text form of InfiAgent-DABench,
// @mean[3.25], @kind[normal], alone or inside other text. Each part of the
// gold is graded by the rules of its kind:
//   - a number within the part's tolerance (Task.PartTolerance, else
//     Task.Tolerance) or, when the part has decimals (Task.PartDecimals,
//     else Task.Decimals), one unit of its last decimal, as a Number task;
//   - a string trimmed and case-folded, as a String task;
//   - a boolean: true, false, and the words yes, no, true and false in any
//     case (also as strings).
//
// A part found under the same name, or a name that differs only in case and
// surrounding space, is graded; a gold part the answer lacks (or gives as
// null) is missing. Parts the answer has beyond the gold's are Extra and do
// not make it wrong. An answer that is not a record (a number, a list)
// leaves every part missing.
func Assess(t Task, answer string) Assessment {
	if t.AnswerType != Record {
		ok, why := Grade(t, answer)
		return Assessment{Correct: ok, Reason: why}
	}
	text := cleanAnswer(answer)
	best := assessRecord(t, t.Gold, text)
	if best.Correct || strings.HasPrefix(best.Reason, "cannot grade") {
		return best
	}
	for _, alt := range t.Accept {
		a := assessRecord(t, alt, text)
		if a.Correct || strings.HasPrefix(a.Reason, "cannot grade") {
			return a
		}
	}
	if len(t.Accept) > 0 {
		best.Reason += fmt.Sprintf(" (also accepted: %d other records)", len(t.Accept))
	}
	return best
}

// GoldParts are the parts of a record gold as Grade reads them, or false
// when g is not one: a non-empty map of names to numbers, strings and
// booleans.
func GoldParts(g any) (map[string]any, bool) {
	m, ok := g.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, false
	}
	for _, v := range m {
		switch v.(type) {
		case float64, int, int64, string, bool:
		default:
			return nil, false
		}
	}
	return m, true
}

// assessRecord grades text against gold, the task's gold or one of its
// accepted forms.
func assessRecord(t Task, gold any, text string) Assessment {
	parts, ok := GoldParts(gold)
	if !ok {
		return Assessment{Reason: fmt.Sprintf("cannot grade task %s: gold %T does not fit answer type %q (a non-empty object of numbers, strings and booleans)", t.ID, gold, t.AnswerType)}
	}
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	sort.Strings(names)
	a := Assessment{Parts: make(map[string]PartVerdict, len(parts))}
	got, why := answerRecord(text)
	if why != "" {
		for _, n := range names {
			a.Parts[n] = PartMissing
		}
		a.Reason = "expected a record of " + partNames(names) + ", got " + why
		return a
	}
	// The answer's parts by name, then by folded name.
	exact := make(map[string]int, len(got))
	folded := make(map[string]int, len(got))
	for i, p := range got {
		exact[p.name] = i // the last of a repeated name
		folded[foldKey(strings.TrimSpace(p.name))] = i
	}
	used := make([]bool, len(got))
	var wrong []string
	for _, n := range names {
		i, ok := exact[n]
		if !ok {
			i, ok = folded[foldKey(strings.TrimSpace(n))]
		}
		if !ok || got[i].value.kind == kindNull {
			a.Parts[n] = PartMissing
			wrong = append(wrong, strconv.Quote(n)+" missing")
			if ok {
				used[i] = true
			}
			continue
		}
		used[i] = true
		right, reason := gradePart(t, n, parts[n], got[i].value)
		if right {
			a.Parts[n] = PartRight
			continue
		}
		a.Parts[n] = PartWrong
		wrong = append(wrong, strconv.Quote(n)+": "+reason)
	}
	seen := map[string]bool{}
	for i, p := range got {
		if used[i] {
			seen[p.name] = true
		}
	}
	for _, p := range got {
		if !seen[p.name] { // an earlier copy of a graded part is not extra
			seen[p.name] = true
			a.Extra = append(a.Extra, p.name)
		}
	}
	sort.Strings(a.Extra)
	var notes []string
	if len(wrong) > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d parts right; %s", len(names)-len(wrong), len(names), strings.Join(wrong, "; ")))
	}
	if len(a.Extra) > 0 {
		notes = append(notes, "extra parts ignored: "+quoteSome(a.Extra))
	}
	a.Correct = len(wrong) == 0
	a.Reason = strings.Join(notes, "; ")
	return a
}

func partNames(names []string) string {
	q := make([]string, 0, len(names))
	for _, n := range names[:min(len(names), reasonElements)] {
		q = append(q, strconv.Quote(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > reasonElements {
		s += fmt.Sprintf(" and %d more", len(names)-reasonElements)
	}
	return "{" + s + "}"
}

// answerPart is one named part of a record answer.
type answerPart struct {
	name  string
	value answerValue
}

// atPart is one part of DABench's text form: @name[value].
var atPart = regexp.MustCompile(`@([A-Za-z0-9_][A-Za-z0-9_.\-]*)\[([^\[\]\n]*)\]`)

// answerRecord reads a record answer's parts, in order, or says why it
// cannot: a dict (or a string that holds one), or text with @name[value]
// parts in it.
func answerRecord(text string) (parts []answerPart, why string) {
	v := readAnswer(text, true)
	switch v.kind {
	case kindDict:
		for i, k := range v.items {
			switch k.kind {
			case kindString, kindNumber, kindText:
			default:
				return nil, "a dict whose key " + describeAnswer(k) + " is not a name"
			}
			parts = append(parts, answerPart{name: k.text, value: v.values[i]})
		}
		if len(parts) == 0 {
			return nil, "an empty dict"
		}
		return parts, ""
	case kindText, kindString:
		for _, m := range atPart.FindAllStringSubmatch(v.text, -1) {
			val := strings.TrimSpace(m[2])
			pv, ok := parseLiteral(val)
			if !ok {
				pv = answerValue{kind: kindText, text: val}
				if val == "" {
					pv = answerValue{kind: kindNull}
				}
			}
			parts = append(parts, answerPart{name: m[1], value: pv})
		}
		if len(parts) > 0 {
			return parts, ""
		}
	}
	return nil, describeAnswer(v)
}

// gradePart grades one part's value against its gold, a number, a string
// or a boolean.
func gradePart(t Task, name string, gold any, v answerValue) (bool, string) {
	switch g := gold.(type) {
	case bool:
		b, ok := answerBool(v)
		switch {
		case !ok:
			return false, "expected " + strconv.FormatBool(g) + ", got " + describeAnswer(v)
		case b != g:
			return false, "expected " + strconv.FormatBool(g) + ", got " + strconv.FormatBool(b)
		}
		return true, ""
	case string:
		switch v.kind {
		case kindString, kindText, kindNumber, kindBool:
		default:
			return false, "expected " + quoteClipped(g) + ", got " + describeAnswer(v)
		}
		if elementKey(v.text) != elementKey(g) {
			return false, "expected " + quoteClipped(g) + ", got " + quoteClipped(v.text)
		}
		return true, ""
	}
	f, _ := goldNumber(gold)
	tol, dec := t.Tolerance, t.Decimals
	if x, ok := t.PartTolerance[name]; ok {
		tol = x
	}
	if x, ok := t.PartDecimals[name]; ok {
		dec = x
	}
	switch v.kind {
	case kindNumber, kindString, kindText:
	default:
		_, rule := numberBound(f, tol, dec)
		return false, "expected " + strconv.FormatFloat(f, 'f', -1, 64) + " (" + rule + "), got " + describeAnswer(v)
	}
	return gradeNumber(f, tol, dec, v.text)
}

// answerBool reads a boolean part: a boolean literal, or yes, no, true or
// false in any case.
func answerBool(v answerValue) (value, ok bool) {
	switch v.kind {
	case kindBool, kindString, kindText:
		switch strings.ToLower(strings.TrimSpace(v.text)) {
		case "true", "yes":
			return true, true
		case "false", "no":
			return false, true
		}
	}
	return false, false
}
