package kernel

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/gatetest"
)

// startedFIFO is a FIFO a cell writes a line to as it starts, and a
// function that blocks until it has: the event the test waits for.
func startedFIFO(t *testing.T) (path string, wait func()) {
	t.Helper()
	path = filepath.Join(gatetest.SharedDir(t), "started")
	require.NoError(t, syscall.Mkfifo(path, 0o666))
	require.NoError(t, os.Chmod(path, 0o666))
	return path, func() {
		b, err := os.ReadFile(path) // blocks until the cell opened it, and closed it
		require.NoError(t, err)
		require.Equal(t, "in\n", string(b))
	}
}

func TestPythonInterruptKeepsNamespace(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			runOK(t, k, "kept = 'still here'")
			require.NoError(t, k.Interrupt(), "between cells an interrupt does nothing")
			// A late interrupt, sent for a cell that had ended, reaches the
			// driver between cells (or during the next cell): it stops
			// nothing, since the next request says it was sent before it.
			k.interrupts.Add(1)
			require.NoError(t, k.proc.conn.(Interrupter).Interrupt())
			res, err := k.Execute(context.Background(), "import time\nfor _ in range(20): time.sleep(0.01)\nkept", ExecOptions{Timeout: time.Minute})
			require.NoError(t, err)
			assert.Equal(t, StatusOK, res.Status, "%+v", res.Error)
			assert.Equal(t, "'still here'", res.Value)

			path, wait := startedFIFO(t)
			done := make(chan Result, 1)
			go func() {
				res, err := k.Execute(context.Background(), "with open("+strconv.Quote(path)+", 'w') as f: f.write('in\\n')\n"+
					"import time\npartial = 1\ntime.sleep(120)\npartial = 2", ExecOptions{Timeout: 5 * time.Minute})
				assert.NoError(t, err)
				done <- res
			}()
			wait()
			require.NoError(t, k.Interrupt())
			res = <-done
			assert.Equal(t, StatusError, res.Status)
			require.NotNil(t, res.Error)
			assert.Equal(t, "CellInterrupted", res.Error.Name)
			assert.Contains(t, res.Error.Value, "namespace is kept")
			assert.Equal(t, "'still here'", runOK(t, k, "kept").Value)
			assert.Equal(t, "1", runOK(t, k, "partial").Value, "what the cell bound before the interrupt stays")
		})
	}
}

func TestGoKernelHasNoInterrupt(t *testing.T) {
	c := &Client{lang: Go}
	assert.ErrorIs(t, c.Interrupt(), ErrNoInterrupt)
}
