package kernel

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCut(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		keep       int
		head, tail string
		dropped    int
	}{
		{"fits", "short", 10, "short", "", 0},
		{"no lines", strings.Repeat("x", 20), 10, "xxxxx", "xxxxx", 10},
		{"whole lines", "aa\nbb\ncc\ndd\nee\nff\n", 12, "aa\nbb\n", "ee\nff\n", 6},
		{"the head ends after its last newline in its second half", "abcd\nefghijklmnopqrstuvwxyz", 12, "abcd\n", "uvwxyz", 16},
		{"a newline in the head's first half stays", "ab\ncdefghijklmnopqrstuvwxyz", 12, "ab\ncde", "uvwxyz", 15},
		{"the tail starts after its first newline in its first half", "abcdefghijklmnopqrstu\nvwxyz", 12, "abcdef", "vwxyz", 16},
		{"a tail that starts a line keeps that line", "xxxxxxxxxx\nline one\nline two\n", 18, "xxxxxxxxx", "line two\n", 11},
		{"characters, not bytes", strings.Repeat("é", 20), 10, strings.Repeat("é", 5), strings.Repeat("é", 5), 10},
		{"nothing kept", "abc", 0, "", "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, tail, dropped := Cut(tt.text, tt.keep)
			assert.Equal(t, tt.head, head)
			assert.Equal(t, tt.tail, tail)
			assert.Equal(t, tt.dropped, dropped)
			assert.Equal(t, utf8.RuneCountInString(tt.text), utf8.RuneCountInString(head)+utf8.RuneCountInString(tail)+dropped)
		})
	}
}

func TestTrimCutNeverSplitsACharacter(t *testing.T) {
	s := "a" + strings.Repeat("é", 20) + "b"
	head, tail := TrimCut(s[:8], s[len(s)-8:], false) // both ends fall inside an "é"
	assert.Equal(t, "a"+strings.Repeat("é", 3), head)
	assert.Equal(t, strings.Repeat("é", 3)+"b", tail)
}

func TestJoinCut(t *testing.T) {
	assert.Equal(t, "head\n... [12 bytes dropped] ...\ntail", JoinCut("head", "tail", 12))
	assert.Equal(t, "head\n... [12 bytes dropped] ...\ntail", JoinCut("head\n", "tail", 12))
	assert.Equal(t, "abc", JoinCut("ab", "c", 0))
	assert.Equal(t, int64(3), DroppedIn(JoinCut("x", "y", 3)))
	assert.Zero(t, DroppedIn("... [many bytes dropped] ...\n"))
	assert.Zero(t, DroppedIn("a line that says ... [3 bytes dropped] ... in its middle\n"))
}

// capByRule is what a kernel keeps of text under a cap of limit bytes, and
// how many bytes it drops: half of the cap at each end, trimmed and joined by
// the one rule.
func capByRule(text string, limit int) (string, int64) {
	if len(text) <= limit {
		return text, 0
	}
	half := limit / 2
	head, tail := TrimCut(text[:half], text[len(text)-half:], text[len(text)-half-1] == '\n')
	dropped := int64(len(text) - len(head) - len(tail))
	return JoinCut(head, tail, dropped), dropped
}

// cutCases are texts whose cut at 64 bytes tests each part of the rule.
var cutCases = map[string]string{
	"lines":                   numberedLines(20),
	"split characters":        "a" + strings.Repeat("é", 100) + "b",
	"no newline":              strings.Repeat("x", 100),
	"a newline early in head": "ab\n" + strings.Repeat("y", 97),
}

func numberedLines(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("line " + strconv.Itoa(10+i) + "\n")
	}
	return b.String()
}

// TestKernelsCutByOneRule: the Go kernel's capture and the Python driver
// (printed text and value text, with IPython and without) keep what the
// rule keeps.
func TestKernelsCutByOneRule(t *testing.T) {
	const limit = 64 // the driver's smallest cap
	for name, text := range cutCases {
		w := newGoCapWriter(limit)
		_, _ = w.Write([]byte(text))
		got, dropped := w.result()
		want, wantDropped := capByRule(text, limit)
		assert.Equal(t, want, got, "go kernel: %s", name)
		assert.Equal(t, wantDropped, dropped, "go kernel: %s", name)
	}
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			for name, text := range cutCases {
				want, dropped := capByRule(text, limit)
				q := strconv.Quote(text)
				res, err := k.Execute(t.Context(), "print("+q+", end='')", ExecOptions{MaxOutputBytes: limit})
				require.NoError(t, err)
				assert.Equal(t, want, res.Stdout, "printed: %s", name)
				assert.Equal(t, dropped, res.DroppedBytes, "printed: %s", name)
				res, err = k.Execute(t.Context(), "class R:\n    def __repr__(self): return "+q+"\nR()", ExecOptions{MaxOutputBytes: limit})
				require.NoError(t, err)
				want, dropped = capByRule(strings.TrimSuffix(text, "\n"), limit) // a value's text ends without a newline
				assert.Equal(t, want, res.Value, "value: %s", name)
				assert.Equal(t, dropped, res.DroppedBytes, "value: %s", name)
			}
		})
	}
}
