package sandbox

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/ctxcode/ctxcode/kernel"
)

// Paths inside the container.
const (
	WorkDir  = "/session"
	DataPath = "/session/data"
	// binPath is where the ctxcode binary is mounted for the Go kernel.
	binPath = "/opt/ctxcode/ctxcode"
)

// Docker starts kernels in containers. It is a kernel.Transport.
type Docker struct {
	cli  *client.Client
	cfg  Config
	argv []string
	bind []string // extra read-only binds host:container
}

var _ kernel.Transport = (*Docker)(nil)

// NewPython is a transport for the Python kernel in containers made by cfg.
func NewPython(cli *client.Client, cfg Config) (*Docker, error) {
	return newDocker(cli, cfg, kernel.PythonArgv("python3"), nil)
}

// NewGo is a transport for the Go kernel: the ctxcode binary at exe is
// mounted read-only into the container and serves the kernel there. It
// needs a local daemon and an image whose C library can run the binary
// (the kernel image can).
func NewGo(cli *client.Client, cfg Config, exe string) (*Docker, error) {
	if Remote(cli) {
		return nil, errors.New("the Go kernel runs the ctxcode binary in the container, which needs a local Docker daemon; use --sandbox local for Go with a remote daemon")
	}
	return newDocker(cli, cfg, []string{binPath, "kernel", "serve", "--lang", "go"}, []string{exe + ":" + binPath})
}

func newDocker(cli *client.Client, cfg Config, argv, bind []string) (*Docker, error) {
	cfg, err := cfg.filled()
	if err != nil {
		return nil, err
	}
	// A remote daemon cannot see the folder; the kernel's user (nobody)
	// cannot read private files in a bind mount; a bind mount shows the
	// folder as it is, links, pipes and devices too. All get a copy.
	if cfg.DataDir != "" && !cfg.CopyData && (Remote(cli) || !bindable(cfg.DataDir, cfg.FollowLinks)) {
		cfg.CopyData = true
	}
	return &Docker{cli: cli, cfg: cfg, argv: argv, bind: bind}, nil
}

// Config is the configuration containers are made with.
func (d *Docker) Config() Config { return d.cfg }

// filled is cfg with DefaultConfig's values where it has none, and its
// data folder made absolute; an environment entry that is not NAME=value,
// or a data folder that is not one, is an error.
func (cfg Config) filled() (Config, error) {
	def := DefaultConfig()
	if cfg.Image == "" {
		cfg.Image = def.Image
	}
	if cfg.Network == "" {
		cfg.Network = def.Network
	}
	if cfg.User == "" {
		cfg.User = def.User
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = def.StopGrace
	}
	if cfg.StderrTail <= 0 {
		cfg.StderrTail = def.StderrTail
	}
	for _, kv := range cfg.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" || strings.ContainsAny(name, " \t\n") {
			return cfg, fmt.Errorf("kernel environment entry %q: want NAME=value", kv)
		}
	}
	if cfg.DataDir != "" {
		abs, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return cfg, fmt.Errorf("data folder %q: %w", cfg.DataDir, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return cfg, fmt.Errorf("data folder %q is not a folder", cfg.DataDir)
		}
		cfg.DataDir = abs
	}
	return cfg, nil
}

// bindable reports whether a bind mount of dir shows the kernel what a
// copy would: the folder holds only real folders and regular files (no
// link, which a walk would judge and a mount shows as it is, and nothing a
// walk leaves out), each readable by any user, as the kernel's user needs.
func bindable(dir string, followLinks bool) bool {
	ok := true
	readable := func(path string, dir bool) bool {
		info, err := os.Stat(path)
		need := os.FileMode(0o004)
		if dir {
			need = 0o005
		}
		return err == nil && info.Mode().Perm()&need == need
	}
	stop := errors.New("not bindable")
	err := kernel.WalkReadOnly(dir, kernel.WalkOptions{FollowLinks: followLinks, Skipped: func(kernel.DataSkip) { ok = false }},
		func(e kernel.DataEntry) error {
			if !ok || e.Link != "" || !readable(e.Path, e.Dir) {
				ok = false
				return stop
			}
			return nil
		})
	return err == nil && ok && readable(dir, true)
}

// NewSessionID returns a fresh random session id.
func NewSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// labels are put on every container and volume made for a session: the
// session, the time, and this process as their owner (see owner), so that
// Prune can tell whether the owner is gone.
func (d *Docker) labels(session string) map[string]string { return sessionLabels(session) }

// sessionLabels are the labels of what is made for session, in every
// backend: the owner's (self), the session's, the time.
func sessionLabels(session string) map[string]string {
	l := self().labels()
	l[LabelSession] = session
	l[LabelCreated] = strconv.FormatInt(time.Now().Unix(), 10)
	return l
}

// Start creates, attaches and starts one kernel container. On any failure
// it removes what it made.
func (d *Docker) Start(ctx context.Context) (_ kernel.Conn, err error) {
	var volumeName string
	var id string
	session := d.cfg.Session
	if session == "" {
		session = NewSessionID()
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, teardown(d.cli, id, volumeName))
		}
	}()
	if ok, ierr := ImageExists(ctx, d.cli, d.cfg.Image); ierr != nil {
		return nil, ierr
	} else if !ok {
		return nil, &ImageError{Image: d.cfg.Image}
	}

	var mounts []mount.Mount
	if d.cfg.DataDir != "" {
		if d.cfg.CopyData {
			if volumeName, err = d.copyDataToVolume(ctx, session); err != nil {
				return nil, err
			}
			mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: volumeName, Target: DataPath, ReadOnly: true})
		} else {
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: d.cfg.DataDir, Target: DataPath, ReadOnly: true})
		}
	}
	for _, b := range d.bind {
		src, dst, _ := strings.Cut(b, ":")
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: true})
	}

	cctx, ccancel := detached(ctx)
	created, err := d.cli.ContainerCreate(cctx, d.containerConfig(session), d.hostConfig(mounts), nil, nil, "")
	ccancel()
	if err == nil {
		id = created.ID
		err = ctx.Err() // the deferred teardown removes what a cancelled start made
	}
	if err != nil {
		if isNotFound(err) {
			return nil, &ImageError{Image: d.cfg.Image}
		}
		return nil, fmt.Errorf("create kernel container: %w", err)
	}
	id = created.ID

	hijack, err := d.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("attach to kernel container: %w", err)
	}
	c := newConn(d, id, volumeName, hijack)
	// Not cancelled with ctx, as the create: a start cut short leaves a
	// container attached but never started, whose attach over a shared
	// ssh connection does not end even once it is removed, so that
	// closing it hung (a pool closed while one of its kernels started).
	// The caller sees ctx's end at its first request (kernel.Start's
	// ping), which kills the kernel.
	sctx, scancel := detached(ctx)
	err = d.cli.ContainerStart(sctx, id, container.StartOptions{})
	scancel()
	if err != nil {
		// Remove the container before closing the attach: over ssh with a
		// shared connection (ControlMaster) the master holds the attach's
		// pipes until its session ends, and closing it waits for them.
		terr := teardown(d.cli, id, volumeName)
		id, volumeName = "", ""
		hijack.Close()
		return nil, errors.Join(fmt.Errorf("start kernel container: %w", err), terr)
	}
	go c.wait()
	return c, nil
}

func (d *Docker) containerConfig(session string) *container.Config {
	return &container.Config{
		Image:           d.cfg.Image,
		Cmd:             d.argv,
		Entrypoint:      []string{},
		User:            d.cfg.User,
		WorkingDir:      WorkDir,
		Labels:          d.labels(session),
		OpenStdin:       true,
		StdinOnce:       true,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		Env:             kernelEnv(d.cfg),
		NetworkDisabled: d.cfg.Network == "none",
	}
}

// kernelEnv is a kernel's whole environment, the same in every backend:
// set here, so nothing of the host's environment can ever reach it.
func kernelEnv(cfg Config) []string {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp",
		"LANG=C.UTF-8",
		"IPYTHONDIR=/tmp/.ipython",
		"MPLCONFIGDIR=/tmp/.matplotlib",
		"MPLBACKEND=Agg",
		"TERM=dumb",
	}
	env = append(env, cfg.Env...)
	if cfg.NoIPython {
		env = append(env, "CTXCODE_NO_IPYTHON=1")
	}
	return env
}

func (d *Docker) hostConfig(mounts []mount.Mount) *container.HostConfig {
	init := true
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(d.cfg.Network),
		ReadonlyRootfs: !d.cfg.WritableRoot,
		Init:           &init,
		Mounts:         mounts,
		Tmpfs:          map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", d.cfg.TmpSize)},
	}
	if !d.cfg.KeepCaps {
		hc.CapDrop = []string{"ALL"}
	}
	if !d.cfg.NewPrivileges {
		hc.SecurityOpt = []string{"no-new-privileges"}
	}
	if d.cfg.TmpSize <= 0 {
		hc.Tmpfs = map[string]string{"/tmp": "rw,nosuid,nodev,mode=1777"}
	}
	if d.cfg.Memory > 0 {
		hc.Resources.Memory = d.cfg.Memory
		hc.Resources.MemorySwap = d.cfg.Memory // no swap beyond the memory limit
		if d.cfg.Swap != 0 {
			hc.Resources.MemorySwap = d.cfg.Swap
		}
	}
	if d.cfg.CPUs > 0 {
		hc.Resources.NanoCPUs = int64(d.cfg.CPUs * 1e9)
	}
	if d.cfg.Pids > 0 {
		pids := d.cfg.Pids
		hc.Resources.PidsLimit = &pids
	}
	return hc
}

// copyDataToVolume fills a fresh volume with the data folder, for daemons
// that cannot see the host's folders.
func (d *Docker) copyDataToVolume(ctx context.Context, session string) (name string, err error) {
	vctx, vcancel := detached(ctx)
	vol, err := d.cli.VolumeCreate(vctx, volume.CreateOptions{Labels: d.labels(session)})
	vcancel()
	if err != nil {
		return "", fmt.Errorf("create data volume: %w", err)
	}
	name = vol.Name
	if err := ctx.Err(); err != nil {
		return name, err
	}
	hctx, hcancel := detached(ctx)
	defer hcancel()
	helper, err := d.cli.ContainerCreate(hctx,
		&container.Config{Image: d.cfg.Image, Cmd: []string{"true"}, Entrypoint: []string{}, Labels: d.labels(session), NetworkDisabled: true},
		&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: "/data"}}},
		nil, nil, "")
	if err != nil {
		return name, fmt.Errorf("create data copier: %w", err)
	}
	defer func() { err = errors.Join(err, teardown(d.cli, helper.ID, "")) }()
	if err := ctx.Err(); err != nil {
		return name, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarReadOnly(pw, d.cfg.DataDir, d.cfg.FollowLinks)) }()
	if err := d.cli.CopyToContainer(ctx, helper.ID, "/data", pr, container.CopyToContainerOptions{}); err != nil {
		pr.CloseWithError(err)
		return name, fmt.Errorf("copy data into the volume: %w", err)
	}
	return name, nil
}

// tarReadOnly writes the tree at dir, as kernel.WalkReadOnly walks it (the
// same entries as a local kernel's copy), as a tar of read-only, root-owned
// entries.
func tarReadOnly(w io.Writer, dir string, followLinks bool) error {
	tw := tar.NewWriter(w)
	err := kernel.WalkReadOnly(dir, kernel.WalkOptions{FollowLinks: followLinks}, func(e kernel.DataEntry) error {
		hdr := &tar.Header{Name: e.Rel, ModTime: e.ModTime, Mode: int64(e.Mode), Format: tar.FormatPAX}
		if e.Dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			return tw.WriteHeader(hdr)
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, e.Size
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := kernel.OpenData(e)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, e.Size)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// conn is one running kernel container.
type conn struct {
	d       *Docker
	id      string
	volume  string
	hijack  types.HijackedResponse
	stdout  *io.PipeReader
	tail    *kernel.TailBuffer
	demuxed chan struct{} // closed when the attach stream has ended

	done chan struct{}
	exit kernel.Exit

	killed    chan struct{}
	killOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

var _ kernel.Conn = (*conn)(nil)

func newConn(d *Docker, id, volume string, hijack types.HijackedResponse) *conn {
	pr, pw := io.Pipe()
	c := &conn{d: d, id: id, volume: volume, hijack: hijack, stdout: pr,
		tail:    kernel.NewTailBuffer(d.cfg.StderrTail),
		demuxed: make(chan struct{}), done: make(chan struct{}), killed: make(chan struct{})}
	go func() {
		_, err := stdcopy.StdCopy(pw, c.tail, hijack.Reader)
		pw.CloseWithError(err)
		close(c.demuxed)
	}()
	return c
}

// wait owns the container's end: it waits for the exit, inspects it (OOM
// and exit code are only there before removal) and closes done.
func (c *conn) wait() {
	ctx := context.Background()
	waitC, errC := c.d.cli.ContainerWait(ctx, c.id, container.WaitConditionNotRunning)
	e := kernel.Exit{Code: -1, MemLimit: c.d.cfg.Memory}
	select {
	case r := <-waitC:
		e.Code = int(r.StatusCode)
	case err := <-errC:
		e.Lost = fmt.Sprintf("lost track of container %.12s: %v", c.id, err)
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if info, err := c.d.cli.ContainerInspect(ictx, c.id); err == nil && info.State != nil {
		e.Code = info.State.ExitCode
		e.OOMKilled = info.State.OOMKilled
	}
	if e.Code > 128 && e.Code < 128+65 && !e.OOMKilled {
		e.Signal = syscall.Signal(e.Code - 128)
	}
	select { // let the last of the output arrive
	case <-c.demuxed:
	case <-time.After(time.Second):
	}
	e.StderrTail = strings.TrimSpace(e.StderrTail + "\n" + c.tail.String())
	c.exit = e
	close(c.done)
}

func (c *conn) Read(p []byte) (int, error)  { return c.stdout.Read(p) }
func (c *conn) Write(p []byte) (int, error) { return c.hijack.Conn.Write(p) }
func (c *conn) Done() <-chan struct{}       { return c.done }

func (c *conn) Exit() kernel.Exit {
	<-c.done
	return c.exit
}

// Interrupt sends SIGINT to the container's init, which hands it to the
// kernel (kernel.Client.Interrupt): the running cell stops and the
// namespace stays.
func (c *conn) Interrupt() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.d.cli.ContainerKill(ctx, c.id, "INT")
	if isNotFound(err) || (err != nil && strings.Contains(err.Error(), "is not running")) {
		return nil
	}
	return err
}

// Kill stops the container at once (SIGKILL through the daemon).
func (c *conn) Kill() error {
	var err error
	c.killOnce.Do(func() {
		close(c.killed)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = c.d.cli.ContainerKill(ctx, c.id, "KILL")
		if isNotFound(err) || (err != nil && strings.Contains(err.Error(), "is not running")) {
			err = nil
		}
	})
	return err
}

// Close ends the kernel: its input closes, it gets StopGrace to finish,
// then it is killed; the container (and its data volume) is removed.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.hijack.CloseWrite()
		endGently(c.done, c.d.cfg.StopGrace, c.Kill)
		c.hijack.Close()
		_ = c.stdout.Close()
		c.closeErr = teardown(c.d.cli, c.id, c.volume)
	})
	return c.closeErr
}

// endGently waits grace for a kernel whose input is closed to end (done),
// then kills it and waits a little more for the kill to be seen.
func endGently(done <-chan struct{}, grace time.Duration, kill func() error) {
	select {
	case <-done:
	case <-time.After(grace):
		_ = kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
}

// teardown removes a container and a volume; nil-safe and idempotent.
func teardown(cli *client.Client, id, volumeName string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if id != "" {
		err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && strings.Contains(err.Error(), "is already in progress") {
			// Another process (a sweep next to this one) removes it: wait
			// until it is gone, so that the container is gone on return.
			err = waitRemoved(ctx, cli, id)
		}
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %.12s: %w", id, err))
		}
	}
	if volumeName != "" {
		if err := cli.VolumeRemove(ctx, volumeName, true); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", volumeName, err))
		}
	}
	return errors.Join(errs...)
}

// waitRemoved waits until the container id, which another caller is
// removing, is gone.
func waitRemoved(ctx context.Context, cli *client.Client, id string) error {
	waitC, errC := cli.ContainerWait(ctx, id, container.WaitConditionRemoved)
	select {
	case <-waitC:
		return nil
	case err := <-errC:
		if isNotFound(err) {
			return nil // gone before the wait began
		}
		return err
	}
}

// detached is ctx without its cancellation, bounded on its own: a create
// request cancelled in flight may still make the object, whose id is then
// lost, so creates run to completion and the caller checks ctx after.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}
