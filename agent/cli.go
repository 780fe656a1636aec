package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

// Condition A, the CLI agent (DESIGN.md, "Condition A"): the model works
// with two tools and no prefix, and answers in its final message.
//
//   - bash(command) runs through the kernel's shell op (kernel.Sheller):
//     /bin/sh -c in the session folder, inside the sandbox, with the cell
//     timeout (the process group killed at it) and the kernel's output cap;
//     the tool result is the output within the output budget (head and
//     tail), then the exit status as a note.
//   - read(path, offset, limit) is served by the harness from the host's
//     data folder, which the kernel shows as data/: numbered lines as cat -n
//     writes them, offset and limit in lines, bounded like bash's output. It
//     serves exactly the files the kernel's data/ holds (kernel.LookupData:
//     no link out of the folder unless --follow-links, no pipe or device),
//     so read and bash's cat agree. A path outside the session folder (..,
//     an absolute path), a folder, a missing file and a binary file each get
//     a one-line note that says what to do instead.
//   - the final message, one without a tool call, ends the run: its
//     "ANSWER: <value>" line is the answer, source Stated; without one, the
//     run has no answer.
//
// Malformed arguments and unknown tools get a one-line correction as the
// tool result; a call the same as the last one served is not served again;
// a kernel that dies is restarted (nothing to rebuild: no prefix) and the
// note says files under /tmp may be gone.

// readMaxBytes bounds what one read collects before the output budget cuts
// it: the kernel's own cap on a cell's output, its head and tail kept.
const readMaxBytes = kernel.DefaultMaxOutputBytes

// cliCall serves one tool call of the cli protocol as a cell; cut says the
// message was cut at the output-token limit.
func (r *runner) cliCall(ctx context.Context, said string, call session.ToolCall, cut bool) (bool, error) {
	c := session.Cell{From: session.FromModel, Reply: said, Call: &call}
	if cut {
		c.Notes = []string{r.cutNote()}
	}
	switch call.Name {
	case "bash":
		command, why := bashArguments(call.Arguments)
		if why != "" {
			c.Notes = append(c.Notes, why)
			r.add(c, 0)
			return false, nil
		}
		c.Code = command
		if r.repeated(c, "bash\x00"+strings.TrimSpace(command)) {
			return false, nil
		}
		return r.bash(ctx, c)
	case "read":
		args, why := readArguments(call.Arguments)
		if why != "" {
			c.Notes = append(c.Notes, why)
			r.add(c, 0)
			return false, nil
		}
		if r.repeated(c, fmt.Sprintf("read\x00%s\x00%d\x00%d", path.Clean(args.Path), args.Offset, args.Limit)) {
			return false, nil
		}
		r.progress("read " + args.Path)
		out, notes, after := serveRead(dataFolder{r.s.DataDir, r.s.FollowLinks}, args)
		// What serveRead itself left out is marked in out, as a kernel
		// marks its cap, so a further cut says the text is not kept.
		c.Result = kernel.Result{Status: kernel.StatusOK, Stdout: out, DroppedBytes: kernel.DroppedIn(out)}
		if b := r.cfg.OutputBudget; b > 0 && utf8.RuneCountInString(out) > b {
			// The session cuts the middle of these lines to the budget: the
			// model must not read on past lines it never saw.
			after = append(after, fmt.Sprintf("the middle of these lines is cut to the output budget of %d characters: read fewer at a time (a smaller limit) to see them all", b))
		}
		c.Notes, c.After = append(c.Notes, notes...), after
		r.add(c, 0)
		return false, nil
	}
	c.Notes = append(c.Notes, fmt.Sprintf("there is no tool %q; the tools are read(path, offset, limit) and bash(command)", call.Name))
	r.add(c, 0)
	return false, nil
}

// repeated notes a call the same as the last one served since the kernel
// (re)started, which is not served again; key names the call. The cell
// event's repeat_of is the number (from 1) of the run's cell it repeats.
func (r *runner) repeated(c session.Cell, key string) bool {
	if key != r.lastCall {
		r.lastCall, r.lastCallCell = key, len(r.in.New)+1
		return false
	}
	c.Notes = append(c.Notes, "this call is the same as the last one, which was not run again; its output is above")
	r.add(c, r.lastCallCell)
	return true
}

// bash runs c.Code with the kernel's shell op.
func (r *runner) bash(ctx context.Context, c session.Cell) (bool, error) {
	sh, ok := r.s.Kernel.(kernel.Sheller)
	if !ok { // Run checked it; a kernel swapped under a run is a failure of the machinery
		return r.restart(ctx, c, fmt.Errorf("the %s kernel does not serve the shell op", r.s.Kernel.Language()))
	}
	r.progress(firstLine(c.Code))
	r.inCell = true
	res, err := sh.Shell(ctx, c.Code, kernel.ShellOptions{Timeout: r.cfg.CellTimeout})
	r.inCell = ctx.Err() != nil && err != nil
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return true, ctx.Err()
	case errors.Is(err, kernel.ErrShellUnsupported):
		// The kernel is alive and will never serve bash: a restart would
		// not help (Run checks the language, so this is a kernel that
		// claims Python and is not).
		c.Notes = append(c.Notes, "the kernel cannot run commands: "+clip(err.Error(), 400))
		r.add(c, 0)
		r.res.Status, r.res.Err = KernelFailed, err
		return true, nil
	default:
		r.lastCall = ""
		return r.restart(ctx, c, err)
	}
	c.Result = kernel.Result{Status: kernel.StatusOK, Stdout: res.Output, DroppedBytes: res.DroppedBytes, ElapsedMS: res.Elapsed.Milliseconds()}
	switch {
	case res.TimedOut:
		c.Result.Status = kernel.StatusTimeout
	case res.ExitCode != 0:
		c.Result.Status = kernel.StatusError
	}
	c.After = []string{shellEnding(res, r.cfg.CellTimeout.String())}
	r.addShell(c, &res)
	return false, nil
}

// shellEnding says how a command ended, for the note after its output.
func shellEnding(res kernel.ShellResult, timeout string) string {
	var s string
	switch {
	case res.TimedOut:
		s = "timed out after " + timeout + ": the command's process group was killed"
	case res.Signal != "":
		s = "ended by signal " + res.Signal
	default:
		s = "exit status " + strconv.Itoa(res.ExitCode)
	}
	if res.Output == "" {
		s = "no output; " + s
	}
	return s
}

const (
	bashUsage = `the arguments must be a JSON object {"command": "<the command line>"}`
	readUsage = `the arguments must be a JSON object {"path": "data/<file>", "offset": <first line>, "limit": <lines>}, offset and limit optional`
)

// bashArguments reads bash's arguments; why is the correction when they
// are not {"command": "..."}.
func bashArguments(raw string) (command, why string) {
	args, why := objectArguments(raw, bashUsage, "command")
	if why != "" {
		return "", why
	}
	v, ok := args["command"]
	if !ok {
		return "", bashUsage + ": command is missing"
	}
	if json.Unmarshal(v, &command) != nil {
		return "", bashUsage + ": command must be a string"
	}
	if strings.TrimSpace(command) == "" {
		return "", "the command is empty: send the command line to run"
	}
	return command, ""
}

type readArgs struct {
	Path          string
	Offset, Limit int // in lines, counting from 1; 0 is the default
}

// readArguments reads read's arguments; why is the correction when they do
// not fit its schema. Offset and limit may come as numbers or as strings
// of digits, as some models send them.
func readArguments(raw string) (a readArgs, why string) {
	args, why := objectArguments(raw, readUsage, "path", "offset", "limit")
	if why != "" {
		return a, why
	}
	v, ok := args["path"]
	if !ok {
		return a, readUsage + ": path is missing"
	}
	if json.Unmarshal(v, &a.Path) != nil {
		return a, readUsage + ": path must be a string"
	}
	if strings.TrimSpace(a.Path) == "" {
		return a, "the path is empty: give a file's path, such as data/tasks.jsonl"
	}
	for _, p := range []struct {
		name string
		to   *int
	}{{"offset", &a.Offset}, {"limit", &a.Limit}} {
		v, ok := args[p.name]
		if !ok || string(v) == "null" {
			continue
		}
		n, ok := lineNumber(v)
		if !ok {
			return a, fmt.Sprintf("%s must be a whole number of lines, 1 or more (got %s)", p.name, clip(string(v), 40))
		}
		*p.to = n
	}
	return a, ""
}

// lineNumber reads a JSON number or string of digits that is a whole
// number, 1 or more.
func lineNumber(v json.RawMessage) (int, bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		v = json.RawMessage(strings.TrimSpace(s))
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// objectArguments parses a tool call's arguments as a JSON object whose
// keys are among names.
func objectArguments(raw, usage string, names ...string) (map[string]json.RawMessage, string) {
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &args); err != nil || args == nil {
		return nil, usage
	}
	var unknown []string
	for k := range args {
		known := false
		for _, n := range names {
			known = known || k == n
		}
		if !known {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, usage + ": no argument " + strings.Join(unknown, ", ")
	}
	return args, ""
}

// The session folder as read shows it: data/, the host's data folder.
const (
	dataPrefix   = "data/"
	sessionAbs   = "/session/" // the session folder in the container, accepted as the same
	otherFilesTo = "for a file you wrote under /tmp, use bash, such as cat -n /tmp/FILE"
)

// dataFolder is the host folder shown as data/, and whether links out of
// it are followed (as the kernel's copy follows them).
type dataFolder struct {
	dir    string
	follow bool
}

// serveRead serves one read from d, the host folder shown as data/: the
// numbered lines (bounded), the notes before them (a path that cannot be
// read: then out is empty) and the notes after them (which lines).
func serveRead(d dataFolder, a readArgs) (out string, notes, after []string) {
	rel, why := sessionPath(a.Path)
	if why != "" {
		return "", []string{why}, nil
	}
	shown := rel
	switch {
	case rel == ".":
		return "", []string{"the session folder is a folder, not a file: the data are in data/ (" + d.listing("", 12) +
			"); read one file, such as data/" + d.firstFile()}, nil
	case rel == "data":
		return "", []string{"data/ is a folder, not a file: it holds " + d.listing("", 20) +
			"; read one of its files, or list it with bash: ls -l data"}, nil
	case !strings.HasPrefix(rel, dataPrefix):
		msg := "there is no file " + rel + " that read serves: read serves the files under data/"
		if e, skip, err := kernel.LookupData(d.dir, rel, d.follow); err == nil && skip == nil && !e.Dir {
			msg += "; did you mean data/" + rel + "?"
		} else {
			msg += "; " + otherFilesTo
		}
		return "", []string{msg}, nil
	}
	// Only what the kernel's data/ holds: a link out of the folder, a pipe
	// or a device is not there for bash's cat either. The harness reads on
	// the host, outside the sandbox: kernel.OpenData opens nothing outside
	// the folder that the walk did not take, whatever a link changed since
	// says, and never waits on a pipe.
	inner := strings.TrimPrefix(rel, dataPrefix)
	e, skip, err := kernel.LookupData(d.dir, inner, d.follow)
	switch {
	case err == nil && skip == nil:
	case skip != nil || errors.Is(err, fs.ErrNotExist):
		return "", []string{"there is no file " + shown + ": data/ holds " + d.listing("", 20)}, nil
	default:
		return "", []string{shown + " cannot be read: " + clip(pathless(err), 200)}, nil
	}
	if e.Dir {
		return "", []string{shown + "/ is a folder, not a file: it holds " + d.listing(e.Rel, 20) +
			"; read one of its files, or list it with bash: ls -l " + shown}, nil
	}
	f, err := kernel.OpenData(e)
	if err != nil {
		return "", []string{shown + " cannot be read: " + clip(pathless(err), 200)}, nil
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return "", []string{shown + " cannot be read: " + clip(pathless(err), 200)}, nil
	case st.Size() == 0:
		return "", []string{shown + " is empty (0 bytes)"}, nil
	}
	return numberLines(f, shown, st.Size(), a)
}

// sessionPath cleans a path of the session folder to a relative one with
// forward slashes; why says what is wrong with one outside it.
func sessionPath(p string) (rel, why string) {
	p = strings.TrimSpace(p)
	switch {
	case p == "/session":
		return ".", ""
	case strings.HasPrefix(p, sessionAbs):
		p = strings.TrimPrefix(p, sessionAbs)
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || strings.HasPrefix(p, "~"):
		return "", p + " is outside the session folder: read serves the files under data/, such as data/tasks.jsonl; " + otherFilesTo
	}
	rel = path.Clean(strings.ReplaceAll(p, `\`, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", p + " is outside the session folder: read serves only the files under data/"
	}
	return rel, ""
}

// numberLines writes the lines a asks for of f (size bytes, shown as
// shown) as cat -n does, its head and tail kept past readMaxBytes.
func numberLines(f io.Reader, shown string, size int64, a readArgs) (out string, notes, after []string) {
	br := bufio.NewReaderSize(f, 64<<10)
	sniff, _ := br.Peek(8 << 10)
	if bytes.IndexByte(sniff, 0) >= 0 {
		return "", []string{fmt.Sprintf("%s is a binary file (%d bytes), not text: read shows text files; look into it with bash, such as od -c %s | head",
			shown, size, shown)}, nil
	}
	first, limit := max(a.Offset, 1), a.Limit
	if limit <= 0 {
		limit = session.ReadLimit
	}
	last := first + limit - 1
	w := newHeadTail(readMaxBytes)
	n, atLineStart := 0, true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atLineStart {
				n++
			}
			if n >= first && n <= last {
				if atLineStart {
					w.WriteString(fmt.Sprintf("%6d\t", n))
				}
				if bytes.HasSuffix(chunk, []byte("\r\n")) {
					w.Write(chunk[:len(chunk)-2])
					w.WriteString("\n")
				} else {
					w.Write(chunk)
				}
			}
			atLineStart = chunk[len(chunk)-1] == '\n'
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				notes = append(notes, "reading "+shown+" failed after line "+strconv.Itoa(n)+": "+clip(pathless(err), 200))
			}
			break
		}
	}
	if first > n {
		return "", append(notes, fmt.Sprintf("%s has %d lines; offset %d is past its end", shown, n, first)), nil
	}
	out = w.String()
	if !utf8.ValidString(out) {
		out = strings.ToValidUTF8(out, "\uFFFD")
		notes = append(notes, shown+" is not valid UTF-8: the bytes that are not are shown as \uFFFD")
	}
	switch end := min(last, n); {
	case first > 1 && end == n:
		after = []string{fmt.Sprintf("lines %d-%d of %d: the end of %s", first, end, n, shown)}
	case end < n:
		after = []string{fmt.Sprintf("lines %d-%d of %d; read on with offset %d", first, end, n, end+1)}
	}
	return out, notes, after
}

// headTail keeps the head and the tail of what is written to it, max bytes
// in all, and counts the rest; String joins them by the one head-and-tail
// rule (kernel.TrimCut, kernel.JoinCut), as a kernel cuts a stream at its
// cap.
type headTail struct {
	half       int
	head, tail []byte
	total      int64
	beforeTail byte // the last byte dropped before the tail
}

func newHeadTail(max int) *headTail { return &headTail{half: max / 2} }

func (w *headTail) WriteString(s string) { w.Write([]byte(s)) }

func (w *headTail) Write(p []byte) {
	w.total += int64(len(p))
	if room := w.half - len(w.head); room > 0 {
		n := min(room, len(p))
		w.head = append(w.head, p[:n]...)
		p = p[n:]
	}
	w.tail = append(w.tail, p...)
	if len(w.tail) > 2*w.half {
		cut := len(w.tail) - w.half
		w.beforeTail = w.tail[cut-1]
		w.tail = append([]byte(nil), w.tail[cut:]...)
	}
}

func (w *headTail) String() string {
	tail := w.tail
	before := w.beforeTail
	if len(tail) > w.half {
		cut := len(tail) - w.half
		before, tail = tail[cut-1], tail[cut:]
	}
	dropped := w.total - int64(len(w.head)) - int64(len(tail))
	if dropped == 0 {
		return string(w.head) + string(tail)
	}
	head, t := kernel.TrimCut(string(w.head), string(tail), before == '\n')
	dropped = w.total - int64(len(head)) - int64(len(t))
	return kernel.JoinCut(head, t, dropped)
}

// listing names the entries of the folder rel of d, folders with a slash,
// at most n.
func (d dataFolder) listing(rel string, n int) string {
	entries, _, err := kernel.ListData(d.dir, rel, d.follow)
	if err != nil {
		return "nothing that can be listed"
	}
	if len(entries) == 0 {
		return "nothing"
	}
	var out []string
	for _, e := range entries {
		if len(out) == n {
			out = append(out, fmt.Sprintf("and %d more", len(entries)-n))
			break
		}
		name := path.Base(e.Rel)
		if e.Dir {
			name += "/"
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
}

// firstFile is the name of the first file of d that is not the manifest.
func (d dataFolder) firstFile() string {
	entries, _, _ := kernel.ListData(d.dir, "", d.follow)
	for _, e := range entries {
		if !e.Dir && e.Rel != "manifest.json" {
			return e.Rel
		}
	}
	return "FILE"
}

// pathless is an error's text without the host path of a *PathError: the
// model knows the file by its path in the session folder.
func pathless(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// statedRE finds the "ANSWER: <value>" line of a final message, Markdown
// emphasis around the word allowed ("**ANSWER:** 42").
var statedRE = regexp.MustCompile(`(?m)^[ \t>*_#-]*ANSWER[*_]*[ \t]*:[*_]*[ \t]*(.*?)[ \t]*$`)

// inlineStatedRE finds "ANSWER: <value>" inside a line, for a message
// with no line that starts with it ("The answer is ANSWER: 7").
var inlineStatedRE = regexp.MustCompile(`(?m)\bANSWER[*_]*[ \t]*:[*_]*[ \t]*(.*?)[ \t]*$`)

// statedAnswer reads the answer of condition A's final message: the value
// on its last line that starts with "ANSWER:", else after its last
// "ANSWER:" within a line (or, when that holds nothing more, the text
// after it, a code block's fences removed; a JSON value may run on over
// lines), a pair of backticks or of ** around it removed.
func statedAnswer(msg string) (string, bool) {
	ms := statedRE.FindAllStringSubmatchIndex(msg, -1)
	if len(ms) == 0 {
		ms = inlineStatedRE.FindAllStringSubmatchIndex(msg, -1)
	}
	if len(ms) == 0 {
		return "", false
	}
	m := ms[len(ms)-1]
	v := msg[m[2]:m[3]]
	if t := strings.TrimSpace(v); (strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{")) && !json.Valid([]byte(t)) {
		// A JSON value over several lines: read one value from here on.
		var raw json.RawMessage
		if json.NewDecoder(strings.NewReader(msg[m[2]:])).Decode(&raw) == nil {
			v = string(raw)
		}
	}
	if v == "" {
		v = strings.TrimSpace(msg[m[1]:])
		if bs := blocks(v); len(bs) == 1 {
			v = bs[0].code
		}
	}
	v = strings.TrimSpace(v)
	for _, q := range []string{"`", "**"} {
		if len(v) >= 2*len(q) && strings.HasPrefix(v, q) && strings.HasSuffix(v, q) {
			v = strings.TrimSpace(v[len(q) : len(v)-len(q)])
		}
	}
	return v, v != ""
}
