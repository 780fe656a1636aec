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

const reportUsage = `Usage:
  ctxcode report RUNDIR [RUNDIR2] [--md FILE] [--html FILE] [--json] [--baseline C] [--prices FILE] [--notebooks]

Reads a run directory written by "ctxcode bench" (nothing else: it works on
a run from another machine) and writes the ladder: per model and condition,
accuracy with a 95% interval over tasks (Wilson at the effective number
of tasks a bootstrap over tasks measures), turns, context, output, cached
and reasoning tokens and wall time (mean with a bootstrap 95% interval
over tasks, median, IQR), infrastructure failures and budget stops
counted apart, an interval over fewer than two tasks shown as "n < 2"; the
attribution of the cost gap layer by layer, paired by task
(representation B0/A, working habits B/B0, protocol D/B, loop C/D: geometric
means of per-task ratios, and the accuracy difference); every condition
against --baseline (default A); and a table per task linking each trial's
trajectory.

With two run directories the second is compared with the first, paired by
condition and task (two models, or a harness before and after a change);
the ladder shows both, the attribution and the comparisons with --baseline
are of the first run (their titles say so), and each run has its per-task
table linking its own trajectories (--notebooks writes the first run's).

Writes RUNDIR/report.md and RUNDIR/report.html, or the files --md and
--html name (two files, neither one of the run's). --json prints every
number as one JSON
object on stdout. --prices FILE is a JSON object from model name to
{"input", "cached_input", "output"} in USD per 1M tokens: money is shown
only then. input and output are required; cached_input left out is the
input price (cached tokens cost as much as the rest); another field is an
error; a model of the run that the file has no price for gets no money,
and a note. --notebooks writes every trial as a Jupyter notebook under
RUNDIR/notebooks/ (as ctxcode notebook does) and links each from the
report (the Markdown's per-task table, the HTML's transcripts): a
trajectory outside the run directory, unreadable or larger than 16 MB is
a warning, and no notebook.

Never over your files: every file report writes carries a mark with a
hash of its content (a comment atop the Markdown, a generator meta tag in
the HTML, a field of a notebook's metadata), and a later report replaces
a file only while it is its own and unchanged. A file it did not write,
or one changed since (a notebook saved in Jupyter), stops the report
before anything is written: move it away, or pass --force, which
overwrites the report's files and the notebooks whoever wrote them.

Exit codes: 0 written; 1 a file could not be written; 2 bad input (not a run
directory, a malformed log or prices file, an unknown --baseline, --md and
--html naming one file, a file to write that is not report's own or was
changed since, without --force).
`

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportUsage, stderr)
	md := fs.String("md", "", "the Markdown file to write (default RUNDIR/report.md)")
	html := fs.String("html", "", "the HTML file to write (default RUNDIR/report.html)")
	asJSON := fs.Bool("json", false, "print every number of the report as one JSON object")
	baseline := fs.String("baseline", "", "the condition every other is compared with (default A when the run has it)")
	pricesFile := fs.String("prices", "", "model prices, a JSON file: {\"MODEL\": {\"input\": USD, \"cached_input\": USD, \"output\": USD}} per 1M tokens (cached_input defaults to input)")
	force := fs.Bool("force", false, "overwrite the report's files and notebooks even when ctxcode did not write them or they were changed since")
	notebooks := fs.Bool("notebooks", false, "also write each trial as a Jupyter notebook under RUNDIR/notebooks/ and link it from the Markdown and the HTML")
	if err := fs.parse(args, 2, "one or two run directories"); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("report: give the run directory: ctxcode report RUNDIR (written by ctxcode bench --out RUNDIR)")
	}
	var opts reports.Options
	opts.Baseline, opts.Notebooks = *baseline, *notebooks
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
