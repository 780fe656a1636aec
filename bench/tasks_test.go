package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
)

// The example a user can copy: testdata/usertasks.
var (
	userTasksDir    = filepath.Join("..", "testdata", "usertasks")
	userTasksData   = filepath.Join(userTasksDir, "data")
	userTasksPrefix = filepath.Join(userTasksDir, "prefix.py")
	userTasksFile   = filepath.Join(userTasksDir, "tasks.jsonl")
)

var taskCellOpts = kernel.ExecOptions{Timeout: time.Minute}

func writeTaskFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func taskFileError(t *testing.T, err error) *TaskFileError {
	t.Helper()
	var tfe *TaskFileError
	require.ErrorAs(t, err, &tfe)
	return tfe
}

// TestReadTasksGradingFields reads accept, tolerance and decimals into the
// task a trial grades against, and grades with them.
func TestReadTasksGradingFields(t *testing.T) {
	path := writeTaskFile(t, "tasks.jsonl", strings.Join([]string{
		`{"id": "team", "question": "Which team?", "answer_type": "string", "gold": "Onyx", "accept": ["T30"]}`,
		`{"id": "share", "question": "What share?", "answer_type": "number", "gold": 0.004}`,
		`{"id": "mean", "question": "What mean?", "answer_type": "number", "gold": 200, "tolerance": 0.01}`,
		`{"id": "rounded", "question": "Round to 2 decimals.", "answer_type": "number", "gold": 3.13, "decimals": 2}`,
		`{"id": "ids", "question": "Which users?", "answer_type": "set", "gold": ["Ada", "Alan"], "accept": [["U1", 2]]}`,
	}, "\n")+"\n")
	tasks, err := ReadTasks(path)
	require.NoError(t, err)
	require.Len(t, tasks, 5)
	golds := map[string]datasets.Task{}
	for _, ut := range tasks {
		g, err := ResolveGold(context.Background(), nil, nil, ut, taskCellOpts)
		require.NoError(t, err)
		golds[g.ID] = g
	}
	assert.Equal(t, []any{"T30"}, golds["team"].Accept)
	assert.Equal(t, 0.01, golds["mean"].Tolerance)
	assert.Equal(t, 2, golds["rounded"].Decimals)
	assert.Equal(t, []any{[]string{"U1", "2"}}, golds["ids"].Accept)
	for _, c := range []struct {
		task, answer string
		want         bool
	}{
		{"team", `"T30"`, true},
		{"team", `"Onyx"`, true},
		{"team", `"T31"`, false},
		{"share", "0", false}, // the old absolute ±0.01 took it
		{"share", "0.004", true},
		{"mean", "198.5", true},
		{"mean", "197", false},
		{"rounded", "3.12", true}, // the other rounding of 3.125
		{"rounded", "3.11", false},
		{"ids", "[2, 'U1']", true},
	} {
		got, reason := datasets.Grade(golds[c.task], c.answer)
		assert.Equal(t, c.want, got, "%s answered %s: %s", c.task, c.answer, reason)
	}
}

func TestReadTasksReportsEveryBadLine(t *testing.T) {
	const good = `"question": "q?", "answer_type": "integer", "gold": 1`
	cases := []struct {
		name string
		line string
		want []string // fragments of the line's problems, each in one of them
	}{
		{"not JSON", `{"id": "a", "question": `, []string{"not JSON", "one JSON object per line"}},
		{"not an object", `[1, 2]`, []string{"a JSON array, not an object"}},
		{"text after the object", `{"id": "after", ` + good + `} {"id": "b"}`, []string{"text after the JSON object", "one task on each line"}},
		{"unknown field", `{"id": "u1", ` + good + `, "golds": 2}`, []string{`unknown field "golds"`, "the fields are id, question, answer_type, gold, gold_code, solution, accept, tolerance, decimals, meta"}},
		{"unknown fields and a wrong type", `{"id": 7, "question": "q?", "answer_type": "integer", "gold": 1, "y": 1, "x": 2}`,
			[]string{`unknown fields "x", "y"`, "field id is a number, not a string"}},
		{"question not a string", `{"id": "qs", "question": ["q"], "answer_type": "integer", "gold": 1}`, []string{"field question is an array, not a string"}},
		{"missing id", `{` + good + `}`, []string{`missing id`}},
		{"bad id", `{"id": "a/b", ` + good + `}`, []string{`id "a/b" is not a plain name: use letters, digits`}},
		{"hidden id", `{"id": ".x", ` + good + `}`, []string{`id ".x" is not a plain name`}},
		{"missing question", `{"id": "mq", "answer_type": "integer", "gold": 1}`, []string{"missing question"}},
		{"missing answer_type", `{"id": "ma", "question": "q?", "gold": 1}`, []string{"missing answer_type: give one of integer, number, string, set, list, record"}},
		{"unknown answer_type", `{"id": "ua", "question": "q?", "answer_type": "Int", "gold": 1}`, []string{`unknown answer_type "Int": expected one of integer, number, string, set, list, record`}},
		{"both golds", `{"id": "both", ` + good + `, "gold_code": "ANSWER(1)"}`, []string{"both gold and gold_code"}},
		{"neither gold", `{"id": "neither", "question": "q?", "answer_type": "integer"}`, []string{"neither gold nor gold_code"}},
		{"null gold", `{"id": "null", "question": "q?", "answer_type": "integer", "gold": null}`, []string{"gold is null"}},
		{"fractional integer", `{"id": "i1", "question": "q?", "answer_type": "integer", "gold": 4.5}`, []string{"gold is the number 4.5, which is not a whole number", "use answer_type number"}},
		{"quoted integer", `{"id": "i2", "question": "q?", "answer_type": "integer", "gold": "42"}`, []string{`gold is the string "42", which does not fit answer_type integer`, "without quotes"}},
		{"huge integer", `{"id": "i3", "question": "q?", "answer_type": "integer", "gold": 1e20}`, []string{"too large for answer_type integer"}},
		{"boolean number", `{"id": "n1", "question": "q?", "answer_type": "number", "gold": true}`, []string{"gold is true (a boolean), which does not fit answer_type number"}},
		{"number for string", `{"id": "s1", "question": "q?", "answer_type": "string", "gold": 5}`, []string{"gold is the number 5, which does not fit answer_type string"}},
		{"empty string", `{"id": "s2", "question": "q?", "answer_type": "string", "gold": "  "}`, []string{"gold is an empty string, which no answer can match"}},
		{"set not an array", `{"id": "c1", "question": "q?", "answer_type": "set", "gold": "a, b"}`, []string{`gold is the string "a, b", which does not fit answer_type set: expected an array of strings or numbers`}},
		{"list with null", `{"id": "c2", "question": "q?", "answer_type": "list", "gold": ["a", null]}`, []string{"element 2 is null", "strings or numbers"}},
		{"set of arrays", `{"id": "c3", "question": "q?", "answer_type": "set", "gold": [["a"]]}`, []string{"gold is an array whose element 1 is an array of 1 element, but a set's elements must be strings or numbers"}},
		{"empty gold_code", `{"id": "g1", "question": "q?", "answer_type": "integer", "gold_code": " "}`, []string{"gold_code is empty"}},
		{"gold_code without ANSWER", `{"id": "g2", "question": "q?", "answer_type": "integer", "gold_code": "x = 1"}`, []string{"gold_code never calls ANSWER"}},
		{"solution without ANSWER", `{"id": "so", ` + good + `, "solution": "print(1)"}`, []string{"solution never calls ANSWER"}},
		{"several problems", `{"answer_type": "integer"}`, []string{"missing id", "missing question", "neither gold nor gold_code"}},
		{"accept not an array", `{"id": "a1", "question": "q?", "answer_type": "string", "gold": "Onyx", "accept": "T30"}`, []string{`accept is a string, not an array`, `"accept": ["T30"]`}},
		{"accept of the wrong type", `{"id": "a2", ` + good + `, "accept": [2, "two"]}`, []string{`accept's element 2 is the string "two", which does not fit answer_type integer`}},
		{"tolerance not for integer", `{"id": "t1", ` + good + `, "tolerance": 0.01}`, []string{"tolerance is for answer_type number or record, not integer"}},
		{"tolerance not a number", `{"id": "t2", "question": "q?", "answer_type": "number", "gold": 1.5, "tolerance": "1%"}`, []string{"tolerance is a string, not a number"}},
		{"tolerance out of range", `{"id": "t3", "question": "q?", "answer_type": "number", "gold": 1.5, "tolerance": 2}`, []string{"tolerance 2 is out of range: give a relative tolerance above 0 and below 1"}},
		{"decimals not whole", `{"id": "d1", "question": "q?", "answer_type": "number", "gold": 1.5, "decimals": 1.5}`, []string{"decimals is a number, not a whole number"}},
		{"decimals out of range", `{"id": "d2", "question": "q?", "answer_type": "number", "gold": 1.5, "decimals": 0}`, []string{"decimals 0 is out of range"}},
		// Records.
		{"record not an object", `{"id": "r1", "question": "q?", "answer_type": "record", "gold": 3.25}`, []string{"gold is the number 3.25, which does not fit answer_type record: expected an object of named parts"}},
		{"record empty", `{"id": "r2", "question": "q?", "answer_type": "record", "gold": {}}`, []string{"gold is an empty object, which has no part to grade"}},
		{"record nested object", `{"id": "r3", "question": "q?", "answer_type": "record", "gold": {"a": 1, "b": {"c": 2}}}`, []string{`gold is an object whose part "b" is an object, but a record's parts must be numbers, strings or booleans`}},
		{"record nested array", `{"id": "r4", "question": "q?", "answer_type": "record", "gold": {"a": [1, 2]}}`, []string{`part "a" is an array of 2 elements`, `"a_1" and "a_2"`}},
		{"record null part", `{"id": "r5", "question": "q?", "answer_type": "record", "gold": {"a": null}}`, []string{`part "a" is null`}},
		{"record decimals of no part", `{"id": "r6", "question": "q?", "answer_type": "record", "gold": {"mean": 1.5, "kind": "x"}, "decimals": {"median": 2}}`, []string{`decimals names part "median", which the gold does not have (its parts: "kind", "mean")`}},
		{"record decimals of a string part", `{"id": "r7", "question": "q?", "answer_type": "record", "gold": {"mean": 1.5, "kind": "x"}, "decimals": {"kind": 2}}`, []string{`decimals names part "kind", which is the string "x": decimals is for numeric parts`}},
		{"record tolerance out of range", `{"id": "r8", "question": "q?", "answer_type": "record", "gold": {"mean": 1.5}, "tolerance": {"mean": 5}}`, []string{`part "mean": tolerance 5 is out of range`}},
		{"record decimals not whole", `{"id": "r9", "question": "q?", "answer_type": "record", "gold": {"mean": 1.5}, "decimals": {"mean": "two"}}`, []string{"decimals is an object whose values are not all whole numbers"}},
		{"record accept not a record", `{"id": "r10", "question": "q?", "answer_type": "record", "gold": {"mean": 1.5}, "accept": [1.5]}`, []string{"accept's element 1 is the number 1.5, which does not fit answer_type record"}},
		{"record tolerance a string", `{"id": "r11", "question": "q?", "answer_type": "record", "gold": {"mean": 1.5}, "tolerance": "1%"}`, []string{`tolerance is a string, not a number`, `or an object by part, such as {"mean": 0.01}`}},
		{"meta not an object", `{"id": "m1", ` + good + `, "meta": ["hard"]}`, []string{`meta is an array, not an object`}},
		// Latin-1 ü: encoding/json would read it as U+FFFD, a gold no answer matches.
		{"not UTF-8", `{"id": "l1", "question": "Which city?", "answer_type": "string", "gold": "Z` + "\xfc" + `rich"}`,
			[]string{"not UTF-8 (byte 0xFC at column 76): save the file as UTF-8"}},
	}
	lines := []string{
		"# a task file with one bad line per case",
		"",
		`{"id": "dup", ` + good + `}`, // line 3
		"   // indented comment",
	}
	wantLine := map[int][]string{}
	for _, c := range cases {
		lines = append(lines, c.line)
		wantLine[len(lines)] = c.want
	}
	lines = append(lines, "", `{"id": "dup", "question": "again?", "answer_type": "integer", "gold": 2}`)
	wantLine[len(lines)] = []string{`duplicate id "dup": line 3 has it already`}

	path := writeTaskFile(t, "tasks.jsonl", strings.Join(lines, "\n")+"\n")
	tasks, err := ReadTasks(path)
	tfe := taskFileError(t, err)
	require.Len(t, tasks, 1, "the good line's task comes back with the problems, for its gold_code to be run")
	assert.Equal(t, "dup", tasks[0].ID)
	assert.Equal(t, 3, tasks[0].Line)
	assert.Equal(t, path, tfe.Path)

	got := map[int][]string{}
	for _, p := range tfe.Problems {
		got[p.Line] = append(got[p.Line], p.Msg)
	}
	for i, c := range cases {
		n := i + 5
		t.Run(c.name, func(t *testing.T) {
			msgs := got[n]
			require.NotEmpty(t, msgs, "no problem reported on line %d", n)
			for _, frag := range c.want {
				assert.Contains(t, strings.Join(msgs, "\n"), frag, "line %d", n)
			}
		})
	}
	lineNumbers := func(m map[int][]string) []int {
		var ns []int
		for n := range m {
			ns = append(ns, n)
		}
		return ns
	}
	assert.ElementsMatch(t, lineNumbers(wantLine), lineNumbers(got), "exactly the bad lines are reported")
	assert.Contains(t, got[len(lines)][0], `duplicate id "dup": line 3 has it already`)
	for i := 1; i < len(tfe.Problems); i++ {
		assert.LessOrEqual(t, tfe.Problems[i-1].Line, tfe.Problems[i].Line, "problems in file order")
	}
	assert.Contains(t, err.Error(), fmt.Sprintf("%s:5: not JSON", path), "FILE:LINE: msg")
}

func TestTaskFileErrorListsAtMost20(t *testing.T) {
	e := &TaskFileError{Path: "t.jsonl"}
	for i := 1; i <= 25; i++ {
		e.Problems = append(e.Problems, TaskProblem{Line: i, Msg: "missing id"})
	}
	lines := strings.Split(e.Error(), "\n")
	require.Len(t, lines, 21)
	assert.Equal(t, "t.jsonl:1: missing id", lines[0])
	assert.Equal(t, "t.jsonl:20: missing id", lines[19])
	assert.Equal(t, "and 5 more", lines[20])
	assert.Equal(t, "t.jsonl: no tasks", (&TaskFileError{Path: "t.jsonl", Problems: []TaskProblem{{Msg: "no tasks"}}}).Error())
}

func TestReadTasksWholeFileProblems(t *testing.T) {
	for name, content := range map[string]string{
		"empty":         "",
		"only comments": "# nothing here\n\n// nor here\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadTasks(writeTaskFile(t, "tasks.jsonl", content))
			tfe := taskFileError(t, err)
			require.Len(t, tfe.Problems, 1)
			assert.Equal(t, 0, tfe.Problems[0].Line)
			assert.Contains(t, tfe.Problems[0].Msg, "no tasks: expected one JSON object per line")
		})
	}
	t.Run("UTF-16", func(t *testing.T) {
		var utf16 []byte
		for _, r := range "\ufeff" + `{"id": "a", "question": "q?", "answer_type": "integer", "gold": 1}` + "\n" {
			utf16 = append(utf16, byte(r), byte(r>>8))
		}
		tasks, err := ReadTasks(writeTaskFile(t, "tasks.jsonl", string(utf16)))
		tfe := taskFileError(t, err)
		assert.Empty(t, tasks)
		require.Len(t, tfe.Problems, 1, "one problem for the file, not one per line")
		assert.Contains(t, err.Error(), "the file is UTF-16 (it starts with a UTF-16 byte-order mark): save it as UTF-8")
	})
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope.jsonl")
		_, err := ReadTasks(path)
		tfe := taskFileError(t, err)
		assert.Contains(t, err.Error(), path+": cannot read the task file: no such file or directory")
		assert.Equal(t, 0, tfe.Problems[0].Line)
	})
}

func TestReadTasksRoundTrips(t *testing.T) {
	src := "\ufeff" + `{"id": "i", "question": "How many?", "answer_type": "integer", "gold": 42.0, "solution": "ANSWER(42)"}
# a comment

{"id": "n", "question": "How much?", "answer_type": "number", "gold": 3}` + "\r" + `
{"id": "s", "question": "Who?", "answer_type": "string", "gold": "Ada"}
{"id": "set", "question": "Which?", "answer_type": "set", "gold": ["b", 3, 2.5]}
{"id": "l.1_x-y", "question": "In order?", "answer_type": "list", "gold": []}
{"id": "code", "question": "Computed?", "answer_type": "integer", "gold_code": "ANSWER(6 * 7)"}
`
	tasks, err := ReadTasks(writeTaskFile(t, "tasks.jsonl", src))
	require.NoError(t, err)
	want := []UserTask{
		{ID: "i", Question: "How many?", AnswerType: datasets.Integer, Gold: int64(42), Solution: "ANSWER(42)", Line: 1},
		{ID: "n", Question: "How much?", AnswerType: datasets.Number, Gold: 3.0, Line: 4},
		{ID: "s", Question: "Who?", AnswerType: datasets.String, Gold: "Ada", Line: 5},
		{ID: "set", Question: "Which?", AnswerType: datasets.Set, Gold: []string{"b", "3", "2.5"}, Line: 6},
		{ID: "l.1_x-y", Question: "In order?", AnswerType: datasets.List, Gold: []string{}, Line: 7},
		{ID: "code", Question: "Computed?", AnswerType: datasets.Integer, GoldCode: "ANSWER(6 * 7)", Line: 8},
	}
	assert.Equal(t, want, tasks)

	var b strings.Builder
	for _, task := range tasks {
		line, err := json.Marshal(task)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	again, err := ReadTasks(writeTaskFile(t, "again.jsonl", b.String()))
	require.NoError(t, err)
	for i := range again {
		again[i].Line = tasks[i].Line
	}
	assert.Equal(t, tasks, again)

	for _, task := range tasks {
		if task.Gold != nil {
			_, reason := datasets.Grade(datasets.Task{ID: task.ID, AnswerType: task.AnswerType, Gold: task.Gold}, "x")
			assert.NotContains(t, reason, "cannot grade", "Grade takes the gold of %s", task.ID)
		}
	}
}

func TestReadTasksExample(t *testing.T) {
	tasks, err := ReadTasks(userTasksFile)
	require.NoError(t, err)
	require.Len(t, tasks, 5)
	types := map[datasets.AnswerType]bool{}
	var withCode int
	for i, task := range tasks {
		assert.Equal(t, i+2, task.Line, "one comment line, then a task a line")
		assert.NotEmpty(t, task.Solution, "task %s has a solution for the reference model", task.ID)
		types[task.AnswerType] = true
		if task.GoldCode != "" {
			withCode++
		}
	}
	assert.Len(t, types, 5, "every answer type")
	assert.Equal(t, 2, withCode, "two golds computed by gold_code")
}

func loadUserTasksPrefix(t *testing.T) *prefixes.Prefix {
	t.Helper()
	p, err := prefixes.Load(userTasksPrefix)
	require.NoError(t, err)
	return p
}

func userTaskByID(t *testing.T, id string) UserTask {
	t.Helper()
	tasks, err := ReadTasks(userTasksFile)
	require.NoError(t, err)
	for _, task := range tasks {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("no task %s in %s", id, userTasksFile)
	return UserTask{}
}

func TestResolveGoldGivenNeedsNoKernel(t *testing.T) {
	task := userTaskByID(t, "wettest-top3")
	got, err := ResolveGold(context.Background(), nil, nil, task, taskCellOpts)
	require.NoError(t, err)
	assert.Equal(t, datasets.Task{ID: "wettest-top3", Question: task.Question, AnswerType: datasets.List, Gold: []string{"S02", "S04", "S05"}}, got)
}

func TestResolveGoldRunsGoldCode(t *testing.T) {
	p := loadUserTasksPrefix(t)
	cases := []struct {
		id    string
		check func(t *testing.T, gold any)
	}{
		{"mean-temp-s03", func(t *testing.T, gold any) {
			require.IsType(t, 0.0, gold)
			assert.InDelta(t, 0.8, gold.(float64), 1e-9)
		}},
		{"freezing-cities", func(t *testing.T, gold any) {
			assert.Equal(t, []string{"Oslo", "Tromsø", "Trondheim", "Ulvik"}, gold)
		}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			t.Parallel()
			task := userTaskByID(t, c.id)
			k := kerneltest.Python(t, userTasksData)
			got, err := ResolveGold(context.Background(), k, p, task, taskCellOpts)
			require.NoError(t, err)
			assert.Equal(t, c.id, got.ID)
			assert.Equal(t, task.Question, got.Question)
			assert.Equal(t, task.AnswerType, got.AnswerType)
			assert.Empty(t, got.Template)
			assert.Nil(t, got.Params)
			c.check(t, got.Gold)
		})
	}
	t.Run("integer", func(t *testing.T) {
		t.Parallel()
		k := kerneltest.Python(t, userTasksData)
		task := UserTask{ID: "count", Question: "How many stations?", AnswerType: datasets.Integer, GoldCode: "ANSWER(len(stations))", Line: 9}
		got, err := ResolveGold(context.Background(), k, p, task, taskCellOpts)
		require.NoError(t, err)
		assert.Equal(t, int64(6), got.Gold)
	})
}

func TestResolveGoldFailures(t *testing.T) {
	p := loadUserTasksPrefix(t)
	cases := []struct {
		name  string
		typ   datasets.AnswerType
		code  string
		opts  kernel.ExecOptions
		want  []string
		check func(t *testing.T, ge *GoldError)
	}{
		{"raises", datasets.Integer, "ANSWER(len(stations) // 0)", taskCellOpts,
			[]string{"gold_code raised ZeroDivisionError: ", "by zero", "fix the code", "ANSWER(len(stations) // 0)"},
			func(t *testing.T, ge *GoldError) {
				require.NotNil(t, ge.Result.Error)
				assert.Equal(t, "ZeroDivisionError", ge.Result.Error.Name)
			}},
		{"unknown name", datasets.Integer, "ANSWER(len(station))", taskCellOpts,
			[]string{"NameError", "station"}, nil},
		{"no ANSWER", datasets.Integer, "n = len(stations)\nn", taskCellOpts,
			[]string{"gold_code gave no answer", "without calling ANSWER(value)"}, nil},
		{"ANSWER in a branch not taken", datasets.Integer, "if len(stations) > 100:\n    ANSWER(1)", taskCellOpts,
			[]string{"gold_code gave no answer", "without calling ANSWER(value)"}, nil},
		{"string for integer", datasets.Integer, "ANSWER(stations[0]['name'])", taskCellOpts,
			[]string{`gold_code answered the string "Blindern", which does not fit answer_type integer`}, nil},
		{"float for integer", datasets.Integer, "ANSWER(readings[0]['temp_c'])", taskCellOpts,
			[]string{"gold_code answered the number 0.9, which is not a whole number"}, nil},
		{"dicts for a set", datasets.Set, "ANSWER(stations[:2])", taskCellOpts,
			[]string{"element 1 is an object", "strings or numbers"}, nil},
		{"None for a string", datasets.String, "ANSWER(None)", taskCellOpts,
			[]string{"gold_code gave no answer", "answered None"}, nil},
		{"timeout", datasets.Integer, "import time\ntime.sleep(30)\nANSWER(1)", kernel.ExecOptions{Timeout: 200 * time.Millisecond},
			[]string{"ran past its timeout (200ms)"}, nil},
		{"kills the kernel", datasets.Integer, "import os\nos._exit(3)\nANSWER(1)", taskCellOpts,
			[]string{"gold_code killed the kernel"},
			func(t *testing.T, ge *GoldError) {
				var dead *kernel.DeadError
				assert.ErrorAs(t, ge, &dead)
			}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			k := kerneltest.Python(t, userTasksData)
			task := UserTask{ID: fmt.Sprintf("bad-%d", i), Question: "q?", AnswerType: c.typ, GoldCode: c.code, Line: 10 + i}
			_, err := ResolveGold(context.Background(), k, p, task, c.opts)
			var ge *GoldError
			require.ErrorAs(t, err, &ge)
			assert.Equal(t, task.ID, ge.Task)
			assert.Equal(t, task.Line, ge.Line)
			assert.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("task %s (line %d): ", task.ID, task.Line)), err.Error())
			for _, frag := range c.want {
				assert.Contains(t, err.Error(), frag)
			}
			if c.check != nil {
				c.check(t, ge)
			}
		})
	}
}

func TestResolveGoldPrefixFailsIsNotGoldError(t *testing.T) {
	p, err := prefixes.Parse("broken.py", []byte("# %%\nstations = open('data/nope.csv').read()\n"))
	require.NoError(t, err)
	k := kerneltest.Python(t, userTasksData)
	task := UserTask{ID: "q", Question: "q?", AnswerType: datasets.Integer, GoldCode: "ANSWER(1)", Line: 1}
	_, err = ResolveGold(context.Background(), k, p, task, taskCellOpts)
	var be *prefixes.BuildError
	require.ErrorAs(t, err, &be)
	var ge *GoldError
	assert.False(t, errors.As(err, &ge), "the prefix failed, not the task's gold_code")
	assert.Contains(t, err.Error(), "task q (line 1): build the prefix for gold_code")
}

func TestReference(t *testing.T) {
	p := loadUserTasksPrefix(t)
	same := loadUserTasksPrefix(t) // read again: another value, the same prefix
	other, err := prefixes.Parse("other.py", []byte("# %%\nimport os\n"))
	require.NoError(t, err)
	task := userTaskByID(t, "rainy-readings")

	assert.Equal(t, task.Solution, task.Reference(p, p))
	assert.Equal(t, task.Solution, task.Reference(same, p))
	assert.Equal(t, task.Solution, task.Reference(nil, nil), "a solution written against no prefix stands alone")
	assert.Empty(t, UserTask{ID: "x"}.Reference(nil, p), "no solution, nothing to play")

	want := p.Cells[0].Code + "\n\n" + p.Cells[1].Code + "\n\n" + p.Cells[2].Code + "\n\n" + task.Solution
	assert.Equal(t, want, task.Reference(nil, p))
	assert.Equal(t, want, task.Reference(other, p))
}

// TestExampleSolutionsAreRight checks the example for real: each task's
// gold (given or computed), its solution played after the prefix, and the
// self-contained solution of condition A run in a kernel with no prefix.
func TestExampleSolutionsAreRight(t *testing.T) {
	p := loadUserTasksPrefix(t)
	tasks, err := ReadTasks(userTasksFile)
	require.NoError(t, err)
	for _, task := range tasks {
		t.Run(task.ID, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var gk kernel.Kernel
			if task.GoldCode != "" {
				gk = kerneltest.Python(t, userTasksData)
			}
			gold, err := ResolveGold(ctx, gk, p, task, taskCellOpts)
			require.NoError(t, err)

			k := kerneltest.Python(t, userTasksData)
			_, err = prefixes.Build(ctx, k, p, taskCellOpts)
			require.NoError(t, err)
			res, err := k.Execute(ctx, task.Reference(p, p), taskCellOpts)
			require.NoError(t, err)
			require.Equal(t, kernel.StatusOK, res.Status, "%+v", res.Error)
			ok, reason := datasets.Grade(gold, string(res.Answer))
			assert.True(t, ok, "solution after the prefix answered %s: %s", res.Answer, reason)

			bare := kerneltest.Python(t, userTasksData)
			res, err = bare.Execute(ctx, task.Reference(nil, p), taskCellOpts)
			require.NoError(t, err)
			require.Equal(t, kernel.StatusOK, res.Status, "%+v", res.Error)
			ok, reason = datasets.Grade(gold, string(res.Answer))
			assert.True(t, ok, "self-contained solution answered %s: %s", res.Answer, reason)
		})
	}
}

// TestResolveGoldsReportsEveryFailure runs every gold_code of a file, each
// in a fresh kernel, and gives back each one that failed as a problem at
// its line, not only the first: one that raises, one that runs past its
// timeout, one that kills the kernel (the next still runs, in a new one).
func TestResolveGoldsReportsEveryFailure(t *testing.T) {
	p := loadUserTasksPrefix(t)
	tr, err := kernel.NewLocalPython(kerneltest.FindPython(t), false, kernel.LocalConfig{DataDir: userTasksData})
	require.NoError(t, err)
	task := func(line int, id, code string) UserTask {
		return UserTask{ID: id, Question: "q?", AnswerType: datasets.Integer, GoldCode: code, Line: line}
	}
	tasks := []UserTask{
		task(2, "raises", "ANSWER(len(station))"),
		{ID: "given", Question: "q?", AnswerType: datasets.Integer, Gold: int64(7), Line: 3},
		task(4, "hangs", "while True:\n    pass\nANSWER(1)"),
		task(5, "exits", "import os\nos._exit(3)"),
		task(6, "count", "ANSWER(len(stations))"),
		task(7, "bound", "ANSWER(len(readings) if 'x' not in globals() else -1)\nx = 1"),
		task(8, "fresh", "ANSWER(0 if 'x' in globals() else len(stations))"),
	}
	golds, problems, err := ResolveGolds(context.Background(), tr, p, tasks, kernel.ExecOptions{Timeout: 2 * time.Second})
	require.NoError(t, err)

	var ids []string
	for _, g := range golds {
		ids = append(ids, g.ID)
	}
	assert.Equal(t, []string{"given", "count", "bound", "fresh"}, ids, "the golds of the tasks that have one, in order")
	assert.Equal(t, int64(6), golds[1].Gold)
	assert.Equal(t, int64(6), golds[3].Gold, "each gold_code runs in a fresh kernel: nothing of the one before is bound")

	require.Len(t, problems, 3)
	want := []struct {
		line int
		frag string
	}{
		{2, "task raises: gold_code raised NameError"},
		{4, "task hangs: gold_code ran past its timeout (2s)"},
		{5, "task exits: gold_code killed the kernel"},
	}
	for i, w := range want {
		assert.Equal(t, w.line, problems[i].Line)
		assert.Contains(t, problems[i].Msg, w.frag)
	}
}
