package prefixes

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

// The transcript cache (DESIGN.md, "Starting fast without pretending").
//
// A prefix's built cells depend only on the prefix, the data, where the
// kernel runs (the image, or the interpreter) and the driver. A Cache keeps
// them in a folder, one JSON file per CacheKey, so that a later run can send
// its first model request with them while its own kernel starts and builds
// the prefix. The entry is a hint, never the truth: the run compares the
// live cells with it before the model's first cell runs (see agent.Session),
// so a key that misses a change (a file rewritten with its size and time
// kept, an interpreter changed behind the same path) costs one discarded
// model call, never an output the model reads that did not happen.
//
// An entry file:
//
//	{"format": 1, "key": {...}, "prefix": "pm", "kernel": "python 3.11.7 ipython 8.12.3",
//	 "written": "2025-...", "cells": [{"code": "...", "result": {<kernel.Result>}}, ...]}
//
// Entries are written to a temporary file in the folder and renamed over
// the old one, so a reader sees a whole entry or none. Nothing removes old
// entries; each is a few kilobytes.

// CacheFormat is the version of the entry files; an entry of another is
// read as corrupt.
const CacheFormat = 1

// CacheKey names a built transcript by what it depends on. Two runs with the
// same key build the same cells, unless the prefix itself is not
// deterministic (random values, the time, a temporary path), which the
// run's check finds.
type CacheKey struct {
	// Prefix is the prefix's Hash (its cells' code) and its language.
	Prefix string `json:"prefix"`
	// Data is DataHash of the data folder; "" for none.
	Data string `json:"data"`
	// Runtime is where the kernel runs: the Docker image's id, or the
	// local interpreter (see the caller); "" means unknown, and no entry is
	// looked up or kept.
	Runtime string `json:"runtime"`
	// Driver is DriverVersion of the kernel's language.
	Driver string `json:"driver"`
}

// KeyFor is the key of p over data hash data, in runtime.
func KeyFor(p *Prefix, data, runtime string) (CacheKey, error) {
	driver, err := DriverVersion(p.Language)
	if err != nil {
		return CacheKey{}, err
	}
	return CacheKey{Prefix: string(p.Language) + ":" + p.Hash(), Data: data, Runtime: runtime, Driver: driver}, nil
}

// file is the entry's name in the folder: the hex SHA-256 of the key.
func (k CacheKey) file() string {
	b, _ := json.Marshal(k) // strings only
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]) + ".json"
}

// Cache is a folder of built transcripts. The zero value is no cache:
// Load misses and Store does nothing.
type Cache struct {
	Dir string
}

// CacheDir is the transcripts folder under the user's cache folder:
// os.UserCacheDir()/ctxcode/transcripts, beside the built-in data.
func CacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache folder (set XDG_CACHE_HOME): %w", err)
	}
	return filepath.Join(dir, "ctxcode", "transcripts"), nil
}

// cacheEntry is an entry file.
type cacheEntry struct {
	Format  int         `json:"format"`
	Key     CacheKey    `json:"key"`
	Prefix  string      `json:"prefix"`
	Kernel  string      `json:"kernel,omitempty"`
	Written time.Time   `json:"written"`
	Cells   []cacheCell `json:"cells"`
}

type cacheCell struct {
	Code   string        `json:"code"`
	Result kernel.Result `json:"result"`
}

// CacheError is an entry that is there but cannot be used: unreadable,
// not JSON, of another format or key, or not the cells of the prefix. A
// caller reads it as a miss, with a warning.
type CacheError struct {
	File string
	Err  error
}

func (e *CacheError) Error() string {
	return fmt.Sprintf("prefix cache entry %s: %v", e.File, e.Err)
}

func (e *CacheError) Unwrap() error { return e.Err }

// Path is the file of k's entry; "" for the zero Cache.
func (c Cache) Path(k CacheKey) string {
	if c.Dir == "" {
		return ""
	}
	return filepath.Join(c.Dir, k.file())
}

// Load returns the cells of p kept under k: nil, nil when there is no
// entry (or no cache, or no runtime in k); a *CacheError when there is one
// that cannot be used.
func (c Cache) Load(k CacheKey, p *Prefix) ([]session.Cell, error) {
	if c.Dir == "" || k.Runtime == "" {
		return nil, nil
	}
	path := c.Path(k)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &CacheError{path, err}
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, &CacheError{path, fmt.Errorf("not an entry: %w", err)}
	}
	switch {
	case e.Format != CacheFormat:
		return nil, &CacheError{path, fmt.Errorf("format %d, expected %d", e.Format, CacheFormat)}
	case e.Key != k:
		return nil, &CacheError{path, errors.New("the entry is of another key")}
	case len(e.Cells) != len(p.Cells):
		return nil, &CacheError{path, fmt.Errorf("%d cells, but prefix %s has %d", len(e.Cells), p.Name, len(p.Cells))}
	}
	cells := make([]session.Cell, len(e.Cells))
	for i, ec := range e.Cells {
		if ec.Code != p.Cells[i].Code {
			return nil, &CacheError{path, fmt.Errorf("cell %d is not the code of prefix %s", i+1, p.Name)}
		}
		if ec.Result.Status != kernel.StatusOK {
			return nil, &CacheError{path, fmt.Errorf("cell %d has status %q; a built prefix has only ok cells", i+1, ec.Result.Status)}
		}
		cells[i] = session.Cell{Code: ec.Code, Result: ec.Result, From: session.FromPrefix}
	}
	return cells, nil
}

// Store keeps cells, the built prefix p, under k, replacing any entry;
// info is what the kernel said of itself (kept for people who read the
// entry). It writes a temporary file and renames it over the entry.
func (c Cache) Store(k CacheKey, p *Prefix, info string, cells []session.Cell) (err error) {
	if c.Dir == "" || k.Runtime == "" {
		return nil
	}
	e := cacheEntry{Format: CacheFormat, Key: k, Prefix: p.Name, Kernel: info, Written: time.Now().UTC()}
	for _, cell := range cells {
		e.Cells = append(e.Cells, cacheCell{cell.Code, cell.Result})
	}
	b, err := json.MarshalIndent(e, "", " ")
	if err != nil {
		return fmt.Errorf("keep the built prefix: %w", err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("keep the built prefix: %w", err)
	}
	f, err := os.CreateTemp(c.Dir, ".entry-*.tmp")
	if err != nil {
		return fmt.Errorf("keep the built prefix: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			err = fmt.Errorf("keep the built prefix in %s: %w", c.Dir, err)
		}
	}()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), c.Path(k))
}

// DataHash identifies the data folder dir as a kernel sees it (followLinks
// as the kernel's copy has it): the hex SHA-256 of every entry
// kernel.WalkReadOnly brings in (its path, whether it is a folder, its size
// and its modification time in nanoseconds), not of the files' contents.
// It reads no file, so it costs one stat per entry; a file rewritten with
// its size and time kept hashes the same (the run's check then finds the
// difference). "" for no data.
func DataHash(dir string, followLinks bool) (string, error) {
	if dir == "" {
		return "", nil
	}
	h := sha256.New()
	var num [8]byte
	err := kernel.WalkReadOnly(dir, kernel.WalkOptions{FollowLinks: followLinks}, func(e kernel.DataEntry) error {
		h.Write([]byte(e.Rel))
		h.Write([]byte{0})
		if e.Dir {
			h.Write([]byte{'d'})
		} else {
			h.Write([]byte{'f'})
		}
		binary.BigEndian.PutUint64(num[:], uint64(e.Size))
		h.Write(num[:])
		binary.BigEndian.PutUint64(num[:], uint64(e.ModTime.UnixNano()))
		h.Write(num[:])
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash the data folder %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// DriverVersion identifies what runs cells of lang: for Python, the
// embedded driver (kernel.DriverVersion, a hash of its text); for Go, the
// ctxcode binary that serves the Go kernel (its size and modification
// time).
func DriverVersion(lang kernel.Language) (string, error) {
	if lang == kernel.Go {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find the binary that serves the Go kernel: %w", err)
		}
		st, err := os.Stat(exe)
		if err != nil {
			return "", fmt.Errorf("find the binary that serves the Go kernel: %w", err)
		}
		return fmt.Sprintf("go-kernel %s %d %d", exe, st.Size(), st.ModTime().UnixNano()), nil
	}
	return "python-driver " + kernel.DriverVersion(), nil
}
