// Package kerneltest starts real kernels for the tests of other packages.
// A test that needs a kernel this machine cannot start is skipped with the
// reason, except in CI (CI set, or CTXCODE_REQUIRE_DOCKER=1), where it fails.
package kerneltest

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
)

// Strict says whether a missing prerequisite fails the test instead of
// skipping it.
func Strict() bool { return testenv.Strict() }

// Python starts a local Python kernel ($CTXCODE_PYTHON, else python3) with
// dataDir as its data/ ("" for none), closed when the test ends.
func Python(t testing.TB, dataDir string) kernel.Kernel {
	t.Helper()
	return startPython(t, dataDir, false)
}

// PythonNoIPython is Python with the driver's standard-library path, even
// where IPython is importable.
func PythonNoIPython(t testing.TB, dataDir string) kernel.Kernel {
	t.Helper()
	return startPython(t, dataDir, true)
}

// FindPython is the interpreter Python runs; a test without one is skipped
// (failed in CI).
func FindPython(t testing.TB) string {
	t.Helper()
	python, err := kernel.FindPython(os.Getenv("CTXCODE_PYTHON"))
	if err != nil {
		testenv.SkipOrFail(t, "%v", err)
	}
	return python
}

func startPython(t testing.TB, dataDir string, noIPython bool) kernel.Kernel {
	t.Helper()
	python := FindPython(t)
	tr, err := kernel.NewLocalPython(python, noIPython, kernel.LocalConfig{DataDir: dataDir})
	require.NoError(t, err)
	return Start(t, kernel.Python, tr)
}

// Start starts a kernel of lang on tr, closed when the test ends.
func Start(t testing.TB, lang kernel.Language, tr kernel.Transport) kernel.Kernel {
	t.Helper()
	k, err := kernel.Start(context.Background(), lang, tr, kernel.ClientOptions{})
	if k != nil {
		t.Cleanup(func() { _ = k.Close() })
	}
	require.NoError(t, err)
	return k
}
