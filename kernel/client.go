package kernel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Transport starts kernel processes; the client speaks the protocol to them.
type Transport interface {
	// Start launches one kernel process. The process outlives ctx: it ends
	// with Conn.Close or Conn.Kill.
	Start(ctx context.Context) (Conn, error)
}

// Conn is one running kernel process: its protocol input (Write), its
// protocol output (Read), and its life.
type Conn interface {
	io.ReadWriter
	// Done is closed once the process has exited and Exit is final.
	Done() <-chan struct{}
	// Exit says how the process ended. Valid after Done is closed.
	Exit() Exit
	// Kill ends the process (and everything it started) at once.
	Kill() error
	// Close ends the process gently: closes its input, waits a little,
	// then kills it. Safe to call more than once.
	Close() error
}

// Interrupter is a Conn that can deliver an interrupt (SIGINT) to its
// kernel process: the local transport and Docker's.
type Interrupter interface {
	Interrupt() error
}

// Exit says how a kernel process ended.
type Exit struct {
	Code      int            // exit status; -1 when unknown
	Signal    syscall.Signal // the signal that killed it, or 0
	Lost      string         // why the process's end could not be observed, if so
	OOMKilled bool           // the kernel ran out of memory (containers report this)
	// MemLimit is the memory the process could have, in bytes, when
	// known: a container's limit, or, on this host (OnHost), the host's.
	MemLimit int64
	// OnHost says the process ran on this host, with no memory limit of
	// its own: when the host runs out of memory, its out-of-memory killer
	// ends a process with SIGKILL, and nothing else tells.
	OnHost     bool
	StderrTail string // the last bytes the process wrote to its stderr
}

// String says how the process ended, e.g. "died: exited with status 3" or
// "killed: out of memory, at its limit of 2 GiB (...--memory...)", then
// the tail of its stderr. An out-of-memory death names the limit and the
// flag that sets it (--memory, which every command that starts kernels
// takes).
func (e Exit) String() string {
	var b strings.Builder
	switch {
	case e.OOMKilled && e.MemLimit > 0:
		fmt.Fprintf(&b, "killed: out of memory, at its limit of %s (give it more with --memory, e.g. --memory %s)",
			formatBytes(e.MemLimit), sizeFlag(2*e.MemLimit))
	case e.OOMKilled:
		b.WriteString("killed: out of memory (give it more with --memory)")
	case e.Lost != "":
		fmt.Fprintf(&b, "lost: %s", e.Lost)
	case e.Signal == syscall.SIGKILL && e.OnHost:
		fmt.Fprintf(&b, "died: killed by SIGKILL (signal 9): unless a cell sent it, the host ran out of memory and its "+
			"out-of-memory killer ended the kernel, which on this host may use all of its memory (%s) and no more; "+
			"--sandbox docker gives it a limit of its own, --memory", formatBytes(e.MemLimit))
	case e.Signal != 0:
		fmt.Fprintf(&b, "died: killed by %s (signal %d: %s)", unix.SignalName(e.Signal), int(e.Signal), e.Signal)
	default:
		fmt.Fprintf(&b, "died: exited with status %d", e.Code)
	}
	if tail := strings.TrimSpace(e.StderrTail); tail != "" {
		fmt.Fprintf(&b, "; its stderr ended with:\n%s", tail)
	}
	return b.String()
}

func formatBytes(n int64) string {
	const gib, mib = 1 << 30, 1 << 20
	switch {
	case n <= 0:
		return "an unknown amount"
	case n%gib == 0:
		return fmt.Sprintf("%d GiB", n/gib)
	case n%mib == 0:
		return fmt.Sprintf("%d MiB", n/mib)
	case n >= gib:
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	}
	return fmt.Sprintf("%d bytes", n)
}

// sizeFlag is n bytes as a --memory value: "4g", "128m".
func sizeFlag(n int64) string {
	const gib, mib = 1 << 30, 1 << 20
	if n%gib == 0 {
		return fmt.Sprintf("%dg", n/gib)
	}
	return fmt.Sprintf("%dm", (n+mib-1)/mib)
}

// DeadError reports a kernel process that ended on its own (exit(),
// os._exit, a crash, the OOM killer) or could not be read any more.
type DeadError struct {
	Lang Language
	Exit Exit
}

func (e *DeadError) Error() string {
	return fmt.Sprintf("%s kernel %s", e.Lang, e.Exit)
}

// DeadlineError reports a cell that did not answer by its hard deadline
// (timeout + grace); the client killed the kernel.
type DeadlineError struct {
	Lang    Language
	Timeout time.Duration
	Grace   time.Duration
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("%s kernel did not answer within %s (timeout %s + grace %s): the cell ignored the interrupt "+
		"or is stuck in native code, so the kernel was killed and its variables are lost",
		e.Lang, e.Timeout+e.Grace, e.Timeout, e.Grace)
}

// Death names how a kernel process died while it ran a cell, for a log:
// "oom" (out of memory), "deadline" (killed at the hard deadline, a
// [*DeadlineError]), "signal SIGKILL" (killed by a signal), "exit 3" (it
// exited), from the [*DeadError] or [*DeadlineError] in err's chain. It is
// "" for any other error, and for a process whose end was lost (the
// sandbox lost track of it), or that had died before the call
// ([ErrNotRunning]): those say nothing of what the cell did.
func Death(err error) string {
	if errors.Is(err, ErrNotRunning) {
		return ""
	}
	var dl *DeadlineError
	if errors.As(err, &dl) {
		return "deadline"
	}
	var de *DeadError
	if !errors.As(err, &de) {
		return ""
	}
	switch e := de.Exit; {
	case e.OOMKilled:
		return "oom"
	case e.Lost != "":
		return ""
	case e.Signal != 0:
		return "signal " + unix.SignalName(e.Signal)
	case e.Code >= 0:
		return fmt.Sprintf("exit %d", e.Code)
	}
	return ""
}

// ErrNotRunning is returned by calls on a client whose kernel died before
// them, wrapped with how it died.
var ErrNotRunning = errors.New("kernel is not running")

// ErrClosed is returned by calls on a closed client.
var ErrClosed = errors.New("kernel is closed")

// ClientOptions tune a Client. The zero value means the defaults.
type ClientOptions struct {
	// Grace is added to a cell's soft timeout to form its hard deadline.
	// Zero means 2s.
	Grace time.Duration
	// StartTimeout bounds start-up until the kernel answers a ping. Zero
	// means 60s.
	StartTimeout time.Duration
	// MaxLineBytes bounds one response line. Zero means 64 MiB; a cell whose
	// MaxOutputBytes needs more (JSON escaping can grow text sixfold) raises
	// the bound for its response.
	MaxLineBytes int
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.Grace <= 0 {
		o.Grace = 2 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = 64 << 20
	}
	return o
}

// Client drives one kernel process over a Transport with the JSON-lines
// protocol. It is safe for concurrent use; cells run one at a time.
type Client struct {
	lang      Language
	transport Transport
	opts      ClientOptions

	mu     sync.Mutex
	proc   *proc
	dead   error // why the current process is unusable, or nil
	closed bool
	nextID int64
	info   string

	closing   chan struct{} // closed by Close: a running cell gives up at once
	closeOnce sync.Once

	// running is the process of the cell in flight, for Interrupt (which
	// does not take mu, held by the cell); nil between cells.
	running atomic.Pointer[proc]
	// interrupts counts the interrupts sent to the current process.
	interrupts atomic.Int64
}

var (
	_ Kernel  = (*Client)(nil)
	_ Sheller = (*Client)(nil)
)

// proc is one started process and the goroutine reading its responses.
type proc struct {
	conn    Conn
	results chan lineResult // closed when the output ends
	stop    chan struct{}   // closed to release the reader
	maxLine atomic.Int64    // the longest response line accepted now
}

type lineResult struct {
	res Result
	err error
}

// Start launches a kernel over t and waits until it answers a ping.
func Start(ctx context.Context, lang Language, t Transport, opts ClientOptions) (*Client, error) {
	c := &Client{lang: lang, transport: t, opts: opts.withDefaults(), closing: make(chan struct{})}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Language reports the language of the kernel's cells.
func (c *Client) Language() Language { return c.lang }

// Info is what the kernel said of itself at start-up, e.g.
// "python 3.11.7 ipython 8.12.3".
func (c *Client) Info() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

func (c *Client) start(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	conn, err := c.transport.Start(ctx)
	if err != nil {
		c.dead = fmt.Errorf("start %s kernel: %w", c.lang, err)
		return c.dead
	}
	p := &proc{conn: conn, results: make(chan lineResult), stop: make(chan struct{})}
	p.maxLine.Store(int64(c.opts.MaxLineBytes))
	go p.read()
	c.proc, c.dead = p, nil
	c.interrupts.Store(0) // a new process has seen none
	defer func() {
		if err != nil {
			_ = c.shutdown(true)
			c.dead = err
		}
	}()
	res, err := c.roundTrip(ctx, Request{Op: OpPing}, 0)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("start %s kernel: no answer within %s: %w", c.lang, c.opts.StartTimeout, err)
		}
		return fmt.Errorf("start %s kernel: %w", c.lang, err)
	}
	c.info = res.Value
	return nil
}

// read decodes response lines until the output ends. A line longer than
// maxLine is not kept in memory: it is skipped and reported as an error.
func (p *proc) read() {
	defer close(p.results)
	r := bufio.NewReaderSize(p.conn, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if limit := p.maxLine.Load(); !tooLong && int64(len(line)+len(chunk)) > limit {
			tooLong, line = true, line[:0]
		}
		if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return // EOF or a read error: the process is gone
		}
		var lr lineResult
		if tooLong {
			lr.err = fmt.Errorf("protocol line longer than %d bytes", p.maxLine.Load())
		} else if e := json.Unmarshal(bytes.TrimSpace(line), &lr.res); e != nil {
			lr.err = fmt.Errorf("bad protocol line %.200q: %w", line, e)
		}
		line, tooLong = line[:0], false
		if !p.send(lr) {
			return
		}
	}
}

func (p *proc) send(lr lineResult) bool {
	select {
	case p.results <- lr:
		return true
	case <-p.stop:
		return false
	}
}

// Execute runs one cell. See [Kernel.Execute].
func (c *Client) Execute(ctx context.Context, code string, opts ExecOptions) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Result{}, ErrClosed
	}
	if c.dead != nil {
		return Result{}, fmt.Errorf("%s %w (restart it): %w", c.lang, ErrNotRunning, c.dead)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err // nothing sent, the kernel stays as it is
	}
	opts = opts.withDefaults()
	// JSON escaping can grow output sixfold, in three fields.
	c.proc.maxLine.Store(max(int64(c.opts.MaxLineBytes), 18*int64(opts.MaxOutputBytes)+1<<20))
	// Interrupts counted before running is set: one sent after it is for
	// this cell, and the driver counts it beyond the request's figure.
	req := Request{Op: OpExec, Code: code, TimeoutMS: opts.Timeout.Milliseconds(), MaxOutputBytes: opts.MaxOutputBytes,
		Interrupts: c.interrupts.Load()}
	hard := opts.Timeout + c.opts.Grace
	c.running.Store(c.proc)
	res, err := c.roundTrip(ctx, req, hard)
	c.running.Store(nil)
	var dl *DeadlineError
	if errors.As(err, &dl) {
		dl.Timeout, dl.Grace = opts.Timeout, c.opts.Grace
	}
	return res, err
}

// Shell runs one command with the kernel's shell op. See [Sheller] and
// shell.go. What the command does (a non-zero status, a timeout) is in the
// ShellResult; the error is non-nil when the kernel could not run it: one
// that does not serve the op (the Go kernel) gives an error that
// errors.Is ErrShellUnsupported and stays as it was; one that cannot start
// /bin/sh says why and stays too; one that does not answer by the timeout +
// grace is killed, a [*DeadlineError], as in Execute.
func (c *Client) Shell(ctx context.Context, command string, opts ShellOptions) (ShellResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ShellResult{}, ErrClosed
	}
	if c.dead != nil {
		return ShellResult{}, fmt.Errorf("%s %w (restart it): %w", c.lang, ErrNotRunning, c.dead)
	}
	if err := ctx.Err(); err != nil {
		return ShellResult{}, err
	}
	eo := ExecOptions{Timeout: opts.Timeout, MaxOutputBytes: opts.MaxOutputBytes}.withDefaults()
	// JSON escaping can grow output sixfold, in one field.
	c.proc.maxLine.Store(max(int64(c.opts.MaxLineBytes), 6*int64(eo.MaxOutputBytes)+1<<20))
	req := Request{Op: OpShell, Command: command, TimeoutMS: eo.Timeout.Milliseconds(), MaxOutputBytes: eo.MaxOutputBytes}
	res, err := c.roundTrip(ctx, req, eo.Timeout+c.opts.Grace)
	var dl *DeadlineError
	if errors.As(err, &dl) {
		dl.Timeout, dl.Grace = eo.Timeout, c.opts.Grace
	}
	if err != nil {
		return ShellResult{}, err
	}
	if res.Status == StatusError && res.Error != nil {
		if res.Error.Name == "ProtocolError" {
			return ShellResult{}, fmt.Errorf("%s %w; condition A's bash tool runs in the Python kernel", c.lang, ErrShellUnsupported)
		}
		return ShellResult{}, fmt.Errorf("%s kernel could not run the command: %s: %s", c.lang, res.Error.Name, res.Error.Value)
	}
	return ShellResult{
		Output:       res.Stdout,
		DroppedBytes: res.DroppedBytes,
		ExitCode:     res.ExitCode,
		Signal:       res.Signal,
		TimedOut:     res.Status == StatusTimeout,
		Elapsed:      time.Duration(res.ElapsedMS) * time.Millisecond,
	}, nil
}

// roundTrip sends req and waits for its response, the process's end, the
// hard deadline (if non-zero) or ctx. Any failure leaves c.dead set.
func (c *Client) roundTrip(ctx context.Context, req Request, hard time.Duration) (Result, error) {
	p := c.proc
	c.nextID++
	req.ID = c.nextID
	line, err := json.Marshal(req)
	if err != nil {
		return Result{}, fmt.Errorf("encode request: %w", err)
	}
	if _, err := p.conn.Write(append(line, '\n')); err != nil {
		return Result{}, c.fail(c.deadError(p))
	}
	var deadline <-chan time.Time
	if hard > 0 {
		t := time.NewTimer(hard)
		defer t.Stop()
		deadline = t.C
	}
	for {
		select {
		case lr, ok := <-p.results:
			if !ok {
				return Result{}, c.fail(c.deadError(p))
			}
			if lr.err != nil {
				c.shutdown(true)
				return Result{}, c.fail(fmt.Errorf("%s kernel broke the protocol: %w", c.lang, lr.err))
			}
			if lr.res.ID != req.ID {
				continue // a late answer to an earlier request
			}
			return lr.res, nil
		case <-p.conn.Done():
			// Let the reader hand over what the process wrote before it ended.
			select {
			case lr, ok := <-p.results:
				if ok && lr.err == nil && lr.res.ID == req.ID {
					return lr.res, nil
				}
			case <-time.After(200 * time.Millisecond):
			}
			return Result{}, c.fail(c.deadError(p))
		case <-deadline:
			c.shutdown(true)
			return Result{}, c.fail(&DeadlineError{Lang: c.lang})
		case <-ctx.Done():
			c.shutdown(true)
			return Result{}, c.fail(fmt.Errorf("%s kernel killed: %w", c.lang, ctx.Err()))
		case <-c.closing:
			c.shutdown(true)
			return Result{}, ErrClosed
		}
	}
}

func (c *Client) fail(err error) error {
	c.dead = err
	return err
}

// deadError waits (briefly) for the process to be reaped and describes it.
func (c *Client) deadError(p *proc) error {
	select {
	case <-p.conn.Done():
	case <-time.After(5 * time.Second):
		_ = p.conn.Kill()
		select {
		case <-p.conn.Done():
		case <-time.After(10 * time.Second):
			return &DeadError{Lang: c.lang, Exit: Exit{Code: -1, Lost: "its output ended but its process did not, even after a kill"}}
		}
	}
	return &DeadError{Lang: c.lang, Exit: p.conn.Exit()}
}

// shutdown ends the current process: at once (kill) or gently.
func (c *Client) shutdown(kill bool) error {
	p := c.proc
	if p == nil {
		return nil
	}
	c.proc = nil
	if c.dead == nil {
		c.dead = ErrClosed
	}
	var err error
	if kill {
		err = p.conn.Kill()
		_ = p.conn.Close()
	} else {
		err = p.conn.Close()
	}
	close(p.stop)
	return err
}

// ErrNoInterrupt is returned by Interrupt when the kernel or its transport
// cannot take an interrupt (the Go kernel; a transport without one).
var ErrNoInterrupt = errors.New("this kernel cannot be interrupted")

// Interrupt asks the kernel to stop the cell it is running, as Ctrl-C in
// a notebook does: the Python driver raises CellInterrupted in the cell's
// code, the cell ends with an error result, and the namespace is kept. It
// returns at once, before the cell has ended (Execute returns then), and
// does nothing between cells. A cell stuck in native code does not stop;
// its caller may then cancel Execute's context, which kills the kernel. It
// is safe to call from another goroutine while Execute runs.
func (c *Client) Interrupt() error {
	if c.lang != Python {
		return fmt.Errorf("%w: the %s kernel has no interrupt; cancel the cell to stop it (the kernel is restarted)", ErrNoInterrupt, c.lang)
	}
	p := c.running.Load()
	if p == nil {
		return nil
	}
	in, ok := p.conn.(Interrupter)
	if !ok {
		return fmt.Errorf("%w: its transport cannot send one", ErrNoInterrupt)
	}
	c.interrupts.Add(1)
	if err := in.Interrupt(); err != nil {
		c.interrupts.Add(-1) // not sent: the driver will not count it
		return err
	}
	return nil
}

// Ping checks that the kernel answers, within timeout. A kernel that does
// not is unusable afterwards (restart it).
func (c *Client) Ping(ctx context.Context, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.dead != nil {
		return fmt.Errorf("%s kernel is not running (restart it): %w", c.lang, c.dead)
	}
	_, err := c.roundTrip(ctx, Request{Op: OpPing}, timeout)
	return err
}

// Restart replaces the kernel process with a fresh one.
func (c *Client) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	_ = c.shutdown(true)
	return c.start(ctx)
}

// Close ends the kernel process. It is safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { close(c.closing) }) // a running cell gives up its lock
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.shutdown(false)
}
