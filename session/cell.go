// Package session holds a notebook session as text: cells with their code and
// results, rendered the way an IPython terminal shows them.
//
// A rendered cell is
//
//	In [2]: total = sum(xs)
//	   ...: total
//	<stdout, then stderr, as the cell wrote them>
//	Out[2]: 42
//
// A value that spans several lines starts on the line after "Out[n]: ", as
// in IPython. A failed cell shows its compact traceback instead of Out; a
// cell that called ANSWER shows "ANSWER: <json>". Rendering is
// deterministic: the same cell and result always give the same bytes.
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
}

// Render writes the cell IPython style, ending with a newline.
func (c Cell) Render() string {
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
	writeBlock(&b, c.Result.Stdout)
	writeBlock(&b, c.Result.Stderr)
	switch {
	case c.Result.Error != nil && c.Result.Status != kernel.StatusOK:
		tb := c.Result.Error.Traceback
		if tb == "" {
			tb = c.Result.Error.Name + ": " + c.Result.Error.Value
		}
		writeBlock(&b, tb)
	case c.Result.Answered():
		b.WriteString("ANSWER: ")
		b.Write(c.Result.Answer)
		b.WriteByte('\n')
	case c.Result.Value != "":
		b.WriteString("Out[" + n + "]: ")
		if strings.Contains(c.Result.Value, "\n") {
			b.WriteByte('\n')
		}
		writeBlock(&b, c.Result.Value)
	}
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
