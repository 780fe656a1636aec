package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
)

// This file is the one home of the rules for files and folders the user
// names: an output is refused when it exists and --force is off, when its
// folder is missing or cannot be written, or when it is a folder; all before
// any work is done. Whole files are written atomically (writeAtomic);
// streams such as a trajectory are created exclusively (createOutput).

// checkOutput is a usage error unless path can be written by cmd: it does
// not exist (or force is on and it is not a folder), and its folder exists
// and takes new files.
func checkOutput(cmd, path string, force bool) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return usagef("%s: %s is a folder: name the file to write", cmd, path)
		}
		if !force {
			return usagef("%s: %s exists; pass --force to overwrite it", cmd, path)
		}
	} else if exists(path) && !force {
		return usagef("%s: %s exists; pass --force to overwrite it", cmd, path)
	}
	return checkWritableDir(cmd, filepath.Dir(path), path)
}

// checkGenerated refuses to replace files that ctxcode marks as its own
// (bench.Stamp) unless each is ctxcode's and unchanged since, or force is
// on. It names every file refused at once, says whose it is, and what to
// do.
func checkGenerated(cmd string, paths []string, force bool) error {
	var refused []string
	var one string
	for _, p := range paths {
		o, err := bench.OriginOf(p)
		switch {
		case err != nil:
			return usagef("%s: cannot read %s, to see whether ctxcode wrote it: %v", cmd, p, unwrapPath(err))
		case !force && (o == bench.Changed || o == bench.Foreign):
			refused = append(refused, fmt.Sprintf("%s (%s)", p, o))
			one = fmt.Sprintf("%s exists and was %s", p, o)
		}
	}
	switch {
	case len(refused) == 1:
		return usagef("%s: %s, so it is not replaced: move it away, or pass --force to overwrite it", cmd, one)
	case len(refused) > 0:
		return usagef("%s: %d files exist that ctxcode did not write or that were changed since, so they are not replaced:\n  %s\nmove them away, or pass --force to overwrite them",
			cmd, len(refused), strings.Join(refused, "\n  "))
	}
	return nil
}

// checkWritableDir is a usage error unless dir is a folder that takes new
// files: it tries, with a temporary file it removes.
func checkWritableDir(cmd, dir, target string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return usagef("%s: cannot write %s: the folder %s does not exist; make it first (mkdir -p %s)", cmd, target, dir, dir)
	case err != nil:
		return usagef("%s: cannot write %s: %v", cmd, target, err)
	case !st.IsDir():
		return usagef("%s: cannot write %s: %s is not a folder", cmd, target, dir)
	}
	f, err := os.CreateTemp(dir, ".ctxcode-probe-*")
	if err != nil {
		return usagef("%s: cannot write %s: the folder %s does not take new files (%v)", cmd, target, dir, unwrapPath(err))
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}

// unwrapPath drops the *PathError wrapper (its path is the probe's).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkDataDir is a usage error unless dir is a folder.
func checkDataDir(flag, dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return usagef("%s %s: no such folder; give the folder that holds the data files", flag, dir)
	case err != nil:
		return usagef("%s %s: %v", flag, dir, unwrapPath(err))
	case !st.IsDir():
		return usagef("%s %s: not a folder but a file; give the folder that holds the data files", flag, dir)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// createOutput creates path for a stream of writes: exclusively, or
// truncating it with force.
func createOutput(cmd, path string, force bool) (*os.File, error) {
	if err := checkOutput(cmd, path, force); err != nil {
		return nil, err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, usagef("%s: %s exists; pass --force to overwrite it", cmd, path)
	}
	if err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	return f, nil
}

// writeAtomic writes data to path through a temporary file in the same
// folder, so that no one sees half a file. With force it replaces path
// (rename); without, it never does: the temporary file is hard-linked to
// path, which fails if path has appeared meanwhile. On a filesystem without
// hard links it looks once more and renames.
func writeAtomic(cmd, path string, data []byte, force bool) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	tmp := f.Name()
	defer func() {
		// After a rename there is nothing left to remove; after a link, or
		// a failure, the temporary name goes.
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err != nil {
		return fmt.Errorf("%s: write %s: %w", cmd, path, err)
	}
	if force {
		return os.Rename(tmp, path)
	}
	err = os.Link(tmp, path)
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrExist) || exists(path) {
		return usagef("%s: %s exists; pass --force to overwrite it", cmd, path)
	}
	return os.Rename(tmp, path)
}
