package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/outfile"
)

var dataUsage = helpText("data")

type dataGenOptions struct {
	tier  datasets.Tier
	seed  int64
	out   string
	force bool
}

func parseDataGen(args []string, stderr io.Writer) (*dataGenOptions, error) {
	o := &dataGenOptions{}
	fs := newFlagSet("data gen", dataUsage, stderr)
	tier := fs.String("tier", "xl", "dataset size: s, m or xl")
	fs.Int64Var(&o.seed, "seed", 1, "random seed; the same tier and seed give the same files")
	fs.StringVar(&o.out, "out", "", "folder to write the dataset into (required)")
	fs.BoolVar(&o.force, "force", false, "write into a folder that is not empty, overwriting a dataset there")
	if err := fs.parse(args, 0, ""); err != nil {
		return nil, err
	}
	var err error
	if o.tier, err = datasets.ParseTier(*tier); err != nil {
		return nil, usagef("data gen: --tier: %v", err)
	}
	if o.out == "" {
		return nil, usagef("data gen: --out is required: the folder to write the dataset into")
	}
	if st, err := os.Stat(o.out); err == nil && !st.IsDir() {
		return nil, usagef("data gen: --out %s is a file: name a folder (new or empty) to write the dataset into", o.out)
	} else if err != nil { // a new folder, made with its parents
		if err := fileErr("data gen", ": ", outfile.CheckNewDir(o.out)); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func runData(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("data: missing subcommand\n\n%s", dataUsage)
	}
	switch args[0] {
	case "gen":
		o, err := parseDataGen(args[1:], stderr)
		if err != nil {
			return err
		}
		return runDataGen(ctx, o, stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, dataUsage)
		return nil
	}
	return usagef("data: unknown subcommand %q\n\n%s", args[0], dataUsage)
}

func runDataGen(ctx context.Context, o *dataGenOptions, stdout io.Writer) error {
	d := datasets.Generate(o.tier, o.seed)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before writing %s: %w", o.out, err)
	}
	m, err := d.Write(o.out, o.force)
	if errors.Is(err, datasets.ErrDirNotEmpty) {
		return usagef("data gen: %v", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote tier %s (seed %d) to %s\n", m.Tier, m.Seed, o.out)
	for _, name := range datasets.Files {
		fmt.Fprintf(stdout, "  %-15s %6d rows\n", name+".jsonl", m.Counts[name+".jsonl"])
	}
	return nil
}
