package datasets

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
)

// ManifestFile is the name of a dataset folder's manifest.
const ManifestFile = "manifest.json"

// Manifest describes a dataset folder: how it was made and what its files
// hold. Counts and SHA256 are keyed by file name ("tasks.jsonl").
type Manifest struct {
	Tier             string            `json:"tier"`
	Seed             int64             `json:"seed"`
	GeneratorVersion int               `json:"generator_version"`
	Counts           map[string]int    `json:"counts"` // rows per file
	SHA256           map[string]string `json:"sha256"` // hex digest per file
}

// Errors Write and Load wrap; test them with errors.Is.
var (
	// ErrNotDataset: the folder has no manifest.json.
	ErrNotDataset = errors.New("not a ctxcode dataset (no manifest.json); make one with `ctxcode data gen`")
	// ErrDirNotEmpty: Write was asked to write into a folder that holds files, without force.
	ErrDirNotEmpty = errors.New("refusing to write a dataset into a folder that is not empty")
	// ErrDatasetChanged: a data file is missing or differs from its sha256 in the manifest.
	ErrDatasetChanged = errors.New("the files changed since generation")
	// ErrMalformed: manifest.json or a data file does not parse.
	ErrMalformed = errors.New("malformed dataset")
)

// notDatasetError says which folder is not a dataset; it Is ErrNotDataset.
type notDatasetError struct{ dir string }

func (e *notDatasetError) Error() string {
	return fmt.Sprintf("%s is %v", e.dir, ErrNotDataset)
}

func (e *notDatasetError) Is(target error) bool { return target == ErrNotDataset }

// fileName is the name of a data file: "tasks" → "tasks.jsonl".
func fileName(name string) string { return name + ".jsonl" }

// encode renders the five data files, one JSON object per line.
func (d *Dataset) encode() (map[string][]byte, map[string]int, error) {
	files := make(map[string][]byte, len(Files))
	counts := make(map[string]int, len(Files))
	add := func(name string, n int, each func(enc *json.Encoder, i int) error) error {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for i := range n {
			if err := each(enc, i); err != nil {
				return fmt.Errorf("encode %s: %w", fileName(name), err)
			}
		}
		files[fileName(name)], counts[fileName(name)] = buf.Bytes(), n
		return nil
	}
	err := errors.Join(
		add("teams", len(d.Teams), func(enc *json.Encoder, i int) error { return enc.Encode(d.Teams[i]) }),
		add("users", len(d.Users), func(enc *json.Encoder, i int) error { return enc.Encode(d.Users[i]) }),
		add("projects", len(d.Projects), func(enc *json.Encoder, i int) error { return enc.Encode(d.Projects[i]) }),
		add("tasks", len(d.Tasks), func(enc *json.Encoder, i int) error { return enc.Encode(d.Tasks[i]) }),
		add("events", len(d.Events), func(enc *json.Encoder, i int) error { return enc.Encode(d.Events[i]) }),
	)
	return files, counts, err
}

// Write writes the five JSONL files and manifest.json into dir, making dir
// if needed. A dir that exists and is not empty is refused (ErrDirNotEmpty)
// unless force; refusing touches nothing. With force, the dataset's files
// are overwritten and other files are left alone. The manifest is written
// last, so an interrupted Write leaves a folder that Load rejects.
func (d *Dataset) Write(dir string, force bool) (*Manifest, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("write dataset: %w", err)
	case len(entries) > 0 && !force:
		return nil, fmt.Errorf("%w: %s holds %d file(s); choose an empty or new folder, or overwrite with force (`ctxcode data gen --force`)",
			ErrDirNotEmpty, dir, len(entries))
	}
	files, counts, err := d.encode()
	if err != nil {
		return nil, err
	}
	m := &Manifest{
		Tier:             d.Tier,
		Seed:             d.Seed,
		GeneratorVersion: GeneratorVersion,
		Counts:           counts,
		SHA256:           make(map[string]string, len(files)),
	}
	for name, b := range files {
		sum := sha256.Sum256(b)
		m.SHA256[name] = hex.EncodeToString(sum[:])
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ManifestFile, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write dataset: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("write dataset: %w", err)
	}
	for _, name := range Files {
		if err := os.WriteFile(filepath.Join(dir, fileName(name)), files[fileName(name)], 0o644); err != nil {
			return nil, fmt.Errorf("write dataset: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(manifest, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("write dataset: %w", err)
	}
	return m, nil
}

// Load reads a dataset folder, checking manifest.json and every file's
// sha256 against it. A folder without manifest.json is ErrNotDataset; a
// missing or changed data file is ErrDatasetChanged.
func Load(dir string) (*Dataset, *Manifest, error) {
	b, err := readRegular(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, &notDatasetError{dir: dir}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load dataset: %w", err)
	}
	m := &Manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, nil, fmt.Errorf("load dataset: %w: %s: %w; regenerate it with `ctxcode data gen --force`", ErrMalformed, filepath.Join(dir, ManifestFile), err)
	}
	regen := fmt.Sprintf("regenerate it with `ctxcode data gen --tier %s --seed %d --out %s --force`", m.Tier, m.Seed, dir)
	d := &Dataset{Tier: m.Tier, Seed: m.Seed}
	for _, name := range Files {
		file := fileName(name)
		path := filepath.Join(dir, file)
		b, err := readRegular(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s is missing: %w; %s", path, ErrDatasetChanged, regen)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("load dataset: %w", err)
		}
		sum := sha256.Sum256(b)
		if got, want := hex.EncodeToString(sum[:]), m.SHA256[file]; got != want {
			return nil, nil, fmt.Errorf("%s: sha256 %.12s… does not match manifest.json (%.12s…): %w; %s",
				path, got, want, ErrDatasetChanged, regen)
		}
		var n int
		switch name {
		case "teams":
			d.Teams, err = decodeLines[Team](b, m.Counts[file])
			n = len(d.Teams)
		case "users":
			d.Users, err = decodeLines[User](b, m.Counts[file])
			n = len(d.Users)
		case "projects":
			d.Projects, err = decodeLines[Project](b, m.Counts[file])
			n = len(d.Projects)
		case "tasks":
			d.Tasks, err = decodeLines[TaskRecord](b, m.Counts[file])
			n = len(d.Tasks)
		case "events":
			d.Events, err = decodeLines[Event](b, m.Counts[file])
			n = len(d.Events)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("load dataset: %w: %s: %w", ErrMalformed, path, err)
		}
		if n != m.Counts[file] {
			return nil, nil, fmt.Errorf("%s has %d rows, manifest.json says %d: %w; %s", path, n, m.Counts[file], ErrDatasetChanged, regen)
		}
	}
	return d, m, nil
}

// readRegular reads the regular file at path (or that a link there leads
// to). Anything else is an error, found before a read: a named pipe is
// never waited on, a device never read (the kernel's data/ leaves both
// out, see kernel.WalkReadOnly).
func readRegular(path string) ([]byte, error) {
	notRegular := func(st fs.FileInfo) error {
		return fmt.Errorf("%s is not a regular file (%s): not read", path, st.Mode().Type())
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(st)
	}
	// Non-blocking, and checked again: a file replaced by a pipe since.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(st)
	}
	return io.ReadAll(f)
}

// decodeLines decodes JSON lines strictly: unknown fields are errors; n is
// how many rows to expect (the manifest's count: a hint). A large file is
// cut at line ends into a part per CPU, the parts decoded at the same time
// (a JSON value never holds a raw newline, so the parts hold the same
// values as the whole); if a part fails, the whole is decoded in one pass,
// so that the error names its row as it always did.
func decodeLines[T any](b []byte, n int) ([]T, error) {
	parts := splitLines(b, runtime.GOMAXPROCS(0), 256<<10)
	if len(parts) < 2 {
		return decodeAll[T](b, n)
	}
	rows := make([][]T, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() { rows[i], errs[i] = decodeAll[T](part, n/len(parts)+1) })
	}
	wg.Wait()
	if errors.Join(errs...) != nil {
		return decodeAll[T](b, n)
	}
	return slices.Concat(rows...), nil
}

// splitLines cuts b after newlines into at most n parts of at least min
// bytes each.
func splitLines(b []byte, n, min int) [][]byte {
	size := max(len(b)/max(n, 1), min)
	var parts [][]byte
	for len(b) > 0 {
		cut := len(b)
		if size < len(b) {
			if i := bytes.IndexByte(b[size:], '\n'); i >= 0 {
				cut = size + i + 1
			}
		}
		if len(parts) == n-1 {
			cut = len(b)
		}
		parts = append(parts, b[:cut])
		b = b[cut:]
	}
	return parts
}

// decodeAll decodes the JSON values of b, one after the other, making room
// for n first (no more than b can hold: a value takes two bytes at least).
func decodeAll[T any](b []byte, n int) ([]T, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	out := make([]T, 0, min(max(n, 0), len(b)/2))
	for {
		var v T
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", len(out)+1, err)
		}
		out = append(out, v)
	}
}
