package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// The fixture in InfiAgent-DABench's layout: five questions on two tables
// of invented data (one UTF-8 with a byte-order mark and CRLF lines, one
// Latin-1), one question without labels; and solutions for the four that
// have them.
var (
	dabenchDir       = filepath.Join("..", "testdata", "dabench")
	dabenchSolutions = filepath.Join(dabenchDir, "solutions.jsonl")
	dabenchGolden    = filepath.Join("..", "testdata", "golden", "dabench", "tasks.jsonl")
)

// importFixture imports the fixture with its solutions and writes it as
// out/tasks.jsonl, whose path it returns.
func importFixture(t *testing.T) (*DABenchImport, string) {
	t.Helper()
	im, err := ImportDABench(dabenchDir)
	require.NoError(t, err)
	more, err := im.AttachSolutions(dabenchSolutions)
	require.NoError(t, err)
	require.Empty(t, more)
	out := filepath.Join(t.TempDir(), "tasks.jsonl")
	require.NoError(t, im.CheckOutputs(out, false))
	tables := TablesDirFor(out)
	require.NoError(t, im.WriteTables(tables))
	b, err := im.TaskFile(filepath.Base(tables))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, b, 0o644))
	return im, out
}

func TestImportDABenchFixture(t *testing.T) {
	im, out := importFixture(t)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(dabenchGolden), 0o755))
		require.NoError(t, os.WriteFile(dabenchGolden, got, 0o644))
	}
	want, err := os.ReadFile(dabenchGolden)
	require.NoError(t, err, "run go test ./bench -run TestImportDABenchFixture -update to write it")
	assert.Equal(t, string(want), string(got), "the task file differs from %s (-update rewrites it)", dabenchGolden)

	// The question without labels is the one problem, at its line.
	require.Len(t, im.Problems, 1)
	p := im.Problems[0]
	assert.Equal(t, filepath.Join(dabenchDir, "fix-questions.jsonl"), p.File)
	assert.Equal(t, 5, p.Line)
	assert.Contains(t, p.String(), "fix-questions.jsonl:5: question 4 has no labels in fix-labels.jsonl")
	assert.Empty(t, im.Notes, "the fixture's formats name the labels' parts")

	// The shape of each line, read back as plain JSON.
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	require.Len(t, lines, 4)
	var tasks []map[string]any
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		tasks = append(tasks, m)
		assert.Equal(t, "record", m["answer_type"])
		assert.NotEmpty(t, m["solution"])
		q := m["question"].(string)
		assert.Contains(t, q, "\nConstraints: ")
		assert.Contains(t, q, "\nFormat: @")
		assert.Contains(t, q, "\nGive ANSWER a dict of these named parts: {")
	}
	assert.Equal(t, "dabench-0", tasks[0]["id"])
	assert.Equal(t, map[string]any{"mean_amount": 39.01, "median_items": 2.5, "order_count": 12.0}, tasks[0]["gold"])
	assert.Equal(t, map[string]any{"mean_amount": 2.0, "median_items": 1.0}, tasks[0]["decimals"])
	assert.Equal(t, map[string]any{"top_city": "Bergen", "return_rate": 0.167, "tromso_any_returned": false}, tasks[2]["gold"])
	assert.Equal(t, map[string]any{"wettest_station": "Besançon", "mean_temp_high": 10.67}, tasks[3]["gold"])
	assert.Equal(t, map[string]any{"level": "hard", "concepts": []any{"Summary Statistics", "Comprehensive Data Preprocessing"},
		"file_name": "shop_orders.csv"}, tasks[2]["meta"])
	assert.Equal(t, "tasks-tables/shop_orders", tasks[0]["data"])
	assert.Equal(t, "tasks-tables/shop_orders", tasks[2]["data"], "questions on one table share its folder")
	assert.Equal(t, "tasks-tables/stations", tasks[3]["data"])

	// Each table is copied byte for byte (the BOM and Latin-1 kept), alone
	// in its folder.
	for _, name := range []string{"shop_orders", "stations"} {
		dir := filepath.Join(filepath.Dir(out), "tasks-tables", name)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		assert.Equal(t, name+".csv", entries[0].Name())
		src, err := os.ReadFile(filepath.Join(dabenchDir, "fix-tables", name+".csv"))
		require.NoError(t, err)
		dst, err := os.ReadFile(filepath.Join(dir, name+".csv"))
		require.NoError(t, err)
		assert.Equal(t, src, dst)
	}
	assert.Equal(t, 2, im.TableCount())
}

// TestDABenchReadTasks reads the written task file back with ReadTasks,
// the reader of bench --tasks.
func TestDABenchReadTasks(t *testing.T) {
	_, out := importFixture(t)
	tasks, err := ReadTasks(out)
	require.NoError(t, err)
	require.Len(t, tasks, 4)
	assert.Equal(t, "dabench-3", tasks[3].ID)
	assert.Equal(t, "record", string(tasks[3].AnswerType))
	assert.NotEmpty(t, tasks[3].Solution)
	for _, task := range tasks {
		assert.DirExists(t, task.Data, "%s: its one table's folder", task.ID)
		assert.NotEmpty(t, task.Meta["level"], task.ID)
	}
	assert.Equal(t, map[string]int{"mean_amount": 2, "median_items": 1}, tasks[0].PartDecimals)
}

func TestLabelValue(t *testing.T) {
	for _, tt := range []struct {
		text     string
		want     any
		decimals int
	}{
		{"34.65", 34.65, 2},
		{"-0.0873", -0.0873, 4},
		{"2.50", 2.5, 2},
		{"12", int64(12), 0},
		{"-3", int64(-3), 0},
		{"+3", int64(3), 0},
		{"0", int64(0), 0},
		{".5", 0.5, 1},
		{"12.0", 12.0, 1},
		{"1.5e-3", 0.0015, 0},
		{"3E4", 30000.0, 0},
		{"True", true, 0},
		{"False", false, 0},
		{"true", true, 0},
		{"007", "007", 0},
		{"1,234", "1,234", 0},
		{"45%", "45%", 0},
		{"nan", "nan", 0},
		{"inf", "inf", 0},
		{"-", "-", 0},
		{".", ".", 0},
		{"1.", 1.0, 0},
		{"12345678901234567890", "12345678901234567890", 0},
		{"0.12345678901234567", 0.12345678901234567, 0},
		{"Not normal", "Not normal", 0},
		{"Besançon", "Besançon", 0},
	} {
		t.Run(tt.text, func(t *testing.T) {
			got, d := labelValue(tt.text)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.decimals, d)
		})
	}
}

// dabenchSet writes a DABench folder of set "x" with the given questions
// and labels (lines) and tables (name: content), and returns it.
func dabenchSet(t *testing.T, questions, labels string, tables map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x-questions.jsonl"), []byte(questions), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x-labels.jsonl"), []byte(labels), 0o644))
	if tables != nil {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "x-tables"), 0o755))
		for name, content := range tables {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "x-tables", name), []byte(content), 0o644))
		}
	}
	return dir
}

func TestImportDABenchProblems(t *testing.T) {
	questions := "\ufeff" + strings.Join([]string{
		`{"id": 0, "question": "Mean of a?", "constraints": "Use all rows.", "format": "@mean_a[v]", "file_name": "t.csv", "level": "easy", "concepts": ["Summary Statistics"]}`,
		`{"id": 1, "question": "Max of a?", "format": "@max_a[v]", "file_name": "gone.csv", "level": "easy"}`,
		`{"id": 2, "question": "broken`,
		``,
		`{"id": 3, "question": "", "file_name": "t.csv"}`,
		`{"id": 4, "question": "Path?", "file_name": "../t.csv"}`,
		`{"id": 0, "question": "Mean of a, again?", "file_name": "t.csv"}`,
		`{"id": -1, "question": "Negative?", "file_name": "t.csv"}`,
		`{"id": 5, "question": "Labels malformed?", "file_name": "t.csv"}`,
		`{"id": 6, "question": "Two parts?", "file_name": "u.tsv"}`,
		`{"id": 7, "question": "Same stem?", "format": "@key[v], @key[w] and @other[x]", "file_name": "u.csv"}`,
		`{"id": 8, "question": "Concepts?", "file_name": "t.csv", "concepts": "Correlation Analysis"}`,
		`{"id": 10, "question": 10, "file_name": "t.csv"}`,
	}, "\n") + "\n"
	labels := strings.Join([]string{
		`{"id": 0, "common_answers": [["mean_a", "2.50"]]}`,
		`{"id": 1, "common_answers": [["max_a", "4"]]}`,
		`{"id": 5, "common_answers": [["x"]]}`,
		`{"id": 6, "common_answers": [["n", 3], ["ok", true]]}`,
		`{"id": 7, "common_answers": [["k", "v"]]}`,
		`{"id": 9, "common_answers": [["orphan", "1"]]}`,
		`{"id": 0, "common_answers": [["mean_a", "2.5"]]}`,
		`[1, 2]`,
	}, "\n") + "\n"
	dir := dabenchSet(t, questions, labels, map[string]string{"t.csv": "a\n1\n4\n", "u.tsv": "a\tb\n", "u.csv": "a,b\n"})
	im, err := ImportDABench(dir)
	require.NoError(t, err)

	var ids []string
	for _, task := range im.Tasks {
		ids = append(ids, task.ID)
	}
	assert.Equal(t, []string{"dabench-0", "dabench-6", "dabench-7"}, ids)
	assert.Equal(t, "t", im.Tasks[0].Table)
	assert.Equal(t, "u-tsv", im.Tasks[1].Table, "two tables with one stem keep their extensions apart")
	assert.Equal(t, "u-csv", im.Tasks[2].Table)
	assert.Equal(t, NamedParts{{"n", int64(3)}, {"ok", true}}, im.Tasks[1].Gold, "a label given as a JSON number or boolean")
	assert.Equal(t, "Mean of a?\nConstraints: Use all rows.\nFormat: @mean_a[v]\nGive ANSWER a dict of these named parts: {\"mean_a\": ...}.", im.Tasks[0].Question)

	q := filepath.Join(dir, "x-questions.jsonl") + ":"
	l := filepath.Join(dir, "x-labels.jsonl") + ":"
	var got []string
	for _, p := range im.Problems {
		got = append(got, p.String())
	}
	want := []string{
		q + "2: question 1: its table gone.csv is not in " + filepath.Join(dir, "x-tables") + ": it is left out; put the table there",
		q + "3: not a question (unexpected end of JSON input): expected a JSON object",
		q + "5: no question text: it is left out",
		q + `6: file_name "../t.csv" is not a file's name: expected a name such as test_ave.csv, without folders: it is left out`,
		q + "7: question 0 again (line 1 has it): it is left out",
		q + "8: id -1 is not a whole number of 0 or more: it is left out",
		q + "9: question 5: its labels (x-labels.jsonl, line 3) cannot be used: it is left out",
		q + "12: not a question (concepts is a JSON string, not a list of strings): expected",
		q + "13: not a question (question is a JSON number, not text): expected",
		l + "3: labels of question 5: answer 1 is not a [name, value] pair: they are left out",
		l + "6: labels of question 9, which x-questions.jsonl does not have: they are left out",
		l + "7: labels of question 0 again (line 1 has them): they are left out",
		l + "8: not a label (a JSON array, not an object): expected a JSON object with id and common_answers",
	}
	require.Len(t, got, len(want), strings.Join(got, "\n"))
	for i := range want {
		assert.True(t, strings.HasPrefix(got[i], want[i]), "problem %d:\n got %s\nwant %s...", i, got[i], want[i])
	}
	// A format that names other parts than the labels: imported, with a note.
	require.Len(t, im.Notes, 1)
	assert.Equal(t, q+"11: question 7: its format names key, other but its labels k: the task asks for the labels' names, which it is graded by", im.Notes[0].String())
}

func TestImportDABenchRefusals(t *testing.T) {
	empty := t.TempDir()
	two := t.TempDir()
	for _, name := range []string{"a-questions.jsonl", "b-questions.jsonl"} {
		require.NoError(t, os.WriteFile(filepath.Join(two, name), nil, 0o644))
	}
	nolabels := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(nolabels, "x-questions.jsonl"), nil, 0o644))
	for _, tt := range []struct {
		name, dir, want string
	}{
		{"missing", filepath.Join(empty, "nope"), "no such folder"},
		{"no questions", empty, "holds no *-questions.jsonl: give the folder of InfiAgent-DABench's data"},
		{"two sets", two, "holds 2 question files (a-questions.jsonl, b-questions.jsonl): put each set in a folder of its own"},
		{"no labels", nolabels, "no labels file x-labels.jsonl beside x-questions.jsonl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ImportDABench(tt.dir)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Contains(t, err.Error(), tt.want)
		})
	}

	// No tables folder: every question is left out, and the folder says why.
	dir := dabenchSet(t, `{"id": 0, "question": "q?", "file_name": "t.csv"}`+"\n", `{"id": 0, "common_answers": [["a", "1"]]}`+"\n", nil)
	im, err := ImportDABench(dir)
	require.NoError(t, err)
	assert.Empty(t, im.Tasks)
	require.Len(t, im.Problems, 1)
	assert.Equal(t, dir+": no tables folder: expected x-tables (or tables) in it, holding the CSV files the questions name", im.Problems[0].String())
}

func TestDABenchCheckOutputs(t *testing.T) {
	dir := dabenchSet(t, `{"id": 0, "question": "q?", "file_name": "t.csv"}`+"\n", `{"id": 0, "common_answers": [["a", "1"]]}`+"\n",
		map[string]string{"t.csv": "a\n1\n"})
	im, err := ImportDABench(dir)
	require.NoError(t, err)
	require.Len(t, im.Tasks, 1)

	outDir := t.TempDir()
	out := filepath.Join(outDir, "tasks.jsonl")
	require.NoError(t, im.CheckOutputs(out, false))

	for _, tt := range []struct {
		name, out string
		force     bool
		want      string
	}{
		{"the questions file", filepath.Join(dir, "x-questions.jsonl"), true, "which the import reads"},
		{"tables over the benchmark's", filepath.Join(dir, "x.jsonl"), true, "overlaps the benchmark's tables folder"},
		{"tables in the benchmark's", filepath.Join(dir, "x-tables", "t.jsonl"), true, "overlaps the benchmark's tables folder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := im.CheckOutputs(tt.out, tt.force)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Contains(t, err.Error(), tt.want)
		})
	}

	// The tables folder exists: refused without force, written into with it,
	// and the user's other files in it are left alone.
	tables := TablesDirFor(out)
	require.NoError(t, os.MkdirAll(filepath.Join(tables, "t"), 0o755))
	mine := filepath.Join(tables, "notes.txt")
	require.NoError(t, os.WriteFile(mine, []byte("mine"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tables, "t", "t.csv"), []byte("old"), 0o644))
	err = im.CheckOutputs(out, false)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, tables+" exists; pass --force to write the tables into it (its other files are left alone)", err.Error())
	require.NoError(t, im.CheckOutputs(out, true))
	require.NoError(t, im.WriteTables(tables))
	b, err := os.ReadFile(filepath.Join(tables, "t", "t.csv"))
	require.NoError(t, err)
	assert.Equal(t, "a\n1\n", string(b))
	b, err = os.ReadFile(mine)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	// A file where the tables folder goes is refused even with force.
	out2 := filepath.Join(outDir, "other.jsonl")
	require.NoError(t, os.WriteFile(TablesDirFor(out2), nil, 0o644))
	err = im.CheckOutputs(out2, true)
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "is not a folder, and the tables go there")
}

func TestTablesDirFor(t *testing.T) {
	assert.Equal(t, filepath.Join("a", "dabench-tables"), TablesDirFor(filepath.Join("a", "dabench.jsonl")))
	assert.Equal(t, "tasks-tables", TablesDirFor("tasks"))
	assert.Equal(t, "x.y-tables", TablesDirFor("x.y.jsonl"))
}

func TestDABenchAttachSolutions(t *testing.T) {
	im, err := ImportDABench(dabenchDir)
	require.NoError(t, err)
	path := writeTaskFile(t, "solutions.jsonl", strings.Join([]string{
		`{"id": 1, "solution": "ANSWER({'correlation': 1})"}`,
		`{"id": "dabench-0", "solution": "ANSWER({})"}`,
		`{"id": "dabench-4", "solution": "ANSWER({})"}`,
		`{"id": "dabench-0", "solution": "again"}`,
		`{"id": "dabench-2", "solution": ""}`,
		`not json`,
	}, "\n"))
	problems, err := im.AttachSolutions(path)
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, strings.TrimPrefix(p.String(), path))
	}
	assert.Equal(t, []string{
		":3: solution of dabench-4, a task the import does not have: left out",
		":4: solution of dabench-0 again (line 2 has it): left out",
		":5: solution of dabench-2 is empty",
		`:6: not a solution (invalid character 'o' in literal null (expecting 'u')): expected a JSON object such as {"id": "dabench-0", "solution": "ANSWER({...})"}`,
	}, got)
	assert.Equal(t, "ANSWER({})", im.Tasks[0].Solution)
	assert.Equal(t, "ANSWER({'correlation': 1})", im.Tasks[1].Solution)
	assert.Empty(t, im.Tasks[2].Solution)

	_, err = im.AttachSolutions(filepath.Join(t.TempDir(), "none.jsonl"))
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "no such file or directory")
}

// TestDABenchFixtureSolutions runs each solution of the fixture in the
// kernel image, over its task's data folder as the import wrote it, and
// checks that it answers the gold: what the reference model plays in the
// README's demo.
func TestDABenchFixtureSolutions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := sandbox.Connect(ctx, sandbox.Host{})
	if err != nil {
		testenv.SkipOrFail(t, "docker: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if ok, err := sandbox.ImageExists(ctx, cli, sandbox.KernelImage()); err != nil || !ok {
		testenv.SkipOrFail(t, "the kernel image %s is missing (%v): build it with make image", sandbox.KernelImage(), err)
	}
	_, out := importFixture(t)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var task struct {
			ID       string
			Gold     map[string]any
			Data     string
			Solution string
		}
		require.NoError(t, json.Unmarshal([]byte(line), &task))
		t.Run(task.ID, func(t *testing.T) {
			cfg := sandbox.DefaultConfig()
			cfg.Session = fmt.Sprintf("ctxtest-dabench-%d-%s", os.Getpid(), sandbox.NewSessionID())
			tr, cleanup, err := sandbox.Open(ctx, sandbox.OpenOptions{Kind: sandbox.KindDocker,
				DataDir: filepath.Join(filepath.Dir(out), filepath.FromSlash(task.Data)), Docker: &cfg}, io.Discard)
			t.Cleanup(cleanup)
			require.NoError(t, err)
			k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = k.Close() })
			res, err := k.Execute(ctx, task.Solution, kernel.ExecOptions{Timeout: time.Minute})
			require.NoError(t, err)
			require.True(t, res.Answered(), "status %s, stderr %s, error %+v", res.Status, res.Stderr, res.Error)
			var answer map[string]any
			require.NoError(t, json.Unmarshal(res.Answer, &answer))
			assert.Equal(t, task.Gold, answer)
		})
	}
}
