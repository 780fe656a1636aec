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
	python, err := kernel.FindPython(os.Getenv("CTXCODE_PYTHON"))
	if err != nil {
		if Strict() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	tr, err := kernel.NewLocalPython(python, false, kernel.LocalConfig{DataDir: dataDir})
	require.NoError(t, err)
	k, err := kernel.Start(context.Background(), kernel.Python, tr, kernel.ClientOptions{})
	if k != nil {
		t.Cleanup(func() { _ = k.Close() })
	}
	require.NoError(t, err)
	return k
}
