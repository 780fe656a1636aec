// Package outfile holds the rules for the files and folders a user names
// for ctxcode to write, the same in every command:
//
//   - an output is refused when it exists and force is off, when it is a
//     folder, or when its folder is missing or takes no new files
//     (CheckOutput, CheckWritableDir; CheckNewDir for a folder to make),
//     all before any work is done;
//   - a whole file is written atomically (WriteAtomic): through a
//     temporary file in the same folder, so no one sees half of it, and
//     without force it never replaces a file that appeared meanwhile;
//   - a stream, such as a trajectory, is created exclusively, or truncated
//     with force (Create);
//   - a data folder must be a folder (CheckDataDir).
//
// A refusal is an *InputError, bad input that the caller reports with the
// command or flag it came from (its text does not name them). Other errors
// are the machine's (a full disk). The package knows nothing of what is
// written; which files are ctxcode's own is bench's (bench.OriginOf).
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// InputError is a file or folder the user named that cannot be used as
// asked. Msg says what was wrong and what to do; it does not name the
// command or flag.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// CheckOutput is an *InputError unless path can be written: it does not
// exist (or force is on and it is not a folder), and its folder exists and
// takes new files.
func CheckOutput(path string, force bool) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return inputf("%s is a folder: name the file to write", path)
		}
		if !force {
			return existsError(path)
		}
	} else if Exists(path) && !force {
		return existsError(path)
	}
	return CheckWritableDir(filepath.Dir(path), path)
}

func existsError(path string) error {
	return inputf("%s exists; pass --force to overwrite it", path)
}

// CheckWritableDir is an *InputError unless dir is a folder that takes new
// files, which it tries with a temporary file it removes. target names
// what would be written there, for the message.
func CheckWritableDir(dir, target string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return inputf("cannot write %s: the folder %s does not exist; make it first (mkdir -p %s)", target, dir, dir)
	case err != nil:
		return inputf("cannot write %s: %v", target, err)
	case !st.IsDir():
		return inputf("cannot write %s: %s is not a folder", target, dir)
	}
	f, err := os.CreateTemp(dir, ".ctxcode-probe-*")
	if err != nil {
		return inputf("cannot write %s: the folder %s does not take new files (%v)", target, dir, UnwrapPath(err))
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}

// CheckNewDir is an *InputError unless the folder dir, which does not
// exist yet, can be made with its parents: the nearest of its parents
// that exists must be a folder that takes new files (CheckWritableDir).
func CheckNewDir(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	for !Exists(parent) && parent != filepath.Dir(parent) {
		parent = filepath.Dir(parent)
	}
	return CheckWritableDir(parent, dir)
}

// CheckDataDir is an *InputError unless dir is a folder. Its text begins
// with dir.
func CheckDataDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return inputf("%s: no such folder; give the folder that holds the data files", dir)
	case err != nil:
		return inputf("%s: %v", dir, UnwrapPath(err))
	case !st.IsDir():
		return inputf("%s: not a folder but a file; give the folder that holds the data files", dir)
	}
	return nil
}

// UnwrapPath is err without its *fs.PathError wrapper, whose path the
// caller names already (or is a probe's).
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Exists says whether there is anything at path, a dangling link included.
func Exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Create creates path for a stream of writes, after CheckOutput:
// exclusively, or truncating it with force.
func Create(path string, force bool) (*os.File, error) {
	if err := CheckOutput(path, force); err != nil {
		return nil, err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, existsError(path)
	}
	if err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	return f, nil
}

// WriteAtomic writes data to path through a temporary file in the same
// folder, so that no one sees half a file. With force it replaces path
// (rename); without, it never does: the temporary file is hard-linked to
// path, which fails if path has appeared meanwhile (an *InputError). On a
// filesystem without hard links it looks once more and renames.
func WriteAtomic(path string, data []byte, force bool) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		// After a rename there is nothing left to remove; after a link, or
		// a failure, the temporary name goes.
		if rmErr := os.Remove(tmp); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
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
		return fmt.Errorf("write %s: %w", path, err)
	}
	if force {
		return os.Rename(tmp, path)
	}
	err = os.Link(tmp, path)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrExist) || Exists(path) {
		return existsError(path)
	}
	return os.Rename(tmp, path)
}

// Abs is p made absolute, or p when that fails.
func Abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Resolved is p absolute, with its folder's links resolved.
func Resolved(p string) string {
	p = Abs(p)
	if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(d, filepath.Base(p))
	}
	return p
}

// SameFile says whether the paths a and b name one file: the same path
// once Resolved, or one file on disk.
func SameFile(a, b string) bool {
	if Resolved(a) == Resolved(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// Inside says whether path is dir or lies under it, once both are absolute
// and the links of dir and of path's folder are resolved.
func Inside(path, dir string) bool {
	p, d := Resolved(path), Abs(dir)
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}
