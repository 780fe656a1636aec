package kernel

// The Go kernel: the kernel protocol served by a yaegi interpreter.
//
// One interp.Interpreter holds the session: variables, functions, types and
// imports persist from cell to cell. A cell is cut into segments (see
// gokernel_cell.go) that are evaluated in order with EvalWithContext under the
// cell's soft timeout. The interpreter's stdout and stderr are OS pipes whose
// contents are captured per cell (see gokernel_output.go), so fmt.Print*,
// print/println, os.Stdout and os.Stderr all land in the Result.
//
// Differences from Go and from the Python kernel, all due to the interpreter:
//   - the standard library is available without os/exec, net and net/...,
//     crypto/tls, log/syslog, syscall, unsafe and plugin; os.StartProcess is
//     removed and os.Exit panics instead of exiting;
//   - a final expression statement shows its value ("x + 1" → "42"; a
//     multi-valued call shows "(v, err)"); fmt.Print* and calls without
//     results show nothing;
//   - a soft timeout stops interpreted loops and channel waits at once; a
//     blocking call into compiled code (time.Sleep, sync.WaitGroup.Wait) runs
//     to its end first, and if that takes longer than goStopWait the kernel
//     gives up (serve returns an error, the client restarts the kernel);
//   - a declared type cannot change (yaegi would keep the old one silently,
//     so the kernel refuses the cell); a func main is run once, not after
//     every cell; defer at the top level of a cell is refused;
//   - a := that fails to compile may leave the variable it redeclares broken
//     (yaegi registers the new declaration before it finds the error);
//   - a panic in a goroutine the cell started, or a stack overflow, kills the
//     process: the client then reports a dead kernel.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// ServeGo serves the kernel protocol for Go cells: it reads one JSON Request per line from in
// and writes one JSON Result per line to out, until in ends or ctx is done.
//
// Cells print into pipes owned by the kernel, never into out. When ctx is
// done ServeGo returns ctx.Err() at once; a read of in that is under way ends
// when in does.
func ServeGo(ctx context.Context, in io.Reader, out io.Writer) (err error) {
	k, err := newGoKernel()
	if err != nil {
		return fmt.Errorf("start go kernel: %w", err)
	}
	defer func() { err = errors.Join(err, k.close()) }()
	return k.serve(ctx, in, out)
}

// Names under which the kernel's own hooks reach interpreted code. ANSWER is
// dot-imported from goAnswerPkg; the display hook is imported under a name no
// cell would use.
const (
	goAnswerPkg      = "ctxcode"
	goDisplayPkg     = "ctxcode/display"
	goDisplayPkgName = "_ctxcode"
	goDisplayFunc    = "Show"
)

type goKernel struct {
	ip     *interp.Interpreter
	stdout *goStream
	stderr *goStream
	errw   *goStderr
	stdin  *os.File

	count     int
	imported  map[string]string // name bound by an import → package path
	dotted    map[string]bool   // paths dot-imported by cells
	names     map[string]bool   // top-level names declared by cells so far
	types     map[string]string // type name → its definition, for types declared by cells
	sources   map[string]string // cell name (In[n]) → code, for tracebacks
	checkable bool              // false once a cell dot-imports: names are then unknown

	// stopWait bounds how long a timed-out cell may take to unwind
	// (goStopWait; shorter in tests).
	stopWait time.Duration

	// fatal is set when the kernel cannot go on (an interrupted cell that
	// does not stop); serve then returns it instead of answering.
	fatal error

	mu   sync.Mutex // guards cell, which interpreted code reaches through the hooks
	cell *goCellState
}

// goCellState is what the hooks record during one cell.
type goCellState struct {
	values   []any // results of the final expression, from the display hook
	answer   json.RawMessage
	answered bool
}

func newGoKernel() (_ *goKernel, err error) {
	k := &goKernel{
		imported:  map[string]string{},
		dotted:    map[string]bool{},
		names:     map[string]bool{},
		types:     map[string]string{},
		sources:   map[string]string{},
		checkable: true,
		stopWait:  goStopWait,
	}
	k.names["ANSWER"] = true
	defer func() {
		if err != nil {
			err = errors.Join(err, k.close())
		}
	}()
	if k.stdout, err = newGoStream(); err != nil {
		return nil, err
	}
	if k.stderr, err = newGoStream(); err != nil {
		return nil, err
	}
	if k.stdin, err = os.Open(os.DevNull); err != nil {
		return nil, fmt.Errorf("open %s for stdin: %w", os.DevNull, err)
	}
	k.errw = &goStderr{w: k.stderr.w}
	k.ip = interp.New(interp.Options{
		Stdin:  k.stdin,
		Stdout: k.stdout.w, // an *os.File: yaegi points os.Stdout at it too
		Stderr: k.errw,
		Args:   []string{"ctxcode-go-kernel"},
		Env:    os.Environ(),
	})
	if err := k.ip.Use(k.exports()); err != nil {
		return nil, fmt.Errorf("load symbols: %w", err)
	}
	for _, src := range []string{
		fmt.Sprintf("import . %q", goAnswerPkg),
		fmt.Sprintf("import %s %q", goDisplayPkgName, goDisplayPkg),
	} {
		if _, err := k.ip.Eval(src); err != nil {
			return nil, fmt.Errorf("bind kernel hooks: %w", err)
		}
	}
	return k, nil
}

func (k *goKernel) close() error {
	var errs []error
	for _, s := range []*goStream{k.stdout, k.stderr} {
		if s != nil {
			errs = append(errs, s.close())
		}
	}
	if k.stdin != nil {
		errs = append(errs, k.stdin.Close())
	}
	return errors.Join(errs...)
}

// exports is the symbol set handed to the interpreter: the allowed standard
// library, with os rewired to the kernel's stdin and stderr, plus the hooks.
func (k *goKernel) exports() interp.Exports {
	base, _ := goStdlib()
	ex := make(interp.Exports, len(base)+2)
	for key, syms := range base {
		ex[key] = syms
	}
	osSyms := make(map[string]reflect.Value, len(base["os/os"]))
	for name, v := range base["os/os"] {
		if name != "StartProcess" {
			osSyms[name] = v
		}
	}
	stderr := k.stderr.w
	osSyms["Stderr"] = reflect.ValueOf(&stderr).Elem() // yaegi rewires Stdin and Stdout itself
	ex["os/os"] = osSyms
	ex[goAnswerPkg+"/"+path.Base(goAnswerPkg)] = map[string]reflect.Value{"ANSWER": reflect.ValueOf(k.answer)}
	ex[goDisplayPkg+"/"+path.Base(goDisplayPkg)] = map[string]reflect.Value{goDisplayFunc: reflect.ValueOf(k.display)}
	return ex
}

// goStdlib returns yaegi's standard-library symbols minus the packages the
// kernel leaves out, and the set of import paths cells may use.
var goStdlib = sync.OnceValues(func() (interp.Exports, map[string]bool) {
	ex := interp.Exports{}
	allowed := map[string]bool{}
	for key, syms := range stdlib.Symbols {
		if key == "." { // interface wrappers, not a package
			ex[key] = syms
			continue
		}
		p := path.Dir(key)
		if strings.Contains(p, ".") || goDenied(p) {
			continue
		}
		if len(syms) == 0 {
			// Empty stubs of the generic packages (cmp, maps, slices) would
			// hide yaegi's source versions of them.
			continue
		}
		ex[key] = syms
		allowed[p] = true
	}
	for _, p := range []string{"cmp", "maps", "slices"} {
		allowed[p] = true
	}
	return ex, allowed
})

// goDenied reports whether a standard-library package is left out of the
// kernel: process control, networking and the escape hatches.
func goDenied(p string) bool {
	switch p {
	case "os/exec", "syscall", "unsafe", "plugin", "net", "crypto/tls", "log/syslog":
		return true
	}
	return strings.HasPrefix(p, "net/") || strings.HasPrefix(p, "syscall/")
}

// answer is ANSWER as cells see it: it records the JSON form of v and ends
// the goroutine that called it, which for the cell's own code ends the cell.
// runtime.Goexit, unlike a panic, cannot be caught by the cell's recover and
// does not crash the process when ANSWER is called from a goroutine.
func (k *goKernel) answer(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(fmt.Sprintf("%v", v))
	}
	k.mu.Lock()
	if k.cell != nil && !k.cell.answered {
		k.cell.answer, k.cell.answered = data, true
	}
	k.mu.Unlock()
	runtime.Goexit()
}

// display receives the value of a cell's final expression.
func (k *goKernel) display(vs ...any) {
	k.mu.Lock()
	if k.cell != nil {
		k.cell.values = vs
	}
	k.mu.Unlock()
}

func (k *goKernel) swapCell(c *goCellState) *goCellState {
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.cell
	k.cell = c
	return old
}

func (k *goKernel) answered() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cell != nil && k.cell.answered
}

// serve runs the request loop. Requests are handled one at a time.
func (k *goKernel) serve(ctx context.Context, in io.Reader, out io.Writer) error {
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-quit:
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()

	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read request: %w", err)
		case line := <-lines:
			res := k.handle(ctx, line)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if k.fatal != nil {
				return k.fatal
			}
			if err := enc.Encode(res); err != nil {
				return fmt.Errorf("write result: %w", err)
			}
		}
	}
}

// handle answers one request line. It never panics: a failure of the kernel
// itself becomes an InternalError result.
func (k *goKernel) handle(ctx context.Context, line []byte) (res Result) {
	start := time.Now()
	defer func() { res.ElapsedMS = time.Since(start).Milliseconds() }()

	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return goProtocolError(0, fmt.Sprintf("malformed request line (%v); expected one JSON object per line", err))
	}
	defer func() {
		if r := recover(); r != nil {
			k.swapCell(nil)
			k.stdout.end()
			k.stderr.end()
			res = Result{ID: req.ID, Count: k.count, Status: StatusError, Error: &ErrorInfo{
				Name:  "InternalError",
				Value: fmt.Sprintf("go kernel: %v", r),
			}}
		}
	}()
	switch req.Op {
	case OpPing:
		return Result{ID: req.ID, Status: StatusOK, Value: goKernelInfo()}
	case OpExec:
		return k.exec(ctx, req)
	case OpShell:
		// The Go kernel does not serve the shell op: condition A (bash in
		// the sandbox) runs in the Python kernel, whose driver serves it.
		// Client.Shell turns this answer into ErrShellUnsupported and the
		// kernel goes on serving cells.
		return goProtocolError(req.ID, "the go kernel does not serve the shell op; condition A runs in the Python kernel")
	default:
		return goProtocolError(req.ID, fmt.Sprintf("unknown op %q; expected %q or %q", req.Op, OpExec, OpPing))
	}
}

func goProtocolError(id int64, msg string) Result {
	return Result{ID: id, Status: StatusError, Error: &ErrorInfo{Name: "ProtocolError", Value: msg}}
}

// goKernelInfo names the kernel for ping, e.g. "go 1.26.8 yaegi v0.16.1".
var goKernelInfo = sync.OnceValue(func() string {
	s := "go " + strings.TrimPrefix(runtime.Version(), "go") + " yaegi"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/traefik/yaegi" {
				s += " " + m.Version
			}
		}
	}
	return s
})

// exec runs one cell.
func (k *goKernel) exec(ctx context.Context, req Request) Result {
	k.count++
	opts := ExecOptions{
		Timeout:        time.Duration(req.TimeoutMS) * time.Millisecond,
		MaxOutputBytes: req.MaxOutputBytes,
	}.withDefaults()
	cell := fmt.Sprintf("In[%d]", k.count)
	k.sources[cell] = req.Code

	k.stdout.begin(opts.MaxOutputBytes)
	k.stderr.begin(opts.MaxOutputBytes)
	k.swapCell(&goCellState{})
	cellCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	status, info := k.run(cellCtx, cell, req.Code, opts.Timeout)
	cancel()
	if status == StatusTimeout {
		if err := k.awaitStopped(ctx); err != nil {
			k.fatal = fmt.Errorf("cell %s: %w", cell, err)
		}
	}
	state := k.swapCell(nil)

	res := Result{ID: req.ID, Count: k.count, Status: status, Error: info}
	var d1, d2, d3 int64
	res.Stdout, d1 = k.stdout.end()
	res.Stderr, d2 = k.stderr.end()
	switch {
	case state.answered:
		res.Status, res.Error, res.Answer = StatusOK, nil, state.answer
		res.AnswerLiteral = goLiteralAnswer(cell, req.Code)
	case status == StatusOK:
		res.Value, d3 = goFormatValues(state.values, opts.MaxOutputBytes)
	}
	res.DroppedBytes = d1 + d2 + d3
	return res
}

// run evaluates the segments of a cell in order and reports how it ended.
func (k *goKernel) run(ctx context.Context, cell, code string, timeout time.Duration) (Status, *ErrorInfo) {
	plan, err := goPlanCell(cell, code)
	if err != nil {
		var ce *goCellError
		if !errors.As(err, &ce) {
			return StatusError, &ErrorInfo{Name: "CompileError", Value: err.Error()}
		}
		if last := strings.Count(code, "\n") + 1; ce.line > last {
			// The parser ran into the wrapper the cell was parsed in.
			_, m, _ := strings.Cut(ce.msg, ": ") // drop the position
			m = strings.TrimSuffix(strings.TrimSuffix(m, ", found '}'"), ", found 'EOF'")
			ce.line, ce.msg = last, fmt.Sprintf("%s:%d: unexpected end of cell: %s", cell, last, m)
		}
		return StatusError, k.errorInfo("CompileError", ce.msg, cell, ce.line)
	}
	// Names are learnt even when the cell fails: yaegi may have bound some.
	defer func() {
		for _, n := range plan.names {
			k.names[n] = true
		}
	}()
	// yaegi keeps the first definition of a type and silently ignores a
	// new one: refuse a changed type before anything of the cell runs.
	for _, seg := range plan.segs {
		for _, td := range goTypeDecls(seg) {
			if old, ok := k.types[td.name]; ok && old != td.def {
				msg := fmt.Sprintf("%s: type %s is already declared as %s; the Go kernel cannot change a declared type, "+
					"so declare the new one under another name (e.g. %s2)", td.pos, td.name, old, td.name)
				return StatusError, k.errorInfo("CompileError", msg, cell, td.line)
			}
		}
	}
	for _, im := range plan.imports {
		if info := k.importPackage(ctx, cell, im); info != nil {
			return StatusError, info
		}
	}
	for _, seg := range plan.segs {
		if ctx.Err() != nil {
			return k.timedOut(timeout)
		}
		ev := k.evalSegment(ctx, cell, seg)
		if k.answered() {
			return StatusOK, nil
		}
		switch ev.kind {
		case goEvalOK:
			for _, td := range goTypeDecls(seg) {
				k.types[td.name] = td.def
			}
			continue
		case goEvalTimeout:
			return k.timedOut(timeout)
		case goEvalCompile:
			msg := ev.msg
			if k.checkable {
				if m, ok := goUndefined(seg, func(name string) bool {
					return k.names[name] || k.imported[name] != "" || slices.Contains(plan.names, name)
				}); ok {
					msg = m
				}
			}
			return StatusError, k.errorInfo("CompileError", msg, cell, goMsgLine(msg, cell))
		default:
			return StatusError, k.panicInfo(ev)
		}
	}
	return StatusOK, nil
}

func (k *goKernel) timedOut(timeout time.Duration) (Status, *ErrorInfo) {
	return StatusTimeout, &ErrorInfo{
		Name: "CellTimeout",
		Value: fmt.Sprintf("the cell ran longer than its %v timeout and was interrupted; "+
			"variables from earlier cells are kept", timeout),
	}
}

// importPackage binds one import of a cell, once per session.
func (k *goKernel) importPackage(ctx context.Context, cell string, im goImport) *ErrorInfo {
	_, allowed := goStdlib()
	if !allowed[im.path] {
		msg := fmt.Sprintf("import %q is not available in the ctxcode Go kernel: only the standard library "+
			"(as packaged by yaegi) can be imported", im.path)
		if goDenied(im.path) {
			msg = fmt.Sprintf("import %q is not available in the ctxcode Go kernel "+
				"(os/exec, net, syscall, unsafe and plugin are left out)", im.path)
		}
		return k.errorInfo("ImportError", im.pos+": "+msg, cell, im.line)
	}
	name := goImportName(im)
	switch {
	case name == "_":
		return nil // the package is already linked in; nothing to bind
	case name == ".":
		if k.dotted[im.path] {
			return nil
		}
	case k.imported[name] == im.path:
		return nil
	case k.imported[name] != "":
		msg := fmt.Sprintf("%s: import %q: the name %s already refers to %q in this session; "+
			"import it under another name, e.g. import x%s %q", im.pos, im.path, name, k.imported[name], name, im.path)
		return k.errorInfo("ImportError", msg, cell, im.line)
	}
	src := fmt.Sprintf("import %q", im.path)
	if im.name != "" {
		src = fmt.Sprintf("import %s %q", im.name, im.path)
	}
	if ev := k.eval(ctx, src); ev.kind != goEvalOK {
		return k.errorInfo("ImportError", im.pos+": "+ev.msg, cell, im.line)
	}
	if name == "." {
		k.dotted[im.path] = true
		k.checkable = false
	} else {
		k.imported[name] = im.path
	}
	return nil
}

type goEvalKind int

const (
	goEvalOK goEvalKind = iota
	goEvalCompile
	goEvalPanic
	goEvalTimeout
)

// goEval is the outcome of one evaluation.
type goEval struct {
	kind   goEvalKind
	msg    string
	value  any            // the panic value, for goEvalPanic
	frames []goPanicFrame // innermost first, for goEvalPanic
}

// evalSegment evaluates one segment. The final expression is first tried
// inside the display hook; if that does not compile (the call has no result,
// or the expression is a type or a package) it is run as it stands.
func (k *goKernel) evalSegment(ctx context.Context, cell string, seg goSegment) goEval {
	if seg.kind == goSegExpr && seg.showValue {
		ev := k.eval(ctx, seg.displaySource(cell))
		if ev.kind != goEvalCompile {
			return ev
		}
	}
	return k.eval(ctx, seg.source(cell))
}

// goBareWrapperPos matches a position inside yaegi's own wrapper text
// ("1:28: "), which means nothing to the cell's author.
var goBareWrapperPos = regexp.MustCompile(`^\d+:\d+: `)

func (k *goKernel) eval(ctx context.Context, src string) goEval {
	k.errw.takeFrames()
	_, err := k.ip.EvalWithContext(ctx, src)
	frames := k.errw.takeFrames()
	if err == nil {
		return goEval{kind: goEvalOK}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return goEval{kind: goEvalTimeout}
	}
	var p interp.Panic
	if errors.As(err, &p) {
		if len(frames) > 0 {
			return goEval{kind: goEvalPanic, msg: fmt.Sprint(p.Value), value: p.Value, frames: frames}
		}
		// No interpreted frame saw it: yaegi panicked while compiling.
		msg := goCleanPos(strings.TrimPrefix(fmt.Sprint(p.Value), "CFG post-order panic: "))
		return goEval{kind: goEvalCompile, msg: goBareWrapperPos.ReplaceAllString(msg, "")}
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return goEval{kind: goEvalCompile, msg: goBareWrapperPos.ReplaceAllString(goCleanPos(msg), "")}
}

// goOSExit matches the panic value of os.Exit under yaegi.
var goOSExit = regexp.MustCompile(`^os\.Exit\(-?\d+\)$`)

// panicInfo describes a panic of the cell's code: its kind, its message and
// the innermost interpreted frame it went through.
func (k *goKernel) panicInfo(ev goEval) *ErrorInfo {
	name := "panic"
	if _, ok := ev.value.(runtime.Error); ok {
		name = "RuntimeError"
	} else if s, ok := ev.value.(string); ok && goOSExit.MatchString(s) {
		name = "Exit"
		ev.msg = s + " was called; the Go kernel turns it into an error and keeps running"
	} else if strings.HasPrefix(ev.msg, "reflect: ") {
		// yaegi works through reflect: an index out of range or a nil
		// pointer dereference surfaces as a panic of package reflect.
		name = "RuntimeError"
		if strings.HasSuffix(ev.msg, "on zero Value") {
			ev.msg = "invalid memory address or nil pointer dereference (" + ev.msg + ")"
		}
	}
	info := &ErrorInfo{Name: name, Value: ev.msg, Traceback: name + ": " + ev.msg}
	if len(ev.frames) > 0 {
		f := ev.frames[0]
		in := ""
		switch fn := strings.TrimPrefix(f.fn, "main."); fn {
		case "main", "":
		case "func":
			in = " (in a func literal)"
		default:
			in = " (in " + fn + ")"
		}
		if file, line, ok := goSplitPos(f.pos); ok {
			where := fmt.Sprintf("%s line %d%s", file, line, in)
			if src := k.sourceLine(file, line); src != "" {
				where += ": " + src
			}
			info.Traceback = where + "\n" + info.Traceback
		}
	}
	return info
}

// errorInfo builds an error whose traceback quotes the cell line it is about.
func (k *goKernel) errorInfo(name, msg, cell string, line int) *ErrorInfo {
	info := &ErrorInfo{Name: name, Value: msg, Traceback: name + ": " + msg}
	if src := k.sourceLine(cell, line); src != "" {
		info.Traceback = fmt.Sprintf("%s line %d: %s\n%s", cell, line, src, info.Traceback)
	}
	return info
}

// goPos matches the start of a cell position, "In[3]:2" or "In[3]:2:5".
var goPos = regexp.MustCompile(`^(In\[\d+\]):(\d+)`)

func goSplitPos(s string) (string, int, bool) {
	m := goPos.FindStringSubmatch(s)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	return m[1], n, err == nil
}

// goMsgLine is the line of cell a message starts with a position in, or 0.
func goMsgLine(msg, cell string) int {
	if file, line, ok := goSplitPos(msg); ok && file == cell {
		return line
	}
	return 0
}

// goMaxSourceLine bounds a source line quoted in a traceback.
const goMaxSourceLine = 200

// sourceLine returns a line of an earlier cell, trimmed, or "".
func (k *goKernel) sourceLine(cell string, line int) string {
	src, ok := k.sources[cell]
	if !ok || line < 1 {
		return ""
	}
	lines := strings.Split(src, "\n")
	if line > len(lines) {
		return ""
	}
	s := strings.TrimSpace(lines[line-1])
	if len(s) > goMaxSourceLine {
		s = s[:goMaxSourceLine] + "..."
	}
	return s
}

// goStopWait bounds how long a timed-out cell may take to unwind. yaegi
// stops interpreted code at its next step, but a call into compiled code
// (time.Sleep, sync.WaitGroup.Wait, a blocking read) runs to its end first.
const goStopWait = 10 * time.Second

// awaitStopped waits until the evaluation that timed out has really ended.
// EvalWithContext returns as soon as its context is done, while the
// goroutine it started is still unwinding; letting the next cell in before
// that goroutine is gone would race on the interpreter's state. yaegi gives
// no handle on that goroutine, so it is looked for in a dump of all
// goroutines: the one EvalWithContext created from this goroutine.
func (k *goKernel) awaitStopped(ctx context.Context) error {
	created := []byte(fmt.Sprintf("created by %s in goroutine %d\n", goEvalCreator, goGoroutineID()))
	deadline := time.NewTimer(k.stopWait)
	defer deadline.Stop()
	wait := 50 * time.Microsecond
	for goStacksContain(created) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-deadline.C:
			t.Stop()
			return fmt.Errorf("the interrupted code did not stop within %v: it is blocked in a call "+
				"the interpreter cannot interrupt; the kernel must be restarted", k.stopWait)
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
	return nil
}

// goEvalCreator is how a goroutine dump names the function that starts
// yaegi's evaluating goroutine.
const goEvalCreator = "github.com/traefik/yaegi/interp.(*Interpreter).EvalWithContext"

// goGoroutineID returns the id of the calling goroutine, from its stack dump.
func goGoroutineID() uint64 {
	var buf [64]byte
	line := buf[:runtime.Stack(buf[:], false)]
	line = bytes.TrimPrefix(line, []byte("goroutine "))
	if i := bytes.IndexByte(line, ' '); i > 0 {
		id, _ := strconv.ParseUint(string(line[:i]), 10, 64)
		return id
	}
	return 0
}

// goMaxDump bounds the goroutine dump goStacksContain reads.
const goMaxDump = 64 << 20

// goStacksContain reports whether a dump of all goroutines contains s.
func goStacksContain(s []byte) bool {
	buf := make([]byte, 256<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= goMaxDump {
			return bytes.Contains(buf[:n], s)
		}
		buf = make([]byte, 2*len(buf))
	}
}
