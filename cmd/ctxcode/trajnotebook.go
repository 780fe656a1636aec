package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	reports "github.com/ctxcode/ctxcode/report"
	"github.com/ctxcode/ctxcode/session"
)

var notebookUsage = helpText("notebook")

// notebookOptions are the flags of `ctxcode notebook`.
type notebookOptions struct {
	trajectory string
	out        string
	force      bool
}

func parseNotebook(args []string, stderr io.Writer) (*notebookOptions, error) {
	o := &notebookOptions{}
	fs := newFlagSet("notebook", notebookUsage, stderr)
	fs.StringVar(&o.out, "out", "", "the notebook to write, F.ipynb (required)")
	fs.BoolVar(&o.force, "force", false, "overwrite --out if it exists")
	if err := fs.parse(args, 1, "one trajectory"); err != nil {
		return nil, err
	}
	o.trajectory = fs.Arg(0)
	if o.trajectory == "" {
		return nil, usagef("notebook: name the trajectory to read (a JSON-lines file of `ctxcode ask --trajectory F`, or RUNDIR/trajectories/*.jsonl of a bench run)")
	}
	st, err := os.Stat(o.trajectory)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, usagef("notebook: the trajectory %s does not exist", o.trajectory)
	case err != nil:
		return nil, usagef("notebook: cannot read the trajectory %s: %v", o.trajectory, unwrapPath(err))
	case st.IsDir():
		return nil, usagef("notebook: %s is a folder: name one trajectory file in it (a bench run's are in RUNDIR/trajectories/)", o.trajectory)
	}
	if o.out == "" {
		return nil, usagef("notebook: --out is required: the notebook to write (F.ipynb)")
	}
	if !strings.EqualFold(filepath.Ext(o.out), ".ipynb") {
		return nil, usagef("notebook: --out %s does not end in .ipynb, the extension Jupyter opens notebooks by", o.out)
	}
	if err := checkOutput("notebook", o.out, o.force); err != nil {
		return nil, err
	}
	return o, nil
}

func runNotebook(_ context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseNotebook(args, stderr)
	if err != nil {
		return err
	}
	src, err := os.ReadFile(o.trajectory)
	if err != nil {
		return usagef("notebook: cannot read the trajectory %s: %v", o.trajectory, unwrapPath(err))
	}
	nb, err := reports.TrajectoryNotebook(bytes.NewReader(src))
	var te *session.TrajectoryError
	if errors.As(err, &te) {
		return usagef("notebook: %s: %v", o.trajectory, err)
	}
	if err != nil {
		return err
	}
	if err := writeAtomic("notebook", o.out, nb, o.force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s; open it in Jupyter (jupyter lab %s)\n", o.out, o.out)
	return nil
}
