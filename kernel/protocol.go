package kernel

// Protocol ops.
const (
	OpExec  = "exec"
	OpPing  = "ping"
	OpShell = "shell"
)

// Request is one line sent to a kernel.
type Request struct {
	ID             int64  `json:"id"`
	Op             string `json:"op"`
	Code           string `json:"code,omitempty"`
	Command        string `json:"command,omitempty"` // the shell op's command line
	TimeoutMS      int64  `json:"timeout_ms,omitempty"`
	MaxOutputBytes int    `json:"max_output_bytes,omitempty"`
	// Interrupts is, for exec, how many interrupts (SIGINT) the client had
	// sent this process before the request: one the driver counts beyond
	// it is this cell's, one within it a late one for an earlier cell.
	Interrupts int64 `json:"interrupts,omitempty"`
}

// A response line is a [Result]. A kernel answers "ping" with a Result whose
// Status is "ok" and whose Value names the kernel (for example
// "python 3.11.7 ipython 8.12.3"), so the client knows the kernel is ready.
