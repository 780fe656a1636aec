package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/sandbox"
)

// TestMain lets the test binary stand in for the ctxcode binary when exec
// starts a Go kernel (`<self> kernel serve --lang go`).
// With CTXCODE_TEST_CLI=1 it is the whole CLI, for tests that need a real
// process to kill.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "kernel" && os.Args[2] == "serve" || os.Getenv("CTXCODE_TEST_CLI") == "1" {
		ctx, stop := signalContext()
		code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	testenv.SkipOrFail(t, format, args...)
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		skipOrFail(t, "python3 is missing")
	}
}

// requireDocker skips (fails in CI) unless Docker and the kernel image are there.
func requireDocker(t testing.TB) *client.Client {
	t.Helper()
	cli, err := sandbox.Connect(context.Background(), sandbox.Host{})
	if err != nil {
		skipOrFail(t, "docker: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	ok, err := sandbox.ImageExists(context.Background(), cli, sandbox.KernelImage())
	require.NoError(t, err)
	if !ok {
		skipOrFail(t, "kernel image %s is missing: run `make image` or `ctxcode sandbox build`", sandbox.KernelImage())
	}
	return cli
}

// sandboxes are the ways to run cells: local always, docker when it is there.
func sandboxes(t *testing.T) []string {
	requirePython(t)
	return []string{"local", "docker"}
}

func needSandbox(t *testing.T, sb string) {
	if sb == "docker" {
		requireDocker(t)
	}
}

const localWarning = "ctxcode: warning: --sandbox local runs the cells on this host, without isolation\n"

type outcome struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

func TestExecPython(t *testing.T) {
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			got := runCLI(t, "", "exec", "--sandbox", sb, "--", "x = 41", "x + 1")
			require.Equal(t, 0, got.code, got.stderr)
			assert.Equal(t, "In [1]: x = 41\n\nIn [2]: x + 1\nOut[2]: 42\n", got.stdout)
			if sb == "local" {
				assert.Equal(t, localWarning, got.stderr, "one line says the code is not isolated")
			} else {
				assert.Empty(t, got.stderr)
			}
		})
	}
}

func TestExecGo(t *testing.T) {
	for _, sb := range []string{"local", "docker"} {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			got := runCLI(t, "", "exec", "--sandbox", sb, "--lang", "go", "--", "x := 41", "x + 1")
			require.Equal(t, 0, got.code, got.stderr)
			assert.Equal(t, "In [1]: x := 41\n\nIn [2]: x + 1\nOut[2]: 42\n", got.stdout)
		})
	}
}

func TestExecDockerHasNoNetwork(t *testing.T) {
	requireDocker(t)
	got := runCLI(t, "", "exec", "--", "import socket", "socket.gethostbyname('example.com')")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "socket.gaierror", "an error, not an address")
	assert.NotContains(t, got.stdout, "Out[2]")
}

func TestExecWithoutDockerNeverRunsOnHost(t *testing.T) {
	requirePython(t)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	marker := filepath.Join(t.TempDir(), "ran")
	got := runCLI(t, "", "exec", "--", "open("+strconv.Quote(marker)+", 'w').write('x')")
	assert.Equal(t, exitInfra, got.code)
	assert.Contains(t, got.stderr, "docker daemon not reachable")
	assert.Contains(t, got.stderr, "--sandbox local")
	assert.NoFileExists(t, marker, "the cell must not have run on the host")
}

// TestExecKilledLeavesContainerForSweep kills a real `ctxcode exec` with
// SIGKILL; its container is an orphan that prune, or the sweep of the next
// command, removes.
func TestExecKilledLeavesContainerForSweep(t *testing.T) {
	cli := requireDocker(t)
	for _, next := range [][]string{{"sandbox", "prune"}, {"exec", "--", "1"}} {
		t.Run(next[0], func(t *testing.T) {
			exe, err := os.Executable()
			require.NoError(t, err)
			cmd := exec.Command(exe, "exec", "--", "import time\ntime.sleep(600)")
			cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1")
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			byPID := filters.NewArgs(filters.Arg("label", sandbox.LabelPID+"="+strconv.Itoa(cmd.Process.Pid)))
			list := func() []container.Summary {
				cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: byPID})
				require.NoError(t, err)
				return cs
			}
			require.Eventually(t, func() bool { return len(list()) == 1 }, 60*time.Second, 100*time.Millisecond, "the exec process starts its container")
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			require.Len(t, list(), 1, "SIGKILL leaves the container behind")

			got := runCLI(t, "", next...)
			require.Equal(t, 0, got.code, got.stderr)
			assert.Empty(t, list(), "%v removes the orphan", next)
		})
	}
}

// TestExecSignalRemovesContainer: SIGINT or SIGTERM to `ctxcode exec` ends
// it and removes its container.
func TestExecSignalRemovesContainer(t *testing.T) {
	cli := requireDocker(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			exe, err := os.Executable()
			require.NoError(t, err)
			cmd := exec.Command(exe, "exec", "--", "import time\ntime.sleep(600)")
			cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			byPID := filters.NewArgs(filters.Arg("label", sandbox.LabelPID+"="+strconv.Itoa(cmd.Process.Pid)))
			count := func() int {
				cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: byPID})
				require.NoError(t, err)
				return len(cs)
			}
			require.Eventually(t, func() bool { return count() == 1 }, 60*time.Second, 100*time.Millisecond)
			require.NoError(t, cmd.Process.Signal(sig))
			err = cmd.Wait()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "interrupted exec exits non-zero")
			assert.Equal(t, exitInterrupted, exitErr.ExitCode())
			assert.Contains(t, stderr.String(), "ctxcode: interrupted")
			assert.Zero(t, count(), "the container is removed on %v", sig)
		})
	}
}

func TestExecCellsFromStdin(t *testing.T) {
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			testExecCellsFromStdin(t, sb)
		})
	}
}

func testExecCellsFromStdin(t *testing.T, sb string) {
	cells := "# a header, not a cell\n\n# %%\nimport os\nsorted(os.listdir('data'))\n# %%\nprint('hi')\n1/0\n# %% second\nANSWER(len(os.listdir('data')))\n"
	got := runCLI(t, cells, "exec", "--sandbox", sb, "--data", "../../testdata/demo", "--json")
	require.Equal(t, 0, got.code, got.stderr)
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 3)
	var recs []execRecord
	for _, l := range lines {
		var r execRecord
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		recs = append(recs, r)
	}
	assert.Equal(t, "['tasks.jsonl', 'teams.jsonl', 'users.jsonl']", recs[0].Value)
	assert.Equal(t, "print('hi')\n1/0", recs[1].Code)
	assert.Equal(t, "hi\n", recs[1].Stdout)
	assert.Equal(t, "ZeroDivisionError", recs[1].Error.Name, "a failed cell does not stop the session")
	assert.JSONEq(t, "3", string(recs[2].Answer))
}

func TestExecText(t *testing.T) {
	requirePython(t)
	got := runCLI(t, "", "exec", "--sandbox", "local", "--", "for i in range(2):\n    print(i)", "undefined", "ANSWER({'a': 1})")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, "In [1]: for i in range(2):\n   ...:     print(i)\n0\n1\n\n"+
		"In [2]: undefined\nCell In[2], line 1\n    undefined\nNameError: name 'undefined' is not defined\n\n"+
		"In [3]: ANSWER({'a': 1})\nANSWER: {\"a\": 1}\n", got.stdout)
}

func TestExecHardDeadline(t *testing.T) {
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			testExecHardDeadline(t, sb)
		})
	}
}

func testExecHardDeadline(t *testing.T, sb string) {
	code := "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass"
	got := runCLI(t, "", "exec", "--sandbox", sb, "--timeout", "300ms", "--", "1", code, "2")
	assert.Equal(t, exitInfra, got.code)
	assert.Equal(t, "In [1]: 1\nOut[1]: 1\n\nIn [2]: import signal\n   ...: signal.signal(signal.SIGALRM, signal.SIG_IGN)\n   ...: while True: pass\n", got.stdout)
	assert.Contains(t, got.stderr, "cell 2 of 3 (1 later cell(s) not run)")
	assert.Contains(t, got.stderr, "was killed")
}

func TestExecUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no cells", []string{"exec"}, "no cells given"},
		{"unknown language", []string{"exec", "--lang", "ruby", "--", "1"}, `unknown language "ruby": expected python or go`},
		{"bad memory", []string{"exec", "--memory", "lots", "--", "1"}, `"lots" is not a size`},
		{"unknown sandbox", []string{"exec", "--sandbox", "vm", "--", "1"}, `--sandbox "vm": expected docker, local or kubernetes`},
		{"unknown prefix", []string{"exec", "--prefix", "nope.py", "--", "1"}, `--prefix: prefix "nope.py": no such built-in prefix (pm`},
		{"prefix language", []string{"exec", "--lang", "go", "--prefix", "pm", "--", "1"}, "--prefix pm is written in python, but --lang is go"},
		{"missing data", []string{"exec", "--data", "/no/such/dir", "--", "1"}, "no such folder"},
		{"bad timeout", []string{"exec", "--timeout", "0s", "--", "1"}, "--timeout must be positive"},
		{"unknown flag", []string{"exec", "--frobnicate"}, "unknown flag: --frobnicate"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"flag after cells", []string{"exec", "--", "1", "--timeout", "1s"}, "flag --timeout comes after --"},
		{"kernel serve python", []string{"kernel", "serve", "--lang", "python"}, "not served by ctxcode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, "", tt.args...)
			assert.Equal(t, exitUsage, got.code)
			assert.Contains(t, got.stderr, tt.want)
			assert.NotContains(t, got.stderr, "Flags:", "an error is one message, not the whole help")
			assert.Empty(t, got.stdout)
		})
	}
}

func TestExecPythonMissing(t *testing.T) {
	got := runCLI(t, "", "exec", "--sandbox", "local", "--python", "/no/such/python3", "--", "1")
	assert.Equal(t, exitUsage, got.code, "a --python that is not there is bad input")
	assert.Contains(t, got.stderr, "--python /no/such/python3: no such interpreter")
	t.Setenv("PATH", t.TempDir())
	got = runCLI(t, "", "exec", "--sandbox", "local", "--", "1")
	assert.Equal(t, exitInfra, got.code, "no python3 on PATH is a missing prerequisite")
	assert.Contains(t, got.stderr, "apt-get install python3")
}

func TestHelpAndVersion(t *testing.T) {
	got := runCLI(t, "", "help")
	assert.Equal(t, 0, got.code)
	assert.Contains(t, got.stdout, "exec")
	got = runCLI(t, "", "exec", "-h")
	assert.Equal(t, 0, got.code)
	assert.Contains(t, got.stderr, "ctxcode exec --lang go -- 'x := 41' 'x + 1'")
	got = runCLI(t, "", "version")
	assert.Equal(t, 0, got.code)
	assert.Contains(t, got.stdout, "ctxcode ")
	got = runCLI(t, "")
	assert.Equal(t, exitUsage, got.code)
}

func TestSandboxStatusAndPrune(t *testing.T) {
	requireDocker(t)
	got := runCLI(t, "", "sandbox", "status")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "docker: reachable at ")
	assert.Contains(t, got.stdout, "image: "+sandbox.KernelImage()+" present")
	assert.Contains(t, got.stdout, "containers: ")

	// An orphan: a container whose owner (a pid that has ended) is gone.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	host, _ := os.Hostname()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	pidns, err := os.Readlink("/proc/self/ns/pid") // pid:[N]
	require.NoError(t, err)
	cli := requireDocker(t)
	ctx := context.Background()
	made, err := cli.ContainerCreate(ctx, &container.Config{Image: sandbox.KernelImage(), Cmd: []string{"true"}, Labels: map[string]string{
		sandbox.LabelSession: "cli-test-orphan", sandbox.LabelPID: strconv.Itoa(dead.Process.Pid), sandbox.LabelHost: host,
		sandbox.LabelBoot: strings.TrimSpace(string(boot)), sandbox.LabelPIDNS: strings.Trim(pidns, "pid:[]"),
		sandbox.LabelCreated: strconv.FormatInt(time.Now().Unix(), 10)}}, nil, nil, nil, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.ContainerRemove(ctx, made.ID, container.RemoveOptions{Force: true}) })
	exists := func() bool { _, err := cli.ContainerInspect(ctx, made.ID); return err == nil }

	got = runCLI(t, "", "sandbox", "prune", "--dry-run")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "would remove "+made.ID[:12])
	assert.True(t, exists(), "a dry run removes nothing")

	got = runCLI(t, "", "sandbox", "prune")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "removed "+made.ID[:12])
	assert.False(t, exists())

	got = runCLI(t, "", "sandbox", "frobnicate")
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, `unknown subcommand "frobnicate"`)
}

func TestSandboxStatusWithoutDocker(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	got := runCLI(t, "", "sandbox", "status")
	assert.Equal(t, exitInfra, got.code)
	assert.Contains(t, got.stdout, "docker: not reachable")
	got = runCLI(t, "", "sandbox", "build")
	assert.Equal(t, exitInfra, got.code)
	assert.Contains(t, got.stderr, "docker daemon not reachable")
}
