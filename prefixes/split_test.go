package prefixes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSplitCells(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"no marker: one cell", "x = 1\nx\n", []string{"x = 1\nx"}},
		{"markers", "# %%\nx = 1\n# %%\nx + 1\n", []string{"x = 1", "x + 1"}},
		{"a header is dropped", "# a header, not a cell\n\n# %%\nimport os\n# %% second\nprint('hi')\n", []string{"import os", "print('hi')"}},
		{"code before the first marker is a cell", "x = 1\n# %%\nx\n", []string{"x = 1", "x"}},
		{"comment-only and blank cells are dropped", "# %%\n# just a note\n\n# %%\n\n\n# %%\ny = 2\n", []string{"y = 2"}},
		{"comments inside a cell stay", "# %%\n# the sum\n1 + 1\n", []string{"# the sum\n1 + 1"}},
		{"go markers", "// %%\nx := 41\n// %%\n// only a comment\n// %%\nx + 1\n", []string{"x := 41", "x + 1"}},
		{"indented marker", "  # %%\nx\n", []string{"x"}},
		{"CRLF", "# %%\r\nx = 1\r\n# %%\r\nx\r\n", []string{"x = 1", "x"}},
		{"blank lines around a cell are trimmed, inside kept", "# %%\n\nx = 1\n\ny = 2\n\n", []string{"x = 1\n\ny = 2"}},
		{"empty", "", nil},
		{"not a marker", "# %%%\nx\n", []string{"# %%%\nx"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, SplitCells(tt.src))
		})
	}
}

// TestSplitCellsAgreesWithParse: a prefix file's cells are the cells
// SplitCells gives of it, its header aside.
func TestSplitCellsAgreesWithParse(t *testing.T) {
	for _, name := range Builtins() {
		p, err := Load(name)
		if !assert.NoError(t, err, name) {
			continue
		}
		src, err := builtin.ReadFile("builtin/" + name + ".py")
		if err != nil {
			continue // a Go built-in, or another extension
		}
		var want []string
		for _, c := range p.Cells {
			if hasCode(c.Code) {
				want = append(want, c.Code)
			}
		}
		assert.Equal(t, want, SplitCells(string(src)), name)
	}
}
