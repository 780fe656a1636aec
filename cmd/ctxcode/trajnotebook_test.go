package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNotebookCommand turns the trajectory of an ask into a notebook; an
// existing --out is refused without --force and replaced with it.
func TestNotebookCommand(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	dir := t.TempDir()
	traj := filepath.Join(dir, "run.jsonl")
	got := runCLI(t, "", "ask", "--task", "s-t1-1", "--model", "reference", "--data", data, "--sandbox", "local", "--trajectory", traj)
	require.Equal(t, exitOK, got.code, got.stderr)

	nb := filepath.Join(dir, "run.ipynb")
	got = runCLI(t, "", "notebook", traj, "--out", nb)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Equal(t, "wrote "+nb+"; open it in Jupyter (jupyter lab "+nb+")\n", got.stdout)
	assert.Empty(t, got.stderr, "nothing runs, so no warning")
	written, err := os.ReadFile(nb)
	require.NoError(t, err)
	var doc struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			CellType string   `json:"cell_type"`
			Source   []string `json:"source"`
			Outputs  []struct {
				Data map[string][]string `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	require.NoError(t, json.Unmarshal(written, &doc))
	assert.Equal(t, 4, doc.NBFormat)
	require.NotEmpty(t, doc.Cells)
	assert.Contains(t, strings.Join(doc.Cells[0].Source, ""), "# Condition D · reference · task s-t1-1")
	last := doc.Cells[len(doc.Cells)-1]
	assert.Contains(t, strings.Join(last.Source, ""), "**grade:** **correct**")
	answered := false
	for _, c := range doc.Cells {
		for _, o := range c.Outputs {
			if strings.HasPrefix(strings.Join(o.Data["text/plain"], ""), "ANSWER: ") {
				answered = true
			}
		}
	}
	assert.True(t, answered, "the model's cell has its output")

	// Never over an existing file without --force.
	require.NoError(t, os.WriteFile(nb, []byte("mine"), 0o644))
	got = runCLI(t, "", "notebook", traj, "--out", nb)
	assert.Equal(t, exitUsage, got.code)
	assert.Equal(t, "ctxcode: notebook: "+nb+" exists; pass --force to overwrite it\n", got.stderr)
	b, err := os.ReadFile(nb)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	// Flags may come first.
	got = runCLI(t, "", "notebook", "--force", "--out", nb, traj)
	require.Equal(t, exitOK, got.code, got.stderr)
	b, err = os.ReadFile(nb)
	require.NoError(t, err)
	assert.Equal(t, string(written), string(b), "the same notebook again")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left: %v", entries)
}

// TestNotebookCommandBadInput: each case exits 2 with a message that says
// what is wrong, and writes nothing.
func TestNotebookCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	good := write("good.jsonl", `{"type":"run","model":"m","question":"Q?","condition":"D","protocol":"bare"}`+"\n")
	trials := write("trials.jsonl", `{"model":"reference","condition":"A","task":"s-t1-1","rep":1}`+"\n")
	cut := write("cut.jsonl", `{"type":"run","model":"m","question":"Q?"}`+"\n"+"garbage\n"+`{"type":"end"}`+"\n")
	empty := write("empty.jsonl", "")
	out := filepath.Join(dir, "out.ipynb")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no trajectory", []string{"notebook", "--out", out}, "notebook: name the trajectory to read"},
		{"missing trajectory", []string{"notebook", filepath.Join(dir, "nope.jsonl"), "--out", out}, "notebook: the trajectory " + filepath.Join(dir, "nope.jsonl") + " does not exist"},
		{"a folder", []string{"notebook", dir, "--out", out}, "notebook: " + dir + " is a folder: name one trajectory file in it"},
		{"trials.jsonl", []string{"notebook", trials, "--out", out}, "notebook: " + trials + `: line 1: a JSON object without a "type", so not a trajectory event`},
		{"a bad line", []string{"notebook", cut, "--out", out}, "notebook: " + cut + ": line 2: not JSON"},
		{"empty", []string{"notebook", empty, "--out", out}, "notebook: " + empty + ": not a trajectory: the file is empty"},
		{"no --out", []string{"notebook", good}, "notebook: --out is required"},
		{"not .ipynb", []string{"notebook", good, "--out", filepath.Join(dir, "out.json")}, "does not end in .ipynb"},
		{"--out in a missing folder", []string{"notebook", good, "--out", filepath.Join(dir, "no", "out.ipynb")}, "the folder " + filepath.Join(dir, "no") + " does not exist"},
		{"two trajectories", []string{"notebook", good, trials, "--out", out}, `unexpected argument "` + trials + `": it takes one trajectory`},
		{"unknown flag", []string{"notebook", good, "--out", out, "--html"}, "unknown flag: --html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
			assert.Empty(t, got.stdout)
			assert.NoFileExists(t, out)
		})
	}

	got := runCLI(t, "", "notebook", "-h")
	assert.Equal(t, exitOK, got.code)
	assert.Contains(t, got.stderr, "ctxcode notebook run.jsonl --out run.ipynb")
	assert.Contains(t, got.stderr, "--force")
	got = runCLI(t, "", "help")
	assert.Contains(t, got.stdout, "  notebook  ")
}
