package kernel_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

// TestPythonEarlyCellsMatchIPython: the cells a kernel runs before IPython
// has loaded give what IPython gives, and leave IPython's history and
// namespace as IPython would (kerneltest.EarlyParity), with this machine's
// IPython. sandbox.TestEarlyCellsMatchIPythonInDocker does the same with the
// kernel image's.
func TestPythonEarlyCellsMatchIPython(t *testing.T) {
	python := kerneltest.FindPython(t)
	if exec.Command(python, "-c", "import IPython").Run() != nil {
		testenv.SkipOrFail(t, "%s has no IPython (apt-get install python3-ipython)", python)
	}
	// One folder for the three kernels (cells print it), which the kernel's
	// user (nobody, when the tests run as root) can write.
	dir, err := os.MkdirTemp("", "ctxcode-early-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	kerneltest.EarlyParity(t, func(t *testing.T, env []string) *kerneltest.RawKernel {
		tr, err := kernel.NewLocalPython(python, false, kernel.LocalConfig{Env: env, Dir: dir})
		require.NoError(t, err)
		return kerneltest.NewRawKernel(t, tr)
	})
}
