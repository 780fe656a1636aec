package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

var execUsage = helpText("exec")

type execOptions struct {
	sandbox    sandboxFlags
	lang       kernel.Language
	dataDir    string
	prefix     *prefixes.Prefix
	timeout    time.Duration
	maxOutput  int
	json       bool
	cells      []string
	cellsStdin bool
}

func parseExec(args []string, stdin io.Reader, stderr io.Writer) (*execOptions, error) {
	o := &execOptions{}
	fs := newFlagSet("exec", execUsage, stderr)
	lang := fs.String("lang", "python", "kernel language: python or go")
	o.sandbox.register(fs)
	fs.StringVar(&o.dataDir, "data", "", "data folder, shown to the kernel read-only as data/")
	prefix := fs.String("prefix", "", "session prefix to run first: a built-in name ("+strings.Join(prefixes.Builtins(), ", ")+") or a percent-format file")
	fs.DurationVar(&o.timeout, "timeout", kernel.DefaultTimeout, "soft time limit per cell; the kernel is killed at this plus a 2s grace")
	fs.IntVar(&o.maxOutput, "max-output", kernel.DefaultMaxOutputBytes, "bytes of stdout, stderr and value kept per cell (head and tail)")
	fs.BoolVar(&o.json, "json", false, "print one JSON result per cell instead of IPython-style text")
	if err := fs.parse(args, -1, ""); err != nil {
		return nil, err
	}
	var err error
	if o.lang, err = kernel.ParseLanguage(*lang); err != nil {
		return nil, usagef("--lang: %v", err)
	}
	if err := o.sandbox.check(); err != nil {
		return nil, err
	}
	if *prefix != "" {
		if o.prefix, err = prefixes.Load(*prefix); err != nil {
			return nil, usagef("--prefix: %v", err)
		}
		langSet := fs.Changed("lang")
		switch {
		case !langSet:
			o.lang = o.prefix.Language
		case o.lang != o.prefix.Language:
			return nil, usagef("--prefix %s is written in %s, but --lang is %s", o.prefix.Name, o.prefix.Language, o.lang)
		}
	}
	if o.timeout <= 0 {
		return nil, usagef("--timeout must be positive, got %s", o.timeout)
	}
	if o.maxOutput < 64 {
		return nil, usagef("--max-output must be at least 64 bytes, got %d", o.maxOutput)
	}
	if err := needData("exec", o.prefix, o.dataDir); err != nil {
		return nil, err
	}
	for _, c := range fs.Args() {
		// After "--" every word is a cell; one that names a flag of exec
		// was surely meant as the flag.
		if name, _, _ := strings.Cut(strings.TrimLeft(c, "-"), "="); strings.HasPrefix(c, "--") && fs.Lookup(name) != nil {
			return nil, usagef("exec: flag %s comes after --, where every word is a cell; put it before --: ctxcode exec [flags] -- CELL ...", c)
		}
		if strings.TrimSpace(c) != "" {
			o.cells = append(o.cells, c)
		}
	}
	if len(fs.Args()) == 0 {
		if o.cells, err = readCells(stdin); err != nil {
			return nil, fmt.Errorf("read cells from standard input: %w", err)
		}
		o.cellsStdin = true
	}
	if len(o.cells) == 0 {
		return nil, usagef("exec: no cells given: pass them after -- or on standard input, separated by \"# %%%%\" lines")
	}
	return o, nil
}

// readCells reads percent-format cells from r (prefixes.SplitCells); from
// a terminal, none.
func readCells(r io.Reader) ([]string, error) {
	if r == nil || terminal(r) {
		return nil, nil // a terminal: do not wait for typing
	}
	b, err := io.ReadAll(r)
	return prefixes.SplitCells(string(b)), err
}

// execRecord is one line of exec --json.
type execRecord struct {
	Code   string `json:"code"`
	Prefix bool   `json:"prefix,omitempty"` // a cell of the --prefix
	kernel.Result
}

func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	o, err := parseExec(args, stdin, stderr)
	if err != nil {
		return err
	}
	if o.dataDir != "" {
		noteData(o.dataDir, o.sandbox.followLinks, stderr)
	}
	k, stop, err := o.sandbox.start(ctx, o.lang, o.dataDir, stderr)
	defer func() {
		if cerr := stop(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while the kernel started: %w", ctx.Err())
		}
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	count := 0
	printed := 0
	show := func(c session.Cell, prefix bool) error {
		if o.json {
			return enc.Encode(execRecord{Code: c.Code, Prefix: prefix, Result: c.Result})
		}
		if printed > 0 {
			fmt.Fprintln(stdout)
		}
		printed++
		_, err := io.WriteString(stdout, c.Render())
		return err
	}
	if o.prefix != nil {
		cells, err := prefixes.Build(ctx, k, o.prefix, kernel.ExecOptions{Timeout: o.timeout, MaxOutputBytes: o.maxOutput})
		for _, c := range cells {
			if err := show(c, true); err != nil {
				return err
			}
			count = c.Result.Count
		}
		var be *prefixes.BuildError
		if errors.As(err, &be) {
			return usagef("%v", err)
		}
		if err != nil {
			return err
		}
	}
	for i, code := range o.cells {
		res, err := k.Execute(ctx, code, kernel.ExecOptions{Timeout: o.timeout, MaxOutputBytes: o.maxOutput})
		if err != nil {
			if !o.json { // show which cell it was
				_ = show(session.Cell{Code: code, Result: kernel.Result{Count: count + 1}}, false)
			}
			skipped := ""
			if rest := len(o.cells) - i - 1; rest > 0 {
				skipped = fmt.Sprintf(" (%d later cell(s) not run)", rest)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted at cell %d of %d%s: %w", i+1, len(o.cells), skipped, ctx.Err())
			}
			return fmt.Errorf("cell %d of %d%s: %w", i+1, len(o.cells), skipped, err)
		}
		count = res.Count
		if err := show(session.Cell{Code: code, Result: res}, false); err != nil {
			return err
		}
	}
	return nil
}
