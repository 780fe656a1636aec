package clustertest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ctxcode/ctxcode/internal/proctest"
)

// proc is one of the cluster's processes, started and stopped by PID. Its
// standard output and error go to dir/NAME.log.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	pid  int

	done    chan struct{} // closed when cmd.Wait returns; the one waiter
	waitErr error
}

// startProc starts argv as name, in a process group of its own that is
// told to stop should the test process die. With notify, it is given a
// notify socket (sd_notify's NOTIFY_SOCKET, as systemd gives one) and
// startProc returns once the process says READY=1 there, ends, or
// ReadyTimeout passes: etcd, containerd, kube-apiserver and the kubelet
// all say so when they serve.
func startProc(dir, name string, notify bool, env []string, argv ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	var sock *net.UnixConn
	env = append(os.Environ(), env...)
	if notify {
		path := filepath.Join(dir, name+".notify")
		sock, err = proctest.ListenNotify(path)
		if err != nil {
			return nil, fmt.Errorf("listen for %s's notification: %w", name, err)
		}
		defer sock.Close()
		env = append(env, "NOTIFY_SOCKET="+path)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.pid = p.cmd.Process.Pid
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	if notify {
		if err := proctest.WaitReady(sock, p.done, func() error { return p.waitErr }, ReadyTimeout); err != nil {
			return p, fmt.Errorf("%s (pid %d) did not start: %w\nits log, the end:\n%s", name, p.pid, err, p.tail(4<<10))
		}
	}
	return p, nil
}

// alive reports whether the process still runs.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits StopTimeout for the process to end, then
// kills its process group.
func (p *proc) stop() error {
	if p == nil || !p.alive() {
		return nil
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	timer := time.NewTimer(StopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s %d did not end within %s of SIGTERM: killed", p.name, p.pid, StopTimeout)
	}
}

// kill kills the process group at once, the leader gone or not (its
// children may live on), and waits for the process.
func (p *proc) kill() {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL) // ESRCH: the group is gone
	<-p.done
}

// tail is the end of the process's log, at most n bytes.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// exited says how the process ended, or that it runs.
func (p *proc) exited() error {
	if p.alive() {
		return nil
	}
	if p.waitErr == nil {
		return errors.New("exited with status 0")
	}
	return p.waitErr
}
