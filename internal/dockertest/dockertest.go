// Package dockertest starts a second, throwaway Docker daemon on this
// machine for tests: a real dockerd with a data root, exec root, pid file,
// configuration and socket of its own under a fresh temporary folder, so
// that it starts with no images and no containers and shares nothing with
// the machine's daemon but the kernel. It is gone (processes, mounts,
// folders, and the namespace and links it was given) when the test ends.
//
// Start makes one that listens on a unix socket. StartInNetns makes one
// inside a network namespace made for the test, reached over a veth pair
// on a private /30 of 10.231.0.0/16, whose link the test can take down and
// bring back: a host lost to a partition, and found again.
//
// The daemon is started and stopped by PID. dockerd says it is ready on a
// notify socket (sd_notify's READY=1, as it tells systemd) and the helper
// then checks that it answers a ping: nothing waits on a sleep. To stop,
// dockerd gets SIGTERM (it stops its containers and its own containerd);
// should it not end, its process group and any process still serving its
// exec root (containerd, shims) get SIGKILL, by PID. Every mount under its
// folders (overlay layers, network namespaces) is then unmounted before the
// folders are removed. Nothing else on the machine is touched: only
// addresses, interfaces and namespaces the test made are made, reached or
// removed.
//
// dockerd starts its own containerd (no --containerd), without a bridge,
// iptables rules or masquerading: kernels run with --network none.
//
// It needs root and dockerd (and, for StartInNetns, ip and nsenter):
// without them the test skips, or fails in CI (internal/testenv).
package dockertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"

	"github.com/ctxcode/ctxcode/internal/proctest"
	"github.com/ctxcode/ctxcode/internal/testenv"
)

// ReadyTimeout bounds how long Start waits for dockerd to say it is ready:
// a guard against a daemon that hangs, not a guess at how long it takes.
const ReadyTimeout = 2 * time.Minute

// StopTimeout bounds how long the cleanup waits for dockerd to end after
// SIGTERM before it kills what is left.
const StopTimeout = time.Minute

// TCPPort is the port a daemon made by StartInNetns listens on, inside its
// own namespace.
const TCPPort = 2375

// Daemon is a dockerd started for one test.
type Daemon struct {
	// Host is the daemon's address as DOCKER_HOST names it: its unix
	// socket, or for StartInNetns tcp://10.231.x.2:2375.
	Host string
	// Client is a client for Host, closed when the test ends.
	Client *client.Client
	// Socket is the path of the daemon's unix socket, which answers
	// whatever becomes of Link.
	Socket string
	// Admin is a client for Socket (the same as Client for Start).
	Admin *client.Client
	// PID is dockerd's process id.
	PID int
	// Dir holds the daemon's data root (Dir/data), exec root (Dir/exec),
	// socket, pid file, configuration and log (Dir/dockerd.log).
	Dir string
	// Link is the veth pair between this host and the daemon's network
	// namespace; nil for Start.
	Link *Link
	// CertPath is, for StartInNetns, the folder of the client's TLS
	// certificate, key and authority (ca.pem, cert.pem, key.pem), as
	// DOCKER_CERT_PATH names it, with DOCKER_TLS_VERIFY=1. Empty for Start.
	CertPath string

	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd.Wait returns
	waitErr error
}

// Link is a veth pair between the host and a network namespace made for a
// test, on a /30 of its own: the host's end has the first address, the
// namespace's end the second.
type Link struct {
	// Netns is the namespace's name (/var/run/netns/Netns).
	Netns string
	// HostIf and PeerIf are the interfaces on the host and in Netns.
	HostIf, PeerIf string
	// HostAddr and PeerAddr are their IPv4 addresses.
	HostAddr, PeerAddr string
}

// Start starts a dockerd listening on a unix socket of its own, waits
// until it answers, and stops it and removes all it made when the test
// ends.
func Start(tb testing.TB) *Daemon {
	tb.Helper()
	need(tb, "a second Docker daemon", "dockerd")
	d := newDaemon(tb)
	d.start(tb, nil)
	return d
}

// StartInNetns makes a network namespace and a veth pair to it (see Link),
// and starts a dockerd inside the namespace that listens on
// tcp://PeerAddr:TCPPort with TLS (see Daemon.CertPath), and on a unix
// socket (see Daemon.Admin). It waits
// until the daemon answers over the link, and when the test ends stops it
// and removes the daemon's folders, the link and the namespace.
func StartInNetns(tb testing.TB) *Daemon {
	tb.Helper()
	need(tb, "a second Docker daemon", "dockerd", "ip", "nsenter")
	link := makeLink(tb)
	d := newDaemon(tb)
	d.Link = link
	d.start(tb, link)
	return d
}

// LinkDown takes the namespace's end of the link down: from then on what
// is sent to the daemon goes unanswered, as when a cable is cut or a host
// dies (a connection in flight hangs until its own timeouts; a new one is
// never answered).
func (d *Daemon) LinkDown(tb testing.TB) {
	tb.Helper()
	must(tb, d.Link != nil, "LinkDown: the daemon was not started by StartInNetns")
	d.Link.Down(tb)
}

// LinkUp brings the namespace's end of the link back up (see Link.Up).
func (d *Daemon) LinkUp(tb testing.TB) {
	tb.Helper()
	must(tb, d.Link != nil, "LinkUp: the daemon was not started by StartInNetns")
	d.Link.Up(tb)
}

// MakeLink makes a network namespace and a veth pair into it, on a /30 of
// its own, and removes them when the test ends: a machine of the test's
// own for a server the test starts in it (with nsenter --net=), which it
// can cut off (Down) and bring back (Up). It needs root and ip.
func MakeLink(tb testing.TB) *Link {
	tb.Helper()
	need(tb, "a network namespace", "ip")
	return makeLink(tb)
}

// Down takes the namespace's end of the link down: from then on what is
// sent into the namespace goes unanswered.
func (l *Link) Down(tb testing.TB) {
	tb.Helper()
	ip(tb, "-n", l.Netns, "link", "set", l.PeerIf, "down")
}

// Up brings the namespace's end of the link back up, forgets the
// neighbours that went unanswered meanwhile (else the host says "no route
// to host" until the failed entry expires), and returns once the host's
// end carries traffic again.
func (l *Link) Up(tb testing.TB) {
	tb.Helper()
	wait, err := watchLink(l.HostIf)
	must(tb, err == nil, "watch %s: %v", l.HostIf, err)
	ip(tb, "-n", l.Netns, "link", "set", l.PeerIf, "up")
	if err := wait(); err != nil {
		tb.Fatalf("bring the link to %s back: %v", l.Netns, err)
	}
	ip(tb, "neigh", "flush", "dev", l.HostIf)
	ip(tb, "-n", l.Netns, "neigh", "flush", "dev", l.PeerIf)
}

// watchLink subscribes to the host's link events and returns a function
// that waits until ifname's operational state is up (at once if it is
// already), bounded by ReadyTimeout. The state moves when the kernel's
// link watcher gets to it, a little after the carrier returns.
func watchLink(ifname string) (wait func() error, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_LINK}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	tv := unix.NsecToTimeval(ReadyTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	state := filepath.Join("/sys/class/net", ifname, "operstate")
	up := func() bool {
		b, err := os.ReadFile(state)
		return err == nil && strings.TrimSpace(string(b)) == "up"
	}
	return func() error {
		defer unix.Close(fd)
		buf := make([]byte, 1<<16)
		for !up() {
			// Any link event may be ours; the state file says.
			if _, _, err := unix.Recvfrom(fd, buf, 0); errors.Is(err, unix.EAGAIN) {
				return fmt.Errorf("%s not up within %s", ifname, ReadyTimeout)
			} else if err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("read link events: %w", err)
			}
		}
		return nil
	}, nil
}

// need skips (fails in CI) unless this process is root and has tools;
// what names what needs them.
func need(tb testing.TB, what string, tools ...string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(tb, "%s needs root (euid %d)", what, os.Geteuid())
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			testenv.SkipOrFail(tb, "%s needs %s: %v", what, t, err)
		}
	}
}

func must(tb testing.TB, ok bool, format string, args ...any) {
	tb.Helper()
	if !ok {
		tb.Fatalf(format, args...)
	}
}

// newDaemon makes the daemon's folder, short (a unix socket's path is at
// most 107 bytes, and containerd's go under the exec root), and registers
// its removal.
func newDaemon(tb testing.TB) *Daemon {
	tb.Helper()
	dir, err := os.MkdirTemp("", "ctxdt-")
	must(tb, err == nil, "make the daemon's folder: %v", err)
	tb.Cleanup(func() {
		if err := removeDir(dir); err != nil {
			tb.Error(err)
		}
	})
	return &Daemon{Dir: dir, Socket: filepath.Join(dir, "docker.sock")}
}

// start runs dockerd (inside link's namespace when link is not nil),
// registers its stop, and waits until it is ready and answers.
func (d *Daemon) start(tb testing.TB, link *Link) {
	tb.Helper()
	config := filepath.Join(d.Dir, "daemon.json")
	// An empty configuration: the machine's /etc/docker/daemon.json names
	// its own data root, which dockerd refuses beside --data-root.
	must(tb, os.WriteFile(config, []byte("{}\n"), 0o644) == nil, "write %s", config)
	logf, err := os.Create(filepath.Join(d.Dir, "dockerd.log"))
	must(tb, err == nil, "make the daemon's log: %v", err)
	defer logf.Close()

	notifyPath := filepath.Join(d.Dir, "notify.sock")
	notify, err := proctest.ListenNotify(notifyPath)
	must(tb, err == nil, "listen for dockerd's notification: %v", err)
	defer notify.Close()

	d.Host = "unix://" + d.Socket
	argv := []string{"dockerd",
		"--config-file=" + config,
		"--data-root=" + filepath.Join(d.Dir, "data"),
		"--exec-root=" + filepath.Join(d.Dir, "exec"),
		"--pidfile=" + filepath.Join(d.Dir, "dockerd.pid"),
		"--host=unix://" + d.Socket,
		"--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
		"--shutdown-timeout=2",
	}
	if link != nil {
		d.Host = fmt.Sprintf("tcp://%s:%d", link.PeerAddr, TCPPort)
		d.CertPath = filepath.Join(d.Dir, "tls")
		if err := writeCerts(d.CertPath, link.PeerAddr); err != nil {
			tb.Fatalf("make TLS certificates: %v", err)
		}
		argv = append(argv, "--host="+d.Host, "--tlsverify",
			"--tlscacert="+filepath.Join(d.CertPath, "ca.pem"),
			"--tlscert="+filepath.Join(d.CertPath, "server-cert.pem"),
			"--tlskey="+filepath.Join(d.CertPath, "server-key.pem"))
		// nsenter execs dockerd in the namespace (its PID stays ours);
		// `ip netns exec` would also remount /sys, which hides the
		// cgroup v1 mounts dockerd needs.
		argv = append([]string{"nsenter", "--net=" + proctest.NetnsPath(link.Netns), "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifyPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, killed as one; and should the test process
	// die, dockerd is told to stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start dockerd: %v", err)
	}
	d.cmd, d.PID, d.done = cmd, cmd.Process.Pid, make(chan struct{})
	go func() {
		d.waitErr = cmd.Wait()
		close(d.done)
	}()
	tb.Cleanup(func() {
		if err := d.stop(); err != nil {
			tb.Error(err)
		}
		if tb.Failed() {
			tb.Logf("dockerd %d (%s) log, the end:\n%s", d.PID, d.Host, d.logTail(4<<10))
		}
	})

	if err := d.waitReady(notify); err != nil {
		tb.Fatalf("dockerd %d did not start: %v\nits log, the end:\n%s", d.PID, err, d.logTail(4<<10))
	}
	d.Admin, err = client.NewClientWithOpts(client.WithHost("unix://"+d.Socket), client.WithAPIVersionNegotiation())
	must(tb, err == nil, "client for %s: %v", d.Socket, err)
	tb.Cleanup(func() { _ = d.Admin.Close() })
	d.Client = d.Admin
	if link != nil {
		d.Client, err = client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation(),
			client.WithTLSClientConfig(filepath.Join(d.CertPath, "ca.pem"),
				filepath.Join(d.CertPath, "cert.pem"), filepath.Join(d.CertPath, "key.pem")))
		must(tb, err == nil, "client for %s: %v", d.Host, err)
		tb.Cleanup(func() { _ = d.Client.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	for _, c := range []*client.Client{d.Admin, d.Client} {
		if _, err := c.Ping(ctx); err != nil {
			tb.Fatalf("dockerd %d said it was ready but %s does not answer: %v", d.PID, c.DaemonHost(), err)
		}
	}
}

// waitReady waits for READY=1 on the notify socket, for dockerd to end, or
// for ReadyTimeout.
func (d *Daemon) waitReady(notify *net.UnixConn) error {
	return proctest.WaitReady(notify, d.done, func() error { return d.waitErr }, ReadyTimeout)
}

// stop ends dockerd and whatever still serves its exec root.
func (d *Daemon) stop() error {
	// The containers first: on SIGTERM dockerd gives each 10 s to end,
	// and a process that is its namespace's first ignores SIGTERM.
	cgroups, errs := d.killContainers()
	select {
	case <-d.done:
	default:
		_ = syscall.Kill(d.PID, syscall.SIGTERM)
		timer := time.NewTimer(StopTimeout)
		select {
		case <-d.done:
		case <-timer.C:
			errs = append(errs, fmt.Errorf("dockerd %d did not end within %s of SIGTERM: killed", d.PID, StopTimeout))
			_ = syscall.Kill(-d.PID, syscall.SIGKILL)
			<-d.done
		}
		timer.Stop()
	}
	// After a clean stop nothing below is left. After a kill, containerd
	// and the shims live on, in process groups of their own.
	more, errs2 := d.killContainers()
	cgroups, errs = append(cgroups, more...), append(errs, errs2...)
	for _, pid := range proctest.PIDsServing(filepath.Join(d.Dir, "exec")) {
		if err := proctest.KillAndWait(pid); err != nil {
			errs = append(errs, err)
		}
	}
	for _, cg := range cgroups {
		// Empty now; runc removes it when it sees the container end, and
		// after a kill nobody does.
		if err := os.Remove(cg); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the cgroup of a container: %w", err))
		}
	}
	return errors.Join(errs...)
}

// killContainers kills the first process of every container runc knows of
// under the exec root, and returns the containers' cgroups.
func (d *Daemon) killContainers() (cgroups []string, errs []error) {
	states, _ := filepath.Glob(filepath.Join(d.Dir, "exec", "runtime-runc", "*", "*", "state.json"))
	for _, state := range states {
		pid, cg := proctest.RuncInit(state)
		if pid > 0 {
			if err := proctest.KillAndWait(pid); err != nil {
				errs = append(errs, err)
			}
		}
		cgroups = append(cgroups, cg...)
	}
	return cgroups, errs
}

func (d *Daemon) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(d.Dir, "dockerd.log"))
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// removeDir unmounts everything mounted under dir, deepest first, and
// removes dir only when nothing is mounted there any more.
func removeDir(dir string) error {
	if err := proctest.Unmount(dir); err != nil {
		return fmt.Errorf("daemon folder %s left in place: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the daemon's folder: %w", err)
	}
	return nil
}

// makeLink makes a namespace and a veth pair into it on a free /30, and
// registers their removal.
func makeLink(tb testing.TB) *Link {
	tb.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	l := &Link{Netns: "ctxdt-" + id, HostIf: "ctxdt" + id + "h", PeerIf: "ctxdt" + id + "n"}

	ip(tb, "netns", "add", l.Netns)
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", l.Netns).CombinedOutput(); err != nil {
			tb.Errorf("ip netns delete %s: %v: %s", l.Netns, err, out)
		}
	})
	claimSubnet(tb, l)
	ip(tb, "link", "set", l.PeerIf, "netns", l.Netns)
	ip(tb, "link", "set", l.HostIf, "up")
	ip(tb, "-n", l.Netns, "addr", "add", l.PeerAddr+"/30", "dev", l.PeerIf)
	ip(tb, "-n", l.Netns, "link", "set", l.PeerIf, "up")
	ip(tb, "-n", l.Netns, "link", "set", "lo", "up")
	return l
}

// claimSubnet makes the veth pair and gives the host's end the first
// address of a free /30. Choosing the /30 and taking it are one step among
// the tests of every package on this machine.
func claimSubnet(tb testing.TB, l *Link) {
	tb.Helper()
	unlock := proctest.LockFile(tb, "/run/lock/ctxcode-dockertest.lock")
	defer unlock()
	l.HostAddr, l.PeerAddr = freeSubnet(tb)
	ip(tb, "link", "add", l.HostIf, "type", "veth", "peer", "name", l.PeerIf)
	tb.Cleanup(func() {
		// Deleting one end deletes the pair; the namespace's end may have
		// gone with the namespace already.
		if _, err := net.InterfaceByName(l.HostIf); err == nil {
			if out, err := exec.Command("ip", "link", "delete", l.HostIf).CombinedOutput(); err != nil {
				tb.Errorf("ip link delete %s: %v: %s", l.HostIf, err, out)
			}
		}
	})
	ip(tb, "addr", "add", l.HostAddr+"/30", "dev", l.HostIf)
}

// freeSubnet picks the first /30 of 10.231.0.0/16 whose addresses no
// interface of this host has.
func freeSubnet(tb testing.TB) (hostAddr, peerAddr string) {
	tb.Helper()
	addrs, err := net.InterfaceAddrs()
	must(tb, err == nil, "list this host's addresses: %v", err)
	used := map[string]bool{}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			used[n.IP.String()] = true
		}
	}
	for i := 0; i < 1<<14; i++ {
		base := i * 4
		h := fmt.Sprintf("10.231.%d.%d", base>>8, base&0xff+1)
		p := fmt.Sprintf("10.231.%d.%d", base>>8, base&0xff+2)
		if !used[h] && !used[p] {
			return h, p
		}
	}
	tb.Fatal("no free /30 left in 10.231.0.0/16")
	return "", ""
}

func ip(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
