package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ctxcode/ctxcode/bench"
	reports "github.com/ctxcode/ctxcode/report"
)

var reportUsage = helpText("report")

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportUsage, stderr)
	md := fs.String("md", "", "the Markdown file to write (default RUNDIR/report.md)")
	html := fs.String("html", "", "the HTML file to write (default RUNDIR/report.html)")
	asJSON := fs.Bool("json", false, "print every number of the report as one JSON object")
	baseline := fs.String("baseline", "", "the condition every other is compared with (default A when the run has it)")
	pricesFile := fs.String("prices", "", "model prices, a JSON file: {\"MODEL\": {\"input\": USD, \"cached_input\": USD, \"output\": USD}} per 1M tokens (cached_input defaults to input)")
	force := fs.Bool("force", false, "overwrite the report's files and notebooks even when ctxcode did not write them or they were changed since")
	notebooks := fs.Bool("notebooks", false, "also write each trial as a Jupyter notebook under RUNDIR/notebooks/ and link it from the Markdown and the HTML")
	by := fs.String("by", "", "also break the results down by the values of this field of the tasks' meta")
	if err := fs.parse(args, 2, "one or two run directories"); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("report: give the run directory: ctxcode report RUNDIR (written by ctxcode bench --out RUNDIR)")
	}
	var opts reports.Options
	opts.Baseline, opts.Notebooks, opts.By = *baseline, *notebooks, *by
	if *pricesFile != "" {
		p, err := reports.ReadPrices(*pricesFile)
		if err != nil {
			return usagef("--prices %v", err)
		}
		opts.Prices = p
	}
	var runs []*reports.Run
	for _, dir := range fs.Args() {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return usagef("report: %s: no such folder; give a run directory, written by ctxcode bench --out RUNDIR", dir)
		}
		r, err := reports.Load(dir)
		var ce *bench.ConfigError
		if errors.As(err, &ce) {
			return usagef("report: %v", err)
		}
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	paths := reports.DefaultPaths(runs[0].Dir)
	if *md != "" {
		paths.MD = *md
	}
	if *html != "" {
		paths.HTML = *html
	}
	var ie *reports.InputError
	if err := reports.CheckOutputs(runs, paths, *notebooks, *force); errors.As(err, &ie) {
		return usagef("report: %v", err)
	} else if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	rep, err := reports.Build(runs, opts)
	if errors.As(err, &ie) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if *notebooks {
		warnings, err := reports.WriteNotebooks(runs[0])
		for _, w := range warnings {
			fmt.Fprintf(stderr, "ctxcode: report: %s\n", w)
		}
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if err := reports.Write(runs, rep, paths); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "wrote %s and %s\n", paths.MD, paths.HTML)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stderr, "ctxcode: note: %s\n", n)
	}
	return nil
}
