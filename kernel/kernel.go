// Package kernel runs notebook cells in a persistent interpreter process.
//
// A kernel is a process that reads one JSON object per line on its protocol
// input and writes one JSON object per line on its protocol output. The same
// Go client ([Client]) drives every kernel, whatever its language and wherever
// the process runs; where it runs is a [Transport] (a host subprocess here, a
// Docker container in package sandbox).
//
// Request:
//
//	{"id":7,"op":"exec","code":"x + 1","timeout_ms":30000,"max_output_bytes":1048576}
//
// Response:
//
//	{"id":7,"count":3,"status":"ok","stdout":"","stderr":"","value":"42",
//	 "error":null,"answer":null,"elapsed_ms":1,"dropped_bytes":0}
//
// Ops are "exec" (run a cell), "ping" (answer at once; used to wait for a
// kernel to be ready) and "shell" (run a shell command for condition A's bash
// tool; the Python kernel serves it, see [Sheller]).
//
// Rules every kernel keeps:
//   - User-code failure (an exception, a soft timeout) is a [Result] with
//     status "error" or "timeout", never a Go error. A Go error means the kernel
//     itself is broken: it died ([*DeadError]), missed its hard deadline
//     ([*DeadlineError]) or spoke garbage.
//   - A cell that runs past its timeout is interrupted inside the kernel and
//     the namespace survives. A cell that ignores the interrupt is killed by
//     the client at timeout + grace; [Kernel.Restart] then brings up a fresh
//     kernel with an empty namespace.
//   - Output that flows back is bounded per cell: the head and the tail are
//     kept and the number of dropped bytes is reported.
//   - ANSWER(value) is pre-bound in every kernel: it records the JSON form of
//     value and ends the cell with status "ok".
//
// Two kernels ship: Python (the embedded driver package kernel/pydriver, run
// as python3 -u -c DriverSource(), with IPython when importable and a
// standard-library equivalent otherwise) and Go (yaegi, served by the ctxcode
// binary itself). Neither is a security boundary; isolation comes from the
// sandbox.
package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Language names the language a kernel runs.
type Language string

// The languages ctxcode has kernels for.
const (
	Python Language = "python"
	Go     Language = "go"
)

// ParseLanguage checks a language name given by a user.
func ParseLanguage(s string) (Language, error) {
	switch Language(strings.ToLower(s)) {
	case Python:
		return Python, nil
	case Go:
		return Go, nil
	}
	return "", fmt.Errorf("unknown language %q: expected python or go", s)
}

// Status is the outcome of one cell.
type Status string

// Cell outcomes.
const (
	StatusOK      Status = "ok"      // ran to the end, or called ANSWER
	StatusError   Status = "error"   // raised an exception (also SystemExit, syntax errors)
	StatusTimeout Status = "timeout" // interrupted by the soft timeout; namespace kept
)

// Kernel runs cells in one persistent interpreter.
type Kernel interface {
	// Execute runs one cell. A failure of the code is reported in the Result;
	// the error is non-nil only when the kernel itself failed.
	Execute(ctx context.Context, code string, opts ExecOptions) (Result, error)
	// Restart replaces the interpreter with a fresh one (empty namespace).
	Restart(ctx context.Context) error
	// Close stops the interpreter. It is safe to call more than once.
	Close() error
	// Language reports the language cells are written in.
	Language() Language
}

// ExecOptions bound one cell. The zero value means the defaults below.
type ExecOptions struct {
	// Timeout is the soft timeout inside the kernel. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOutputBytes caps stdout, stderr and value text, each. Zero means
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
}

// Defaults for ExecOptions.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxOutputBytes = 1 << 20
)

func (o ExecOptions) withDefaults() ExecOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	o.Timeout = max(o.Timeout, time.Millisecond) // the protocol counts milliseconds
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return o
}

// Result is what one cell produced. Its JSON form is the protocol's response.
type Result struct {
	ID     int64  `json:"id"`
	Count  int    `json:"count"` // execution count, as in In [count]
	Status Status `json:"status"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// Value is the display text of the cell's final expression, IPython
	// style; empty when there was none or it was None.
	Value string `json:"value"`
	// Error describes the exception when Status is error or timeout.
	Error *ErrorInfo `json:"error"`
	// Answer is the JSON recorded by ANSWER(value), or nil.
	Answer json.RawMessage `json:"answer"`
	// AnswerLiteral says the ANSWER call that ran passed a literal typed
	// in the cell (ANSWER(42), ANSWER(["a", "b"])): nothing computed it.
	AnswerLiteral bool  `json:"answer_literal,omitempty"`
	ElapsedMS     int64 `json:"elapsed_ms"`
	// DroppedBytes counts output cut by MaxOutputBytes.
	DroppedBytes int64 `json:"dropped_bytes"`
	// ExitCode and Signal say how a shell op's command ended (see
	// shell.go): its exit status, or -1 and the name of the signal that
	// ended it ("SIGKILL" after a timeout). A cell has neither.
	ExitCode int    `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// Answered reports whether the cell called ANSWER.
func (r Result) Answered() bool {
	return len(r.Answer) > 0 && string(r.Answer) != "null"
}

// ErrorInfo is an exception raised by a cell.
type ErrorInfo struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Traceback is compact: the failing line of the cell and the exception
	// line, with no driver frames and no colour codes.
	Traceback string `json:"traceback"`
}
