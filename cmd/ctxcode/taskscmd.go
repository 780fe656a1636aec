package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
)

var tasksUsage = helpText("tasks")

// dataError makes a dataset that is not one, changed, or malformed a usage
// error; other failures (reading the disk) stay what they are.
func dataError(err error) error {
	for _, bad := range []error{datasets.ErrNotDataset, datasets.ErrDatasetChanged, datasets.ErrMalformed} {
		if errors.Is(err, bad) {
			return usagef("%v", err)
		}
	}
	return err
}

func runTasks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "import" {
		return runTasksImport(args[1:], stdout, stderr)
	}
	fs := newFlagSet("tasks", tasksUsage, stderr)
	dir := fs.String("data", "", "dataset folder (required)")
	asJSON := fs.Bool("json", false, "print one JSON object per task")
	ref := fs.String("reference", "", "also print each task's reference solution of this kind")
	if err := fs.parse(args, 0, ""); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("tasks: --data is required: the folder made by `ctxcode data gen` (`ctxcode tasks import` turns a benchmark into a task file)")
	}
	if err := checkDataDir("--data", *dir); err != nil {
		return err
	}
	kind := datasets.SolutionKind("")
	if *ref != "" {
		k, err := datasets.ParseSolutionKind(*ref)
		if err != nil {
			return usagef("tasks: --reference: %v", err)
		}
		kind = k
	}
	d, _, err := datasets.Load(*dir)
	if err != nil {
		return dataError(err)
	}
	tasks, err := datasets.Tasks(d)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	for _, t := range tasks {
		if *asJSON {
			if err := enc.Encode(t); err != nil {
				return err
			}
		} else {
			gold, _ := json.Marshal(t.Gold)
			fmt.Fprintf(stdout, "%-9s %-8s %s\n          gold: %s\n", t.ID, t.AnswerType, t.Question, gold)
		}
		if kind != "" {
			code, err := datasets.Reference(t, kind)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n\n", code)
		}
	}
	return nil
}

// importFormats are the formats tasks import reads.
var importFormats = []string{"dabench"}

type tasksImportOptions struct {
	format, dir, out, solutions string
	force                       bool
}

func parseTasksImport(args []string, stderr io.Writer) (*tasksImportOptions, error) {
	o := &tasksImportOptions{}
	fs := newFlagSet("tasks import", tasksUsage, stderr)
	fs.StringVar(&o.format, "format", "", "the benchmark's layout: dabench (required)")
	fs.StringVar(&o.out, "out", "", "task file to write (JSON lines); its tables go in the folder OUT-STEM-tables beside it (required)")
	fs.StringVar(&o.solutions, "solutions", "", "JSON lines {\"id\", \"solution\"}: reference solutions to attach to the tasks")
	fs.BoolVar(&o.force, "force", false, "overwrite --out and write into its tables folder when they exist")
	if err := fs.parse(args, 1, "one folder, the benchmark's"); err != nil {
		return nil, err
	}
	switch {
	case o.format == "":
		return nil, usagef("tasks import: --format is required: dabench (InfiAgent-DABench's questions, labels and tables)")
	case o.format != importFormats[0]:
		return nil, usagef("tasks import: unknown --format %q: expected dabench", o.format)
	case fs.NArg() == 0:
		return nil, usagef("tasks import: name the folder to import, which holds da-dev-questions.jsonl, da-dev-labels.jsonl and da-dev-tables/")
	case o.out == "":
		return nil, usagef("tasks import: --out is required: the task file to write, such as dabench.jsonl")
	}
	o.dir = fs.Arg(0)
	return o, nil
}

// runTasksImport writes a task file, and its tables beside it, from a
// benchmark's folder; the lines it leaves out are listed on stderr.
func runTasksImport(args []string, stdout, stderr io.Writer) error {
	o, err := parseTasksImport(args, stderr)
	if err != nil {
		return err
	}
	if err := checkOutput("tasks import", o.out, o.force); err != nil {
		return err
	}
	im, err := bench.ImportDABench(o.dir)
	if err != nil {
		return err
	}
	problems := im.Problems
	if o.solutions != "" {
		more, err := im.AttachSolutions(o.solutions)
		if err != nil {
			return err
		}
		problems = append(problems, more...)
	}
	if len(im.Tasks) == 0 {
		printImportProblems(stderr, problems)
		return usagef("tasks import: nothing to import from %s: no question has labels and a table (%s above)", o.dir, countOf(len(problems), "problem"))
	}
	if err := im.CheckOutputs(o.out, o.force); err != nil {
		return err
	}
	printImportProblems(stderr, problems)
	for _, n := range im.Notes {
		fmt.Fprintf(stderr, "%s (note)\n", n)
	}
	tables := bench.TablesDirFor(o.out)
	if err := im.WriteTables(tables); err != nil {
		return err
	}
	b, err := im.TaskFile(filepath.Base(tables))
	if err != nil {
		return err
	}
	if err := writeAtomic("tasks import", o.out, b, o.force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s on %s to %s (tables in %s)\n", countOf(len(im.Tasks), "task"), countOf(im.TableCount(), "table"), o.out, tables)
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "ctxcode: tasks import: %s; those lines are left out\n", countOf(len(problems), "problem"))
	}
	if len(im.Notes) > 0 {
		fmt.Fprintf(stderr, "ctxcode: tasks import: %s on tasks imported all the same\n", countOf(len(im.Notes), "note"))
	}
	return nil
}

// printImportProblems lists problems, one a line, at most 20.
func printImportProblems(w io.Writer, problems []bench.ImportProblem) {
	const most = 20
	for i, p := range problems {
		if i == most {
			fmt.Fprintf(w, "and %d more\n", len(problems)-most)
			break
		}
		fmt.Fprintln(w, p)
	}
}

// countOf is "1 task", "3 tasks".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
