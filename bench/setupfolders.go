package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/internal/outfile"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
)

// This file is the Setup's side of the tasks' own data folders (see
// folders.go): which tasks are over which folder, the prefixes written
// for each, and the reference model's tasks without a solution.

// findFolders sorts the task file's tasks into those over the main data
// (--data; a task whose "data" is that folder is one of them) and those
// over a folder of their own, and refuses what cannot be: a task over no
// data, a --data no task is over, a run folder or a task file a folder's
// kernels would see.
func (s *Setup) findFolders() error {
	cfg := s.cfg
	main := ""
	if s.DataDir != "" {
		abs, err := filepath.Abs(s.DataDir)
		if err != nil {
			return inputErrorf("--data %s: %v", s.DataDir, err)
		}
		main = filepath.Clean(abs)
	}
	base, err := filepath.Abs(filepath.Dir(cfg.TaskFile))
	if err != nil {
		return inputErrorf("--tasks %s: %v", cfg.TaskFile, err)
	}
	byDir := map[string]*ownFolder{}
	s.ownFolder = map[string]*ownFolder{}
	onMain := 0
	for i := range s.UserTasks {
		ut := &s.UserTasks[i]
		if ut.Data != "" && ut.Data == main {
			ut.Data = ""
		}
		if ut.Data == "" {
			if main == "" {
				s.problems = append(s.problems, TaskProblem{Line: ut.Line, Msg: fmt.Sprintf(
					`task %s has no "data", and there is no --data: give it its data folder ("data": "tables/t1", relative to the task file), or run with --data DIR and --prefix P for the tasks without one`, ut.ID)})
			}
			onMain++
			continue
		}
		f := byDir[ut.Data]
		if f == nil {
			name, err := filepath.Rel(base, ut.Data)
			if err != nil {
				name = ut.Data
			}
			f = &ownFolder{dir: ut.Data, name: filepath.ToSlash(name), line: ut.Line}
			byDir[ut.Data] = f
			s.folders = append(s.folders, f)
		}
		f.ids = append(f.ids, ut.ID)
		s.ownFolder[ut.ID] = f
	}
	if main != "" && onMain == 0 && len(s.UserTasks) > 0 {
		return inputErrorf("--data %s: every task of %s brings its own data folder (\"data\"), so none is over --data: drop --data and --prefix", s.DataDir, cfg.TaskFile)
	}
	for _, f := range s.folders {
		if cfg.SeeData != nil {
			cfg.SeeData(f.dir)
		}
		if outfile.Inside(cfg.Out, f.dir) {
			return inputErrorf("--out %s is inside the data folder %s (%s:%d), which the kernels of its tasks read: put the run outside it", cfg.Out, f.name, cfg.TaskFile, f.line)
		}
		rel, err := kernel.SeenAs(f.dir, kernel.WalkOptions{FollowLinks: cfg.FollowLinks}, cfg.TaskFile)
		switch {
		case err != nil:
			s.problems = append(s.problems, TaskProblem{Line: f.line, Msg: fmt.Sprintf("data %s: %v", f.name, outfile.UnwrapPath(err))})
		case rel != "":
			s.problems = append(s.problems, TaskProblem{Line: f.line, Msg: fmt.Sprintf(
				"data %s holds the task file itself (as data/%s), which its kernels can read: the golds would be in reach of the model; put the task file outside the data folder", f.name, rel)})
		}
	}
	return nil
}

// skipReference leaves the reference model's trials out of the tasks that
// have no solution to play, and says how many (to warn), when some task
// has one; when none has, each is a problem of the task file.
func (s *Setup) skipReference(warn io.Writer) {
	var without []UserTask
	for _, ut := range s.UserTasks {
		if ut.Solution == "" {
			without = append(without, ut)
		}
	}
	switch {
	case len(without) == 0:
		return
	case len(without) == len(s.UserTasks):
		for _, ut := range without {
			s.problems = append(s.problems, TaskProblem{Line: ut.Line, Msg: fmt.Sprintf(
				"task %s has no solution, which --model reference plays: add \"solution\" to it, or use a real model", ut.ID)})
		}
		return
	}
	s.referenceSkips = map[string]bool{}
	for _, ut := range without {
		s.referenceSkips[ut.ID] = true
	}
	fmt.Fprintf(warn, "ctxcode: reference: %d of %d tasks have no solution: skipped\n", len(without), len(s.UserTasks))
}

// needsControl says whether a condition starts from a prefix's control.
func (s *Setup) needsControl() bool {
	for _, c := range s.Run.Conditions {
		if c.role == agent.PrefixControl {
			return true
		}
	}
	return false
}

// folderPrefixes gives every task's own data folder its prefix and
// control: those the run in Config.Out kept for the same data (a resume),
// else those prefix init writes now, once per distinct content. It makes
// the Run's Folders, their transports opened when a kernel first needs
// one; in a run whose every task brings its own data, the conditions'
// prefixes are those of the first folder (what run.json names).
func (s *Setup) folderPrefixes(ctx context.Context, warn io.Writer) error {
	if len(s.folders) == 0 {
		return nil
	}
	cfg, run := s.cfg, s.Run
	var stored map[string][2][]byte
	if cfg.Mode != Restart {
		stored = storedPrefixes(cfg.Out)
	}
	control := s.needsControl()
	written := map[string][2][]byte{}
	var style prefixes.Style
	for _, f := range s.folders {
		f.hash = folderHash(f.dir, cfg.FollowLinks)
		src, ok := written[f.hash]
		if kept, found := stored[f.hash]; !ok && found && (kept[1] != nil || !control) {
			src, ok = kept, true
		}
		if !ok {
			opts := cfg.sandboxFor(kernel.Python, f.dir)
			if style == "" {
				var err error
				if style, err = prefixStyle(ctx, opts); err != nil {
					return err
				}
			}
			var notes bytes.Buffer
			res, err := initPrefixStyle(f.dir, opts, style, &notes)
			for _, l := range strings.Split(strings.TrimSuffix(notes.String(), "\n"), "\n") {
				if l != "" {
					fmt.Fprintf(warn, "ctxcode: data folder %s: %s\n", f.name, strings.TrimPrefix(l, "ctxcode: "))
				}
			}
			var ie *InitError
			if errors.As(err, &ie) {
				return inputErrorf("%s:%d: data %s: prefix init could not write a prefix for it: %v", cfg.TaskFile, f.line, f.name, ie.Err)
			}
			if err != nil {
				return err
			}
			src = [2][]byte{res.Source, res.Control}
		}
		written[f.hash] = src
		f.prefixSrc, f.controlSrc = src[0], src[1]
		var err error
		if f.prefix, err = prefixes.Parse(filepath.Join(cfg.Out, prefixFile(f.hash, false)), f.prefixSrc); err != nil {
			return fmt.Errorf("the prefix of data folder %s: %w", f.name, err)
		}
		if control {
			if f.controlSrc == nil {
				return fmt.Errorf("data folder %s: prefix init wrote no control", f.name)
			}
			if f.control, err = prefixes.Parse(filepath.Join(cfg.Out, prefixFile(f.hash, true)), f.controlSrc); err != nil {
				return fmt.Errorf("the control of data folder %s: %w", f.name, err)
			}
		}
		f.folder = &Folder{Dir: f.dir, Transport: s.transports.lazy(f.dir)}
		for _, c := range run.Conditions {
			var p *prefixes.Prefix
			switch c.role {
			case agent.PrefixNone:
			case agent.PrefixControl:
				p = f.control
			default:
				p = f.prefix
			}
			f.folder.Prefixes = append(f.folder.Prefixes, p)
		}
	}
	run.Folders, run.TaskData = nil, map[string]*Folder{}
	for _, f := range s.folders {
		run.Folders = append(run.Folders, f.folder)
		for _, id := range f.ids {
			run.TaskData[id] = f.folder
		}
	}
	if s.DataDir == "" {
		for i := range run.Conditions {
			run.Conditions[i].Prefix = s.folders[0].folder.Prefixes[i]
		}
	}
	return nil
}

// folderInfos is what run.json records of the tasks' own folders, once
// their prefixes are known.
func (s *Setup) folderInfos() []FolderInfo {
	var fis []FolderInfo
	control := s.needsControl()
	for _, f := range s.folders {
		if f.prefix != nil {
			fis = append(fis, f.info(control))
		}
	}
	return fis
}

// userReference is the reference model for condition c (the ci-th) over
// a task file's tasks: each task's solution, in the prefix c starts from
// over the task's data folder, as UserTask.Reference writes it.
func (s *Setup) userReference(ci int, c Condition) (map[string]string, error) {
	solutions := map[string]string{}
	for _, ut := range s.UserTasks {
		if ut.Solution == "" {
			continue
		}
		p, written := c.Prefix, s.Prefix
		if f := s.ownFolder[ut.ID]; f != nil {
			if f.folder == nil {
				return nil, fmt.Errorf("task %s: the prefix of its data folder %s is not written yet", ut.ID, f.name)
			}
			p, written = f.folder.Prefixes[ci], f.prefix
		}
		solutions[ut.Question] = ut.Reference(p, written)
	}
	return solutions, nil
}
