package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

// TestRunDirOutOfALocalKernelsReach: a local kernel (user nobody, when
// ctxcode is root; here without namespaces, so that it sees the host's
// folders as they are) cannot read the run directory, its log or its
// trajectories, even in a folder every user can enter, and even when the
// user made the run's folder open to all.
func TestRunDirOutOfALocalKernelsReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs local kernels as another user (nobody); as your user they read what you can, which bench refuses without --unsafe-local")
	}
	python := kerneltest.FindPython(t)
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		python = "/usr/bin/python3" // one nobody can reach without namespaces
	}
	open, err := os.MkdirTemp("", "ctxcode-open-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(open) })
	require.NoError(t, os.Chmod(open, 0o755))
	for _, made := range []bool{false, true} {
		dir := filepath.Join(open, "run-"+strconv.FormatBool(made))
		if made {
			require.NoError(t, os.Mkdir(dir, 0o777))
			require.NoError(t, os.Chmod(dir, 0o777))
		}
		l, _ := openDir(t, dir, dirSpec(), Continue)
		k := dirKey("s-t1-1")
		require.NoError(t, os.WriteFile(filepath.Join(dir, TrajectoryPath(k, 1)), []byte("{}\n"), trialsFilePerm))
		require.NoError(t, l.Append(dirTrial(k, ClassModel, 1)))

		tr, err := kernel.NewLocalPython(python, true, kernel.LocalConfig{NoNamespaces: true})
		require.NoError(t, err)
		kern, err := kernel.Start(context.Background(), kernel.Python, tr, kernel.ClientOptions{})
		if kern != nil {
			t.Cleanup(func() { _ = kern.Close() })
		}
		require.NoError(t, err)
		for _, p := range []string{filepath.Join(dir, TrialsFile), filepath.Join(dir, SpecFile), filepath.Join(dir, TrajectoryPath(k, 1))} {
			res, err := kern.Execute(context.Background(), "open("+strconv.Quote(p)+").read()", kernel.ExecOptions{Timeout: 10 * time.Second})
			require.NoError(t, err)
			require.NotNil(t, res.Error, "%s: the kernel read %s", p, res.Value)
			assert.Equal(t, "PermissionError", res.Error.Name, p)
		}
		res, err := kern.Execute(context.Background(), "import os\nos.listdir("+strconv.Quote(dir)+")", kernel.ExecOptions{Timeout: 10 * time.Second})
		require.NoError(t, err)
		require.NotNil(t, res.Error, "the kernel listed the run: %s", res.Value)
		assert.Equal(t, "PermissionError", res.Error.Name)
	}
}
