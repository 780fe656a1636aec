// Package session holds a notebook session as text and turns it into what a
// model reads.
//
// A Transcript is the cells of a session in the order they ran, each with
// its code, its real kernel.Result and who wrote it (the prefix or the
// model). A rendered cell is
//
//	In [2]: total = sum(xs)
//	   ...: total
//	<notes of the harness, each as "[ctxcode: ...]">
//	<stdout, then stderr, as the cell wrote them>
//	Out[2]: 42
//
// A value that spans several lines starts on the line after "Out[n]: ", as
// in IPython. A failed cell shows its compact traceback instead of Out; a
// cell that called ANSWER shows "ANSWER: <json>".
//
// Output budget: a cell's output over the budget (DefaultBudget characters)
// keeps its head and tail (by the one rule of kernel.Cut) around a note
// saying how many characters were cut and where the full text lives: Out[n]
// for a value, _stdout[n] and _stderr[n] for printed text (the Python
// driver keeps both), or that it is kept nowhere, when the kernel itself
// dropped bytes of it at its output cap.
//
// The history holds each cell as it ran: after a repair, the next request
// holds the code that ran, and the note saying what was changed begins the
// output; the model's original message lives on in the trajectory.
//
// Protocols: Render turns (rules, transcript, question, new cells) into the
// messages and tools of one model call, for each protocol of the ladder:
//
//   - bare (D): system rules; prefix cells as assistant (code only) and user
//     (output) messages; the question; then the run's cells the same way.
//   - eval (B, B0): one eval(code) tool; prefix cells as assistant tool calls
//     and tool results; the question; then the run's calls.
//   - transcript (C): one user message: rules, the session as In/Out text,
//     the question, and the instruction to reply with one code block.
//   - cli (A): read and bash tools, the skill document, no prefix.
//
// The stable part (rules, tools, prefix) comes first and is byte-identical
// for every question, so provider prompt caches can hit. Rendering is a pure
// function: the same input always gives the same bytes. CountRequest counts
// a request's tokens in a real vocabulary, framing and tool schemas included.
package session

import (
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/kernel"
)

// Cell is one executed cell of a session.
type Cell struct {
	Code   string
	Result kernel.Result
	From   Provenance // who wrote it; "" reads as the prefix
	// Notes are the harness's remarks on the cell (a repair it made, a
	// restarted kernel), shown before its output, each as Note(text).
	Notes []string
	// After are remarks of the harness shown after the output, never cut,
	// each as Note(text): how a bash command ended (its exit status), which
	// lines of a file a read returned.
	After []string
	// Reply is the model's message exactly as it came, for the trajectory.
	// The history holds the cell as it ran: the bare protocol replays Code,
	// and Reply only when Code is empty (the message had no code, nothing
	// ran). In the tool protocols Reply is the text that came with the call.
	Reply string
	// Call is the tool call the model made, for the tool protocols, as it
	// came. The eval protocol replays it with the code that ran when a
	// repair changed it (see Render). Nil for cells the harness fabricates
	// (the prefix), which become eval calls, and for a model's message with
	// neither call nor code (cut at the output-token limit), which is
	// replayed as text with the notes as a user message.
	Call *ToolCall
	// Elided says a context policy shows the cell's output as a one-line
	// stub (Output), to save context; the cell's code and the harness's
	// notes stay. Lost says the kernel restarted at or after the cell, so
	// its Out[n] and _stdout[n] are gone: the stub does not send the model
	// there.
	Elided, Lost bool
	// Restarted says the kernel was restarted at this cell (its notes say
	// so): what the cells before it bound is gone.
	Restarted bool
}

// Stage is one question of a conversation that came before the one being
// answered, with the cells it ran. A Question of "" is the rest of a stage
// whose beginning a context policy folded into the summary.
type Stage struct {
	Question string
	Cells    []Cell
}

// Render writes the cell IPython style, ending with a newline, with all of
// its output.
func (c Cell) Render() string { return c.Text("", -1) }

// Text writes the cell IPython style: its code after "In [n]: ", the
// harness's notes, and its output within budget characters (see Output).
func (c Cell) Text(lang kernel.Language, budget int) string {
	var b strings.Builder
	n := strconv.Itoa(c.Result.Count)
	in := "In [" + n + "]: "
	cont := strings.Repeat(" ", len(in)-5) + "...: "
	for i, line := range strings.Split(strings.TrimRight(c.Code, "\n"), "\n") {
		if i == 0 {
			b.WriteString(in)
		} else {
			b.WriteString(cont)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if c.Elided {
		c.writeStub(&b, lang)
		return b.String()
	}
	c.writeOutput(&b, lang, budget)
	return b.String()
}

func writeBlock(b *strings.Builder, s string) {
	if s == "" {
		return
	}
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}
