package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LocalConfig describes a kernel process on this host.
type LocalConfig struct {
	// Argv is the command and its arguments. Required.
	Argv []string
	// DataDir, when set, is shown to the kernel as data/ in its working
	// directory: a read-only copy made at each start (files 0444, folders
	// 0555), so that nothing a cell does can change the user's files.
	DataDir string
	// FollowLinks brings in the files that links in DataDir lead to
	// outside it, too (see [WalkReadOnly]); by default they are left out.
	FollowLinks bool
	// LinkData shows DataDir by a symbolic link instead of a copy: nothing
	// is copied, but a cell can change or delete the user's files (when
	// ctxcode runs as root, only what user nobody may: it must be able to
	// read them, too). A link shows the folder as it is, so NewLocal
	// refuses it (a [*LinkDataError]) for a folder that holds anything a
	// copy leaves out.
	LinkData bool
	// MaxDataCopy bounds the bytes copied for DataDir. Zero means 1 GiB.
	// Larger data is refused with an error that names the alternatives.
	MaxDataCopy int64
	// Dir is the working directory. Empty means a private temporary folder,
	// removed when the process ends (given to user nobody when ctxcode runs
	// as root; a folder given here must then be usable by nobody already).
	Dir string
	// Env is added to the minimal environment the process gets (PATH, HOME,
	// LANG, TERM). Nothing else of the parent's environment is passed on, so
	// API keys and tokens never reach the kernel.
	Env []string
	// StderrTail is how many bytes of the process's stderr to keep for
	// error reports. Zero means 8 KiB.
	StderrTail int
	// CloseGrace is how long Close waits for the process to end after its
	// input closes, before killing it. Zero means 2s.
	CloseGrace time.Duration
	// NoNamespaces runs the kernel without its own user, PID and mount
	// namespaces even where they work (see [Local.Confinement]): the kernel
	// then sees the host's processes. As root it still runs as nobody.
	NoNamespaces bool
}

// Local starts kernels as host subprocesses in their own process group.
// No kernel can read the environment or memory of ctxcode, and, where
// [Local.Confinement] says so, of any process outside it: see confine_linux.go
// for how, and for what stays readable.
type Local struct {
	cfg LocalConfig
}

var _ Transport = (*Local)(nil)

// NewLocal checks cfg and returns a transport for it.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("local kernel: no command given")
	}
	if cfg.StderrTail <= 0 {
		cfg.StderrTail = 8 << 10
	}
	if cfg.CloseGrace <= 0 {
		cfg.CloseGrace = 2 * time.Second
	}
	if cfg.MaxDataCopy <= 0 {
		cfg.MaxDataCopy = 1 << 30
	}
	if cfg.DataDir != "" {
		abs, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("data folder %q: %w", cfg.DataDir, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("data folder: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("data folder %q is not a directory", cfg.DataDir)
		}
		cfg.DataDir = abs
		if cfg.LinkData {
			if err := linkable(abs, cfg.FollowLinks); err != nil {
				return nil, err
			}
		}
	}
	return &Local{cfg: cfg}, nil
}

// LinkDataError refuses LocalConfig.LinkData for a data folder that holds
// something a copy would leave out: through a link, a kernel would see it.
type LinkDataError struct {
	Dir  string
	Skip DataSkip // the first such entry
}

func (e *LinkDataError) Error() string {
	return fmt.Sprintf("--data-link shows the data folder %s as it is, but it holds %s (%s), which a kernel may not see: "+
		"drop --data-link (a read-only copy leaves it out), or take it out of the folder", e.Dir, e.Skip.Rel, e.Skip.Why)
}

// linkable is a *LinkDataError unless dir holds only what a walk of it
// takes.
func linkable(dir string, followLinks bool) error {
	var first *DataSkip
	err := WalkReadOnly(dir, WalkOptions{FollowLinks: followLinks, Skipped: func(s DataSkip) {
		if first == nil {
			first = &s
		}
	}}, func(DataEntry) error { return nil })
	if err != nil {
		return fmt.Errorf("data folder %s: %w", dir, err)
	}
	if first != nil {
		return &LinkDataError{Dir: dir, Skip: *first}
	}
	return nil
}

// FindPython resolves the Python interpreter to run: name if given (a path
// or a command on PATH), else python3. The error says what to install.
func FindPython(name string) (string, error) {
	if name == "" {
		name = "python3"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("python interpreter %q not found on PATH: install Python 3.9 or later "+
			"(for example: apt-get install python3 python3-ipython python3-pandas), "+
			"or name one with --python, or use --sandbox docker: %w", name, err)
	}
	return path, nil
}

// NewLocalPython is a transport for the Python driver run by python (see
// FindPython). With noIPython the driver uses its standard-library path
// even when IPython is importable.
func NewLocalPython(python string, noIPython bool, cfg LocalConfig) (*Local, error) {
	cfg.Argv = PythonArgv(python)
	if noIPython {
		cfg.Env = append(cfg.Env, "CTXCODE_NO_IPYTHON=1")
	}
	return NewLocal(cfg)
}

// Start launches the process. See [Transport].
func (l *Local) Start(ctx context.Context) (_ Conn, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, owned := l.cfg.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ctxcode-kernel-"); err != nil {
			return nil, fmt.Errorf("make kernel folder: %w", err)
		}
		owned = true
	}
	tmp := filepath.Join(dir, tmpName)
	cleanup := func() {
		if owned {
			_ = removeTree(dir)
		} else {
			_ = removeTree(tmp)
		}
	}
	if err := l.placeData(filepath.Join(dir, "data")); err != nil {
		cleanup()
		return nil, err
	}
	conf := l.Confinement()
	if err := privateTemp(tmp, conf); err != nil {
		cleanup()
		return nil, err
	}

	inR, inW, err := os.Pipe()
	if err != nil {
		cleanup()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		cleanup()
		closeAll(inR, inW)
		return nil, err
	}

	// The process outlives ctx; its own context ends it on Kill.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(pctx, l.cfg.Argv[0], l.cfg.Argv[1:]...)
	cmd.Dir = dir
	cmd.Env = l.env(dir, tmp)
	cmd.Stdin, cmd.Stdout = inR, outW
	tail := &TailBuffer{max: l.cfg.StderrTail}
	cmd.Stderr = tail
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = time.Second
	if err := l.confine(cmd, conf, dir, owned); err != nil {
		cancel()
		cleanup()
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		cleanup()
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("start %s: %w", filepath.Base(l.cfg.Argv[0]), err)
	}
	closeAll(inR, outW) // the child holds its own copies

	c := &localConn{cmd: cmd, in: inW, out: outR, tail: tail, cancel: cancel,
		done: make(chan struct{}), grace: l.cfg.CloseGrace}
	go func() { // the one goroutine that owns Wait
		werr := cmd.Wait()
		c.exit = exitOf(cmd, werr, tail)
		_ = killGroup(cmd) // children left in the group go too
		cancel()
		cleanup()
		close(c.done)
	}()
	return c, nil
}

// tmpName is the kernel's private temporary folder, in its own folder.
const tmpName = ".tmp"

// privateTemp makes the kernel's temporary folder at tmp, open to the
// kernel's user only: parallel kernels on one host then never see each
// other's files, as the host's /tmp would let them. It goes with the
// kernel's folder, or, in a folder the caller gave, when the process ends.
func privateTemp(tmp string, c Confinement) error {
	if err := os.RemoveAll(tmp); err != nil { // one left by an earlier kernel in a given folder
		return fmt.Errorf("make the kernel's temporary folder: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("make the kernel's temporary folder: %w", err)
	}
	if c.UID != os.Geteuid() {
		if err := os.Chown(tmp, c.UID, c.GID); err != nil {
			return fmt.Errorf("give the kernel's temporary folder to its user: %w", err)
		}
	}
	return nil
}

// env is the kernel's whole environment: dir is its folder, tmp its
// temporary folder (TMPDIR, and TMP and TEMP, which some programs read
// instead).
func (l *Local) env(dir, tmp string) []string {
	env := []string{
		"PATH=" + envOr("PATH", "/usr/local/bin:/usr/bin:/bin"),
		"HOME=" + dir,
		"TMPDIR=" + tmp,
		"TMP=" + tmp,
		"TEMP=" + tmp,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"IPYTHONDIR=" + filepath.Join(dir, ".ipython"),
		"MPLBACKEND=Agg",
	}
	return append(env, l.cfg.Env...)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func exitOf(cmd *exec.Cmd, werr error, tail *TailBuffer) Exit {
	e := Exit{Code: -1, StderrTail: tail.String(), OnHost: true, MemLimit: hostMemory()}
	if st := cmd.ProcessState; st != nil {
		e.Code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
	} else if werr != nil {
		e.StderrTail = strings.TrimSpace(e.StderrTail + "\n" + werr.Error())
	}
	return e
}

type localConn struct {
	cmd    *exec.Cmd
	in     *os.File
	out    *os.File
	tail   *TailBuffer
	cancel context.CancelFunc
	grace  time.Duration

	done chan struct{}
	exit Exit

	closeOnce sync.Once
}

var _ Conn = (*localConn)(nil)

func (c *localConn) Read(p []byte) (int, error)  { return c.out.Read(p) }
func (c *localConn) Write(p []byte) (int, error) { return c.in.Write(p) }
func (c *localConn) Done() <-chan struct{}       { return c.done }

func (c *localConn) Exit() Exit {
	<-c.done
	return c.exit
}

// Interrupt sends SIGINT to the kernel's process group, as a terminal's
// Ctrl-C would: the driver stops the running cell, and a command the cell
// started gets it too.
func (c *localConn) Interrupt() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	return syscall.Kill(-c.cmd.Process.Pid, syscall.SIGINT)
}

func (c *localConn) Kill() error {
	c.cancel() // cmd.Cancel kills the process group
	return nil
}

func (c *localConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.in.Close()
		select {
		case <-c.done:
		case <-time.After(c.grace):
			_ = c.Kill()
			<-c.done
		}
		_ = c.out.Close()
	})
	return nil
}

// NewTailBuffer returns a TailBuffer that keeps max bytes in all.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

// TailBuffer keeps the first and the last bytes written to it, max in all:
// a crash report's cause is at its start (Go's "fatal error: ..." before the
// goroutine dump), a Python traceback's at its end. String returns them.
type TailBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte
	dropped int64
	before  byte // the last byte dropped before tail
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	headMax := t.max / 4
	if room := headMax - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	tailMax := t.max - headMax
	t.tail = append(t.tail, p...)
	if over := len(t.tail) - tailMax; over > 0 {
		t.dropped += int64(over)
		t.before = t.tail[over-1]
		t.tail = append(t.tail[:0], t.tail[over:]...)
	}
	return n, nil
}

// String is what was kept, cut by the one head-and-tail rule (cut.go).
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped == 0 {
		return strings.ToValidUTF8(string(t.head)+string(t.tail), "\uFFFD")
	}
	head, tail := TrimCut(string(t.head), string(t.tail), t.before == '\n')
	dropped := t.dropped + int64(len(t.head)-len(head)+len(t.tail)-len(tail))
	return strings.ToValidUTF8(JoinCut(head, tail, dropped), "\uFFFD")
}

// placeData shows the data folder at dst: a read-only copy, or a link.
func (l *Local) placeData(dst string) error {
	src := l.cfg.DataDir
	if src == "" {
		return nil
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil // a caller-owned folder that already has its data
	}
	if l.cfg.LinkData {
		if err := os.Symlink(src, dst); err != nil {
			return fmt.Errorf("link data folder: %w", err)
		}
		return nil
	}
	if err := copyReadOnly(src, dst, WalkOptions{Limit: l.cfg.MaxDataCopy, FollowLinks: l.cfg.FollowLinks}); err != nil {
		return fmt.Errorf("copy data folder %s: %w", src, err)
	}
	return nil
}

// copyReadOnly copies the tree at src to dst as [WalkReadOnly] walks it
// with o, and then makes the copy read-only. It refuses trees over o.Limit
// bytes.
func copyReadOnly(src, dst string, o WalkOptions) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	dirs := []string{dst}
	err := WalkReadOnly(src, o, func(e DataEntry) error {
		target := filepath.Join(dst, filepath.FromSlash(e.Rel))
		if e.Dir {
			dirs = append(dirs, target)
			return os.Mkdir(target, 0o755)
		}
		return copyFile(e, target)
	})
	var big *DataTooLargeError
	if errors.As(err, &big) {
		return fmt.Errorf("%w: use a smaller folder, --data-link (no copy, but the kernel can then change "+
			"your files), or --sandbox docker", err)
	}
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the file of e to dst, at most the size the walk saw.
func copyFile(e DataEntry, dst string) (err error) {
	in, err := OpenData(e)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.Mode)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, io.LimitReader(in, e.Size))
	return err
}

// removeTree removes dir even where read-only folders are inside it.
func removeTree(dir string) error {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
