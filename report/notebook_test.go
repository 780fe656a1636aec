package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/report"
	"github.com/ctxcode/ctxcode/session"
)

// The tests of trajectory notebooks make their trajectories for real:
// agent.Run over a local Python kernel and the s tier (seed 1), with the
// reference model or a scripted one.

// pmData writes the s tier once per test, in a folder of its own.
func pmData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	_, err = datasets.Generate(tier, 1).Write(dir, true)
	require.NoError(t, err)
	return dir
}

// nbPython finds a Python that has nbformat, as the tests of
// prefixes.ExportNotebook do (their helpers are in package prefixes_test).
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
	testenv.SkipOrFail(t, "no python3 with nbformat (tried /usr/bin/python3 and python3 on PATH): install python3-nbformat, or run scripts/setup-host.sh")
	return ""
}

// validate checks a notebook with nbformat's own validator, and that
// Jupyter would write the same bytes.
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
		Kernelspec map[string]string `json:"kernelspec"`
		Ctxcode    struct {
			Runs []map[string]string `json:"runs"`
		} `json:"ctxcode"`
	} `json:"metadata"`
	Cells []nbCell `json:"cells"`
}

type nbCell struct {
	ID             string     `json:"id"`
	CellType       string     `json:"cell_type"`
	ExecutionCount *int       `json:"execution_count"`
	Source         []string   `json:"source"`
	Outputs        []nbOutput `json:"outputs"`
}

func (c nbCell) text() string { return strings.Join(c.Source, "") }

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

// code is the doc's code cells.
func (d nbDoc) code() []nbCell {
	var cs []nbCell
	for _, c := range d.Cells {
		if c.CellType == "code" {
			cs = append(cs, c)
		}
	}
	return cs
}

// markdown is the text of the doc's Markdown cells.
func (d nbDoc) markdown() []string {
	var ms []string
	for _, c := range d.Cells {
		if c.CellType == "markdown" {
			ms = append(ms, c.text())
		}
	}
	return ms
}

// find is the index of the first cell whose text contains s, or -1.
func (d nbDoc) find(s string) int {
	for i, c := range d.Cells {
		if strings.Contains(c.text(), s) {
			return i
		}
	}
	return -1
}

// script is an llm.Model that sends its replies in order.
type script struct {
	replies []llm.Reply
	next    int
}

var _ llm.Model = (*script)(nil)

func (s *script) Name() string { return "scripted" }

func (s *script) Complete(_ context.Context, _ session.Request) (llm.Reply, error) {
	if s.next >= len(s.replies) {
		return llm.Reply{}, errors.New("script: no reply left")
	}
	r := s.replies[s.next]
	s.next++
	if r.Usage.PromptTokens == 0 {
		r.Usage = llm.Usage{PromptTokens: 700 + 100*s.next, CompletionTokens: 20}
	}
	return r, nil
}

func text(s string) llm.Reply { return llm.Reply{Content: s, FinishReason: "stop"} }

func call(name, args string) session.ToolCall {
	return session.ToolCall{ID: "c-" + name, Name: name, Arguments: args}
}

// trajectory runs model in s and returns the result and the trajectory,
// graded when task is not nil.
func trajectory(t *testing.T, s *agent.Session, model llm.Model, cfg agent.Config, task *datasets.Task, question string) (*agent.Result, []byte) {
	t.Helper()
	var buf bytes.Buffer
	tr := agent.NewTrajectory(&buf)
	info := agent.Info{Model: model.Name(), Question: question}
	if task != nil {
		info.Task, info.Question = task.ID, task.Question
	}
	res, err := agent.Run(context.Background(), s, model, cfg, info, tr, nil)
	require.NoError(t, err)
	if task != nil {
		ok, why := datasets.Grade(*task, res.Answer)
		tr.Grade(task.ID, task.Gold, res.SetGrade(ok, why))
	}
	require.NoError(t, tr.Err())
	return res, buf.Bytes()
}

// prefixSession is a fresh kernel over data with prefix name, to be built
// by Run.
func prefixSession(t *testing.T, data, name string) *agent.Session {
	t.Helper()
	p, err := prefixes.Load(name)
	require.NoError(t, err)
	return &agent.Session{Kernel: kerneltest.Python(t, data), Prefix: p}
}

func notebook(t *testing.T, python string, traj []byte) nbDoc {
	t.Helper()
	nb, err := report.TrajectoryNotebook(bytes.NewReader(traj))
	require.NoError(t, err)
	validate(t, python, nb)
	again, err := report.TrajectoryNotebook(bytes.NewReader(traj))
	require.NoError(t, err)
	assert.Equal(t, string(nb), string(again), "the same trajectory gives the same bytes")
	d := decode(t, nb)
	assert.Equal(t, 4, d.NBFormat)
	assert.Equal(t, 5, d.NBFormatMinor)
	assert.Equal(t, "python3", d.Metadata.Kernelspec["name"])
	return d
}

// TestTrajectoryNotebookReference makes a trajectory of each condition with
// the reference model, graded, and writes it as a notebook: nbformat takes
// it, the header names the run, the prefix's cells are the ones the kernel
// built, with its execution counts and outputs, the model's cell holds
// the code that ran with the kernel's execution count and its output, and
// the last cell the answer with its grade. The trajectories one after
// another (as ask --task all writes them) make one notebook of sections.
func TestTrajectoryNotebookReference(t *testing.T) {
	python := nbPython(t)
	data := pmData(t)
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	tasks, err := datasets.Tasks(datasets.Generate(tier, 1))
	require.NoError(t, err)
	var task *datasets.Task
	for i := range tasks {
		if tasks[i].ID == "s-t1-1" {
			task = &tasks[i]
		}
	}
	require.NotNil(t, task)
	reference := func(kind datasets.SolutionKind) llm.Model {
		solutions := map[string]string{}
		for _, tk := range tasks {
			code, err := datasets.Reference(tk, kind)
			require.NoError(t, err)
			solutions[tk.Question] = code
		}
		return llm.NewReference(solutions, session.O200kBase)
	}
	gold, err := json.Marshal(task.Gold)
	require.NoError(t, err)

	var all []byte
	for _, tc := range []struct {
		condition string
		protocol  session.Protocol
		prefix    string // "" for condition A
		source    string
	}{
		{"D", session.Bare, "pm", "executed"},
		{"C", session.TranscriptText, "pm", "executed"},
		{"B", session.Eval, "pm", "executed"},
		{"B0", session.Eval, "pm-nobind", "executed"},
		{"A", session.CLI, "", "stated"},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			var s *agent.Session
			kind := datasets.PythonLoad
			switch tc.prefix {
			case "":
				s = &agent.Session{Kernel: kerneltest.Python(t, data), DataDir: data}
			case "pm":
				kind = datasets.PythonPM
				fallthrough
			default:
				s = prefixSession(t, data, tc.prefix)
			}
			res, traj := trajectory(t, s, reference(kind), agent.Config{Protocol: tc.protocol}, task, "")
			require.Equal(t, agent.Answered, res.Status, "%v", res.Err)
			all = append(all, traj...)
			d := notebook(t, python, traj)

			require.Equal(t, []map[string]string{{"condition": tc.condition, "model": "reference", "task": "s-t1-1", "question": task.Question}},
				d.Metadata.Ctxcode.Runs)
			head := d.Cells[0]
			assert.Equal(t, "markdown", head.CellType)
			assert.Equal(t, "cell-1", head.ID)
			for _, want := range []string{"# Condition " + tc.condition + " · reference · task s-t1-1", "**model:** `reference`",
				"protocol " + string(tc.protocol), "\n> How many tasks in project", "**budgets:** 12 turns, 200000 prompt tokens"} {
				assert.Contains(t, head.text(), want)
			}

			code := d.code()
			first := 0
			if tc.prefix != "" {
				// The trajectory records the built cells' results: the
				// notebook's prefix is the session the kernel built, as
				// prefixes.ExportNotebook writes it from the same cells.
				i := d.find("## Prefix `" + tc.prefix + "`")
				require.Equal(t, 1, i, "the prefix follows the header")
				assert.Contains(t, d.Cells[i].text(), "with the outputs the kernel gave")
				assert.NotContains(t, d.Cells[i].text(), "not recorded")
				built := s.Cells
				require.NotEmpty(t, built, "Run built the prefix in the session")
				exported, err := prefixes.ExportNotebook(s.Prefix, built)
				require.NoError(t, err)
				want := decode(t, exported).code()
				require.Len(t, want, len(built))
				require.Greater(t, len(code), len(built))
				shown := 0
				for j, c := range built {
					assert.Equal(t, strings.TrimRight(c.Code, "\n"), code[j].text())
					require.NotNil(t, code[j].ExecutionCount, "cell %d", j)
					assert.Equal(t, c.Result.Count, *code[j].ExecutionCount, "the kernel's execution count")
					assert.Equal(t, j+1, *code[j].ExecutionCount)
					assert.Equal(t, want[j].Outputs, code[j].Outputs, "cell %d: the kernel's outputs", j)
					if c.Result.Value != "" {
						v := code[j].Outputs[len(code[j].Outputs)-1]
						assert.Equal(t, c.Result.Value, strings.Join(v.Data["text/plain"], ""), "cell %d: the kernel's value", j)
					}
					shown += len(code[j].Outputs)
				}
				assert.Positive(t, shown, "the prefix's cells show something")
				first = len(built)
			} else {
				assert.Contains(t, head.text(), "**skill document:**")
				assert.Equal(t, -1, d.find("## Prefix"))
			}

			require.Len(t, code, first+1, "the prefix's cells and the model's one")
			ran := res.Cells[0]
			cell := code[first]
			assert.Contains(t, d.Cells[d.find("## Turn 1")].text(), "prompt tokens")
			want := "ANSWER: " + string(gold)
			if tc.prefix == "" {
				assert.Equal(t, "%%bash\n"+ran.Code, cell.text())
				assert.Nil(t, cell.ExecutionCount, "a command has no execution count")
				require.Len(t, cell.Outputs, 1)
				assert.Equal(t, nbOutput{OutputType: "stream", Name: "stdout", Text: []string{ran.Result.Stdout}}, cell.Outputs[0])
				assert.Equal(t, want+"\n", ran.Result.Stdout)
				assert.NotEqual(t, -1, d.find("**ctxcode:** exit status 0"))
				assert.Contains(t, d.Cells[d.find("## Turn 2")].text(), "The model's message:\n\n> ANSWER: "+string(gold))
			} else {
				assert.Equal(t, ran.Code, cell.text())
				require.NotNil(t, cell.ExecutionCount)
				assert.Equal(t, ran.Result.Count, *cell.ExecutionCount)
				assert.Equal(t, first+1, *cell.ExecutionCount, "the kernel counts the prefix's cells first")
				require.Len(t, cell.Outputs, 1)
				assert.Equal(t, "display_data", cell.Outputs[0].OutputType)
				assert.Equal(t, []string{want}, cell.Outputs[0].Data["text/plain"])
			}

			last := d.Cells[len(d.Cells)-1].text()
			for _, w := range []string{"## Answer", "`" + res.Answer + "`, " + tc.source, "**status:** `answered`",
				"**grade:** **correct** (counts in accuracy)", "**gold:** `" + string(gold) + "`"} {
				assert.Contains(t, last, w)
			}
		})
	}

	d := notebook(t, python, all)
	require.Len(t, d.Metadata.Ctxcode.Runs, 5)
	for i, c := range []string{"D", "C", "B", "B0", "A"} {
		assert.NotEqual(t, -1, d.find("# Run "+string(rune('1'+i))+" of 5: condition "+c), c)
	}
	answers := 0
	for _, m := range d.markdown() {
		if strings.HasPrefix(m, "## Answer") {
			answers++
		}
	}
	assert.Equal(t, 5, answers)
}

// TestTrajectoryNotebookOutputs: what a cell printed, its value, its
// error, an output cut to the budget and ANSWER are the kernel's own. A
// trajectory records them (a cell's stdout, stderr, value and error beside
// the output the model read), so the notebook has stdout and stderr apart
// with the kernel's exact text and an output cut to the budget whole, with
// the note that the model read it cut. An older trajectory, without those
// fields, has them read back from the text the model read: stdout and
// stderr one stream, the cut where it is.
func TestTrajectoryNotebookOutputs(t *testing.T) {
	python := nbPython(t)
	data := pmData(t)
	m := &script{replies: []llm.Reply{
		text("print('hello')\nimport sys; print('oops', file=sys.stderr)\nlen(tasks)"),
		text("teams"),
		text("print('before')\nnope + 1"),
		text("for i in range(3000): print(i)"),
		text("ANSWER(len(tasks))"),
	}}
	s := prefixSession(t, data, "pm")
	res, traj := trajectory(t, s, m, agent.Config{}, nil, "How many tasks are there?")
	require.Equal(t, agent.Answered, res.Status, "%v", res.Err)
	require.Len(t, res.Cells, 5)
	require.Len(t, s.Cells, 6, "the pm prefix, built")

	hello := res.Cells[0].Result
	require.Equal(t, "hello\n", hello.Stdout)
	require.Equal(t, "oops\n", hello.Stderr)
	require.Equal(t, "500", hello.Value)
	teams := res.Cells[1].Result.Value
	require.Contains(t, teams, "\n", "a value of several lines")
	failed := res.Cells[2].Result
	require.Equal(t, "before\n", failed.Stdout)
	require.NotNil(t, failed.Error)
	require.Equal(t, "NameError", failed.Error.Name)
	long := res.Cells[3].Result
	require.Greater(t, len(long.Stdout), 2000, "more than the output budget")

	// check checks what both paths share and returns the model's code
	// cells, after the prefix's 6.
	check := func(t *testing.T, d nbDoc) []nbCell {
		t.Helper()
		code := d.code()
		require.Len(t, code, 6+5)
		cells := code[6:]
		for i, c := range cells {
			assert.Equal(t, res.Cells[i].Code, c.text())
			require.NotNil(t, c.ExecutionCount)
			assert.Equal(t, res.Cells[i].Result.Count, *c.ExecutionCount)
			assert.Equal(t, 7+i, *c.ExecutionCount)
		}
		require.Len(t, cells[1].Outputs, 1)
		assert.Equal(t, "execute_result", cells[1].Outputs[0].OutputType)
		assert.Equal(t, teams, strings.Join(cells[1].Outputs[0].Data["text/plain"], ""))

		e := cells[2].Outputs[len(cells[2].Outputs)-1]
		assert.Equal(t, nbOutput{OutputType: "error", Ename: failed.Error.Name, Evalue: failed.Error.Value,
			Traceback: strings.Split(failed.Error.Traceback, "\n")}, e)

		printed := strings.Join(cells[3].Outputs[0].Text, "")
		assert.True(t, strings.HasPrefix(printed, "0\n1\n2\n"))
		assert.True(t, strings.HasSuffix(printed, "2998\n2999\n"))
		cutNote := d.Cells[d.find("for i in range")+1].text()
		assert.True(t, strings.HasPrefix(cutNote, "**ctxcode:** the output the model read was cut to the budget: "), "the note of the cut, alone: %s", cutNote)
		assert.Contains(t, cutNote, "\\_stdout\\[10\\]", "the note says where the whole output is")

		assert.Equal(t, []nbOutput{{OutputType: "display_data", Data: map[string][]string{"text/plain": {"ANSWER: 500"}}}}, cells[4].Outputs)
		last := d.Cells[len(d.Cells)-1].text()
		assert.Contains(t, last, "`500`, executed")
		assert.Contains(t, last, "**grade:** not graded")
		return cells
	}

	t.Run("recorded", func(t *testing.T) {
		d := notebook(t, python, traj)
		assert.Contains(t, d.Cells[d.find("## Prefix")].text(), "with the outputs the kernel gave")
		for j, c := range d.code()[:6] {
			require.NotNil(t, c.ExecutionCount)
			assert.Equal(t, s.Cells[j].Result.Count, *c.ExecutionCount)
		}
		cells := check(t, d)
		assert.Equal(t, []nbOutput{
			{OutputType: "stream", Name: "stdout", Text: []string{hello.Stdout}},
			{OutputType: "stream", Name: "stderr", Text: []string{hello.Stderr}},
			{OutputType: "execute_result", Data: map[string][]string{"text/plain": {hello.Value}}, ExecutionCount: cells[0].ExecutionCount},
		}, cells[0].Outputs, "stdout and stderr apart, as the kernel gave them")
		require.Len(t, cells[2].Outputs, 2)
		assert.Equal(t, nbOutput{OutputType: "stream", Name: "stdout", Text: []string{failed.Stdout}}, cells[2].Outputs[0])
		require.Len(t, cells[3].Outputs, 1)
		printed := strings.Join(cells[3].Outputs[0].Text, "")
		assert.Equal(t, long.Stdout, printed, "the kernel's own stdout, uncut")
		assert.NotContains(t, printed, "[ctxcode: ")
	})

	t.Run("old trajectory", func(t *testing.T) {
		d := notebook(t, python, oldTrajectory(t, traj))
		prefix := d.Cells[d.find("## Prefix")].text()
		assert.Contains(t, prefix, "**Their outputs were not recorded**")
		for j, c := range d.code()[:6] {
			assert.Equal(t, strings.TrimRight(s.Cells[j].Code, "\n"), c.text(), "the prefix read again")
			assert.Nil(t, c.ExecutionCount, "not recorded, so not shown")
			assert.Empty(t, c.Outputs)
		}
		cells := check(t, d)
		assert.Equal(t, []nbOutput{
			{OutputType: "stream", Name: "stdout", Text: []string{"hello\n", "oops\n"}},
			{OutputType: "execute_result", Data: map[string][]string{"text/plain": {"500"}}, ExecutionCount: cells[0].ExecutionCount},
		}, cells[0].Outputs, "stdout and stderr are one stream in the text the model read")
		require.Len(t, cells[2].Outputs, 2)
		assert.Equal(t, nbOutput{OutputType: "stream", Name: "stdout", Text: []string{"before\n"}}, cells[2].Outputs[0])
		require.Len(t, cells[3].Outputs, 1)
		printed := strings.Join(cells[3].Outputs[0].Text, "")
		assert.Contains(t, printed, "[ctxcode: ", "the cut is marked where it is")
		assert.Less(t, len(printed), 2200, "what the model read, within the budget")
	})
}

// oldTrajectory is traj as agent.Run wrote it before it recorded the
// kernel's results: without the prefix event's "results" and the cell
// events' "stdout", "stderr", "value" and "error". The other fields are
// the same, so this is what older trajectories on disk hold.
func oldTrajectory(t *testing.T, traj []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	stripped := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimRight(traj, "\n"), []byte("\n")) {
		var ev map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(line, &ev))
		var typ string
		require.NoError(t, json.Unmarshal(ev["type"], &typ))
		var drop []string
		switch typ {
		case "prefix":
			drop = []string{"results"}
		case "cell":
			drop = []string{"stdout", "stderr", "value", "error"}
		}
		for _, k := range drop {
			if _, ok := ev[k]; ok {
				delete(ev, k)
				stripped[k]++
			}
		}
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		out.Write(append(b, '\n'))
	}
	for _, k := range []string{"results", "stdout", "stderr", "value", "error"} {
		require.Positive(t, stripped[k], "the new trajectory records %q", k)
	}
	return out.Bytes()
}

// TestTrajectoryNotebookRepairAndRestart: a message repaired (fences and
// prose taken away) and a kernel that died and was restarted each show
// their note; the prose the repair took out is the model's words.
func TestTrajectoryNotebookRepairAndRestart(t *testing.T) {
	python := nbPython(t)
	data := pmData(t)
	m := &script{replies: []llm.Reply{
		text("Let me count the tasks first.\n```python\nlen(tasks)\n```\nThen I will answer."),
		text("import os; os._exit(3)"),
		text("ANSWER(len(tasks))"),
	}}
	res, traj := trajectory(t, prefixSession(t, data, "pm"), m, agent.Config{}, nil, "How many tasks are there?")
	require.Equal(t, agent.Answered, res.Status, "%v", res.Err)
	require.Equal(t, 1, res.Restarts)
	d := notebook(t, python, traj)

	turn := d.Cells[d.find("## Turn 1")].text()
	assert.Contains(t, turn, "The model's words outside its code:\n\n> Let me count the tasks first.\n>\n> Then I will answer.")
	assert.NotContains(t, turn, "len(tasks)")
	i := d.find("## Turn 1") + 1
	require.Equal(t, "code", d.Cells[i].CellType)
	assert.Equal(t, "len(tasks)", d.Cells[i].text(), "the code that ran")
	notes := d.Cells[i+1].text()
	assert.Equal(t, "**ctxcode:**\n\n- removed the Markdown fences around your code\n- removed the prose around the code block; only the code runs", notes)

	// The cell that killed the kernel, its notes, then the restart it
	// caused (the trajectory writes the restart first).
	j := d.find("## Turn 2")
	require.Greater(t, j, i)
	died := d.Cells[j+1]
	assert.Equal(t, "code", died.CellType)
	assert.Equal(t, "import os; os._exit(3)", died.text(), "a code cell, not escaped")
	assert.Nil(t, died.ExecutionCount, "the cell never finished")
	assert.Empty(t, died.Outputs)
	assert.Contains(t, d.Cells[j+2].text(), "**ctxcode:** the kernel died (")
	assert.Contains(t, d.Cells[j+2].text(), "and was restarted; the prefix ran again (6 cells)")
	restart := d.Cells[j+3]
	assert.Equal(t, "markdown", restart.CellType)
	assert.True(t, strings.HasPrefix(restart.text(), "**ctxcode: the kernel died and was restarted** (restart 1 of the run): "), restart.text())
	assert.Equal(t, "## Turn 3", strings.SplitN(d.Cells[j+4].text(), "\n", 2)[0], "the restart ends the turn")

	after := d.code()[len(d.code())-1]
	require.NotNil(t, after.ExecutionCount)
	// The new kernel ran the prefix's 6 cells and the harness's listing of
	// the names bound again: the kernel said 8.
	assert.Equal(t, res.Cells[len(res.Cells)-1].Result.Count, *after.ExecutionCount)
	assert.Equal(t, 8, *after.ExecutionCount)
	assert.Contains(t, d.Cells[len(d.Cells)-1].text(), "1 kernel restart")
}

// TestTrajectoryNotebookCLI: condition A's reads and bash calls are code
// cells with the lines and the output they returned, the prose beside the
// calls is the model's words, a call with bad arguments is shown as it
// came, and a command's exit status is a note.
func TestTrajectoryNotebookCLI(t *testing.T) {
	python := nbPython(t)
	data := pmData(t)
	m := &script{replies: []llm.Reply{
		{Content: "I will look at the files first.", ToolCalls: []session.ToolCall{call("read", `{"path":"data/teams.jsonl","limit":2}`)}, FinishReason: "tool_calls"},
		{ToolCalls: []session.ToolCall{call("bash", `{"command":"wc -l < data/tasks.jsonl; echo to-stderr >&2; exit 3"}`)}, FinishReason: "tool_calls"},
		{ToolCalls: []session.ToolCall{call("bash", `{"command": 7}`)}, FinishReason: "tool_calls"},
		text("ANSWER: 500"),
	}}
	s := &agent.Session{Kernel: kerneltest.Python(t, data), DataDir: data}
	res, traj := trajectory(t, s, m, agent.Config{Protocol: session.CLI}, nil, "How many tasks are there?")
	require.Equal(t, agent.Answered, res.Status, "%v", res.Err)
	require.Len(t, res.Cells, 3)
	d := notebook(t, python, traj)
	assert.Contains(t, d.Cells[0].text(), "# Condition A · scripted")
	assert.Equal(t, -1, d.find("## Prefix"))

	code := d.code()
	require.Len(t, code, 2, "the read and the bash call that ran")
	read := code[0]
	assert.Equal(t, `# read {"path":"data/teams.jsonl","limit":2}`, read.text())
	assert.Nil(t, read.ExecutionCount)
	require.Len(t, read.Outputs, 1)
	lines := strings.Join(read.Outputs[0].Text, "")
	assert.Equal(t, strings.TrimRight(res.Cells[0].Result.Stdout, "\n")+"\n", lines)
	assert.True(t, strings.HasPrefix(lines, "     1\t{"), lines)
	assert.Contains(t, d.Cells[d.find("## Turn 1")].text(), "The model's words outside its code:\n\n> I will look at the files first.")

	bash := code[1]
	assert.Equal(t, "%%bash\nwc -l < data/tasks.jsonl; echo to-stderr >&2; exit 3", bash.text())
	require.Len(t, bash.Outputs, 1)
	assert.Equal(t, nbOutput{OutputType: "stream", Name: "stdout", Text: []string{"500\n", "to-stderr\n"}}, bash.Outputs[0])
	i := d.find("%%bash")
	assert.Equal(t, "**ctxcode:** exit status 3", d.Cells[i+1].text())

	bad := d.Cells[d.find("## Turn 3")+1].text()
	assert.Equal(t, "The model called `bash` with\n\n```json\n{\"command\": 7}\n```", bad)
	assert.Contains(t, d.Cells[d.find("## Turn 3")+2].text(), "**ctxcode:**")

	assert.Contains(t, d.Cells[d.find("## Turn 4")].text(), "The model's message:\n\n> ANSWER: 500")
	assert.Contains(t, d.Cells[len(d.Cells)-1].text(), "`500`, stated")
}

// TestTrajectoryNotebookRecordedOutputs: when the trajectory records the
// kernel's results (the prefix event's results, a cell's stdout, stderr,
// value and error), the notebook has them as they are, stdout and stderr
// apart; a prefix that cannot be read again, or has changed, is said so.
func TestTrajectoryNotebookRecordedOutputs(t *testing.T) {
	python := nbPython(t)
	run := func(prefix string) string {
		return `{"type":"run","time":"2026-01-01T00:00:00Z","model":"m","question":"What is x?","condition":"D","protocol":"bare",` +
			`"prefix":` + prefix + `,"budgets":{"max_turns":12,"max_prompt_tokens":200000,"cell_timeout_ms":30000,"output_budget":2000,"max_restarts":3}}` + "\n"
	}
	rest := `{"type":"call","time":"2026-01-01T00:00:01Z","turn":1,"request_messages":6,"usage":{"prompt_tokens":700,"completion_tokens":9},"finish_reason":"stop","content":"print('a')\nx"}
{"type":"cell","time":"2026-01-01T00:00:01Z","turn":1,"count":3,"code":"print('a')\nx","status":"ok","output":"a\nb\nOut[3]: 1","stdout":"a\n","stderr":"b\n","value":"1","elapsed_ms":1}
{"type":"call","time":"2026-01-01T00:00:02Z","turn":2,"request_messages":8,"usage":{"prompt_tokens":720,"completion_tokens":4},"finish_reason":"stop","content":"y"}
{"type":"cell","time":"2026-01-01T00:00:02Z","turn":2,"count":4,"code":"y","status":"error","output":"Cell In[4], line 1\n    y\nNameError: name 'y' is not defined","error":{"name":"NameError","value":"name 'y' is not defined","traceback":"Cell In[4], line 1\n    y\nNameError: name 'y' is not defined"},"elapsed_ms":1}
{"type":"end","time":"2026-01-01T00:00:03Z","status":"max_turns","turns":2,"context_tokens":1420,"output_tokens":13,"wall_ms":3000,"setup_ms":5,"error":""}
`
	recorded := run(`{"name":"mine","source":"/nonexistent/mine.py","sha256":"abc","cells":2}`) +
		`{"type":"prefix","time":"2026-01-01T00:00:00Z","cells":2,"setup_ms":5,"results":[` +
		`{"code":"x = 1\nx","count":1,"status":"ok","stdout":"","stderr":"","value":"1","error":null,"answer":null},` +
		`{"code":"print('hi')","count":2,"status":"ok","stdout":"hi\n","stderr":"","value":"","error":null,"answer":null}]}` + "\n" + rest
	d := notebook(t, python, []byte(recorded))
	code := d.code()
	require.Len(t, code, 4)
	assert.Contains(t, d.Cells[1].text(), "the prefix's 2 cells, set up in 5 ms (the time before the model's first message: the kernel's start and the build, "+
		"or a bench trial's wait for a warm kernel, its start and build included when none was warm), with the outputs the kernel gave")
	assert.Equal(t, "x = 1\nx", code[0].text())
	one := 1
	assert.Equal(t, []nbOutput{{OutputType: "execute_result", Data: map[string][]string{"text/plain": {"1"}}, ExecutionCount: &one}}, code[0].Outputs)
	assert.Equal(t, []nbOutput{{OutputType: "stream", Name: "stdout", Text: []string{"hi\n"}}}, code[1].Outputs)
	three := 3
	assert.Equal(t, []nbOutput{
		{OutputType: "stream", Name: "stdout", Text: []string{"a\n"}},
		{OutputType: "stream", Name: "stderr", Text: []string{"b\n"}},
		{OutputType: "execute_result", Data: map[string][]string{"text/plain": {"1"}}, ExecutionCount: &three},
	}, code[2].Outputs)
	assert.Equal(t, []nbOutput{{OutputType: "error", Ename: "NameError", Evalue: "name 'y' is not defined",
		Traceback: []string{"Cell In[4], line 1", "    y", "NameError: name 'y' is not defined"}}}, code[3].Outputs)
	last := d.Cells[len(d.Cells)-1].text()
	assert.Contains(t, last, "No answer.")
	assert.Contains(t, last, "**status:** `max_turns`")

	for _, tc := range []struct{ name, prefix, want string }{
		{"missing", `{"name":"mine","source":"/nonexistent/mine.py","sha256":"abc","cells":2}`, "its cells are not shown: it could not be read again (prefix "},
		{"changed", `{"name":"pm","source":"builtin:pm.py","sha256":"0123456789abcdef0123","cells":6}`,
			"its cells are not shown: the prefix at builtin:pm.py has changed since the run (its cells' sha256 is "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := notebook(t, python, []byte(run(tc.prefix)+rest))
			assert.Contains(t, d.Cells[1].text(), "## Prefix")
			assert.Contains(t, d.Cells[1].text(), tc.want)
			assert.Len(t, d.code(), 2, "the model's cells only")
		})
	}
}

// TestTrajectoryNotebookNotATrajectory: a file that is not a trajectory is
// a *session.TrajectoryError that names its line; a last line cut short (a
// killed run) is not an error, and the notebook says so.
func TestTrajectoryNotebookNotATrajectory(t *testing.T) {
	run := `{"type":"run","time":"2026-01-01T00:00:00Z","model":"m","question":"Q?","condition":"D","protocol":"bare"}` + "\n"
	for _, tc := range []struct {
		name, input string
		line        int
		want        string
		event       bool // the line is an event, with a field that does not read
	}{
		{"empty", "", 0, "not a trajectory: the file is empty", false},
		{"blank lines", "\n\n", 0, "the file is empty", false},
		{"a trials.jsonl line", `{"model":"reference","condition":"A","task":"s-t1-1"}` + "\n", 1, `line 1: a JSON object without a "type"`, false},
		{"run.json", "{\n  \"format\": 1\n}\n", 1, "line 1: not JSON (", false},
		{"not an object", "[1, 2]\n", 1, "line 1: not a JSON object", false},
		{"type not a string", `{"type": 7}` + "\n", 1, "line 1: the event's type is not a string", false},
		{"no run first", `{"type":"cell","turn":1}` + "\n", 1, `line 1: the first event is "cell"; a trajectory starts with a "run" event`, false},
		{"a bad field", run + `{"type":"call","turn":"one"}` + "\n", 2, "line 2: a call event that does not read: ", true},
		{"garbage inside", run + "\n" + "garbage\n" + `{"type":"end","status":"answered"}` + "\n", 3, "line 3: not JSON (", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.TrajectoryNotebook(strings.NewReader(tc.input))
			var te *session.TrajectoryError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tc.line, te.Line)
			assert.Contains(t, err.Error(), tc.want)
			if !tc.event {
				assert.Contains(t, err.Error(), "ctxcode ask --trajectory F", "says what a trajectory is")
			}
		})
	}

	t.Run("cut last line", func(t *testing.T) {
		python := nbPython(t)
		d := notebook(t, python, []byte(run+`{"type":"call","turn":1,"content":"1 + 1"}`+"\n"+`{"type":"cell","turn":1,"count":3,"co`))
		assert.NotEqual(t, -1, d.find("ends in a line cut short (line 3)"))
		assert.NotEqual(t, -1, d.find("the run did not end"))
	})
}
