package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

var prefixUsage = helpText("prefix")

type prefixOptions struct {
	sandbox   sandboxFlags
	prefix    *prefixes.Prefix
	dataDir   string
	encoding  string
	maxTokens int
	timeout   time.Duration
}

// parsePrefix parses the flags of show, verify and export; extra registers
// a command's own flags.
func parsePrefix(cmd string, args []string, stderr io.Writer, extra ...func(*flagSet)) (*prefixOptions, error) {
	o := &prefixOptions{}
	fs := newFlagSet("prefix "+cmd, prefixUsage, stderr)
	o.sandbox.register(fs)
	fs.StringVar(&o.dataDir, "data", "", "data folder the prefix loads, shown to the kernel as data/")
	fs.StringVar(&o.encoding, "encoding", string(session.O200kBase), "token vocabulary: o200k_base or cl100k_base")
	fs.IntVar(&o.maxTokens, "max-tokens", prefixes.DefaultMaxTokens, "verify: the most tokens the rendered transcript may have")
	fs.DurationVar(&o.timeout, "timeout", kernel.DefaultTimeout, "soft time limit per cell")
	for _, register := range extra {
		register(fs)
	}
	// The prefix may stand anywhere among the flags: ctxcode prefix show pm --data DIR.
	if err := fs.parse(args, 1, "one prefix"); err != nil {
		return nil, err
	}
	if o.dataDir != "" {
		noteData(o.dataDir, o.sandbox.followLinks, stderr)
	}
	name := fs.Arg(0)
	if name == "" {
		return nil, usagef("prefix %s: name a prefix (%s) or a file", cmd, strings.Join(prefixes.Builtins(), ", "))
	}
	if err := o.sandbox.check(); err != nil {
		return nil, err
	}
	if _, err := session.CountTokens(session.Encoding(o.encoding), ""); err != nil {
		return nil, usagef("--encoding: %v", err)
	}
	var err error
	if o.prefix, err = prefixes.Load(name); err != nil {
		return nil, usagef("%v", err)
	}
	return o, nil
}

func runPrefix(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("prefix: missing subcommand\n\n%s", prefixUsage)
	}
	switch args[0] {
	case "init":
		return runPrefixInit(args[1:], stdout, stderr)
	case "show":
		return runPrefixShow(ctx, args[1:], stdout, stderr)
	case "verify":
		o, err := parsePrefix(args[0], args[1:], stderr)
		if err != nil {
			return err
		}
		if err := needData("prefix verify", o.prefix, o.dataDir); err != nil {
			return err
		}
		warned := false
		start := func(ctx context.Context) (kernel.Kernel, func(), error) {
			w := stderr
			if warned {
				w = io.Discard // the --sandbox local warning, once
			}
			warned = true
			return o.start(ctx, w)
		}
		v, err := prefixes.Verify(ctx, start, o.prefix, prefixes.VerifyOptions{
			MaxTokens: o.maxTokens, Encoding: session.Encoding(o.encoding), Exec: kernel.ExecOptions{Timeout: o.timeout}})
		switch {
		case prefixes.IsNotGood(err): // a cell failed, builds differ, over budget
			return usagef("%v", err)
		case err != nil:
			return err
		}
		fmt.Fprintf(stdout, "prefix %s: ok: %d cells, built twice with identical output, %d tokens (%s)\n",
			o.prefix.Name, v.Cells, v.Tokens, o.encoding)
		return nil
	case "export":
		o, err := parseExport(args[1:], stderr)
		if err != nil {
			return err
		}
		return o.run(ctx, stdout, stderr)
	case "import":
		o, err := parseImport(args[1:], stderr)
		if err != nil {
			return err
		}
		return o.run(stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, prefixUsage)
		return nil
	}
	return usagef("prefix: unknown subcommand %q\n\n%s", args[0], prefixUsage)
}

// needData checks --data before a kernel starts: a folder if given, and
// given when the prefix reads data/.
func needData(cmd string, p *prefixes.Prefix, dataDir string) error {
	if dataDir != "" {
		return checkDataDir("--data", dataDir)
	}
	if p != nil && p.ReadsData() {
		return usagef("%s: prefix %s reads data/: give the data folder with --data DIR (for the built-in data: ctxcode data gen --out DIR)", cmd, p.Name)
	}
	return nil
}

// start starts a fresh kernel for the prefix; stop closes it and its
// transport.
func (o *prefixOptions) start(ctx context.Context, stderr io.Writer) (kernel.Kernel, func(), error) {
	k, stop, err := o.sandbox.start(ctx, o.prefix.Language, o.dataDir, stderr)
	return k, func() { _ = stop() }, err
}

// execute runs the prefix in a fresh kernel and returns its cells; a cell
// that fails is a usage error.
func (o *prefixOptions) execute(ctx context.Context, stderr io.Writer) ([]session.Cell, error) {
	k, stop, err := o.start(ctx, stderr)
	if err != nil {
		return nil, err
	}
	defer stop()
	cells, err := prefixes.Build(ctx, k, o.prefix, kernel.ExecOptions{Timeout: o.timeout})
	var be *prefixes.BuildError
	if errors.As(err, &be) {
		return nil, usagef("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return cells, nil
}

func runPrefixInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("prefix init", prefixUsage, stderr)
	dir := fs.String("data", "", "data folder to write a prefix for (required)")
	out := fs.String("out", "", "file to write (default: standard output)")
	force := fs.Bool("force", false, "overwrite --out if it exists")
	lang := fs.String("lang", "python", "prefix language: python, or go for the Go kernel (typed structs)")
	styleName := fs.String("style", string(prefixes.StyleFrames), "python: frames (tables as pandas DataFrames; the kernels need pandas, as the kernel image has) or records (lists of dicts, the standard library's csv and json)")
	memory := byteSize(sandbox.DefaultConfig().Memory)
	fs.Var(&memory, "memory", "the memory limit of the kernels the prefix will run in (their --memory), to warn of data that would leave them little room")
	var follow bool
	registerFollowLinks(fs, &follow)
	if err := fs.parse(args, 0, ""); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("prefix init: --data is required: the folder of .jsonl, .json, .csv and .tsv files")
	}
	l, err := kernel.ParseLanguage(*lang)
	if err != nil {
		return usagef("--lang: %v", err)
	}
	if err := checkDataDir("prefix init: --data", *dir); err != nil {
		return err
	}
	style, err := prefixes.ParseStyle(*styleName)
	switch {
	case err != nil:
		return usagef("--style: %v", err)
	case l == kernel.Go && fs.Changed("style"):
		return usagef("--style is for Python prefixes; a Go prefix binds each table as a slice of structs")
	}
	// A Python prefix's control (condition B0's) is written beside it.
	control := ""
	if *out != "" {
		if err := checkOutput("prefix init", *out, *force); err != nil {
			return err
		}
		if l == kernel.Python {
			control = prefixes.ControlPath(*out)
			if err := checkOutput("prefix init (the control, beside --out)", control, *force); err != nil {
				return err
			}
		}
	}
	noteData(*dir, follow, stderr)
	res, err := prefixes.InitWith(*dir, prefixes.InitOptions{Lang: l, Style: style, MemoryLimit: int64(memory), FollowLinks: follow})
	res.WriteNotes(stderr)
	if err != nil {
		return usagef("prefix init: %v", err)
	}
	if *out == "" {
		_, err = stdout.Write(res.Source)
		return err
	}
	if err := writeAtomic("prefix init", *out, res.Source, *force); err != nil {
		return err
	}
	if control != "" && res.Control != nil {
		if err := writeAtomic("prefix init", control, res.Control, *force); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and its control %s (condition B0's: nothing bound); check them with: ctxcode prefix verify %s --data %s\n",
			*out, control, *out, *dir)
		return nil
	}
	fmt.Fprintf(stdout, "wrote %s; check it with: ctxcode prefix verify %s --data %s\n", *out, *out, *dir)
	return nil
}
