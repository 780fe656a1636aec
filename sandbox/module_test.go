package sandbox

import (
	"context"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestHasModule: the kernel image's recipe answers without a kernel; this
// host's interpreter is asked, and its answer is what it can import.
func TestHasModule(t *testing.T) {
	for _, m := range []string{"pandas", "scipy", "sklearn", "statsmodels", "matplotlib"} {
		ok, err := HasModule(context.Background(), OpenOptions{Kind: KindDocker}, m)
		require.NoError(t, err)
		assert.True(t, ok, "the kernel image has %s", m)
	}
	ok, err := HasModule(context.Background(), OpenOptions{Kind: KindDocker}, "no_such_module")
	require.NoError(t, err)
	assert.False(t, ok)

	python, err := kernel.FindPython("")
	if err != nil {
		t.Skip("no python3 on this host")
	}
	for _, m := range []string{"json", "pandas", "no_such_module"} {
		want := exec.Command(python, "-c", "import "+m).Run() == nil
		got, err := HasModule(context.Background(), OpenOptions{Kind: KindLocal, Python: python}, m)
		require.NoError(t, err)
		assert.Equal(t, want, got, m)
	}
}
