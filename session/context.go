package session

// Context policies: what a conversation that outgrows its window shows the
// model (DESIGN.md, "Staged workloads"; seed 004's T0, T1, T3 and T4).
// The request is split as the seed splits it:
//
//	pinned  the stable part (rules, tools, the prefix's cells) and the
//	        question being answered: never touched, so that provider
//	        prompt caches still hit and the task is never lost
//	recent  the last turns (cells), as many as fit Recent·Window tokens
//	        and never fewer than MinRecent: never touched
//	middle  everything between: the earlier questions, their cells, the
//	        current question's older cells, an earlier summary
//
// elide: when the request passes Soft·Window tokens, the outputs of the
// middle's cells become one-line stubs that say what was elided and where
// the value still lives in the kernel (Cell.Elided). No model call.
// summarize: when it passes Hard·Window, the middle's earlier questions and
// cells (with an earlier summary) are folded into one summary by one
// tool-free call of the same model (FoldRequest); the caller makes the call
// and counts it. The current question's own cells are elided, never folded,
// so that the question always precedes what answers it.
// staged: both, elision first.

import (
	"fmt"
	"strings"
)

// Policy names a context policy.
type Policy string

// The policies.
const (
	PolicyNone      Policy = "none"      // T0: the history as it is
	PolicyElide     Policy = "elide"     // T1: stale cell outputs become stubs
	PolicySummarize Policy = "summarize" // T3: the old middle is folded into a summary
	PolicyStaged    Policy = "staged"    // T4: elision at the soft threshold, a summary at the hard one
)

// Policies lists the policies.
func Policies() []Policy { return []Policy{PolicyNone, PolicyElide, PolicySummarize, PolicyStaged} }

// ParsePolicy reads a policy name; "" is none.
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return PolicyNone, nil
	}
	for _, p := range Policies() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown context policy %q: expected none, elide, summarize or staged", s)
}

func (p Policy) elides() bool { return p == PolicyElide || p == PolicyStaged }
func (p Policy) folds() bool  { return p == PolicySummarize || p == PolicyStaged }

// Defaults of a context policy: seed 004's thresholds.
const (
	DefaultWindow    = 128_000
	DefaultSoft      = 0.6
	DefaultHard      = 0.85
	DefaultRecent    = 0.3
	DefaultMinRecent = 2
)

// Context is a context policy over a window of tokens. The zero value of
// each field means its default; the zero Context is policy none.
type Context struct {
	Policy Policy
	// Window is the tokens the thresholds are shares of.
	Window int
	// Soft and Hard are the shares of Window past which elide and
	// summarize act; Recent the share the recent turns may take.
	Soft, Hard, Recent float64
	// MinRecent is the fewest turns kept whole, whatever their size.
	MinRecent int
}

// WithDefaults fills the zero fields with the defaults.
func (c Context) WithDefaults() Context {
	if c.Policy == "" {
		c.Policy = PolicyNone
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Soft <= 0 {
		c.Soft = DefaultSoft
	}
	if c.Hard <= 0 {
		c.Hard = DefaultHard
	}
	if c.Recent <= 0 {
		c.Recent = DefaultRecent
	}
	if c.MinRecent <= 0 {
		c.MinRecent = DefaultMinRecent
	}
	return c
}

// Check says whether c's figures make sense, in words for the flags.
func (c Context) Check() error {
	if _, err := ParsePolicy(string(c.Policy)); err != nil {
		return err
	}
	c = c.WithDefaults()
	for _, f := range []struct {
		name string
		v    float64
	}{{"soft threshold", c.Soft}, {"hard threshold", c.Hard}, {"recent share", c.Recent}} {
		if f.v > 1 {
			return fmt.Errorf("the %s is %g, a share of the window: expected a number above 0 and at most 1", f.name, f.v)
		}
	}
	if c.Policy == PolicyStaged && c.Soft > c.Hard {
		return fmt.Errorf("the soft threshold %g is above the hard one %g: staged elides first, so expected soft ≤ hard", c.Soft, c.Hard)
	}
	return nil
}

// String describes c in a few words, for a cost line or a log.
func (c Context) String() string {
	c = c.WithDefaults()
	switch c.Policy {
	case PolicyNone:
		return "none"
	case PolicyElide:
		return fmt.Sprintf("elide at %g of %d tokens", c.Soft, c.Window)
	case PolicySummarize:
		return fmt.Sprintf("summarize at %g of %d tokens", c.Hard, c.Window)
	}
	return fmt.Sprintf("staged: elide at %g, summarize at %g of %d tokens", c.Soft, c.Hard, c.Window)
}

// Plan is what a context policy makes of one request.
type Plan struct {
	// Input is the input to render: the caller's, with the middle's cell
	// outputs elided when the policy elides.
	Input Input
	// Request is Input rendered, and Tokens its count.
	Request Request
	Tokens  int
	// Elided counts the cells shown as stubs.
	Elided int
	// Fold, when above 0, says the request passed the hard threshold: the
	// first Fold turns of Input.Earlier (FlatTurns order) should be folded
	// into the summary (FoldRequest, then Folded) and the plan made again.
	Fold int
}

// turn is one turn of the history: an earlier question (stage i, cell -1),
// or a cell (of Earlier[stage], or of New when stage is len(Earlier)).
type turn struct{ stage, cell int }

// Plan applies the policy to in for protocol p, counting tokens with enc.
func (c Context) Plan(enc Encoding, p Protocol, in Input) (Plan, error) {
	c = c.WithDefaults()
	pl := Plan{Input: in}
	count := func() error {
		req, err := Render(p, pl.Input)
		if err != nil {
			return err
		}
		pl.Request = req
		pl.Tokens, err = CountRequest(enc, req)
		return err
	}
	if err := count(); err != nil || c.Policy == PolicyNone {
		return pl, err
	}
	soft, hard := int(c.Soft*float64(c.Window)), int(c.Hard*float64(c.Window))
	if pl.Tokens <= soft && pl.Tokens <= hard {
		return pl, nil
	}
	turns := flatTurns(in)
	if p == CLI {
		in.Transcript.Language = shellOutput // sizes as the cli protocol shows outputs
	}
	middle, err := c.middle(enc, in, turns)
	if err != nil {
		return pl, err
	}
	if c.Policy.elides() && pl.Tokens > soft {
		lang := pl.Input.Transcript.Language
		pl.Input, pl.Elided = elide(in, turns[:middle], lastRestart(in, turns))
		pl.Input.Transcript.Language = lang
		if pl.Elided > 0 {
			if err := count(); err != nil {
				return pl, err
			}
		}
	}
	if c.Policy.folds() && pl.Tokens > hard {
		// Only the earlier stages' turns fold; the current question's cells
		// come after it and stay (elided at most).
		for _, t := range turns[:middle] {
			if t.stage < len(in.Earlier) {
				pl.Fold++
			}
		}
	}
	return pl, nil
}

// flatTurns lists in's history turn by turn: each earlier question, then
// its cells, then the current question's cells.
func flatTurns(in Input) []turn {
	var ts []turn
	for i, st := range in.Earlier {
		if st.Question != "" {
			ts = append(ts, turn{i, -1})
		}
		for j := range st.Cells {
			ts = append(ts, turn{i, j})
		}
	}
	for j := range in.New {
		ts = append(ts, turn{len(in.Earlier), j})
	}
	return ts
}

// middle is how many turns come before the recent ones: the recent turns
// are the last cells that fit Recent·Window tokens together, never fewer
// than MinRecent cells (a question goes with the cells after it).
func (c Context) middle(enc Encoding, in Input, turns []turn) (int, error) {
	budget := int(c.Recent * float64(c.Window))
	lang := in.Transcript.Language
	used, cells := 0, 0
	i := len(turns)
	for i > 0 {
		t := turns[i-1]
		var text string
		if t.cell < 0 {
			text = in.Earlier[t.stage].Question
		} else {
			cell := cellOf(in, t)
			text = cell.Code + "\n" + cell.Output(lang, in.Budget)
		}
		n, err := CountTokens(enc, text)
		if err != nil {
			return 0, err
		}
		if t.cell >= 0 && cells >= c.MinRecent && used+n > budget {
			break
		}
		used += n
		if t.cell >= 0 {
			cells++
		}
		i--
	}
	return i, nil
}

func cellOf(in Input, t turn) Cell {
	if t.stage == len(in.Earlier) {
		return in.New[t.cell]
	}
	return in.Earlier[t.stage].Cells[t.cell]
}

// minElide is the shortest output worth a stub: a stub is about this long.
const minElide = 160

// lastRestart is the index in turns of the last cell at which the kernel
// restarted, -1 when it never did.
func lastRestart(in Input, turns []turn) int {
	for i := len(turns) - 1; i >= 0; i-- {
		if t := turns[i]; t.cell >= 0 && cellOf(in, t).Restarted {
			return i
		}
	}
	return -1
}

// elide returns in with the outputs of the cells among turns shown as
// stubs, and how many it elided; it copies what it changes. The cells up
// to the turn restarted (lastRestart) lost their values in the kernel.
func elide(in Input, turns []turn, restarted int) (Input, int) {
	n := 0
	lang := in.Transcript.Language
	earlier := append([]Stage(nil), in.Earlier...)
	copied := map[int]bool{}
	var fresh []Cell
	for i, t := range turns {
		if t.cell < 0 {
			continue
		}
		c := cellOf(in, t)
		if c.Elided || len(c.Output(lang, in.Budget)) <= minElide {
			continue
		}
		c.Elided, c.Lost = true, i <= restarted
		n++
		if t.stage == len(in.Earlier) {
			if fresh == nil {
				fresh = append([]Cell(nil), in.New...)
			}
			fresh[t.cell] = c
			continue
		}
		if !copied[t.stage] {
			earlier[t.stage].Cells = append([]Cell(nil), earlier[t.stage].Cells...)
			copied[t.stage] = true
		}
		earlier[t.stage].Cells[t.cell] = c
	}
	in.Earlier = earlier
	if fresh != nil {
		in.New = fresh
	}
	return in, n
}

// Folded returns in with the first n turns of in.Earlier (in the order of
// Plan's turns) replaced by summary.
func Folded(in Input, n int, summary string) Input {
	var rest []Stage
	for _, st := range in.Earlier {
		if n <= 0 {
			rest = append(rest, st)
			continue
		}
		if st.Question != "" {
			n--
			st.Question = ""
		}
		k := min(n, len(st.Cells))
		n -= k
		if cells := st.Cells[k:]; len(cells) > 0 {
			rest = append(rest, Stage{Question: st.Question, Cells: cells})
		}
	}
	in.Earlier, in.Summary = rest, summary
	return in
}

// Summary is the protocol of a fold: one tool-free request whose reply is
// the summary (FoldRequest). It is no condition's protocol.
const Summary Protocol = "summary"

// FoldRequest is the tool-free request that folds the first n turns of
// in.Earlier, with in's summary so far, into a new summary.
func FoldRequest(in Input, n int) Request {
	lang := in.Transcript.Language
	var b strings.Builder
	if in.Summary != "" {
		b.WriteString("Summary so far:\n" + strings.TrimSpace(in.Summary) + "\n\n")
	}
	b.WriteString("Turns to fold:\n")
	for _, st := range in.Earlier {
		if n <= 0 {
			break
		}
		if st.Question != "" {
			b.WriteString("\nQuestion: " + st.Question + "\n")
			n--
		}
		for _, c := range st.Cells {
			if n <= 0 {
				break
			}
			b.WriteString("\n" + c.Text(lang, in.Budget))
			n--
		}
	}
	rules := "You fold the older turns of a live " + langName(lang) + " data-analysis session into a summary that replaces them; " +
		"the session goes on, and what the cells bound is still bound in the kernel. " +
		"Keep every question with its answer (the ANSWER values), the names of the variables the cells bound and what they hold, " +
		"facts found about the data, and mistakes to avoid. Plain text, short; no code blocks. Reply with the summary only."
	return Request{Protocol: Summary, Messages: []Message{{Role: "system", Content: rules}, {Role: "user", Content: b.String()}}, Stable: 1, Asked: 1}
}

// SummaryFallback is a summary made without a model: the folded questions
// and their answers, in order. The reference model replies with it.
func SummaryFallback(text string) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "Summary so far:"), l == "Turns to fold:":
		case strings.HasPrefix(l, "Question: "), strings.HasPrefix(l, "ANSWER: "):
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(nothing to keep)"
	}
	return strings.Join(lines, "\n")
}
