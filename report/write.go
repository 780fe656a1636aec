package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/internal/outfile"
)

// Paths are the two files a report writes.
type Paths struct {
	MD   string // the Markdown, by default RUNDIR/report.md
	HTML string // the HTML, by default RUNDIR/report.html
}

// DefaultPaths are the files of a report of the run in dir, in it.
func DefaultPaths(dir string) Paths {
	return Paths{MD: filepath.Join(dir, bench.ReportMarkdown), HTML: filepath.Join(dir, bench.ReportHTML)}
}

// CheckOutputs refuses, before anything is written, the files a report of
// runs would write that it may not, as an *InputError (whose text names
// the flags --md, --html and --force but not the command): the two paths
// naming one file or a file of a run; a folder, or a folder that takes no
// new files; and, unless force, any of them or of the notebooks (with
// notebooks, those of runs[0]) that ctxcode did not write or that was
// changed since (bench.OriginOf). It names every file refused at once.
func CheckOutputs(runs []*Run, p Paths, notebooks, force bool) error {
	if outfile.SameFile(p.MD, p.HTML) {
		return &InputError{fmt.Sprintf("the Markdown and the HTML would both be written to %s: give --md and --html a file each", p.MD)}
	}
	for _, out := range []struct{ flag, path string }{{"--md", p.MD}, {"--html", p.HTML}} {
		for _, r := range runs {
			if runFile(r.Dir, out.path) {
				return &InputError{fmt.Sprintf("%s %s is a file of the run in %s: name another file", out.flag, out.path, r.Dir)}
			}
		}
		// A folder, or one that takes no files; the report's own files it
		// replaces.
		var ie *outfile.InputError
		if err := outfile.CheckOutput(out.path, true); errors.As(err, &ie) {
			return &InputError{ie.Msg}
		} else if err != nil {
			return err
		}
	}
	paths := []string{p.MD, p.HTML}
	if notebooks {
		for _, t := range runs[0].Final {
			if t.Trajectory != "" {
				paths = append(paths, filepath.Join(runs[0].Dir, filepath.FromSlash(NotebookPath(t.Trajectory))))
			}
		}
	}
	return checkGenerated(paths, force)
}

// checkGenerated refuses to replace files that ctxcode marks as its own
// (bench.Stamp) unless each is ctxcode's and unchanged since, or force is
// on. It names every file refused at once, says whose it is, and what to
// do.
func checkGenerated(paths []string, force bool) error {
	var refused []string
	var one string
	for _, p := range paths {
		o, err := bench.OriginOf(p)
		switch {
		case err != nil:
			return &InputError{fmt.Sprintf("cannot read %s, to see whether ctxcode wrote it: %v", p, outfile.UnwrapPath(err))}
		case !force && (o == bench.Changed || o == bench.Foreign):
			refused = append(refused, fmt.Sprintf("%s (%s)", p, o))
			one = fmt.Sprintf("%s exists and was %s", p, o)
		}
	}
	switch {
	case len(refused) == 1:
		return &InputError{fmt.Sprintf("%s, so it is not replaced: move it away, or pass --force to overwrite it", one)}
	case len(refused) > 0:
		return &InputError{fmt.Sprintf("%d files exist that ctxcode did not write or that were changed since, so they are not replaced:\n  %s\nmove them away, or pass --force to overwrite them",
			len(refused), strings.Join(refused, "\n  "))}
	}
	return nil
}

// runFile says whether path is a file that ctxcode bench made in the run
// directory dir: its run.json, its trials.jsonl, or anything under its
// trajectories.
func runFile(dir, path string) bool {
	for _, name := range []string{bench.SpecFile, bench.TrialsFile} {
		if outfile.SameFile(path, filepath.Join(dir, name)) {
			return true
		}
	}
	return outfile.Inside(path, filepath.Join(dir, bench.TrajectoryDir))
}

// Write writes rep, the report of runs, as Markdown and HTML to p,
// atomically, replacing what is there (CheckOutputs decides, before, what
// may be replaced). Each page links the runs' files relative to its own
// folder.
func Write(runs []*Run, rep *Report, p Paths) error {
	var md bytes.Buffer
	var links []string // from the Markdown's folder to each run
	for _, r := range runs {
		links = append(links, relLink(p.MD, r.Dir))
	}
	if err := Markdown(&md, rep, links...); err != nil {
		return err
	}
	if err := outfile.WriteAtomic(p.MD, md.Bytes(), true); err != nil {
		return err
	}
	var html bytes.Buffer
	if err := HTMLAt(&html, rep, runs, relLink(p.HTML, runs[0].Dir)); err != nil {
		return err
	}
	return outfile.WriteAtomic(p.HTML, html.Bytes(), true)
}

// relLink is the slash-separated path from the folder of the file page to
// dir, or dir's absolute path when there is none.
func relLink(page, dir string) string {
	link, err := filepath.Rel(filepath.Dir(outfile.Abs(page)), outfile.Abs(dir))
	if err != nil {
		link = outfile.Abs(dir)
	}
	return filepath.ToSlash(link)
}

// WriteNotebooks writes the notebook of every trial of r under
// r.Dir/notebooks/ (NotebookPath), replacing what is there. A trajectory
// that cannot be read (Run.ReadTrajectory: none recorded, outside the run
// directory, unreadable), is larger than MaxTrajectoryBytes or is
// malformed gets no notebook (its link is dead) and a warning, a sentence
// that names the trial. The error is a notebook that could not be
// written.
func WriteNotebooks(r *Run) (warnings []string, err error) {
	if err := os.MkdirAll(filepath.Join(r.Dir, bench.NotebookDir), 0o755); err != nil {
		return nil, err
	}
	for _, t := range r.Final {
		b, cut, err := r.ReadTrajectory(t)
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("trial %s: %v; no notebook", t.Key, err))
			continue
		case cut:
			warnings = append(warnings, fmt.Sprintf("trial %s: the trajectory %s is larger than %d MB; no notebook (ctxcode notebook writes one)",
				t.Key, t.Trajectory, MaxTrajectoryBytes>>20))
			continue
		}
		nb, err := TrajectoryNotebook(bytes.NewReader(b))
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("trial %s: %s: %v; no notebook", t.Key, t.Trajectory, err))
			continue
		}
		if err := outfile.WriteAtomic(filepath.Join(r.Dir, NotebookPath(t.Trajectory)), nb, true); err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}
