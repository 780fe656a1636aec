package kernel_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
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

// TestPythonBrokenIPythonFallsBackToStdlib: an IPython that is installed but
// fails to import leaves the session on the stdlib path, with the cells run
// before the failure in its history.
func TestPythonBrokenIPythonFallsBackToStdlib(t *testing.T) {
	python := kerneltest.FindPython(t)
	site, err := os.MkdirTemp("", "ctxcode-broken-ipython-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(site) })
	require.NoError(t, os.MkdirAll(filepath.Join(site, "IPython", "core"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(site, "IPython", "__init__.py"), []byte("raise ImportError('broken on purpose')\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(site, "IPython", "core", "release.py"), []byte("__version__ = '0.0.1'\n"), 0o644))
	require.NoError(t, os.Chmod(site, 0o755))
	for _, mode := range []string{"background", "hold"} {
		t.Run(mode, func(t *testing.T) {
			tr, err := kernel.NewLocalPython(python, false, kernel.LocalConfig{Env: []string{"PYTHONPATH=" + site, "CTXCODE_IPYTHON_START=" + mode, "CTXCODE_TRACE_EARLY=1"}})
			require.NoError(t, err)
			k := kerneltest.NewRawKernel(t, tr)
			assert.Contains(t, k.Do(t, map[string]any{"op": "ping"})["value"], "ipython 0.0.1")
			res := k.Exec(t, "x = 20\nx + 1", 0)
			assert.Equal(t, "21", res["value"])
			res = k.Exec(t, "In[1:], Out, _", 0) // needs IPython: it fails to load
			assert.Equal(t, "ok", res["status"], "%v", res["error"])
			assert.Contains(t, res["value"], "(['x = 20\\nx + 1', 'In[1:], Out, _'], {1: 21", "the early cell is in the stdlib shell's history")
			assert.Equal(t, float64(2), res["count"])
			res = k.Exec(t, "import IPython", 0)
			assert.Equal(t, "broken on purpose", res["error"].(map[string]any)["value"])
		})
	}
}

// TestPythonEarlyCellsTakeOnlyTheStandardLibrary: a file in the session's
// folder named like a standard module is the user's code, so a cell that
// imports it waits for IPython.
func TestPythonEarlyCellsTakeOnlyTheStandardLibrary(t *testing.T) {
	python := kerneltest.FindPython(t)
	if exec.Command(python, "-c", "import IPython").Run() != nil {
		testenv.SkipOrFail(t, "%s has no IPython (apt-get install python3-ipython)", python)
	}
	dir, err := os.MkdirTemp("", "ctxcode-shadow-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "graphlib.py"), []byte("SHADOW = True\n"), 0o644))
	tr, err := kernel.NewLocalPython(python, false, kernel.LocalConfig{Dir: dir, Env: []string{"CTXCODE_IPYTHON_START=hold", "CTXCODE_TRACE_EARLY=1"}})
	require.NoError(t, err)
	k := kerneltest.NewRawKernel(t, tr)
	res := k.Exec(t, "import statistics\nstatistics.median([3, 1, 2])", 0)
	assert.Equal(t, true, res["early"], "a standard module")
	assert.Equal(t, "2", res["value"])
	res = k.Exec(t, "import graphlib\ngraphlib.SHADOW", 0)
	assert.Equal(t, false, res["early"], "the session's own graphlib.py")
	assert.Equal(t, "True", res["value"])
}
