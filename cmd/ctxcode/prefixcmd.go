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
	"github.com/ctxcode/ctxcode/session"
)

const prefixUsage = `Usage:
  ctxcode prefix init   --data DIR [--lang python|go] [--out FILE] [--force]
                                                write a prefix for a folder of .jsonl, .json and .csv files
  ctxcode prefix show   P --data DIR [--protocol bare|eval|transcript|cli|all] [--question Q] [--json] [flags]
                                                build P in a fresh kernel and print it as the model sees it,
                                                with its token count (all: a table of every protocol)
  ctxcode prefix verify P --data DIR [flags]    build P twice in fresh kernels; fail on any difference,
                                                a failing cell, or a transcript over --max-tokens
  ctxcode prefix export P --data DIR --out F.ipynb [--force] [flags]
                                                build P in a fresh kernel and write it as a Jupyter notebook
                                                with the real outputs
  ctxcode prefix import F.ipynb [--out FILE] [--force]
                                                print a notebook's code cells as a percent-format prefix
                                                (outputs are dropped: a build recomputes them)

P is a built-in prefix (pm, pm-nobind, pm-go), a percent-format file (cells separated by
"# %%" lines) or a Jupyter notebook (.ipynb).
Every output in a transcript comes from a real kernel; nothing is written by hand.
`

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
	fs.IntVar(&o.maxTokens, "max-tokens", 4000, "verify: the most tokens the rendered transcript may have")
	fs.DurationVar(&o.timeout, "timeout", kernel.DefaultTimeout, "soft time limit per cell")
	for _, register := range extra {
		register(fs)
	}
	// The prefix may stand anywhere among the flags: ctxcode prefix show pm --data DIR.
	if err := fs.parse(args, 1, "one prefix"); err != nil {
		return nil, err
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
		text, err := o.build(ctx, stderr)
		if err != nil {
			return err
		}
		tokens, err := session.CountTokens(session.Encoding(o.encoding), text)
		if err != nil {
			return err
		}
		again, err := o.build(ctx, stderr)
		if err != nil {
			return err
		}
		if again != text {
			return usagef("prefix %s is not deterministic: two builds in fresh kernels differ:\n%s\n(print sorted values, not sets, dicts of unknown order, times or random numbers)", o.prefix.Name, firstDifference(text, again))
		}
		if tokens > o.maxTokens {
			return usagef("prefix %s renders to %d tokens (%s), over --max-tokens %d: show less of the data (fewer or shorter sample rows), or raise --max-tokens", o.prefix.Name, tokens, o.encoding, o.maxTokens)
		}
		fmt.Fprintf(stdout, "prefix %s: ok: %d cells, built twice with identical output, %d tokens (%s)\n",
			o.prefix.Name, len(o.prefix.Cells), tokens, o.encoding)
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

// build runs the prefix in a fresh kernel and renders its transcript.
func (o *prefixOptions) build(ctx context.Context, stderr io.Writer) (string, error) {
	cells, err := o.execute(ctx, stderr)
	if err != nil {
		return "", err
	}
	return session.RenderCells(cells), nil
}

// execute runs the prefix in a fresh kernel and returns its cells; a cell
// that fails is a usage error.
func (o *prefixOptions) execute(ctx context.Context, stderr io.Writer) ([]session.Cell, error) {
	tr, cleanup, err := o.sandbox.transport(ctx, o.prefix.Language, o.dataDir, stderr)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	k, err := kernel.Start(ctx, o.prefix.Language, tr, kernel.ClientOptions{})
	if err != nil {
		return nil, err
	}
	defer k.Close()
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

// firstDifference shows the first line where two texts differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  first:  %s\n  second: %s", i+1, x, y)
		}
	}
	return "(no line differs)"
}

func runPrefixInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("prefix init", prefixUsage, stderr)
	dir := fs.String("data", "", "data folder to write a prefix for (required)")
	out := fs.String("out", "", "file to write (default: standard output)")
	force := fs.Bool("force", false, "overwrite --out if it exists")
	lang := fs.String("lang", "python", "prefix language: python, or go for the Go kernel (typed structs)")
	if err := fs.parse(args, 0, ""); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("prefix init: --data is required: the folder of .jsonl, .json and .csv files")
	}
	l, err := kernel.ParseLanguage(*lang)
	if err != nil {
		return usagef("--lang: %v", err)
	}
	if err := checkDataDir("prefix init: --data", *dir); err != nil {
		return err
	}
	if *out != "" {
		if err := checkOutput("prefix init", *out, *force); err != nil {
			return err
		}
	}
	src, skipped, err := prefixes.Init(*dir, l)
	if err != nil {
		return usagef("prefix init: %v", err)
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "ctxcode: prefix init: skipped %s: %s\n", s.File, s.Reason)
	}
	if *out == "" {
		_, err = stdout.Write(src)
		return err
	}
	if err := writeAtomic("prefix init", *out, src, *force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s; check it with: ctxcode prefix verify %s --data %s\n", *out, *out, *dir)
	return nil
}
