//go:build linux

package kernel

// Keeping the API key out of reach of a local kernel.
//
// ctxcode holds the API key: OPENAI_API_KEY is in its environment (which
// /proc/PID/environ shows as it was at exec, whatever the process does with
// it later) and in its memory; so may its ancestors, such as the shell that
// exported it. A local kernel runs model-written code on this host, so it must
// not read /proc/PID/environ, cmdline or mem of any of them. Three layers:
//
//  1. ctxcode marks itself non-dumpable (prctl PR_SET_DUMPABLE 0) before it
//     starts a local kernel: its /proc files then belong to root, and its
//     environ and memory are readable only with CAP_SYS_PTRACE, even by
//     processes of its own user.
//  2. When ctxcode is root, the kernel runs as nobody (65534:65534, no
//     supplementary groups), so no root process is readable to it. Its
//     folder is chowned to nobody (mode 0700); the data copy stays root's,
//     0444 and 0555; nothing is made world-writable. The interpreter, the
//     kernel folder and a linked data folder must be reachable by nobody:
//     where a folder on the way is closed to it (pyenv lives in /root, 0700),
//     the mount namespace below covers that folder with an empty tmpfs and
//     mounts back only the entry the kernel needs (/root/.pyenv), which also
//     hides the rest of it; without namespaces Start refuses, and says what
//     to do. ctxcode's own binary (the Go kernel) is run as /proc/self/exe,
//     which needs no folder.
//  3. Where the system allows it (user namespaces; not in a default Docker
//     container, nor where AppArmor restricts them for unprivileged users),
//     the kernel runs in its own user, PID and mount namespaces with a
//     private /proc: no process outside the kernel is visible to it, so
//     neither is its environ, cmdline or mem, whatever user it runs as, and
//     it cannot signal or trace them. The folder that holds the kernel's own
//     (the host's /tmp, usually) is covered by an empty one but for that
//     folder, so that it sees neither the other kernels' folders (their
//     private TMPDIR among them, the same user's) nor the rest of it: its
//     temporary files go to its TMPDIR. The kernel runs with no capability and
//     no_new_privs, so it cannot unmount that /proc; in a user namespace it
//     makes itself, the mounts it inherits are locked and cannot be
//     unmounted either. A small helper does the mounts: this same binary,
//     re-executed by /proc/self/exe with argv[0] "ctxcode-kernel-confine"
//     (see init below), which then executes the kernel in place (same pid,
//     pid 1 of its namespace; all its processes die with it). For root, the
//     namespace maps root and nobody to themselves and the helper starts as
//     root (without capabilities outside the namespace), to enter root's
//     folders, then becomes nobody; no_new_privs is what keeps the kernel
//     from becoming root again by a set-user-ID program, so it must stay.
//
// What that protects, and what it does not:
//   - root, with namespaces: every process outside the kernel (it sees none).
//     Files: only what nobody may read, less the closed folders covered.
//   - root, without namespaces: the environ and memory of every process not
//     running as nobody. Command lines stay world-readable, as they are to
//     every user of the host: a key given on a command line is not protected.
//   - not root, with namespaces: every process outside the kernel. But the
//     kernel runs as you: it can read (and change) every file you can, so a
//     key in ~/.bashrc, a .env file or a credentials file is readable.
//   - not root, without namespaces: ctxcode itself only (layer 1). Your
//     other processes are dumpable and run as you: a shell that exported the
//     key shows it in /proc/PID/environ. [Confinement.Warning] says so; use
//     --sandbox docker there.
//
// In every case the kernel shares the host's network and sees the host's
// files (with namespaces, all but the folder that holds the kernels'
// folders, the host's /tmp usually: its /tmp is its own); it is not a
// sandbox (see package sandbox for one).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nobody is the user and group local kernels run as when ctxcode is root.
const nobody = 65534

// confineArg0 is the argv[0] by which this binary knows it was re-executed
// to set up a kernel's namespaces.
const confineArg0 = "ctxcode-kernel-confine"

// init runs the namespace helper when this binary was started as one. It
// never returns then: it executes the kernel or exits.
func init() {
	if len(os.Args) > 1 && os.Args[0] == confineArg0 {
		os.Exit(confineMain(os.Args[1:]))
	}
}

// Confinement says how local kernels are kept from the processes around them.
type Confinement struct {
	// UID and GID are the host ids the kernel runs as: nobody (65534) when
	// ctxcode runs as root, else ctxcode's own.
	UID, GID int
	// Namespaces is true when the kernel runs in its own user, PID and mount
	// namespaces with a private /proc, so it sees no other process.
	Namespaces bool
	// Why says why it does not, when Namespaces is false.
	Why string
}

func (c Confinement) String() string {
	who := fmt.Sprintf("uid %d", c.UID)
	if c.UID == nobody {
		who = "nobody (uid 65534)"
	}
	if c.Namespaces {
		return "as " + who + ", each in its own user, PID and mount namespaces"
	}
	return "as " + who + ", without namespaces (" + c.Why + ")"
}

// Warning is what a person should be told before cells run in such a
// kernel, or "" when no process outside it can be read.
func (c Confinement) Warning() string {
	if c.Namespaces || c.UID != os.Geteuid() {
		return ""
	}
	return "the cells can read the environment and memory of your other processes " +
		"(a shell that exported OPENAI_API_KEY, say): " + c.Why +
		"; use --sandbox docker to keep keys out of their reach"
}

// Confinement is how this transport's kernels are confined. The first call
// may start a short-lived probe process.
func (l *Local) Confinement() Confinement { return LocalConfinement(l.cfg.NoNamespaces) }

// LocalConfinement is how local kernels started by this process are
// confined, without namespaces when noNamespaces says so
// (LocalConfig.NoNamespaces). The first call may start a short-lived probe
// process.
func LocalConfinement(noNamespaces bool) Confinement {
	c := Confinement{UID: os.Geteuid(), GID: os.Getegid()}
	if c.UID == 0 {
		c.UID, c.GID = nobody, nobody
	}
	if noNamespaces {
		c.Why = "turned off by the configuration"
	} else if err := namespacesWork(); err != nil {
		c.Why = err.Error()
	} else {
		c.Namespaces = true
	}
	return c
}

// Leaks says what of a graded run the kernels confined as c, started by a
// process of user euid, can read, each a reason for a person; none when
// nothing is in their reach. secrets are the files a model must not read
// (a task file, with its golds). The run directory is not among them: bench
// closes it to other users, which is enough when the kernels run as one.
//
//   - c.UID is euid (ctxcode is not root): the kernels run as you and can
//     read every file you can, the run directory and the secrets included.
//   - a secret user c.UID may read: the file readable to it, every folder
//     above it enterable.
//   - no namespaces: the kernels of parallel trials, one user, can read
//     each other's folders and files under the host's /tmp.
func Leaks(euid int, c Confinement, secrets ...string) []string {
	if c.UID == euid {
		return []string{fmt.Sprintf("local kernels run as your user (uid %d), so a cell can read every file you can: "+
			"the run directory (other trials' answers) and the task file (the golds) among them; they run as user "+
			"nobody, who cannot, only when ctxcode runs as root", euid)}
	}
	var why []string
	for _, p := range secrets {
		st, err := os.Stat(p)
		if err == nil && permits(st, c.UID, c.GID, 0o4) && len(closedAlong(p, c.UID, c.GID)) == 0 {
			why = append(why, fmt.Sprintf("%s can be read by user %d, whom local kernels run as, so a cell can read its golds: "+
				"close it to other users (chmod o-r %s, or move it into a folder they cannot enter)", p, c.UID, p))
		}
	}
	if !c.Namespaces {
		why = append(why, "local kernels run without namespaces ("+c.Why+"), all as one user, so a cell can read the "+
			"folders and temporary files of the trials that run beside it")
	}
	return why
}

// namespacesWork tries the namespace helper once per process.
var namespacesWork = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	cmd.Args = append([]string{confineArg0, "probe"}, namespaceAttr(cmd.SysProcAttr)...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("user namespaces are not available here: %s", msg)
	}
	return nil
})

// namespaceAttr asks for new user, PID and mount namespaces, with the
// capabilities the helper needs there to mount (it drops them before the
// kernel runs), and returns the helper's arguments that go with them.
func namespaceAttr(a *syscall.SysProcAttr) []string {
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if os.Geteuid() == 0 {
		// Root may map anything. The helper starts as root of the namespace
		// (root outside too, without capabilities there: it can enter root's
		// folders to show the kernel what it needs of them), then becomes
		// nobody, inside as outside. no_new_privs keeps the kernel from
		// becoming root again by a set-user-ID program.
		ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: nobody, HostID: nobody, Size: 1}}
		a.UidMappings, a.GidMappings = ids, ids
		a.GidMappingsEnableSetgroups = true
		return []string{fmt.Sprintf("user=%d:%d", nobody, nobody)}
	}
	// A non-dumpable process cannot write its child's id maps (they belong to
	// root then), so the helper maps itself: you inside are you outside.
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETUID, unix.CAP_SETGID}
	return []string{fmt.Sprintf("map=%d:%d", os.Geteuid(), os.Getegid())}
}

// confine sets cmd up to run as c says, in dir (owned: made by Start).
func (l *Local) confine(cmd *exec.Cmd, c Confinement, dir string, owned bool) error {
	// Before anything of the kernel's runs: no process of this user can now
	// read this one's environment or memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("mark ctxcode non-dumpable: %w", err)
	}
	path, err := l.program()
	if err != nil {
		return err
	}
	var views []string // hide= and show= arguments of the helper
	// late are the views of closed folders under /tmp: they are made after
	// the kernel's own /tmp (privateTmp) shows the way to them again, in
	// the order the helper carries them out, or the new /tmp would cover them.
	var late []string
	if c.UID != os.Geteuid() {
		if owned {
			if err := os.Chown(dir, c.UID, c.GID); err != nil {
				return fmt.Errorf("give the kernel folder to its user: %w", err)
			}
		}
		needed := []string{dir}
		if path != "/proc/self/exe" {
			if st, err := os.Stat(path); err != nil || !permits(st, c.UID, c.GID, 0o1) {
				return fmt.Errorf("user %d cannot run %s: local kernels run as nobody when ctxcode runs as root; "+
					"make it executable by every user, run ctxcode as an ordinary user, or use --sandbox docker", c.UID, path)
			}
			needed = append(needed, path)
			if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
				needed = append(needed, real)
			}
		}
		if l.cfg.LinkData && l.cfg.DataDir != "" {
			needed = append(needed, l.cfg.DataDir)
		}
		for _, p := range needed {
			for _, v := range closedAlong(p, c.UID, c.GID) {
				if !c.Namespaces {
					return fmt.Errorf("user %d cannot enter %s, so it cannot reach %s: local kernels run as nobody when "+
						"ctxcode runs as root, and without user namespaces (%s) ctxcode cannot show it to them; use an "+
						"interpreter and folders every user can reach (--python /usr/bin/python3, TMPDIR=/tmp), run "+
						"ctxcode as an ordinary user, or use --sandbox docker", c.UID, v.closed, p, c.Why)
				}
				switch {
				case slices.Contains(views, "show="+v.next), slices.Contains(late, "show="+v.next):
				case c.Namespaces && isWithin("/tmp", v.closed):
					late = append(late, "hide="+v.closed, "show="+v.next)
				default:
					views = append(views, "hide="+v.closed, "show="+v.next)
				}
			}
		}
	}
	if c.Namespaces {
		shown := []string{dir, path}
		if real, err := filepath.EvalSymlinks(path); err == nil {
			shown = append(shown, real)
		}
		if l.cfg.LinkData && l.cfg.DataDir != "" {
			shown = append(shown, l.cfg.DataDir)
		}
		views = append(views, privateTmp(dir, shown)...)
		views = append(views, late...)
	}
	if !c.Namespaces {
		cmd.Path = path
		if c.UID != os.Geteuid() {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(c.UID), Gid: uint32(c.GID)}
		}
		return nil
	}
	cmd.Path = "/proc/self/exe"
	cmd.Args = append([]string{confineArg0, "exec"}, namespaceAttr(cmd.SysProcAttr)...)
	cmd.Args = append(append(append(cmd.Args, views...), "--", path), l.cfg.Argv...)
	return nil
}

// program is the file to execute for Argv[0]: /proc/self/exe when it is this
// binary (its folder may be closed to the kernel's user, the link is not).
func (l *Local) program() (string, error) {
	path, err := exec.LookPath(l.cfg.Argv[0])
	if err != nil {
		return "", fmt.Errorf("start %s: %w", filepath.Base(l.cfg.Argv[0]), err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", err
	}
	if self, err := os.Executable(); err == nil {
		a, aerr := os.Stat(self)
		b, berr := os.Stat(path)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return "/proc/self/exe", nil
		}
	}
	return path, nil
}

// privateTmp are the helper's views that make the kernel's /tmp its own
// temporary folder (dir/.tmp, its TMPDIR too), and hide the folder that
// holds dir (the host's /tmp, usually) but for dir: the kernel then sees
// neither the other kernels' folders, which run as the same user, nor
// anything else there, and what it writes under /tmp is its own, as in a
// container. The paths in need (dir, the interpreter, a linked data
// folder) are shown again where a view covers them: dir itself, and of any
// other the entry of the covered folder it leads through.
func privateTmp(dir string, need []string) []string {
	dir = filepath.Clean(dir)
	var views []string
	show := func(root string) {
		for _, p := range need {
			p = filepath.Clean(p)
			rel, err := filepath.Rel(root, p)
			if err != nil || !filepath.IsLocal(rel) {
				continue
			}
			if p != dir {
				first, _, _ := strings.Cut(rel, string(filepath.Separator))
				p = filepath.Join(root, first)
			}
			if v := "show=" + p; !slices.Contains(views, v) {
				views = append(views, v)
			}
		}
	}
	if parent := filepath.Dir(dir); parent != "/" && !isWithin("/tmp", dir) {
		views = append(views, "hide="+parent)
		show(parent)
	}
	views = append(views, "tmp="+filepath.Join(dir, tmpName))
	show("/tmp")
	return views
}

// isWithin says whether path is root or below it (both clean and absolute).
func isWithin(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// closedFolder is a folder the kernel's user cannot enter, and the entry in
// it that leads to a path the kernel needs.
type closedFolder struct{ closed, next string }

// closedAlong lists, from the root down, the folders above path that uid:gid
// (no other groups) cannot enter.
func closedAlong(path string, uid, gid int) []closedFolder {
	var out []closedFolder
	d := "/"
	for _, part := range strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/") {
		if st, err := os.Stat(d); err == nil && !permits(st, uid, gid, 0o1) {
			out = append(out, closedFolder{d, filepath.Join(d, part)})
		}
		d = filepath.Join(d, part)
	}
	return out
}

// permits says whether uid:gid has the permission bits want (0o1 execute,
// 0o4 read) on the file st describes.
func permits(st os.FileInfo, uid, gid int, want os.FileMode) bool {
	mode := st.Mode().Perm()
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		switch {
		case int(s.Uid) == uid:
			return mode>>6&want == want
		case int(s.Gid) == gid:
			return mode>>3&want == want
		}
	}
	return mode&want == want
}

// confineMain is the namespace helper: pid 1 of new user, PID and mount
// namespaces, with the capabilities to mount there. It mounts a private
// /proc, shows the kernel what it needs of folders its user cannot enter,
// becomes that user, drops every capability, sets no_new_privs and executes
// the kernel in its place. Arguments:
//
//	probe|exec [map=UID:GID] [hide=DIR show=PATH tmp=DIR]... [user=UID:GID] [-- PATH ARGV...]
//
// map: the helper maps these ids, its own outside, to themselves.
// hide, show: DIR becomes an empty tmpfs but for PATH, an entry of it,
// mounted back in place. tmp: DIR is mounted on /tmp. user: the ids to
// become before executing PATH.
func confineMain(args []string) int {
	// Capabilities and no_new_privs belong to a thread: set them on the one
	// that calls execve.
	runtime.LockOSThread()
	if err := confineSetup(args); err != nil {
		fmt.Fprintf(os.Stderr, "ctxcode: confine the local kernel: %v\n", err)
		return 126
	}
	return 0 // a probe
}

func confineSetup(args []string) error {
	if len(args) == 0 || args[0] != "probe" && args[0] != "exec" {
		return errors.New("usage: " + confineArg0 + " probe|exec [map=UID:GID] [hide=DIR show=PATH tmp=DIR]... [user=UID:GID] [-- PATH ARGV...]")
	}
	probe := args[0] == "probe"
	var mapIDs, user string
	var views, argv []string // views: hide=DIR, show=PATH and tmp=DIR, in order
	for i, a := range args[1:] {
		if a == "--" {
			argv = args[i+2:]
			break
		}
		switch k, v, _ := strings.Cut(a, "="); k {
		case "map":
			mapIDs = v
		case "user":
			user = v
		case "hide", "show", "tmp":
			views = append(views, a)
		default:
			return fmt.Errorf("unknown argument %q", a)
		}
	}
	if !probe && len(argv) < 2 {
		return errors.New("no program to execute")
	}
	if os.Getpid() != 1 {
		return errors.New("not the first process of a new PID namespace")
	}
	if mapIDs != "" {
		if err := mapSelf(mapIDs); err != nil {
			return err
		}
	}
	// The mounts below must not reach the namespace this one was copied from.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount a private /proc: %w", err)
	}
	if err := showOnly(views); err != nil {
		return err
	}
	if user != "" {
		if err := become(user); err != nil {
			return err
		}
	}
	if probe {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("drop ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	err := syscall.Exec(argv[0], argv[1:], os.Environ())
	return fmt.Errorf("execute %s: %w", argv[0], err)
}

// mapSelf maps ids "UID:GID", the helper's own outside, to themselves.
func mapSelf(ids string) error {
	uid, gid, _ := strings.Cut(ids, ":")
	for _, f := range []struct{ file, text string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/uid_map", uid + " " + uid + " 1\n"},
		{"/proc/self/gid_map", gid + " " + gid + " 1\n"},
	} {
		if err := os.WriteFile(f.file, []byte(f.text), 0); err != nil {
			return fmt.Errorf("map ids: %w", err)
		}
	}
	return nil
}

// showOnly carries out views in order: "hide=DIR" mounts an empty tmpfs on
// DIR, "show=PATH" mounts PATH back in place as it was, "tmp=DIR" mounts
// DIR on /tmp. Each PATH and DIR to mount is opened first, before any
// folder above it is covered.
func showOnly(views []string) error {
	fds := map[string]int{}
	for _, v := range views {
		_, p, _ := strings.Cut(v, "=")
		if strings.HasPrefix(v, "show=") || strings.HasPrefix(v, "tmp=") {
			fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", p, err)
			}
			defer unix.Close(fd)
			fds[p] = fd
		}
	}
	for _, v := range views {
		if h, ok := strings.CutPrefix(v, "hide="); ok {
			if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
				return fmt.Errorf("hide %s: %w", h, err)
			}
			continue
		}
		if t, ok := strings.CutPrefix(v, "tmp="); ok {
			if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fds[t]), "/tmp", "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("mount %s on /tmp: %w", t, err)
			}
			continue
		}
		p := strings.TrimPrefix(v, "show=")
		var st unix.Stat_t
		if err := unix.Fstat(fds[p], &st); err != nil {
			return fmt.Errorf("show %s: %w", p, err)
		}
		err := os.MkdirAll(filepath.Dir(p), 0o755)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = os.Mkdir(p, 0o755)
		} else if err == nil {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("show %s: %w", p, err)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fds[p]), p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("show %s: %w", p, err)
		}
	}
	return nil
}

// become sets every thread's ids to "UID:GID", with no other groups; from
// root that clears the capabilities too.
func become(ids string) error {
	u, g, _ := strings.Cut(ids, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("user %q: %w", ids, err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("drop groups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("become group %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("become user %d: %w", uid, err)
	}
	return nil
}
