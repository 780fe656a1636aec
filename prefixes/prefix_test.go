package prefixes_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

func TestParse(t *testing.T) {
	p, err := prefixes.Parse("x.py", []byte("# name: demo\n# language: python\n# description: a demo\n# rules: be brief.\n"+
		"# rules: answer with ANSWER.\n# just a comment\n\n# %%\nx = 1\n\n# %% second\n\nx + 1\n# %%\n\n"))
	require.NoError(t, err)
	assert.Equal(t, "demo", p.Name)
	assert.Equal(t, kernel.Python, p.Language)
	assert.Equal(t, "a demo", p.Description)
	assert.Equal(t, "be brief. answer with ANSWER.", p.Rules)
	assert.Equal(t, []prefixes.Cell{{Code: "x = 1", Line: 9}, {Code: "x + 1", Line: 13}}, p.Cells)

	g, err := prefixes.Parse("dir/loader.go", []byte("// %%\nx := 41\n// %%\nx + 1\n"))
	require.NoError(t, err)
	assert.Equal(t, kernel.Go, g.Language, "a .go file is Go")
	assert.Equal(t, "loader", g.Name, "the name defaults to the file's")
	assert.Len(t, g.Cells, 2)
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"code before the first cell", "# name: x\nimport os\n# %%\n1\n", "bad.py:2: code before the first cell marker"},
		{"unknown language", "# language: ruby\n# %%\n1\n", `bad.py:1: unknown language "ruby"`},
		{"no cells", "# name: x\n", "bad.py:2: no cells"},
		{"only empty cells", "# %%\n\n# %%\n", "no cells"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prefixes.Parse("bad.py", []byte(tc.src))
			var pe *prefixes.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoad(t *testing.T) {
	assert.Contains(t, prefixes.Builtins(), "pm")
	p, err := prefixes.Load("pm")
	require.NoError(t, err)
	assert.Equal(t, "pm", p.Name)
	assert.Equal(t, "builtin:pm.py", p.Source)

	_, err = prefixes.Load("no-such-prefix")
	assert.ErrorContains(t, err, "no such built-in prefix (pm")

	f := filepath.Join(t.TempDir(), "mine.py")
	require.NoError(t, os.WriteFile(f, []byte("# %%\n1 + 1\n"), 0o644))
	p, err = prefixes.Load(f)
	require.NoError(t, err)
	assert.Equal(t, "mine", p.Name)

	// A notebook is a prefix too: its code cells.
	pm, err := prefixes.Load("pm")
	require.NoError(t, err)
	var cells []session.Cell
	for _, c := range pm.Cells {
		cells = append(cells, session.Cell{Code: c.Code})
	}
	nb, err := prefixes.ExportNotebook(pm, cells)
	require.NoError(t, err)
	f = filepath.Join(t.TempDir(), "pm.ipynb")
	require.NoError(t, os.WriteFile(f, nb, 0o644))
	p, err = prefixes.Load(f)
	require.NoError(t, err)
	assert.Equal(t, len(pm.Cells), len(p.Cells))
	assert.Equal(t, pm.Rules, p.Rules)
}

// TestBuildPM builds the pm prefix over a generated dataset: every output
// comes from the kernel, and the variables stay bound for the model.
func TestBuildPM(t *testing.T) {
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
	require.Len(t, cells, len(p.Cells))
	assert.Equal(t, "(3, 30, 8, 500, 2000)", cells[1].Result.Value)
	assert.Equal(t, "(['blocked', 'done', 'in_progress', 'review', 'todo'],\n ['commented', 'created', 'reassigned', 'status_changed'])", cells[2].Result.Value)
	assert.Contains(t, cells[4].Result.Value, "'estimate_hours'", "the last task shows every field")
	for i, c := range cells {
		assert.Equal(t, i+1, c.Result.Count)
	}
	res, err := k.Execute(context.Background(), "len([t for t in tasks if t['status'] == 'blocked']) > 0", kernel.ExecOptions{})
	require.NoError(t, err)
	assert.Equal(t, "True", res.Value, "the model continues with the bound variables")
}

func TestBuildFailures(t *testing.T) {
	k := kerneltest.Python(t, "")
	p, err := prefixes.Parse("broken.py", []byte("# %%\nx = 1\n# %%\n\nundefined_name\n"))
	require.NoError(t, err)
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{})
	var be *prefixes.BuildError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 2, be.Cell)
	assert.Equal(t, 5, be.Line)
	assert.Contains(t, err.Error(), "NameError: name 'undefined_name' is not defined")
	assert.Len(t, cells, 1, "the cells that ran are returned")

	g, err := prefixes.Parse("x.go", []byte("// %%\nx := 1\n"))
	require.NoError(t, err)
	_, err = prefixes.Build(context.Background(), k, g, kernel.ExecOptions{})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "written in go, but the kernel runs python"), err.Error())
	assert.False(t, errors.As(err, &be))
}

// TestNoBindControl: pm-nobind shows the same outputs as pm, and leaves no
// data variable bound.
func TestNoBindControl(t *testing.T) {
	dir := t.TempDir()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	_, err = datasets.Generate(tier, 2).Write(dir, true)
	require.NoError(t, err)
	build := func(name string) ([]string, kernel.Kernel) {
		k := kerneltest.Python(t, dir)
		p, err := prefixes.Load(name)
		require.NoError(t, err)
		cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
		require.NoError(t, err)
		var values []string
		for _, c := range cells {
			values = append(values, c.Result.Value)
		}
		return values, k
	}
	bound, _ := build("pm")
	unbound, k := build("pm-nobind")
	assert.Equal(t, bound, unbound, "the same demonstration")
	res, err := k.Execute(context.Background(), "[n for n in ('teams', 'users', 'projects', 'tasks', 'events', 'load') if n in dir()]", kernel.ExecOptions{})
	require.NoError(t, err)
	assert.Equal(t, "[]", res.Value, "no data variable survives")
}

// TestNoBindRulesAreTrue: the system message of B0 (eval over pm-nobind)
// says nothing of bound variables, and differs from B's (eval over pm) only
// in what is true of the namespace.
func TestNoBindRulesAreTrue(t *testing.T) {
	system := func(name string) (string, *prefixes.Prefix) {
		p, err := prefixes.Load(name)
		require.NoError(t, err)
		req, err := session.Render(session.Eval, p.Input(nil, "How many tasks are blocked?"))
		require.NoError(t, err)
		return req.Messages[0].Content, p
	}
	b, pm := system("pm")
	b0, nobind := system("pm-nobind")
	assert.False(t, pm.BindsNothing())
	assert.True(t, nobind.BindsNothing())
	assert.Contains(t, b, "still bound")
	assert.NotContains(t, b0, "still bound")
	assert.Empty(t, nobind.Rules, "B0's demonstration carries its habit; no rule says to reload the data")
	strip := func(s, rules string) string {
		s = strings.Replace(s, "; their variables are still bound: build on them", "", 1)
		if rules == "" {
			return s
		}
		return strings.Replace(s, "\n"+rules, "", 1)
	}
	assert.Equal(t, strip(b, pm.Rules), strip(b0, nobind.Rules), "the rules of B and B0 differ only in what is bound")
}

// TestInit writes a prefix for a mixed folder, and the prefix builds.
func TestInit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("class.jsonl", `{"id": 1, "kind": "a"}`+"\n"+`{"id": 2, "kind": "b"}`+"\n"+`{"id": 3, "kind": "a"}`+"\n"+`{"id": 4, "kind": "a"}`+"\n"+`{"id": 5, "kind": "b"}`+"\n")
	write("2024-budget.csv", "team,amount\nT01,10\nT02,20\n")
	write("config.json", `{"version": 3}`)
	write("notes.txt", "not data")
	write("broken.jsonl", "{not json}\n")

	src, skipped, err := initRecords(dir)
	require.NoError(t, err)
	assert.ElementsMatch(t, []prefixes.Skipped{
		{File: "broken.jsonl", Reason: "line 1 is not a JSON object: invalid character 'n' looking for beginning of object key string"},
		{File: "notes.txt", Reason: "not .jsonl, .json, .csv or .tsv"},
	}, skipped)
	text := string(src)
	assert.Contains(t, text, `class_ = load_jsonl("class.jsonl")`, "a keyword is made a valid name")
	assert.Contains(t, text, `data_2024_budget = load_csv("2024-budget.csv")`, "a leading digit is made a valid name")

	p, err := prefixes.Parse("init.py", src)
	require.NoError(t, err)
	k := kerneltest.Python(t, dir)
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(t, err, text)
	assert.Equal(t, "(2, 5, 1)", cells[1].Result.Value)
	assert.Contains(t, cells[3].Result.Value, `'class_.kind': ['a', 'b']`, "a field with few values shows them")

	_, skipped, err = initRecords(t.TempDir())
	assert.ErrorContains(t, err, "no loadable file")
	assert.Empty(t, skipped)
	_, _, err = prefixes.Init(dir, kernel.Language("ruby"))
	assert.ErrorContains(t, err, "writes python and go prefixes")
}

func TestSkillDocument(t *testing.T) {
	dir := t.TempDir()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	_, err = datasets.Generate(tier, 1).Write(dir, true)
	require.NoError(t, err)
	doc, err := prefixes.SkillDocument(dir, false)
	require.NoError(t, err)
	assert.Contains(t, doc, "## data/tasks.jsonl\n\n500 lines; fields: assignee_id, created_at, due_date, estimate_hours, id, priority, project_id, reporter_id, status, title.\n")
	assert.Contains(t, doc, "## data/events.jsonl\n\n2000 lines;")
	assert.Contains(t, doc, `"id":"E002000"`, "the last record is the sample")
	assert.NotContains(t, doc, "manifest")
	assert.NotContains(t, doc, "ANSWER", "how to answer is the protocol's business, not the data's")

	// A task file is never described: its sample line would be a gold.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "questions.jsonl"),
		[]byte(`{"id": "q1", "question": "How many teams?", "answer_type": "integer", "gold": 3}`+"\n"), 0o644))
	doc, err = prefixes.SkillDocument(dir, false)
	require.NoError(t, err)
	assert.NotContains(t, doc, "questions.jsonl")
	assert.NotContains(t, doc, "How many teams?")
	_, err = prefixes.SkillDocument(t.TempDir(), false)
	assert.ErrorContains(t, err, "no loadable file")

	// A CSV shows its header as it stands, to read the sample line by.
	csvDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(csvDir, "sales.csv"), []byte("\ufeffregion,amount\nnorth,10\nsouth,5\n"), 0o644))
	doc, err = prefixes.SkillDocument(csvDir, false)
	require.NoError(t, err)
	assert.Contains(t, doc, "## data/sales.csv\n\n3 lines; the first is the header: region,amount.\n\nLast line:\n\n    south,5\n")
}
