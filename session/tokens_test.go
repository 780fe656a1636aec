package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

func TestCountTokens(t *testing.T) {
	for _, tc := range []struct {
		enc  Encoding
		text string
		want int
	}{
		{O200kBase, "hello world", 2},
		{"", "hello world", 2},
		{Cl100kBase, "hello world", 2},
		{O200kBase, "", 0},
		{O200kBase, "In [1]: len(tasks)\nOut[1]: 5000\n", 15},
	} {
		n, err := CountTokens(tc.enc, tc.text)
		require.NoError(t, err)
		assert.Equal(t, tc.want, n, "%s %q", tc.enc, tc.text)
	}
	_, err := CountTokens("p50k", "x")
	assert.ErrorContains(t, err, `unknown token encoding "p50k"`)
}

func TestCheckEncoding(t *testing.T) {
	for _, enc := range []Encoding{"", O200kBase, Cl100kBase} {
		assert.NoError(t, CheckEncoding(enc))
	}
	assert.ErrorContains(t, CheckEncoding("p50k"), `unknown token encoding "p50k": expected o200k_base or cl100k_base`)
}

// TestBoundRequest: the bound, found without a vocabulary, is never below
// the count, in every protocol and vocabulary; CountLater counts as
// CountRequest does.
func TestBoundRequest(t *testing.T) {
	in := Input{
		Transcript: Transcript{Language: kernel.Python, Cells: []Cell{
			{Code: "tasks = load('tasks')\nlen(tasks)", Result: kernel.Result{Count: 1, Status: kernel.StatusOK, Value: "5000"}},
			{Code: "print('héllo wörld ' * 40)", Result: kernel.Result{Count: 2, Status: kernel.StatusOK, Stdout: strings.Repeat("héllo wörld ", 40)}},
		}},
		Question: "How many tasks are blocked? 🙂",
		Skill:    "data/tasks.jsonl: 5000 lines",
		New:      []Cell{{Code: "len(tasks)", From: FromModel, Call: &ToolCall{ID: "c1", Name: "eval", Arguments: `{"code": "len(tasks)"}`}}},
	}
	for _, p := range Protocols() {
		req, err := Render(p, in)
		require.NoError(t, err)
		bound := BoundRequest(req)
		for _, enc := range []Encoding{O200kBase, Cl100kBase} {
			n, err := CountRequest(enc, req)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, bound, n, "%s %s", p, enc)
			later, err := CountLater(enc, req)()
			require.NoError(t, err)
			assert.Equal(t, n, later, "%s %s", p, enc)
		}
	}
	_, err := CountLater("p50k", Request{Messages: []Message{{Role: "user", Content: "x"}}})()
	assert.ErrorContains(t, err, `unknown token encoding "p50k"`)
}

func TestRenderCells(t *testing.T) {
	cells := []Cell{
		{Code: "x = 41", Result: kernel.Result{Count: 1, Status: kernel.StatusOK}},
		{Code: "x + 1", Result: kernel.Result{Count: 2, Status: kernel.StatusOK, Value: "42"}},
	}
	assert.Equal(t, "In [1]: x = 41\n\nIn [2]: x + 1\nOut[2]: 42\n", RenderCells(cells))
	assert.Empty(t, RenderCells(nil))
}

func BenchmarkCountTokens(b *testing.B) {
	text := RenderCells([]Cell{{Code: "len(tasks)", Result: kernel.Result{Count: 1, Value: "5000"}}})
	for b.Loop() {
		if _, err := CountTokens(O200kBase, text); err != nil {
			b.Fatal(err)
		}
	}
}
