package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
)

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	testenv.SkipOrFail(t, format, args...)
}

// flavour is a way to run the Python driver: with IPython or the stdlib path.
type flavour struct {
	name      string
	python    string
	noIPython bool
}

func canImport(python string, modules ...string) bool {
	if len(modules) == 0 {
		return true
	}
	args := []string{"-c", "import " + strings.Join(modules, ", ")}
	return exec.Command(python, args...).Run() == nil
}

// pythonCandidates are the interpreters on this machine, PATH's first.
func pythonCandidates() []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range []string{"python3", "/usr/bin/python3", "/usr/local/bin/python3"} {
		p, err := exec.LookPath(name)
		if err != nil || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// findPython returns an interpreter that can import modules.
func findPython(modules ...string) (string, bool) {
	for _, p := range pythonCandidates() {
		if len(modules) == 0 || canImport(p, modules...) {
			return p, true
		}
	}
	return "", false
}

// flavours returns the IPython and stdlib ways of running the driver, and
// the same on the oldest supported interpreter this machine has (see
// oldestPython), so that every test that takes them is the protocol
// battery of that interpreter too. The IPython one is skipped (failed in
// CI) when no interpreter has IPython.
func flavours(t *testing.T, modules ...string) []flavour {
	t.Helper()
	var fs []flavour
	if p, ok := findPython(append([]string{"IPython"}, modules...)...); ok {
		fs = append(fs, flavour{name: "ipython", python: p})
	} else if testenv.Strict() {
		t.Fatalf("no python3 with IPython %v on this machine (apt-get install python3-ipython)", modules)
	}
	p, ok := findPython(modules...)
	if !ok {
		skipOrFail(t, "no python3 with %v on this machine", modules)
	}
	fs = append(fs, flavour{name: "stdlib", python: p, noIPython: true})
	old := oldestPython(t)
	if old.path == "" || old.version == pythonVersion(p) || !canImport(old.path, modules...) {
		return fs
	}
	name := "python" + old.version
	if canImport(old.path, append([]string{"IPython"}, modules...)...) {
		fs = append(fs, flavour{name: name + "-ipython", python: old.path})
	}
	return append(fs, flavour{name: name + "-stdlib", python: old.path, noIPython: true})
}

// interpreter is a Python found on this machine, and its version ("3.9").
type interpreter struct {
	path    string
	version string
	minor   int
}

var interpreters = sync.OnceValue(func() []interpreter {
	var paths []string
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		if home, err := os.UserHomeDir(); err == nil {
			root = filepath.Join(home, ".pyenv")
		}
	}
	if root != "" {
		found, _ := filepath.Glob(filepath.Join(root, "versions", "*", "bin", "python3"))
		paths = append(paths, found...)
	}
	for minor := 6; minor <= 14; minor++ {
		if p, err := exec.LookPath(fmt.Sprintf("python3.%d", minor)); err == nil {
			paths = append(paths, p)
		}
	}
	var out []interpreter
	seen := map[string]bool{}
	for _, p := range paths {
		v := pythonVersion(p)
		var major, minor int
		if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major != 3 || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, interpreter{p, v, minor})
	}
	slices.SortFunc(out, func(a, b interpreter) int { return a.minor - b.minor })
	return out
})

// pythonVersion is "3.N" for the interpreter at path, "" if it does not run.
func pythonVersion(path string) string {
	out, err := exec.Command(path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// minMinor is N of MinPython, 3.N.
func minMinor() int {
	var n int
	_, _ = fmt.Sscanf(MinPython, "3.%d", &n)
	return n
}

// oldestPython is the oldest interpreter of at least MinPython found here
// (pyenv's versions, python3.N on PATH). In CI the minimum itself must be
// there: the README promises it.
func oldestPython(t *testing.T) interpreter {
	t.Helper()
	for _, in := range interpreters() {
		if in.minor < minMinor() {
			continue
		}
		if in.minor != minMinor() && testenv.Strict() {
			t.Fatalf("no CPython %s on this machine, the oldest the driver supports (the oldest found is %s at %s): pyenv install %s", MinPython, in.version, in.path, MinPython)
		}
		return in
	}
	if testenv.Strict() {
		t.Fatalf("no CPython %s or later found by pyenv or as python3.N on PATH: pyenv install %s", MinPython, MinPython)
	}
	return interpreter{}
}

// TestPythonRefusesOldInterpreters: an interpreter older than MinPython
// is refused at start with a message that says what to do, not with a
// syntax error or a traceback.
func TestPythonRefusesOldInterpreters(t *testing.T) {
	t.Parallel()
	var old []interpreter
	for _, in := range interpreters() {
		if in.minor < minMinor() {
			old = append(old, in)
		}
	}
	if len(old) == 0 {
		t.Skip("no Python 3 older than " + MinPython + " here (pyenv install 3.8 to run this test)")
	}
	for _, in := range old {
		t.Run(in.version, func(t *testing.T) {
			tr, err := NewLocalPython(in.path, true, LocalConfig{})
			require.NoError(t, err)
			_, err = Start(context.Background(), Python, tr, ClientOptions{StartTimeout: 30 * time.Second})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "needs CPython "+MinPython+" or later")
			assert.Contains(t, err.Error(), "is Python "+in.version)
			assert.NotContains(t, err.Error(), "Traceback")
		})
	}
}

func startPython(t testing.TB, f flavour, cfg LocalConfig) *Client {
	t.Helper()
	tr, err := NewLocalPython(f.python, f.noIPython, cfg)
	require.NoError(t, err)
	c, err := Start(context.Background(), Python, tr, ClientOptions{Grace: time.Second})
	if c != nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	require.NoError(t, err)
	if f.noIPython {
		require.Contains(t, c.Info(), "stdlib")
	} else {
		require.Contains(t, c.Info(), "ipython")
	}
	return c
}

func run(t testing.TB, k Kernel, code string) Result {
	t.Helper()
	res, err := k.Execute(context.Background(), code, ExecOptions{Timeout: 10 * time.Second})
	require.NoError(t, err, "cell %q", code)
	return res
}

func runOK(t testing.TB, k Kernel, code string) Result {
	t.Helper()
	res := run(t, k, code)
	require.Equal(t, StatusOK, res.Status, "cell %q: %+v", code, res.Error)
	return res
}

func TestPythonCells(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			res := runOK(t, k, "x = 41")
			assert.Equal(t, 1, res.Count)
			assert.Empty(t, res.Value)
			res = runOK(t, k, "x + 1")
			assert.Equal(t, 2, res.Count)
			assert.Equal(t, "42", res.Value)

			res = runOK(t, k, "import os, subprocess\nprint('printed')\nos.write(1, b'raw fd\\n')\n"+
				"subprocess.run(['echo', 'child'])\nimport sys; print('to err', file=sys.stderr); os.write(2, b'fd2\\n');")
			assert.Equal(t, "printed\nraw fd\nchild\n", res.Stdout)
			assert.Equal(t, "to err\nfd2\n", res.Stderr)
			assert.Empty(t, res.Value, "a trailing ; hides the value")

			res = runOK(t, k, "_ + 1, __, Out[2], _2, In[1]")
			assert.Equal(t, "(43, '', 42, 42, 'x = 41')", res.Value)

			res = runOK(t, k, "ANSWER({'n': x + 1, 'tags': {'b', 'a'}, (1, 2): float('nan')})\nprint('not reached')")
			assert.JSONEq(t, `{"n": 42, "tags": ["a", "b"], "[1, 2]": null}`, string(res.Answer))
			assert.Empty(t, res.Stdout, "ANSWER ends the cell")
			assert.True(t, res.Answered())

			res = run(t, k, "import sys\nsys.exit(3)")
			assert.Equal(t, StatusError, res.Status)
			assert.Equal(t, "SystemExit", res.Error.Name)
			assert.Equal(t, "42", runOK(t, k, "x + 1").Value, "the kernel lives on after sys.exit")
		})
	}
}

// TestPythonKeepsPrintedText checks that what a cell printed stays in
// _stdout[n] and _stderr[n], so a model can page through a cut rendering.
func TestPythonKeepsPrintedText(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			res := runOK(t, k, "import sys\nprint('line\\n' * 3000, end='')\nprint('oops', file=sys.stderr)")
			n := res.Count
			runOK(t, k, "")
			res = runOK(t, k, fmt.Sprintf("len(_stdout[%d]), _stdout[%d][:10], _stderr[%d], sorted(_stdout)", n, n, n))
			assert.Equal(t, fmt.Sprintf("(15000, 'line\\nline\\n', 'oops\\n', [%d])", n), res.Value)
			res = runOK(t, k, "del _stdout\nprint('again')")
			res = runOK(t, k, "_stdout")
			assert.Equal(t, fmt.Sprintf("{%d: 'again\\n'}", res.Count-1), res.Value, "a deleted _stdout comes back")
		})
	}
}

// TestPythonValueText checks the display text of final expressions: both
// driver paths must give IPython's text.
func TestPythonValueText(t *testing.T) {
	t.Parallel()
	cases := []struct{ code, want string }{
		{"None", ""},
		{"1 + 1", "2"},
		{"'a' + 'b'", "'ab'"},
		{"1.5", "1.5"},
		{"[1, 'a', None, True]", "[1, 'a', None, True]"},
		{"(1,)", "(1,)"},
		{"()", "()"},
		{"{}", "{}"},
		{"set()", "set()"},
		{"{'b', 'c', 'a'}", "{'a', 'b', 'c'}"},
		{"frozenset({2, 1})", "frozenset({1, 2})"},
		{"{'z': 1, 'a': [1, 2]}", "{'z': 1, 'a': [1, 2]}"},
		{"list(range(12))", "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]"},
		{"list(range(30))[:3] + ['x' * 80]", "[0,\n 1,\n 2,\n 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx']"},
		{"[[i] * 5 for i in range(3)] * 3", "[[0, 0, 0, 0, 0],\n [1, 1, 1, 1, 1],\n [2, 2, 2, 2, 2],\n [0, 0, 0, 0, 0],\n [1, 1, 1, 1, 1],\n [2, 2, 2, 2, 2],\n [0, 0, 0, 0, 0],\n [1, 1, 1, 1, 1],\n [2, 2, 2, 2, 2]]"},
		{"{'k' * 30: list(range(20)), 'z': 1}", "{'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkk': [0,\n  1,\n  2,\n  3,\n  4,\n  5,\n  6,\n  7,\n  8,\n  9,\n  10,\n  11,\n  12,\n  13,\n  14,\n  15,\n  16,\n  17,\n  18,\n  19],\n 'z': 1}"},
		{"(list(range(20)), 'abc' * 20)", "([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],\n 'abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabc')"},
		{"len(str(list(range(1500))))", "7890"},
		{"import collections\ncollections.Counter('abracadabra')", "Counter({'a': 5, 'b': 2, 'r': 2, 'c': 1, 'd': 1})"},
		{"int", "int"},
		{"class Point:\n    pass\nPoint", "__main__.Point"},
		{"def f(a, b=2):\n    pass\nf", "<function __main__.f(a, b=2)>"},
		{"x = [1]\nx.append(x)\nx", "[1, [...]]"},
		{"ValueError('bad', 2)", "ValueError('bad', 2)"},
		{"range(3)", "range(0, 3)"},
		{"b'\\xff'", "b'\\xff'"},
		{"print('hi')", ""},
		{"3;", ""},
	}
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			for _, tc := range cases {
				assert.Equal(t, tc.want, runOK(t, k, tc.code).Value, "cell %q", tc.code)
			}
			long := runOK(t, k, "list(range(1500))").Value
			assert.True(t, strings.HasSuffix(long, " 999,\n ...]"), "IPython shows at most 1000 items: %q", long[len(long)-30:])
		})
	}
}

// TestPythonValueParity runs the same cells through IPython and the stdlib
// path and requires the same value text, including pandas objects.
func TestPythonValueParity(t *testing.T) {
	t.Parallel()
	python, ok := findPython("IPython", "pandas")
	if !ok {
		skipOrFail(t, "no python3 with both IPython and pandas (apt-get install python3-ipython python3-pandas)")
	}
	cells := []string{
		"import pandas as pd\ndf = pd.DataFrame({'team': ['a', 'b', 'a'], 'hours': [1.5, 2.0, 3.25]})\ndf",
		"len(In), Out",
		"[df.head(1), df.tail(1)], {'a': 1, 'frame': df.head(2), 'b': [2, 3]}",
		"df.groupby('team')['hours'].sum()",
		"df['hours'].describe()",
		"df.dtypes",
		"[df['hours'].sum(), df.shape, list(df.columns)]",
		"{'frame': df.head(2)}",
		"pd.Timestamp('2024-01-02')",
		"df.to_dict(orient='records')",
		"{i: str(i) * i for i in range(12)}",
		"sorted({(i % 7, chr(97 + i % 26)) for i in range(60)})",
		"import collections\ncollections.defaultdict(list, {'a': [1]})",
		"collections.OrderedDict(a=1, b=2)",
		"collections.deque(range(5))",
		"{'nested': {'deep': [list(range(10))] * 4}}",
		"'line\\n' * 3",
		"{('user', 'x' * 60): ['y' * 20, 'z' * 20]}",
		"{1, 'a', 2, 'b', 10}",
		"[{'name': 'n%d' % i, 'tags': ['t' * (i % 5)] * (i % 4), 'score': i / 7} for i in range(9)]",
		"1e100, 0.1 + 0.2, -0.0, 2**100",
		"display(df.head(1), [1, 2])",
		"  indented = 5\n  indented * 2",
		"import asyncio\nawait asyncio.sleep(0)\nawait asyncio.sleep(0, result='awaited')",
		"_i",
		"class HTMLBroken:\n    def _repr_html_(self):\n        raise ValueError('no html')\n    def __repr__(self):\n        return 'HTMLBroken()'\nHTMLBroken()",
	}
	values := map[string][]string{}
	for _, f := range []flavour{{"ipython", python, false}, {"stdlib", python, true}} {
		k := startPython(t, f, LocalConfig{})
		for _, c := range cells {
			res := runOK(t, k, c)
			values[f.name] = append(values[f.name], res.Stdout+"|"+res.Value)
		}
		// An empty cell is not counted, as in IPython.
		empty := runOK(t, k, "  \n")
		assert.Equal(t, len(cells)+1, empty.Count, f.name)
		assert.Equal(t, len(cells)+1, runOK(t, k, "1").Count, f.name)
	}
	for i, c := range cells {
		assert.Equal(t, values["ipython"][i], values["stdlib"][i], "cell %q", c)
	}
	assert.Equal(t, "|'awaited'", values["stdlib"][len(cells)-3])
	assert.Equal(t, `|"import asyncio\nawait asyncio.sleep(0)\nawait asyncio.sleep(0, result='awaited')"`, values["stdlib"][len(cells)-2], "_i is the previous cell")
	assert.Equal(t, "|10", values["stdlib"][len(cells)-4], "a cell's common indentation is removed")
	assert.Equal(t, "|HTMLBroken()", values["ipython"][len(cells)-1], "only text/plain is computed")
	assert.Contains(t, values["stdlib"][0], "team  hours")
	assert.Contains(t, values["stdlib"][len(cells)-5], "team  hours\n0")
}

func TestPythonErrors(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			runOK(t, k, "def g():\n    return undefined_name")

			res := run(t, k, "y = 1\ng()")
			require.Equal(t, StatusError, res.Status)
			assert.Equal(t, "NameError", res.Error.Name)
			assert.Equal(t, "Cell In[2], line 2\n    g()\nCell In[1], line 2\n    return undefined_name\n"+
				"NameError: name 'undefined_name' is not defined", res.Error.Traceback)

			res = run(t, k, "x = = 2")
			require.Equal(t, StatusError, res.Status)
			assert.Equal(t, "SyntaxError", res.Error.Name)
			assert.Equal(t, "Cell In[3], line 1\n    x = = 2\n        ^\nSyntaxError: invalid syntax", res.Error.Traceback)

			res = run(t, k, "import json\njson.loads('{')")
			require.Equal(t, StatusError, res.Status)
			assert.Equal(t, "JSONDecodeError", res.Error.Name)
			assert.NotContains(t, res.Error.Traceback, "json/decoder.py", "library frames are left out")
			assert.NotContains(t, res.Error.Traceback, "driver", "driver frames are left out")
			assert.NotContains(t, res.Error.Traceback, "\x1b[", "no colour codes")
			assert.True(t, strings.HasPrefix(res.Error.Traceback, "Cell In[4], line 2\n    json.loads('{')\n"), res.Error.Traceback)

			res = run(t, k, "input('name? ')")
			require.Equal(t, StatusError, res.Status)
			assert.Contains(t, res.Error.Value, "stdin is not available in this session")
			res = run(t, k, "import sys\nsys.stdin.read()")
			assert.Contains(t, res.Error.Value, "stdin is not available in this session")
			res = run(t, k, "import os\nos.read(0, 10)")
			require.Equal(t, StatusOK, res.Status)
			assert.Equal(t, "b''", res.Value, "fd 0 reads nothing")
		})
	}
}

func TestPythonSoftTimeoutKeepsNamespace(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			runOK(t, k, "kept = 'still here'")
			res, err := k.Execute(context.Background(), "while True: pass", ExecOptions{Timeout: time.Second})
			require.NoError(t, err)
			assert.Equal(t, StatusTimeout, res.Status)
			assert.Equal(t, "CellTimeout", res.Error.Name)
			assert.Contains(t, res.Error.Traceback, "while True: pass")
			assert.Equal(t, "'still here'", runOK(t, k, "kept").Value)
		})
	}
}

func TestPythonHardDeadlineAndRestart(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			runOK(t, k, "kept = 1")
			code := "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass"
			_, err := k.Execute(context.Background(), code, ExecOptions{Timeout: 500 * time.Millisecond})
			var dl *DeadlineError
			require.ErrorAs(t, err, &dl)
			assert.Contains(t, err.Error(), "was killed")

			_, err = k.Execute(context.Background(), "1", ExecOptions{})
			require.Error(t, err, "a killed kernel refuses cells until restarted")
			assert.Contains(t, err.Error(), "restart")

			require.NoError(t, k.Restart(context.Background()))
			res := run(t, k, "kept")
			assert.Equal(t, StatusError, res.Status, "a restart starts an empty namespace")
			assert.Equal(t, "NameError", res.Error.Name)
			assert.Equal(t, 1, res.Count)
			assert.Equal(t, "2", runOK(t, k, "1 + 1").Value)
		})
	}
}

func TestPythonDeadKernel(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			for _, tc := range []struct {
				name, code string
				status     int
				signal     string
				stderr     string
			}{
				{"os._exit", "import os\nos._exit(3)", 3, "", ""},
				{"exit()", "exit()", 0, "", ""},
				{"quit()", "quit()", 0, "", ""},
				{"segfault", "import ctypes\nctypes.string_at(0)", -1, "SIGSEGV (signal 11: segmentation fault)", "Segmentation fault"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					k := startPython(t, f, LocalConfig{})
					_, err := k.Execute(context.Background(), tc.code, ExecOptions{})
					var dead *DeadError
					require.ErrorAs(t, err, &dead)
					assert.Equal(t, tc.status, dead.Exit.Code)
					if tc.signal != "" {
						assert.Contains(t, err.Error(), "killed by "+tc.signal)
						assert.Contains(t, dead.Exit.StderrTail, tc.stderr, "the tail of the kernel's stderr")
					} else {
						assert.Contains(t, err.Error(), fmt.Sprintf("exited with status %d", tc.status))
					}
					assert.True(t, dead.Exit.OnHost)

					done := make(chan error, 1)
					go func() { _, err := k.Execute(context.Background(), "1", ExecOptions{}); done <- err }()
					select {
					case err := <-done:
						require.Error(t, err)
						assert.Contains(t, err.Error(), "not running")
					case <-time.After(5 * time.Second):
						t.Fatal("Execute on a dead kernel hung")
					}
				})
			}
		})
	}
}

func TestPythonOutputCapBoundsMemory(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := k.Execute(context.Background(), "print('x' * 50_000_000)\nfor i in range(3): print('line', i)",
				ExecOptions{Timeout: 30 * time.Second, MaxOutputBytes: 1 << 20})
			require.NoError(t, err)
			runtime.ReadMemStats(&after)
			require.Equal(t, StatusOK, res.Status)
			assert.LessOrEqual(t, len(res.Stdout), 1<<20+200)
			assert.Greater(t, res.DroppedBytes, int64(48_000_000))
			assert.Contains(t, res.Stdout, fmt.Sprintf("[%d bytes dropped]", res.DroppedBytes))
			assert.True(t, strings.HasSuffix(res.Stdout, "line 0\nline 1\nline 2\n"), "the tail is kept")
			grown := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, grown, uint64(32<<20), "the Go side allocated %d bytes for a 50 MB print", grown)

			res = runOK(t, k, "'y' * 3_000_000")
			assert.Less(t, len(res.Value), 1<<20+200, "the value text is capped too")
			assert.Greater(t, res.DroppedBytes, int64(1_000_000))
		})
	}
}

func TestPythonProtocolSurvivesAbuse(t *testing.T) {
	t.Parallel()
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			// fd 1 closed: the next cell gets it back.
			res := run(t, k, "import os\nos.close(1)")
			assert.Equal(t, StatusOK, res.Status)
			assert.Equal(t, "back\n", runOK(t, k, "print('back')").Stdout)
			runOK(t, k, "import sys\nsys.stdout.close()")
			assert.Equal(t, "again\n", runOK(t, k, "print('again')").Stdout)

			// A thread that prints after its cell ended.
			runOK(t, k, "import threading, time\n"+
				"def spam():\n    for i in range(200):\n        print('noise', i, '{\"id\": 99}')\n        time.sleep(0.002)\n"+
				"spammer = threading.Thread(target=spam, daemon=True)\nspammer.start()")
			for i := range 5 {
				res := runOK(t, k, fmt.Sprintf("%d * 2", i))
				assert.Equal(t, strconv.Itoa(i*2), res.Value)
			}
			runOK(t, k, "spammer.join()") // the thread's end, not a sleep long enough for it
			res = runOK(t, k, "'ok'")
			assert.Equal(t, "'ok'", res.Value)
			assert.Empty(t, res.Stdout, "nothing of the thread after its end")

			// Bytes that are not UTF-8.
			res = runOK(t, k, "os.write(1, b'bad \\xff\\xfe bytes\\n');")
			assert.Equal(t, "bad \uFFFD\uFFFD bytes\n", res.Stdout)
			res = runOK(t, k, "import sys\nsys.stdout.buffer.write(b'\\x80\\n');")
			assert.Equal(t, "\uFFFD\n", res.Stdout)
		})
	}
}

func TestPythonEnvironmentAndData(t *testing.T) {
	data := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(data, "tasks.jsonl"), []byte("{\"id\": 1}\n{\"id\": 2}\n"), 0o644))
	t.Setenv("CTXCODE_TEST_SECRET_API_KEY", "sk-do-not-leak")
	f := flavours(t)[0]
	k := startPython(t, f, LocalConfig{DataDir: data})
	res := runOK(t, k, "import os, json\nsorted(os.listdir('data')), [json.loads(l) for l in open('data/tasks.jsonl')]")
	assert.Equal(t, "(['tasks.jsonl'], [{'id': 1}, {'id': 2}])", res.Value)
	res = runOK(t, k, "[k for k in os.environ if 'KEY' in k or 'TOKEN' in k]")
	assert.Equal(t, "[]", res.Value, "no secrets from the parent environment")
}

func TestPythonCloseKillsChildren(t *testing.T) {
	t.Parallel()
	f := flavours(t)[0]
	k := startPython(t, f, LocalConfig{})
	// The kernel may have a PID namespace of its own: find the child by its
	// command line, not by the pid the kernel sees.
	arg := fmt.Sprintf("300.%d", time.Now().UnixNano()%1e9)
	runOK(t, k, "import subprocess\np = subprocess.Popen(['sleep', '"+arg+"'])\np.pid")
	pid := hostPID(t, "sleep\x00"+arg+"\x00")
	require.NoError(t, k.Close())
	require.NoError(t, k.Close(), "Close is idempotent")
	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || isZombie(pid)
	}, 5*time.Second, 50*time.Millisecond, "the child process of a closed kernel must not live on")
	_, err := k.Execute(context.Background(), "1", ExecOptions{})
	assert.ErrorIs(t, err, ErrClosed)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] == "Z"
}

func TestFindPythonMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := FindPython("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apt-get install python3")
	assert.Contains(t, err.Error(), "--sandbox docker")
}

func TestStartFailsClearly(t *testing.T) {
	t.Parallel()
	tr, err := NewLocal(LocalConfig{Argv: []string{"/bin/sh", "-c", "echo 'no python here' >&2; exit 7"}})
	require.NoError(t, err)
	_, err = Start(context.Background(), Python, tr, ClientOptions{StartTimeout: 5 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited with status 7")
	assert.Contains(t, err.Error(), "no python here")

	_, err = NewLocal(LocalConfig{Argv: []string{"python3"}, DataDir: "/no/such/folder"})
	assert.ErrorContains(t, err, "data folder")
}

func TestTailBufferKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	tb := &TailBuffer{max: 40}
	for i := range 100 {
		fmt.Fprintf(tb, "line %02d\n", i)
	}
	s := tb.String()
	assert.True(t, strings.HasPrefix(s, "line 00\n... ["), "the head ends on a whole line: %q", s)
	assert.True(t, strings.HasSuffix(s, " bytes dropped] ...\nline 97\nline 98\nline 99\n"), "the tail starts a line: %q", s)
	assert.NotContains(t, s, "\n\n", "no blank line around the marker")
	assert.EqualValues(t, 800-len("line 00\n")-3*len("line 00\n"), DroppedIn(s), "what the rule trimmed is counted")
	small := &TailBuffer{max: 40}
	fmt.Fprint(small, "short")
	assert.Equal(t, "short", small.String())
}

func TestPythonShellEscapeIsPlain(t *testing.T) {
	t.Parallel()
	python, ok := findPython("IPython")
	if !ok {
		skipOrFail(t, "no python3 with IPython")
	}
	k := startPython(t, flavour{"ipython", python, false}, LocalConfig{})
	res := runOK(t, k, "!echo out; echo err >&2")
	assert.Equal(t, "out\n", res.Stdout, "no pseudo-terminal: no \\r, streams kept apart")
	assert.Equal(t, "err\n", res.Stderr)
}

// The IPython shell is made without IPython's terminal and jedi (stand-ins
// keep them out of the cold start), and a cell that wants either gets the
// real module.
func TestPythonIPythonStartsWithoutTerminalOrJedi(t *testing.T) {
	t.Parallel()
	python, ok := findPython("IPython", "jedi", "prompt_toolkit")
	if !ok {
		skipOrFail(t, "no python3 with IPython, jedi and prompt_toolkit")
	}
	k := startPython(t, flavour{"ipython", python, false}, LocalConfig{})
	res := runOK(t, k, "import sys\nsorted(m for m in ('jedi', 'prompt_toolkit', 'IPython.terminal.embed') if m in sys.modules)")
	assert.Equal(t, "[]", res.Value, "the cold start imported what the driver never uses")
	res = runOK(t, k, "import jedi, IPython.terminal.embed as e\ntype(jedi.Script).__name__, e.InteractiveShellEmbed.__name__")
	assert.Equal(t, "('type', 'InteractiveShellEmbed')", res.Value, "a cell gets the real modules")
	res = runOK(t, k, "get_ipython().__class__.__name__, 1 + 1")
	assert.Equal(t, "('InteractiveShell', 2)", res.Value)
}

func TestPythonOutputLoopDoesNotFillDisk(t *testing.T) {
	t.Parallel()
	f := flavours(t)[0]
	k := startPython(t, f, LocalConfig{})
	code := "import os, time\nchunk = 'z' * (1 << 20) + '\\n'\nbiggest = 0\n" +
		"for i in range(300):\n    os.write(1, chunk.encode())\n    biggest = max(biggest, os.fstat(1).st_blocks * 512)\n    time.sleep(0.002)\n" +
		"os.write(2, b'%d\\n' % biggest)\nprint('end')"
	res, err := k.Execute(context.Background(), code, ExecOptions{Timeout: 60 * time.Second, MaxOutputBytes: 64 << 10})
	require.NoError(t, err)
	require.Equal(t, StatusOK, res.Status, "%+v", res.Error)
	biggest, err := strconv.ParseInt(strings.TrimSpace(res.Stderr), 10, 64)
	require.NoError(t, err, res.Stderr)
	assert.Less(t, biggest, int64(64<<20), "300 MiB printed, but the capture file never held more than this")
	assert.Greater(t, res.DroppedBytes, int64(300<<20)-(128<<10))
	assert.True(t, strings.HasSuffix(res.Stdout, "\nend\n"), "the tail is kept")
	assert.True(t, strings.HasPrefix(res.Stdout, "zzzz"), "the head is kept")
}

func TestPythonSignalsDoNotCutResponses(t *testing.T) {
	t.Parallel()
	f := flavours(t)[0]
	k := startPython(t, f, LocalConfig{})
	runOK(t, k, "import os, signal, threading, time\n"+
		"signal.signal(signal.SIGUSR1, lambda *a: None)\n"+
		"stop = False\n"+
		"def storm():\n    while not stop:\n        os.kill(os.getpid(), signal.SIGUSR1)\n        time.sleep(0.0005)\n"+
		"threading.Thread(target=storm, daemon=True).start()")
	for range 5 {
		res, err := k.Execute(context.Background(), "print('x' * 3_000_000)", ExecOptions{MaxOutputBytes: 4 << 20})
		require.NoError(t, err)
		assert.Len(t, res.Stdout, 3_000_001)
	}
	runOK(t, k, "stop = True")
}

func TestPythonForkedChildLeavesTheProtocol(t *testing.T) {
	t.Parallel()
	f := flavours(t)[0]
	k := startPython(t, f, LocalConfig{})
	res := runOK(t, k, "import os\npid = os.getpid()\nchild = os.fork()\nchild > 0")
	assert.Equal(t, "True", res.Value)
	for range 4 {
		assert.Equal(t, "True", runOK(t, k, "os.getpid() == pid").Value, "every cell runs in the kernel, never in the child")
	}
}

func TestClientCancelledContextKeepsKernel(t *testing.T) {
	t.Parallel()
	k := startPython(t, flavours(t)[0], LocalConfig{})
	runOK(t, k, "kept = 1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := k.Execute(ctx, "kept + 1", ExecOptions{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "1", runOK(t, k, "kept").Value, "a cell never sent does not cost the kernel")
}

func TestClientCloseInterruptsRunningCell(t *testing.T) {
	t.Parallel()
	dir := sharedDir(t)
	k := startPython(t, flavours(t)[0], LocalConfig{Dir: dir})
	done := make(chan error, 1)
	go func() {
		_, err := k.Execute(context.Background(), "import time\nopen('running', 'w').close()\ntime.sleep(120)", ExecOptions{Timeout: 5 * time.Minute})
		done <- err
	}()
	waitForFile(t, filepath.Join(dir, "running")) // the cell runs
	require.NoError(t, k.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the running cell")
	}
}

// failingTransport starts the first kernel and then refuses.
type failingTransport struct {
	Transport
	started int
}

func (f *failingTransport) Start(ctx context.Context) (Conn, error) {
	f.started++
	if f.started > 1 {
		return nil, errors.New("no more kernels today")
	}
	return f.Transport.Start(ctx)
}

func TestClientFailedRestartIsReported(t *testing.T) {
	t.Parallel()
	f := flavours(t)[0]
	tr, err := NewLocalPython(f.python, f.noIPython, LocalConfig{})
	require.NoError(t, err)
	k, err := Start(context.Background(), Python, &failingTransport{Transport: tr}, ClientOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.Close() })
	require.ErrorContains(t, k.Restart(context.Background()), "no more kernels today")
	_, err = k.Execute(context.Background(), "1", ExecOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no more kernels today")
	assert.NotErrorIs(t, err, ErrClosed)
}

func TestClientLineBoundFollowsOutputCap(t *testing.T) {
	t.Parallel()
	f := flavours(t)[0]
	tr, err := NewLocalPython(f.python, f.noIPython, LocalConfig{})
	require.NoError(t, err)
	k, err := Start(context.Background(), Python, tr, ClientOptions{MaxLineBytes: 1 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.Close() })
	// 400 kB of control characters is 2.4 MB of JSON: over the floor, within the cap's bound.
	res := runOK(t, k, "s = '\\x01' * 400_000\nprint(s)\ns")
	assert.Len(t, res.Stdout, 400_001)
	assert.Equal(t, "2", runOK(t, k, "1 + 1").Value)
}

func TestPythonDataIsAReadOnlyCopy(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	orig := filepath.Join(data, "tasks.jsonl")
	require.NoError(t, os.WriteFile(orig, []byte("{\"id\": 1}\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(data, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "sub", "x.csv"), []byte("a,b\n"), 0o644))
	k := startPython(t, flavours(t)[0], LocalConfig{DataDir: data})
	assert.Equal(t, "'a,b\\n'", runOK(t, k, "open('data/sub/x.csv').read()").Value)
	// Whatever the cell manages (root may write the copy), the user's files stay.
	run(t, k, "open('data/tasks.jsonl', 'w').write('gone')")
	run(t, k, "import os, shutil\nos.chmod('data', 0o755)\nshutil.rmtree('data/sub')\nos.remove('data/tasks.jsonl')")
	b, err := os.ReadFile(orig)
	require.NoError(t, err)
	assert.Equal(t, "{\"id\": 1}\n", string(b))
	assert.FileExists(t, filepath.Join(data, "sub", "x.csv"))

	if os.Geteuid() != 0 {
		k2 := startPython(t, flavours(t)[0], LocalConfig{DataDir: data})
		res := run(t, k2, "open('data/tasks.jsonl', 'w')")
		assert.Equal(t, "PermissionError", res.Error.Name, "the copy itself is read-only")
	}
}

func TestLocalDataCopyLimit(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(data, "big.bin"), make([]byte, 4096), 0o644))
	tr, err := NewLocal(LocalConfig{Argv: []string{"true"}, DataDir: data, MaxDataCopy: 1024})
	require.NoError(t, err)
	_, err = tr.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--data-link")
	assert.Contains(t, err.Error(), "--sandbox docker")
}

// TestPythonAnswerLiteral: an ANSWER whose argument the model typed as a
// literal is flagged, one that code computed is not, and the flag is the
// call's that ran, on IPython, the standard library and the oldest
// interpreter (which places a call by its line, not its column).
func TestPythonAnswerLiteral(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, code string
		literal    bool
	}{
		{"number", "ANSWER(42)", true},
		{"negative float", "ANSWER(-3.5)", true},
		{"string", `ANSWER("Alice")`, true},
		{"list of literals", `ANSWER(["K00012", 'K00034', 3])`, true},
		{"dict of named parts", `ANSWER({"mean": 3.2, "p": [0.04]})`, true},
		{"over several lines", "ANSWER(\n    [1,\n     2])", true},
		{"keyword", "ANSWER(value=7)", true},
		{"inside a function of the cell", "def f():\n    ANSWER('x')\nf()", true},
		{"a name", "x = 42\nANSWER(x)", false},
		{"arithmetic", "ANSWER(40 + 2)", false},
		{"a call", "ANSWER(len([1, 2]))", false},
		{"a comprehension", "ANSWER([n for n in range(3)])", false},
		{"a list holding a name", "x = 2\nANSWER([1, x])", false},
		{"an f-string with a field", "x = 2\nANSWER(f'{x}')", false},
		{"the computed branch ran", "x = [1]\nif x: ANSWER(x)\nelse: ANSWER(0)", false},
		{"the literal branch ran", "x = [1]\nif not x: ANSWER(x)\nelse: ANSWER(0)", true},
		{"a literal in a comment", "x = 5\nANSWER(x)  # ANSWER(5)", false},
		{"two calls on a line, the computed one ran", "ANSWER(len('ab')); ANSWER(2)", false},
	}
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			k := startPython(t, f, LocalConfig{})
			for _, c := range cases {
				res := runOK(t, k, c.code)
				require.True(t, res.Answered(), "%s: %s", c.name, c.code)
				assert.Equal(t, c.literal, res.AnswerLiteral, "%s: %s", c.name, c.code)
			}
			assert.False(t, runOK(t, k, "print(1)").AnswerLiteral, "a cell without ANSWER")
		})
	}
}
