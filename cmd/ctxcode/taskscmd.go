package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
	fs := newFlagSet("tasks", tasksUsage, stderr)
	dir := fs.String("data", "", "dataset folder (required)")
	asJSON := fs.Bool("json", false, "print one JSON object per task")
	ref := fs.String("reference", "", "also print each task's reference solution of this kind")
	if err := fs.parse(args, 0, ""); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("tasks: --data is required: the folder made by `ctxcode data gen`")
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
