// Package sshtest runs a throwaway OpenSSH server on 127.0.0.1 for tests:
// Debian's /usr/sbin/sshd in the foreground (-D -e) on a free port, with a
// host key, two client keys (the test's, and one Sessions uses to probe)
// and a configuration made in a temporary folder, as the user running the
// tests. The server is stopped by PID when the test ends, with what it
// started: the sessions still open, and the ssh connection masters (ssh
// ControlMaster) whose sockets are in ControlDir.
//
// It needs root (sshd changes to the logged-in user, and its privilege
// separation folder /run/sshd is root's) and the openssh-server and
// openssh-client packages: without them the test skips, or fails in CI
// (testenv.SkipOrFail).
//
// Only 127.0.0.1, or an address of a network namespace the test made
// (StartInNetns), is ever listened on or reached.
package sshtest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ctxcode/ctxcode/internal/proctest"
	"github.com/ctxcode/ctxcode/internal/testenv"
)

// Sshd is where the server's binary is.
const Sshd = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// Addr is the address it listens on: 127.0.0.1, or for StartInNetns
	// the namespace's.
	Addr string
	// Port is the port it listens on.
	Port int
	// User is the user it lets in: the one running the tests.
	User string
	// Key is the client's private key (ed25519, no passphrase).
	Key string
	// Dir is the server's temporary folder (keys, configuration, log).
	Dir string

	keyFP, probeFP string // the keys' SHA256 fingerprints, as sshd logs them
	probeKey       string
	cmd            *exec.Cmd
	log            *os.File // sshd's output, read by read
	stopOnce       sync.Once

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed (and replaced) at each new log line
	ended   bool          // sshd's stderr is closed
	ready   chan struct{} // closed once sshd listens
	done    chan struct{} // closed once sshd's stderr is
}

// Start starts a server on 127.0.0.1 for tb and stops it when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, "", "127.0.0.1")
}

// StartInNetns starts a server inside the network namespace netns
// (as `ip netns` names it, made by the test, as dockertest.StartInNetns
// does), listening on addr, an address of that namespace; it stops it
// when tb ends. It needs nsenter. Its connections go over the namespace's
// link: take the link down and they hang, as to a machine cut off.
func StartInNetns(tb testing.TB, netns, addr string) *Server {
	tb.Helper()
	if _, err := exec.LookPath("nsenter"); err != nil {
		testenv.SkipOrFail(tb, "sshtest: a server in a network namespace needs nsenter: %v", err)
	}
	return start(tb, netns, addr)
}

// ListenPort is the port a server in a namespace of its own listens on.
const ListenPort = 22

func start(tb testing.TB, netns, addr string) *Server {
	tb.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(tb, "sshtest: running sshd needs root (euid %d)", os.Geteuid())
	}
	for _, bin := range []string{Sshd, "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.SkipOrFail(tb, "sshtest: %s not found (install openssh-server and openssh-client: scripts/setup-host.sh)", bin)
		}
	}
	u, err := user.Current()
	if err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	// A short folder: ssh's control sockets go in it, and a socket's path
	// holds about 100 bytes.
	dir, err := os.MkdirTemp("", "sshtest")
	if err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation folder
		tb.Fatalf("sshtest: %v", err)
	}
	s := &Server{Addr: addr, User: u.Username, Dir: dir, Key: filepath.Join(dir, "id"), probeKey: filepath.Join(dir, "probe"),
		changed: make(chan struct{}), ready: make(chan struct{}), done: make(chan struct{})}
	for _, k := range []string{"host_key", "id", "probe"} {
		keygen(tb, filepath.Join(dir, k))
	}
	s.keyFP, s.probeFP = fingerprint(tb, s.Key), fingerprint(tb, s.probeKey)
	var auth []byte
	for _, k := range []string{s.Key, s.probeKey} {
		b, err := os.ReadFile(k + ".pub")
		if err != nil {
			tb.Fatalf("sshtest: %v", err)
		}
		auth = append(auth, b...)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), auth, 0o600); err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	s.Port = ListenPort // a namespace of the test's own has every port free
	if netns == "" {
		s.Port = freePort(tb)
	}
	// MaxSessions: every kernel attached over a shared connection is one
	// session of it (sshd's default is 10). SetEnv HOME: the sessions'
	// shells start in a home of their own, empty, so that no startup file
	// of the user running the tests runs in them (a shell rc that takes a
	// lock, such as pyenv's rehash, left stale by a test that kills the
	// server mid-session, would hold every later session for a minute).
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	cfg := fmt.Sprintf(`ListenAddress %s
Port %d
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
MaxSessions 200
MaxStartups 200
LogLevel INFO
SetEnv HOME=%s
`, s.Addr, s.Port, filepath.Join(dir, "host_key"), filepath.Join(dir, "sshd.pid"), filepath.Join(dir, "authorized_keys"), home)
	cfgPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	argv := []string{Sshd, "-D", "-e", "-f", cfgPath}
	if netns != "" {
		// nsenter execs sshd in the namespace: its PID stays ours.
		argv = append([]string{"nsenter", "--net=" + proctest.NetnsPath(netns), "--"}, argv...)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = w, w
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = s.cmd.Start()
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		tb.Fatalf("sshtest: start sshd: %v", err)
	}
	go s.read(r)
	s.log = r
	tb.Cleanup(func() { s.Kill(tb) })
	select {
	case <-s.ready:
	case <-s.done:
		tb.Fatalf("sshtest: sshd ended before it listened:\n%s", s.Log())
	}
	return s
}

// URL is the server as a Docker host: ssh://user@addr:port.
func (s *Server) URL() string {
	return fmt.Sprintf("ssh://%s@%s:%d", s.User, s.Addr, s.Port)
}

// SSHFlags are the ssh client's flags for the server: its key, and no
// known-hosts check (the host key is thrown away with the test).
func (s *Server) SSHFlags() []string {
	return []string{"-i", s.Key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"}
}

// ControlDir is a folder for ssh's control sockets (sandbox.Host's
// ControlDir): the masters whose sockets are there, or anywhere under
// Dir, are ended with the server.
func (s *Server) ControlDir() string {
	d := filepath.Join(s.Dir, "ctl")
	_ = os.MkdirAll(d, 0o700)
	return d
}

// Log is what sshd has logged so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// Sessions is how many ssh connections the server has accepted with Key:
// a new ssh connection each, not a session over a shared one. It is exact
// for the connections made before it is called: it makes a connection
// with another key and waits for sshd to log it, and sshd logged the
// earlier ones before.
func (s *Server) Sessions(tb testing.TB) int {
	tb.Helper()
	probes := s.count(s.probeFP)
	args := append([]string{"-p", strconv.Itoa(s.Port), "-l", s.User, "-i", s.probeKey, "-o", "ControlPath=none"}, s.SSHFlags()[2:]...)
	out, err := exec.Command("ssh", append(args, s.Addr, "true")...).CombinedOutput()
	if err != nil {
		tb.Fatalf("sshtest: probe: %v: %s\nsshd's log:\n%s", err, out, s.Log())
	}
	for {
		s.mu.Lock()
		n, ch, ended := countIn(s.lines, s.probeFP), s.changed, s.ended
		s.mu.Unlock()
		if n > probes {
			break
		}
		if ended {
			tb.Fatalf("sshtest: sshd ended:\n%s", s.Log())
		}
		<-ch
	}
	return s.count(s.keyFP)
}

func (s *Server) count(fp string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return countIn(s.lines, fp)
}

func countIn(lines []string, fp string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "Accepted publickey") && strings.Contains(l, fp) {
			n++
		}
	}
	return n
}

// read keeps sshd's log lines until its stderr closes.
func (s *Server) read(r *os.File) {
	sc := bufio.NewScanner(r)
	listening := false
	for sc.Scan() {
		s.mu.Lock()
		s.lines = append(s.lines, sc.Text())
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		if !listening && strings.Contains(sc.Text(), "Server listening on") {
			listening = true
			close(s.ready)
		}
	}
	s.mu.Lock()
	s.ended = true
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	close(s.done)
}

// Kill stops the server now, as the end of the test would (stop): a test
// of a host that goes away mid-run calls it. It is safe to call more than
// once.
func (s *Server) Kill(tb testing.TB) {
	s.stopOnce.Do(func() { s.stop(tb, s.log) })
}

// stop ends the connection masters whose sockets are in Dir (ControlDir,
// or another folder under Dir a test named), then sshd and the
// connections it serves, by PID: frozen (SIGSTOP), then killed
// (SIGKILL), as a machine that goes away would leave them.
func (s *Server) stop(tb testing.TB, r *os.File) {
	var socks []string
	_ = filepath.WalkDir(s.Dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type()&os.ModeSocket != 0 {
			socks = append(socks, path)
		}
		return nil
	})
	for _, sock := range socks {
		if out, err := exec.Command("ssh", "-S", sock, "-O", "exit", "127.0.0.1").CombinedOutput(); err != nil {
			tb.Logf("sshtest: end the ssh master %s: %v: %s", sock, err, out)
		}
	}
	// Freeze the tree first, sshd and then each process found under it
	// until no new one appears, so that none forked meanwhile (a
	// connection accepted, a session opened) outlives the kill.
	root := s.cmd.Process.Pid
	_ = syscall.Kill(root, syscall.SIGSTOP)
	frozen := map[int]bool{root: true}
	for grew := true; grew; {
		grew = false
		for _, pid := range descendants(root) {
			if !frozen[pid] {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				frozen[pid], grew = true, true
			}
		}
	}
	for pid := range frozen {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = s.cmd.Wait()
	_ = r.Close() // ends read, should a stray process hold the pipe
}

// descendants are the processes under pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so from the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

func keygen(tb testing.TB, path string) {
	tb.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sshtest", "-f", path).CombinedOutput(); err != nil {
		tb.Fatalf("sshtest: ssh-keygen: %v: %s", err, out)
	}
}

// fingerprint is the SHA256 fingerprint of the key at path, as sshd logs
// it.
func fingerprint(tb testing.TB, path string) string {
	tb.Helper()
	out, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", path+".pub").Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 2 {
		tb.Fatalf("sshtest: fingerprint of %s: %v: %s", path, err, out)
	}
	return f[1]
}

// freePort is a port free on 127.0.0.1 now.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("sshtest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
