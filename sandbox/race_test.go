package sandbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestDockerStdoutComesBackInFreshKernels is kernel's test of the same
// name in the container: closing fd 1 or sys.stdout right after the start
// leaves the next cell's print working, in every fresh kernel. The driver
// that answered before IPython had loaded lost this output or died in
// about half of such kernels under load.
func TestDockerStdoutComesBackInFreshKernels(t *testing.T) {
	for _, noIPython := range []bool{false, true} {
		name := map[bool]string{false: "ipython", true: "stdlib"}[noIPython]
		t.Run(name, func(t *testing.T) {
			for range 3 {
				cfg := testConfig(t)
				cfg.NoIPython = noIPython
				k := startKernel(t, cfg)
				require.Contains(t, k.Info(), name)
				step := func(code, want string) {
					res := execCell(t, k, code, 10*time.Second)
					assert.Equal(t, kernel.StatusOK, res.Status, "%q: %+v", code, res.Error)
					assert.Equal(t, want, res.Stdout, "%q", code)
				}
				step("import os; os.close(1)", "")
				step("print('back')", "back\n")
				step("import sys; sys.stdout.close()", "")
				step("print('again')", "again\n")
				require.NoError(t, k.Close())
			}
		})
	}
}
