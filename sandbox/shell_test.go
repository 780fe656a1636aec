package sandbox

// The kernel's shell op (condition A's bash tool) in the container: the
// same sandbox as cells, network off, data read-only, and a timeout that
// kills the whole process group.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// runShell runs command in k and requires the kernel to answer.
func runShell(tb testing.TB, k *kernel.Client, command string, timeout time.Duration) kernel.ShellResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute) // a hang guard
	defer cancel()
	res, err := k.Shell(ctx, command, kernel.ShellOptions{Timeout: timeout})
	require.NoError(tb, err, "command %q", command)
	return res
}

func TestShellInContainer(t *testing.T) {
	for _, noIPython := range []bool{false, true} {
		t.Run(map[bool]string{false: "ipython", true: "stdlib"}[noIPython], func(t *testing.T) {
			dir := makeDataDir(t)
			before := hashTree(t, dir)
			cfg := testConfig(t)
			cfg.DataDir, cfg.NoIPython = dir, noIPython
			k := startKernel(t, cfg)

			t.Run("session folder", func(t *testing.T) {
				res := runShell(t, k, "pwd; cat data/notes.txt; wc -l < data/sub/nested.txt", 10*time.Second)
				assert.Equal(t, WorkDir+"\ndo not change me\n100\n", res.Output)
				assert.Equal(t, 0, res.ExitCode)
			})

			t.Run("network off", func(t *testing.T) {
				res := runShell(t, k, `python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), 2)"`, 10*time.Second)
				assert.NotEqual(t, 0, res.ExitCode, "the network was reachable: %q", res.Output)
				// Refused at once for want of a route (only lo exists), not
				// a connect that timed out: said by the error, not a clock.
				assert.Contains(t, res.Output, "Network is unreachable")
				assert.NotContains(t, res.Output, "timed out")
				assert.False(t, res.TimedOut)
			})

			t.Run("data read-only", func(t *testing.T) {
				for _, cmd := range []string{
					"touch data/new.txt",
					"echo x >> data/notes.txt",
					": > data/sales.csv",
					"rm data/notes.txt",
					"rm -r data/sub",
					"mv data/sales.csv data/moved.csv",
					"chmod 777 data/sales.csv",
					"mkdir data/newdir",
				} {
					res := runShell(t, k, cmd, 10*time.Second)
					assert.NotEqual(t, 0, res.ExitCode, "%q succeeded: %q", cmd, res.Output)
				}
				assert.Equal(t, before, hashTree(t, dir), "the data on the host is unchanged")
				res := runShell(t, k, "echo kept > /tmp/note && cat /tmp/note", 10*time.Second)
				assert.Equal(t, "kept\n", res.Output, "/tmp is the place to write")
			})

			t.Run("exit status", func(t *testing.T) {
				for cmd, want := range map[string]int{"true": 0, "exit 3": 3, "no-such-command": 127} {
					res := runShell(t, k, cmd, 10*time.Second)
					assert.Equal(t, want, res.ExitCode, "%q: %q", cmd, res.Output)
				}
				res := runShell(t, k, "echo out; echo err >&2; echo out2", 10*time.Second)
				assert.Equal(t, "out\nerr\nout2\n", res.Output, "one stream, in order")
			})

			t.Run("flood bounded", func(t *testing.T) {
				res := runShell(t, k, "yes | head -c 20000000", 30*time.Second)
				assert.Equal(t, 0, res.ExitCode)
				assert.Less(t, len(res.Output), 2<<20, "the output is capped")
				assert.Positive(t, res.DroppedBytes)
				assert.Equal(t, int64(20000000), int64(len(res.Output))-int64(len(kernel.DroppedLine(res.DroppedBytes))+1)+res.DroppedBytes,
					"head, tail and what was dropped make the whole stream")
			})

			t.Run("background child killed when the command ends", func(t *testing.T) {
				res := runShell(t, k, "sleep 60 & echo bg=$!", 10*time.Second)
				// Had the call waited for its 60 s child, its 10 s timeout would have ended it.
				assert.False(t, res.TimedOut, "the call does not wait for the child")
				assert.Equal(t, 0, res.ExitCode)
				m := regexp.MustCompile(`(?m)^bg=(\d+)$`).FindStringSubmatch(res.Output)
				require.NotNil(t, m, res.Output)
				check := fmt.Sprintf(`for i in 1 2 3 4 5 6 7 8 9 10; do
  [ -e /proc/%[1]s ] || { echo gone; exit 0; }
  set -- $(cat /proc/%[1]s/stat 2>/dev/null)
  [ "$3" = Z ] && [ "$4" != "$PPID" ] && { echo gone; exit 0; }
  sleep 0.1
done
echo alive`, m[1])
				assert.Equal(t, "gone\n", runShell(t, k, check, 10*time.Second).Output)
			})

			t.Run("timeout kills the group", func(t *testing.T) {
				cmd := `sleep 60 & echo bg=$!; sh -c 'trap "" TERM; echo pid=$$; sleep 60'`
				res := runShell(t, k, cmd, 500*time.Millisecond)
				assert.True(t, res.TimedOut)
				assert.Equal(t, "SIGKILL", res.Signal)
				for _, name := range []string{"bg", "pid"} {
					m := regexp.MustCompile(`(?m)^` + name + `=(\d+)$`).FindStringSubmatch(res.Output)
					require.NotNil(t, m, "no %s= in %q", name, res.Output)
					pid, err := strconv.Atoi(m[1])
					require.NoError(t, err)
					check := fmt.Sprintf(`for i in 1 2 3 4 5 6 7 8 9 10; do
  [ -e /proc/%[1]d ] || { echo gone; exit 0; }
  set -- $(cat /proc/%[1]d/stat 2>/dev/null)
  [ "$3" = Z ] && [ "$4" != "$PPID" ] && { echo gone; exit 0; }
  sleep 0.1
done
echo alive: $(cat /proc/%[1]d/stat)`, pid)
					assert.Equal(t, "gone\n", runShell(t, k, check, 10*time.Second).Output, "process %s=%d", name, pid)
				}
				assert.Equal(t, "2", execCell(t, k, "1 + 1", 10*time.Second).Value, "the kernel serves cells after a timed-out command")
			})
		})
	}
}
