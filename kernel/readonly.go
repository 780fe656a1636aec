package kernel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DataEntry is one entry of the read-only copy of a data tree that a kernel
// sees as data/: what [WalkReadOnly] gives for each file and folder.
type DataEntry struct {
	Rel     string      // the path below the root, slash-separated ("sub/x.csv")
	Path    string      // where to read it on this host
	Dir     bool        // a folder; else a regular file
	Mode    fs.FileMode // what the copy gets: 0555 for folders, 0444 for files
	Size    int64       // bytes, for files
	ModTime time.Time   // of the file or folder (of what a link leads to)
}

// DataTooLargeError stops a [WalkReadOnly] whose files pass its limit.
type DataTooLargeError struct {
	Limit int64 // bytes
}

func (e *DataTooLargeError) Error() string {
	return "the data is larger than " + formatBytes(e.Limit)
}

// WalkReadOnly calls fn for each entry of the tree at root that a read-only
// copy of it holds, parents before their children, root itself excepted.
// Every copy of a data folder (the local kernel's, the Docker volume's) is
// made from this walk, so that they hold the same things:
//   - folders, except those reached by a symbolic link (no cycles, nothing
//     outside the tree by way of a folder link);
//   - regular files, and the files that symbolic links lead to (the copy
//     holds the file, not the link);
//   - not dangling links, devices, sockets or pipes;
//   - not a file that cannot be opened for reading ([SkippedData] names
//     them).
//
// root itself may be a link. When limit > 0 and the files' sizes add up to
// more, the walk stops with a [*DataTooLargeError]. A folder that cannot be
// read stops it with that error, as does an error from fn.
func WalkReadOnly(root string, limit int64, fn func(DataEntry) error) error {
	return walkReadOnly(root, limit, fn, func(DataSkip) {})
}

// DataSkip is a file of a data tree that [WalkReadOnly] leaves out though
// it is a regular file, and why.
type DataSkip struct {
	Rel    string // the path below the root, slash-separated
	Reason string // "cannot be opened for reading (permission denied)"
}

// SkippedData lists the files of the tree at root that [WalkReadOnly]
// leaves out because they cannot be read, in walk order, for a warning
// that names them. Its error is the walk's.
func SkippedData(root string) ([]DataSkip, error) {
	var skipped []DataSkip
	err := walkReadOnly(root, 0, func(DataEntry) error { return nil }, func(s DataSkip) { skipped = append(skipped, s) })
	return skipped, err
}

func walkReadOnly(root string, limit int64, fn func(DataEntry) error, skip func(DataSkip)) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	var total int64
	return filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(real, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := os.Stat(path) // follows links
		if err != nil {
			return nil // a dangling link: nothing to show
		}
		e := DataEntry{Rel: filepath.ToSlash(rel), Path: path, ModTime: info.ModTime()}
		switch {
		case info.IsDir():
			if d.Type()&fs.ModeSymlink != 0 {
				return nil // linked folders are not followed
			}
			e.Dir, e.Mode = true, 0o555
		case info.Mode().IsRegular():
			f, err := os.Open(path)
			if err != nil { // a file that cannot be opened for reading is skipped
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				skip(DataSkip{Rel: e.Rel, Reason: "cannot be opened for reading (" + err.Error() + ")"})
				return nil
			}
			_ = f.Close()
			e.Mode, e.Size = 0o444, info.Size()
			if total += e.Size; limit > 0 && total > limit {
				return &DataTooLargeError{Limit: limit}
			}
		default:
			return nil // devices, sockets, pipes
		}
		return fn(e)
	})
}
