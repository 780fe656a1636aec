package sandbox

// The adversarial battery of issue 3: code that tries to reach the network,
// change the data, exhaust memory, processes or disk, read the host's
// secrets, gain privileges, or kill its kernel, run in the real engine.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// makeDataDir writes a small data folder, readable by the kernel's user as
// a user's own folder would be (t.TempDir is private to its owner).
func makeDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"sales.csv":      "region,amount\nnorth,10\nsouth,32\n",
		"notes.txt":      "do not change me\n",
		"sub/nested.txt": strings.Repeat("nested data\n", 100),
	}
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "sub"), 0o755))
	return dir
}

// hashTree maps every file under dir (slash-separated relative path) to its
// sha256.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		sum := sha256.Sum256(b)
		sums[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return err
	})
	require.NoError(t, err)
	return sums
}

// dataHashCell answers what hashTree says of the folder, for data/ as the
// kernel sees it.
const dataHashCell = `import hashlib, os
sums = {}
for root, dirs, files in os.walk('data'):
    for f in files:
        p = os.path.join(root, f)
        sums[os.path.relpath(p, 'data')] = hashlib.sha256(open(p, 'rb').read()).hexdigest()
ANSWER(sums)`

// errnoCell wraps statements so that the cell answers the errno name of the
// OSError they raise, or "no error".
func errnoCell(body string) string {
	var b strings.Builder
	b.WriteString("import errno, os, shutil\ntry:\n")
	for _, line := range strings.Split(body, "\n") {
		b.WriteString("    " + line + "\n")
	}
	b.WriteString("    _r = 'no error'\nexcept OSError as e:\n    _r = errno.errorcode.get(e.errno, str(e.errno))\nANSWER(_r)\n")
	return b.String()
}

func TestBatteryNetwork(t *testing.T) {
	k := startKernel(t, testConfig(t))
	for _, tc := range []struct {
		name, code string
		errNames   []string
	}{
		{"tcp connect", "import socket\nsocket.create_connection(('1.1.1.1', 80), 3)", []string{"OSError"}},
		{"dns getaddrinfo", "import socket\nsocket.getaddrinfo('example.com', 443)", []string{"gaierror"}},
		{"dns gethostbyname", "import socket\nsocket.gethostbyname('example.com')", []string{"gaierror"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := execCell(t, k, tc.code, 10*time.Second)
			require.Equal(t, kernel.StatusError, res.Status, "the network was reachable: value %q", res.Value)
			require.NotNil(t, res.Error)
			assert.Contains(t, tc.errNames, res.Error.Name, "%s: %s", res.Error.Name, res.Error.Value)
			// Refused at once (no route, no resolver), not a timeout: the
			// error says which, where a clock would break on a busy machine.
			assert.NotEqual(t, "TimeoutError", res.Error.Name)
			assert.NotContains(t, res.Error.Value, "timed out")
		})
	}
	t.Run("loopback only", func(t *testing.T) {
		var names []string
		answer(t, k, "import socket\nANSWER([n for _, n in socket.if_nameindex()])", &names)
		assert.Equal(t, []string{"lo"}, names)
	})
}

func TestBatteryData(t *testing.T) {
	for _, tc := range []struct {
		name     string
		copyData bool
	}{
		{"bind mount", false},
		{"copied volume", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := makeDataDir(t)
			before := hashTree(t, dir)
			cfg := testConfig(t)
			cfg.DataDir, cfg.CopyData = dir, tc.copyData
			k := startKernel(t, cfg)

			var seen map[string]string
			answer(t, k, dataHashCell, &seen)
			assert.Equal(t, before, seen, "the kernel should read the data as it is on the host")

			for _, op := range []struct{ name, code string }{
				{"create", "open('data/new.txt', 'w').write('x')"},
				{"append", "open('data/notes.txt', 'a').write('x')"},
				{"truncate", "open('data/sales.csv', 'w').close()"},
				{"rename file", "os.rename('data/notes.txt', 'data/renamed.txt')"},
				{"rename folder", "os.rename('data/sub', 'data/sub2')"},
				{"delete file", "os.remove('data/sub/nested.txt')"},
				{"delete tree", "shutil.rmtree('data/sub')"},
				{"mkdir", "os.mkdir('data/newdir')"},
				{"chmod", "os.chmod('data/sales.csv', 0o777)"},
				{"symlink", "os.symlink('/etc/passwd', 'data/link')"},
				{"replace data", "os.rename('data', 'olddata')"},
			} {
				t.Run(op.name, func(t *testing.T) {
					var errName string
					answer(t, k, errnoCell(op.code), &errName)
					assert.Contains(t, []string{"EROFS", "EACCES", "EPERM", "EBUSY"}, errName, "%s under data/ was allowed", op.name)
				})
			}
			require.NoError(t, k.Close())
			assert.Equal(t, before, hashTree(t, dir), "the data changed")
		})
	}
}

func TestBatteryMemory(t *testing.T) {
	t.Run("huge allocation", func(t *testing.T) {
		k := startKernel(t, testConfig(t))
		res := execCell(t, k, "x = bytearray(10**11)", 30*time.Second)
		require.Equal(t, kernel.StatusError, res.Status, "100 GB were allocated")
		require.NotNil(t, res.Error)
		assert.Equal(t, "MemoryError", res.Error.Name)
		requireWorks(t, k)
	})
	t.Run("endless growth", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Memory = 256 << 20
		k := startKernel(t, cfg)
		// 4 GB in 10 MB blocks, each written to (so really resident): far
		// over the limit, and bounded should the limit not hold.
		code := "blocks = []\nfor _ in range(400):\n    blocks.append(b'x' * (10 << 20))\nANSWER(len(blocks))"
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
		defer cancel()
		res, err := k.Execute(ctx, code, kernel.ExecOptions{Timeout: time.Minute})
		if err == nil {
			require.Equal(t, kernel.StatusError, res.Status, "4 GB fit in a 256 MiB kernel: answer %s", res.Answer)
			require.NotNil(t, res.Error)
			assert.Equal(t, "MemoryError", res.Error.Name)
		} else {
			var de *kernel.DeadError
			require.ErrorAs(t, err, &de)
			assert.True(t, de.Exit.OOMKilled, "exit: %+v", de.Exit)
			assert.Equal(t, int64(256<<20), de.Exit.MemLimit)
			assert.Contains(t, err.Error(), "kernel killed: out of memory, at its limit of 256 MiB (give it more with --memory, e.g. --memory 512m)")
		}
		restart(t, k)
	})
}

// hostProcessesWith lists the host's processes whose command line holds s.
func hostProcessesWith(s string) []string {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

func TestBatteryProcesses(t *testing.T) {
	t.Run("fork bomb", func(t *testing.T) {
		cli := newDockerClient(t)
		cfg := testConfig(t)
		removeSessionOnCleanup(t, cli, cfg.Session)
		k := startKernel(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
		defer cancel()
		res, err := k.Execute(ctx, "import os\nwhile True:\n    os.fork()", kernel.ExecOptions{Timeout: 3 * time.Second})
		t.Logf("fork bomb: status %q error %+v; Go error %v", res.Status, res.Error, err)
		require.False(t, errors.Is(err, context.DeadlineExceeded), "the harness hung: %v", err)
		require.NoError(t, exec.Command("true").Run(), "the host cannot start a process")

		res, err = k.Execute(ctx, "1+1", kernel.ExecOptions{Timeout: 10 * time.Second})
		if err != nil || res.Status != kernel.StatusOK {
			t.Logf("after the fork bomb: status %q error %+v; Go error %v: restarting", res.Status, res.Error, err)
			restart(t, k)
		} else {
			assert.Equal(t, "2", res.Value)
		}
		assert.Len(t, describe(sessionContainers(t, cli, cfg.Session)), 1, "the container was replaced, not added to")
	})

	t.Run("new session children die with the container", func(t *testing.T) {
		const marker = "1234.5"
		require.Empty(t, hostProcessesWith(marker), "a process with %s in its command line is running already", marker)
		k := startKernel(t, testConfig(t))
		var pid int
		answer(t, k, "import subprocess\np = subprocess.Popen(['sleep', '"+marker+"'], start_new_session=True)\nANSWER(p.pid)", &pid)
		require.NotZero(t, pid)
		if !assert.Eventually(t, func() bool { return len(hostProcessesWith(marker)) > 0 }, 10*time.Second, 50*time.Millisecond) {
			skipOrFail(t, "the container's processes are not visible in this host's /proc (is the daemon remote?)")
		}
		require.NoError(t, k.Close())
		require.Eventually(t, func() bool { return len(hostProcessesWith(marker)) == 0 }, 15*time.Second, 100*time.Millisecond,
			"a child of the kernel outlived its container: %v", hostProcessesWith(marker))
	})
}

func TestBatteryDisk(t *testing.T) {
	k := startKernel(t, testConfig(t))
	t.Run("tmp fills up", func(t *testing.T) {
		var errName string
		answer(t, k, errnoCell(`try:
    with open('/tmp/fill', 'wb') as f:
        chunk = b'\0' * (1 << 20)
        for _ in range(10 * 1024):
            f.write(chunk)
finally:
    if os.path.exists('/tmp/fill'):
        os.remove('/tmp/fill')`), &errName)
		assert.Equal(t, "ENOSPC", errName, "10 GB were written to /tmp")
	})
	for _, path := range []string{"/ctxcode-probe", "/session/probe", "/etc/probe", "/usr/lib/probe"} {
		t.Run("write "+path, func(t *testing.T) {
			var errName string
			answer(t, k, errnoCell("open('"+path+"', 'w').write('x')"), &errName)
			assert.Equal(t, "EROFS", errName)
		})
	}
	requireWorks(t, k)
}

func TestBatterySecrets(t *testing.T) {
	const key = "CTXCODE_TEST_MARKER_SECRET"
	value := "marker-" + NewSessionID()
	t.Setenv(key, value)
	k := startKernel(t, testConfig(t))
	var got struct {
		Environ map[string]string `json:"environ"`
		Proc1   *string           `json:"proc1"`
	}
	answer(t, k, `import os
try:
    proc1 = open('/proc/1/environ', 'rb').read().decode('latin-1')
except OSError:
    proc1 = None
ANSWER({'environ': dict(os.environ), 'proc1': proc1})`, &got)
	require.NotEmpty(t, got.Environ)
	assert.NotContains(t, got.Environ, key)
	for k, v := range got.Environ {
		assert.NotContains(t, v, value, "the host's marker is in $%s", k)
	}
	if got.Proc1 != nil {
		assert.NotContains(t, *got.Proc1, key)
		assert.NotContains(t, *got.Proc1, value)
	}
	// No other host variable either, except the ones the sandbox sets itself.
	own := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TERM": true, "HOSTNAME": true,
		"IPYTHONDIR": true, "MPLCONFIGDIR": true, "MPLBACKEND": true}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !own[name] {
			assert.NotContains(t, got.Environ, name, "the host's $%s reached the kernel", name)
		}
	}
}

func TestBatteryPrivilege(t *testing.T) {
	k := startKernel(t, testConfig(t))
	for _, tc := range []struct{ name, code string }{
		{"setuid", "import os\nos.setuid(0)"},
		{"setgid", "import os\nos.setgid(0)"},
		{"chroot", "import os\nos.chroot('/tmp')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := execCell(t, k, tc.code, 10*time.Second)
			require.Equal(t, kernel.StatusError, res.Status, "%s succeeded", tc.name)
			require.NotNil(t, res.Error)
			assert.Equal(t, "PermissionError", res.Error.Name)
		})
	}
	t.Run("identity", func(t *testing.T) {
		var got struct {
			UID, GID int
			Status   string
		}
		answer(t, k, "import os\nANSWER({'UID': os.getuid(), 'GID': os.getgid(), 'Status': open('/proc/self/status').read()})", &got)
		assert.Equal(t, 65534, got.UID)
		assert.Equal(t, 65534, got.GID)
		assert.Regexp(t, `(?m)^CapEff:\s+0+$`, got.Status, "capabilities were not dropped")
		assert.Regexp(t, `(?m)^CapBnd:\s+0+$`, got.Status, "the bounding set still holds capabilities")
		assert.Regexp(t, `(?m)^NoNewPrivs:\s+1$`, got.Status)
	})
}

func TestBatteryExit(t *testing.T) {
	cli := newDockerClient(t)
	cfg := testConfig(t)
	removeSessionOnCleanup(t, cli, cfg.Session)
	k := startKernel(t, cfg)
	for _, tc := range []struct {
		name, code string
		check      func(t *testing.T, e kernel.Exit)
	}{
		{"os._exit(1)", "import os\nos._exit(1)", func(t *testing.T, e kernel.Exit) {
			assert.Equal(t, 1, e.Code)
			assert.False(t, e.OOMKilled)
		}},
		{"SIGKILL itself", "import os\nos.kill(os.getpid(), 9)", func(t *testing.T, e kernel.Exit) {
			assert.Equal(t, 137, e.Code)
			assert.Equal(t, syscall.SIGKILL, e.Signal)
			assert.Contains(t, e.String(), "killed by SIGKILL (signal 9")
			assert.False(t, e.OOMKilled)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			_, err := k.Execute(ctx, tc.code, kernel.ExecOptions{Timeout: 10 * time.Second})
			var de *kernel.DeadError
			require.ErrorAs(t, err, &de)
			tc.check(t, de.Exit)
			_, err = k.Execute(ctx, "1+1", kernel.ExecOptions{})
			assert.Error(t, err, "a dead kernel must not look alive")
			restart(t, k)
			assert.Len(t, describe(sessionContainers(t, cli, cfg.Session)), 1, "Restart should replace the container")
		})
	}
}

// TestDataPrivateFilesReadable: the kernel reads a data file its user can
// read on the host, whatever its mode, by either way the data gets in.
func TestDataPrivateFilesReadable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		copyData bool
	}{
		{"bind mount", false},
		{"copied volume", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir() // 0700, as a private folder is
			require.NoError(t, os.WriteFile(filepath.Join(dir, "private.csv"), []byte("a,b\n1,2\n"), 0o600))
			cfg := testConfig(t)
			cfg.DataDir, cfg.CopyData = dir, tc.copyData
			k := startKernel(t, cfg)
			res := execCell(t, k, "open('data/private.csv').read()", 10*time.Second)
			require.Equal(t, kernel.StatusOK, res.Status, "the kernel cannot read the user's data: %+v", res.Error)
			assert.Equal(t, `'a,b\n1,2\n'`, res.Value)
		})
	}
}
