package kernel

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveGoEnv makes the test binary serve the Go kernel, standing in for
// `ctxcode kernel serve --lang go`, so `go test` needs no prior build.
const serveGoEnv = "CTXCODE_TEST_SERVE_GO_KERNEL"

func TestMain(m *testing.M) {
	if os.Getenv(serveGoEnv) == "1" {
		if err := ServeGoStdio(context.Background()); err != nil {
			os.Stderr.WriteString("go kernel: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startGoProcess starts the Go kernel as its own process through the client.
func startGoProcess(t testing.TB) *Client {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	tr, err := NewLocal(LocalConfig{Argv: []string{exe}, Env: []string{serveGoEnv + "=1"}})
	require.NoError(t, err)
	c, err := Start(context.Background(), Go, tr, ClientOptions{Grace: time.Second})
	if c != nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	require.NoError(t, err)
	require.Contains(t, c.Info(), "yaegi")
	return c
}

func TestGoProcessCells(t *testing.T) {
	k := startGoProcess(t)
	assert.Empty(t, runOK(t, k, "x := 41").Value)
	res := runOK(t, k, "x + 1")
	assert.Equal(t, "42", res.Value)
	assert.Equal(t, 2, res.Count)

	res = runOK(t, k, `import "fmt"
import "os"
fmt.Println("via fmt")
os.Stdout.WriteString("via os.Stdout\n")
fmt.Fprintln(os.Stderr, "via os.Stderr")`)
	assert.Equal(t, "via fmt\nvia os.Stdout\n", res.Stdout)
	assert.Equal(t, "via os.Stderr\n", res.Stderr)

	res = runOK(t, k, `ANSWER(map[string]int{"n": x + 1})
fmt.Println("not reached")`)
	assert.JSONEq(t, `{"n": 42}`, string(res.Answer))
	assert.Empty(t, res.Stdout)

	res = run(t, k, `import "os/exec"`)
	require.Equal(t, StatusError, res.Status)
	assert.Contains(t, res.Error.Value, `import "os/exec" is not available in the ctxcode Go kernel`)
}

func TestGoProcessLoopTimesOut(t *testing.T) {
	k := startGoProcess(t)
	runOK(t, k, "kept := 7")
	res, err := k.Execute(context.Background(), "for {}", ExecOptions{Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, StatusTimeout, res.Status)
	assert.Equal(t, "7", runOK(t, k, "kept").Value, "the namespace survives a soft timeout")
}

func TestGoProcessHardDeadline(t *testing.T) {
	k := startGoProcess(t)
	// A call into compiled code cannot be interrupted: the client kills the process.
	_, err := k.Execute(context.Background(), "import \"time\"\ntime.Sleep(time.Hour)", ExecOptions{Timeout: 200 * time.Millisecond})
	var dl *DeadlineError
	require.ErrorAs(t, err, &dl)
	require.NoError(t, k.Restart(context.Background()))
	assert.Equal(t, "2", runOK(t, k, "1 + 1").Value)
}

func TestGoProcessDeepRecursionKillsOnlyTheKernel(t *testing.T) {
	k := startGoProcess(t)
	runOK(t, k, "func f(n int) int { return f(n+1) + 1 }")
	_, err := k.Execute(context.Background(), "f(0)", ExecOptions{Timeout: 20 * time.Second})
	var dead *DeadError
	require.ErrorAs(t, err, &dead, "a stack overflow ends the kernel process")
	assert.Contains(t, dead.Exit.StderrTail, "stack overflow")
	require.NoError(t, k.Restart(context.Background()))
	assert.Equal(t, "2", runOK(t, k, "1 + 1").Value)
}

// BenchmarkGoCell is the round trip of `1+1` through the Go kernel process.
func BenchmarkGoCell(b *testing.B) {
	benchCells(b, startGoProcess(b))
}

// BenchmarkGoStart is Go kernel start to first result.
func BenchmarkGoStart(b *testing.B) {
	for b.Loop() {
		k := startGoProcess(b)
		_, err := k.Execute(context.Background(), "1+1", ExecOptions{})
		require.NoError(b, err)
		require.NoError(b, k.Close())
	}
}
