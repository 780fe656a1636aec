package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

// TestEarlyCellsMatchIPythonInDocker: kerneltest.EarlyParity with the
// kernel image's IPython, in the hardened container: the cells a kernel runs
// before IPython has loaded give what IPython gives and leave the same
// history and namespace behind.
func TestEarlyCellsMatchIPythonInDocker(t *testing.T) {
	cli := newDockerClient(t)
	kerneltest.EarlyParity(t, func(t *testing.T, env []string) *kerneltest.RawKernel {
		cfg := testConfig(t)
		cfg.Env = env
		removeSessionOnCleanup(t, cli, cfg.Session)
		tr, err := NewPython(cli, cfg)
		require.NoError(t, err)
		return kerneltest.NewRawKernel(t, tr)
	})
}
