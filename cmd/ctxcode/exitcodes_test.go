package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// TestBadInputExitsTwoBeforeAnyKernel is DESIGN.md's exit-code contract for
// bad input: each case exits 2 with a message that says what was wrong, and
// nothing reaches standard output. Docker is made unreachable and no case
// says --sandbox local, so a case that started a kernel would exit 1 with
// "docker daemon not reachable" instead: bad input is found first.
func TestBadInputExitsTwoBeforeAnyKernel(t *testing.T) {
	data := pmData(t)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	corrupt := copyDir(t, data)
	require.NoError(t, os.WriteFile(filepath.Join(corrupt, "manifest.json"), []byte("{not json"), 0o644))
	changed := copyDir(t, data)
	require.NoError(t, os.WriteFile(filepath.Join(changed, "teams.jsonl"), []byte("{}\n"), 0o644))
	existing := filepath.Join(tmp, "existing.ipynb")
	require.NoError(t, os.WriteFile(existing, []byte("{}"), 0o644))
	missing := filepath.Join(tmp, "no", "such", "folder")
	unwritable := "/proc"                   // takes no new files, even from root
	binds := filepath.Join(tmp, "binds.py") // a prefix with no control beside it
	require.NoError(t, os.WriteFile(binds, []byte("# name: binds\n# %%\nx = 1\n"), 0o644))
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("CTXCODE_MODEL", "")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"data without subcommand", []string{"data"}, "missing subcommand"},
		{"data gen: unknown tier", []string{"data", "gen", "--tier", "xxl", "--out", filepath.Join(tmp, "d1")}, `unknown tier "xxl"`},
		{"data gen: no --out", []string{"data", "gen"}, "--out is required"},
		{"data gen: --out is a file", []string{"data", "gen", "--out", file}, "is a file: name a folder"},
		{"data gen: --out under a folder that takes no files", []string{"data", "gen", "--out", unwritable + "/d"}, "does not take new files"},
		{"data gen: not empty", []string{"data", "gen", "--out", changed}, "not empty"},
		{"tasks: no --data", []string{"tasks"}, "--data is required"},
		{"tasks: a long flag with one dash", []string{"tasks", "-data", data}, "long flags take two dashes: --data"},
		{"tasks: --data is a file", []string{"tasks", "--data", file}, "not a folder but a file"},
		{"tasks: --data does not exist", []string{"tasks", "--data", missing}, "no such folder"},
		{"tasks: not a dataset", []string{"tasks", "--data", empty}, "not a ctxcode dataset"},
		{"tasks: corrupt manifest.json", []string{"tasks", "--data", corrupt}, "malformed dataset"},
		{"tasks: a changed file", []string{"tasks", "--data", changed}, "teams.jsonl"},
		{"tasks: unknown --reference", []string{"tasks", "--data", data, "--reference", "foo"}, `unknown solution kind "foo"`},
		{"exec: --python does not exist", []string{"exec", "--python", "/nonexistent/python3", "--", "1"}, "--python /nonexistent/python3: no such interpreter"},
		{"exec: --prefix pm without --data", []string{"exec", "--prefix", "pm", "--", "1"}, "prefix pm reads data/: give the data folder with --data DIR"},
		{"exec: unknown language", []string{"exec", "--lang", "ruby", "--", "1"}, `unknown language "ruby"`},
		{"exec: unknown sandbox", []string{"exec", "--sandbox", "vm", "--", "1"}, `--sandbox "vm": expected docker, local or kubernetes`},
		{"exec: zero timeout", []string{"exec", "--timeout", "0s", "--", "1"}, "--timeout must be positive"},
		{"exec: bad size", []string{"exec", "--memory", "lots", "--", "1"}, `"lots" is not a size`},
		{"exec: --data does not exist", []string{"exec", "--data", missing, "--", "1"}, "no such folder"},
		{"exec: unknown flag", []string{"exec", "--frobnicate", "--", "1"}, "unknown flag: --frobnicate"},
		{"exec: no cells", []string{"exec"}, "no cells given"},
		{"prefix show: --data does not exist", []string{"prefix", "show", "pm", "--data", missing}, "no such folder"},
		{"prefix show: no --data", []string{"prefix", "show", "pm"}, "prefix pm reads data/"},
		{"prefix show: unknown protocol", []string{"prefix", "show", "pm", "--data", data, "--protocol", "smoke"}, "--protocol"},
		{"prefix export: --data does not exist", []string{"prefix", "export", "pm", "--data", missing, "--out", filepath.Join(tmp, "x.ipynb")}, "no such folder"},
		{"prefix export: --out in a missing folder", []string{"prefix", "export", "pm", "--data", data, "--out", filepath.Join(missing, "x.ipynb")}, "does not exist; make it first"},
		{"prefix export: --out in a folder that takes no files", []string{"prefix", "export", "pm", "--data", data, "--out", unwritable + "/x.ipynb"}, "does not take new files"},
		{"prefix export: --out exists", []string{"prefix", "export", "pm", "--data", data, "--out", existing}, "exists; pass --force"},
		{"prefix export: --out is not a notebook", []string{"prefix", "export", "pm", "--data", data, "--out", filepath.Join(tmp, "x.txt")}, "does not end in .ipynb"},
		{"prefix verify: no such prefix", []string{"prefix", "verify", "nope.py", "--data", data}, `prefix "nope.py"`},
		{"prefix verify: no prefix", []string{"prefix", "verify", "--data", data}, "name a prefix"},
		{"prefix: unknown subcommand", []string{"prefix", "frob"}, `unknown subcommand "frob"`},
		{"prefix import: no notebook", []string{"prefix", "import"}, "name the notebook"},
		{"prefix import: no such notebook", []string{"prefix", "import", filepath.Join(tmp, "none.ipynb")}, "no such file"},
		{"prefix import: --out exists", []string{"prefix", "import", existing, "--out", existing}, "exists; pass --force"},
		{"prefix init: no --data", []string{"prefix", "init"}, "--data is required"},
		{"prefix init: --data does not exist", []string{"prefix", "init", "--data", missing}, "no such folder"},
		{"prefix init: --out in a missing folder", []string{"prefix", "init", "--data", data, "--out", filepath.Join(missing, "p.py")}, "does not exist; make it first"},
		{"prefix init: unknown language", []string{"prefix", "init", "--data", data, "--lang", "ruby"}, "--lang"},
		{"ask: nothing to ask", []string{"ask", "--model", "reference"}, "give a question, or --task ID"},
		{"ask: no model", []string{"ask", "q?"}, "no model is configured"},
		{"ask: --data does not exist", []string{"ask", "q?", "--model", "reference", "--data", missing}, "no such folder"},
		{"ask: --trajectory in a missing folder", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--trajectory", filepath.Join(missing, "t.jsonl")}, "does not exist; make it first"},
		{"ask: --trajectory exists", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--trajectory", existing}, "exists; pass --force"},
		{"ask: corrupt manifest.json", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", corrupt}, "malformed dataset"},
		{"ask: unknown condition", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--condition", "E"}, `--condition "E": expected one of A, B, B0, D, C`},
		{"ask: every task", []string{"ask", "--task", "all", "--model", "reference", "--data", data}, "use ctxcode bench"},
		{"ask: a condition and another mode", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--condition", "C", "--mode", "loop"}, "--condition C runs in --mode oneshot, not loop"},
		{"ask: a condition and another protocol", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--condition", "D", "--protocol", "eval"}, "--condition D uses the bare protocol, not eval"},
		{"ask: A with a prefix", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--condition", "A", "--prefix", "pm"}, "--condition A runs without a prefix"},
		{"ask: B0 with a prefix that has no control", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--condition", "B0", "--prefix", binds}, "--condition B0 needs the control of prefix binds"},
		{"ask: B with a prefix that binds nothing", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--condition", "B", "--prefix", "pm-nobind"}, "--condition B needs a prefix that binds its variables"},
		{"ask: the cli protocol without A", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--protocol", "cli"}, "--protocol cli is condition A's"},
		{"ask: several conditions for one question", []string{"ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--condition", "B,D"}, "use ctxcode bench --conditions B,D"},
		{"ask: unknown task", []string{"ask", "--task", "s-t9-9", "--model", "reference", "--data", data}, "no such task"},
		{"sandbox: unknown subcommand", []string{"sandbox", "frob"}, `unknown subcommand "frob"`},
		{"sandbox prune: bad duration", []string{"sandbox", "prune", "--older-than", "soon"}, "--older-than"},
		{"kernel serve: python", []string{"kernel", "serve", "--lang", "python"}, "not served by ctxcode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, got.code, "stderr: %s", got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.NotContains(t, got.stderr, "docker daemon not reachable", "found before a kernel started")
			assert.Empty(t, got.stdout, "nothing printed before the error")
		})
	}
	assert.NoDirExists(t, filepath.Join(tmp, "d1"))
	b, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "{}", string(b), "nothing overwritten")
}

// TestPrefixVerifyBadPrefixExitsTwo: a failing cell, non-determinism and a
// prefix over budget are each "the prefix is not good" (2), with its own
// message.
func TestPrefixVerifyBadPrefixExitsTwo(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		return p
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a failing cell", []string{write("fails.py", "# name: fails\n# %%\nx = 1\n# %%\n1/0\n")}, "ZeroDivisionError"},
		{"not deterministic", []string{write("random.py", "# name: random\n# %%\nimport os\nos.urandom(8).hex()\n")}, "is not deterministic"},
		{"over budget", []string{"pm", "--max-tokens", "10"}, "over --max-tokens 10"},
		{"a cell that kills the kernel", []string{write("dies.py", "# name: dies\n# %%\nimport os\nos._exit(3)\n")}, "cell 1 (line 3) killed the kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", append([]string{"prefix", "verify", "--sandbox", "local", "--data", data}, tc.args...)...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.Empty(t, got.stdout)
		})
	}
}

func TestSandboxStatusUnreachableExitsOne(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	got := runCLI(t, "", "sandbox", "status")
	assert.Equal(t, exitInfra, got.code)
	assert.Contains(t, got.stdout, "docker: not reachable")
	assert.Contains(t, got.stderr, "docker daemon not reachable")
}

// copyDir copies the files of a flat folder into a new temporary one.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

func jsonFirstLine(s string, v any) error {
	line, _, _ := strings.Cut(s, "\n")
	return json.Unmarshal([]byte(line), v)
}

func goldText(t *testing.T, gold any) string {
	b, err := json.Marshal(gold)
	require.NoError(t, err)
	return string(b)
}

// TestKernelDeathExitsThree: a cell that kills the kernel is the model's
// result, no answer (kernel_died with its cause, exit 3), in the loop and
// in one shot alike; restarts counts the restarts made, so with
// --max-restarts 0 it is 0.
func TestKernelDeathExitsThree(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	for _, mode := range []string{"loop", "oneshot"} {
		t.Run(mode, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Text("```python\nimport os\nos._exit(3)\n```", 700, 10))
			t.Setenv("OPENAI_API_KEY", "sk-x")
			got := runCLI(t, "", "ask", "How many tasks?", "--mode", mode, "--max-restarts", "0", "--json",
				"--model", "m", "--base-url", srv.URL, "--data", data, "--sandbox", "local")
			assert.Equal(t, exitNoAnswer, got.code, got.stderr)
			var rec map[string]any
			require.NoError(t, jsonFirstLine(got.stdout, &rec), got.stdout)
			assert.Equal(t, "kernel_died", rec["status"])
			assert.Equal(t, "exit 3", rec["death"])
			assert.EqualValues(t, 0, rec["restarts"], "no restart was made")
			assert.Contains(t, got.stderr, "exited with status 3")
		})
	}
}

// TestClosedStdoutCleansUp: ctxcode writing into a pipe that was closed
// (ctxcode exec ... | head -1) is not killed by SIGPIPE where it stands: it
// ends, says so, and removes its kernel's folder.
func TestClosedStdoutCleansUp(t *testing.T) {
	requirePython(t)
	// The child's temporary folder is the test's own, so that the kernel
	// folders other processes make meanwhile are not counted.
	tmp := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "exec", "--sandbox", "local", "--data", "../../testdata/demo", "--",
		`print("x\n" * 100000)`, "import time; time.sleep(2)", "print('never read')")
	cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1", "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "In [1]: print(\"x\\n\" * 100000)\n", line)
	require.NoError(t, out.Close()) // as head -1 does
	err = cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	ws := exitErr.Sys().(syscall.WaitStatus)
	assert.False(t, ws.Signaled(), "not killed by %v", ws.Signal())
	assert.Equal(t, exitInfra, exitErr.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "broken pipe")
	left, err := filepath.Glob(filepath.Join(tmp, "ctxcode-kernel-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the kernel's folder is removed")
}
