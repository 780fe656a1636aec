// Package sandbox runs kernels in hardened, networkless Docker containers.
//
// A sandboxed kernel is one container whose main process (under Docker's
// init) is the kernel driver; the client speaks the kernel protocol over the
// container's attached stdin and stdout, never through docker exec. Each
// container has, unless the Config says otherwise: no network, no
// capabilities, no-new-privileges, a read-only root filesystem, /tmp as a
// 256 MiB tmpfs, 2 GiB of memory with no swap beyond it, one CPU, at most 256
// processes, user 65534:65534, an environment with no host variable in it,
// the data folder read-only at /session/data and /session as its working
// directory, and no published ports.
//
// Every container and data volume carries the labels ctxcode.session (a
// session id), ctxcode.created (unix seconds) and the owner labels: a
// random id of the owning process, its hostname, boot id, PID namespace,
// pid and start time. Prune and the Sweep every command runs first remove
// what a crashed process left behind, judging an owner gone only where
// they can look it up (this boot and PID namespace; or, for a stopped
// container, an earlier boot of this host); the rest, such as the
// containers of a process in another PID namespace on the same daemon,
// only an age limit removes. Teardown is idempotent: stop with a short
// grace, force remove, ignore "not found".
//
// The daemon is the one a Host names (host.go): as the docker command
// chooses it (DOCKER_CONTEXT, DOCKER_HOST, the CLI's current context), a
// unix:// or tcp:// URL, a Docker context, or ssh://, reached through
// docker/cli's connection helper (the remote runs docker system
// dial-stdio) over one shared ssh connection per host. A remote daemon
// (tcp://, ssh://) gets the data folder as a volume copy.
//
// Open picks the transport for a command: Docker when it answers, this
// host only when asked (or, for code ctxcode wrote, when Docker is not
// there); it sweeps orphans before the first container starts.
//
// The kernel image (ctxcode-kernel:<content hash>) is built offline from
// Debian packages with debootstrap and docker import (see Build); any image
// with python3 works too, since the driver is injected on the command line.
//
// Non-goals: a container runtime of our own; isolation for the local
// transport (package kernel), which runs code on the host.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/client"
)

// Labels put on every ctxcode container and volume (LabelImage: image).
// The owner labels say which process made it, in terms Prune can check.
const (
	LabelSession  = "ctxcode.session"
	LabelCreated  = "ctxcode.created"   // unix seconds
	LabelOwner    = "ctxcode.owner"     // a random id of the owning process
	LabelHost     = "ctxcode.host"      // the owner's hostname
	LabelBoot     = "ctxcode.boot"      // the owner's kernel boot id
	LabelPIDNS    = "ctxcode.pidns"     // the inode of the owner's PID namespace
	LabelPID      = "ctxcode.pid"       // the owner's pid in that namespace
	LabelPIDStart = "ctxcode.pid_start" // the owner's start time, against pid reuse
	LabelImage    = "ctxcode.image"
)

// Config describes the containers a Docker transport starts. Start from
// DefaultConfig; every field documents its default there.
type Config struct {
	// Image runs the kernel. It needs python3 (or, for the Go kernel,
	// nothing: the ctxcode binary is mounted in). Default: KernelImage().
	Image string
	// DataDir is shown read-only at /session/data. Empty means no data.
	DataDir string
	// CopyData copies DataDir into a volume (files read-only, readable by
	// the kernel's user; what kernel.WalkReadOnly takes) instead of
	// bind-mounting it. It is forced on when the daemon is remote
	// (tcp:// or ssh://, see Remote) and when a bind mount would show what a copy
	// does not: a file or folder under DataDir not readable by every user,
	// a symbolic link, a named pipe, a socket or a device.
	CopyData bool
	// FollowLinks brings in the files that links in DataDir lead to
	// outside it, too; by default they are left out.
	FollowLinks bool
	// Network is the network mode: "none" (the default), or a network
	// the daemon has (bridge, host, one made by docker network create);
	// never another container's.
	Network string
	// Memory is the memory limit in bytes, at least MinMemory; swap is
	// held to the same value. Default 2 GiB.
	Memory int64
	// CPUs is the CPU quota, more than 0 and at most the daemon's CPUs.
	// Default 1.
	CPUs float64
	// Pids caps the processes (and threads) in the container, at least
	// MinPids. Default 256.
	Pids int64
	// TmpSize is the size of the /tmp tmpfs in bytes. Default 256 MiB.
	TmpSize int64
	// User runs the kernel. Default "65534:65534" (nobody).
	User string
	// WritableRoot leaves the root filesystem writable. Default false.
	WritableRoot bool
	// KeepCaps keeps Docker's default capabilities instead of dropping all.
	KeepCaps bool
	// NewPrivileges allows setuid binaries to gain privileges (drops the
	// no-new-privileges option). Default false.
	NewPrivileges bool
	// Swap is the memory+swap limit in bytes. Zero means equal to Memory
	// (no swap); -1 means unlimited swap.
	Swap int64
	// NoIPython makes the Python driver use its standard-library path even
	// though the image has IPython (faster to start; same value text).
	NoIPython bool
	// Env is added to the kernel's environment, as NAME=value. Nothing of
	// ctxcode's own environment reaches a kernel otherwise.
	Env []string
	// Session is the value of the ctxcode.session label. Default: a fresh
	// id for every container started.
	Session string
	// StopGrace is how long Close waits for the kernel to end after its
	// input closes before the container is killed. Default 2s.
	StopGrace time.Duration
	// StderrTail is how many bytes of the kernel's stderr are kept for
	// error reports. Default 8 KiB.
	StderrTail int
}

// DefaultConfig returns the hardened defaults.
func DefaultConfig() Config {
	return Config{
		Image:      KernelImage(),
		Network:    "none",
		Memory:     2 << 30,
		CPUs:       1,
		Pids:       256,
		TmpSize:    256 << 20,
		User:       "65534:65534",
		StopGrace:  2 * time.Second,
		StderrTail: 8 << 10,
	}
}

// DaemonError is a Docker daemon that cannot be reached.
type DaemonError struct {
	// Host names the daemon: its URL, and the Docker context it came
	// from, if any.
	Host string
	Err  error
}

func (e *DaemonError) Error() string {
	what := "start Docker (or set DOCKER_HOST)"
	if strings.HasPrefix(e.Host, "ssh://") {
		what = "check that ssh reaches it without a password (key-based) and that the docker command and a running daemon are there; or name another daemon with --docker-host"
	} else if !strings.HasPrefix(e.Host, "unix://") {
		what = "start Docker there, or name another daemon with --docker-host (or DOCKER_HOST)"
	}
	return fmt.Sprintf("docker daemon not reachable at %s: %s; %s", e.Host, strings.TrimSpace(e.Err.Error()), what)
}

func (e *DaemonError) Unwrap() error { return e.Err }

// ImageError is a kernel image that is not there.
type ImageError struct {
	Image string
}

func (e *ImageError) Error() string {
	if strings.HasPrefix(e.Image, ImageRepo+":") {
		return fmt.Sprintf("kernel image %s not found: build it with `ctxcode sandbox build` (about 2 minutes, offline from Debian packages)", e.Image)
	}
	return fmt.Sprintf("image %s not found: pull or build it (any image with python3, 3.9 or later, works), or drop --image to use ctxcode's own", e.Image)
}

// PingTimeout bounds how long Connect waits for the daemon; SSHPingTimeout
// for one over ssh, whose first answer takes a handshake and starting the
// docker command on the other machine (seconds on a loaded one).
const (
	PingTimeout    = 5 * time.Second
	SSHPingTimeout = 30 * time.Second
)

// Connect returns a client for the daemon h names (the zero Host: the
// environment's, as the docker command would choose), after checking
// within PingTimeout that it answers. A Docker context that is not there
// is an *InputError; a daemon that does not answer, a *DaemonError.
func Connect(ctx context.Context, h Host) (*client.Client, error) {
	e, err := h.resolve()
	if err != nil {
		return nil, err
	}
	opts, err := h.clientOpts(e)
	if err != nil {
		return nil, err
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, inputErrorf("docker host %s: %w; expected unix:///path, tcp://host:port, ssh://[user@]host[:port][/socket] or a Docker context name", e, err)
	}
	wait := PingTimeout
	if strings.HasPrefix(e.url, "ssh://") {
		wait = SSHPingTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		_ = cli.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", wait)
		}
		return nil, &DaemonError{Host: e.String(), Err: err}
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, nil
}

// Remote reports whether the daemon runs on another machine (tcp://,
// ssh://), where host folders cannot be bind-mounted.
func Remote(cli *client.Client) bool {
	host := cli.DaemonHost()
	return !strings.HasPrefix(host, "unix://") && !strings.HasPrefix(host, "npipe://")
}

func isNotFound(err error) bool {
	return err != nil && client.IsErrNotFound(err)
}
