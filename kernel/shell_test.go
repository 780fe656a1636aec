package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shell runs command in k with opts (a zero Timeout means 10s) and
// requires the kernel to answer; the test's own guard is a minute more.
func shell(t testing.TB, k *Client, command string, opts ShellOptions) ShellResult {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout+time.Minute)
	defer cancel()
	res, err := k.Shell(ctx, command, opts)
	require.NoError(t, err, "command %q", command)
	return res
}

// goneCheck is a command that prints "gone" once process pid has ended
// within a second, else "alive" and its state. A zombie is alive while
// the driver is its parent (where the driver is pid 1 of the kernel's PID
// namespace, orphans are its to reap); another reaper's zombie is gone.
func goneCheck(pid int) string {
	return fmt.Sprintf(`for i in 1 2 3 4 5 6 7 8 9 10; do
  [ -e /proc/%[1]d ] || { echo gone; exit 0; }
  set -- $(cat /proc/%[1]d/stat 2>/dev/null)
  [ "$3" = Z ] && [ "$4" != "$PPID" ] && { echo gone; exit 0; }
  sleep 0.1
done
echo alive: $(cat /proc/%[1]d/stat)`, pid)
}

var pidLine = regexp.MustCompile(`(?m)^pid=(\d+)$`)

// pidIn is the number of the line pid=N in output.
func pidIn(t testing.TB, output string) int {
	t.Helper()
	m := pidLine.FindStringSubmatch(output)
	require.NotNil(t, m, "no pid= line in %q", output)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

func TestShellExitStatus(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			for _, tc := range []struct {
				name, command string
				code          int
				signal        string
				output        string // a part of the output
			}{
				{name: "ok", command: "echo hi", code: 0, output: "hi\n"},
				{name: "exit 3", command: "echo before; exit 3", code: 3, output: "before\n"},
				{name: "not found", command: "no-such-command-ctxcode", code: 127, output: "not found"},
				{name: "false in a pipeline", command: "true | false", code: 1},
				{name: "killed by a signal", command: "kill -KILL $$", code: -1, signal: "SIGKILL"},
				{name: "empty", command: "", code: 0},
			} {
				t.Run(tc.name, func(t *testing.T) {
					res := shell(t, k, tc.command, ShellOptions{})
					assert.Equal(t, tc.code, res.ExitCode)
					assert.Equal(t, tc.signal, res.Signal)
					assert.False(t, res.TimedOut)
					assert.Contains(t, res.Output, tc.output)
					assert.Zero(t, res.DroppedBytes)
				})
			}
		})
	}
}

func TestShellOneStreamInOrder(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			res := shell(t, k, "echo 1; echo 2 >&2; echo 3; echo 4 >&2; ls /no/such/path-ctxcode; echo 6", ShellOptions{})
			lines := strings.Split(strings.TrimSuffix(res.Output, "\n"), "\n")
			require.Len(t, lines, 6, "%q", res.Output)
			assert.Equal(t, []string{"1", "2", "3", "4"}, lines[:4])
			assert.Contains(t, lines[4], "/no/such/path-ctxcode")
			assert.Equal(t, "6", lines[5])
			assert.Equal(t, 0, res.ExitCode)

			// A child process writing to both, unbuffered, interleaved.
			res = shell(t, k, `python3 -u -c "import sys
for i in range(3):
    print('out', i); print('err', i, file=sys.stderr)"`, ShellOptions{})
			assert.Equal(t, "out 0\nerr 0\nout 1\nerr 1\nout 2\nerr 2\n", res.Output)
		})
	}
}

func TestShellSessionFolder(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(data, "tasks.jsonl"), []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644))
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{DataDir: data})
			cwd := runOK(t, k, "import os\nos.getcwd()").Value
			res := shell(t, k, "pwd", ShellOptions{})
			assert.Equal(t, strings.Trim(cwd, "'")+"\n", res.Output, "the command runs in the session folder")

			res = shell(t, k, "wc -l data/tasks.jsonl; ls data", ShellOptions{})
			assert.Equal(t, "2 data/tasks.jsonl\ntasks.jsonl\n", res.Output)

			res = shell(t, k, "touch data/new; echo x >> data/tasks.jsonl; rm data/tasks.jsonl; echo status=$?", ShellOptions{})
			assert.Contains(t, res.Output, "status=1", "data/ is read-only: %q", res.Output)
			res = shell(t, k, "ls data; cat data/tasks.jsonl", ShellOptions{})
			assert.Equal(t, "tasks.jsonl\n{\"id\":1}\n{\"id\":2}\n", res.Output)

			res = shell(t, k, "echo kept > note.txt && cat note.txt", ShellOptions{})
			assert.Equal(t, "kept\n", res.Output, "the session folder itself is writable")

			// A cell that moves the interpreter elsewhere does not move commands.
			runOK(t, k, "os.chdir('/')")
			res = shell(t, k, "pwd", ShellOptions{})
			assert.Equal(t, strings.Trim(cwd, "'")+"\n", res.Output)
		})
	}
}

func TestShellTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			// The inner shell ignores SIGTERM; its sleep is a second member of the group.
			cmd := `sh -c 'trap "" TERM; echo pid=$$; sleep 60'`
			start := time.Now()
			res := shell(t, k, cmd, ShellOptions{Timeout: 500 * time.Millisecond})
			took := time.Since(start)
			assert.True(t, res.TimedOut)
			assert.Equal(t, -1, res.ExitCode)
			assert.Equal(t, "SIGKILL", res.Signal)
			assert.Less(t, took, 2*time.Second, "the call ends at the timeout")
			assert.GreaterOrEqual(t, res.Elapsed, 500*time.Millisecond)
			pid := pidIn(t, res.Output)
			assert.Equal(t, "gone\n", shell(t, k, goneCheck(pid), ShellOptions{}).Output,
				"the child that ignores SIGTERM died with its group")

			// A flood that runs past its timeout is bounded too.
			res = shell(t, k, "yes", ShellOptions{Timeout: 300 * time.Millisecond, MaxOutputBytes: 1000})
			assert.True(t, res.TimedOut)
			assert.Positive(t, res.DroppedBytes)
			assert.Less(t, len(res.Output), 1100)

			assert.Equal(t, "2", runOK(t, k, "1 + 1").Value, "the kernel serves cells after a timed-out command")
		})
	}
}

func TestShellFloodBounded(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			const total, cap = 50_000_000, 1 << 16
			res := shell(t, k, "echo FIRST; yes | head -c 50000000; echo LAST", ShellOptions{MaxOutputBytes: cap})
			assert.Equal(t, 0, res.ExitCode)
			assert.True(t, strings.HasPrefix(res.Output, "FIRST\ny\ny\n"), "the head is kept")
			assert.True(t, strings.HasSuffix(res.Output, "y\ny\nLAST\n"), "the tail is kept")
			marker := DroppedLine(res.DroppedBytes) + "\n"
			assert.Contains(t, res.Output, "\n"+marker, "the cut is said on a line of its own")
			assert.Equal(t, res.DroppedBytes, DroppedIn(res.Output))
			assert.LessOrEqual(t, len(res.Output)-len(marker), cap)
			assert.Equal(t, int64(len("FIRST\n")+total+len("LAST\n")), int64(len(res.Output)-len(marker))+res.DroppedBytes,
				"head + tail + dropped is the whole stream")
		})
	}
}

func TestShellBackgroundProcess(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			for _, tc := range []struct{ name, command string }{
				{"holding the pipe", "sleep 60 & echo pid=$!"},
				{"output elsewhere", "sleep 60 >/dev/null 2>&1 & echo pid=$!"},
				{"a subshell", "(sleep 60; echo never) & echo pid=$!"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					res := shell(t, k, tc.command, ShellOptions{Timeout: 20 * time.Second})
					// Had the call waited for its 60 s child, its 20 s timeout would have ended it.
					assert.False(t, res.TimedOut, "the call ends with the command, not its child")
					assert.Equal(t, 0, res.ExitCode)
					assert.NotContains(t, res.Output, "never")
					pid := pidIn(t, res.Output)
					assert.Equal(t, "gone\n", shell(t, k, goneCheck(pid), ShellOptions{}).Output,
						"the background child died with the command's group")
				})
			}
		})
	}
}

func TestShellLeavesNamespace(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			assert.Equal(t, 1, runOK(t, k, "x = 41").Count)
			res := shell(t, k, `x=5; echo $x; python3 -c "x = 7; print(x)"`, ShellOptions{})
			assert.Equal(t, "5\n7\n", res.Output)
			shell(t, k, "exit 9", ShellOptions{})
			shell(t, k, "sleep 5", ShellOptions{Timeout: 100 * time.Millisecond})
			got := runOK(t, k, "x")
			assert.Equal(t, "41", got.Value, "the namespace is untouched")
			assert.Equal(t, 2, got.Count, "shell commands are not cells: the count did not move")
			assert.Equal(t, "{}", runOK(t, k, "_stdout").Value, "shell output is not kept as a cell's")

			// Nor can a cell's signal settings change how commands end.
			runOK(t, k, "import signal\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)")
			res = shell(t, k, "sleep 0.5; echo done; exit 4", ShellOptions{})
			assert.Equal(t, "done\n", res.Output)
			assert.Equal(t, 4, res.ExitCode)
			assert.Equal(t, "True", runOK(t, k, "signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN").Value, "the cell's setting is kept")
		})
	}
}

func TestShellEnvironment(t *testing.T) {
	const secret = "sk-ctxcode-shell-test-secret"
	t.Setenv("OPENAI_API_KEY", secret)
	t.Setenv("CTXCODE_SHELL_TEST_LEAK", secret)
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			runOK(t, k, "import os\nos.environ['SET_BY_A_CELL'] = '1'")
			res := shell(t, k, "env", ShellOptions{})
			assert.NotContains(t, res.Output, "OPENAI_API_KEY")
			assert.NotContains(t, res.Output, secret)
			assert.NotContains(t, res.Output, "SET_BY_A_CELL", "commands get the kernel's environment as it started")
			assert.Regexp(t, `(?m)^PATH=`, res.Output)
			assert.Regexp(t, `(?m)^HOME=`, res.Output)

			// stdin is /dev/null: a read ends at once.
			res = shell(t, k, "cat; echo status=$?", ShellOptions{Timeout: 5 * time.Second})
			assert.Equal(t, "status=0\n", res.Output)
			assert.False(t, res.TimedOut)

			// Only fds 0, 1 and 2 are open in the command: not the protocol's.
			res = shell(t, k, "ls /proc/self/fd", ShellOptions{})
			assert.Equal(t, "0\n1\n2\n3\n", res.Output, "fd 3 is ls's own handle on the folder")
		})
	}
}

func TestShellHardDeadline(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			dir := sharedDir(t)
			k := startPython(t, f, LocalConfig{Dir: dir})
			// Once its cell has ended, a thread takes the interpreter lock and
			// keeps it (a loop in C), so the driver cannot answer the next
			// request. It says so just before (the loop is the next thing it
			// does).
			runOK(t, k, "import os, threading, time\ndef hog():\n    while not os.path.exists('go'):\n        time.sleep(0.005)\n"+
				"    open('hogging', 'w').close()\n    sum(range(10**15))\nthreading.Thread(target=hog, daemon=True).start()")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
			waitForFile(t, filepath.Join(dir, "hogging"))
			_, err := k.Shell(context.Background(), "echo hi", ShellOptions{Timeout: 200 * time.Millisecond})
			var dl *DeadlineError
			require.ErrorAs(t, err, &dl)
			assert.Equal(t, 200*time.Millisecond, dl.Timeout)
			_, err = k.Shell(context.Background(), "echo hi", ShellOptions{})
			assert.ErrorContains(t, err, "restart", "a killed kernel refuses commands until restarted")
			require.NoError(t, k.Restart(context.Background()))
			assert.Equal(t, "hi\n", shell(t, k, "echo hi", ShellOptions{}).Output)
		})
	}
}

func TestShellGoKernel(t *testing.T) {
	t.Parallel()
	k := startGoProcess(t)
	runOK(t, k, "x := 41")
	_, err := k.Shell(context.Background(), "echo hi", ShellOptions{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrShellUnsupported), "%v", err)
	assert.ErrorContains(t, err, "go kernel does not serve the shell op")
	assert.ErrorContains(t, err, "Python kernel")
	assert.Equal(t, "42", runOK(t, k, "x + 1").Value, "the kernel was not killed")
}
