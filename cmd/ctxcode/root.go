package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/ctxcode/ctxcode/bench"
)

// Exit codes (see DESIGN.md).
const (
	exitOK          = 0
	exitInfra       = 1   // kernel, sandbox or API failure
	exitUsage       = 2   // usage or bad input
	exitNoAnswer    = 3   // no answer within the budget
	exitInterrupted = 130 // Ctrl-C (SIGINT) or SIGTERM; what finished is kept
)

// usageError is bad input from the user: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// noAnswerError is a run that ended without an answer within its budget:
// exit code 3.
type noAnswerError struct{ msg string }

func (e *noAnswerError) Error() string { return e.msg }

var rootUsage = helpText("root")

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// run is the whole program: it parses args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, rootUsage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "data":
		err = runData(ctx, rest, stdout, stderr)
	case "exec":
		err = runExec(ctx, rest, stdin, stdout, stderr)
	case "kernel":
		err = runKernel(ctx, rest, stdout, stderr)
	case "sandbox":
		err = runSandbox(ctx, rest, stdout, stderr)
	case "tasks":
		err = runTasks(ctx, rest, stdout, stderr)
	case "prefix":
		err = runPrefix(ctx, rest, stdout, stderr)
	case "ask":
		err = runAsk(ctx, rest, stdout, stderr)
	case "chat":
		err = runChat(ctx, rest, stdin, stdout, stderr)
	case "bench":
		err = runBench(ctx, rest, stdout, stderr)
	case "notebook":
		err = runNotebook(ctx, rest, stdout, stderr)
	case "report":
		err = runReport(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "ctxcode", version)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != "help" {
			return run(ctx, []string{rest[0], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, rootUsage)
	default:
		err = usagef("unknown command %q\n\n%s", cmd, rootUsage)
	}
	return report(ctx, err, stderr)
}

// report prints err for people and maps it to an exit code. A command that
// fails once ctx is cancelled (Ctrl-C) was interrupted, whatever the error
// says: a kernel that got the same signal dies too.
func report(ctx context.Context, err error, stderr io.Writer) int {
	var ue *usageError
	var be *bench.InputError // bad input found as a run is built, in bench or ask
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return exitOK
	case errors.Is(err, syscall.EPIPE):
		fmt.Fprintln(stderr, "ctxcode: the output was closed before the end (broken pipe)")
		return exitInfra
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		// "interrupted at cell 2 of 3: context canceled" says where.
		where := strings.TrimPrefix(err.Error(), "interrupted")
		where = strings.Trim(strings.TrimSuffix(where, context.Canceled.Error()), ": ")
		if where == "" {
			fmt.Fprintln(stderr, "ctxcode: interrupted")
		} else {
			fmt.Fprintf(stderr, "ctxcode: interrupted: %s\n", where)
		}
		return exitInterrupted
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ctxcode: %s\n", strings.TrimRight(ue.msg, "\n"))
		return exitUsage
	case errors.As(err, &be):
		fmt.Fprintf(stderr, "ctxcode: %s\n", strings.TrimRight(be.Msg, "\n"))
		return exitUsage
	case errors.As(err, new(*noAnswerError)):
		fmt.Fprintf(stderr, "ctxcode: %v\n", err)
		return exitNoAnswer
	default:
		fmt.Fprintf(stderr, "ctxcode: %v\n", err)
		return exitInfra
	}
}

// flagSet is a command's flags with its usage text. Flags may come before
// or after positional arguments (pflag's interspersed parsing, as in gh,
// docker and kubectl); everything after "--" is positional.
type flagSet struct {
	*pflag.FlagSet
	usage  string
	stderr io.Writer
}

// newFlagSet makes a flag set whose errors come back once, as usage errors.
func newFlagSet(name, usage string, stderr io.Writer) *flagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	fs.SetInterspersed(true)
	return &flagSet{FlagSet: fs, usage: usage, stderr: stderr}
}

// parse parses args, flags anywhere among at most maxArgs positional
// arguments (what names them in the error; maxArgs < 0: any number). -h
// prints the usage and the flags; a bad flag or a stray argument is a usage
// error that points at -h.
func (fs *flagSet) parse(args []string, maxArgs int, what string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprintf(fs.stderr, "%s\nFlags:\n", fs.usage)
		fs.SetOutput(fs.stderr)
		fs.PrintDefaults()
		return err
	default:
		hint := ""
		for _, a := range args {
			// -data: a long flag with one dash, as Go's flag package took.
			if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.Contains(err.Error(), "in "+a) {
				name, _, _ := strings.Cut(a[1:], "=")
				if fs.Lookup(name) != nil {
					hint = fmt.Sprintf("; long flags take two dashes: -%s", a)
				}
			}
		}
		return usagef("%s: %v%s (run \"ctxcode %s -h\" for help)", fs.Name(), err, hint, fs.Name())
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		extra := fs.Arg(maxArgs)
		if maxArgs == 0 {
			return usagef("%s: unexpected argument %q: %s takes only flags (run \"ctxcode %s -h\" for help)", fs.Name(), extra, fs.Name(), fs.Name())
		}
		return usagef("%s: unexpected argument %q: it takes %s (run \"ctxcode %s -h\" for help)", fs.Name(), extra, what, fs.Name())
	}
	return nil
}
