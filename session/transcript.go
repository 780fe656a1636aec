package session

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxcode/ctxcode/kernel"
)

// DefaultBudget is how many characters of one cell's rendered output the
// model sees when no budget is set. Longer output keeps its head and tail.
const DefaultBudget = 2000

// Provenance says who wrote a cell.
type Provenance string

// Who writes cells.
const (
	FromPrefix Provenance = "prefix" // a cell of the prefix, run before the model spoke
	FromModel  Provenance = "model"  // a cell the model wrote
)

// Transcript is a session: its cells in the order they ran, and the
// language of the kernel that ran them.
type Transcript struct {
	Language kernel.Language
	Cells    []Cell
}

// Note is the one form every remark of the harness takes in what the model
// reads, so it is never mistaken for the program's own output.
func Note(text string) string { return "[ctxcode: " + text + "]" }

// Output is the cell's output as the model reads it in the message
// protocols: harness notes first, then stdout, stderr, and "Out[n]: value",
// the compact traceback, or "ANSWER: <json>", then the notes of After. A part that does not fit
// budget characters (DefaultBudget when budget is 0; no limit when it is
// negative) keeps its head and tail around a note that says how much was
// cut and where the full text lives (Out[n], _stdout[n], _stderr[n]).
// A cell with no output at all reads "[ctxcode: no output]".
func (c Cell) Output(lang kernel.Language, budget int) string {
	if c.Elided {
		var b strings.Builder
		c.writeStub(&b, lang)
		return strings.TrimSuffix(b.String(), "\n")
	}
	var b strings.Builder
	c.writeOutput(&b, lang, budget)
	if b.Len() == 0 {
		return Note("no output")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// writeOutput writes the harness's notes, then the output within budget.
func (c Cell) writeOutput(b *strings.Builder, lang kernel.Language, budget int) {
	for _, n := range c.Notes {
		b.WriteString(Note(n))
		b.WriteByte('\n')
	}
	parts := c.outputParts(lang)
	fit(parts, budget)
	for _, p := range parts {
		writeBlock(b, p.text)
	}
	for _, n := range c.After {
		b.WriteString(Note(n))
		b.WriteByte('\n')
	}
}

// part is one piece of a cell's output: its text (with the "Out[n]: "
// label), the name of what it is, where a program can find all of it, and
// how many bytes of it the kernel itself dropped at its cap (then the home
// holds only what the kernel kept, and the full text is nowhere).
type part struct {
	text, what, home string
	kernelCut        int64
}

func (c Cell) outputParts(lang kernel.Language) []*part {
	r := c.Result
	n := strconv.Itoa(r.Count)
	keeps := lang == kernel.Python || lang == ""
	home := func(v string) string {
		if keeps && r.Count > 0 {
			return v + "[" + n + "]"
		}
		return ""
	}
	// The kernel marks a stream it cut at its cap with its dropped line.
	cutByKernel := func(text string) int64 {
		if r.DroppedBytes == 0 {
			return 0
		}
		return kernel.DroppedIn(text)
	}
	var parts []*part
	if r.Stdout != "" {
		parts = append(parts, &part{r.Stdout, "printed output", home("_stdout"), cutByKernel(r.Stdout)})
	}
	if r.Stderr != "" {
		parts = append(parts, &part{r.Stderr, "standard error", home("_stderr"), cutByKernel(r.Stderr)})
	}
	switch {
	case r.Error != nil && r.Status != kernel.StatusOK:
		tb := r.Error.Traceback
		if tb == "" {
			tb = r.Error.Name + ": " + r.Error.Value
		}
		parts = append(parts, &part{text: tb, what: "traceback"})
	case r.Answered():
		parts = append(parts, &part{text: "ANSWER: " + string(r.Answer), what: "answer"})
	case r.Value != "":
		label := "Out[" + n + "]: " // IPython's: a value of several lines starts on the next
		if strings.Contains(r.Value, "\n") {
			label += "\n"
		}
		// Out[n] holds the value itself, not its text: it is whole even when
		// the kernel cut the text.
		parts = append(parts, &part{text: label + r.Value, what: "value", home: home("Out")})
	}
	return parts
}

// fit cuts the parts so that together they take at most budget characters:
// short parts stay whole and the long ones share what is left equally.
func fit(parts []*part, budget int) {
	if budget == 0 {
		budget = DefaultBudget
	}
	if budget < 0 {
		return
	}
	sizes := make([]int, len(parts))
	total := 0
	for i, p := range parts {
		sizes[i] = utf8.RuneCountInString(p.text)
		total += sizes[i]
	}
	if total <= budget {
		return
	}
	// Give each part in turn, shortest first, an equal share of what is left.
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && sizes[order[j]] < sizes[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	left := budget
	for k, i := range order {
		share := left / (len(order) - k)
		if sizes[i] <= share {
			left -= sizes[i]
			continue
		}
		parts[i].text = cut(parts[i], share)
		left -= share
	}
}

// cut keeps about keep characters of p, its head and its tail by the one
// rule of kernel.Cut, around a note saying what was cut and where the full
// text is, if anywhere.
func cut(p *part, keep int) string {
	head, tail, dropped := kernel.Cut(p.text, keep)
	msg := strconv.Itoa(dropped) + " characters of the " + p.what + " cut here"
	switch {
	case p.kernelCut > 0:
		msg += "; the kernel dropped " + strconv.FormatInt(p.kernelCut, 10) +
			" bytes of it past its output cap, so the full text is kept nowhere: print a smaller part of it"
	case p.home != "" && p.what == "value":
		msg += "; the whole value is still in the variable " + p.home
	case p.home != "":
		msg += "; the full text is in the variable " + p.home
	case p.what == "traceback":
		msg += "; the full traceback is kept nowhere"
	default:
		msg += "; the full text is kept nowhere: show a smaller part of it"
	}
	note := Note(msg)
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return head + note + "\n" + tail
}

// writeStub writes an elided cell's output: the harness's notes, one note
// that says how much was elided and where the full value still lives in
// the kernel (nowhere when the kernel restarted since: Lost), and the
// notes after it.
func (c Cell) writeStub(b *strings.Builder, lang kernel.Language) {
	var whole strings.Builder
	for _, p := range c.outputParts(lang) {
		writeBlock(&whole, p.text)
	}
	size := utf8.RuneCountInString(strings.TrimSuffix(whole.String(), "\n"))
	msg := "output elided to save context (" + strconv.Itoa(size) + " characters)"
	n := strconv.Itoa(c.Result.Count)
	var homes []string
	if (lang == kernel.Python || lang == "") && c.Result.Count > 0 && !c.Lost {
		if c.Result.Stdout != "" {
			homes = append(homes, "_stdout["+n+"]")
		}
		if c.Result.Value != "" && c.Result.Status == kernel.StatusOK && !c.Result.Answered() {
			homes = append(homes, "Out["+n+"]")
		}
	}
	switch {
	case lang == shellOutput:
		msg += "; run the command again to see it"
	case len(homes) > 0:
		msg += "; it is still in " + strings.Join(homes, " and ")
	default:
		msg += "; run the cell again to see it"
	}
	for _, t := range c.Notes {
		b.WriteString(Note(t) + "\n")
	}
	b.WriteString(Note(msg) + "\n")
	for _, t := range c.After {
		b.WriteString(Note(t) + "\n")
	}
}
