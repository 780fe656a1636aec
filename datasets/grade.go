package datasets

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Grade compares an answer with the task's gold. The answer is text as a
// model or the ANSWER() of a kernel gives it: a JSON value, a Python literal,
// or comma-separated text. reason says, for a wrong or unreadable answer,
// what was expected and what was found (`expected 42, got 41`,
// `missing "K00012"; unexpected "K00099"`); it is empty for a correct answer
// unless something was forgiven (a duplicate in a set). Quoted answer text
// in a reason is cut to 60 characters and a list to its first few elements.
//
// Reading. Surrounding whitespace and backticks (inline, or a ``` fence with
// an optional language tag), an "ANSWER:" prefix and an ANSWER(...) wrapper
// are removed. The rest is read as one JSON value or Python literal: strings
// in single or double quotes with escapes, numbers, True/False/None,
// true/false/null, [lists], (tuples), a bare tuple (a, b), {sets}, {dicts},
// set(), set([...]), frozenset({...}), and numpy reprs such as np.int64(42)
// (read as their argument). Nothing is evaluated. Text that is not a literal
// is comma-separated text: a single bare word is a one-element set, and
// unquoted elements in brackets ([K00001, K00002]) are fine. A quoted string
// where a number, set or list is expected is read again from its contents,
// so "42" and the Python repr a kernel falls back to ("{'a', 'b'}") work.
// None, null and empty text are "no answer", always wrong.
//
// Comparing, by the task's answer type:
//   - Integer: exactly. 42, "42", 42.0, 4.2e1, np.int64(42) and 1,234 (a
//     thousands separator) are numbers; 42.5 is not an integer, and
//     true/false, "42abc" and [42] are not numbers.
//   - Number: within the task's Tolerance, relative and inclusive
//     (DefaultTolerance, 1e-6, when it gives none): 0 is wrong for a gold
//     of 0.004. A gold of exactly 0 takes the tolerance as absolute. A
//     task with Decimals accepts one unit of its last decimal either way
//     (3.13 and 3.12 for a gold of 3.13 with Decimals 2).
//   - String: trimmed and case-folded as strings.EqualFold does; quotes of
//     a string literal are removed.
//   - Set: the distinct elements, in any order. A duplicate in the answer
//     is ignored: it is neither an extra element nor a stand-in for a
//     missing one, so [a, a, b] equals {a, b} and [a, a] does not.
//   - List: in order, of the same length. A Python set is not a list (it
//     has no order).
//   - Record: part by part, each by the rules of its kind; right when every
//     part of the gold is (see Assess, which says how each part went).
//
// Elements of sets and lists, and String answers, are compared as trimmed,
// case-folded text; a decimal number is canonicalised first, so 3, 3.0,
// "3.0" and 3e0 all match a gold "3" (exact in float64, so very long
// integers may collide). An element that is not a string or a number (None,
// a boolean, a nested list, a dict) makes the answer wrong, and so does the
// wrong kind of answer: a list where a number or string is expected, a
// number or a dict where a set or list is expected.
//
// An answer that matches one of the task's Accept forms is right, graded as
// against the gold; a wrong answer's reason is the gold's, with the
// accepted forms named.
//
// A task Grade cannot grade (an unknown answer type, or a gold or an accepted
// form that does not fit it) grades every answer wrong, with a reason that
// says so. Golds that went through JSON (float64 for an integer, []any for a
// set) are accepted.
func Grade(t Task, answer string) (correct bool, reason string) {
	if t.AnswerType == Record {
		a := Assess(t, answer)
		return a.Correct, a.Reason
	}
	text := cleanAnswer(answer)
	correct, reason = gradeAgainst(t, t.Gold, text)
	if correct || len(t.Accept) == 0 || strings.HasPrefix(reason, "cannot grade") {
		return correct, reason
	}
	for _, alt := range t.Accept {
		ok, why := gradeAgainst(t, alt, text)
		if ok {
			return true, why
		}
		if strings.HasPrefix(why, "cannot grade") {
			return false, why
		}
	}
	return false, reason + " (also accepted: " + acceptedText(t) + ")"
}

// gradeAgainst grades text against gold, the task's gold or one of its
// accepted forms.
func gradeAgainst(t Task, gold any, text string) (bool, string) {
	switch t.AnswerType {
	case Integer:
		if gold, ok := goldInteger(gold); ok {
			return gradeInteger(gold, text)
		}
	case Number:
		if gold, ok := goldNumber(gold); ok {
			return gradeNumber(gold, t.Tolerance, t.Decimals, text)
		}
	case String:
		if gold, ok := gold.(string); ok {
			return gradeString(gold, text)
		}
	case Set, List:
		if gold, ok := goldStrings(gold); ok {
			return gradeCollection(t.AnswerType, gold, text)
		}
	default:
		return false, fmt.Sprintf("cannot grade task %s: unknown answer type %q (want integer, number, string, set, list or record)",
			t.ID, t.AnswerType)
	}
	return false, fmt.Sprintf("cannot grade task %s: gold %T does not fit answer type %q", t.ID, gold, t.AnswerType)
}

// acceptedText lists a task's accepted forms for a reason.
func acceptedText(t Task) string {
	parts := make([]string, 0, min(len(t.Accept), reasonSome))
	for _, a := range t.Accept[:min(len(t.Accept), reasonSome)] {
		switch a := a.(type) {
		case string:
			parts = append(parts, quoteClipped(a))
		default:
			if xs, ok := goldStrings(a); ok {
				parts = append(parts, listText(t.AnswerType, xs))
			} else {
				parts = append(parts, clipText(fmt.Sprint(a)))
			}
		}
	}
	s := strings.Join(parts, ", ")
	if len(t.Accept) > reasonSome {
		s += fmt.Sprintf(" and %d more", len(t.Accept)-reasonSome)
	}
	return s
}

func gradeInteger(gold int64, text string) (bool, string) {
	want := strconv.FormatInt(gold, 10)
	f, got, ok := answerNumber(text)
	switch {
	case !ok:
		return false, "expected " + want + ", got " + got
	case f != math.Trunc(f):
		return false, "expected " + want + ", got " + got + " (not an integer)"
	case f != float64(gold):
		return false, "expected " + want + ", got " + got
	}
	return true, ""
}

// gradeNumber grades a number against gold within tol, relative (0:
// DefaultTolerance; absolute for a gold of 0), or one unit of the last of
// decimals when the gold is rounded to them.
func gradeNumber(gold, tol float64, decimals int, text string) (bool, string) {
	bound, want := numberBound(gold, tol, decimals)
	want = strconv.FormatFloat(gold, 'f', -1, 64) + " (" + want + ")"
	f, got, ok := answerNumber(text)
	if !ok {
		return false, "expected " + want + ", got " + got
	}
	// The slack absorbs float error: 3.13-3.12 is 0.010000000000000231.
	if !(math.Abs(f-gold) <= bound+1e-12*max(1, math.Abs(gold))) {
		return false, "expected " + want + ", got " + got
	}
	return true, ""
}

// numberBound is how far a Number answer may be from gold, absolute, for
// a task's tolerance (relative; 0 means DefaultTolerance) and decimals (see
// Task), and that rule in words for a reason: "±1e-06 relative",
// "±1e-06 absolute, the gold being 0", "±0.01, rounded to 2 decimals".
func numberBound(gold, tol float64, decimals int) (bound float64, rule string) {
	if tol <= 0 {
		tol = DefaultTolerance
	}
	bound, rule = tol*math.Abs(gold), "±"+strconv.FormatFloat(tol, 'g', -1, 64)+" relative"
	if gold == 0 {
		bound, rule = tol, "±"+strconv.FormatFloat(tol, 'g', -1, 64)+" absolute, the gold being 0"
	}
	if decimals > 0 {
		if unit := math.Pow10(-decimals); unit > bound {
			bound = unit
			rule = "±" + strconv.FormatFloat(unit, 'f', -1, 64) + ", rounded to " + strconv.Itoa(decimals) + " decimals"
		}
	}
	return bound, rule
}

// answerNumber reads a numeric answer. ok false means it is not a number and
// got says what it is instead.
func answerNumber(text string) (f float64, got string, ok bool) {
	if isThousands(text) {
		text = strings.ReplaceAll(text, ",", "")
	}
	v := readAnswer(text, true)
	if v.kind != kindNumber {
		return 0, describeAnswer(v), false
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range is still a number (±Inf)
		return 0, describeAnswer(v), false
	}
	return f, clipText(v.text), true
}

func gradeString(gold, text string) (bool, string) {
	v := readAnswer(text, false)
	switch v.kind {
	case kindString, kindText, kindNumber:
	default:
		return false, "expected " + quoteClipped(gold) + ", got " + describeAnswer(v)
	}
	if elementKey(v.text) != elementKey(gold) {
		return false, "expected " + quoteClipped(gold) + ", got " + quoteClipped(v.text)
	}
	return true, ""
}

func gradeCollection(typ AnswerType, gold []string, text string) (bool, string) {
	elems, why := answerElements(typ, text)
	if why != "" {
		return false, "expected " + listText(typ, gold) + ", got " + why
	}
	if typ == Set {
		return compareSet(gold, elems)
	}
	return compareList(gold, elems)
}

// answerElements reads a set or list answer as its elements' texts, or says
// why it cannot.
func answerElements(typ AnswerType, text string) (elems []string, why string) {
	v := readAnswer(text, true)
	switch v.kind {
	case kindText, kindString:
		return splitText(v.text), ""
	case kindSet:
		if typ == List {
			return nil, describeAnswer(v) + " (a set has no order)"
		}
	case kindList:
	default:
		return nil, describeAnswer(v)
	}
	elems = make([]string, 0, len(v.items))
	for i, it := range v.items {
		if it.kind != kindString && it.kind != kindNumber {
			return nil, fmt.Sprintf("%s whose element %d is %s, not a string or a number",
				describeAnswer(v), i+1, describeAnswer(it))
		}
		elems = append(elems, it.text)
	}
	return elems, ""
}

// splitText reads comma- or newline-separated text, in brackets or not, as
// its elements; an element that is a quoted string or a number alone is read
// as that literal.
func splitText(s string) []string {
	s = strings.TrimSpace(s)
	if n := len(s); n >= 2 && ((s[0] == '[' && s[n-1] == ']') || (s[0] == '(' && s[n-1] == ')') || (s[0] == '{' && s[n-1] == '}')) {
		s = s[1 : n-1]
	}
	var out []string
	for _, piece := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			continue
		}
		if v, ok := parseLiteral(piece); ok && (v.kind == kindString || v.kind == kindNumber) {
			piece = v.text
		}
		out = append(out, piece)
	}
	return out
}

func compareSet(gold, got []string) (bool, string) {
	want := make(map[string]bool, len(gold))
	for _, g := range gold {
		want[elementKey(g)] = true
	}
	seen := make(map[string]bool, len(got))
	var unexpected, dups []string
	for _, a := range got {
		k := elementKey(a)
		switch {
		case seen[k]:
			dups = append(dups, a)
		case !want[k]:
			unexpected = append(unexpected, a)
		}
		seen[k] = true
	}
	var missing []string
	for _, g := range gold {
		if k := elementKey(g); !seen[k] {
			missing = append(missing, g)
			seen[k] = true // a duplicate in the gold is reported once
		}
	}
	if len(missing) == 0 && len(unexpected) == 0 {
		if len(dups) > 0 {
			return true, "duplicates ignored: " + quoteSome(dups)
		}
		return true, ""
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+quoteSome(missing))
	}
	if len(unexpected) > 0 {
		parts = append(parts, "unexpected "+quoteSome(unexpected))
	}
	return false, fmt.Sprintf("%s (expected %s, got %s)", strings.Join(parts, "; "),
		elements(len(want)), elements(len(got)-len(dups)))
}

func compareList(gold, got []string) (bool, string) {
	if len(gold) != len(got) {
		return false, fmt.Sprintf("expected %s, got %s (%s, not %d)",
			listText(List, gold), listText(List, got), elements(len(got)), len(gold))
	}
	for i := range gold {
		if elementKey(gold[i]) != elementKey(got[i]) {
			return false, fmt.Sprintf("expected %s, got %s (position %d differs)",
				listText(List, gold), listText(List, got), i+1)
		}
	}
	return true, ""
}

// elementKey is the form in which answer and gold texts are compared:
// trimmed, a decimal number canonicalised, case-folded.
func elementKey(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && scanNumber(s, 0) == len(s) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if f == 0 {
				f = 0 // -0 is 0
			}
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return foldKey(s)
}

// foldKey maps each rune to the smallest rune of its case-folding orbit, so
// that foldKey(a) == foldKey(b) exactly when strings.EqualFold(a, b).
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii { // the smallest of {K, k, U+212A KELVIN SIGN} is K
		return strings.ToUpper(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// cleanAnswer removes what surrounds an answer: whitespace, backticks or a
// code fence, an "ANSWER:" prefix, an ANSWER(...) wrapper.
func cleanAnswer(s string) string {
	for {
		prev := s
		s = strings.TrimSpace(s)
		if rest, ok := strings.CutPrefix(s, "```"); ok {
			if i := strings.IndexByte(rest, '\n'); i >= 0 && isFenceTag(rest[:i]) {
				rest = rest[i+1:]
			}
			s = strings.TrimSuffix(strings.TrimSpace(rest), "```")
		}
		s = strings.TrimSpace(strings.Trim(s, "`"))
		if hasPrefixFold(s, "answer:") {
			s = s[len("answer:"):]
		} else if hasPrefixFold(s, "answer(") && strings.HasSuffix(s, ")") {
			s = s[len("answer(") : len(s)-1]
		}
		if s == prev { // every step only removes, so this ends
			return s
		}
	}
}

func isFenceTag(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) > 12 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// isThousands reports whether s is a number with thousands separators,
// such as 1,234 or -12,345,678.5.
func isThousands(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if whole, frac, ok := strings.Cut(s, "."); ok {
		if frac == "" || strings.Trim(frac, "0123456789") != "" {
			return false
		}
		s = whole
	}
	groups := strings.Split(s, ",")
	if len(groups) < 2 || len(groups[0]) < 1 || len(groups[0]) > 3 {
		return false
	}
	for i, g := range groups {
		if strings.Trim(g, "0123456789") != "" || (i > 0 && len(g) != 3) {
			return false
		}
	}
	return true
}

// readAnswer reads answer text as a literal, or as kindText when it is not
// one. With unwrap, a string literal is read again from its contents (at
// most twice), for answers where a string is the wrong kind.
func readAnswer(text string, unwrap bool) answerValue {
	if text == "" {
		return answerValue{kind: kindNull}
	}
	for depth := 0; ; depth++ {
		v, ok := parseLiteral(text)
		if !ok {
			return answerValue{kind: kindText, text: text}
		}
		if v.kind != kindString || !unwrap || depth == 2 {
			return v
		}
		if text = strings.TrimSpace(v.text); text == "" {
			return answerValue{kind: kindNull, text: `""`}
		}
	}
}

// describeAnswer says what an answer is, for a reason.
func describeAnswer(v answerValue) string {
	switch v.kind {
	case kindNull:
		if v.text == "" {
			return "empty text (no answer)"
		}
		return v.text + " (no answer)"
	case kindBool:
		return v.text + " (a boolean)"
	case kindNumber:
		return "the number " + clipText(v.text)
	case kindList:
		return "a list of " + elements(len(v.items))
	case kindSet:
		return "a set of " + elements(len(v.items))
	case kindDict:
		return "a dict"
	}
	return quoteClipped(v.text)
}

func elements(n int) string {
	if n == 1 {
		return "1 element"
	}
	return strconv.Itoa(n) + " elements"
}

// Bounds on what a reason quotes.
const (
	reasonRunes    = 60 // of one text
	reasonElements = 10 // of a list in a reason
	reasonSome     = 5  // of missing, unexpected or duplicate elements
)

func clipText(s string) string {
	if utf8.RuneCountInString(s) <= reasonRunes {
		return s
	}
	return string([]rune(s)[:reasonRunes]) + "…"
}

func quoteClipped(s string) string { return strconv.Quote(clipText(s)) }

// quoteSome quotes the first few of xs: "a", "b" and 3 more.
func quoteSome(xs []string) string {
	var b strings.Builder
	for i, x := range xs[:min(len(xs), reasonSome)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteClipped(x))
	}
	if len(xs) > reasonSome {
		fmt.Fprintf(&b, " and %d more", len(xs)-reasonSome)
	}
	return b.String()
}

// listText renders a gold or an answer: ["a", "b"] for a list, {"a", "b"}
// for a set, the first few elements only.
func listText(typ AnswerType, xs []string) string {
	open, closing := "[", "]"
	if typ == Set {
		open, closing = "{", "}"
	}
	var b strings.Builder
	b.WriteString(open)
	for i, x := range xs[:min(len(xs), reasonElements)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteClipped(x))
	}
	if len(xs) > reasonElements {
		fmt.Fprintf(&b, ", … %d more", len(xs)-reasonElements)
	}
	b.WriteString(closing)
	return b.String()
}

func goldInteger(g any) (int64, bool) {
	switch g := g.(type) {
	case int:
		return int64(g), true
	case int64:
		return g, true
	case float64: // after a JSON round trip
		if g == math.Trunc(g) && math.Abs(g) < 1<<53 {
			return int64(g), true
		}
	}
	return 0, false
}

func goldNumber(g any) (float64, bool) {
	switch g := g.(type) {
	case float64:
		return g, true
	case int:
		return float64(g), true
	case int64:
		return float64(g), true
	}
	return 0, false
}

func goldStrings(g any) ([]string, bool) {
	switch g := g.(type) {
	case []string:
		return g, true
	case []any: // after a JSON round trip
		out := make([]string, len(g))
		for i, x := range g {
			switch x := x.(type) {
			case string:
				out[i] = x
			case float64:
				out[i] = strconv.FormatFloat(x, 'f', -1, 64)
			default:
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// The literal reader: one JSON value or Python literal, never evaluated.

type answerKind int

const (
	kindText   answerKind = iota // not a literal; text is the whole answer
	kindNull                     // None or null; text is how it was written ("" for empty text)
	kindBool                     // text is how it was written
	kindNumber                   // text is the number as written, a valid strconv.ParseFloat input
	kindString                   // text is the decoded contents
	kindList                     // a list or tuple; items
	kindSet                      // items
	kindDict                     // items are its keys, values their values
)

type answerValue struct {
	kind   answerKind
	text   string
	items  []answerValue
	values []answerValue // a dict's, one for each of items
}

// maxLiteralDepth bounds the nesting of brackets the reader follows.
const maxLiteralDepth = 64

type literalReader struct {
	s     string
	i     int
	depth int
}

// parseLiteral reads s as one literal or a bare tuple (a, b) to its end;
// ok is false when s is not that.
func parseLiteral(s string) (answerValue, bool) {
	p := &literalReader{s: s}
	v, ok := p.value()
	if !ok {
		return v, false
	}
	p.space()
	if p.peek() == ',' { // a bare tuple: 'a', 'b'
		items := []answerValue{v}
		for p.peek() == ',' {
			p.i++
			if p.space(); p.i == len(p.s) {
				break
			}
			if v, ok = p.value(); !ok {
				return v, false
			}
			items = append(items, v)
			p.space()
		}
		v = answerValue{kind: kindList, items: items}
	}
	return v, p.i == len(p.s)
}

func (p *literalReader) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *literalReader) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *literalReader) value() (answerValue, bool) {
	p.space()
	switch c := p.peek(); {
	case c == '[' || c == '(' || c == '{':
		return p.seq()
	case c == '"' || c == '\'':
		s, ok := p.str()
		return answerValue{kind: kindString, text: s}, ok
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		end := scanNumber(p.s, p.i)
		v := answerValue{kind: kindNumber, text: p.s[p.i:end]}
		p.i = end
		return v, v.text != ""
	case isNameStart(c):
		return p.name()
	}
	return answerValue{}, false
}

// seq reads a [list], a (tuple), a {set} or a {dict}. (x) is x; {} is a dict.
func (p *literalReader) seq() (answerValue, bool) {
	open := p.s[p.i]
	closing, v := byte(']'), answerValue{kind: kindList}
	switch open {
	case '(':
		closing = ')'
	case '{':
		closing, v.kind = '}', kindSet
	}
	if p.depth++; p.depth > maxLiteralDepth {
		return v, false
	}
	defer func() { p.depth-- }()
	p.i++
	trailing := false // the last item was followed by a comma
	for {
		p.space()
		switch c := p.peek(); {
		case c == 0 && p.i == len(p.s):
			return v, false
		case c == closing:
			p.i++
			switch {
			case open == '(' && len(v.items) == 1 && !trailing:
				return v.items[0], true
			case open == '{' && len(v.items) == 0:
				v.kind = kindDict
			}
			return v, true
		case len(v.items) > 0 && !trailing:
			return v, false
		}
		item, ok := p.value()
		if !ok {
			return v, false
		}
		p.space()
		if open == '{' && p.peek() == ':' {
			if len(v.items) > len(v.values) { // {a, b: c} is neither a set nor a dict
				return v, false
			}
			p.i++
			val, ok := p.value()
			if !ok {
				return v, false
			}
			v.kind = kindDict
			v.values = append(v.values, val)
			p.space()
		} else if v.kind == kindDict {
			return v, false // {a: b, c}
		}
		v.items = append(v.items, item)
		if trailing = p.peek() == ','; trailing {
			p.i++
		}
	}
}

// str reads a string in single or double quotes with JSON and Python
// escapes; an unknown escape is kept as written, as Python does.
func (p *literalReader) str() (string, bool) {
	quote := p.s[p.i]
	p.i++
	start := p.i
	var b []byte // nil until the first escape
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == quote {
			p.i++
			if b == nil {
				return p.s[start : p.i-1], true
			}
			return string(b), true
		}
		if c == '\n' {
			return "", false
		}
		if c != '\\' {
			if b != nil {
				b = append(b, c)
			}
			p.i++
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, 2*(p.i-start)+8), p.s[start:p.i]...)
		}
		if p.i+1 >= len(p.s) {
			return "", false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case 'r':
			b = append(b, '\r')
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case '0':
			b = append(b, 0)
		case '\\', '\'', '"', '/':
			b = append(b, e)
		case '\n': // a line continuation
		case 'x', 'u', 'U':
			n := 2
			if e == 'u' {
				n = 4
			} else if e == 'U' {
				n = 8
			}
			r, ok := p.hex(n)
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) && strings.HasPrefix(p.s[p.i:], `\u`) {
				save := p.i
				p.i += 2
				if lo, ok := p.hex(4); ok && utf16.DecodeRune(r, lo) != utf8.RuneError {
					r = utf16.DecodeRune(r, lo)
				} else {
					p.i = save
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			b = append(b, '\\', e)
		}
	}
	return "", false
}

// hex reads n hex digits as a rune; an invalid one becomes U+FFFD when written.
func (p *literalReader) hex(n int) (rune, bool) {
	if p.i+n > len(p.s) {
		return 0, false
	}
	u, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += n
	return rune(u), true
}

// name reads True, False, None, true, false, null, nan, inf, and the calls
// set(...), frozenset(...), list(...), tuple(...), np.T(x) and numpy.T(x).
func (p *literalReader) name() (answerValue, bool) {
	start := p.i
	for p.i < len(p.s) && (isNameChar(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	name := p.s[start:p.i]
	switch name {
	case "True", "False", "true", "false":
		return answerValue{kind: kindBool, text: name}, true
	case "None", "null":
		return answerValue{kind: kindNull, text: name}, true
	case "nan", "inf", "NaN", "Infinity":
		return answerValue{kind: kindNumber, text: name}, true
	}
	if p.peek() != '(' {
		return answerValue{}, false
	}
	arg, ok := p.seq() // () is an empty tuple, (x) is x
	if !ok {
		return arg, false
	}
	collection := arg.kind == kindList || arg.kind == kindSet
	switch {
	case (name == "set" || name == "frozenset") && collection:
		arg.kind = kindSet
	case (name == "list" || name == "tuple") && collection:
		arg.kind = kindList
	case strings.HasPrefix(name, "np.") || strings.HasPrefix(name, "numpy."):
	default:
		return arg, false
	}
	return arg, true
}

// scanNumber returns the end of the decimal number (sign, digits, fraction,
// exponent) that starts at s[i], or i when none does.
func scanNumber(s string, i int) int {
	j := i
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	digits := 0
	for ; j < len(s) && isDigit(s[j]); j++ {
		digits++
	}
	if j < len(s) && s[j] == '.' {
		for j++; j < len(s) && isDigit(s[j]); j++ {
			digits++
		}
	}
	if digits == 0 {
		return i
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
func isNameStart(c byte) bool { return c == '_' || ('a' <= c|0x20 && c|0x20 <= 'z') }
func isNameChar(c byte) bool  { return isNameStart(c) || isDigit(c) }
