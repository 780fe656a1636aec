package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chzyer/readline"
	"golang.org/x/term"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/session"
)

var chatUsage = helpText("chat")

// chatPrompt is the line editor's prompt.
const chatPrompt = "ctxcode> "

type chatOptions struct {
	askOptions // the set-up flags chat shares with ask; no question, no task
	context    string
	window     int
}

func parseChat(args []string, stderr io.Writer) (*chatOptions, error) {
	o := &chatOptions{}
	fs := newFlagSet("chat", chatUsage, stderr)
	o.sandbox.register(fs)
	var condition string
	fs.StringVar(&condition, "condition", "D", "the rung of the ladder: D (bare loop) or B (eval tool); B0 is B over a prefix that binds nothing")
	fs.StringVar(&o.dataDir, "data", "", "data folder (default: the built-in project-management data, tier xl)")
	fs.StringVar(&o.prefixName, "prefix", "", "prefix: a built-in name or a file (default: pm for ctxcode data, else one written by prefix init)")
	fs.StringVar(&o.model, "model", "", "model name at the endpoint, or reference (default: $CTXCODE_MODEL, else gpt-4o-mini)")
	fs.StringVar(&o.context, "context", "none", "context policy as the chat grows: none, elide, summarize or staged")
	fs.IntVar(&o.window, "window", session.DefaultWindow, "the window, in tokens, whose shares the context policy's thresholds are")
	fs.StringVar(&o.trajectory, "trajectory", "", "write every event of the chat to this file, one JSON object per line")
	fs.BoolVar(&o.force, "force", false, "overwrite --trajectory if it exists")
	fs.BoolVar(&o.json, "json", false, "print each answer as one JSON object")
	fs.BoolVar(&o.noCache, "no-cache", false, "build the prefix before the first request, and keep no built prefix in the cache folder")
	o.modelFlags.register(fs, "seed")
	if err := fs.parse(args, 0, ""); err != nil {
		return nil, err
	}
	if err := o.sandbox.check(); err != nil {
		return nil, err
	}
	if strings.Contains(condition, ",") {
		return nil, usagef("--condition %q: a chat runs in one condition; to compare conditions over many questions, use ctxcode bench --conditions %s", condition, condition)
	}
	var err error
	if o.rung, err = parseRung(condition, string(agent.Loop), "", false, false, o.prefixName != ""); err != nil {
		return nil, err
	}
	if err := bench.CheckChatRung(o.rung); err != nil {
		return nil, askError(err)
	}
	policy, err := session.ParsePolicy(o.context)
	if err != nil {
		return nil, usagef("--context: %v", err)
	}
	if o.window <= 0 {
		return nil, usagef("--window %d: give the window's size in tokens, a positive number such as %d", o.window, session.DefaultWindow)
	}
	if err := o.modelFlags.check(); err != nil {
		return nil, err
	}
	o.agent.Context = session.Context{Policy: policy, Window: o.window}
	if err := o.agent.Context.Check(); err != nil {
		return nil, usagef("--context: %v", err)
	}
	if err := o.checkFiles("chat"); err != nil {
		return nil, err
	}
	return o, nil
}

// errInterrupted ends a chat interrupted when no question ran (during the
// set-up, or between questions read from a pipe): exit code 130.
var errInterrupted = fmt.Errorf("interrupted: %w", context.Canceled)

// runChat asks the questions of stdin, one a line, in one live session.
//
// Ctrl-C is chat's own: while a question runs it stops that question (a
// running Python cell is interrupted in the kernel, which keeps its
// namespace; a model call, or a cell that takes no interrupt, is
// cancelled, and such a cell killed with its kernel, which the next
// question restarts over the prefix) and the chat goes on; during the set-up, or
// between questions read from a pipe, it ends the chat (130). At the
// terminal's prompt the line editor reads Ctrl-C as a key: it clears the
// line, and twice on an empty line ends the chat, as Ctrl-D does (0).
// SIGTERM ends the chat at once (130). The kernel is closed however it
// ends.
func runChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseChat(args, stderr)
	if err != nil {
		return err
	}
	// main's context ends at the first SIGINT; from here SIGINT comes to
	// intr instead, until runChat has returned (the kernel closed).
	intr := make(chan os.Signal, 1)
	signal.Reset(os.Interrupt)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)

	o.progress = newProgress(stderr)
	cfg, err := o.askConfig(stderr)
	if err != nil {
		return err
	}
	setupCtx, stop := watchInterrupt(ctx, intr)
	paced := paceGC()
	s, err := bench.PrepareChat(setupCtx, cfg, o.progress)
	paced()
	if stop() {
		if s != nil {
			s.Close()
		}
		return errInterrupted
	}
	if err != nil {
		return askError(err)
	}
	defer s.Close()
	traj, closeTraj, err := o.openTrajectory()
	if err != nil {
		return err
	}
	defer closeTraj()
	chat, err := s.Chat(traj, o.progress)
	if err != nil {
		return err
	}
	defer chat.Close()
	in, err := openChatInput(ctx, stdin, stdout, stderr)
	if err != nil {
		return err
	}
	defer in.close()
	if in.terminal {
		fmt.Fprintf(stderr, "ctxcode chat: %s over %s, model %s; Ctrl-C stops a question, Ctrl-D ends the chat\n",
			o.rung.Name, prefixName(s), o.model)
	}
	if err := o.loop(ctx, chat, in, intr, stdout, stderr); err != nil {
		return err
	}
	if err := traj.Err(); err != nil {
		fmt.Fprintf(stderr, "ctxcode: warning: %v\n", err)
	}
	return nil
}

func prefixName(s *bench.AskSetup) string {
	if p := s.Prefix(); p != nil {
		return "prefix " + p.Name
	}
	return "no prefix"
}

// loop reads questions and asks them until the input ends.
func (o *chatOptions) loop(ctx context.Context, chat *bench.Chat, in *chatInput, intr <-chan os.Signal, stdout, stderr io.Writer) error {
	presses := 0 // Ctrl-C at an empty prompt, in a row
	for {
		line, err := in.next()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case !in.terminal && interruptPending(intr):
			return errInterrupted // SIGINT while waiting for the next line of a pipe
		case errors.Is(err, readline.ErrInterrupt):
			if strings.TrimSpace(line) != "" {
				presses = 0 // the line is cleared
				continue
			}
			if presses++; presses >= 2 {
				return nil
			}
			fmt.Fprintln(stderr, "(Ctrl-D, or Ctrl-C again, ends the chat)")
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("read the question: %w", err)
		}
		presses = 0
		question := strings.TrimSpace(line)
		if question == "" {
			continue
		}
		interruptPending(intr) // on a terminal, a stray SIGINT at the prompt (kill -INT) is not this question's
		turn, stop := watchQuestion(ctx, intr, chat, stderr)
		res, err := chat.Ask(turn, question)
		interrupted := stop()
		// A second Ctrl-C as the question winds down is the same one's.
		interruptPending(intr)
		o.progress.done()
		var qe *bench.QuestionError
		switch {
		case err != nil && ctx.Err() != nil:
			return err
		case err != nil && interrupted:
			fmt.Fprintln(stderr, "ctxcode: interrupted; the session goes on")
			fmt.Fprintln(stderr, chat.Totals())
			continue
		case errors.As(err, &qe):
			fmt.Fprintf(stderr, "ctxcode: %v\n", qe)
			continue
		case err != nil:
			return askError(err)
		}
		if res.Run.Status == agent.Interrupted {
			fmt.Fprintln(stderr, "ctxcode: interrupted; the session goes on, its variables kept")
			fmt.Fprintln(stderr, chat.Totals())
			continue
		}
		if err := o.print(stdout, res, chat.Totals()); err != nil {
			return err
		}
		if r := res.Run; r.Status != agent.Answered && r.Err != nil && !o.json {
			fmt.Fprintf(stderr, "ctxcode: %v\n", r.Err) // why there is no answer; the chat goes on
		}
	}
}

// print writes one answer: as ask prints it and the session's totals, or
// as one JSON object.
func (o *chatOptions) print(w io.Writer, res *bench.AskResult, totals bench.ChatTotals) error {
	if o.json {
		rec := res.Record()
		rec["stage"] = totals.Questions
		rec["session"] = totals.Record()
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(rec)
	}
	printResult(w, res)
	_, err := fmt.Fprintln(w, totals)
	return err
}

// watchInterrupt is ctx, cancelled at a SIGINT on intr; stop stops
// watching and says whether one came.
func watchInterrupt(ctx context.Context, intr <-chan os.Signal) (_ context.Context, stop func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	quit, done := make(chan struct{}), make(chan struct{})
	hit := false
	go func() {
		defer close(done)
		select {
		case <-intr:
			hit = true
			cancel()
		case <-quit:
		}
	}()
	return ctx, func() bool {
		close(quit)
		<-done
		cancel()
		return hit
	}
}

// watchQuestion is ctx for one question, watched for SIGINT on intr: the
// first interrupts the running cell in the kernel when it can
// (Chat.Interrupt: the namespace stays, the question ends after the
// cell), else cancels ctx (a model call, or a cell that takes no
// interrupt: it is killed with its kernel); a second cancels ctx. stop
// stops watching and says whether a SIGINT came.
func watchQuestion(ctx context.Context, intr <-chan os.Signal, chat *bench.Chat, stderr io.Writer) (_ context.Context, stop func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	quit, done := make(chan struct{}), make(chan struct{})
	hit := false
	go func() {
		defer close(done)
		for {
			select {
			case <-intr:
				if !hit && chat.Interrupt() {
					hit = true
					fmt.Fprintln(stderr, "\nctxcode: interrupting the cell (Ctrl-C again stops it by restarting the kernel)")
					continue
				}
				hit = true
				cancel()
				return
			case <-quit:
				return
			}
		}
	}()
	return ctx, func() bool {
		close(quit)
		<-done
		cancel()
		return hit
	}
}

// interruptPending says whether a SIGINT came and takes it.
func interruptPending(intr <-chan os.Signal) bool {
	select {
	case <-intr:
		return true
	default:
		return false
	}
}

// chatInput is where the questions come from: a line editor with history
// on a terminal, else plain lines.
type chatInput struct {
	terminal bool
	rl       *readline.Instance // on a terminal
	stdin    io.Closer          // what rl reads
	lines    *bufio.Scanner     // else
	// On a terminal, a watcher closes the editor when ctx ends (SIGTERM at
	// the prompt); quit stops it and wg waits for it.
	quit chan struct{}
	wg   sync.WaitGroup
}

// openChatInput reads stdin with the line editor when it is the terminal,
// its history kept in the cache folder (chatHistory).
func openChatInput(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (*chatInput, error) {
	f, ok := stdin.(*os.File)
	if !ok || f != os.Stdin || !term.IsTerminal(int(f.Fd())) {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		return &chatInput{lines: sc}, nil
	}
	history, err := chatHistory()
	if err != nil {
		fmt.Fprintf(stderr, "ctxcode: warning: no chat history: %v\n", err)
	}
	// The editor reads stdin through cs, which Close ends even while a read
	// waits for a key (SIGTERM at the prompt); readline's own Close would
	// wait for that read.
	cs := readline.NewCancelableStdin(f)
	rl, err := readline.NewEx(&readline.Config{
		Stdin:           cs,
		Prompt:          chatPrompt,
		HistoryFile:     history,
		Stdout:          stdout,
		Stderr:          stderr,
		InterruptPrompt: "^C",
		EOFPrompt:       "\n",
	})
	if err != nil {
		_ = cs.Close()
		return nil, fmt.Errorf("open the line editor: %w", err)
	}
	in := &chatInput{terminal: true, rl: rl, stdin: cs, quit: make(chan struct{})}
	in.wg.Go(func() {
		select {
		case <-ctx.Done():
			in.closeEditor()
		case <-in.quit:
		}
	})
	return in, nil
}

// next is the next line: io.EOF at the end (Ctrl-D), readline.ErrInterrupt
// for Ctrl-C at the prompt (with the line it cleared).
func (in *chatInput) next() (string, error) {
	if in.rl != nil {
		return in.rl.Readline()
	}
	if in.lines.Scan() {
		return in.lines.Text(), nil
	}
	if err := in.lines.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

func (in *chatInput) close() {
	if in.rl == nil {
		return
	}
	close(in.quit)
	in.wg.Wait()
	in.closeEditor()
}

// closeEditor closes the line editor, which makes a Readline that waits
// return io.EOF. It may be called more than once.
func (in *chatInput) closeEditor() {
	_ = in.stdin.Close()
	_ = in.rl.Close()
}

// chatHistory is the line editor's history file, in the cache folder
// (os.UserCacheDir()/ctxcode/chat_history), its folder made.
func chatHistory() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "ctxcode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, "chat_history"), nil
}
