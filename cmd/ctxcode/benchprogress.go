package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/ctxcode/ctxcode/bench"
)

// benchProgress shows a run's progress on stderr: on a terminal, one live
// bar (trials done of all, accuracy so far, tokens so far, elapsed time
// and the time left); otherwise one plain line per trial. Notes (a retry,
// a warning) are lines of their own above the bar. It implements
// bench.Observer.
type benchProgress struct {
	mu     sync.Mutex
	stderr io.Writer
	tty    bool
	bar    *progressbar.ProgressBar

	total, done                 int
	graded, correct, infra      int
	contextTokens, outputTokens int
}

func newBenchProgress(stderr io.Writer) *benchProgress {
	return &benchProgress{stderr: stderr, tty: terminal(stderr)}
}

// Started implements bench.Observer.
func (p *benchProgress) Started(total, done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.done = total, done
	if done > 0 {
		fmt.Fprintf(p.stderr, "ctxcode: resuming: %d of %d trials already have a result; running the other %d\n", done, total, total-done)
	}
	if !p.tty || done == total {
		return
	}
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.stderr),
		progressbar.OptionSetItsString("trials"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetRenderBlankState(true),
	)
	_ = p.bar.Set(done)
}

// Finished implements bench.Observer.
func (p *benchProgress) Finished(t bench.Trial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if t.Class == bench.ClassInfra {
		p.infra++
	} else {
		p.graded++
		if t.Correct {
			p.correct++
		}
	}
	p.contextTokens += t.ContextTokens
	p.outputTokens += t.OutputTokens
	if p.bar != nil {
		p.bar.Describe(p.describe())
		_ = p.bar.Add(1)
		return
	}
	verdict := t.Verdict
	if t.Class == bench.ClassInfra {
		verdict = "infra: " + string(t.Status)
	}
	fmt.Fprintf(p.stderr, "[%*d/%d] %-20s %-3s %-9s r%-2d %-18s %2d turns %6d context %5d output %6.2fs\n",
		len(fmt.Sprint(p.total)), p.done, p.total, t.Model, t.Condition, t.Task, t.Rep, verdict, t.Turns,
		t.ContextTokens, t.OutputTokens, float64(t.WallMS)/1000)
}

func (p *benchProgress) describe() string {
	acc := "-"
	if p.graded > 0 {
		acc = fmt.Sprintf("%.0f%%", 100*float64(p.correct)/float64(p.graded))
	}
	infra := ""
	if p.infra > 0 {
		infra = fmt.Sprintf(" · %d infra", p.infra)
	}
	return fmt.Sprintf("accuracy %s · %s context, %s output tokens%s", acc, short(p.contextTokens), short(p.outputTokens), infra)
}

// short writes a count as 950, 12.3k or 4.5M.
func short(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// note prints line on a line of its own, above the bar. It may be called
// from any goroutine.
func (p *benchProgress) note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintln(p.stderr, line)
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

// Write prints warnings (whole lines) above the bar: it is the run's Warn.
func (p *benchProgress) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		p.note(line)
	}
	return len(b), nil
}

// finish ends the bar's line.
func (p *benchProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.stderr)
		p.bar = nil
	}
}
