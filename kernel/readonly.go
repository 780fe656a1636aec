package kernel

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// What is in a data folder has one definition, here: the entries a
// kernel sees as data/ and the only ones anything of ctxcode reads, writes
// about or copies (the local kernel's copy, the Docker volume, prefix init,
// condition A's skill document and read tool, the data's hash). They are
//   - the folder's real folders (not those reached by a symbolic link: no
//     cycles, and nothing outside the tree by way of a folder link);
//   - its regular files that ctxcode can read (one it cannot is left out,
//     as prefix init leaves it out);
//   - the regular files that symbolic links in it lead to, when the file is
//     inside the folder, or anywhere with FollowLinks (the user's
//     --follow-links); the entry holds the file, not the link.
//
// Everything else is left out, and said why ([DataSkip]): links that lead
// outside the folder (a data folder someone else made may hold a link to
// the user's credentials), links to folders, dangling links, and named
// pipes, sockets and devices, which are never opened (a pipe blocks its
// reader forever; /dev/zero never ends).

// DataEntry is one entry of a data folder as a kernel sees it: what
// [WalkReadOnly] gives for each file and folder.
type DataEntry struct {
	Rel     string      // the path below the root, slash-separated ("sub/x.csv")
	Path    string      // where to read it on this host (for a link, the file it leads to)
	Dir     bool        // a folder; else a regular file
	Mode    fs.FileMode // what a copy gets: 0555 for folders, 0444 for files
	Size    int64       // bytes, for files
	ModTime time.Time   // of the file or folder (of what a link leads to)
	// Link is, for an entry that is a symbolic link in the folder, the
	// file it leads to; "" otherwise.
	Link string
	// Outside says that Link leads outside the folder: taken only with
	// FollowLinks.
	Outside bool

	root string // the folder's real path, which OpenData opens inside
}

// DataSkip is an entry of a data folder that no kernel sees, and why.
type DataSkip struct {
	Rel string // the path below the root, slash-separated
	// Why says what it is, for people: "a link to /home/u/.secret, outside
	// the data folder", "a named pipe (FIFO): never opened".
	Why string
	// Outside says that it is a link to a file outside the folder, which
	// FollowLinks would take.
	Outside bool
}

// WalkOptions say how [WalkReadOnly] walks. The zero value takes no link
// out of the folder, has no limit and reports nothing it leaves out.
type WalkOptions struct {
	// FollowLinks takes the regular files that symbolic links lead to
	// outside the folder too.
	FollowLinks bool
	// Limit stops the walk with a [*DataTooLargeError] when the sizes of
	// the files add up to more, in bytes. Zero means no limit.
	Limit int64
	// Skipped, when set, is told of each entry the walk leaves out.
	Skipped func(DataSkip)
}

// DataTooLargeError stops a [WalkReadOnly] whose files pass its limit.
type DataTooLargeError struct {
	Limit int64 // bytes
}

func (e *DataTooLargeError) Error() string {
	return "the data is larger than " + formatBytes(e.Limit)
}

// WalkReadOnly calls fn for each entry of the data folder at root (see
// the top of this file), parents before their children and each folder's
// entries in name order, root itself excepted. Every copy of a data
// folder (the local kernel's, the Docker volume's) is made from this walk,
// so that they hold the same things. It opens no file.
//
// root itself may be a link. When o.Limit > 0 and the files' sizes add up
// to more, the walk stops with a [*DataTooLargeError]. A folder that cannot
// be read stops it with that error, as does an error from fn.
func WalkReadOnly(root string, o WalkOptions, fn func(DataEntry) error) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	var total int64
	var walk func(rel string) error
	walk = func(rel string) error {
		names, err := readNames(filepath.Join(real, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		for _, name := range names {
			e, skip, ok := judge(real, path.Join(rel, name), o.FollowLinks)
			switch {
			case !ok:
				continue // gone since the folder was read
			case skip != nil:
				if o.Skipped != nil {
					o.Skipped(*skip)
				}
				continue
			case !e.Dir:
				if total += e.Size; o.Limit > 0 && total > o.Limit {
					return &DataTooLargeError{Limit: o.Limit}
				}
			}
			if err := fn(e); err != nil {
				return err
			}
			if e.Dir {
				if err := walk(e.Rel); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("")
}

// SeenAs says under which name a kernel shown the data folder at root
// (walked as o says; o.Limit is ignored) sees the file at path: the Rel of
// the first entry that is the same file ([os.SameFile]: the file itself, a
// link to it, another hard link of it), or "" when no entry is.
func SeenAs(root string, o WalkOptions, path string) (string, error) {
	want, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	o.Limit = 0
	var seen string
	found := errors.New("found")
	err = WalkReadOnly(root, o, func(e DataEntry) error {
		if e.Dir {
			return nil
		}
		if st, err := os.Stat(e.Path); err == nil && os.SameFile(st, want) {
			seen = e.Rel
			return found
		}
		return nil
	})
	if err != nil && err != found {
		return "", err
	}
	return seen, nil
}

// LookupData finds the entry rel (slash-separated, below root) of the data
// folder at root as [WalkReadOnly] would give it: an entry, or why the walk
// leaves it out (a *DataSkip), or an error that is fs.ErrNotExist when
// there is no such path. rel "" or "." is root itself, a folder.
func LookupData(root, rel string, followLinks bool) (DataEntry, *DataSkip, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return DataEntry{}, nil, err
	}
	return lookup(real, rel, followLinks)
}

func lookup(real, rel string, followLinks bool) (DataEntry, *DataSkip, error) {
	rel = path.Clean(strings.TrimPrefix(filepath.ToSlash(rel), "/"))
	notExist := &fs.PathError{Op: "lookup", Path: rel, Err: fs.ErrNotExist}
	switch {
	case rel == ".":
		info, err := os.Stat(real)
		if err != nil {
			return DataEntry{}, nil, err
		}
		return DataEntry{Path: real, Dir: true, Mode: 0o555, ModTime: info.ModTime(), root: real}, nil, nil
	case rel == ".." || strings.HasPrefix(rel, "../"):
		return DataEntry{}, nil, notExist
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		at := strings.Join(parts[:i+1], "/")
		e, skip, ok := judge(real, at, followLinks)
		switch {
		case !ok:
			return DataEntry{}, nil, notExist
		case skip != nil && i == len(parts)-1:
			return DataEntry{}, skip, nil
		case skip != nil:
			return DataEntry{}, &DataSkip{Rel: rel, Why: "it is reached through " + at + ", " + skip.Why}, nil
		case i == len(parts)-1:
			return e, nil, nil
		case !e.Dir:
			return DataEntry{}, nil, notExist
		}
	}
	return DataEntry{}, nil, notExist // rel was not empty: the loop returned
}

// ListData is the folder rel (below root; "" for root) of the data folder
// at root as [WalkReadOnly] gives it: its entries in name order, and those
// the walk leaves out.
func ListData(root, rel string, followLinks bool) ([]DataEntry, []DataSkip, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, nil, err
	}
	dir, skip, err := lookup(real, rel, followLinks)
	switch {
	case err != nil:
		return nil, nil, err
	case skip != nil:
		return nil, nil, fmt.Errorf("%s is not in the data: %s", skip.Rel, skip.Why)
	case !dir.Dir:
		return nil, nil, &fs.PathError{Op: "list", Path: rel, Err: syscall.ENOTDIR}
	}
	names, err := readNames(dir.Path)
	if err != nil {
		return nil, nil, err
	}
	var entries []DataEntry
	var skips []DataSkip
	for _, name := range names {
		e, s, ok := judge(real, path.Join(dir.Rel, name), followLinks)
		switch {
		case !ok:
		case s != nil:
			skips = append(skips, *s)
		default:
			entries = append(entries, e)
		}
	}
	return entries, skips, nil
}

// OpenData opens the file of e for reading. It never blocks (a file
// replaced by a named pipe since the walk is not waited on), refuses
// anything that is not a regular file now, and opens an entry that is not
// Outside only inside the folder, whatever a link changed since says.
func OpenData(e DataEntry) (*os.File, error) {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK
	var f *os.File
	var err error
	if e.Outside || e.root == "" {
		f, err = os.OpenFile(e.Path, flags|syscall.O_NOFOLLOW, 0)
	} else {
		// What the walk found (for a link, the file it leads to), below
		// the root: os.Root follows no link out of it, even an absolute
		// one to the file itself.
		var r *os.Root
		rel, rerr := filepath.Rel(e.root, e.Path)
		if r, err = os.OpenRoot(e.root); err == nil {
			if err = rerr; err == nil {
				f, err = r.OpenFile(rel, flags, 0)
			}
			_ = r.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is %s now, not a regular file: not read", e.Rel, kindOf(st.Mode()))
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// ReadData reads the file of e, at most e.Size bytes (a file that grew
// since the walk is cut there), as [OpenData] opens it.
func ReadData(e DataEntry) ([]byte, error) {
	f, err := OpenData(e)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, e.Size))
}

// readNames are the names in the folder dir, sorted.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// judge says what the data folder whose real path is real makes of its
// entry rel: an entry, or why it is left out. ok is false when there is no
// such entry (any more). It opens nothing: only lstat, stat and the links'
// targets.
func judge(real, rel string, followLinks bool) (e DataEntry, skip *DataSkip, ok bool) {
	p := filepath.Join(real, filepath.FromSlash(rel))
	info, err := os.Lstat(p)
	if err != nil {
		return DataEntry{}, nil, false
	}
	e = DataEntry{Rel: rel, Path: p, ModTime: info.ModTime(), root: real}
	if info.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(p)
		target, err := filepath.EvalSymlinks(p)
		if err == nil {
			info, err = os.Stat(target)
		}
		if err != nil {
			return DataEntry{}, &DataSkip{Rel: rel, Why: "a link to " + to + ", which leads nowhere"}, true
		}
		outside := !within(real, target)
		switch {
		case info.IsDir():
			return DataEntry{}, &DataSkip{Rel: rel, Why: "a link to a folder (" + target + "): links to folders are not followed; link the files, or put the folder itself in"}, true
		case !info.Mode().IsRegular():
			return DataEntry{}, &DataSkip{Rel: rel, Why: "a link to " + target + ", " + kindOf(info.Mode()) + ": never opened"}, true
		case outside && !followLinks:
			return DataEntry{}, &DataSkip{Rel: rel, Why: "a link to " + target + ", outside the data folder", Outside: true}, true
		}
		e.Path, e.Link, e.Outside, e.ModTime = target, target, outside, info.ModTime()
	}
	switch {
	case info.IsDir():
		e.Dir, e.Mode = true, 0o555
	case info.Mode().IsRegular():
		// A file ctxcode cannot read is left out as prefix init leaves it
		// out, not a failed copy: access(2) asks without opening it.
		if err := syscall.Access(e.Path, 4 /* R_OK */); err != nil {
			return DataEntry{}, &DataSkip{Rel: rel, Why: "cannot be opened for reading (" + err.Error() + ")"}, true
		}
		e.Mode, e.Size = 0o444, info.Size()
	default:
		return DataEntry{}, &DataSkip{Rel: rel, Why: kindOf(info.Mode()) + ": never opened"}, true
	}
	return e, nil, true
}

// within says whether the real path p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// kindOf names a file that is not a regular file or a folder.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	}
	return "not a regular file"
}
