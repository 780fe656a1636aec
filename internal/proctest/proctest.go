// Package proctest holds what the test helpers that start servers on this
// machine (dockertest's dockerd, clustertest's Kubernetes cluster) share to
// know when a server is ready and to leave nothing of it behind: READY=1
// on a notify socket, as systemd reads it; a process killed by PID and
// waited for through a pidfd; the processes that serve a folder (found by
// their command line); a container's first process from runc's state;
// every mount under a folder, unmounted; a lock held across the machine;
// where `ip netns` keeps a named network namespace.
//
// Nothing here sleeps to wait: each wait is on an event, bounded by a
// timeout that guards against a hang.
package proctest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// KillTimeout bounds how long KillAndWait waits for a process to end after
// SIGKILL.
const KillTimeout = time.Minute

// ListenNotify listens on a notify socket at path, for NOTIFY_SOCKET.
func ListenNotify(path string) (*net.UnixConn, error) {
	return net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
}

// WaitReady waits for READY=1 on notify (see ListenNotify), for done to be
// closed (the process ended: the error names exited()), or for timeout;
// it closes notify.
func WaitReady(notify *net.UnixConn, done <-chan struct{}, exited func() error, timeout time.Duration) error {
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := notify.Read(buf)
			if err != nil {
				ready <- err
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line == "READY=1" {
					ready <- nil
					return
				}
			}
		}
	}()
	defer notify.Close() // ends the reader whatever happened
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("read its notify socket: %w", err)
		}
		return nil
	case <-done:
		return fmt.Errorf("it exited: %v", exited())
	case <-timer.C:
		return fmt.Errorf("it did not say READY=1 within %s", timeout)
	}
}

// KillAndWait kills pid and waits, through a pidfd, until it has ended
// (KillTimeout at most). A process already gone is no error.
func KillAndWait(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // gone already
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(KillTimeout.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for %d: %w", pid, err)
		}
		if n == 0 {
			return fmt.Errorf("process %d did not end within %s of SIGKILL", pid, KillTimeout)
		}
		return nil
	}
}

// PIDsServing lists the processes whose command line names dir or a path
// in it (a daemon's folder, its socket), this one excepted: an argument
// that is dir, ends in "="+dir, or holds dir+"/" (so /tmp/d-1 is not
// /tmp/d-12).
func PIDsServing(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && slices.ContainsFunc(bytes.Split(b, []byte{0}), func(arg []byte) bool { return names(string(arg), dir) }) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// names reports whether a command-line argument names dir or a path in it.
func names(arg, dir string) bool {
	return arg == dir || strings.HasSuffix(arg, "="+dir) || strings.Contains(arg, dir+"/")
}

// RuncInit reads a runc state file (ROOT/ID/state.json): the pid of the
// container's first process, when that process still runs (its start time
// is the one runc recorded, so a reused pid is never named), else 0; and
// the container's cgroups. Killing the first process of a container's pid
// namespace ends them all.
func RuncInit(stateFile string) (pid int, cgroups []string) {
	b, err := os.ReadFile(stateFile)
	if err != nil {
		return 0, nil
	}
	var st struct {
		Pid         int               `json:"init_process_pid"`
		Start       uint64            `json:"init_process_start"`
		CgroupPaths map[string]string `json:"cgroup_paths"`
	}
	if json.Unmarshal(b, &st) != nil {
		return 0, nil
	}
	seen := map[string]bool{}
	for _, p := range st.CgroupPaths {
		if p != "" && !seen[p] {
			seen[p] = true
			cgroups = append(cgroups, p)
		}
	}
	if st.Pid <= 0 || processStart(st.Pid) != st.Start {
		return 0, cgroups
	}
	return st.Pid, cgroups
}

// processStart is the start time of pid in clock ticks since boot (field
// 22 of /proc/PID/stat), or 0.
func processStart(pid int) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// Unmount unmounts everything mounted at or under dir, deepest first
// (lazily where a mount is busy), and says what is still mounted there.
func Unmount(dir string) error {
	mounts, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := unix.Unmount(mounts[i], 0); err != nil {
			_ = unix.Unmount(mounts[i], unix.MNT_DETACH)
		}
	}
	if mounts, err = MountsUnder(dir); err != nil || len(mounts) > 0 {
		return fmt.Errorf("still mounted there: %v %v", mounts, err)
	}
	return nil
}

// MountsUnder lists the mount points at or under dir, in mount order.
func MountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out, nil
}

// LockFile takes an exclusive lock on path, waiting while another process
// holds it, and returns its release.
func LockFile(tb testing.TB, path string) func() {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		tb.Fatalf("lock %s: %v", path, err)
	}
	return func() { _ = f.Close() } // closing releases the lock
}

// NetnsPath is the file of the network namespace name that `ip netns add`
// made: what `nsenter --net=` takes.
func NetnsPath(name string) string { return filepath.Join("/var/run/netns", name) }
