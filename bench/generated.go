package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The files ctxcode writes into and beside a run directory for people to
// read (report.md, report.html, the trials' notebooks) carry a mark, so
// that a later report, or a run started again with --force, replaces or
// removes only its own files as it wrote them: a file without the mark is
// the user's, and a file whose bytes no longer match its mark was changed
// since (by the user, who then owns it).
//
// The mark is the text "ctxcode-generated sha256=" and 64 hex digits: the
// SHA-256 of the whole file with those digits written as "0"s. A writer
// puts GeneratedMark (the digits "0") where its format holds a comment or
// metadata (an HTML comment atop Markdown, a <meta name="generator"> in
// HTML, a field of a notebook's metadata) and passes the bytes through
// Stamp, which fills in the digits.

// The files of the report in a run directory.
const (
	ReportMarkdown = "report.md"
	ReportHTML     = "report.html"
	NotebookDir    = "notebooks"
	notebookExt    = ".ipynb"
)

const generatedTag = "ctxcode-generated sha256="

// GeneratedMark is the mark a generated file carries before Stamp fills in
// its hash.
const GeneratedMark = generatedTag + "0000000000000000000000000000000000000000000000000000000000000000"

var generatedMarks = regexp.MustCompile(regexp.QuoteMeta(generatedTag) + `[0-9a-f]{64}`)

// Stamp returns b with its first GeneratedMark's digits set to the hash of
// b; b without one is returned as it is.
func Stamp(b []byte) []byte {
	i := bytes.Index(b, []byte(GeneratedMark))
	if i < 0 {
		return b
	}
	sum := sha256.Sum256(b)
	out := bytes.Clone(b)
	hex.Encode(out[i+len(generatedTag):], sum[:])
	return out
}

// Origin says whose a file is.
type Origin int

const (
	// Missing: there is no file.
	Missing Origin = iota
	// Generated: ctxcode wrote it, and it is as ctxcode wrote it.
	Generated
	// Changed: ctxcode wrote it, and it was changed since.
	Changed
	// Foreign: ctxcode did not write it (no mark), or it is not a regular
	// file (a folder, a link).
	Foreign
)

func (o Origin) String() string {
	switch o {
	case Missing:
		return "missing"
	case Generated:
		return "written by ctxcode"
	case Changed:
		return "changed since ctxcode wrote it"
	}
	return "not written by ctxcode"
}

// OriginOf reads the file at path and says whose it is.
func OriginOf(path string) (Origin, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Missing, nil
	case err != nil:
		return 0, err
	case !st.Mode().IsRegular():
		return Foreign, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return originOf(b), nil
}

// originOf is the origin of a file whose bytes are b: Generated when one of
// its marks holds the hash of b with that mark's digits "0" (the file's
// content may hold text like a mark before the real one), Changed when it
// has marks and none does.
func originOf(b []byte) Origin {
	marks := generatedMarks.FindAllIndex(b, -1)
	if len(marks) == 0 {
		return Foreign
	}
	zeroed := bytes.Clone(b)
	for _, m := range marks {
		digits := m[0] + len(generatedTag)
		copy(zeroed[digits:m[1]], GeneratedMark[len(generatedTag):])
		sum := sha256.Sum256(zeroed)
		if hex.EncodeToString(sum[:]) == string(b[digits:m[1]]) {
			return Generated
		}
		copy(zeroed[digits:m[1]], b[digits:m[1]])
	}
	return Changed
}

// removeRun removes what the run in dir made, and nothing else: run.json
// and trials.jsonl; the trajectories of its trials, those its lines name
// and those named as its keys' (any attempt, whole or temporary, which a
// run killed between writing one and its line leaves); the prefixes its
// run.json names in PrefixDir; and the report's
// files while they are as ctxcode wrote them. old is the run's Spec, nil
// when run.json does not read. It returns the files it left in the run's
// folders (trajectories/, notebooks/, the report's): the user's, or
// changed since ctxcode wrote them, relative to dir.
func removeRun(dir string, old *Spec) (kept []string, err error) {
	named := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(dir, TrialsFile)); err == nil {
		for _, t := range readLenient(b) {
			if rel := filepath.FromSlash(t.Trajectory); filepath.IsLocal(rel) && filepath.Dir(rel) == TrajectoryDir {
				named[filepath.Base(rel)] = true
			}
		}
	}
	names := trajectoryNames(old)
	trajs := filepath.Join(dir, TrajectoryDir)
	entries, err := os.ReadDir(trajs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		whole := strings.TrimSuffix(name, tempSuffix)
		if !e.Type().IsRegular() || !named[whole] && !names.match(whole) {
			kept = append(kept, filepath.Join(TrajectoryDir, name))
			continue
		}
		if err := os.Remove(filepath.Join(trajs, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if err := removePrefixes(dir, old); err != nil {
		return nil, err
	}
	for _, name := range []string{SpecFile, SpecFile + tempSuffix, TrialsFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	for _, name := range []string{ReportMarkdown, ReportHTML} {
		gone, err := removeGenerated(dir, name)
		if err != nil {
			return nil, err
		}
		if !gone {
			kept = append(kept, name)
		}
	}
	nbs := filepath.Join(dir, NotebookDir)
	if st, err := os.Lstat(nbs); err == nil && st.IsDir() {
		entries, err := os.ReadDir(nbs)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			rel := filepath.Join(NotebookDir, e.Name())
			gone := false
			if filepath.Ext(e.Name()) == notebookExt {
				if gone, err = removeGenerated(dir, rel); err != nil {
					return nil, err
				}
			}
			if !gone {
				kept = append(kept, rel)
			}
		}
		_ = os.Remove(nbs) // only when nothing is left in it
	} else if err == nil {
		kept = append(kept, NotebookDir)
	}
	return kept, nil
}

// removeGenerated removes dir/rel when ctxcode wrote it and it is
// unchanged; gone says it is not there any more (or never was).
func removeGenerated(dir, rel string) (gone bool, err error) {
	path := filepath.Join(dir, rel)
	o, err := OriginOf(path)
	switch {
	case err != nil:
		return false, fmt.Errorf("read %s: %w", rel, err)
	case o == Missing:
		return true, nil
	case o != Generated:
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// readLenient is the trials of a log's lines that read; the others are
// skipped (a run being discarded may be broken).
func readLenient(b []byte) []Trial {
	var trials []Trial
	for _, line := range bytes.Split(b, []byte("\n")) {
		var t Trial
		if json.Unmarshal(line, &t) == nil {
			trials = append(trials, t)
		}
	}
	return trials
}

// runNames tells the trajectory file names of a run's keys: TrajectoryPath's
// names for any attempt.
type runNames struct {
	stems map[string]bool // model.condition.task
	reps  int
}

var trajectoryName = regexp.MustCompile(`^(.+)\.r([0-9]+)(\.a[0-9]+)?` + regexp.QuoteMeta(trajectoryExt) + `$`)

func trajectoryNames(s *Spec) runNames {
	n := runNames{stems: map[string]bool{}}
	if s == nil {
		return n
	}
	n.reps = s.Reps
	for _, m := range s.Models {
		for _, c := range s.Conditions {
			for _, t := range s.TaskList {
				n.stems[safeName(m.Name)+"."+safeName(c.Name)+"."+safeName(t.ID)] = true
			}
		}
	}
	return n
}

func (n runNames) match(name string) bool {
	m := trajectoryName.FindStringSubmatch(name)
	if m == nil || !n.stems[m[1]] {
		return false
	}
	rep, err := strconv.Atoi(m[2])
	return err == nil && rep >= 1 && rep <= n.reps
}

// keptNote is the warning that names what removeRun kept, at most a few.
func keptNote(dir string, kept []string) string {
	const most = 5
	names := slices.Clone(kept)
	more := ""
	if len(names) > most {
		more = fmt.Sprintf(" and %d more", len(names)-most)
		names = names[:most]
	}
	return fmt.Sprintf("ctxcode: %s: kept what the old run did not write, or what was changed since it was written: %s%s\n",
		dir, strings.Join(names, ", "), more)
}
