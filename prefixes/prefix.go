// Package prefixes reads, builds and checks session prefixes: real cells,
// really executed, that load the data and bind variables before a model
// says a word.
//
// A prefix file is in the percent format that Jupytext, VS Code and Spyder
// read: cells are separated by "# %%" lines ("// %%" for Go). Comment lines
// before the first cell form the header, "key: value" lines with the keys
// name, language (python or go), description and rules (a short text for
// the system prompt):
//
//	# name: pm
//	# language: python
//	# description: The project-management workspace.
//	# %%
//	import json, os
//	sorted(os.listdir('data'))
//
// A prefix whose name ends in NoBindSuffix binds no variables: it is the
// control of the prefix it mirrors (pm-nobind for pm, condition B0), its
// cells repeat full expressions, and the rules the model reads do not say
// that the cells' variables are bound (see session.Input.NothingBound).
//
// Build runs every cell in a real kernel; nothing in a transcript is ever
// written by hand.
package prefixes

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

// Prefix is a parsed prefix file.
type Prefix struct {
	Name        string
	Language    kernel.Language
	Description string
	Rules       string
	Source      string // the file it came from, or "builtin:NAME"
	Cells       []Cell
}

// Cell is one cell of a prefix.
type Cell struct {
	Code string
	Line int // the line of the file where the cell's code starts
}

// ParseError is a prefix file that does not parse.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Parse reads a prefix in the percent format; file names it in errors.
func Parse(file string, src []byte) (*Prefix, error) {
	p := &Prefix{Source: file}
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	var cur []string
	start := 0
	inCells := false
	flush := func() {
		code := strings.Trim(strings.Join(cur, "\n"), "\n")
		if strings.TrimSpace(code) != "" {
			p.Cells = append(p.Cells, Cell{Code: code, Line: start})
		}
		cur = nil
	}
	for i, line := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if isMarker(trimmed) {
			if inCells {
				flush()
			}
			inCells, start = true, n+1
			continue
		}
		if inCells {
			if len(cur) == 0 && trimmed == "" {
				start = n + 1
				continue
			}
			cur = append(cur, line)
			continue
		}
		// The header: comments with key: value, and blank lines.
		if trimmed == "" {
			continue
		}
		body, ok := strings.CutPrefix(trimmed, "#")
		if !ok {
			body, ok = strings.CutPrefix(trimmed, "//")
		}
		if !ok {
			return nil, &ParseError{file, n, `code before the first cell marker: start cells with a "# %%" line ("// %%" for Go)`}
		}
		key, val, ok := strings.Cut(strings.TrimSpace(body), ":")
		if !ok {
			continue // a plain comment
		}
		val = strings.TrimSpace(val)
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "name":
			p.Name = val
		case "language":
			lang, err := kernel.ParseLanguage(val)
			if err != nil {
				return nil, &ParseError{file, n, err.Error()}
			}
			p.Language = lang
		case "description":
			p.Description = val
		case "rules":
			p.Rules = strings.TrimSpace(p.Rules + " " + val)
		}
	}
	if inCells {
		flush()
	}
	if len(p.Cells) == 0 {
		return nil, &ParseError{file, len(lines), `no cells: a prefix needs at least one "# %%" cell`}
	}
	if p.Language == "" {
		p.Language = kernel.Python
		if strings.HasSuffix(file, ".go") {
			p.Language = kernel.Go
		}
	}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	return p, nil
}

// SplitCells splits percent-format text given by hand (ctxcode exec's
// standard input) into its cells' code: a marker line as Parse reads them
// ("# %%", "// %%") ends a cell and starts the next, and the text before
// the first marker is a cell too. Unlike Parse it reads no header: a cell
// with nothing but comments ("#" or "//") and blank lines, such as a
// file's header, is dropped.
func SplitCells(src string) []string {
	var cells, cur []string
	flush := func() {
		if c := strings.Trim(strings.Join(cur, "\n"), "\n"); hasCode(c) {
			cells = append(cells, c)
		}
		cur = cur[:0]
	}
	for _, line := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
		if isMarker(strings.TrimSpace(line)) {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return cells
}

// hasCode says whether cell has a line that is neither blank nor a
// comment.
func hasCode(cell string) bool {
	for _, line := range strings.Split(cell, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "//") {
			return true
		}
	}
	return false
}

func isMarker(line string) bool {
	for _, m := range []string{"# %%", "// %%"} {
		if line == m || strings.HasPrefix(line, m+" ") {
			return true
		}
	}
	return false
}

//go:embed builtin
var builtin embed.FS

// Builtins lists the names of the built-in prefixes.
func Builtins() []string {
	entries, _ := builtin.ReadDir("builtin")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())))
	}
	sort.Strings(names)
	return names
}

// Load returns a built-in prefix by name, or reads a prefix file: percent
// format, or a Jupyter notebook (.ipynb) whose code cells are the prefix.
func Load(nameOrPath string) (*Prefix, error) {
	entries, _ := builtin.ReadDir("builtin")
	for _, e := range entries {
		if strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())) == nameOrPath {
			src, err := builtin.ReadFile("builtin/" + e.Name())
			if err != nil {
				return nil, err
			}
			return Parse("builtin:"+e.Name(), src)
		}
	}
	src, err := os.ReadFile(nameOrPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("prefix %q: no such built-in prefix (%s) and no such file", nameOrPath, strings.Join(Builtins(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("prefix %q: %w", nameOrPath, err)
	}
	if strings.EqualFold(filepath.Ext(nameOrPath), ".ipynb") {
		return ImportNotebook(nameOrPath, src)
	}
	return Parse(nameOrPath, src)
}

// BuildError is a prefix cell that failed in the kernel.
type BuildError struct {
	Prefix string
	Cell   int // 1-based
	Line   int
	Result kernel.Result
	// Killed is set when the cell ended the kernel itself (it died, or
	// was killed at its hard deadline) instead of failing in it: a
	// *kernel.DeadError or *kernel.DeadlineError.
	Killed error
}

// Unwrap is the kernel's error, for a cell that killed the kernel.
func (e *BuildError) Unwrap() error { return e.Killed }

func (e *BuildError) Error() string {
	if e.Killed != nil {
		return fmt.Sprintf("prefix %s: cell %d (line %d) killed the kernel: %v", e.Prefix, e.Cell, e.Line, e.Killed)
	}
	tb := ""
	if e.Result.Error != nil {
		tb = e.Result.Error.Traceback
		if tb == "" {
			tb = e.Result.Error.Name + ": " + e.Result.Error.Value
		}
	}
	return fmt.Sprintf("prefix %s: cell %d (line %d) failed with status %s:\n%s", e.Prefix, e.Cell, e.Line, e.Result.Status, tb)
}

// Build runs every cell of p in k, in order, and returns them with their
// real results. A cell that fails (error or timeout) fails the build, and
// so does a cell that kills the kernel: both are a *BuildError, the
// prefix's fault. Other errors (a cancelled context, a kernel lost for
// another reason) are the machinery's.
func Build(ctx context.Context, k kernel.Kernel, p *Prefix, opts kernel.ExecOptions) ([]session.Cell, error) {
	if k.Language() != p.Language {
		return nil, fmt.Errorf("prefix %s is written in %s, but the kernel runs %s: use --lang %s or another prefix", p.Name, p.Language, k.Language(), p.Language)
	}
	cells := make([]session.Cell, 0, len(p.Cells))
	for i, c := range p.Cells {
		res, err := k.Execute(ctx, c.Code, opts)
		var dead *kernel.DeadError
		var deadline *kernel.DeadlineError
		if err != nil && ctx.Err() == nil && (errors.As(err, &dead) || errors.As(err, &deadline)) {
			return cells, &BuildError{Prefix: p.Name, Cell: i + 1, Line: c.Line, Killed: err}
		}
		if err != nil {
			return cells, fmt.Errorf("prefix %s: cell %d (line %d): %w", p.Name, i+1, c.Line, err)
		}
		if res.Status != kernel.StatusOK {
			return cells, &BuildError{Prefix: p.Name, Cell: i + 1, Line: c.Line, Result: res}
		}
		cells = append(cells, session.Cell{Code: c.Code, Result: res, From: session.FromPrefix})
	}
	return cells, nil
}

// NoBindSuffix ends the name of a prefix that binds no variables.
const NoBindSuffix = "-nobind"

// BindsNothing says p binds no variables (its name ends in NoBindSuffix).
func (p *Prefix) BindsNothing() bool { return strings.HasSuffix(p.Name, NoBindSuffix) }

// ControlPath is where the control of the prefix file path is looked for:
// beside it, its base name with NoBindSuffix before the extension
// (weather.py: weather-nobind.py), as prefix init writes it.
func ControlPath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + NoBindSuffix + ext
}

// ControlOf is the control of p, the prefix condition B0 starts from: p
// itself when it binds nothing; the built-in NAME-nobind of a built-in
// prefix; for a file, the file at ControlPath beside it, which must bind
// nothing. The error says where the control was looked for.
func ControlOf(p *Prefix) (*Prefix, error) {
	if p.BindsNothing() {
		return p, nil
	}
	if file, ok := strings.CutPrefix(p.Source, "builtin:"); ok {
		name := strings.TrimSuffix(file, filepath.Ext(file)) + NoBindSuffix
		if !slices.Contains(Builtins(), name) {
			return nil, fmt.Errorf("the built-in prefix %s has no control (there is no built-in %s)", p.Name, name)
		}
		return Load(name)
	}
	path := ControlPath(p.Source)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("prefix %s has no control beside it: no %s", p.Name, path)
	}
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	if !c.BindsNothing() {
		return nil, fmt.Errorf("%s is beside prefix %s, but its name %s does not end in %s: a control binds nothing, and says so by its name (# name: %s%s)",
			path, p.Name, c.Name, NoBindSuffix, p.Name, NoBindSuffix)
	}
	return c, nil
}

// Input is what the renderers need from p and its built cells, to ask
// question: the transcript in p's language, p's rules, and whether its
// cells bind anything.
func (p *Prefix) Input(cells []session.Cell, question string) session.Input {
	return session.Input{
		Transcript:   session.Transcript{Language: p.Language, Cells: cells},
		Rules:        p.Rules,
		Question:     question,
		NothingBound: p.BindsNothing(),
	}
}

// readsData matches code that names the data folder: data/..., "data" or
// 'data' (as in os.listdir('data') or os.ReadDir("data")).
var readsData = regexp.MustCompile(`\bdata/|["']data["']`)

// ReadsData reports whether a cell of p names the data folder, so that a
// command can ask for --data before it starts a kernel instead of letting
// the first cell fail on a missing data/.
func (p *Prefix) ReadsData() bool {
	for _, c := range p.Cells {
		if readsData.MatchString(c.Code) {
			return true
		}
	}
	return false
}

// Hash identifies p's cells: the hex SHA-256 of their code, each ended by a
// NUL byte. Two prefixes with the same hash build the same session.
func (p *Prefix) Hash() string {
	h := sha256.New()
	for _, c := range p.Cells {
		h.Write([]byte(c.Code))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
