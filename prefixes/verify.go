package prefixes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

// DefaultMaxTokens is the most tokens a prefix's rendered transcript may
// have for Verify (and prefix verify) to pass it, when no budget is given.
const DefaultMaxTokens = 4000

// StartKernel starts a fresh kernel for one build; stop ends it and
// anything started with it (it may be nil).
type StartKernel func(ctx context.Context) (k kernel.Kernel, stop func(), err error)

// VerifyOptions bound a verification. The zero value means the defaults.
type VerifyOptions struct {
	// MaxTokens is the most tokens the transcript may have. Zero means
	// DefaultMaxTokens.
	MaxTokens int
	// Encoding is the token vocabulary. Empty means o200k_base.
	Encoding session.Encoding
	// Exec bounds each cell (zero: the kernel's defaults).
	Exec kernel.ExecOptions
}

// Verified is a prefix that passed Verify.
type Verified struct {
	Cells  int    // cells built
	Tokens int    // tokens of the rendered transcript
	Text   string // the transcript, as session.RenderCells renders it
}

// NondeterministicError is a prefix whose two builds rendered differently.
type NondeterministicError struct {
	Prefix string
	Diff   string // the first line that differs, in both builds
}

func (e *NondeterministicError) Error() string {
	return fmt.Sprintf("prefix %s is not deterministic: two builds in fresh kernels differ:\n%s\n"+
		"(show sorted values, not sets or dicts of unknown order, times, addresses or random numbers)", e.Prefix, e.Diff)
}

// OverBudgetError is a prefix whose transcript has more tokens than allowed.
type OverBudgetError struct {
	Prefix   string
	Tokens   int
	Max      int
	Encoding session.Encoding
}

func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("prefix %s renders to %d tokens (%s), over --max-tokens %d: show less of the data "+
		"(fewer cells, fewer or shorter sample rows), or raise --max-tokens", e.Prefix, e.Tokens, e.Encoding, e.Max)
}

// Verify is what prefix verify checks: p builds in two fresh kernels from
// start, every cell without error (else a *BuildError), the two transcripts
// are identical (else a *NondeterministicError), and the transcript has at
// most MaxTokens tokens (else an *OverBudgetError). Other errors mean the
// machinery failed (a kernel did not start or died).
func Verify(ctx context.Context, start StartKernel, p *Prefix, o VerifyOptions) (*Verified, error) {
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.Encoding == "" {
		o.Encoding = session.O200kBase
	}
	build := func() (string, error) {
		k, stop, err := start(ctx)
		if stop != nil {
			defer stop()
		}
		if err != nil {
			return "", fmt.Errorf("start kernel: %w", err)
		}
		cells, err := Build(ctx, k, p, o.Exec)
		if err != nil {
			return "", err
		}
		return session.RenderCells(cells), nil
	}
	text, err := build()
	if err != nil {
		return nil, err
	}
	tokens, err := session.CountTokens(o.Encoding, text)
	if err != nil {
		return nil, err
	}
	again, err := build()
	if err != nil {
		return nil, err
	}
	if again != text {
		return nil, &NondeterministicError{Prefix: p.Name, Diff: firstDifference(text, again)}
	}
	if tokens > o.MaxTokens {
		return nil, &OverBudgetError{Prefix: p.Name, Tokens: tokens, Max: o.MaxTokens, Encoding: o.Encoding}
	}
	return &Verified{Cells: len(p.Cells), Tokens: tokens, Text: text}, nil
}

// IsNotGood reports whether err says the prefix itself is not good (a cell
// failed, two builds differ, or it is over budget), as opposed to the
// machinery failing.
func IsNotGood(err error) bool {
	var be *BuildError
	var ne *NondeterministicError
	var oe *OverBudgetError
	return errors.As(err, &be) || errors.As(err, &ne) || errors.As(err, &oe)
}

// firstDifference shows the first line where two texts differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  first:  %s\n  second: %s", i+1, x, y)
		}
	}
	return "(no line differs)"
}
