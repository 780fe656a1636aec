package llm

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/session"
)

// ReferenceName is the name of the offline reference model.
const ReferenceName = "reference"

// Reference is the offline model that plays a built-in task's reference
// solution, once, in the protocol of the request: the harness's cost floor
// and an end-to-end check that needs no network. It is safe for concurrent
// use and deterministic: the same request always gets the same reply.
//
// It finds the question in the request's user messages: the first one
// after the stable part (bare, eval, cli) or the line after "Question: "
// (transcript), else the longest known question that any user message
// contains. It replies
//   - bare: the solution as the message (the next cell);
//   - eval: one eval tool call {"code": solution}, with id "ref_<n>", n
//     counting from 1 the tool calls after the stable part (the prefix's
//     calls have ids of their own);
//   - transcript: the solution in one ```python block;
//   - cli (condition A): one bash tool call, id "ref_<n>" as in eval, that
//     runs the solution with python3 -c (CLICommand), an ANSWER shim that
//     prints "ANSWER: <json>" before it; then, once the request holds that
//     call's result, the final message: the last "ANSWER: " line of the
//     result, copied. The solutions must then load the data themselves
//     (datasets.PythonLoad): plain python3 has no prefix.
//
// When an assistant message of the request already holds the solution
// (as content or as an eval call), it says in plain text that the solution
// already ran and it has nothing more (in cli: when the bash call's result
// holds no ANSWER line); when the question is not a built-in one, it says
// so in plain text. Plain-text replies carry no code: in the bare protocol
// the harness runs them as a cell like any other message.
//
// Usage is estimated with the tokenizer (Estimated is true); Attempts is 1.
type Reference struct {
	solutions map[string]string // question -> solution
	questions []string          // longest first, for substring matching
	enc       session.Encoding
}

var _ Model = (*Reference)(nil)

// NewReference returns the reference model for solutions, which maps each
// built-in task's question to its reference solution (code that ends with
// ANSWER(...)). enc is the vocabulary of the usage estimates ("" is
// o200k_base).
func NewReference(solutions map[string]string, enc session.Encoding) *Reference {
	r := &Reference{solutions: make(map[string]string, len(solutions)), enc: enc}
	for q, code := range solutions {
		q = strings.TrimSpace(q)
		if q == "" {
			continue
		}
		r.solutions[q] = code
		r.questions = append(r.questions, q)
	}
	sort.Slice(r.questions, func(i, j int) bool {
		a, b := r.questions[i], r.questions[j]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	return r
}

// Name is "reference".
func (r *Reference) Name() string { return ReferenceName }

// The plain-text replies.
const (
	referenceCLINoAnswerText = "The reference solution ran, but its output holds no ANSWER line; the reference model has nothing more to add."
	referenceUnknownText     = "The reference model knows only the built-in tasks (`ctxcode tasks --data DIR` lists them), " +
		"and this question is not one of them."
	referencePlayedText = "The reference solution already ran; the reference model has nothing more to add."
)

// Complete replies as the type comment describes.
func (r *Reference) Complete(ctx context.Context, req session.Request) (Reply, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	prompt, err := session.CountRequest(r.enc, req)
	if err != nil {
		return Reply{}, err
	}
	reply := Reply{FinishReason: "stop", Attempts: 1, RequestTokens: prompt}
	code, known := r.find(req)
	if known {
		code = reuse(req, code)
	}
	switch {
	case req.Protocol == session.Summary:
		reply.Content = session.SummaryFallback(lastUser(req))
	case !known:
		reply.Content = referenceUnknownText
	case played(req, code):
		reply.Content = referencePlayedText
	case req.Protocol == session.Bare:
		reply.Content = code
	case req.Protocol == session.Eval:
		args, err := codeArguments(code)
		if err != nil {
			return Reply{}, err
		}
		reply.ToolCalls = []session.ToolCall{{ID: "ref_" + strconv.Itoa(runCalls(req)+1), Name: "eval", Arguments: args}}
		reply.FinishReason = "tool_calls"
	case req.Protocol == session.TranscriptText:
		reply.Content = "```python\n" + strings.TrimRight(code, "\n") + "\n```"
	case req.Protocol == session.CLI:
		command := CLICommand(code)
		if result, ran := bashResult(req, command); ran {
			reply.Content = referenceCLINoAnswerText
			if line, ok := answerLine(result); ok {
				reply.Content = line
			}
			break
		}
		args, err := jsonArguments(map[string]string{"command": command})
		if err != nil {
			return Reply{}, err
		}
		reply.ToolCalls = []session.ToolCall{{ID: "ref_" + strconv.Itoa(runCalls(req)+1), Name: "bash", Arguments: args}}
		reply.FinishReason = "tool_calls"
	default:
		reply.Content = "The reference model does not know the protocol " + strconv.Quote(string(req.Protocol)) +
			": it plays bare, eval, transcript and cli."
	}
	reply.Usage, err = estimate(r.enc, prompt, reply.Content, "", reply.ToolCalls)
	if err != nil {
		return Reply{}, err
	}
	reply.Latency = time.Since(start)
	return reply, nil
}

// find returns the solution of the request's question.
func (r *Reference) find(req session.Request) (string, bool) {
	if q, ok := question(req); ok {
		if code, ok := r.solutions[q]; ok {
			return code, true
		}
	}
	for _, q := range r.questions {
		for _, m := range req.Messages {
			if m.Role == "user" && strings.Contains(m.Content, q) {
				return r.solutions[q], true
			}
		}
	}
	return "", false
}

// question is where the renderer puts the question being answered: the
// message at req.Asked, or in the transcript protocol the last line after
// "Question: " (a conversation's earlier questions come before it).
func question(req session.Request) (string, bool) {
	if req.Protocol == session.TranscriptText {
		for _, m := range req.Messages {
			if m.Role != "user" {
				continue
			}
			i := strings.LastIndex(m.Content, "\nQuestion: ")
			if i < 0 {
				continue
			}
			line, _, _ := strings.Cut(m.Content[i+len("\nQuestion: "):], "\n")
			return strings.TrimSpace(line), true
		}
		return "", false
	}
	if a := req.Asked; a > 0 && a < len(req.Messages) && req.Messages[a].Role == "user" {
		return strings.TrimSpace(req.Messages[a].Content), true
	}
	for i := max(req.Stable, 0); i < len(req.Messages); i++ {
		if m := req.Messages[i]; m.Role == "user" {
			return strings.TrimSpace(m.Content), true
		}
	}
	return "", false
}

// codeArguments is {"code": code} as models write it: no HTML escaping.
func codeArguments(code string) (string, error) {
	return jsonArguments(map[string]string{"code": code})
}

// jsonArguments is a tool call's arguments as models write them: no HTML
// escaping.
func jsonArguments(args map[string]string) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// answerShim stands in for the kernel's ANSWER in plain python3: it prints
// the value's JSON on a line of its own after "ANSWER: ", and ends the
// script, as ANSWER ends a cell.
const answerShim = "import json as _json\n" +
	"def ANSWER(value):\n" +
	"    print('ANSWER: ' + _json.dumps(value, ensure_ascii=False, default=str), flush=True)\n" +
	"    raise SystemExit(0)\n"

// CLICommand is the shell command by which the reference model plays a
// solution in condition A: python3 -c with the ANSWER shim and the
// solution, quoted for /bin/sh in single quotes (a quote inside closes the
// quoting, is escaped with a backslash, and opens it again).
func CLICommand(code string) string {
	script := answerShim + strings.TrimRight(code, "\n") + "\n"
	return "python3 -c '" + strings.ReplaceAll(script, "'", `'\''`) + "'"
}

// bashResult is the result of the request's bash call that ran command:
// the tool message that answers it ("" when there is none yet).
func bashResult(req session.Request, command string) (result string, ran bool) {
	msgs := req.Messages[current(req):]
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			var args struct {
				Command string `json:"command"`
			}
			if m.Role != "assistant" || c.Name != "bash" || json.Unmarshal([]byte(c.Arguments), &args) != nil || args.Command != command {
				continue
			}
			for _, t := range msgs[i+1:] {
				if t.Role == "tool" && t.ToolCallID == c.ID {
					return t.Content, true
				}
			}
			return "", true
		}
	}
	return "", false
}

// answerLine is the last line of text that begins "ANSWER: ", the way a
// model copies an answer from a command's output.
func answerLine(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "ANSWER: ") {
			return l, true
		}
	}
	return "", false
}

// runCalls counts the tool calls of this run: those after the stable part.
func runCalls(req session.Request) int {
	n := 0
	for _, m := range req.Messages[min(max(req.Stable, 0), len(req.Messages)):] {
		n += len(m.ToolCalls)
	}
	return n
}

// played says whether an assistant message of the request already holds
// the solution, as its content or as the code of a tool call.
func played(req session.Request, code string) bool {
	want := strings.TrimSpace(code)
	if want == "" {
		return false
	}
	for _, m := range req.Messages[current(req):] {
		if m.Role != "assistant" {
			continue
		}
		if strings.Contains(m.Content, want) {
			return true
		}
		for _, c := range m.ToolCalls {
			var args struct {
				Code string `json:"code"`
			}
			if json.Unmarshal([]byte(c.Arguments), &args) == nil && strings.TrimSpace(args.Code) == want {
				return true
			}
		}
	}
	return false
}

// current is the index of the first message of the question being
// answered: its question's (Request.Asked), else the first after the
// stable part.
func current(req session.Request) int {
	return min(max(req.Stable, req.Asked, 0), len(req.Messages))
}

// lastUser is the content of the request's last user message.
func lastUser(req session.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

// reuse drops, in a conversation, the leading lines of a solution that an
// earlier stage already ran: an import, or a binding "name = ..." on one
// line, that ran verbatim in an earlier cell of this session, whose name
// no later line of those cells bound again, with no kernel restart since.
// What the earlier stage bound is still bound, so the solution uses it, as
// a person in a notebook would. The first line that is not such a line
// ends the dropping; the rest runs as written.
func reuse(req session.Request, code string) string {
	if req.Protocol == session.CLI || req.Protocol == session.TranscriptText {
		return code // a bash call keeps nothing; one shot reads the history as text
	}
	if req.Asked <= req.Stable {
		return code
	}
	var ran []string
	for _, m := range req.Messages[req.Stable:req.Asked] {
		if m.Role != "assistant" {
			if strings.Contains(m.Content, "was restarted") {
				return code
			}
			continue
		}
		text := m.Content
		for _, c := range m.ToolCalls {
			var args struct {
				Code string `json:"code"`
			}
			if json.Unmarshal([]byte(c.Arguments), &args) == nil {
				text += "\n" + args.Code
			}
		}
		ran = append(ran, strings.Split(text, "\n")...)
	}
	lines := strings.Split(code, "\n")
	drop := 0
	for i, l := range lines {
		name, ok := simpleBinding(l)
		if !ok || i+1 >= len(lines) || strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t") {
			break
		}
		last := -1
		for j, e := range ran {
			if n, ok := simpleBinding(e); ok && n == name || strings.HasPrefix(e, name+" =") || strings.HasPrefix(e, name+"=") {
				last = j
			}
		}
		if last < 0 || ran[last] != l {
			break
		}
		drop = i + 1
	}
	return strings.Join(lines[drop:], "\n")
}

// simpleBinding is the name a one-line import or assignment binds: "import
// x", "from m import x", "name = expr" with its brackets closed on the line.
func simpleBinding(line string) (string, bool) {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return "", false
	}
	if f := strings.Fields(line); len(f) >= 2 && (f[0] == "import" || f[0] == "from" && len(f) == 4 && f[2] == "import") {
		if strings.ContainsAny(line, ",(") {
			return "", false
		}
		return f[len(f)-1], true
	}
	name, _, ok := strings.Cut(line, " = ")
	if !ok || name == "" || strings.Contains(line, "ANSWER") {
		return "", false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return "", false
		}
	}
	depth := 0
	for _, r := range line {
		switch r {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
	}
	return name, depth == 0
}
