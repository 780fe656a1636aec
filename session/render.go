package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/kernel"
)

// Protocol is how a transcript is turned into chat messages: one per
// condition family of the cost ladder.
type Protocol string

// The protocols.
const (
	Bare           Protocol = "bare"       // D: the assistant message is the next cell, the user message its output
	Eval           Protocol = "eval"       // B and B0: one eval(code) tool
	TranscriptText Protocol = "transcript" // C: the session as In/Out text in one user message
	CLI            Protocol = "cli"        // A: read and bash tools, a skill document, no prefix
)

// Protocols lists every protocol, in ladder order.
func Protocols() []Protocol { return []Protocol{CLI, Eval, Bare, TranscriptText} }

// ParseProtocol reads a protocol name.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown protocol %q: expected bare, eval, transcript or cli", s)
}

// Message is one chat message, in the shape of the OpenAI chat API.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant or tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a call an assistant message makes.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object, as the model wrote it
}

// Tool is a function the model may call.
type Tool struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Parameters  []Param `json:"parameters"`
}

// Param is one parameter of a tool: a string unless Type says otherwise,
// required unless Optional.
type Param struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Type is the JSON Schema type: "string" (the zero value) or "integer".
	Type string `json:"type,omitempty"`
	// Minimum is the least value of an integer parameter, when it has one.
	Minimum *int `json:"minimum,omitempty"`
	// Optional parameters are left out of the schema's required list.
	Optional bool `json:"optional,omitempty"`
}

// TypeName is the parameter's JSON Schema type.
func (p Param) TypeName() string {
	if p.Type == "" {
		return "string"
	}
	return p.Type
}

// Schema is the tool's parameters as a JSON Schema object: each with its
// type and description (and minimum), the required ones listed, no other
// property allowed. The same tool always gives the same bytes.
func (t Tool) Schema() json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i, p := range t.Parameters {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(p.Name))
		b.WriteString(`:{"type":`)
		b.Write(marshal(p.TypeName()))
		b.WriteString(`,"description":`)
		b.Write(marshal(p.Description))
		if p.Minimum != nil {
			b.WriteString(`,"minimum":` + strconv.Itoa(*p.Minimum))
		}
		b.WriteByte('}')
	}
	b.WriteString(`},"required":[`)
	n := 0
	for _, p := range t.Parameters {
		if p.Optional {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(marshal(p.Name))
	}
	b.WriteString(`],"additionalProperties":false}`)
	return b.Bytes()
}

// Request is what one model call sends: messages and tools. The tools and
// the first Stable messages are the stable part, byte-identical for every
// question and every run, so provider prompt caches can hit; in the
// transcript protocol the one user message itself begins with it.
// Asked is the index of the message that holds the question being
// answered: after the stable part and the conversation's history (the
// transcript protocol's one message holds it, after "Question: ").
type Request struct {
	Protocol Protocol
	Messages []Message
	Tools    []Tool
	Stable   int
	Asked    int
}

// Input is what a renderer turns into a request.
type Input struct {
	// Transcript is the prefix the model continues (ignored by cli). Its
	// language names the kernel in the rules; "" reads as Python.
	Transcript Transcript
	Rules      string // the prefix's own rules, added to the protocol's
	Skill      string // cli: the skill document that describes the files
	// Summary and Earlier are a conversation's history before Question
	// (ctxcode chat, a staged workload's session): Summary, when not "",
	// stands for the turns a context policy folded (it follows the stable
	// part); Earlier are the questions asked since, each with the cells it
	// ran, in order. Both are empty for a run of one question.
	Summary  string
	Earlier  []Stage
	Question string
	New      []Cell // the cells of this run so far, after the question
	Budget   int    // characters of output per cell: 0 is DefaultBudget, negative is no limit
	// NothingBound says the prefix's cells bind no variables (the B0
	// control, whose cells repeat full expressions): the rules then do not
	// say that the cells' variables are still bound. The rules of a prefix
	// and its control differ only in this, and in the prefix's own Rules.
	NothingBound bool
	// RulesText, when not nil, is the whole rules text the request starts
	// with, in place of the protocol's rules and the prefix's Rules; ""
	// leaves none (no system message in bare and eval). It is a condition
	// variant's (bench --conditions-file), for prompt ablations. The tools,
	// the prefix's cells, condition A's skill document and the one shot's
	// closing instruction stay as they are.
	RulesText *string
}

// Render turns in into the request of protocol p. It is a pure function:
// the same input always gives the same bytes.
func Render(p Protocol, in Input) (Request, error) {
	switch p {
	case Bare:
		return renderBare(in), nil
	case Eval:
		return renderEval(in), nil
	case TranscriptText:
		return renderTranscript(in), nil
	case CLI:
		return renderCLI(in), nil
	}
	_, err := ParseProtocol(string(p))
	return Request{}, err
}

// EvalTool is the one tool of the eval protocol.
func EvalTool(lang kernel.Language) Tool {
	return Tool{
		Name:        "eval",
		Description: "Run " + langName(lang) + " code as the next cell of the live session and return the cell's output. Variables persist between calls.",
		Parameters:  []Param{{Name: "code", Description: "the code of the cell"}},
	}
}

// Defaults of the cli protocol's read tool, which the tool's description
// states (the agent serves the tool).
const (
	// ReadLimit is how many lines read returns when the call gives no limit.
	ReadLimit = 2000
)

// CLITools are the tools of the cli protocol: read(path, offset?, limit?)
// and bash(command).
func CLITools() []Tool {
	one := 1
	return []Tool{
		{Name: "read", Description: "Read a text file of the session folder, where data/ holds the data (read-only), " +
			"and return its lines numbered as cat -n does: the line number, a tab, the line.",
			Parameters: []Param{
				{Name: "path", Description: "the file's path relative to the session folder, such as data/tasks.jsonl"},
				{Name: "offset", Type: "integer", Minimum: &one, Optional: true,
					Description: "the number of the first line to return, counting from 1; default 1"},
				{Name: "limit", Type: "integer", Minimum: &one, Optional: true,
					Description: "how many lines to return; default " + strconv.Itoa(ReadLimit)},
			}},
		{Name: "bash", Description: "Run a command with /bin/sh -c in the session folder of the sandbox, where data/ holds the data " +
			"(read-only; no network), and return its output (stdout and stderr together) and its exit status. " +
			"Each call is a new shell: nothing survives between calls but files written under /tmp. " +
			"A command still running at the time limit is killed with its process group.",
			Parameters: []Param{{Name: "command", Description: "the command line, such as wc -l data/*.jsonl"}}},
	}
}

func langName(lang kernel.Language) string {
	if lang == kernel.Go {
		return "Go"
	}
	return "Python"
}

func fence(lang kernel.Language) string {
	if lang == kernel.Go {
		return "go"
	}
	return "python"
}

// sessionRules describes the live session in the rules of the bare, eval
// and transcript protocols: the cells' variables are said to be bound only
// when they are, and the harness's notes are introduced only where the
// model reads outputs of its own cells (not in one shot, which reads none).
// How long output is cut is said by the note at each cut, which names
// where the full text is; the rules do not repeat it.
func sessionRules(in Input, oneShot bool) string {
	lang := in.Transcript.Language
	ran := "The cells shown already ran; their variables are still bound: build on them. "
	if in.NothingBound {
		ran = "The cells shown already ran. "
	}
	s := "This is a live " + langName(lang) + " session over the data in data/. " + ran
	if !oneShot {
		s += notesRule + " "
	}
	return s + answerRule(lang)
}

// notesRule introduces the harness's notes, once, in the rules of every
// protocol whose model reads outputs.
var notesRule = Note("…") + " lines are harness notes."

// answerRule says how ANSWER works, in the same words in every protocol
// but cli (whose answer is a final message): it may be called in the cell
// that computes the value, the call ends the run, and what to pass.
func answerRule(lang kernel.Language) string {
	return "ANSWER(value) in code answers and ends the run, also in the cell that computes value: " +
		answerKinds(lang) + ", from code that ran."
}

// answerKinds is what an answer may be, in the same words in every
// protocol (A's JSON object is Python's dict; Go names its map).
func answerKinds(lang kernel.Language) string {
	record := "dict"
	if lang == kernel.Go {
		record = "map"
	}
	return "a number, string, list, or " + record + " for several named parts"
}

func system(in Input, protocol string) []Message {
	text := sessionRules(in, false)
	if protocol != "" {
		text += "\n" + protocol
	}
	if r := strings.TrimSpace(in.Rules); r != "" {
		text += "\n" + r
	}
	if in.RulesText != nil {
		if text = *in.RulesText; text == "" {
			return nil
		}
	}
	return []Message{{Role: "system", Content: text}}
}

func question(q string) Message { return Message{Role: "user", Content: q} }

func renderBare(in Input) Request {
	lang := in.Transcript.Language
	msgs := system(in, "Your message runs as written as the next cell; the reply is its output. "+
		"Code only: no prose, no Markdown fences.")
	cell := func(c Cell) {
		// The history holds each cell as it ran; a message with no code
		// (nothing ran) as the model sent it.
		said := c.Code
		if strings.TrimSpace(said) == "" {
			said = c.Reply
		}
		msgs = append(msgs,
			Message{Role: "assistant", Content: said},
			Message{Role: "user", Content: c.Output(lang, in.Budget)})
	}
	for _, c := range in.Transcript.Cells {
		cell(c)
	}
	stable := len(msgs)
	msgs = appendSummary(msgs, in.Summary)
	for _, st := range in.Earlier {
		if st.Question != "" {
			msgs = append(msgs, question(st.Question))
		}
		for _, c := range st.Cells {
			cell(c)
		}
	}
	asked := len(msgs)
	msgs = append(msgs, question(in.Question))
	for _, c := range in.New {
		cell(c)
	}
	return Request{Protocol: Bare, Messages: msgs, Stable: stable, Asked: asked}
}

// appendSummary adds the summary of folded turns, when there is one, as a
// user message that says what it is.
func appendSummary(msgs []Message, summary string) []Message {
	if summary == "" {
		return msgs
	}
	return append(msgs, Message{Role: "user", Content: summaryText(summary)})
}

// summaryText introduces a summary of folded turns.
func summaryText(summary string) string {
	return Note("earlier turns of this session were folded into this summary to save context; "+
		"what their cells bound is still bound") + "\n" + strings.TrimSpace(summary)
}

func renderEval(in Input) Request {
	lang := in.Transcript.Language
	msgs := system(in, "")
	cell := func(c Cell, id string) {
		if c.Call == nil && strings.TrimSpace(c.Code) == "" {
			// A message without a call or code (cut at the output-token
			// limit): its text, and the harness's note as the user's reply.
			msgs = append(msgs,
				Message{Role: "assistant", Content: c.Reply},
				Message{Role: "user", Content: c.Output(lang, in.Budget)})
			return
		}
		call := ranAs(c, id)
		msgs = append(msgs,
			Message{Role: "assistant", Content: c.Reply, ToolCalls: []ToolCall{call}},
			Message{Role: "tool", ToolCallID: call.ID, Content: c.Output(lang, in.Budget)})
	}
	for i, c := range in.Transcript.Cells {
		cell(c, "prefix_"+strconv.Itoa(i+1))
	}
	stable := len(msgs)
	msgs = appendSummary(msgs, in.Summary)
	n := 0
	for _, st := range in.Earlier {
		if st.Question != "" {
			msgs = append(msgs, question(st.Question))
		}
		for _, c := range st.Cells {
			n++
			cell(c, "cell_"+strconv.Itoa(n))
		}
	}
	asked := len(msgs)
	msgs = append(msgs, question(in.Question))
	for _, c := range in.New {
		n++
		cell(c, "cell_"+strconv.Itoa(n))
	}
	return Request{Protocol: Eval, Messages: msgs, Tools: []Tool{EvalTool(lang)}, Stable: stable, Asked: asked}
}

// ranAs is the eval call of a cell as it ran: the model's own call, byte
// for byte, when its code ran unchanged (or nothing ran: a call to no tool,
// arguments that are not {"code": ...}, "{}" for arguments that are not
// JSON at all); the model's id and name with the code that ran after a
// repair; a fabricated call for a prefix cell.
func ranAs(c Cell, id string) ToolCall {
	ran := string(marshal(map[string]string{"code": c.Code}))
	if c.Call == nil {
		return ToolCall{ID: id, Name: "eval", Arguments: ran}
	}
	call := *c.Call
	if strings.TrimSpace(c.Code) == "" {
		if !json.Valid([]byte(call.Arguments)) {
			// Providers refuse a replayed call whose arguments are not JSON
			// (a message cut at the output-token limit); the cell's note
			// says what was wrong with them.
			call.Arguments = "{}"
		}
		return call
	}
	var args struct {
		Code *string `json:"code"`
	}
	if json.Unmarshal([]byte(call.Arguments), &args) != nil || args.Code == nil || *args.Code != c.Code {
		call.Arguments = ran
	}
	return call
}

func renderTranscript(in Input) Request {
	lang := in.Transcript.Language
	var b strings.Builder
	switch {
	case in.RulesText == nil:
		b.WriteString(sessionRules(in, true))
		if r := strings.TrimSpace(in.Rules); r != "" {
			b.WriteString("\n" + r)
		}
		b.WriteString("\n\n")
	case *in.RulesText != "":
		b.WriteString(*in.RulesText + "\n\n")
	}
	for i, c := range in.Transcript.Cells {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text(lang, in.Budget))
	}
	if in.Summary != "" {
		b.WriteString("\n" + summaryText(in.Summary) + "\n")
	}
	for _, st := range in.Earlier {
		if st.Question != "" {
			b.WriteString("\nQuestion: " + st.Question + "\n")
		}
		for _, c := range st.Cells {
			b.WriteString("\n" + c.Text(lang, in.Budget))
		}
	}
	b.WriteString("\nQuestion: " + in.Question + "\n")
	for _, c := range in.New {
		b.WriteString("\n" + c.Text(lang, in.Budget))
	}
	b.WriteString("\nReply with one ```" + fence(lang) + " code block: it runs once, as the next cell; nothing else in your reply is read.")
	return Request{Protocol: TranscriptText, Messages: []Message{{Role: "user", Content: b.String()}}}
}

// cliRules are the rules of the cli protocol; the skill document follows
// them in the system message. The tools describe themselves.
func cliRules(in Input) string {
	return "You answer questions about the data in data/ of a sandbox with the tools read and bash. " + notesRule + " " +
		"Answer with one final message, without a tool call: \"ANSWER: <value>\"; it ends the run. " +
		"value is JSON: " + answerKinds(kernel.Python) + "."
}

func renderCLI(in Input) Request {
	text := cliRules(in)
	if in.RulesText != nil {
		text = *in.RulesText
	}
	if s := strings.TrimSpace(in.Skill); s != "" && text != "" {
		text += "\n\n" + s
	} else if s != "" {
		text = s
	}
	msgs := appendSummary([]Message{{Role: "system", Content: text}}, in.Summary)
	n := 0
	cell := func(c Cell) {
		n++
		if c.Call == nil && strings.TrimSpace(c.Code) == "" {
			// A message without a call (cut at the output-token limit): its
			// text, and the harness's note as the user's reply.
			msgs = append(msgs,
				Message{Role: "assistant", Content: c.Reply},
				Message{Role: "user", Content: CLIOutput(c, in.Budget)})
			return
		}
		call := cliCall(c, "cell_"+strconv.Itoa(n))
		msgs = append(msgs,
			Message{Role: "assistant", Content: c.Reply, ToolCalls: []ToolCall{call}},
			Message{Role: "tool", ToolCallID: call.ID, Content: CLIOutput(c, in.Budget)})
	}
	for _, st := range in.Earlier {
		if st.Question != "" {
			msgs = append(msgs, question(st.Question))
		}
		for _, c := range st.Cells {
			cell(c)
		}
	}
	asked := len(msgs)
	msgs = append(msgs, question(in.Question))
	for _, c := range in.New {
		cell(c)
	}
	return Request{Protocol: CLI, Messages: msgs, Tools: CLITools(), Stable: 1, Asked: asked}
}

// cliCall is a cli cell's call as the history replays it: the model's own
// call, byte for byte ("{}" for arguments that are not JSON at all, which
// providers refuse to replay; the cell's note says what was wrong), or a
// bash call of the cell's code for a cell the harness made.
func cliCall(c Cell, id string) ToolCall {
	if c.Call == nil {
		return ToolCall{ID: id, Name: "bash", Arguments: string(marshal(map[string]string{"command": c.Code}))}
	}
	call := *c.Call
	if !json.Valid([]byte(call.Arguments)) {
		call.Arguments = "{}"
	}
	return call
}

// CLIOutput is a cell's output as a tool result of the cli protocol: the
// harness's notes, the text the tool returned within budget characters
// (its head and tail kept; neither a shell nor a read keeps the rest, so a
// cut says to ask for less), then the notes after it, such as a bash
// command's exit status.
func CLIOutput(c Cell, budget int) string { return c.Output(shellOutput, budget) }

// shellOutput renders the output of a cli tool call: no kernel keeps it,
// so a cut says to ask for less rather than pointing to _stdout[n].
const shellOutput kernel.Language = "shell"

// marshal is JSON without HTML escaping, as models write it.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only strings and maps of strings are marshalled here
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// JSON is the request as indented JSON, tools (with their schemas) first:
// the form of the golden files and of `ctxcode prefix show --json`.
func (r Request) JSON() []byte {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	out := struct {
		Protocol Protocol  `json:"protocol"`
		Stable   int       `json:"stable_messages"`
		Tools    []tool    `json:"tools,omitempty"`
		Messages []Message `json:"messages"`
	}{Protocol: r.Protocol, Stable: r.Stable, Messages: r.Messages}
	for _, t := range r.Tools {
		out.Tools = append(out.Tools, tool{t.Name, t.Description, t.Schema()})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// Text is the request as a person reads it: each message under a
// "--- role ---" line, tool calls as "eval(code=...)" with the code shown
// as is. The form of `ctxcode prefix show`.
func (r Request) Text() string {
	var b strings.Builder
	for _, t := range r.Tools {
		fmt.Fprintf(&b, "--- tool %s ---\n%s\n%s\n", t.Name, t.Description, t.Schema())
	}
	for _, m := range r.Messages {
		role := m.Role
		if m.ToolCallID != "" {
			role += " " + m.ToolCallID
		}
		b.WriteString("--- " + role + " ---\n")
		if m.Content != "" {
			b.WriteString(strings.TrimSuffix(m.Content, "\n") + "\n")
		}
		for _, c := range m.ToolCalls {
			var args map[string]string
			if json.Unmarshal([]byte(c.Arguments), &args) == nil && len(args) == 1 {
				for k, v := range args {
					fmt.Fprintf(&b, "[call %s %s(%s)]\n%s\n", c.ID, c.Name, k, strings.TrimSuffix(v, "\n"))
				}
				continue
			}
			fmt.Fprintf(&b, "[call %s %s %s]\n", c.ID, c.Name, c.Arguments)
		}
	}
	return b.String()
}
