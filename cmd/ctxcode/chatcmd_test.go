package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/internal/gatetest"
	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// TestChatOverPipe: three questions on stdin, one session; the third
// question's cell uses what the first one's bound, and its request holds
// the earlier questions (the staged policy, over a window they fit in,
// changes nothing).
func TestChatOverPipe(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t,
		llmtest.Text("top = sorted(t['id'] for t in tasks if t['status'] == 'blocked')\nANSWER(top)", 700, 20),
		llmtest.Text("ANSWER(len(tasks))", 800, 5),
		llmtest.Text("ANSWER(top[0])", 900, 5),
	)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	questions := []string{"Which tasks are blocked?", "How many tasks are there?", "Which is the first of the blocked ones?"}
	stdin := questions[0] + "\n\n" + questions[1] + "\n   \n" + questions[2] + "\n"
	traj := filepath.Join(t.TempDir(), "chat.jsonl")
	got := runCLI(t, stdin, "chat", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local", "--json", "--trajectory", traj,
		"--context", "staged", "--window", "64000")
	require.Equal(t, exitOK, got.code, got.stderr)

	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 3, "one JSON object per answer, blank lines skipped:\n%s", got.stdout)
	recs := make([]map[string]any, len(lines))
	for i, l := range lines {
		require.NoError(t, json.Unmarshal([]byte(l), &recs[i]), l)
		assert.Equal(t, "answered", recs[i]["status"], l)
		assert.Equal(t, questions[i], recs[i]["question"])
		assert.EqualValues(t, i+1, recs[i]["stage"])
	}
	top, ok := recs[0]["answer"].([]any)
	require.True(t, ok, "the first answer is the list top: %v", recs[0]["answer"])
	require.NotEmpty(t, top, "the s tier has blocked tasks")
	assert.Equal(t, top[0], recs[2]["answer"], "the third cell read top, which the first bound")
	assert.Equal(t, float64(countLines(t, filepath.Join(dir, "tasks.jsonl"))), recs[1]["answer"])

	// The running totals: the sums of what the server reported.
	last, ok := recs[2]["session"].(map[string]any)
	require.True(t, ok, "%v", recs[2])
	assert.EqualValues(t, 3, last["questions"])
	assert.EqualValues(t, 3, last["calls"])
	assert.EqualValues(t, 700+800+900, last["context_tokens"])
	assert.EqualValues(t, 30, last["output_tokens"])

	// The third request is the same conversation: the earlier questions and
	// the first cell are in it, the third question last.
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	var third strings.Builder
	for _, m := range reqs[2].Body.Messages {
		third.WriteString(m.Content + "\n")
	}
	for _, s := range []string{questions[0], questions[1], "top = sorted("} {
		assert.Contains(t, third.String(), s)
	}
	assert.Less(t, strings.LastIndex(third.String(), questions[1]), strings.LastIndex(third.String(), questions[2]))

	// The trajectory: one session, three stages.
	var stages []float64
	f, err := os.Open(traj)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev["type"] == "run" {
			assert.Equal(t, "chat", ev["session"])
			assert.Equal(t, "staged: elide at 0.6, summarize at 0.85 of 64000 tokens", ev["context"], "the policy of --context and --window")
			stages = append(stages, ev["stage"].(float64))
		}
	}
	assert.Equal(t, []float64{1, 2, 3}, stages)
}

// TestChatTextAndTotals: without --json each answer has ask's cost line
// and the session's totals.
func TestChatTextAndTotals(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t, llmtest.Text("ANSWER(len(tasks))", 700, 5), llmtest.Text("ANSWER(len(users))", 750, 6))
	t.Setenv("OPENAI_API_KEY", "sk-test")
	got := runCLI(t, "How many tasks?\nHow many users?\n", "chat", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local")
	require.Equal(t, exitOK, got.code, got.stderr)
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 6, got.stdout)
	assert.Equal(t, strconv.Itoa(countLines(t, filepath.Join(dir, "tasks.jsonl"))), lines[0])
	assert.Regexp(t, `^\[1 turn, 700 context tokens, 5 output tokens, 0 cached, `, lines[1])
	assert.Regexp(t, `^\[session: 1 question, 1 call, 700 input tokens, 5 output tokens, 0 cached, [\d.]+s\]$`, lines[2])
	assert.Equal(t, strconv.Itoa(countLines(t, filepath.Join(dir, "users.jsonl"))), lines[3])
	assert.Regexp(t, `^\[1 turn, 750 context tokens, 6 output tokens, 0 cached, [\d.]+s \(model [\d.]+s, in the session's kernel\)\]$`, lines[4])
	assert.Regexp(t, `^\[session: 2 questions, 2 calls, 1450 input tokens, 11 output tokens, 0 cached, [\d.]+s\]$`, lines[5])
}

// TestChatBadInput: bad flags and folders are usage errors (exit 2), found
// before any kernel starts or any request is sent (the server has no
// reply to give).
func TestChatBadInput(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where a local kernel would make its folder
	base := []string{"chat", "--model", "m", "--base-url", srv.URL, "--sandbox", "local"}
	traj := filepath.Join(t.TempDir(), "t.jsonl")
	require.NoError(t, os.WriteFile(traj, []byte("x\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown context policy", []string{"--data", dir, "--context", "forget"}, `unknown context policy "forget"`},
		{"window 0", []string{"--data", dir, "--context", "elide", "--window", "0"}, "--window 0: give the window's size in tokens"},
		{"negative window", []string{"--data", dir, "--window", "-5"}, "--window -5"},
		{"missing data", []string{"--data", filepath.Join(dir, "nope")}, "no such folder"},
		{"data is a file", []string{"--data", filepath.Join(dir, "tasks.jsonl")}, "--data"},
		{"one shot", []string{"--data", dir, "--condition", "C"}, "--condition C is the one shot"},
		{"no prefix", []string{"--data", dir, "--condition", "A"}, "--condition A runs without a prefix"},
		{"unknown condition", []string{"--data", dir, "--condition", "Z"}, `--condition "Z": expected one of`},
		{"several conditions", []string{"--data", dir, "--condition", "B,D"}, "a chat runs in one condition"},
		{"a question as an argument", []string{"--data", dir, "How many?"}, "chat takes only flags"},
		{"trajectory exists", []string{"--data", dir, "--trajectory", traj}, "exists; pass --force to overwrite it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "How many tasks?\n", append(append([]string(nil), base...), tc.args...)...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.Empty(t, got.stdout)
			kernels, err := filepath.Glob(filepath.Join(tmp, "ctxcode-kernel-*"))
			require.NoError(t, err)
			assert.Empty(t, kernels, "no kernel started")
		})
	}
	assert.Empty(t, srv.Requests())
}

// TestChatInterruptKeepsSession runs ctxcode chat on a terminal (a pty).
// Ctrl-C while the first question's cell runs interrupts the cell in the
// kernel: the question stops, the chat goes on, and the second question
// uses what the cell bound. The third question's cell ignores the
// interrupt, so a second Ctrl-C stops it by killing the kernel; the fourth
// is answered in the restarted kernel, whose note the model reads. Ctrl-D ends
// the chat with exit 0 and leaves no kernel process or container behind.
func TestChatInterruptKeepsSession(t *testing.T) {
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			testChatInterrupt(t, sb)
		})
	}
}

func testChatInterrupt(t *testing.T, sb string) {
	dir := pmData(t)
	stubborn := "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)"
	srv := llmtest.NewServer(t,
		llmtest.Text("kept = len(tasks) * 2\nimport time; time.sleep(600)", 700, 10),
		llmtest.Text("ANSWER(kept + 1)", 720, 5),
		llmtest.Text(stubborn, 750, 10),
		llmtest.Text("ANSWER(len(tasks))", 800, 5),
	)
	tmp := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "chat", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", sb, "--timeout", "10m")
	cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1", "OPENAI_API_KEY=sk-test", "TMPDIR="+tmp, "TERM=xterm")
	term := startPty(t, cmd)
	// What runs the kernel: its processes (local) or its container.
	kernels := func() []string {
		if sb == "docker" {
			return containersOf(t, requireDocker(t), cmd.Process.Pid)
		}
		var pids []string
		for _, p := range kernelProcesses(t, tmp) {
			pids = append(pids, strconv.Itoa(p))
		}
		return pids
	}

	term.waitFor(t, chatPrompt)
	term.send(t, "How many tasks?\r")
	term.waitFor(t, "kept = len(tasks) * 2") // the progress line: the cell runs
	require.NotEmpty(t, kernels(), "the kernel runs the cell")
	term.send(t, "\x03")
	term.waitFor(t, "interrupting the cell")
	term.waitFor(t, "interrupted; the session goes on, its variables kept")
	term.waitFor(t, chatPrompt)

	n := countLines(t, filepath.Join(dir, "tasks.jsonl"))
	term.send(t, "What is kept, plus one?\r")
	term.waitFor(t, fmt.Sprintf("%d\r\n", 2*n+1)) // what the interrupted cell bound is still bound
	term.waitFor(t, chatPrompt)

	term.send(t, "Wait.\r")
	term.waitFor(t, "import signal, time") // the stubborn cell runs
	term.send(t, "\x03")
	term.waitFor(t, "interrupting the cell")
	term.send(t, "\x03") // it ignores the interrupt: the second Ctrl-C kills it
	term.waitFor(t, "interrupted; the session goes on")
	term.waitFor(t, chatPrompt)

	term.send(t, "How many tasks, again?\r")
	term.waitFor(t, "[session: 4 questions, 4 calls")
	term.waitFor(t, chatPrompt)
	term.send(t, "\x04")
	err = term.wait(t)
	require.NoError(t, err, "exit 0 at Ctrl-D:\n%s", term.output())

	assert.Regexp(t, fmt.Sprintf(`[^\d]%d\r\n`, n), term.output(), "the last question's answer")
	reqs := srv.Requests()
	require.Len(t, reqs, 4)
	text := func(r llmtest.Request) string {
		var b strings.Builder
		for _, m := range r.Body.Messages {
			b.WriteString(m.Content + "\n")
		}
		return b.String()
	}
	second, last := text(reqs[1]), text(reqs[3])
	assert.Contains(t, second, "CellInterrupted", "the model reads that its cell was interrupted")
	assert.NotContains(t, second, "was restarted", "an interrupt keeps the kernel")
	assert.Contains(t, last, "[ctxcode: the user interrupted this cell, which stopped the kernel; it was restarted",
		"the killed cell is in the history, with the note")
	assert.Contains(t, last, "How many tasks?", "the first question is in the conversation")
	assert.Empty(t, kernels(), "no kernel process or container is left")
	left, err := filepath.Glob(filepath.Join(tmp, "ctxcode-kernel-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the kernels' folders are removed")
}

// ptyProc is a process on a pty and everything it wrote.
type ptyProc struct {
	cmd    *exec.Cmd
	f      *os.File
	mu     sync.Mutex
	out    []byte
	seen   int           // waitFor looks after this offset
	more   chan struct{} // signalled on each read
	closed chan struct{} // closed when the reads end
	done   chan error    // the process's exit
}

func startPty(t *testing.T, cmd *exec.Cmd) *ptyProc {
	t.Helper()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	require.NoError(t, err)
	p := &ptyProc{cmd: cmd, f: f, more: make(chan struct{}, 1), closed: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		defer close(p.closed)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			p.mu.Lock()
			p.out = append(p.out, buf[:n]...)
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = f.Close()
		<-p.closed
	})
	return p
}

func (p *ptyProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.out)
}

// waitFor waits until the output, after what an earlier waitFor matched,
// holds s.
func (p *ptyProc) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(2 * time.Minute) // a safety net: the wait is for the text
	for {
		p.mu.Lock()
		i := strings.Index(string(p.out[p.seen:]), s)
		if i >= 0 {
			p.seen += i + len(s)
		}
		p.mu.Unlock()
		if i >= 0 {
			return
		}
		select {
		case <-p.more:
		case <-p.closed:
			t.Fatalf("the process ended before %q:\n%s", s, p.output())
		case <-deadline:
			t.Fatalf("no %q after 2 minutes:\n%s", s, p.output())
		}
	}
}

func (p *ptyProc) send(t *testing.T, s string) {
	t.Helper()
	_, err := p.f.Write([]byte(s))
	require.NoError(t, err)
}

// wait waits for the process to exit.
func (p *ptyProc) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(2 * time.Minute):
		t.Fatalf("the process did not end:\n%s", p.output())
		return nil
	}
}

// kernelProcesses is the pids of the processes that run in a kernel folder
// under tmp (a local kernel's working directory).
func kernelProcesses(t *testing.T, tmp string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && strings.HasPrefix(cwd, tmp+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Count(strings.TrimSpace(string(b)), "\n") + 1
}

// TestChatPromptKeys: at the prompt, Ctrl-C on a line clears it, twice on
// an empty line ends the chat (exit 0); SIGTERM at the prompt ends it with
// 130. No question was asked, so no kernel started and no request went.
func TestChatPromptKeys(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	start := func() (*exec.Cmd, *ptyProc) {
		cmd := exec.Command(exe, "chat", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local")
		cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1", "OPENAI_API_KEY=sk-test", "TERM=xterm")
		return cmd, startPty(t, cmd)
	}

	t.Run("Ctrl-C twice", func(t *testing.T) {
		_, term := start()
		term.waitFor(t, chatPrompt)
		term.send(t, "half a question")
		term.waitFor(t, "half a question")
		term.send(t, "\x03")
		// The editor redraws the line as it is typed, so a prompt is in
		// the output already: the new one is the one after the editor's
		// "^C" (a Ctrl-C sent before it would reach the program between
		// two reads of the editor).
		term.waitFor(t, "^C")
		term.waitFor(t, chatPrompt)
		term.send(t, "\x03")
		term.waitFor(t, "(Ctrl-D, or Ctrl-C again, ends the chat)")
		term.waitFor(t, chatPrompt)
		term.send(t, "\x03")
		require.NoError(t, term.wait(t), term.output())
	})
	t.Run("SIGTERM", func(t *testing.T) {
		cmd, term := start()
		term.waitFor(t, chatPrompt)
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		err := term.wait(t)
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr, term.output())
		assert.Equal(t, exitInterrupted, exitErr.ExitCode(), term.output())
	})
	assert.Empty(t, srv.Requests())
}

// TestChatInterruptOverPipe: with questions on a pipe, SIGINT while a cell
// runs stops that question and the next line is asked; the end of the
// input ends the chat with 0.
func TestChatInterruptOverPipe(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	started := filepath.Join(gatetest.SharedDir(t), "started")
	release := gatetest.FIFO(t, started)
	srv := llmtest.NewServer(t,
		llmtest.Text("open("+strconv.Quote(started)+").read()\nimport time\ntime.sleep(600)", 700, 10),
		llmtest.Text("ANSWER(len(tasks))", 800, 5),
	)
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "chat", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local", "--timeout", "10m", "--json")
	cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1", "OPENAI_API_KEY=sk-test")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	_, err = io.WriteString(stdin, "How many tasks?\n")
	require.NoError(t, err)
	release() // returns once the cell opened the gate: it runs
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	_, err = io.WriteString(stdin, "How many tasks, again?\n")
	require.NoError(t, err)
	require.NoError(t, stdin.Close())
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("chat did not end:\n%s", stderr.String())
	}
	require.NoError(t, err, stderr.String())
	assert.Contains(t, stderr.String(), "interrupted; the session goes on")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout.String()), &rec), stdout.String())
	assert.Equal(t, float64(countLines(t, filepath.Join(dir, "tasks.jsonl"))), rec["answer"])
	assert.EqualValues(t, 2, rec["stage"])
}

// TestChatInterruptedInSetUp: SIGINT before the first question (here while
// the built-in data is generated) ends the chat with 130, with no kernel
// left: there is no session to keep.
func TestChatInterruptedInSetUp(t *testing.T) {
	requirePython(t)
	tmp := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "chat", "--model", "reference", "--sandbox", "local")
	cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1", "XDG_CACHE_HOME="+t.TempDir(), "TMPDIR="+tmp)
	stdin, err := cmd.StdinPipe() // open, and empty, until the end
	require.NoError(t, err)
	defer stdin.Close()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "generating the built-in data set") {
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		}
	}
	err = cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, strings.Join(lines, "\n"))
	assert.Equal(t, exitInterrupted, exitErr.ExitCode(), strings.Join(lines, "\n"))
	assert.Contains(t, lines, "ctxcode: interrupted")
	assert.Empty(t, stdout.String())
	assert.Empty(t, kernelProcesses(t, tmp))
}

// TestChatGoesOnAfterAFailedQuestion: a question the model API fails is
// printed as no answer, with why on stderr, and the next one is asked.
func TestChatGoesOnAfterAFailedQuestion(t *testing.T) {
	requirePython(t)
	dir := pmData(t)
	srv := llmtest.NewServer(t, llmtest.Error(400, "invalid_request_error", "the request was malformed"), llmtest.Text("ANSWER(len(users))", 700, 5))
	t.Setenv("OPENAI_API_KEY", "sk-test")
	got := runCLI(t, "How many tasks?\nHow many users?\n", "chat", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local")
	require.Equal(t, exitOK, got.code, got.stderr)
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 6, got.stdout)
	assert.Equal(t, fmt.Sprintf("no answer (%s)", agent.ModelFailed), lines[0])
	assert.Contains(t, got.stderr, "the request was malformed")
	assert.Equal(t, strconv.Itoa(countLines(t, filepath.Join(dir, "users.jsonl"))), lines[3])
	assert.Contains(t, lines[5], "[session: 2 questions, 2 calls")
}
