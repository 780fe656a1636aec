package session

import (
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
