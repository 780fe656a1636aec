//go:build linux

package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

const nobody = kerneltest.Nobody

// pythonFor is the interpreter for a kernel with cfg: the usual one, or,
// when that is in a folder its user cannot reach and there are no
// namespaces to show it (root's pyenv, say), the first that is reachable.
func pythonFor(t *testing.T, cfg kernel.LocalConfig) string {
	t.Helper()
	p, err := reachablePython(cfg)
	if err != nil {
		testenv.SkipOrFail(t, "%v", err)
	}
	return p
}

func reachablePython(cfg kernel.LocalConfig) (string, error) {
	var errs []error
	for _, name := range []string{os.Getenv("CTXCODE_PYTHON"), "/usr/bin/python3", "/usr/local/bin/python3"} {
		python, err := kernel.FindPython(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tr, err := kernel.NewLocalPython(python, true, cfg)
		if err != nil {
			return "", err
		}
		c, err := tr.Start(context.Background())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_ = c.Close()
		return python, nil
	}
	return "", fmt.Errorf("no python3 a local kernel can run here: %w", errors.Join(errs...))
}

func startLocal(t *testing.T, python string, cfg kernel.LocalConfig) kernel.Kernel {
	t.Helper()
	tr, err := kernel.NewLocalPython(python, true, cfg)
	require.NoError(t, err)
	return kerneltest.Start(t, kernel.Python, tr)
}

func runCell(t *testing.T, k kernel.Kernel, code string) kernel.Result {
	t.Helper()
	res, err := k.Execute(context.Background(), code, kernel.ExecOptions{Timeout: 60 * time.Second})
	require.NoError(t, err)
	require.Equal(t, kernel.StatusOK, res.Status, "%s\n%+v", res.Stderr, res.Error)
	return res
}

// namespacesHere says whether local kernels get namespaces on this machine.
func namespacesHere(t *testing.T) bool {
	tr, err := kernel.NewLocal(kernel.LocalConfig{Argv: []string{"true"}})
	require.NoError(t, err)
	c := tr.Confinement()
	t.Logf("local kernels run %s", c)
	return c.Namespaces
}

// insideView is what a cell reports about its own confinement.
const insideView = `import ctypes, json, os, shutil, subprocess
def _view():
    st = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
    def try_read(p):
        try:
            open(p, "rb").read()
            return "read"
        except OSError as e:
            return type(e).__name__
    libc = ctypes.CDLL(None, use_errno=True)
    umount = libc.umount2(b"/proc", 2)
    nested = None
    if shutil.which("unshare"):
        r = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", "umount -l /proc && ls /proc"],
                           capture_output=True, text=True)
        nested = r.returncode
    return {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "pid": os.getpid(),
            "ppid": os.getppid(), "others": sorted(int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()),
            "cap_eff": st["CapEff"].strip(), "cap_prm": st["CapPrm"].strip(), "cap_amb": st["CapAmb"].strip(),
            "no_new_privs": st["NoNewPrivs"].strip(), "umount": umount, "nested_umount": nested,
            "parent_environ": try_read(f"/proc/{os.getppid()}/environ") if os.getppid() else "none",
            "test_environ": try_read(f"/proc/TESTPID/environ")}
print(json.dumps(_view()))
`

type view struct {
	UID, GID      int
	Groups        []int
	PID, PPID     int
	Others        []int
	CapEff        string `json:"cap_eff"`
	CapPrm        string `json:"cap_prm"`
	CapAmb        string `json:"cap_amb"`
	NoNewPrivs    string `json:"no_new_privs"`
	Umount        int
	NestedUmount  *int   `json:"nested_umount"`
	ParentEnviron string `json:"parent_environ"`
	TestEnviron   string `json:"test_environ"`
}

// TestLocalKernelConfinement looks at a local kernel from inside: the user
// it runs as (never root), its capabilities (none), and what it sees of the
// processes around it, with and without namespaces.
func TestLocalKernelConfinement(t *testing.T) {
	withNS := namespacesHere(t)
	for _, noNS := range []bool{false, true} {
		name := "namespaces"
		if noNS {
			name = "no-namespaces"
		}
		t.Run(name, func(t *testing.T) {
			if !noNS && !withNS {
				t.Skip("user namespaces are not available here")
			}
			cfg := kernel.LocalConfig{NoNamespaces: noNS}
			k := startLocal(t, pythonFor(t, cfg), cfg)
			res := runCell(t, k, strings.ReplaceAll(insideView, "TESTPID", strconv.Itoa(os.Getpid())))
			var v view
			require.NoError(t, json.Unmarshal([]byte(res.Stdout), &v), res.Stdout)
			t.Logf("%+v", v)
			if os.Geteuid() == 0 {
				assert.Equal(t, nobody, v.UID, "never root")
				assert.Equal(t, nobody, v.GID)
				assert.Empty(t, slices.DeleteFunc(v.Groups, func(g int) bool { return g == nobody }), "no groups of root's")
			} else {
				assert.Equal(t, os.Geteuid(), v.UID)
			}
			assert.Equal(t, "0000000000000000", v.CapEff, "no capabilities")
			assert.Equal(t, "0000000000000000", v.CapPrm)
			assert.Equal(t, "0000000000000000", v.CapAmb)
			assert.NotEqual(t, "read", v.TestEnviron, "the process that started the kernel is not readable")
			if noNS {
				assert.Equal(t, os.Getpid(), v.PPID)
				assert.NotEqual(t, "read", v.ParentEnviron)
				return
			}
			assert.Equal(t, 1, v.PID, "the first process of its own PID namespace")
			assert.Equal(t, 0, v.PPID, "no parent in sight")
			assert.Empty(t, v.Others, "no other process in sight")
			assert.Equal(t, "1", v.NoNewPrivs)
			assert.Equal(t, -1, v.Umount, "the private /proc cannot be unmounted")
			if v.NestedUmount != nil {
				assert.NotEqual(t, 0, *v.NestedUmount, "nor from a user namespace the kernel makes itself")
			}
		})
	}
}

// TestLocalMarksItsProcessNonDumpable: once a local kernel starts, no
// process of this user can read this one's environment or memory.
func TestLocalMarksItsProcessNonDumpable(t *testing.T) {
	tr, err := kernel.NewLocal(kernel.LocalConfig{Argv: []string{"true"}})
	require.NoError(t, err)
	c, err := tr.Start(context.Background())
	require.NoError(t, err)
	<-c.Done()
	require.NoError(t, c.Close())
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, d)
}

// TestLocalRootShowsOnlyWhatTheKernelNeeds: as root, the kernel runs as
// nobody even when the interpreter lives in a folder closed to nobody (as
// pyenv's does in /root): with namespaces, the kernel sees that folder with
// only the interpreter in it; without, Start refuses and says what to do.
func TestLocalRootShowsOnlyWhatTheKernelNeeds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root's kernels change user")
	}
	// A shim, as pyenv's: a script in the closed folder that runs a real
	// interpreter nobody can reach.
	real := pythonFor(t, kernel.LocalConfig{NoNamespaces: true})
	closed := filepath.Join(t.TempDir(), "closed")
	require.NoError(t, os.Mkdir(closed, 0o700))
	shim := filepath.Join(closed, "python3")
	require.NoError(t, os.WriteFile(shim, []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(closed, "credentials"), []byte("sk-not-for-you"), 0o644))

	t.Run("namespaces", func(t *testing.T) {
		if !namespacesHere(t) {
			t.Skip("user namespaces are not available here")
		}
		k := startLocal(t, shim, kernel.LocalConfig{})
		res := runCell(t, k, "import os\nprint(os.getuid(), sorted(os.listdir("+strconv.Quote(closed)+")))")
		assert.Equal(t, "65534 ['python3']\n", res.Stdout)
	})
	t.Run("no-namespaces", func(t *testing.T) {
		tr, err := kernel.NewLocalPython(shim, true, kernel.LocalConfig{NoNamespaces: true})
		require.NoError(t, err)
		_, err = tr.Start(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot enter")
		assert.Contains(t, err.Error(), "--sandbox docker")
	})
}

// parentEnv makes this test binary the process that starts the kernel in
// TestLocalKernelCannotReadItsParents; its value is "namespaces" or not.
const parentEnv = "CTXCODE_TEST_KERNEL_PARENT"

// TestLocalKernelCannotReadItsParents starts `sh -c 'PARENT; exit $?'` with
// OPENAI_API_KEY in its environment, where PARENT is this test binary
// starting a local kernel; a cell reads environ, cmdline and mem of every
// ancestor. The key must be nowhere, except in the one case that cannot be
// helped: not root, no namespaces, where the shell (dumpable, the kernel's
// own user) shows it, though the process that started the kernel does not.
func TestLocalKernelCannotReadItsParents(t *testing.T) {
	if mode, ok := os.LookupEnv(parentEnv); ok {
		kernelParent(mode)
		return
	}
	kerneltest.FindPython(t)
	withNS := namespacesHere(t)
	users := []string{"self"}
	if os.Geteuid() == 0 {
		users = append(users, "nobody")
	}
	for _, user := range users {
		for _, ns := range []bool{true, false} {
			name := user + "/namespaces"
			if !ns {
				name = user + "/no-namespaces"
			}
			t.Run(name, func(t *testing.T) {
				if ns && !withNS {
					t.Skip("user namespaces are not available here")
				}
				secret := fmt.Sprintf("sk-test-%d-%d", os.Getpid(), time.Now().UnixNano())
				rep := probeFromParent(t, secret, ns, user == "nobody")
				t.Logf("%d ancestors %v, %d other processes, found %v", len(rep.Ancestors), rep.Ancestors, rep.Visible, rep.Found)
				root := os.Geteuid() == 0 && user != "nobody"
				if ns || root {
					assert.Empty(t, rep.Found, "the cell read the key")
					return
				}
				require.GreaterOrEqual(t, len(rep.Ancestors), 2)
				for _, f := range rep.Found {
					assert.NotContains(t, f, "/proc/"+strconv.Itoa(rep.Ancestors[0])+"/", "the process that started the kernel is not dumpable")
				}
				assert.Contains(t, rep.Found, "/proc/"+strconv.Itoa(rep.Ancestors[1])+"/environ",
					"the documented limit: a non-root kernel without namespaces reads the shell's environment")
			})
		}
	}
}

func probeFromParent(t *testing.T, secret string, ns, asNobody bool) kerneltest.ProcReport {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	home := t.TempDir()
	if asNobody {
		home, exe = kerneltest.CopyForNobody(t, exe)
	}
	mode := "namespaces"
	if !ns {
		mode = "none"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `"$@"; exit $?`, "sh", exe, "-test.run=^TestLocalKernelCannotReadItsParents$")
	cmd.Dir = home
	cmd.Env = append(os.Environ(), parentEnv+"="+mode, "OPENAI_API_KEY="+secret, "HOME="+home)
	if asNobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	rep, err := kerneltest.ParseProcReport(stdout.String())
	require.NoError(t, err, "stderr: %s", stderr.String())
	return rep
}

// kernelParent is the process that starts the kernel: it runs the probe
// and prints its output, then exits.
func kernelParent(mode string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "kernel parent:", err)
		os.Exit(1)
	}
	cfg := kernel.LocalConfig{NoNamespaces: mode != "namespaces"}
	python, err := reachablePython(cfg)
	if err != nil {
		fail(err)
	}
	tr, err := kernel.NewLocalPython(python, true, cfg)
	if err != nil {
		fail(err)
	}
	k, err := kernel.Start(context.Background(), kernel.Python, tr, kernel.ClientOptions{})
	if err != nil {
		fail(err)
	}
	defer k.Close()
	res, err := k.Execute(context.Background(), kerneltest.ProcProbe(kernel.Python, os.Getenv("OPENAI_API_KEY")), kernel.ExecOptions{Timeout: time.Minute})
	if err != nil {
		fail(err)
	}
	if res.Status != kernel.StatusOK {
		fail(fmt.Errorf("probe: %s %+v", res.Stderr, res.Error))
	}
	fmt.Print(res.Stdout)
	_ = k.Close()
	os.Exit(0)
}

// TestPythonKilledOnHost: the host's out-of-memory killer ends a local
// kernel with SIGKILL, and nothing else says it did; the error names the
// likely cause, the host's memory, and the flags that give a kernel a
// limit of its own. (The cell sends the signal itself, so the kernel runs
// without namespaces: no signal from inside a PID namespace kills its
// first process.)
func TestPythonKilledOnHost(t *testing.T) {
	t.Parallel()
	cfg := kernel.LocalConfig{NoNamespaces: true}
	tr, err := kernel.NewLocalPython(pythonFor(t, cfg), true, cfg)
	require.NoError(t, err)
	k, err := kernel.Start(context.Background(), kernel.Python, tr, kernel.ClientOptions{})
	if k != nil {
		t.Cleanup(func() { _ = k.Close() })
	}
	require.NoError(t, err)
	_, err = k.Execute(context.Background(), "import os\nos.kill(os.getpid(), 9)", kernel.ExecOptions{})
	var dead *kernel.DeadError
	require.ErrorAs(t, err, &dead)
	assert.Equal(t, syscall.SIGKILL, dead.Exit.Signal)
	assert.True(t, dead.Exit.OnHost)
	assert.Positive(t, dead.Exit.MemLimit, "the host's memory")
	assert.Contains(t, err.Error(), "killed by SIGKILL (signal 9): unless a cell sent it, the host ran out of memory")
	assert.Contains(t, err.Error(), "--sandbox docker gives it a limit of its own, --memory")
}
