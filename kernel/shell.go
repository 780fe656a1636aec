package kernel

import (
	"context"
	"errors"
	"time"
)

// The "shell" op runs one command for condition A's bash tool:
//
//	{"id":9,"op":"shell","command":"wc -l data/tasks.jsonl","timeout_ms":30000,"max_output_bytes":1048576}
//
// The kernel runs it with /bin/sh -c in the session folder (data/ is
// there, read-only), in a process group of its own, with no stdin and the
// kernel's own minimal environment; stdout and stderr come back as one
// stream, in the order they were written, its head and tail kept past
// max_output_bytes with the count of what was dropped. A command still
// running at timeout_ms is killed with its whole group and says so. The
// interpreter's namespace is untouched. The response is a [Result] whose
// Stdout is the stream, ExitCode the command's status, and Status "ok",
// "error" (a non-zero status) or "timeout".

// ShellOptions bound one shell command. The zero value means the defaults
// of [ExecOptions] (DefaultTimeout, DefaultMaxOutputBytes).
type ShellOptions struct {
	Timeout        time.Duration
	MaxOutputBytes int
}

// ShellResult is what one shell command did.
type ShellResult struct {
	// Output is stdout and stderr interleaved as written, cut in the
	// middle past MaxOutputBytes (DroppedBytes says how much went).
	Output       string
	DroppedBytes int64
	// ExitCode is the command's exit status; -1 when a signal ended it
	// (Signal names it), as after a timeout.
	ExitCode int
	Signal   string
	TimedOut bool
	Elapsed  time.Duration
}

// ErrShellUnsupported is what Shell's error wraps when the kernel does not
// serve the shell op (the Go kernel): the kernel is left running.
var ErrShellUnsupported = errors.New("kernel does not serve the shell op")

// Sheller is a kernel that serves the shell op (the Python driver does;
// the Go kernel does not). Callers find it by type assertion.
type Sheller interface {
	Shell(ctx context.Context, command string, opts ShellOptions) (ShellResult, error)
}
