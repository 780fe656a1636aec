package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// numbers is a cell that printed n numbers: many tokens.
func numbers(count, n int) Cell {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d ", i*7919%100003)
	}
	return Cell{Code: fmt.Sprintf("print(numbers(%d))", n), From: FromModel,
		Result: kernel.Result{Count: count, Status: kernel.StatusOK, Stdout: b.String()}}
}

func answered(count int, v string) Cell {
	return Cell{Code: "ANSWER(x)", From: FromModel, Result: kernel.Result{Count: count, Status: kernel.StatusOK, Answer: []byte(v)}}
}

// history is a conversation of stages questions, each with one big cell and
// an answer, and the question being answered with one big cell so far.
func history(stages int) Input {
	in := Input{Transcript: Transcript{Language: kernel.Python, Cells: []Cell{{Code: "tasks = load()", Result: kernel.Result{Count: 1, Status: kernel.StatusOK}}}}}
	n := 2
	for i := range stages {
		in.Earlier = append(in.Earlier, Stage{Question: fmt.Sprintf("question %d?", i+1), Cells: []Cell{numbers(n, 400), answered(n+1, "1")}})
		n += 2
	}
	in.Question = "the last question?"
	in.New = []Cell{numbers(n, 400)}
	return in
}

func TestPolicyNoneChangesNothing(t *testing.T) {
	in := history(6)
	pl, err := Context{}.Plan(O200kBase, Bare, in)
	require.NoError(t, err)
	want, err := Render(Bare, in)
	require.NoError(t, err)
	assert.Equal(t, want, pl.Request)
	assert.Zero(t, pl.Elided)
	assert.Zero(t, pl.Fold)
	n, err := CountRequest(O200kBase, want)
	require.NoError(t, err)
	assert.Equal(t, n, pl.Tokens)
}

func TestElisionSparesPinnedAndRecent(t *testing.T) {
	in := history(6)
	for _, p := range []Protocol{Bare, Eval, TranscriptText} {
		t.Run(string(p), func(t *testing.T) {
			whole, err := Context{}.Plan(O200kBase, p, in)
			require.NoError(t, err)
			c := Context{Policy: PolicyElide, Window: whole.Tokens} // past 0.6 of it
			pl, err := c.Plan(O200kBase, p, in)
			require.NoError(t, err)
			assert.Less(t, pl.Tokens, whole.Tokens)
			assert.Positive(t, pl.Elided)
			assert.Zero(t, pl.Fold, "elide never folds")
			// The stable part and the question are untouched.
			assert.Equal(t, whole.Request.Messages[:whole.Request.Stable], pl.Request.Messages[:pl.Request.Stable])
			if p != TranscriptText {
				assert.Equal(t, "the last question?", pl.Request.Messages[pl.Request.Asked].Content)
			}
			// The last two cells (the last stage's answer and the current
			// cell) keep their output: the current one is the last message.
			last := pl.Request.Messages[len(pl.Request.Messages)-1].Content
			if p == TranscriptText {
				_, last, _ = strings.Cut(last, "Question: question 6?")
			}
			assert.NotContains(t, last, "elided")
			assert.Contains(t, pl.Input.New[0].Output(kernel.Python, 0), "0 7919 ")
			// Short outputs (the answers) are never stubbed.
			for _, st := range pl.Input.Earlier {
				assert.False(t, st.Cells[1].Elided)
			}
			// A stub names where the full output is.
			assert.True(t, pl.Input.Earlier[0].Cells[0].Elided)
			stub := pl.Input.Earlier[0].Cells[0].Output(kernel.Python, 0)
			assert.Regexp(t, `^\[ctxcode: output elided to save context \(\d+ characters\); it is still in _stdout\[2\]\]$`, stub)
			// The caller's input is not changed.
			assert.False(t, in.Earlier[0].Cells[0].Elided)
		})
	}
}

func TestElisionBelowTheSoftThresholdDoesNothing(t *testing.T) {
	in := history(2)
	whole, err := Context{}.Plan(O200kBase, Bare, in)
	require.NoError(t, err)
	pl, err := Context{Policy: PolicyStaged, Window: whole.Tokens * 2}.Plan(O200kBase, Bare, in)
	require.NoError(t, err)
	assert.Equal(t, whole.Request, pl.Request)
}

func TestFoldPlanAndFolded(t *testing.T) {
	in := history(6)
	whole, err := Context{}.Plan(O200kBase, Eval, in)
	require.NoError(t, err)
	c := Context{Policy: PolicySummarize, Window: whole.Tokens, Recent: 0.05}
	pl, err := c.Plan(O200kBase, Eval, in)
	require.NoError(t, err)
	assert.Zero(t, pl.Elided, "summarize does not elide")
	// Recent holds the last stage's answer and the current cell (at least
	// two cells); everything of the earlier stages before them folds:
	// 5 whole stages (3 turns each) and the sixth's question and big cell.
	assert.Equal(t, 5*3+2, pl.Fold)

	req := FoldRequest(in, pl.Fold)
	assert.Equal(t, Summary, req.Protocol)
	assert.Empty(t, req.Tools, "a fold is tool-free")
	body := req.Messages[1].Content
	assert.Contains(t, body, "Question: question 1?")
	assert.Contains(t, body, "Question: question 6?")
	assert.NotContains(t, body, "the last question?")
	assert.Equal(t, 5, strings.Count(body, "ANSWER: 1"), "five whole stages fold, the sixth's answer stays")

	folded := Folded(in, pl.Fold, "the summary")
	assert.Equal(t, "the summary", folded.Summary)
	require.Len(t, folded.Earlier, 1, "what is left of the sixth stage")
	assert.Empty(t, folded.Earlier[0].Question, "its question folded")
	assert.Equal(t, in.Earlier[5].Cells[1:], folded.Earlier[0].Cells)
	assert.Equal(t, in.New, folded.New)
	req2, err := Render(Eval, folded)
	require.NoError(t, err)
	assert.Contains(t, req2.Messages[req2.Stable].Content, "folded into this summary")
	assert.Contains(t, req2.Messages[req2.Stable].Content, "the summary")
	assert.Equal(t, "the last question?", req2.Messages[req2.Asked].Content)
	assert.Len(t, in.Earlier, 6, "the caller's input is not changed")

	// A second fold carries the first summary into its request.
	assert.Contains(t, FoldRequest(folded, 1).Messages[1].Content, "Summary so far:\nthe summary")
	assert.Equal(t, "Question: question 1?\nANSWER: 1\nQuestion: question 2?", SummaryFallback("Turns to fold:\n\nQuestion: question 1?\nIn [2]: x\nANSWER: 1\nQuestion: question 2?"))
}

func TestContextCheck(t *testing.T) {
	require.NoError(t, Context{}.Check())
	require.NoError(t, Context{Policy: PolicyStaged, Window: 4000}.Check())
	assert.ErrorContains(t, Context{Policy: "trim"}.Check(), `unknown context policy "trim": expected none, elide, summarize or staged`)
	assert.ErrorContains(t, Context{Policy: PolicyStaged, Soft: 0.9, Hard: 0.8}.Check(), "expected soft ≤ hard")
	assert.ErrorContains(t, Context{Policy: PolicyElide, Soft: 60}.Check(), "a share of the window")
	p, err := ParsePolicy("")
	require.NoError(t, err)
	assert.Equal(t, PolicyNone, p)
	assert.Equal(t, "staged: elide at 0.6, summarize at 0.85 of 128000 tokens", Context{Policy: PolicyStaged}.String())
}

func TestEarlierStagesRenderInOrder(t *testing.T) {
	in := history(2)
	for _, p := range []Protocol{Bare, Eval, CLI, TranscriptText} {
		req, err := Render(p, in)
		require.NoError(t, err)
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content + "\n")
		}
		text := all.String()
		i1, i2, i3 := strings.Index(text, "question 1?"), strings.Index(text, "question 2?"), strings.LastIndex(text, "the last question?")
		assert.True(t, i1 >= 0 && i1 < i2 && i2 < i3, "%s: the questions in order", p)
		if p != TranscriptText {
			assert.Equal(t, "the last question?", req.Messages[req.Asked].Content, p)
		}
	}
	// Eval call ids are unique over the conversation.
	req, err := Render(Eval, in)
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			assert.False(t, ids[c.ID], "id %s twice", c.ID)
			ids[c.ID] = true
		}
	}
}

// TestStubKeepsNotesAndForgetsLostHomes: an elided cell keeps the
// harness's notes, and after a restart its stub no longer sends the model
// to Out[n] or _stdout[n], which the restart emptied.
func TestStubKeepsNotesAndForgetsLostHomes(t *testing.T) {
	in := history(6)
	in.Earlier[0].Cells[0].Notes = []string{"your message had fences; they were taken out"}
	restart := "the kernel died (oom) and was restarted; everything the cells after it defined is lost"
	in.Earlier[2].Cells[0].Notes = []string{restart}
	in.Earlier[2].Cells[0].Restarted = true
	whole, err := Context{}.Plan(O200kBase, Bare, in)
	require.NoError(t, err)
	pl, err := Context{Policy: PolicyElide, Window: whole.Tokens}.Plan(O200kBase, Bare, in)
	require.NoError(t, err)

	first := pl.Input.Earlier[0].Cells[0]
	require.True(t, first.Elided)
	stub := first.Output(kernel.Python, 0)
	assert.True(t, strings.HasPrefix(stub, Note("your message had fences; they were taken out")+"\n"), stub)
	assert.Contains(t, stub, "run the cell again to see it", "a restart came after it: its _stdout is gone")
	assert.NotContains(t, stub, "_stdout[")

	atRestart := pl.Input.Earlier[2].Cells[0]
	require.True(t, atRestart.Elided)
	assert.Contains(t, atRestart.Output(kernel.Python, 0), restart, "the restart's note survives elision")
	assert.Contains(t, atRestart.Text(kernel.Python, 0), restart)

	after := pl.Input.Earlier[3].Cells[0]
	require.True(t, after.Elided)
	assert.Contains(t, after.Output(kernel.Python, 0), "it is still in _stdout[8]", "cells after the restart keep their homes")
}
