package report

// Trajectories as Jupyter notebooks (`ctxcode notebook TRAJECTORY`).
//
// A trajectory is the JSON-lines file agent.Run writes (`ctxcode ask
// --trajectory F`, RUNDIR/trajectories/*.jsonl), in the schema of
// session/trajectory.go, and read here only with session.ReadTrajectory.
// A file holds one run or several, each from its "run" event to the next.
// Events this file shows: run, prefix, call, cell, restart, answer, end
// and grade (a discarded call is in the run's cost, not shown); what the
// reader passed over (fields and event kinds it does not know) is listed
// in a last Markdown cell.
//
// TrajectoryNotebook writes an nbformat 4.5 notebook in the layout of
// prefixes.ExportNotebook (sorted keys, one-space indent, text as lists of
// lines, ids "cell-1", "cell-2", ...; the same trajectory always gives the
// same bytes). For each run, in order:
//
//  1. a Markdown cell: the run's header (condition and protocol, model,
//     task, question, prefix or skill document, data, budgets, start);
//  2. the prefix: a Markdown cell, then one code cell per prefix cell.
//     The prefix event records the built cells ("results": each cell's
//     code and its kernel.Result's fields), so they are shown with the
//     kernel's execution counts and outputs (see Outputs below). Older
//     trajectories, without "results", record the prefix's name, source
//     and sha256 only: its cells are read again with prefixes.Load and
//     shown when their sha256 is the run's, with no outputs, execution
//     count null, and a note saying the outputs were not recorded;
//  3. per model call, a Markdown cell "Turn n": the call's cost (messages,
//     prompt and output tokens, finish reason, or its error) and the
//     model's words outside code: a tool protocol's text beside its calls
//     (condition A's prose), or what a repair took out of a message (prose
//     around a code block); a message that was changed otherwise (prompts
//     stripped) is shown whole, fenced;
//  4. per cell of that call, a code cell with the code that ran and the
//     execution count the kernel reported (null for a cell that did not
//     run: a repeat, a dead kernel), then a Markdown cell with the
//     harness's notes on it (repairs, repeats, restarts, a message cut at
//     the output-token limit, an output cut to the budget, how a command
//     ended). Condition A's bash calls are code cells "%%bash\n<command>"
//     (IPython's cell magic, so that the cell reruns in Jupyter with data/
//     beside it; ctxcode ran the command with /bin/sh -c in the sandbox),
//     with no execution count, as a command has none; its read calls are
//     code cells holding one comment, "# read <arguments as they came>",
//     since a read is served by ctxcode, not code, and their output is the
//     numbered lines. A call whose arguments did not read is a Markdown
//     cell with them. A kernel restart is a Markdown cell after the
//     cell whose code killed the kernel (and that cell's notes);
//  5. a Markdown cell "Answer": the value and its source, the status and
//     the run's cost, and the grade (verdict, reason, gold).
//
// Outputs. A cell event records "output", the text the model read (the
// notes, stdout and stderr, then "Out[n]: value", the compact traceback or
// "ANSWER: <json>", within the output budget), and beside it the kernel's
// own result: "stdout", "stderr", "value", "error" (each left out when
// empty) and "answer", as a kernel.Result has them, uncut but for the
// kernel's output cap. The outputs are then those of
// prefixes.ExportNotebook: a stdout stream, a stderr stream, then an error,
// an ANSWER display or an execute_result; where the budget cut "output",
// the notebook shows the whole output and the note below the cell says the
// model read it cut, with the cut's own words (how much, and where the
// rest is). Older trajectories record only "output": its notes are taken
// out (they become the Markdown cell), its last part becomes the
// execute_result, the error (ename and evalue from the traceback's last
// line) or the ANSWER display, and what comes before it is one stdout
// stream: stdout and stderr are not apart in that text, and what the
// budget cut stays cut, with its note in place. A cell with nothing
// recorded beside "output" (no stdout, stderr, value or error) is read the
// older way, which gives the same outputs. Condition A's commands record
// stdout and stderr as one stream, as the shell op returns them, and its
// reads the numbered lines, both as "stdout". Not recorded: the skill
// document's text (only its sha256 and size), and what the kernel's output
// cap dropped (only how many bytes).
//
// The notebook's metadata has the kernelspec and language_info of the
// prefix's language (python3, or gophernotes for Go) and a "ctxcode"
// object {"runs": [{condition, model, task, question}], "generated": the
// mark of bench.Stamp}, by which a later report knows the notebook is its
// own and unchanged (edited in Jupyter, it is the user's).
//
// Text is split into lines as prefixes.NotebookLines does; the output
// maps repeat, in a few lines, those prefixes/notebook.go makes from a
// kernel.Result, which this package does not import (it reads results as
// the trajectory's session.CellEvent holds them).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// TrajectoryNotebook reads a trajectory from r and writes it as a Jupyter
// notebook (nbformat 4.5) with the outputs the trajectory recorded; see the
// top of this file for what each cell holds. It reads r with
// session.ReadTrajectory: input that is not a trajectory is a
// *session.TrajectoryError naming its line; a last line cut short (a run
// killed while writing it) is not an error, and what the reader passed
// over (fields and events this version does not know) is not either: the
// notebook ends with a note on each.
func TrajectoryNotebook(r io.Reader) ([]byte, error) {
	l, err := session.ReadTrajectory(r)
	if err != nil {
		return nil, err
	}
	runs, cut := l.Runs(), l.Torn
	b := &nbBuilder{}
	lang := "python"
	meta := []map[string]any{}
	for i, run := range runs {
		if i == 0 {
			lang = language(run)
		}
		meta = append(meta, map[string]any{"condition": run.Run.Condition, "model": run.Run.Model,
			"task": run.Run.Task, "question": run.Run.Question})
		b.run(run, i, len(runs))
	}
	if cut > 0 {
		b.markdown(fmt.Sprintf("*The trajectory ends in a line cut short (line %d): the run was stopped while it wrote it, and what that line held is lost.*", cut))
	}
	if len(l.Skipped) > 0 {
		var t strings.Builder
		t.WriteString("*Read past in the trajectory:*\n\n")
		for _, sk := range l.Skipped {
			t.WriteString("- " + mdText(sk) + "\n")
		}
		b.markdown(t.String())
	}
	md := map[string]any{}
	for k, v := range nbLanguages[lang] {
		md[k] = v
	}
	md["ctxcode"] = map[string]any{"runs": meta, "generated": bench.GeneratedMark}
	nb := struct {
		Cells         []map[string]any `json:"cells"`
		Metadata      map[string]any   `json:"metadata"`
		NBFormat      int              `json:"nbformat"`
		NBFormatMinor int              `json:"nbformat_minor"`
	}{b.cells, md, 4, 5}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(nb); err != nil {
		return nil, fmt.Errorf("trajectory notebook: %w", err)
	}
	return bench.Stamp(out.Bytes()), nil
}

// nbLanguages are the kernelspec and language_info of each prefix
// language, as prefixes.ExportNotebook writes them.
var nbLanguages = map[string]map[string]any{
	"python": {
		"kernelspec": map[string]any{"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
		"language_info": map[string]any{"codemirror_mode": map[string]any{"name": "ipython", "version": 3},
			"file_extension": ".py", "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
			"pygments_lexer": "ipython3"},
	},
	"go": {
		"kernelspec":    map[string]any{"display_name": "Go", "language": "go", "name": "gophernotes"},
		"language_info": map[string]any{"file_extension": ".go", "mimetype": "application/x-golang", "name": "go", "pygments_lexer": "go"},
	},
}

// language is the language of run r's cells: its prefix's (by its file
// extension), python without one.
func language(r *session.TrajectoryRun) string {
	if r.Run.Prefix != nil && strings.EqualFold(filepath.Ext(r.Run.Prefix.Source), ".go") {
		return "go"
	}
	return "python"
}

// restartsAfterCells is steps with each restart moved after the cell that
// follows it. A trajectory records a restart as soon as the kernel is
// back, before the event of the cell whose code killed it (that event,
// with the note the model read, is written next); a reader is shown the
// cell first, then what it caused. A restart with no cell right after it
// (a run stopped while the kernel restarted) stays where it is.
func restartsAfterCells[T any](steps []T, restart, cell func(T) bool) []T {
	out := slices.Clone(steps)
	for i := 0; i+1 < len(out); i++ {
		if restart(out[i]) && cell(out[i+1]) {
			out[i], out[i+1] = out[i+1], out[i]
			i++
		}
	}
	return out
}

// nbBuilder collects the notebook's cells.
type nbBuilder struct {
	cells []map[string]any
}

func (b *nbBuilder) id() string { return "cell-" + strconv.Itoa(len(b.cells)+1) }

func (b *nbBuilder) markdown(text string) {
	b.cells = append(b.cells, map[string]any{"cell_type": "markdown", "id": b.id(), "metadata": struct{}{},
		"source": prefixes.NotebookLines(strings.TrimRight(text, "\n"))})
}

func (b *nbBuilder) code(src string, count int, outputs []map[string]any) {
	if outputs == nil {
		outputs = []map[string]any{}
	}
	b.cells = append(b.cells, map[string]any{"cell_type": "code", "execution_count": execCount(count), "id": b.id(),
		"metadata": struct{}{}, "outputs": outputs, "source": prefixes.NotebookLines(strings.TrimRight(src, "\n"))})
}

// run writes run i of n.
func (b *nbBuilder) run(r *session.TrajectoryRun, i, n int) {
	b.markdown(runHeader(r, i, n))
	b.prefix(r)
	var call *session.CallEvent
	var steps []session.Event // the call's cells and restarts, in order
	flush := func() {
		if call != nil {
			b.turn(r, call, steps)
		}
		call, steps = nil, nil
	}
	isRestart := func(s session.Event) bool { return s.Restart != nil }
	isCell := func(s session.Event) bool { return s.Cell != nil }
	for _, s := range restartsAfterCells(r.Steps, isRestart, isCell) {
		if s.Call != nil {
			flush()
			call = s.Call
			continue
		}
		if call == nil { // before any call: written as it comes
			b.step(s)
			continue
		}
		steps = append(steps, s)
	}
	flush()
	b.markdown(answerText(r))
}

// runHeader is the run's first cell.
func runHeader(r *session.TrajectoryRun, i, n int) string {
	in := r.Run
	var h strings.Builder
	title := "Condition " + in.Condition
	if n > 1 {
		title = fmt.Sprintf("Run %d of %d: condition %s", i+1, n, in.Condition)
	}
	if in.Model != "" {
		title += " · " + in.Model
	}
	if in.Task != "" {
		title += " · task " + in.Task
	}
	h.WriteString("# " + mdText(title) + "\n\n")
	h.WriteString(mdQuote(mdText(in.Question)) + "\n\n")
	item := func(k, v string) { fmt.Fprintf(&h, "- **%s:** %s\n", k, v) }
	model := mdCode(in.Model)
	if in.BaseURL != "" {
		model += " at " + mdCode(in.BaseURL)
	}
	item("model", model)
	item("condition", fmt.Sprintf("%s (protocol %s)", mdText(in.Condition), mdText(string(in.Protocol))))
	if in.Task != "" {
		item("task", mdCode(in.Task))
	}
	if p := in.Prefix; p != nil {
		item("prefix", fmt.Sprintf("%s from %s, %d cells, sha256 %s", mdCode(p.Name), mdCode(p.Source), p.Cells, mdCode(shortHash(p.SHA256))))
	}
	if s := in.Skill; s != nil {
		item("skill document", fmt.Sprintf("%d bytes, sha256 %s (not recorded in the trajectory)", s.Bytes, mdCode(shortHash(s.SHA256))))
	}
	var data struct {
		Tier *string `json:"tier"`
		Seed *int64  `json:"seed"`
	}
	if len(in.Data) > 0 && json.Unmarshal(in.Data, &data) == nil && data.Tier != nil {
		d := "tier " + mdText(*data.Tier)
		if data.Seed != nil {
			d += fmt.Sprintf(", seed %d", *data.Seed)
		}
		item("data", d)
	}
	item("budgets", budgetsText(r))
	if r.Time != "" {
		item("started", mdText(r.Time))
	}
	return h.String()
}

func budgetsText(r *session.TrajectoryRun) string {
	bu := r.Run.Budgets
	parts := []string{nPlural(bu.MaxTurns, "turn"), fmt.Sprintf("%d prompt tokens", bu.MaxPromptTokens)}
	if bu.MaxOutputTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d output tokens a call", bu.MaxOutputTokens))
	}
	parts = append(parts, msSeconds(bu.CellTimeoutMS)+" a cell")
	if bu.OutputBudget < 0 {
		parts = append(parts, "the whole output of each cell read")
	} else {
		parts = append(parts, fmt.Sprintf("%d characters of each output read", bu.OutputBudget))
	}
	if bu.MaxRestarts < 0 {
		parts = append(parts, "no restarts")
	} else {
		parts = append(parts, nPlural(bu.MaxRestarts, "restart"))
	}
	return strings.Join(parts, ", ")
}

// prefix writes the prefix's cells.
func (b *nbBuilder) prefix(r *session.TrajectoryRun) {
	p := r.Run.Prefix
	if p == nil {
		return
	}
	built := ""
	if r.Prefix != nil {
		// Setup is the time before the model's first message: for ask the
		// kernel's start and the build; for a bench trial the wait for a
		// warm kernel, which holds its start and build when none was warm.
		built = fmt.Sprintf(", set up in %s (the time before the model's first message: the kernel's start and the build, "+
			"or a bench trial's wait for a warm kernel, its start and build included when none was warm)", msSeconds(r.Prefix.SetupMS))
	}
	title := "## Prefix " + mdCode(p.Name) + "\n\n"
	if r.Prefix != nil && len(r.Prefix.Results) > 0 {
		b.markdown(fmt.Sprintf("%sThe session before the model's first message: the prefix's %s%s, with the outputs the kernel gave.",
			title, nPlural(len(r.Prefix.Results), "cell"), built))
		for _, c := range r.Prefix.Results {
			b.code(c.Code, c.Count, resultOutputs(&session.CellEvent{Count: c.Count, Status: c.Status, Stdout: c.Stdout,
				Stderr: c.Stderr, Value: c.Value, Error: c.Error, Answer: c.Answer}))
		}
		return
	}
	loaded, why := loadPrefix(p.Name, p.Source, p.SHA256)
	if loaded == nil {
		b.markdown(fmt.Sprintf("%sThe session before the model's first message: the prefix's %s%s. The trajectory records the "+
			"prefix's name, source and sha256, not its cells or their outputs, and its cells are not shown: %s.",
			title, nPlural(p.Cells, "cell"), built, mdText(why)))
		return
	}
	b.markdown(fmt.Sprintf("%sThe session before the model's first message: the prefix's %s%s. **Their outputs were not recorded** "+
		"in the trajectory, which holds the prefix's name, source and sha256: the cells below are the prefix read again from %s, "+
		"whose cells have the run's sha256. Run them with the data as `data/` to see their outputs.",
		title, nPlural(len(loaded.Cells), "cell"), built, mdCode(p.Source)))
	for _, c := range loaded.Cells {
		b.code(c.Code, 0, nil)
	}
}

// loadPrefix reads the run's prefix again: a built-in one by name, else
// its file; nil, and why, unless its cells are the ones that ran.
func loadPrefix(name, source, sha string) (*prefixes.Prefix, string) {
	which := source
	if rest, ok := strings.CutPrefix(source, "builtin:"); ok {
		which = strings.TrimSuffix(rest, filepath.Ext(rest))
	}
	if which == "" {
		which = name
	}
	p, err := prefixes.Load(which)
	if err != nil {
		return nil, "it could not be read again (" + err.Error() + ")"
	}
	if got := p.Hash(); got != sha {
		return nil, fmt.Sprintf("the prefix at %s has changed since the run (its cells' sha256 is %s, the run's %s)", source, shortHash(got), shortHash(sha))
	}
	return p, ""
}

// turn writes one model call, then its cells and restarts, each restart
// after the cell whose code killed the kernel (restartsAfterCells).
func (b *nbBuilder) turn(r *session.TrajectoryRun, call *session.CallEvent, steps []session.Event) {
	var cells []*session.CellEvent
	for _, s := range steps {
		if s.Cell != nil {
			cells = append(cells, s.Cell)
		}
	}
	b.markdown(turnText(r, call, cells))
	for _, s := range steps {
		b.step(s)
	}
}

func (b *nbBuilder) step(s session.Event) {
	switch {
	case s.Cell != nil:
		b.cell(s.Cell)
	case s.Restart != nil:
		b.restart(s.Restart)
	}
}

// turnText is the call's cell: its cost and the model's words outside code.
func turnText(r *session.TrajectoryRun, call *session.CallEvent, cells []*session.CellEvent) string {
	var t strings.Builder
	fmt.Fprintf(&t, "## Turn %d\n\n", call.Turn)
	if call.Error != "" {
		fmt.Fprintf(&t, "The model call failed: %s\n", mdText(call.Error))
		return t.String()
	}
	u := call.Usage
	cost := fmt.Sprintf("Model call: %s, %d prompt tokens", nPlural(call.Messages, "message"), u.PromptTokens)
	if u.CachedTokens > 0 {
		cost += fmt.Sprintf(" (%d cached)", u.CachedTokens)
	}
	cost += fmt.Sprintf(", %d output tokens", u.CompletionTokens)
	if u.ReasoningTokens > 0 {
		cost += fmt.Sprintf(" (%d reasoning)", u.ReasoningTokens)
	}
	if u.Estimated {
		cost += " (estimated by the tokenizer)"
	}
	if call.FinishReason != "" {
		cost += "; finish reason " + mdCode(call.FinishReason)
	}
	if call.LatencyMS > 0 {
		cost += "; " + msSeconds(call.LatencyMS)
	}
	if call.Attempts > 1 {
		cost += fmt.Sprintf(" (%d attempts)", call.Attempts)
	}
	t.WriteString(cost + ".\n")

	tools := r.Run.Protocol == session.Eval || r.Run.Protocol == session.CLI
	var words []string
	changed := ""
	switch {
	case len(cells) == 0:
		words = append(words, call.Content)
	case tools:
		words = append(words, call.Content)
		for i, tc := range call.ToolCalls {
			if i >= len(cells) {
				words = append(words, fmt.Sprintf("(also called %s, not served: the run had ended) %s", tc.Name, tc.Arguments))
				continue
			}
			if tc.Name != "eval" {
				continue
			}
			var args struct {
				Code string `json:"code"`
			}
			if json.Unmarshal([]byte(tc.Arguments), &args) == nil {
				w, whole := outside(args.Code, cells[i].Code)
				if whole {
					changed = args.Code
				} else {
					words = append(words, w)
				}
			}
		}
	default: // one message, one cell
		w, whole := outside(call.Content, cells[0].Code)
		if whole {
			changed = call.Content
		} else {
			words = append(words, w)
		}
	}
	var said []string
	for _, w := range words {
		if w = strings.TrimSpace(w); w != "" {
			said = append(said, w)
		}
	}
	if len(said) > 0 {
		lead := "The model's words outside its code:"
		if len(cells) == 0 {
			lead = "The model's message:"
		}
		fmt.Fprintf(&t, "\n%s\n\n%s\n", lead, mdQuote(strings.Join(said, "\n\n")))
	}
	if changed != "" {
		fmt.Fprintf(&t, "\nThe message as it came (the harness changed it before it ran; see the notes below the cell):\n\n%s\n", mdFence(changed, ""))
	}
	return t.String()
}

// outside is the text of msg outside code, fences taken out: what a repair
// removed. whole says code is not a part of msg, so that msg is to be shown
// whole.
func outside(msg, code string) (words string, whole bool) {
	code = strings.Trim(code, "\n")
	if strings.TrimSpace(code) == "" {
		return msg, false
	}
	i := strings.Index(msg, code)
	if i < 0 {
		return "", true
	}
	before, after := msg[:i], msg[i+len(code):]
	before = strings.TrimRight(before, " \t\n")
	if j := strings.LastIndexByte(before, '\n'); fenceLine.MatchString(before[j+1:]) {
		before = before[:max(j, 0)]
	}
	after = strings.TrimLeft(after, " \t\n")
	first, rest, _ := strings.Cut(after, "\n")
	if fenceLine.MatchString(first) {
		after = rest
	}
	var parts []string
	for _, p := range []string{before, after} {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n\n"), false
}

var fenceLine = regexp.MustCompile("^[ \t]*```[ \t]*[A-Za-z0-9_+-]*[ \t]*$")

// cell writes one cell and the notes on it.
func (b *nbBuilder) cell(c *session.CellEvent) {
	var outs []map[string]any
	var cutNotes []string
	if c.Recorded() {
		// The real, uncut outputs; the cut notes still say what the model
		// read of them.
		outs = resultOutputs(c)
		_, cutNotes = textOutputs(c)
	} else {
		outs, cutNotes = textOutputs(c)
	}
	switch {
	case c.Tool == "read":
		args := c.Arguments
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(args)) == nil {
			args = compact.String() // one line, so that the cell stays one comment
		}
		b.code("# read "+strings.ReplaceAll(args, "\n", " "), c.Count, outs)
	case c.Tool == "bash" && c.Code != "":
		b.code("%%bash\n"+c.Code, c.Count, outs)
	case c.Tool != "":
		b.markdown(fmt.Sprintf("The model called %s with\n\n%s", mdCode(c.Tool), mdFence(c.Arguments, "json")))
	case strings.TrimSpace(c.Code) != "":
		b.code(c.Code, c.Count, outs)
	}
	notes := append([]string{}, c.Notes...)
	notes = append(notes, cutNotes...)
	if c.DroppedBytes > 0 {
		notes = append(notes, fmt.Sprintf("%d bytes of this output were dropped at the output cap before the model read it", c.DroppedBytes))
	}
	notes = append(notes, c.After...)
	if len(notes) == 0 {
		return
	}
	if len(notes) == 1 {
		b.markdown("**ctxcode:** " + mdText(notes[0]))
		return
	}
	var t strings.Builder
	t.WriteString("**ctxcode:**\n\n")
	for _, n := range notes {
		t.WriteString("- " + mdText(n) + "\n")
	}
	b.markdown(t.String())
}

func (b *nbBuilder) restart(e *session.RestartEvent) {
	t := fmt.Sprintf("**ctxcode: the kernel died and was restarted** (restart %d of the run): %s", e.Restarts, mdText(e.Cause))
	if e.Error != "" {
		t += "\n\nThe session could not be rebuilt: " + mdText(e.Error)
	}
	b.markdown(t)
}

// answerText is the run's last cell.
func answerText(r *session.TrajectoryRun) string {
	var t strings.Builder
	t.WriteString("## Answer\n\n")
	e := r.End
	switch {
	case r.Answer != nil:
		fmt.Fprintf(&t, "%s, %s\n", valueText(r.Answer.Value), sourceText(r.Answer.Source))
	case e != nil && e.Answer != "":
		fmt.Fprintf(&t, "%s, %s\n", valueText(e.Answer), sourceText(e.AnswerSource))
	default:
		t.WriteString("No answer.\n")
	}
	t.WriteString("\n")
	if e == nil {
		t.WriteString("- **status:** the run did not end: the trajectory stops here (it was interrupted, or is still being written)\n")
	} else {
		status := mdCode(e.Status)
		if e.Error != "" {
			status += ": " + mdText(e.Error)
		}
		fmt.Fprintf(&t, "- **status:** %s\n", status)
		cost := fmt.Sprintf("%s, %d context tokens, %d output tokens, %d cached", nPlural(e.Turns, "turn"), e.ContextTokens, e.OutputTokens, e.CachedTokens)
		if e.Estimated {
			cost += " (estimated by the tokenizer)"
		}
		if e.Restarts > 0 {
			cost += ", " + nPlural(e.Restarts, "kernel restart")
		}
		cost += fmt.Sprintf("; %s (setup %s, model %s)", msSeconds(e.WallMS), msSeconds(e.SetupMS), msSeconds(e.ModelMS))
		fmt.Fprintf(&t, "- **cost:** %s\n", cost)
	}
	if g := r.Grade; g != nil {
		grade := "**" + mdText(g.Verdict) + "**"
		switch {
		case g.Verdict == "unexecuted" && g.Correct:
			grade += " (it matches the gold, but no code computed it: wrong in accuracy)"
		case g.Accurate:
			grade += " (counts in accuracy)"
		default:
			grade += " (wrong in accuracy)"
		}
		if g.Reason != "" {
			grade += ": " + mdText(g.Reason)
		}
		gold := strings.TrimSpace(string(g.Gold))
		if gold == "" {
			gold = "null"
		}
		fmt.Fprintf(&t, "- **grade:** %s\n- **gold:** %s\n", grade, valueText(gold))
	} else {
		t.WriteString("- **grade:** not graded (the run had no task with a gold answer)\n")
	}
	return t.String()
}

func sourceText(source string) string {
	switch source {
	case "executed":
		return "executed: ANSWER(value) ran in the kernel"
	case "stated":
		return "stated: condition A's final message \"ANSWER: value\""
	case "unexecuted":
		return "unexecuted: the model wrote it as text, no code computed it"
	}
	return mdText(source)
}

// valueText shows a value: in a code span when short, else fenced.
func valueText(v string) string {
	if len(v) <= 80 && !strings.ContainsAny(v, "`\n") {
		return "`" + v + "`"
	}
	return "\n" + mdFence(v, "json")
}

// resultOutputs are the outputs of a cell's recorded result, by the rule
// of prefixes.ExportNotebook.
func resultOutputs(r *session.CellEvent) []map[string]any {
	out := []map[string]any{}
	for _, s := range []struct{ name, text string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if s.text != "" {
			out = append(out, streamOutput(s.name, s.text))
		}
	}
	switch {
	case r.Error != nil && r.Status != "ok":
		tb := strings.TrimRight(r.Error.Traceback, "\n")
		if tb == "" {
			tb = r.Error.Name + ": " + r.Error.Value
		}
		out = append(out, errorOutput(r.Error.Name, r.Error.Value, tb))
	case r.Answered():
		out = append(out, answerOutput("ANSWER: "+string(r.Answer)))
	case r.Value != "":
		out = append(out, valueOutput(r.Value, r.Count))
	}
	return out
}

// cutNote matches the note a budget cut leaves in an output.
var cutNote = regexp.MustCompile(`(?m)^\[ctxcode: (\d+ characters of the [^\n]* cut here[^\n]*)\]$`)

// exceptionLine reads "Name: value" or "Name", the last line of a
// traceback.
var exceptionLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*)(?::\s?(.*))?$`)

// textOutputs reads the outputs back from the text the model read (see
// the top of this file), and the notes of budget cuts in it.
func textOutputs(c *session.CellEvent) (outs []map[string]any, cutNotes []string) {
	body := c.Output
	for _, n := range c.Notes {
		body = strings.TrimPrefix(strings.TrimPrefix(body, session.Note(n)), "\n")
	}
	for i := len(c.After) - 1; i >= 0; i-- {
		body = strings.TrimSuffix(strings.TrimSuffix(body, session.Note(c.After[i])), "\n")
	}
	if body == session.Note("no output") {
		body = ""
	}
	for _, m := range cutNote.FindAllStringSubmatch(body, -1) {
		cutNotes = append(cutNotes, "the output the model read was cut to the budget: "+m[1])
	}
	outs = []map[string]any{}
	if body == "" {
		return outs, cutNotes
	}
	printed := func(s string) {
		if strings.TrimSpace(s) == "" {
			return
		}
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		outs = append(outs, streamOutput("stdout", s))
	}
	if c.Tool != "" { // a command's output, or the lines a read returned
		printed(body)
		return outs, cutNotes
	}
	switch {
	case c.Answered():
		if i := lastLineStart(body, "ANSWER: "); i >= 0 {
			printed(body[:i])
			outs = append(outs, answerOutput(body[i:]))
			return outs, cutNotes
		}
	case c.Status == "error" || c.Status == "timeout":
		i := firstLineStart(body, "Cell In[")
		if i < 0 {
			i = strings.LastIndexByte(strings.TrimRight(body, "\n"), '\n') + 1
		}
		tb := strings.TrimRight(body[i:], "\n")
		last := tb[strings.LastIndexByte(tb, '\n')+1:]
		name, value := "Error", last
		if m := exceptionLine.FindStringSubmatch(last); m != nil {
			name, value = m[1], m[2]
		}
		printed(body[:i])
		outs = append(outs, errorOutput(name, value, tb))
		return outs, cutNotes
	case c.Count > 0:
		if i := lastLineStart(body, "Out["+strconv.Itoa(c.Count)+"]: "); i >= 0 {
			printed(body[:i])
			v := body[i+len("Out["+strconv.Itoa(c.Count)+"]: "):]
			outs = append(outs, valueOutput(strings.TrimPrefix(v, "\n"), c.Count))
			return outs, cutNotes
		}
	}
	printed(body)
	return outs, cutNotes
}

// lastLineStart is the offset of the last line of s that starts with p, or
// -1.
func lastLineStart(s, p string) int {
	if strings.HasPrefix(s, p) && !strings.Contains(s, "\n"+p) {
		return 0
	}
	if i := strings.LastIndex(s, "\n"+p); i >= 0 {
		return i + 1
	}
	return -1
}

// firstLineStart is the offset of the first line of s that starts with p,
// or -1.
func firstLineStart(s, p string) int {
	if strings.HasPrefix(s, p) {
		return 0
	}
	if i := strings.Index(s, "\n"+p); i >= 0 {
		return i + 1
	}
	return -1
}

func streamOutput(name, text string) map[string]any {
	return map[string]any{"output_type": "stream", "name": name, "text": prefixes.NotebookLines(text)}
}

func errorOutput(name, value, traceback string) map[string]any {
	return map[string]any{"output_type": "error", "ename": name, "evalue": value, "traceback": strings.Split(traceback, "\n")}
}

func answerOutput(text string) map[string]any {
	return map[string]any{"output_type": "display_data", "metadata": struct{}{}, "data": map[string][]string{"text/plain": prefixes.NotebookLines(text)}}
}

func valueOutput(value string, count int) map[string]any {
	return map[string]any{"output_type": "execute_result", "execution_count": execCount(count), "metadata": struct{}{},
		"data": map[string][]string{"text/plain": prefixes.NotebookLines(value)}}
}

// execCount is an execution count, null when the cell never ran.
func execCount(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

// Markdown helpers.

var mdSpecial = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "|", `\|`)

// mdText is text that Markdown shows as it is.
func mdText(s string) string { return mdSpecial.Replace(s) }

// mdCode shows s in a code span (a fenced block when it spans lines).
func mdCode(s string) string {
	if s == "" {
		return "*(none)*"
	}
	if strings.Contains(s, "\n") {
		return "\n\n" + mdFence(s, "") + "\n"
	}
	ticks := "`"
	for strings.Contains(s, ticks) {
		ticks += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

// mdFence is s in a fenced code block, its fence longer than any run of
// backticks in s.
func mdFence(s, lang string) string {
	ticks := "```"
	for strings.Contains(s, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + ticks
}

// mdQuote is s as a Markdown block quote.
func mdQuote(s string) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range ls {
		if l == "" {
			ls[i] = ">"
		} else {
			ls[i] = "> " + l
		}
	}
	return strings.Join(ls, "\n")
}

func nPlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// msSeconds is a time in milliseconds for people: "5 ms", "1.58 s", "30 s".
func msSeconds(ms int64) string {
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + " ms"
	}
	s := strconv.FormatFloat(float64(ms)/1000, 'f', 2, 64)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".") + " s"
}

// shortHash is a hash's first 12 hex digits.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}
