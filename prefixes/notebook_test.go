package prefixes_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// nbPython finds a Python that has nbformat, whose validator checks the
// notebooks export writes.
func nbPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import nbformat").Run() == nil {
			return path
		}
	}
	msg := "no python3 with nbformat (tried /usr/bin/python3 and python3 on PATH): install python3-nbformat, or run scripts/setup-host.sh"
	testenv.SkipOrFail(t, "%s", msg)
	return ""
}

// validate checks a notebook with nbformat's own validator.
func validate(t *testing.T, python string, nb []byte) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "nb.ipynb")
	require.NoError(t, os.WriteFile(f, nb, 0o644))
	out, err := exec.Command(python, "-c", "import nbformat,sys; nbformat.validate(nbformat.read(sys.argv[1], as_version=4))", f).CombinedOutput()
	require.NoError(t, err, "nbformat rejects the notebook:\n%s\n%s", out, nb)
	assert.Empty(t, string(out), "no warnings")
	out, err = exec.Command(python, "-c", "import nbformat,sys; sys.stdout.buffer.write((nbformat.writes(nbformat.read(sys.argv[1], as_version=4)) + '\\n').encode())", f).Output()
	require.NoError(t, err)
	assert.Equal(t, string(out), string(nb), "the bytes Jupyter writes for the same notebook")
}

// nbDoc is the part of a notebook the tests look at.
type nbDoc struct {
	NBFormat      int `json:"nbformat"`
	NBFormatMinor int `json:"nbformat_minor"`
	Metadata      struct {
		Kernelspec   map[string]string `json:"kernelspec"`
		LanguageInfo map[string]any    `json:"language_info"`
		Ctxcode      map[string]string `json:"ctxcode"`
	} `json:"metadata"`
	Cells []struct {
		ID             string     `json:"id"`
		CellType       string     `json:"cell_type"`
		ExecutionCount *int       `json:"execution_count"`
		Source         []string   `json:"source"`
		Outputs        []nbOutput `json:"outputs"`
	} `json:"cells"`
}

type nbOutput struct {
	OutputType     string              `json:"output_type"`
	Name           string              `json:"name"`
	Text           []string            `json:"text"`
	Data           map[string][]string `json:"data"`
	ExecutionCount *int                `json:"execution_count"`
	Ename          string              `json:"ename"`
	Evalue         string              `json:"evalue"`
	Traceback      []string            `json:"traceback"`
}

func decode(t *testing.T, nb []byte) nbDoc {
	t.Helper()
	var d nbDoc
	require.NoError(t, json.Unmarshal(nb, &d))
	return d
}

// TestExportNotebookPM builds pm in a real kernel and exports it: nbformat
// accepts the notebook, the outputs are the kernel's, and the bytes are
// the same every time.
func TestExportNotebookPM(t *testing.T) {
	python := nbPython(t)
	dir := t.TempDir()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	_, err = datasets.Generate(tier, 1).Write(dir, true)
	require.NoError(t, err)
	k := kerneltest.Python(t, dir)
	p, err := prefixes.Load("pm")
	require.NoError(t, err)
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(t, err)

	nb, err := prefixes.ExportNotebook(p, cells)
	require.NoError(t, err)
	validate(t, python, nb)
	again, err := prefixes.ExportNotebook(p, cells)
	require.NoError(t, err)
	assert.Equal(t, string(nb), string(again), "export is deterministic")
	assert.True(t, strings.HasPrefix(string(nb), "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n"), "Jupyter's layout: sorted keys, one-space indent")
	assert.True(t, strings.HasSuffix(string(nb), "}\n"))

	d := decode(t, nb)
	assert.Equal(t, 4, d.NBFormat)
	assert.Equal(t, 5, d.NBFormatMinor)
	assert.Equal(t, map[string]string{"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}, d.Metadata.Kernelspec)
	assert.Equal(t, "python", d.Metadata.LanguageInfo["name"])
	assert.Equal(t, map[string]string{"name": "pm", "description": p.Description, "rules": p.Rules}, d.Metadata.Ctxcode)
	require.Len(t, d.Cells, len(p.Cells))
	for i, c := range d.Cells {
		assert.Equal(t, "code", c.CellType)
		assert.Equal(t, "cell-"+strconv.Itoa(i+1), c.ID)
		require.NotNil(t, c.ExecutionCount)
		assert.Equal(t, i+1, *c.ExecutionCount)
		assert.Equal(t, p.Cells[i].Code, strings.Join(c.Source, ""))
		for j, line := range c.Source {
			assert.Equal(t, j < len(c.Source)-1, strings.HasSuffix(line, "\n"), "every line but the last keeps its newline: %q", line)
		}
		require.Len(t, c.Outputs, 1, "cell %d shows its value", i+1)
		out := c.Outputs[0]
		assert.Equal(t, "execute_result", out.OutputType)
		require.NotNil(t, out.ExecutionCount)
		assert.Equal(t, i+1, *out.ExecutionCount)
		assert.Equal(t, cells[i].Result.Value, strings.Join(out.Data["text/plain"], ""))
	}
	assert.Equal(t, []string{"(3, 30, 8, 500, 2000)"}, d.Cells[1].Outputs[0].Data["text/plain"])
	assert.Equal(t, []string{"(['blocked', 'done', 'in_progress', 'review', 'todo'],\n", " ['commented', 'created', 'reassigned', 'status_changed'])"},
		d.Cells[2].Outputs[0].Data["text/plain"], "a value of several lines is a list of lines")
}

// TestExportNotebookOutputs exports a session whose cells print, write to
// stderr, fail and answer, each run in a real kernel.
func TestExportNotebookOutputs(t *testing.T) {
	python := nbPython(t)
	k := kerneltest.Python(t, "")
	var cells []session.Cell
	for _, code := range []string{
		"import sys\nprint('hello')\nprint('careful', file=sys.stderr)\n41 + 1",
		"print('before')\n1/0",
		"x = 1",
		"ANSWER({'tasks': 3})",
	} {
		res, err := k.Execute(context.Background(), code, kernel.ExecOptions{})
		require.NoError(t, err)
		cells = append(cells, session.Cell{Code: code, Result: res})
	}
	p := &prefixes.Prefix{Name: "outputs", Language: kernel.Python}
	nb, err := prefixes.ExportNotebook(p, cells)
	require.NoError(t, err)
	validate(t, python, nb)

	d := decode(t, nb)
	require.Len(t, d.Cells, 4)
	assert.Equal(t, []nbOutput{
		{OutputType: "stream", Name: "stdout", Text: []string{"hello\n"}},
		{OutputType: "stream", Name: "stderr", Text: []string{"careful\n"}},
		{OutputType: "execute_result", ExecutionCount: d.Cells[0].ExecutionCount, Data: map[string][]string{"text/plain": {"42"}}},
	}, d.Cells[0].Outputs)

	failed := d.Cells[1].Outputs
	require.Len(t, failed, 2)
	assert.Equal(t, nbOutput{OutputType: "stream", Name: "stdout", Text: []string{"before\n"}}, failed[0])
	assert.Equal(t, "error", failed[1].OutputType)
	assert.Equal(t, "ZeroDivisionError", failed[1].Ename)
	assert.Equal(t, "division by zero", failed[1].Evalue)
	require.NotEmpty(t, failed[1].Traceback)
	assert.Equal(t, "ZeroDivisionError: division by zero", failed[1].Traceback[len(failed[1].Traceback)-1])
	assert.Equal(t, strings.TrimRight(cells[1].Result.Error.Traceback, "\n"), strings.Join(failed[1].Traceback, "\n"), "one line per item, without newlines")
	for _, line := range failed[1].Traceback {
		assert.NotContains(t, line, "\n")
	}

	assert.Empty(t, d.Cells[2].Outputs, "an assignment shows nothing")
	assert.Contains(t, string(nb), "\"outputs\": []", "no outputs is an empty list, not null")
	assert.Equal(t, []nbOutput{{OutputType: "display_data", Data: map[string][]string{"text/plain": {`ANSWER: {"tasks": 3}`}}}}, d.Cells[3].Outputs)
}

// TestExportNotebookGo checks the Go kernelspec; the cells are made here,
// since only the notebook's form is under test.
func TestExportNotebookGo(t *testing.T) {
	python := nbPython(t)
	p := &prefixes.Prefix{Name: "golang", Language: kernel.Go, Rules: "Use Go."}
	cells := []session.Cell{
		{Code: "x := 41", Result: kernel.Result{Count: 1, Status: kernel.StatusOK}},
		{Code: "x + 1", Result: kernel.Result{Count: 2, Status: kernel.StatusOK, Value: "42"}},
		{Code: "y", Result: kernel.Result{Count: 3, Status: kernel.StatusError, Error: &kernel.ErrorInfo{Name: "error", Value: "undefined: y"}}},
	}
	nb, err := prefixes.ExportNotebook(p, cells)
	require.NoError(t, err)
	validate(t, python, nb)
	d := decode(t, nb)
	assert.Equal(t, map[string]string{"display_name": "Go", "language": "go", "name": "gophernotes"}, d.Metadata.Kernelspec)
	assert.Equal(t, "go", d.Metadata.LanguageInfo["name"])
	assert.Equal(t, map[string]string{"name": "golang", "rules": "Use Go."}, d.Metadata.Ctxcode, "an empty description is left out")
	assert.Equal(t, []string{"error: undefined: y"}, d.Cells[2].Outputs[0].Traceback, "no traceback: the exception line")

	back, err := prefixes.ImportNotebook("golang.ipynb", nb)
	require.NoError(t, err)
	assert.Equal(t, kernel.Go, back.Language)
	assert.Equal(t, "// name: golang\n// language: go\n// rules: Use Go.\n// %%\nx := 41\n// %%\nx + 1\n// %%\ny\n", string(prefixes.FormatPercent(back)))
}

func TestExportNotebookErrors(t *testing.T) {
	_, err := prefixes.ExportNotebook(nil, nil)
	assert.ErrorContains(t, err, "no prefix")
	_, err = prefixes.ExportNotebook(&prefixes.Prefix{Name: "x", Language: kernel.Python}, nil)
	assert.ErrorContains(t, err, "prefix x: no cells to export")
	_, err = prefixes.ExportNotebook(&prefixes.Prefix{Name: "x", Language: "ruby"}, []session.Cell{{Code: "1"}})
	assert.ErrorContains(t, err, `unknown language "ruby"`)
}

// unbuilt gives p's cells without running them: import drops outputs.
func unbuilt(p *prefixes.Prefix) []session.Cell {
	var cells []session.Cell
	for i, c := range p.Cells {
		cells = append(cells, session.Cell{Code: c.Code, Result: kernel.Result{Count: i + 1, Status: kernel.StatusOK, Value: "out"}})
	}
	return cells
}

func codes(p *prefixes.Prefix) []string {
	var out []string
	for _, c := range p.Cells {
		out = append(out, c.Code)
	}
	return out
}

func TestImportNotebookRoundTrip(t *testing.T) {
	for _, name := range prefixes.Builtins() {
		t.Run(name, func(t *testing.T) {
			p, err := prefixes.Load(name)
			require.NoError(t, err)
			nb, err := prefixes.ExportNotebook(p, unbuilt(p))
			require.NoError(t, err)
			back, err := prefixes.ImportNotebook("dir/other.ipynb", nb)
			require.NoError(t, err)
			assert.Equal(t, p.Name, back.Name, "the name comes from the metadata, not the file")
			assert.Equal(t, p.Language, back.Language)
			assert.Equal(t, p.Description, back.Description)
			assert.Equal(t, p.Rules, back.Rules)
			assert.Equal(t, "dir/other.ipynb", back.Source)
			assert.Equal(t, codes(p), codes(back))
		})
	}
}

// TestImportNotebookJupyter reads a notebook as Jupyter and other tools
// write them: no ctxcode metadata, source as a string or a list, markdown.
func TestImportNotebookJupyter(t *testing.T) {
	src := `{"nbformat": 4, "nbformat_minor": 2,
 "metadata": {"language_info": {"name": "python"}},
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "prose"]},
  {"cell_type": "code", "metadata": {}, "execution_count": 3, "outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}],
   "source": ["\n", "import os\r\n", "x = 1\n", "\n"]},
  {"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [], "source": "   "},
  {"cell_type": "raw", "metadata": {}, "source": "raw"},
  {"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [], "source": "x + 1"}
 ]}`
	p, err := prefixes.ImportNotebook("notes/analysis.ipynb", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "analysis", p.Name, "the name falls back to the file's")
	assert.Equal(t, kernel.Python, p.Language)
	assert.Empty(t, p.Description)
	assert.Equal(t, []prefixes.Cell{{Code: "import os\nx = 1"}, {Code: "x + 1"}}, p.Cells, "markdown, raw and empty cells are skipped")
	assert.Equal(t, "# name: analysis\n# language: python\n# %%\nimport os\nx = 1\n# %%\nx + 1\n", string(prefixes.FormatPercent(p)))

	multi := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "display_name": "P", "language": "Python"},
 "ctxcode": {"name": " two\nwords ", "rules": "Line one.\nLine two."}}, "cells": [{"cell_type": "code", "source": "1"}]}`
	p, err = prefixes.ImportNotebook("m.ipynb", []byte(multi))
	require.NoError(t, err)
	assert.Equal(t, "two words", p.Name)
	assert.Equal(t, "Line one. Line two.", p.Rules, "a header holds the rules on one line")
}

func TestImportNotebookErrors(t *testing.T) {
	cells := `"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null, "source": "1"}]`
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"malformed JSON", "{\n \"nbformat\": 4,\n \"cells\": [\n}", []string{"bad.ipynb: not JSON (line 4)", "invalid character '}'"}},
		{"empty file", "", []string{"bad.ipynb: not JSON (line 1)", "unexpected end of JSON input"}},
		{"not an object", `[1, 2]`, []string{"bad.ipynb: not a Jupyter notebook"}},
		{"no nbformat", `{"cells": []}`, []string{"bad.ipynb: not a Jupyter notebook: it has no nbformat field"}},
		{"nbformat 3", `{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": []}]}`,
			[]string{"bad.ipynb: nbformat 3 notebook: ctxcode reads nbformat 4", "save it in a current Jupyter"}},
		{"R notebook", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "ir", "display_name": "R", "language": "R"}}, ` + cells + `}`,
			[]string{`bad.ipynb: the notebook's language is "R" (metadata.kernelspec.language)`, "python or go"}},
		{"julia by language_info", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "julia"}}, ` + cells + `}`,
			[]string{`language is "julia" (metadata.language_info.name)`}},
		{"no code cells", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Notes"}]}`,
			[]string{"bad.ipynb: no code cells (of 1 cells; markdown and raw cells are skipped)"}},
		{"bad source", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": 7}]}`,
			[]string{"bad.ipynb: not a valid nbformat 4 notebook", "neither a string nor a list of strings"}},
		{"cell marker in a cell", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": "x = 1\n    # %% part two\ny = 2"}]}`,
			[]string{`bad.ipynb: cell 1, line 2 is "# %% part two", which a prefix file reads as a cell marker`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prefixes.ImportNotebook("bad.ipynb", []byte(tc.src))
			var ne *prefixes.NotebookError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "bad.ipynb", ne.File)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// TestFormatPercentRoundTrip: Parse reads FormatPercent's output back to
// the same prefix.
func TestFormatPercentRoundTrip(t *testing.T) {
	var all []*prefixes.Prefix
	for _, name := range prefixes.Builtins() {
		p, err := prefixes.Load(name)
		require.NoError(t, err)
		all = append(all, p)
	}
	all = append(all, &prefixes.Prefix{Name: "g", Language: kernel.Go, Rules: "Use Go.",
		Cells: []prefixes.Cell{{Code: "x := 1"}, {Code: "func f() int {\n\t// a comment: not a header\n\treturn x\n}"}}})
	for _, p := range all {
		t.Run(p.Name, func(t *testing.T) {
			src := prefixes.FormatPercent(p)
			back, err := prefixes.Parse("formatted.txt", src)
			require.NoError(t, err, "%s", src)
			assert.Equal(t, p.Name, back.Name)
			assert.Equal(t, p.Language, back.Language)
			assert.Equal(t, p.Description, back.Description)
			assert.Equal(t, p.Rules, back.Rules)
			assert.Equal(t, codes(p), codes(back))
			assert.Equal(t, string(src), string(prefixes.FormatPercent(back)), "formatting is stable")
		})
	}
}
