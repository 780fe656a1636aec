package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/prefixes"
)

// TestPrefixExportImport exports pm as a notebook, imports it back, and
// the imported prefix verifies.
func TestPrefixExportImport(t *testing.T) {
	requirePython(t)
	data := filepath.Join(t.TempDir(), "pm")
	got := runCLI(t, "", "data", "gen", "--tier", "s", "--seed", "1", "--out", data)
	require.Equal(t, 0, got.code, got.stderr)
	dir := t.TempDir()
	nb := filepath.Join(dir, "pm.ipynb")

	got = runCLI(t, "", "prefix", "export", "pm", "--sandbox", "local", "--data", data, "--out", nb)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, localWarning, got.stderr)
	assert.Equal(t, "wrote "+nb+" (6 cells); open it in Jupyter, or turn it back into a prefix file with: ctxcode prefix import "+nb+" --out pm.py\n", got.stdout)
	written, err := os.ReadFile(nb)
	require.NoError(t, err)
	var doc struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			Outputs []struct {
				Data map[string][]string `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	require.NoError(t, json.Unmarshal(written, &doc))
	assert.Equal(t, 4, doc.NBFormat)
	require.Len(t, doc.Cells, 6)
	assert.Equal(t, []string{"(3, 30, 8, 500, 2000)"}, doc.Cells[1].Outputs[0].Data["text/plain"], "the kernel's output")

	// Never over an existing file without --force.
	require.NoError(t, os.WriteFile(nb, []byte("mine"), 0o644))
	got = runCLI(t, "", "prefix", "export", "pm", "--sandbox", "local", "--data", data, "--out", nb)
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "prefix export: "+nb+" exists; pass --force to overwrite it")
	assert.NotContains(t, got.stderr, "warning", "it fails before starting a kernel")
	b, err := os.ReadFile(nb)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	got = runCLI(t, "", "prefix", "export", "pm", "--sandbox", "local", "--data", data, "--out", nb, "--force")
	require.Equal(t, 0, got.code, got.stderr)
	b, err = os.ReadFile(nb)
	require.NoError(t, err)
	assert.Equal(t, string(written), string(b), "the same notebook again")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")

	// Import prints the prefix; --out writes it, and it verifies.
	got = runCLI(t, "", "prefix", "import", nb)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Empty(t, got.stderr)
	pm, err := prefixes.Load("pm")
	require.NoError(t, err)
	assert.Equal(t, string(prefixes.FormatPercent(pm)), got.stdout, "pm comes back")
	assert.Contains(t, got.stdout, "# name: pm\n# language: python\n# description: ")

	py := filepath.Join(dir, "pm.py")
	got = runCLI(t, "", "prefix", "import", nb, "--out", py)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, "wrote "+py+" (6 cells); check it with: ctxcode prefix verify "+py+" --data DIR\n", got.stdout)
	got = runCLI(t, "", "prefix", "verify", py, "--sandbox", "local", "--data", data)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "prefix pm: ok: 6 cells, built twice with identical output")

	got = runCLI(t, "", "prefix", "import", "--out", py, nb)
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "prefix import: "+py+" exists; pass --force to overwrite it")
	got = runCLI(t, "", "prefix", "import", "--force", "--out", py, nb)
	assert.Equal(t, 0, got.code, got.stderr)
}

// TestPrefixExportGo exports a Go prefix: the notebook names a Go kernel.
func TestPrefixExportGo(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "answer.go")
	require.NoError(t, os.WriteFile(src, []byte("// %%\nx := 41\n// %%\nx + 1\n"), 0o644))
	nb := filepath.Join(dir, "answer.ipynb")
	got := runCLI(t, "", "prefix", "export", src, "--sandbox", "local", "--out", nb)
	require.Equal(t, 0, got.code, got.stderr)
	b, err := os.ReadFile(nb)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name": "gophernotes"`)
	assert.Contains(t, string(b), "\"text/plain\": [\n       \"42\"\n      ]")

	got = runCLI(t, "", "prefix", "import", nb)
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, "// name: answer\n// language: go\n// %%\nx := 41\n// %%\nx + 1\n", got.stdout)
}

// TestPrefixExportFailingCell: a cell that fails is the prefix's fault, and
// nothing is written.
func TestPrefixExportFailingCell(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "broken.py")
	require.NoError(t, os.WriteFile(src, []byte("# %%\nx = 1\n# %%\n1/0\n"), 0o644))
	nb := filepath.Join(dir, "broken.ipynb")
	got := runCLI(t, "", "prefix", "export", src, "--sandbox", "local", "--out", nb)
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "prefix broken: cell 2 (line 4) failed")
	assert.Contains(t, got.stderr, "ZeroDivisionError")
	assert.NoFileExists(t, nb)
}

func TestPrefixExportImportErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(f, []byte(content), 0o644))
		return f
	}
	bad := write("bad.ipynb", "{\"nbformat\": 4,\n \"cells\": [\n")
	old := write("old.ipynb", `{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}`)
	r := write("r.ipynb", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "ir", "display_name": "R", "language": "R"}}, "cells": []}`)
	prose := write("prose.ipynb", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "markdown", "metadata": {}, "source": "hi"}]}`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"export without --out", []string{"prefix", "export", "pm"}, []string{"prefix export: --out is required"}},
		{"export to another extension", []string{"prefix", "export", "pm", "--out", filepath.Join(dir, "pm.json")}, []string{"does not end in .ipynb"}},
		{"export without a prefix", []string{"prefix", "export", "--out", filepath.Join(dir, "x.ipynb")}, []string{"prefix export: name a prefix (pm"}},
		{"import without a notebook", []string{"prefix", "import"}, []string{"prefix import: name the notebook to import"}},
		{"import two notebooks", []string{"prefix", "import", bad, old}, []string{`unexpected argument "` + old + `"`}},
		{"import a missing file", []string{"prefix", "import", filepath.Join(dir, "none.ipynb")}, []string{"prefix import: open ", "no such file"}},
		{"import malformed JSON", []string{"prefix", "import", bad}, []string{"prefix import: " + bad + ": not JSON (line 3)"}},
		{"import nbformat 3", []string{"prefix", "import", old}, []string{old + ": nbformat 3 notebook: ctxcode reads nbformat 4"}},
		{"import an R notebook", []string{"prefix", "import", r}, []string{`the notebook's language is "R"`, "python or go"}},
		{"import no code cells", []string{"prefix", "import", prose}, []string{prose + ": no code cells"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, got.code)
			for _, want := range tc.want {
				assert.Contains(t, got.stderr, want)
			}
			assert.Empty(t, got.stdout)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 4, "no command wrote a file")
}
