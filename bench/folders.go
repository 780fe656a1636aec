package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
)

// A run's data folders. A run has its main data (Run.DataDir: --data, or
// the built-in data set) and, with a task file whose tasks bring their own
// data ("data" on a task line), one Folder per such folder: the kernels of
// a task's trials see its folder as data/, start from that folder's
// prefixes, and condition A's skill document describes it. A folder's
// prefix and control are written by prefix init (InitPrefix) once per
// distinct content (the folder's hash), kept in the run directory as
// prefixes/<hash12>.py and prefixes/<hash12>-nobind.py, and pinned in
// run.json (Spec.DataFolders) with the data's hash: a resume reads them
// back byte for byte, and refuses data or prefixes that changed.

// PrefixDir is the folder of a run directory that keeps the prefixes
// prefix init wrote for the tasks' own data folders.
const PrefixDir = "prefixes"

// Folder is a data folder of a run and what its trials start from.
type Folder struct {
	// Dir is the host folder the kernels of its tasks show as data/.
	Dir string
	// Transport starts those kernels, with Dir shown to them.
	Transport kernel.Transport
	// Prefixes are the prefixes Run.Conditions start from over Dir, in
	// their order (nil for A).
	Prefixes []*prefixes.Prefix

	skill skillCache // condition A's skill document of Dir
}

// FolderInfo is what run.json records of a task's own data folder.
type FolderInfo struct {
	// Name is the folder as the task file's folder sees it (relative to
	// it, or absolute); Dir where it was on the machine that ran the run.
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// SHA256 is the hash of every file's name and bytes, as the kernels
	// see them.
	SHA256 string `json:"sha256"`
	// Prefix and Control are the prefix files in the run directory
	// (PrefixDir/<hash12>.py and its -nobind control), with the SHA-256
	// of their bytes; Control is empty when no condition starts from it.
	Prefix        string `json:"prefix"`
	PrefixSHA256  string `json:"prefix_sha256"`
	Control       string `json:"control,omitempty"`
	ControlSHA256 string `json:"control_sha256,omitempty"`
	// Tasks are the ids of the run's tasks over the folder.
	Tasks []string `json:"tasks"`
}

// diffFolders names what differs of the tasks' own data folders, each by
// its name.
func diffFolders(was, now []FolderInfo) []string {
	names := func(fs []FolderInfo) map[string]FolderInfo {
		m := map[string]FolderInfo{}
		for _, f := range fs {
			m[f.Name] = f
		}
		return m
	}
	w, n := names(was), names(now)
	var diffs, gone, added []string
	for _, a := range was {
		b, ok := n[a.Name]
		switch {
		case !ok:
			gone = append(gone, a.Name)
		case a.SHA256 != b.SHA256:
			diffs = append(diffs, fmt.Sprintf("data folder %s: sha256 %s in the run, %s now (its files changed)", a.Name, head12(a.SHA256), head12(b.SHA256)))
		case a.PrefixSHA256 != b.PrefixSHA256:
			diffs = append(diffs, fmt.Sprintf("data folder %s: prefix %s (sha256 %s) in the run, sha256 %s now", a.Name, a.Prefix, head12(a.PrefixSHA256), head12(b.PrefixSHA256)))
		case a.ControlSHA256 != b.ControlSHA256:
			diffs = append(diffs, fmt.Sprintf("data folder %s: control %s (sha256 %s) in the run, %s (sha256 %s) now",
				a.Name, orNone(a.Control), orNone(head12(a.ControlSHA256)), orNone(b.Control), orNone(head12(b.ControlSHA256))))
		}
	}
	for _, b := range now {
		if _, ok := w[b.Name]; !ok {
			added = append(added, b.Name)
		}
	}
	if len(gone) > 0 {
		diffs = append(diffs, fmt.Sprintf("data folders: %s in the run, not now", clip(strings.Join(gone, ", "))))
	}
	if len(added) > 0 {
		diffs = append(diffs, fmt.Sprintf("data folders: %s now, not in the run", clip(strings.Join(added, ", "))))
	}
	return diffs
}

// ownFolder is a data folder the task file's tasks bring, as Setup finds
// it and gives it its prefixes.
type ownFolder struct {
	dir  string // clean and absolute
	name string // as FolderInfo.Name
	ids  []string
	line int // the first task's line over it
	hash string
	// The prefix and its control prefix init wrote (or the run directory
	// kept), as bytes and parsed.
	prefixSrc, controlSrc []byte
	prefix, control       *prefixes.Prefix
	folder                *Folder
}

// info is what run.json records of f; withControl says a condition starts
// from its control.
func (f *ownFolder) info(withControl bool) FolderInfo {
	fi := FolderInfo{Name: f.name, Dir: f.dir, SHA256: f.hash, Tasks: f.ids}
	fi.Prefix, fi.PrefixSHA256 = prefixFile(f.hash, false), sha256Hex(f.prefixSrc)
	if withControl {
		fi.Control, fi.ControlSHA256 = prefixFile(f.hash, true), sha256Hex(f.controlSrc)
	}
	return fi
}

// prefixFile is where the run directory keeps the prefix (or its control)
// of the data whose hash is hash, relative to it.
func prefixFile(hash string, control bool) string {
	name := head12(hash)
	if control {
		name += prefixes.NoBindSuffix
	}
	return filepath.Join(PrefixDir, name+".py")
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// storedPrefixes reads back, from the run in dir, the prefixes it kept
// for the data whose hashes it pinned, so that a resume starts its trials
// from the same prefixes byte for byte: by data hash, the prefix's and the
// control's bytes (nil control: none kept). Only a run with trials counts
// (one without can start again with prefixes written now), and only files
// whose bytes still have the hash run.json pinned.
func storedPrefixes(dir string) map[string][2][]byte {
	old, err := readSpec(dir)
	if err != nil || !hasTrials(dir) {
		return nil
	}
	kept := map[string][2][]byte{}
	for _, f := range old.DataFolders {
		if !filepath.IsLocal(f.Prefix) || f.Control != "" && !filepath.IsLocal(f.Control) {
			continue // not a file of the run directory's
		}
		p, err := os.ReadFile(filepath.Join(dir, f.Prefix))
		if err != nil || sha256Hex(p) != f.PrefixSHA256 {
			continue
		}
		var c []byte
		if f.Control != "" {
			if c, err = os.ReadFile(filepath.Join(dir, f.Control)); err != nil || sha256Hex(c) != f.ControlSHA256 {
				continue
			}
		}
		kept[f.SHA256] = [2][]byte{p, c}
	}
	return kept
}

// keepPrefixes writes the folders' prefixes into the run directory dir
// (PrefixDir), each file once, synced; a file that holds the bytes
// already is left as it is.
func keepPrefixes(dir string, folders []*ownFolder, withControl bool) error {
	if len(folders) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, PrefixDir), runDirPerm); err != nil {
		return err
	}
	write := func(rel string, b []byte) error {
		path := filepath.Join(dir, rel)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
			return nil
		}
		return writeFileSync(path, b)
	}
	for _, f := range folders {
		if err := write(prefixFile(f.hash, false), f.prefixSrc); err != nil {
			return err
		}
		if withControl {
			if err := write(prefixFile(f.hash, true), f.controlSrc); err != nil {
				return err
			}
		}
	}
	return syncDir(filepath.Join(dir, PrefixDir))
}

// removePrefixes removes the prefix files old's folders name from the run
// directory dir, and the folder when nothing else is left in it.
func removePrefixes(dir string, old *Spec) error {
	if old == nil {
		return nil
	}
	for _, f := range old.DataFolders {
		for _, rel := range []string{f.Prefix, f.Control} {
			if rel == "" || !filepath.IsLocal(rel) || filepath.Dir(rel) != PrefixDir {
				continue
			}
			if err := os.Remove(filepath.Join(dir, rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	_ = os.Remove(filepath.Join(dir, PrefixDir)) // only when nothing is left in it
	return nil
}

// transportSet opens the transport of each data folder once, when it is
// first needed, and closes them all at the end.
type transportSet struct {
	open func(ctx context.Context, dir string) (kernel.Transport, func(), error)

	mu       sync.Mutex
	byDir    map[string]kernel.Transport
	cleanups []func()
}

// get is the transport of dir, opened now if it is not yet.
func (ts *transportSet) get(ctx context.Context, dir string) (kernel.Transport, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if tr, ok := ts.byDir[dir]; ok {
		return tr, nil
	}
	tr, cleanup, err := ts.open(ctx, dir)
	if err != nil {
		cleanup()
		return nil, err
	}
	if ts.byDir == nil {
		ts.byDir = map[string]kernel.Transport{}
	}
	ts.byDir[dir] = tr
	ts.cleanups = append(ts.cleanups, cleanup)
	return tr, nil
}

// lazy is a transport of dir that opens it at its first kernel's start.
func (ts *transportSet) lazy(dir string) kernel.Transport {
	return lazyTransport{set: ts, dir: dir}
}

// close closes every transport opened.
func (ts *transportSet) close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, c := range ts.cleanups {
		c()
	}
	ts.cleanups, ts.byDir = nil, nil
}

type lazyTransport struct {
	set *transportSet
	dir string
}

var _ kernel.Transport = lazyTransport{}

func (l lazyTransport) Start(ctx context.Context) (kernel.Conn, error) {
	tr, err := l.set.get(ctx, l.dir)
	if err != nil {
		return nil, fmt.Errorf("open the sandbox of data folder %s: %w", l.dir, err)
	}
	return tr.Start(ctx)
}

// onceWriter passes each line to w once: the sandbox's warnings, which
// every data folder's transport would repeat.
type onceWriter struct {
	mu   sync.Mutex
	w    io.Writer
	seen map[string]bool
	part []byte
}

func (o *onceWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.part = append(o.part, p...)
	for {
		i := bytes.IndexByte(o.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(o.part[:i+1])
		o.part = o.part[i+1:]
		if o.seen == nil {
			o.seen = map[string]bool{}
		}
		if !o.seen[line] {
			o.seen[line] = true
			if _, err := io.WriteString(o.w, line); err != nil {
				return len(p), err
			}
		}
	}
}
