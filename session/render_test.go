package session

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

func ok(count int, value string) kernel.Result {
	return kernel.Result{Count: count, Status: kernel.StatusOK, Value: value}
}

func TestOutput(t *testing.T) {
	long := strings.Repeat("0123456789abcdefghi\n", 500) // 10,000 characters
	tests := []struct {
		name   string
		cell   Cell
		lang   kernel.Language
		budget int
		want   string
	}{
		{"nothing", Cell{Code: "x = 1", Result: ok(1, "")}, kernel.Python, 0, "[ctxcode: no output]"},
		{"value", Cell{Code: "x", Result: ok(2, "1")}, kernel.Python, 0, "Out[2]: 1"},
		{"multi-line value", Cell{Code: "x", Result: ok(2, "[1,\n 2]")}, kernel.Python, 0, "Out[2]: \n[1,\n 2]"},
		{"streams and value", Cell{Code: "x", Result: kernel.Result{Count: 3, Stdout: "a\n", Stderr: "warn", Value: "1"}}, kernel.Python, 0,
			"a\nwarn\nOut[3]: 1"},
		{"notes first", Cell{Code: "x", Notes: []string{"removed Markdown fences"}, Result: ok(4, "1")}, kernel.Python, 0,
			"[ctxcode: removed Markdown fences]\nOut[4]: 1"},
		{"answer", Cell{Code: "ANSWER(1)", Result: kernel.Result{Count: 5, Answer: json.RawMessage(`[1, "a"]`)}}, kernel.Python, 0,
			`ANSWER: [1, "a"]`},
		{"error", Cell{Code: "1/0", Result: kernel.Result{Count: 6, Status: kernel.StatusError,
			Error: &kernel.ErrorInfo{Name: "ZeroDivisionError", Value: "division by zero"}}}, kernel.Python, 0,
			"ZeroDivisionError: division by zero"},
		{"printed text cut, python keeps it", Cell{Code: "p", Result: kernel.Result{Count: 7, Stdout: long}}, kernel.Python, 100,
			strings.Repeat("0123456789abcdefghi\n", 2) + "[ctxcode: 9920 characters of the printed output cut here; the full text is in the variable _stdout[7]]\n" +
				strings.Repeat("0123456789abcdefghi\n", 2)[:39]},
		{"value cut", Cell{Code: "v", Result: ok(8, long)}, kernel.Python, 100,
			"Out[8]: \n0123456789abcdefghi\n0123456789abcdefghi\n[ctxcode: 9920 characters of the value cut here; the whole value is still in the variable Out[8]]\n" +
				strings.Repeat("0123456789abcdefghi\n", 2)[:39]},
		{"go keeps nothing", Cell{Code: "v", Result: ok(9, long)}, kernel.Go, 100,
			"Out[9]: \n0123456789abcdefghi\n0123456789abcdefghi\n[ctxcode: 9920 characters of the value cut here; the full text is kept nowhere: show a smaller part of it]\n" +
				strings.Repeat("0123456789abcdefghi\n", 2)[:39]},
		{"no budget", Cell{Code: "p", Result: kernel.Result{Count: 10, Stdout: long}}, kernel.Python, -1, strings.TrimSuffix(long, "\n")},
		{"traceback cut, kept nowhere", Cell{Code: "f()", Result: kernel.Result{Count: 11, Status: kernel.StatusError,
			Error: &kernel.ErrorInfo{Name: "ValueError", Value: "v", Traceback: long}}}, kernel.Python, 100,
			"0123456789abcdefghi\n0123456789abcdefghi\n[ctxcode: 9920 characters of the traceback cut here; the full traceback is kept nowhere]\n" +
				strings.Repeat("0123456789abcdefghi\n", 2)[:39]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.cell.Output(tt.lang, tt.budget))
		})
	}
}

func TestOutputBudgetSharesFairly(t *testing.T) {
	// A short stderr stays whole while the long stdout and value share the rest.
	c := Cell{Code: "x", Result: kernel.Result{Count: 3, Stdout: strings.Repeat("o", 5000), Stderr: "short warning\n",
		Value: strings.Repeat("v", 5000)}}
	out := c.Output(kernel.Python, DefaultBudget)
	assert.Contains(t, out, "short warning\n")
	assert.Contains(t, out, "the full text is in the variable _stdout[3]")
	assert.Contains(t, out, "the whole value is still in the variable Out[3]")
	notes := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "[ctxcode:") {
			notes += utf8.RuneCountInString(line) + 1
		}
	}
	// Within the budget, give or take the newline that ends each of the three parts.
	assert.LessOrEqual(t, utf8.RuneCountInString(out)-notes, DefaultBudget+3, "the output without its notes fits the budget")
	assert.Greater(t, utf8.RuneCountInString(out)-notes, DefaultBudget-20)

	// Characters, not bytes: multi-byte text is cut on rune boundaries.
	c = Cell{Code: "x", Result: kernel.Result{Count: 4, Stdout: strings.Repeat("é", 3000)}}
	out = c.Output(kernel.Python, 100)
	assert.True(t, utf8.ValidString(out))
	assert.Contains(t, out, "[ctxcode: 2900 characters of the printed output cut here")
}

func sampleInput(question string) Input {
	return Input{
		Transcript: Transcript{Language: kernel.Python, Cells: []Cell{
			{Code: "import json\nx = [1, 2]", Result: ok(1, ""), From: FromPrefix},
			{Code: "len(x)", Result: ok(2, "2"), From: FromPrefix},
		}},
		Rules:    "x is bound.",
		Skill:    "# Files\n- data/x.jsonl",
		Question: question,
	}
}

func TestRenderersShareAByteIdenticalStablePart(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(string(p), func(t *testing.T) {
			a, err := Render(p, sampleInput("How many items are in x?"))
			require.NoError(t, err)
			b, err := Render(p, sampleInput("What is the sum of x? Answer with a number."))
			require.NoError(t, err)
			ja, jb := string(a.JSON()), string(b.JSON())
			cut := strings.Index(ja, "How many items")
			require.Positive(t, cut, "the question is in the request")
			assert.Equal(t, ja[:cut], jb[:cut], "everything before the question is the same for every question")
			assert.Equal(t, a.Messages[:a.Stable], b.Messages[:b.Stable])
			again, err := Render(p, sampleInput("How many items are in x?"))
			require.NoError(t, err)
			assert.Equal(t, ja, string(again.JSON()), "rendering is deterministic")
		})
	}
}

func TestRenderShapes(t *testing.T) {
	in := sampleInput("How many?")
	in.New = []Cell{{Code: "ANSWER(len(x))", Reply: "```python\nANSWER(len(x))\n```", Notes: []string{"removed Markdown fences"},
		Result: kernel.Result{Count: 3, Answer: json.RawMessage("2")}, From: FromModel}}

	bare, err := Render(Bare, in)
	require.NoError(t, err)
	roles := func(r Request) string {
		var s []string
		for _, m := range r.Messages {
			s = append(s, m.Role)
		}
		return strings.Join(s, " ")
	}
	assert.Equal(t, "system assistant user assistant user user assistant user", roles(bare))
	assert.Equal(t, 5, bare.Stable)
	assert.Equal(t, "import json\nx = [1, 2]", bare.Messages[1].Content, "a prefix cell is its code, nothing else")
	assert.Equal(t, "[ctxcode: no output]", bare.Messages[2].Content)
	assert.Equal(t, "Out[2]: 2", bare.Messages[4].Content)
	assert.Equal(t, "How many?", bare.Messages[5].Content)
	assert.Equal(t, in.New[0].Code, bare.Messages[6].Content, "the model's cell is replayed as it ran")
	assert.Equal(t, "[ctxcode: removed Markdown fences]\nANSWER: 2", bare.Messages[7].Content)
	assert.Contains(t, bare.Messages[0].Content, "x is bound.")
	assert.Empty(t, bare.Tools)

	eval, err := Render(Eval, in)
	require.NoError(t, err)
	assert.Equal(t, "system assistant tool assistant tool user assistant tool", roles(eval))
	require.Len(t, eval.Tools, 1)
	assert.Equal(t, "eval", eval.Tools[0].Name)
	call := eval.Messages[1].ToolCalls
	require.Len(t, call, 1)
	assert.Equal(t, ToolCall{ID: "prefix_1", Name: "eval", Arguments: `{"code":"import json\nx = [1, 2]"}`}, call[0])
	assert.Equal(t, "prefix_1", eval.Messages[2].ToolCallID)
	assert.JSONEq(t, `{"type":"object","properties":{"code":{"type":"string","description":"the code of the cell"}},"required":["code"],"additionalProperties":false}`,
		string(eval.Tools[0].Schema()))

	tr, err := Render(TranscriptText, in)
	require.NoError(t, err)
	require.Len(t, tr.Messages, 1)
	text := tr.Messages[0].Content
	assert.Contains(t, text, "In [1]: import json\n   ...: x = [1, 2]\n\nIn [2]: len(x)\nOut[2]: 2\n\nQuestion: How many?\n")
	assert.Contains(t, text, "Reply with one ```python code block")
	assert.Less(t, strings.Index(text, "Question:"), strings.Index(text, "In [3]: ANSWER(len(x))"), "new cells come after the question")

	cli, err := Render(CLI, in)
	require.NoError(t, err)
	assert.Equal(t, "system user assistant tool", roles(cli), "no prefix in cli")
	assert.Contains(t, cli.Messages[0].Content, "# Files\n- data/x.jsonl")
	assert.NotContains(t, cli.Messages[0].Content, "len(x)")
	assert.Equal(t, []string{"read", "bash"}, []string{cli.Tools[0].Name, cli.Tools[1].Name})

	_, err = Render("tools", in)
	assert.ErrorContains(t, err, `unknown protocol "tools": expected bare, eval, transcript or cli`)
}

func TestCountRequest(t *testing.T) {
	// The cookbook's arithmetic: 3 per message, role and content, 3 to prime the reply.
	n, err := CountRequest(O200kBase, Request{Messages: []Message{{Role: "user", Content: "hello"}}})
	require.NoError(t, err)
	assert.Equal(t, 3+1+1+3, n)

	// A function: 7 + "eval:<description>", 3 for its properties, 3 + "code:string:<description>", 12 at the end.
	tool := EvalTool(kernel.Python)
	head, err := CountTokens(O200kBase, "eval:"+strings.TrimSuffix(tool.Description, "."))
	require.NoError(t, err)
	prop, err := CountTokens(O200kBase, "code:string:the code of the cell")
	require.NoError(t, err)
	withTool, err := CountRequest(O200kBase, Request{Messages: []Message{{Role: "user", Content: "hello"}}, Tools: []Tool{tool}})
	require.NoError(t, err)
	assert.Equal(t, n+7+head+3+3+prop+12, withTool)

	// A tool call counts its name and arguments.
	args := `{"code":"len(tasks)"}`
	argTokens, err := CountTokens(O200kBase, args)
	require.NoError(t, err)
	withCall, err := CountRequest(O200kBase, Request{Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "a", Name: "eval", Arguments: args}}}}})
	require.NoError(t, err)
	assert.Equal(t, 3+1+3+1+argTokens+3, withCall)

	_, err = CountRequest("nope", Request{Messages: []Message{{Role: "user", Content: "x"}}})
	assert.Error(t, err)
}

// TestHistoryHoldsEachCellAsItRan: after a repair, the next request holds
// the code that ran, not the model's message; the repair's note begins the
// output. A message with no code (nothing ran) is replayed as it came.
func TestHistoryHoldsEachCellAsItRan(t *testing.T) {
	fenced := "Counting:\n```python\nANSWER(len(x))\n```"
	ran := Cell{Code: "ANSWER(len(x))", Reply: fenced, Notes: []string{"removed the Markdown fences around your code"},
		Result: kernel.Result{Count: 3, Answer: json.RawMessage("2")}, From: FromModel}
	prose := Cell{Reply: "I think it is 2.", Notes: []string{"your message has no code"}, From: FromModel}

	in := sampleInput("How many?")
	in.New = []Cell{ran, prose}
	bare, err := Render(Bare, in)
	require.NoError(t, err)
	msgs := bare.Messages[bare.Stable+1:]
	require.Len(t, msgs, 4)
	assert.Equal(t, "ANSWER(len(x))", msgs[0].Content, "the cell as it ran")
	assert.Equal(t, "[ctxcode: removed the Markdown fences around your code]\nANSWER: 2", msgs[1].Content)
	assert.Equal(t, "I think it is 2.", msgs[2].Content, "nothing ran: the message as it came")

	// Eval: the replayed call holds the code that ran, under the model's id;
	// a call whose code ran unchanged is replayed byte for byte.
	sent := ToolCall{ID: "c1", Name: "eval", Arguments: `{"code": "` + "```python\\nANSWER(len(x))\\n```" + `"}`}
	verbatim := ToolCall{ID: "c2", Name: "eval", Arguments: `{ "code" : "len(x)" }`}
	evalRan := ran
	evalRan.Reply, evalRan.Call = "", &sent
	plain := Cell{Code: "len(x)", Result: ok(4, "2"), From: FromModel, Call: &verbatim}
	in.New = []Cell{evalRan, plain}
	eval, err := Render(Eval, in)
	require.NoError(t, err)
	msgs = eval.Messages[eval.Stable+1:]
	require.Len(t, msgs, 4)
	assert.Equal(t, []ToolCall{{ID: "c1", Name: "eval", Arguments: `{"code":"ANSWER(len(x))"}`}}, msgs[0].ToolCalls)
	assert.Equal(t, "c1", msgs[1].ToolCallID)
	assert.Equal(t, "[ctxcode: removed the Markdown fences around your code]\nANSWER: 2", msgs[1].Content)
	assert.Equal(t, []ToolCall{verbatim}, msgs[2].ToolCalls, "unchanged code: the call as the model sent it")
	assert.Equal(t, "{\"code\": \"```python\\nANSWER(len(x))\\n```\"}", sent.Arguments, "the cell's own call is not changed")

	// Nothing ran from a call whose arguments broke off: it is replayed
	// with arguments a provider accepts, and the note says what was wrong.
	broken := Cell{Notes: []string{"the arguments must be a JSON object"}, From: FromModel,
		Call: &ToolCall{ID: "c3", Name: "eval", Arguments: `{"code": "len(`}}
	in.New = []Cell{broken}
	eval, err = Render(Eval, in)
	require.NoError(t, err)
	msgs = eval.Messages[eval.Stable+1:]
	assert.Equal(t, []ToolCall{{ID: "c3", Name: "eval", Arguments: "{}"}}, msgs[0].ToolCalls)
	assert.Equal(t, "[ctxcode: the arguments must be a JSON object]", msgs[1].Content)
}

// TestEvalMessageWithoutCall: a model message of the eval protocol that
// made no call (cut at the output-token limit) is replayed as text, and the
// harness's note follows as a user message, never as a made-up tool call.
func TestEvalMessageWithoutCall(t *testing.T) {
	in := sampleInput("How many?")
	in.New = []Cell{{Reply: "Let me think about", Notes: []string{"your message was cut at the output-token limit"}, From: FromModel}}
	eval, err := Render(Eval, in)
	require.NoError(t, err)
	msgs := eval.Messages[eval.Stable+1:]
	require.Len(t, msgs, 2)
	assert.Equal(t, Message{Role: "assistant", Content: "Let me think about"}, msgs[0])
	assert.Equal(t, Message{Role: "user", Content: "[ctxcode: your message was cut at the output-token limit]"}, msgs[1])
}

// TestRulesAreTrueOfTheNamespace: the session rules say the cells'
// variables are bound only for a prefix that binds them.
func TestRulesAreTrueOfTheNamespace(t *testing.T) {
	for _, p := range []Protocol{Bare, Eval, TranscriptText} {
		bound := sampleInput("How many?")
		unbound := bound
		unbound.NothingBound = true
		b, err := Render(p, bound)
		require.NoError(t, err)
		u, err := Render(p, unbound)
		require.NoError(t, err)
		assert.Contains(t, b.Messages[0].Content, "their variables are still bound: build on them", p)
		assert.NotContains(t, u.Messages[0].Content, "still bound", p)
		assert.Equal(t, strings.Replace(b.Messages[0].Content, "; their variables are still bound: build on them", "", 1), u.Messages[0].Content,
			"%s: the rules differ only in what is bound", p)
	}
}

// TestOutputPointsOnlyToWhatIsKept: when the kernel itself cut a part at
// its cap, _stdout[n] holds only the kernel's head and tail, so the note
// does not point there; the parts the kernel kept whole still point home.
func TestOutputPointsOnlyToWhatIsKept(t *testing.T) {
	lines := strings.Repeat("0123456789abcdefghi\n", 100)
	capped := kernel.JoinCut(lines, lines, 5000)
	c := Cell{Code: "p", Result: kernel.Result{Count: 7, Stdout: capped, Stderr: lines, DroppedBytes: 5000}}
	out := c.Output(kernel.Python, 200)
	assert.Contains(t, out, "characters of the printed output cut here; the kernel dropped 5000 bytes of it past its output cap, so the full text is kept nowhere: print a smaller part of it]")
	assert.NotContains(t, out, "_stdout[7]")
	assert.Contains(t, out, "characters of the standard error cut here; the full text is in the variable _stderr[7]]", "stderr was kept whole")
}

// TestCutKeepsALineThatStartsTheTail: a tail that already starts a line
// keeps that line (the one rule of kernel.Cut).
func TestCutKeepsALineThatStartsTheTail(t *testing.T) {
	text := strings.Repeat("x", 30) + "\n" + "tail line one\ntail line two\n" // the tail of 28 starts a line
	c := Cell{Code: "p", Result: kernel.Result{Count: 2, Stdout: text}}
	out := c.Output(kernel.Python, 56)
	assert.True(t, strings.HasSuffix(out, "\ntail line one\ntail line two"), out)
}

// TestCLIToolSchemas: read takes a required path and optional whole
// numbers offset and limit from 1; bash a required command; nothing else.
func TestCLIToolSchemas(t *testing.T) {
	tools := CLITools()
	require.Len(t, tools, 2)
	assert.JSONEq(t, `{"type":"object","properties":{
		"path":{"type":"string","description":"the file's path relative to the session folder, such as data/tasks.jsonl"},
		"offset":{"type":"integer","description":"the number of the first line to return, counting from 1; default 1","minimum":1},
		"limit":{"type":"integer","description":"how many lines to return; default 2000","minimum":1}},
		"required":["path"],"additionalProperties":false}`, string(tools[0].Schema()))
	assert.JSONEq(t, `{"type":"object","properties":{
		"command":{"type":"string","description":"the command line, such as wc -l data/*.jsonl"}},
		"required":["command"],"additionalProperties":false}`, string(tools[1].Schema()))
	for _, tool := range tools {
		var v any
		require.NoError(t, json.Unmarshal(tool.Schema(), &v), "%s: the schema is JSON", tool.Name)
		assert.Equal(t, string(tool.Schema()), string(CLITools()[slices.IndexFunc(tools, func(x Tool) bool { return x.Name == tool.Name })].Schema()),
			"%s: the same bytes from a fresh CLITools, so the stable part of A's requests stays byte-identical", tool.Name)
	}

	// The cookbook counts each property as name:type:description.
	prop, err := CountTokens(O200kBase, "offset:integer:"+tools[0].Parameters[1].Description)
	require.NoError(t, err)
	without := tools[0]
	without.Parameters = without.Parameters[:1]
	a, err := CountRequest(O200kBase, Request{Tools: []Tool{tools[0]}})
	require.NoError(t, err)
	b, err := CountRequest(O200kBase, Request{Tools: []Tool{without}})
	require.NoError(t, err)
	limit, err := CountTokens(O200kBase, "limit:integer:"+tools[0].Parameters[2].Description)
	require.NoError(t, err)
	assert.Equal(t, b+3+prop+3+limit, a)
}

// TestCLIHistory: each tool call of the run is the model's call as it came
// and its result as the next tool message: the notes, the output within the
// budget, then the notes after it (the exit status); a call whose
// arguments are not JSON is replayed as {}; a message without a call is
// replayed as text with the notes as a user message.
func TestCLIHistory(t *testing.T) {
	in := sampleInput("How many?")
	in.Budget = 100
	long := strings.Repeat("0123456789abcdefghi\n", 50)
	read := ToolCall{ID: "c1", Name: "read", Arguments: `{"path": "data/x.jsonl"}`}
	bash := ToolCall{ID: "c2", Name: "bash", Arguments: `{"command":"python3 -c 'print(2)'"}`}
	broken := ToolCall{ID: "c3", Name: "bash", Arguments: `{"command": "wc -l da`}
	in.New = []Cell{
		{Call: &read, Reply: "Reading first.", Result: kernel.Result{Stdout: "     1\t{\"a\": 1}\n"}, From: FromModel},
		{Call: &bash, Code: "python3 -c 'print(2)'", Result: kernel.Result{Stdout: long, Status: kernel.StatusError},
			After: []string{"exit status 1"}, From: FromModel},
		{Call: &broken, Notes: []string{"your message was cut at the output-token limit", `the arguments must be a JSON object {"command": "<the command line>"}`},
			From: FromModel},
		{Reply: "Let me", Notes: []string{"your message was cut at the output-token limit"}, From: FromModel},
	}
	req, err := Render(CLI, in)
	require.NoError(t, err)
	msgs := req.Messages[2:]
	require.Len(t, msgs, 8)
	assert.Equal(t, Message{Role: "assistant", Content: "Reading first.", ToolCalls: []ToolCall{read}}, msgs[0], "the call byte for byte")
	assert.Equal(t, Message{Role: "tool", ToolCallID: "c1", Content: "     1\t{\"a\": 1}"}, msgs[1])
	assert.Equal(t, []ToolCall{bash}, msgs[2].ToolCalls)
	out := msgs[3].Content
	assert.True(t, strings.HasPrefix(out, "0123456789abcdefghi\n0123456789abcdefghi\n[ctxcode: 920 characters of the printed output cut here; "+
		"the full text is kept nowhere: show a smaller part of it]\n"), out)
	assert.True(t, strings.HasSuffix(out, "0123456789abcdefghi\n[ctxcode: exit status 1]"), "the exit status comes last, never cut: %s", out)
	assert.Equal(t, []ToolCall{{ID: "c3", Name: "bash", Arguments: "{}"}}, msgs[4].ToolCalls)
	assert.Equal(t, "[ctxcode: your message was cut at the output-token limit]\n"+
		`[ctxcode: the arguments must be a JSON object {"command": "<the command line>"}]`, msgs[5].Content)
	assert.Equal(t, Message{Role: "assistant", Content: "Let me"}, msgs[6])
	assert.Equal(t, Message{Role: "user", Content: "[ctxcode: your message was cut at the output-token limit]"}, msgs[7])
	assert.Equal(t, msgs[3].Content, CLIOutput(in.New[1], 100), "CLIOutput is the tool message")

	assert.Contains(t, req.Messages[0].Content, `"ANSWER: <value>"`)
}
