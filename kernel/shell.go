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
// there, read-only), in a session and process group of its own, with stdin
// /dev/null, no fd of the protocol, and the minimal environment the kernel
// started with (the folder and the environment are those of the kernel's
// start: a cell's os.chdir or os.environ does not move them). stdout and
// stderr come back as one stream, in the order they were written (one
// pipe), its head and tail kept past max_output_bytes by the one cut rule
// (cut.go) with the count of what was dropped. The call ends when the
// command ends, or at timeout_ms; then, or a short grace after the
// command's end when a child it left in the background still holds the
// pipe, the whole group is killed with SIGKILL (a child that ignores
// SIGTERM dies too). A process that leaves the group (setsid) is not
// followed: the sandbox bounds it. The interpreter's namespace and
// execution count are untouched.
//
// The response is a [Result] whose Stdout is the stream, ExitCode the
// command's status (or -1 and Signal the signal's name, as "SIGKILL"),
// DroppedBytes and ElapsedMS as for a cell, and Status "ok" (status 0),
// "error" (a non-zero status or a signal, Error nil) or "timeout" (Error
// says so). A kernel that does not serve the op answers Status "error"
// with an Error named "ProtocolError"; one that cannot start /bin/sh, an
// Error named "ShellError".

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
