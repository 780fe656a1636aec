package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ctxcode/ctxcode/llm"
)

// progress is the one line on a terminal that shows a run's turn, tokens so
// far and the running cell; it writes nothing when stderr is not a terminal.
// Notes (a retry) are whole lines on stderr, terminal or not.
type progress struct {
	mu     sync.Mutex
	w      io.Writer // the terminal, or nil
	stderr io.Writer
	shown  bool
}

// terminal says whether w is a terminal (a character device).
func terminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(stderr io.Writer) *progress {
	p := &progress{stderr: stderr}
	if !terminal(stderr) {
		return p
	}
	p.w = stderr
	return p
}

// note prints line on a line of its own, above the progress line. It may
// be called from any goroutine.
func (p *progress) note(line string) { _, _ = io.WriteString(p, line+"\n") }

// Write writes whole lines to stderr above the progress line, so that
// warnings written from any goroutine (a kernel that starts in the
// background) never tear it or race with it.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
	return p.stderr.Write(b)
}

// Progress implements agent.Observer.
func (p *progress) Progress(turn int, usage llm.Usage, running string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("turn %d · %d context tokens · %s", turn, usage.PromptTokens, strings.ReplaceAll(running, "\n", " "))
	if r := []rune(line); len(r) > 78 {
		line = string(r[:77]) + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.shown = true
}

// done clears the line.
func (p *progress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
