package sandbox

// The kernel battery over the Kubernetes stream code: Kube's Pods run in a
// kubetest cluster whose kubelet runs each container in Docker, from the
// Pod's spec, and whose API server bridges every attach (WebSocket v5) to
// docker attach. The driver, the image, the protocol, the half-close and
// the data's init container are all real; only the cluster is a stand-in.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/kubetest"
	"github.com/ctxcode/ctxcode/kernel"
)

// startKubeKernel starts a Python kernel of cfg in a kubetest cluster on
// Docker; the test's cleanup closes it.
func startKubeKernel(t *testing.T, cfg Config) (*kubetest.Cluster, *kernel.Client) {
	t.Helper()
	cli := newDockerClient(t)
	if cfg.Session == "" {
		cfg.Session = testSession(t)
	}
	cl := kubetest.Start(t, &kubetest.Docker{Cli: cli})
	tr, err := NewKubePython(Cluster{Client: cl.Client, REST: cl.REST, Namespace: kubetest.Namespace}, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
	t.Cleanup(func() {
		if k != nil {
			assert.NoError(t, k.Close())
		}
	})
	require.NoError(t, err, "start a kernel in a pod")
	return cl, k
}

func TestKubeBattery(t *testing.T) {
	dir := makeDataDir(t)
	before := hashTree(t, dir)
	cfg := testConfig(t)
	cfg.DataDir = dir
	cfg.NoIPython = true // faster to start; the IPython path is Docker's battery's
	cl, k := startKubeKernel(t, cfg)
	kubeBattery(t, k, before, cl.Pods)
	assert.Equal(t, before, hashTree(t, dir), "the data changed")
}

// kubeBattery is the kernel battery of a kernel in a Pod of a cluster whose
// Pods pods counts: k's data folder held what before says. It ends with k
// closed.
func kubeBattery(t *testing.T, k *kernel.Client, before map[string]string, pods func(testing.TB) int) {
	t.Run("values and state", func(t *testing.T) {
		requireWorks(t, k)
		execCell(t, k, "x = 40", 30*time.Second)
		res := execCell(t, k, "print('hi'); x + 2", 30*time.Second)
		assert.Equal(t, "hi\n", res.Stdout)
		assert.Equal(t, "42", res.Value)
	})
	t.Run("errors", func(t *testing.T) {
		res := execCell(t, k, "1/0", 30*time.Second)
		assert.Equal(t, kernel.StatusError, res.Status)
		require.NotNil(t, res.Error)
		assert.Equal(t, "ZeroDivisionError", res.Error.Name)
	})
	t.Run("timeout keeps the namespace", func(t *testing.T) {
		res := execCell(t, k, "y = 7\nwhile True: pass", 500*time.Millisecond)
		assert.Equal(t, kernel.StatusTimeout, res.Status)
		assert.Equal(t, "7", execCell(t, k, "y", 30*time.Second).Value)
	})
	t.Run("big output", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		res, err := k.Execute(ctx, "print('x' * (3 << 20))", kernel.ExecOptions{MaxOutputBytes: 4 << 20})
		require.NoError(t, err)
		assert.Equal(t, 3<<20+1, len(res.Stdout), "3 MiB through the attach stream, whole")
		res, err = k.Execute(ctx, "print('y' * (3 << 20))", kernel.ExecOptions{MaxOutputBytes: 1 << 16})
		require.NoError(t, err)
		assert.Positive(t, res.DroppedBytes)
	})
	t.Run("hardened", func(t *testing.T) {
		var got map[string]any
		answer(t, k, `import os
def writes(p):
    try:
        open(p, 'w').write('x'); return 'ok'
    except OSError as e:
        return type(e).__name__ + ':' + str(e.errno)
ANSWER({'uid': os.getuid(), 'gid': os.getgid(), 'root': writes('/etc/x'), 'tmp': writes('/tmp/x'),
        'caps': [l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1],
        'nnp': [l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0].split()[1],
        'env': sorted(os.environ)})`, &got)
		assert.EqualValues(t, 65534, got["uid"])
		assert.EqualValues(t, 65534, got["gid"])
		assert.Equal(t, "OSError:30", got["root"], "the root is read-only (EROFS)")
		assert.Equal(t, "ok", got["tmp"])
		assert.Equal(t, "0000000000000000", got["caps"])
		assert.Equal(t, "1", got["nnp"])
		assert.NotContains(t, got["env"], "KUBERNETES_SERVICE_HOST")
	})
	t.Run("data read-only", func(t *testing.T) {
		var seen map[string]string
		answer(t, k, dataHashCell, &seen)
		assert.Equal(t, before, seen, "the kernel reads the data as it is on the host")
		for _, code := range []string{
			"open('data/new.txt', 'w').write('x')",
			"open('data/notes.txt', 'a').write('x')",
			"os.remove('data/sub/nested.txt')",
			"os.chmod('data/sales.csv', 0o777)",
		} {
			var errName string
			answer(t, k, errnoCell(code), &errName)
			assert.Contains(t, []string{"EROFS", "EACCES", "EPERM"}, errName, "%s was allowed", code)
		}
	})
	t.Run("shell", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
		defer cancel()
		res, err := k.Shell(ctx, "ls data | sort", kernel.ShellOptions{})
		require.NoError(t, err)
		assert.Equal(t, "notes.txt\nsales.csv\nsub\n", res.Output)
	})
	t.Run("death and restart", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
		defer cancel()
		_, err := k.Execute(ctx, "import sys; sys.stderr.write('going\\n'); sys.stderr.flush()\nimport os; os._exit(3)", kernel.ExecOptions{})
		var de *kernel.DeadError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 3, de.Exit.Code)
		assert.Equal(t, "exit 3", kernel.Death(err))
		require.NoError(t, k.Restart(ctx))
		requireWorks(t, k)
		assert.Equal(t, 1, pods(t), "the dead kernel's pod is deleted")
	})
	t.Run("close is gentle and leaves nothing", func(t *testing.T) {
		require.NoError(t, k.Close())
		assert.Equal(t, 0, pods(t))
		// The containers go with the kubelet, after the Pod (kubetest's
		// TestMain fails on any Docker container left).
	})
}
