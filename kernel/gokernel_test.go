package kernel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goKernelSession drives ServeGo over in-memory pipes, one request at a time.
type goKernelSession struct {
	t      testing.TB
	in     *io.PipeWriter
	out    *bufio.Reader
	nextID int64
}

// startGoKernelSession serves a fresh Go kernel until the test ends, and
// checks then that ServeGo returned cleanly.
func startGoKernelSession(t testing.TB) *goKernelSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := ServeGo(context.Background(), inR, outW)
		outW.CloseWithError(errors.Join(err, io.EOF))
		done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // a result still on its way must not block ServeGo
		select {
		case err := <-done:
			assert.NoError(t, err, "ServeGo")
		case <-time.After(10 * time.Second):
			t.Error("ServeGo did not return after its input ended")
		}
	})
	return &goKernelSession{t: t, in: inW, out: bufio.NewReader(outR)}
}

// sendLine writes one raw request line and reads one result.
func (s *goKernelSession) sendLine(line string) Result {
	s.t.Helper()
	_, err := io.WriteString(s.in, line+"\n")
	require.NoError(s.t, err)
	resp, err := s.out.ReadBytes('\n')
	require.NoError(s.t, err, "read result")
	var res Result
	require.NoError(s.t, json.Unmarshal(resp, &res), "result line %q", resp)
	return res
}

func (s *goKernelSession) send(req Request) Result {
	s.t.Helper()
	s.nextID++
	req.ID = s.nextID
	line, err := json.Marshal(req)
	require.NoError(s.t, err)
	res := s.sendLine(string(line))
	require.Equal(s.t, req.ID, res.ID, "the result answers the request")
	return res
}

func (s *goKernelSession) exec(code string) Result {
	s.t.Helper()
	return s.send(Request{Op: OpExec, Code: code, TimeoutMS: 10_000})
}

// execOK runs a cell that must succeed.
func (s *goKernelSession) execOK(code string) Result {
	s.t.Helper()
	res := s.exec(code)
	require.Equal(s.t, StatusOK, res.Status, "cell %q: %+v", code, res.Error)
	return res
}

func TestGoKernelCells(t *testing.T) {
	s := startGoKernelSession(t)
	steps := []struct {
		code, value, stdout string
	}{
		{code: "x := 41"},
		{code: "x + 1", value: "42"},
		{code: "func add(a, b int) int { return a + b }"},
		{code: "add(2, 3)", value: "5"},
		{code: `"a" + "b"`, value: `"ab"`},
		{code: "[]int{1, 2}", value: "[1 2]"},
		{code: `map[string]int{"a": 1}`, value: "map[a:1]"},
		{code: "type point struct{ X, Y int }\npoint{1, 2}", value: "{1 2}"},
		{code: "type point struct {\n\tX, Y int\n}"},                                     // the same type again: a rerun cell
		{code: "func add(a, b int) int { return a + b + 100 }\nadd(1, 2)", value: "103"}, // funcs can change
		{code: "var e error\ne", value: ""},
		{code: "nil", value: ""},
		{code: "x = 5", value: ""},
		{code: "x", value: "5"},
		{code: "import \"fmt\"\nfmt.Println(\"hi\")", stdout: "hi\n"},
		{code: "import \"strconv\"\nstrconv.Atoi(\"12\")", value: "(12, <nil>)"},
		{code: "import \"strings\"\ns := strings.ToUpper(\"go\")\nfunc twice(v string) string { return v + v }\ntwice(s)", value: `"GOGO"`},
		{code: "func noop() {}"},
		{code: "noop()"},
		{code: "total := 0\nfor i := 1; i <= 10; i++ {\n\ttotal += i\n}\ntotal", value: "55"},
		{code: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"main ran\")\n}", stdout: "main ran\n"},
		{code: "1 + 1", value: "2", stdout: ""}, // a declared main is run once, not after every cell
		{code: "// only a comment\n"},
	}
	for i, st := range steps {
		res := s.execOK(st.code)
		assert.Equal(t, i+1, res.Count, "cell %q", st.code)
		assert.Equal(t, st.value, res.Value, "value of %q", st.code)
		assert.Equal(t, st.stdout, res.Stdout, "stdout of %q", st.code)
		assert.Empty(t, res.Stderr, "stderr of %q", st.code)
		assert.Nil(t, res.Error)
		assert.False(t, res.Answered())
	}
}

func TestGoKernelOutputCapture(t *testing.T) {
	s := startGoKernelSession(t)
	res := s.execOK(`import (
	"fmt"
	"log"
	"os"
)
fmt.Println("a")
os.Stdout.Write([]byte("b\n"))
fmt.Fprintln(os.Stdout, "c")
os.Stdout.WriteString("d\n")
println("e")
fmt.Fprintln(os.Stderr, "to stderr")
log.SetFlags(0)
log.Println("logged")`)
	assert.Equal(t, "a\nb\nc\nd\ne\n", res.Stdout, "every way to stdout lands in order")
	assert.Equal(t, "to stderr\nlogged\n", res.Stderr)

	res = s.execOK(`fmt.Print("no newline")`)
	assert.Equal(t, "no newline", res.Stdout)
	res = s.execOK(`os.Stdout.Write([]byte("bad \xff\xfe bytes\n"))`)
	assert.Equal(t, "bad \uFFFD\uFFFD bytes\n", res.Stdout, "invalid UTF-8 survives as replacement characters")
	assert.Equal(t, "(13, <nil>)", res.Value, "a Write call shows its results")
	res = s.execOK(`fmt.Print("\x00ctxcode-sync-\x01")`)
	assert.Equal(t, "\x00ctxcode-sync-\x01", res.Stdout, "output that looks like the sync marker passes")

	res = s.execOK("_, err := os.Stdin.Read(make([]byte, 8))\nerr")
	assert.Equal(t, "EOF", res.Value, "stdin is empty")

	// A goroutine that prints after its cell ended does not disturb later cells.
	// (It uses no variable of the session: yaegi's frame of globals, which
	// a later cell's declarations resize, is not safe for goroutines.)
	s.execOK(`import "time"
go func() {
	for i := 0; i < 100; i++ {
		fmt.Println("noise", i, "{\"id\": 99}")
		time.Sleep(time.Millisecond)
	}
}()`)
	for i := range 5 {
		res := s.execOK(fmt.Sprintf("%d * 2", i))
		assert.Equal(t, fmt.Sprint(i*2), res.Value, "its noise may be in the cells' output, never in their values")
	}
	assert.Equal(t, `"ok"`, s.execOK(`"ok"`).Value)
}

func TestGoKernelAnswer(t *testing.T) {
	s := startGoKernelSession(t)
	res := s.execOK("import \"fmt\"\nfmt.Println(\"before\")\nANSWER(map[string]int{\"a\": 1})\nfmt.Println(\"after\")")
	assert.JSONEq(t, `{"a": 1}`, string(res.Answer))
	assert.True(t, res.Answered())
	assert.Equal(t, "before\n", res.Stdout, "ANSWER ends the cell")
	assert.Empty(t, res.Value)

	// Inside a function, with a recover that must not catch it.
	s.execOK(`func finish(n int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Println("recovered", r)
		}
	}()
	ANSWER([]any{n, "done"})
	fmt.Println("not reached")
}`)
	res = s.execOK("finish(3)\nfmt.Println(\"not reached either\")")
	assert.JSONEq(t, `[3, "done"]`, string(res.Answer))
	assert.Empty(t, res.Stdout)

	// A value json cannot encode is recorded as its %v text.
	res = s.execOK("import \"math\"\nANSWER(math.NaN())")
	assert.JSONEq(t, `"NaN"`, string(res.Answer))

	// The next cell starts without an answer.
	res = s.execOK("1")
	assert.False(t, res.Answered())
	assert.Equal(t, "null", string(res.Answer))
}

func TestGoKernelErrors(t *testing.T) {
	s := startGoKernelSession(t)
	s.execOK("x := 7\nfunc div(a, b int) int {\n\treturn a / b\n}\ntype pair struct{ A, B int }")
	// In expected texts, {cell} stands for the cell's name, In[n].
	cases := []struct {
		name, code       string
		errName          string
		value, traceback []string // substrings
	}{
		{
			name: "undefined name", code: "y := x + missing",
			errName: "CompileError", value: []string{"{cell}:1:10: undefined: missing"},
			traceback: []string{"{cell} line 1: y := x + missing"},
		},
		{
			name: "syntax error", code: "y := (1 + 2))\nz := 3",
			errName: "CompileError", value: []string{"{cell}:1:13: expected"},
			traceback: []string{"{cell} line 1: y := (1 + 2))"},
		},
		{
			name: "unfinished cell", code: "x := (1 +",
			errName: "CompileError", value: []string{"{cell}:1: unexpected end of cell"},
		},
		{
			name: "changed type", code: "type pair struct{ A, B, C int }",
			errName: "CompileError", value: []string{"{cell}:1:6: type pair is already declared", "another name"},
		},
		{
			name: "undefined name next to ANSWER", code: "ANSWER(missing)",
			errName: "CompileError", value: []string{"{cell}:1:8: undefined: missing"},
		},
		{
			name: "type error", code: `x + "a"`,
			errName: "CompileError", value: []string{"{cell}:1:", "mismatched types"},
		},
		{
			name: "panic", code: `panic("boom")`,
			errName: "panic", value: []string{"boom"},
			traceback: []string{`{cell} line 1: panic("boom")`, "panic: boom"},
		},
		{
			name: "runtime error in a function", code: "div(1, 0)",
			errName: "RuntimeError", value: []string{"integer divide by zero"},
			traceback: []string{"In[1] line 3 (in div): return a / b"},
		},
		{
			name: "index out of range", code: "var a []int\na[3]",
			errName: "RuntimeError", value: []string{"index out of range"},
			traceback: []string{"{cell} line 2: a[3]"},
		},
		{
			name: "nil pointer", code: "var p *struct{ A int }\np.A",
			errName: "RuntimeError", value: []string{"nil pointer dereference"},
		},
		{
			name: "nil map", code: "var m map[string]int\nm[\"a\"] = 1",
			errName: "RuntimeError", value: []string{"assignment to entry in nil map"},
		},
		{
			name: "os.Exit", code: "import \"os\"\nos.Exit(3)",
			errName: "Exit", value: []string{"os.Exit(3)"},
		},
		{
			name: "top-level defer", code: "import \"fmt\"\ndefer fmt.Println(1)",
			errName: "CompileError", value: []string{"{cell}:2:1: defer at the top level of a cell is not supported"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := s.exec(c.code)
			cell := fmt.Sprintf("In[%d]", res.Count)
			assert.Equal(t, StatusError, res.Status)
			require.NotNil(t, res.Error)
			assert.Equal(t, c.errName, res.Error.Name)
			for _, want := range c.value {
				assert.Contains(t, res.Error.Value, strings.ReplaceAll(want, "{cell}", cell))
			}
			for _, want := range c.traceback {
				assert.Contains(t, res.Error.Traceback, strings.ReplaceAll(want, "{cell}", cell))
			}
			assert.LessOrEqual(t, strings.Count(res.Error.Traceback, "\n"), 1, "the traceback is compact")
			assert.NotContains(t, res.Error.Traceback, "yaegi")
			assert.NotContains(t, res.Error.Traceback, ".go:")
			assert.Empty(t, res.Stderr, "yaegi's panic lines do not leak into stderr")

			assert.Equal(t, "7", s.execOK("x").Value, "the kernel lives on")
		})
	}
}

func TestGoKernelRefusesImports(t *testing.T) {
	s := startGoKernelSession(t)
	for _, p := range []string{"os/exec", "net", "net/http", "syscall", "unsafe", "plugin", "github.com/foo/bar", "iter"} {
		t.Run(p, func(t *testing.T) {
			res := s.exec(fmt.Sprintf("import %q", p))
			assert.Equal(t, StatusError, res.Status)
			require.NotNil(t, res.Error)
			assert.Equal(t, "ImportError", res.Error.Name)
			assert.Contains(t, res.Error.Value, fmt.Sprintf("import %q is not available in the ctxcode Go kernel", p))
		})
	}
	res := s.exec("import (\n\t\"fmt\"\n\t\"os/exec\"\n)\nfmt.Println(exec.Command)")
	require.NotNil(t, res.Error)
	assert.Contains(t, res.Error.Value, fmt.Sprintf(`In[%d]:3:2: import "os/exec" is not available`, res.Count))

	s.execOK(`import "os"`)
	res = s.exec(`os.StartProcess("/bin/true", nil, &os.ProcAttr{})`)
	assert.Equal(t, StatusError, res.Status, "os.StartProcess is removed too")

	s.execOK(`import "math/rand"`)
	res = s.exec(`import "crypto/rand"`)
	require.NotNil(t, res.Error)
	assert.Contains(t, res.Error.Value, "already refers to \"math/rand\"")
	s.execOK(`import crand "crypto/rand"`)
	s.execOK(`import "math/rand"`) // importing again is harmless
	s.execOK("import \"slices\"\nslices.Contains([]int{1, 2}, 2)")
}

func TestGoKernelTimeout(t *testing.T) {
	if goRaceDetector {
		// yaegi's EvalWithContext returns on timeout while its goroutine
		// still unwinds and reads the interpreter's frame. The kernel waits
		// until that goroutine is gone before the next cell (awaitStopped),
		// but the race detector sees no synchronisation in that wait.
		t.Skip("yaegi's EvalWithContext cancellation is reported as a race by the race detector; see awaitStopped")
	}
	s := startGoKernelSession(t)
	s.execOK("x := 7\nfunc spin() int {\n\tn := 0\n\tfor {\n\t\tn++\n\t}\n\treturn n\n}")
	for _, code := range []string{
		"for {}",
		"spin()",
		"ch := make(chan int)\n<-ch",
		"y := 1\nfor {\n\ty++\n}",
	} {
		res := s.send(Request{Op: OpExec, Code: code, TimeoutMS: 300})
		assert.Equal(t, StatusTimeout, res.Status, "cell %q", code)
		require.NotNil(t, res.Error)
		assert.Equal(t, "CellTimeout", res.Error.Name)
		assert.Contains(t, res.Error.Value, "300ms")
		assert.GreaterOrEqual(t, res.ElapsedMS, int64(300))
		// yaegi stops the interpreted loop; the namespace survives.
		assert.Equal(t, "7", s.execOK("x").Value, "after %q", code)
	}
	assert.Equal(t, "8", s.execOK("x + 1").Value)

	// A call into compiled code cannot be interrupted: the kernel waits
	// until it returns before it answers, so that the next cell does not
	// race with the unwinding one.
	res := s.send(Request{Op: OpExec, Code: "import \"time\"\ntime.Sleep(600 * time.Millisecond)\nx = 100", TimeoutMS: 200})
	// Looked at before any other cell: the goroutine of a cell that ended
	// normally may still be on its way out after its answer, but the
	// kernel answers a timed-out cell only once every one is gone.
	assert.False(t, goStacksContain([]byte("created by "+goEvalCreator+" in goroutine ")),
		"no evaluation is left running")
	assert.Equal(t, StatusTimeout, res.Status)
	assert.GreaterOrEqual(t, res.ElapsedMS, int64(600))
	assert.Equal(t, "7", s.execOK("x").Value, "the rest of the cell did not run")
}

func TestGoKernelStuckCellEndsServe(t *testing.T) {
	k, err := newGoKernel()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, k.close()) })
	k.stopWait = 100 * time.Millisecond
	inR, inW := io.Pipe()
	defer inW.Close()
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- k.serve(context.Background(), inR, &out) }()
	_, err = io.WriteString(inW, `{"id":1,"op":"exec","code":"import \"time\"\ntime.Sleep(2 * time.Second)","timeout_ms":100}`+"\n")
	require.NoError(t, err)
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cell In[1]: the interrupted code did not stop within 100ms")
		assert.Empty(t, out.String(), "no result: the client sees the kernel die and restarts it")
	case <-time.After(10 * time.Second):
		t.Fatal("serve went on with a cell that did not stop")
	}
}

func TestGoKernelOutputCap(t *testing.T) {
	s := startGoKernelSession(t)
	const limit = 1 << 20
	res := s.send(Request{Op: OpExec, TimeoutMS: 60_000, MaxOutputBytes: limit, Code: `import (
	"fmt"
	"os"
	"strings"
)
line := strings.Repeat("x", 1023) + "\n"
for i := 0; i < 50*1024; i++ {
	os.Stdout.WriteString(line)
}
for i := 0; i < 3; i++ {
	fmt.Println("line", i)
}`})
	require.Equal(t, StatusOK, res.Status, "%+v", res.Error)
	assert.LessOrEqual(t, len(res.Stdout), limit+100)
	assert.Greater(t, res.DroppedBytes, int64(48_000_000))
	assert.Contains(t, res.Stdout, fmt.Sprintf("\n... [%d bytes dropped] ...\n", res.DroppedBytes))
	assert.True(t, strings.HasPrefix(res.Stdout, strings.Repeat("x", 1023)+"\n"), "the head is kept")
	assert.True(t, strings.HasSuffix(res.Stdout, "line 0\nline 1\nline 2\n"), "the tail is kept")
	assert.Equal(t, int64(50*1024*1024+21), int64(len(res.Stdout))-int64(len(fmt.Sprintf("... [%d bytes dropped] ...\n", res.DroppedBytes)))+res.DroppedBytes,
		"kept + dropped = written")

	res = s.send(Request{Op: OpExec, Code: `strings.Repeat("y", 3_000_000)`, MaxOutputBytes: limit})
	require.Equal(t, StatusOK, res.Status)
	assert.Less(t, len(res.Value), limit+100, "the value text is capped too")
	assert.Greater(t, res.DroppedBytes, int64(1_000_000))

	res = s.send(Request{Op: OpExec, Code: `fmt.Fprint(os.Stderr, strings.Repeat("e\n", 1000))`, MaxOutputBytes: 100})
	assert.LessOrEqual(t, len(res.Stderr), 100+40)
	assert.Contains(t, res.Stderr, "bytes dropped")
	assert.Equal(t, int64(2000-100), res.DroppedBytes)
}

func TestGoKernelProtocol(t *testing.T) {
	s := startGoKernelSession(t)
	res := s.send(Request{Op: OpPing})
	assert.Equal(t, StatusOK, res.Status)
	assert.Regexp(t, `^go \d+\.\d+(\.\d+)?.* yaegi`, res.Value)

	res = s.send(Request{Op: "launch"})
	assert.Equal(t, StatusError, res.Status)
	require.NotNil(t, res.Error)
	assert.Equal(t, "ProtocolError", res.Error.Name)
	assert.Contains(t, res.Error.Value, `unknown op "launch"`)

	res = s.send(Request{Op: OpShell, Code: "ls"})
	require.NotNil(t, res.Error)
	assert.Equal(t, "ProtocolError", res.Error.Name)

	res = s.sendLine(`{"id": 5, "op": "exec", "code": `)
	assert.Equal(t, int64(0), res.ID)
	assert.Equal(t, StatusError, res.Status)
	require.NotNil(t, res.Error)
	assert.Equal(t, "ProtocolError", res.Error.Name)

	// Blank lines are skipped; the kernel keeps serving.
	_, err := io.WriteString(s.in, "\n\n")
	require.NoError(t, err)
	res = s.execOK("2 * 21")
	assert.Equal(t, "42", res.Value)
	assert.Equal(t, 1, res.Count, "only exec requests count")
	assert.GreaterOrEqual(t, res.ElapsedMS, int64(0))

	res = s.send(Request{Op: OpExec, Code: "import \"time\"\ntime.Sleep(20 * time.Millisecond)"})
	assert.GreaterOrEqual(t, res.ElapsedMS, int64(20))
}

func TestGoKernelStopsWithContext(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeGo(ctx, inR, io.Discard) }()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeGo ignored its context")
	}
}

func TestGoKernelPlanCell(t *testing.T) {
	cases := []struct {
		name, code string
		imports    []string
		kinds      []goSegKind
		expr       string
	}{
		{name: "expression", code: "x + 1", kinds: []goSegKind{goSegExpr}, expr: "x + 1"},
		{name: "statements", code: "x := 1\ny := 2", kinds: []goSegKind{goSegStmt}},
		{name: "decls then statements then value", code: "import \"fmt\"\nfunc f() int { return 1 }\ntype T int\nv := f()\nfmt.Println(v)\nv",
			imports: []string{"fmt"}, kinds: []goSegKind{goSegDecl, goSegStmt, goSegExpr}, expr: "v"},
		{name: "func literal call is a statement", code: "func() { x = 2 }()", kinds: []goSegKind{goSegExpr}, expr: "func() { x = 2 }()"},
		{name: "method is a declaration", code: "func (t T) Double() T { return 2 * t }", kinds: []goSegKind{goSegDecl}},
		{name: "multi-line expression", code: "add(\n\t1,\n\t2,\n)", kinds: []goSegKind{goSegExpr}, expr: "add(\n\t1,\n\t2,\n)"},
		{name: "if else is one statement", code: "if x > 1 {\n\tx = 1\n} else {\n\tx = 2\n}", kinds: []goSegKind{goSegStmt}},
		{name: "same line", code: "var a []int; a[0]", kinds: []goSegKind{goSegDecl, goSegExpr}, expr: "a[0]"},
		{name: "package clause dropped", code: "package main\nimport (\n\t\"fmt\"\n\t\"os\"\n)\nfunc main() {}",
			imports: []string{"fmt", "os"}, kinds: []goSegKind{goSegDecl, goSegStmt}},
		{name: "empty", code: "\n  // nothing\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := goPlanCell("In[1]", c.code)
			require.NoError(t, err)
			var imports []string
			for _, im := range plan.imports {
				imports = append(imports, im.path)
			}
			assert.Equal(t, c.imports, imports)
			var kinds []goSegKind
			expr := ""
			for _, seg := range plan.segs {
				kinds = append(kinds, seg.kind)
				if seg.kind == goSegExpr {
					expr = seg.expr
				}
			}
			assert.Equal(t, c.kinds, kinds)
			assert.Equal(t, c.expr, expr)
		})
	}

	_, err := goPlanCell("In[4]", "x := 1\ny := (2 +\n")
	var ce *goCellError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.msg, "In[4]:")
}

func TestGoKernelCapWriter(t *testing.T) {
	t.Run("under the limit", func(t *testing.T) {
		w := newGoCapWriter(100)
		fmt.Fprint(w, "hello\n")
		fmt.Fprint(w, "world\n")
		text, dropped := w.result()
		assert.Equal(t, "hello\nworld\n", text)
		assert.Zero(t, dropped)
	})
	t.Run("cut on lines", func(t *testing.T) {
		w := newGoCapWriter(40)
		for i := range 100 {
			fmt.Fprintf(w, "line %02d\n", i) // 8 bytes a line
		}
		text, dropped := w.result()
		assert.Equal(t, "line 00\nline 01\n... ["+fmt.Sprint(dropped)+" bytes dropped] ...\nline 98\nline 99\n", text)
		assert.Equal(t, int64(800-32), dropped)
	})
	t.Run("one long line", func(t *testing.T) {
		w := newGoCapWriter(10)
		for range 1000 {
			w.Write([]byte("abcdefghij"))
		}
		text, dropped := w.result()
		assert.Equal(t, "abcde\n... [9990 bytes dropped] ...\nfghij", text)
		assert.Equal(t, int64(9990), dropped)
	})
	t.Run("memory stays bounded", func(t *testing.T) {
		w := newGoCapWriter(1 << 10)
		chunk := []byte(strings.Repeat("z", 300) + "\n")
		for range 100_000 {
			n, err := w.Write(chunk)
			require.NoError(t, err)
			require.Equal(t, len(chunk), n)
		}
		assert.LessOrEqual(t, cap(w.head)+cap(w.tail), 2<<10)
		assert.Equal(t, int64(100_000*301), w.total)
	})
	t.Run("utf-8 is not split", func(t *testing.T) {
		w := newGoCapWriter(7)
		w.Write([]byte(strings.Repeat("é", 100)))
		text, dropped := w.result()
		assert.Equal(t, "é\n... [194 bytes dropped] ...\néé", text)
		assert.Equal(t, int64(194), dropped)
	})
}

func TestGoKernelStreamSync(t *testing.T) {
	s, err := newGoStream()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.close()) })
	for _, data := range []string{
		"plain\n",
		"",
		string(s.marker[:5]),                     // ends like the start of the marker
		"a" + string(s.marker[:len(s.marker)-1]), // all but its last byte
		strings.Repeat("0123456789", 20_000),     // more than a pipe holds
	} {
		s.begin(1 << 20)
		_, err := s.w.WriteString(data)
		require.NoError(t, err)
		got, dropped := s.end()
		assert.Equal(t, data, got)
		assert.Zero(t, dropped)
	}
}

func BenchmarkGoKernelServeRoundTrip(b *testing.B) {
	s := startGoKernelSession(b)
	s.execOK("1+1")
	for b.Loop() {
		res := s.exec("1+1")
		if res.Value != "2" {
			b.Fatalf("1+1 gave %+v", res)
		}
	}
}

// TestGoKernelAnswerLiteral: a Go cell whose every ANSWER passes a literal
// is flagged; one computed ANSWER in the cell, or a call made from an
// earlier cell's function, is not.
func TestGoKernelAnswerLiteral(t *testing.T) {
	s := startGoKernelSession(t)
	for _, c := range []struct {
		code    string
		literal bool
	}{
		{"ANSWER(42)", true},
		{"ANSWER(-2.5)", true},
		{`ANSWER("Alice")`, true},
		{`ANSWER([]string{"a", "b"})`, true},
		{`ANSWER(map[string]float64{"mean": 3.2})`, true},
		{"x := 41\nANSWER(x + 1)", false},
		{"import \"strings\"\nANSWER(strings.ToUpper(\"a\"))", false},
		{"func typed() { ANSWER(7) }", false}, // declares only: no answer
		{"typed()", false},                    // the call is in an earlier cell
	} {
		res := s.exec(c.code)
		assert.Equal(t, c.literal, res.AnswerLiteral, c.code)
	}
}
