package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/outfile"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
)

// UserTask is one task of a user's task file (ctxcode bench --tasks FILE).
//
// A task file is JSON lines: one JSON object per line, one task per object.
// Blank lines, and lines whose first non-blank characters are "//" or "#",
// are skipped. The fields:
//
//	id           required; letters, digits, '.', '_' and '-', unique in the file
//	question     required; the question the model is asked
//	answer_type  required; integer, number, string, set, list or record
//	             (see datasets.AnswerType)
//	gold         the answer, as JSON: a whole number (integer), a number,
//	             a string, an array of strings or numbers (set, list), or an
//	             object of named parts, each a number, a string or a
//	             boolean (record: {"mean": 3.25, "kind": "normal"})
//	gold_code    instead of gold: code run in a fresh kernel over the prefix
//	             that ends by calling ANSWER(value); value is the gold (a
//	             dict for a record)
//	solution     optional: code, written against the --prefix, that ends
//	             with ANSWER(...); what the built-in reference model plays
//	accept       optional: an array of other answers that count as right,
//	             each written as gold is (an id for a name: "accept": ["T30"])
//	tolerance    optional, number or record only: how far an answer may be
//	             from the gold, relative (0.01 is 1%); default 1e-6. For a
//	             gold of exactly 0 it is absolute. For a record, a number
//	             (every numeric part) or an object by part ({"mean": 0.01})
//	decimals     optional, number or record only: the question asks for the
//	             answer rounded to this many decimals (1 to 15) and the gold
//	             is so rounded: an answer one unit of the last decimal away
//	             is right. For a record, a number or an object by part
//	meta         optional: an object of free metadata kept with the task
//	             ({"level": "hard", "concepts": ["Correlation Analysis"]}),
//	             which report --by groups results by
//	data         optional: the task's own data folder, relative to the task
//	             file's folder (or absolute); without it the task is over
//	             bench's --data. Its prefix is --prefix when it is --data,
//	             else the one prefix init writes for it (see bench's Setup)
//	session      optional, with stage: the staged session the task is a
//	             stage of (a name as id is, that no task has as its id);
//	             the tasks of a session are asked one after another in
//	             one conversation and kernel, as one trial
//	stage        the task's place in its session: 1 to n, each once, all
//	             the session's tasks over the same data folder
//
// A task has gold or gold_code, never both. For example:
//
//	# two tasks over the weather prefix
//	{"id": "rainy", "question": "How many readings had more than 5 mm of rain?", "answer_type": "integer", "gold": 11}
//	{"id": "cold", "question": "Which cities froze?", "answer_type": "set", "gold_code": "ANSWER(sorted(cold_cities))"}
type UserTask struct {
	ID         string              `json:"id"`
	Question   string              `json:"question"`
	AnswerType datasets.AnswerType `json:"answer_type"`
	// Gold is the answer, in the Go type datasets.Grade expects: an int64
	// (integer), a float64 (number), a string (string) or a []string (set,
	// list; numbers in the file become their decimal text). It is nil
	// when GoldCode computes it (see ResolveGold).
	Gold     any    `json:"gold,omitempty"`
	GoldCode string `json:"gold_code,omitempty"`
	Solution string `json:"solution,omitempty"`
	// Accept are the other answers that count, each converted as Gold is
	// (see datasets.Task.Accept).
	Accept []any `json:"accept,omitempty"`
	// Tolerance and Decimals are datasets.Task's, for a number or record
	// task; PartTolerance and PartDecimals a record's by part (a file's
	// "tolerance" and "decimals" as objects).
	Tolerance     float64            `json:"tolerance,omitempty"`
	Decimals      int                `json:"decimals,omitempty"`
	PartTolerance map[string]float64 `json:"-"`
	PartDecimals  map[string]int     `json:"-"`
	// Meta is the task's free metadata (datasets.Task.Meta).
	Meta map[string]any `json:"meta,omitempty"`
	// Data is the task's own data folder, a clean absolute path (the
	// file's "data", resolved against the task file's folder); "" for a
	// task over the run's --data.
	Data string `json:"data,omitempty"`
	// Session names the staged session the task is a stage of, and Stage
	// its place there (from 1); "" and 0 for a task that is a trial of its
	// own.
	Session string `json:"session,omitempty"`
	Stage   int    `json:"stage,omitempty"`
	// Line is the task's line in the file, 1-based.
	Line int `json:"-"`
}

// TaskFileError is a task file that cannot be used: every problem found in
// it, each with its line. It is the user's input error (exit code 2).
type TaskFileError struct {
	Path     string
	Problems []TaskProblem
}

// TaskProblem is one problem of a task file.
type TaskProblem struct {
	Line int // 1-based; 0 for the file as a whole
	Msg  string
}

// maxTaskProblemsShown bounds the problems TaskFileError.Error lists.
const maxTaskProblemsShown = 20

func (e *TaskFileError) Error() string { return problemList(e.Path, e.Problems) }

// problemList is the problems of the file path, one a line, each with its
// line number when it has one.
func problemList(path string, problems []TaskProblem) string {
	var b strings.Builder
	for i, p := range problems {
		if i == maxTaskProblemsShown {
			fmt.Fprintf(&b, "\nand %d more", len(problems)-maxTaskProblemsShown)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", path, p.Line, p.Msg)
		} else {
			fmt.Fprintf(&b, "%s: %s", path, p.Msg)
		}
	}
	return b.String()
}

// taskFields are the fields of a task line, in the order the docs give them.
var taskFields = []string{"id", "question", "answer_type", "gold", "gold_code", "solution", "accept", "tolerance", "decimals", "meta", "data", "session", "stage"}

// answerTypes are the answer types a task may have.
var answerTypes = []datasets.AnswerType{datasets.Integer, datasets.Number, datasets.String, datasets.Set, datasets.List, datasets.Record}

// taskLine is a task line as decoded, before it is checked.
type taskLine struct {
	ID         string          `json:"id"`
	Question   string          `json:"question"`
	AnswerType string          `json:"answer_type"`
	Gold       json.RawMessage `json:"gold"`
	GoldCode   *string         `json:"gold_code"`
	Solution   *string         `json:"solution"`
	Accept     json.RawMessage `json:"accept"`
	Tolerance  json.RawMessage `json:"tolerance"`
	Decimals   json.RawMessage `json:"decimals"`
	Meta       json.RawMessage `json:"meta"`
	Data       *string         `json:"data"`
	Session    *string         `json:"session"`
	Stage      json.RawMessage `json:"stage"`
}

const taskLineExample = `{"id": "q1", "question": "How many ...?", "answer_type": "integer", "gold": 42}`

// ReadTasks reads and checks a task file (see UserTask for its format). It
// finds every problem before it returns: a file with any is a
// *TaskFileError listing them all with their lines, and so is a file that
// cannot be read, is not UTF-8, or holds no task. The tasks of the good
// lines are returned even then, so that a caller can run their gold_code
// (ResolveGolds) and report its failures with the file's. Golds are checked
// against their answer types here; gold_code is only run by ResolveGold.
func ReadTasks(path string) ([]UserTask, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &TaskFileError{Path: path, Problems: []TaskProblem{{Msg: fmt.Sprintf("cannot read the task file: %v", errors.Unwrap(err))}}}
	}
	if bytes.HasPrefix(src, []byte{0xff, 0xfe}) || bytes.HasPrefix(src, []byte{0xfe, 0xff}) {
		return nil, &TaskFileError{Path: path, Problems: []TaskProblem{{Msg: "the file is UTF-16 (it starts with a UTF-16 byte-order mark): save it as UTF-8"}}}
	}
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	var (
		tasks    []UserTask
		problems []TaskProblem
		firstID  = map[string]int{}
	)
	for i, raw := range bytes.Split(src, []byte("\n")) {
		n := i + 1
		line := bytes.TrimSpace(raw)
		if len(line) == 0 || bytes.HasPrefix(line, []byte("#")) || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		if at := invalidUTF8(raw); at >= 0 {
			// encoding/json would read the bytes as U+FFFD: a gold that no
			// answer matches, a question the model cannot read.
			problems = append(problems, TaskProblem{Line: n, Msg: fmt.Sprintf(
				"not UTF-8 (byte 0x%02X at column %d): save the file as UTF-8", raw[at], utf8.RuneCount(raw[:at])+1)})
			continue
		}
		t, msgs := parseTaskLine(line)
		if len(msgs) == 0 {
			if m := resolveTaskData(&t, filepath.Dir(path)); m != "" {
				msgs = append(msgs, m)
			}
		}
		for _, m := range msgs {
			problems = append(problems, TaskProblem{Line: n, Msg: m})
		}
		if t.ID != "" && validTaskID(t.ID) {
			if first, ok := firstID[t.ID]; ok {
				problems = append(problems, TaskProblem{Line: n, Msg: fmt.Sprintf("duplicate id %q: line %d has it already; give each task its own id", t.ID, first)})
				continue
			}
			firstID[t.ID] = n
		}
		if len(msgs) == 0 {
			t.Line = n
			tasks = append(tasks, t)
		}
	}
	if len(problems) == 0 {
		problems = checkSessions(tasks)
	}
	if len(problems) == 0 && len(tasks) == 0 {
		problems = append(problems, TaskProblem{Msg: "no tasks: expected one JSON object per line, such as " + taskLineExample +
			" (blank lines and lines starting with # or // are skipped)"})
	}
	if len(problems) > 0 {
		return tasks, &TaskFileError{Path: path, Problems: problems}
	}
	return tasks, nil
}

// invalidUTF8 is the offset of the first byte of b that is not UTF-8, or -1.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// parseTaskLine decodes and checks one non-blank line. It returns what it
// could read of the task and every problem of the line; the ID is set
// whenever the line has a string id, for the duplicate check.
func parseTaskLine(line []byte) (UserTask, []string) {
	var (
		tl   taskLine
		msgs []string
	)
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&tl)
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
			return UserTask{}, []string{fmt.Sprintf("text after the JSON object (%s): put one task on each line", clipTaskText(string(rest)))}
		}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return UserTask{}, []string{"not JSON (the line ends inside the object): expected one JSON object per line, such as " + taskLineExample}
	case errors.As(err, &syntax):
		return UserTask{}, []string{fmt.Sprintf("not JSON (%v): expected one JSON object per line, such as %s", err, taskLineExample)}
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return UserTask{}, []string{fmt.Sprintf("a JSON %s, not an object: expected one JSON object per line, such as %s", typeErr.Value, taskLineExample)}
	}
	badField := map[string]bool{}
	if err != nil {
		// The decoder reports only its first error; the line as a map
		// gives every unknown field and every field of the wrong type.
		var fields map[string]json.RawMessage
		if json.Unmarshal(line, &fields) != nil {
			return UserTask{}, []string{fmt.Sprintf("cannot read the line (%v): expected one JSON object per line, such as %s", err, taskLineExample)}
		}
		var unknown []string
		for k := range fields {
			if !knownTaskField(k) {
				unknown = append(unknown, strconv.Quote(k))
			}
		}
		sort.Strings(unknown)
		if len(unknown) == 1 {
			msgs = append(msgs, fmt.Sprintf("unknown field %s: the fields are %s", unknown[0], strings.Join(taskFields, ", ")))
		} else if len(unknown) > 1 {
			msgs = append(msgs, fmt.Sprintf("unknown fields %s: the fields are %s", strings.Join(unknown, ", "), strings.Join(taskFields, ", ")))
		}
		for _, k := range []string{"id", "question", "answer_type", "gold_code", "solution", "data", "session"} {
			v, ok := fields[k]
			if !ok || string(v) == "null" {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				msgs = append(msgs, fmt.Sprintf("field %s is %s, not a string: write it in double quotes", k, jsonKindOf(v)))
				badField[k] = true
			}
		}
	}
	t := UserTask{ID: tl.ID, Question: tl.Question, AnswerType: datasets.AnswerType(tl.AnswerType)}
	switch {
	case badField["id"]:
	case strings.TrimSpace(tl.ID) == "":
		msgs = append(msgs, `missing id: give the task an "id", such as "q1"`)
	case !validTaskID(tl.ID):
		msgs = append(msgs, fmt.Sprintf("id %q is not a plain name: use letters, digits, '.', '_' and '-', not starting with '.', at most %d characters (the id names the task in the run directory's files)", clipTaskText(tl.ID), maxTaskIDLen))
	}
	if !badField["question"] && strings.TrimSpace(tl.Question) == "" {
		msgs = append(msgs, `missing question: give the task a "question", the text the model is asked`)
	}
	typeOK := false
	switch {
	case badField["answer_type"]:
	case tl.AnswerType == "":
		msgs = append(msgs, `missing answer_type: give one of `+answerTypeList())
	case !knownAnswerType(t.AnswerType):
		msgs = append(msgs, fmt.Sprintf("unknown answer_type %q: expected one of %s", clipTaskText(tl.AnswerType), answerTypeList()))
	default:
		typeOK = true
	}
	hasGold := tl.Gold != nil
	hasCode := tl.GoldCode != nil && !badField["gold_code"]
	switch {
	case hasGold && hasCode:
		msgs = append(msgs, "both gold and gold_code: give the answer as gold, or the code that computes it as gold_code, not both")
	case !hasGold && !hasCode && !badField["gold_code"]:
		msgs = append(msgs, `neither gold nor gold_code: give the answer as "gold", or code that ends with ANSWER(value) as "gold_code"`)
	case hasGold && string(tl.Gold) == "null":
		msgs = append(msgs, `gold is null: give the answer, or code that computes it as "gold_code"`)
	case hasGold && typeOK:
		var v any
		if err := json.Unmarshal(tl.Gold, &v); err == nil {
			g, why := fitGold(t.AnswerType, v)
			if why != "" {
				msgs = append(msgs, "gold is "+why)
			}
			t.Gold = g
		}
	case hasCode:
		t.GoldCode = *tl.GoldCode
		if strings.TrimSpace(t.GoldCode) == "" {
			msgs = append(msgs, `gold_code is empty: give code that ends with ANSWER(value), or the answer as "gold"`)
		} else if !strings.Contains(t.GoldCode, "ANSWER(") {
			msgs = append(msgs, "gold_code never calls ANSWER: end it with ANSWER(value), the value being the gold")
		}
	}
	if tl.Solution != nil && !badField["solution"] {
		t.Solution = *tl.Solution
		if !strings.Contains(t.Solution, "ANSWER(") {
			msgs = append(msgs, `solution never calls ANSWER: end it with ANSWER(value), or leave "solution" out`)
		}
	}
	if typeOK {
		msgs = append(msgs, parseGrading(&t, tl)...)
	}
	msgs = append(msgs, parseMeta(&t, tl.Meta)...)
	if tl.Data != nil && !badField["data"] {
		if t.Data = *tl.Data; strings.TrimSpace(t.Data) == "" {
			msgs = append(msgs, `data is empty: give the task's data folder, relative to the task file's folder, or leave "data" out (the task is then over --data)`)
		}
	}
	msgs = append(msgs, parseStage(&t, tl, badField["session"])...)
	return t, msgs
}

// parseStage reads a line's session and stage into t.
func parseStage(t *UserTask, tl taskLine, badSession bool) []string {
	hasStage := tl.Stage != nil && string(tl.Stage) != "null"
	if badSession || (tl.Session == nil && !hasStage) {
		return nil
	}
	var msgs []string
	if tl.Session != nil {
		t.Session = *tl.Session
		if !validTaskID(t.Session) {
			msgs = append(msgs, fmt.Sprintf("session %q is not a plain name: use letters, digits, '.', '_' and '-', not starting with '.', at most %d characters (it names the session's trial in the run directory's files)",
				clipTaskText(t.Session), maxTaskIDLen))
		}
	}
	var n float64
	switch {
	case !hasStage:
		msgs = append(msgs, `session without stage: give the task's place in its session as "stage": 1, 2, ...`)
	case json.Unmarshal(tl.Stage, &n) != nil || n != math.Trunc(n) || n < 1 || n > MaxStages:
		msgs = append(msgs, fmt.Sprintf("stage is %s: give the task's place in its session, a whole number from 1 to %d", clipTaskText(string(tl.Stage)), MaxStages))
	case tl.Session == nil:
		msgs = append(msgs, `stage without session: name the session the task is a stage of as "session", or leave "stage" out`)
	default:
		t.Stage = int(n)
	}
	return msgs
}

// checkSessions finds the problems of the sessions of tasks, each named
// with its lines: a session's stages must be numbered 1 to n, each once,
// its tasks must share one data folder, and its name must not be a task's
// id (both name a trial).
func checkSessions(tasks []UserTask) []TaskProblem {
	var (
		names    []string
		bySess   = map[string][]UserTask{}
		idLine   = map[string]int{}
		problems []TaskProblem
	)
	for _, t := range tasks {
		idLine[t.ID] = t.Line
		if t.Session == "" {
			continue
		}
		if _, ok := bySess[t.Session]; !ok {
			names = append(names, t.Session)
		}
		bySess[t.Session] = append(bySess[t.Session], t)
	}
	for _, name := range names {
		st := bySess[name]
		first := st[0].Line
		if at, ok := idLine[name]; ok {
			problems = append(problems, TaskProblem{Line: first, Msg: fmt.Sprintf("session %q has the name of the task on line %d: both would name a trial; rename the session", name, at)})
		}
		byStage := map[int]int{}
		top := 0
		for _, t := range st {
			if at, dup := byStage[t.Stage]; dup {
				problems = append(problems, TaskProblem{Line: t.Line, Msg: fmt.Sprintf("session %q has stage %d twice (line %d has it already): number its stages 1 to n, each once", name, t.Stage, at)})
				continue
			}
			byStage[t.Stage] = t.Line
			top = max(top, t.Stage)
			if t.Data != st[0].Data {
				problems = append(problems, TaskProblem{Line: t.Line, Msg: fmt.Sprintf("session %q: this task's data folder (%s) is not that of its stage on line %d (%s): a session's stages run in one kernel over one data folder",
					name, orMain(t.Data), first, orMain(st[0].Data))})
			}
		}
		var missing []string
		for k := 1; k <= top; k++ {
			if _, ok := byStage[k]; !ok {
				missing = append(missing, strconv.Itoa(k))
			}
		}
		if len(missing) > 0 {
			problems = append(problems, TaskProblem{Line: first, Msg: fmt.Sprintf("session %q has no stage %s (its stages go up to %d): number its stages 1 to n without gaps",
				name, strings.Join(missing, ", "), top)})
		}
	}
	return problems
}

// orMain names a task's data folder: its own, or --data.
func orMain(dir string) string {
	if dir == "" {
		return "--data"
	}
	return dir
}

// SessionsOf are the sessions of tasks, checked (checkSessions), each
// with its tasks in stage order, in the order of their first line.
func SessionsOf(tasks []UserTask) []Session {
	var out []Session
	at := map[string]int{}
	stages := map[string]map[int]string{}
	for _, t := range tasks {
		if t.Session == "" {
			continue
		}
		if _, ok := at[t.Session]; !ok {
			at[t.Session] = len(out)
			out = append(out, Session{Name: t.Session})
			stages[t.Session] = map[int]string{}
		}
		stages[t.Session][t.Stage] = t.ID
	}
	for i := range out {
		m := stages[out[i].Name]
		for k := 1; k <= len(m); k++ {
			out[i].Tasks = append(out[i].Tasks, m[k])
		}
	}
	return out
}

// resolveTaskData makes t's data folder a clean absolute path, relative to
// base (the task file's folder), and says what is wrong when it is not a
// folder ("" when it is).
func resolveTaskData(t *UserTask, base string) string {
	if t.Data == "" {
		return ""
	}
	dir := t.Data
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Sprintf("data %q: %v", clipTaskText(t.Data), err)
	}
	if err := outfile.CheckDataDir(abs); err != nil {
		return fmt.Sprintf("data %q: %v (the folder is relative to the task file's)", clipTaskText(t.Data), outfile.UnwrapPath(err))
	}
	t.Data = abs
	return ""
}

// maxDecimals bounds a task's decimals: a float64 holds about 15.
const maxDecimals = 15

// parseGrading reads and checks the fields that say how a task is graded
// besides its gold: accept, tolerance and decimals, into t, whose answer
// type is known.
func parseGrading(t *UserTask, tl taskLine) []string {
	var msgs []string
	present := func(raw json.RawMessage) bool { return raw != nil && string(raw) != "null" }
	if present(tl.Accept) {
		var alts []any
		if err := json.Unmarshal(tl.Accept, &alts); err != nil {
			msgs = append(msgs, fmt.Sprintf(`accept is %s, not an array: list the other answers that count, each written as gold is, such as "accept": ["T30"]`, jsonKindOf(tl.Accept)))
		} else {
			for i, v := range alts {
				g, why := fitGold(t.AnswerType, v)
				if why != "" {
					msgs = append(msgs, fmt.Sprintf("accept's element %d is %s", i+1, why))
					continue
				}
				t.Accept = append(t.Accept, g)
			}
		}
	}
	numberOnly := func(field string) string {
		return fmt.Sprintf("%s is for answer_type number or record, not %s: leave it out", field, t.AnswerType)
	}
	if present(tl.Tolerance) {
		var f float64
		switch {
		case t.AnswerType == datasets.Record && isJSONObject(tl.Tolerance):
			msgs = append(msgs, parsePartTolerance(t, tl.Tolerance)...)
		case t.AnswerType != datasets.Number && t.AnswerType != datasets.Record:
			msgs = append(msgs, numberOnly("tolerance"))
		case json.Unmarshal(tl.Tolerance, &f) != nil:
			msgs = append(msgs, fmt.Sprintf("tolerance is %s, not a number: give the relative tolerance, such as 0.001 for 0.1%%%s", jsonKindOf(tl.Tolerance), byPartHint(t.AnswerType, `{"mean": 0.01}`)))
		case toleranceOutOfRange(f) != "":
			msgs = append(msgs, toleranceOutOfRange(f))
		default:
			t.Tolerance = f
		}
	}
	if present(tl.Decimals) {
		var n int
		switch {
		case t.AnswerType == datasets.Record && isJSONObject(tl.Decimals):
			msgs = append(msgs, parsePartDecimals(t, tl.Decimals)...)
		case t.AnswerType != datasets.Number && t.AnswerType != datasets.Record:
			msgs = append(msgs, numberOnly("decimals"))
		case json.Unmarshal(tl.Decimals, &n) != nil:
			msgs = append(msgs, fmt.Sprintf("decimals is %s, not a whole number: give how many decimals the question asks for, such as 2%s", jsonKindOf(tl.Decimals), byPartHint(t.AnswerType, `{"mean": 2}`)))
		case decimalsOutOfRange(n) != "":
			msgs = append(msgs, decimalsOutOfRange(n))
		default:
			t.Decimals = n
		}
	}
	return msgs
}

func knownTaskField(k string) bool {
	for _, f := range taskFields {
		if f == k {
			return true
		}
	}
	return false
}

func knownAnswerType(a datasets.AnswerType) bool {
	for _, t := range answerTypes {
		if t == a {
			return true
		}
	}
	return false
}

func answerTypeList() string {
	s := make([]string, len(answerTypes))
	for i, t := range answerTypes {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

const maxTaskIDLen = 100

func validTaskID(id string) bool {
	if id == "" || len(id) > maxTaskIDLen || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// maxExactIntegerGold bounds an integer gold: a float64, as a gold is after a
// JSON round trip, holds every integer up to 2^53 exactly.
const maxExactIntegerGold = 1 << 53

// fitGold converts v, a gold as encoding/json decodes it into an any
// (float64, string, []any, ...), to the Go type datasets.Grade expects for
// typ. It accepts what Grade can grade, and no more: a whole number of
// magnitude under 2^53 for integer, a number for number, a non-empty string
// for string, an array of strings and numbers for set and list (numbers
// become their decimal text, as Grade reads them). why, when the gold does
// not fit, says what it is and what was expected, after a subject ("gold
// is", "gold_code answered").
func fitGold(typ datasets.AnswerType, v any) (gold any, why string) {
	switch typ {
	case datasets.Integer:
		f, ok := v.(float64)
		switch {
		case !ok:
			return nil, fmt.Sprintf("%s, which does not fit answer_type integer: expected a whole number, such as 42%s", describeGoldValue(v), unquoteHint(v))
		case f != math.Trunc(f):
			return nil, fmt.Sprintf("%s, which is not a whole number as answer_type integer needs: use answer_type number for a fraction", describeGoldValue(v))
		case math.Abs(f) >= maxExactIntegerGold:
			return nil, fmt.Sprintf("%s, which is too large for answer_type integer (at most 2^53 = %d in magnitude): use answer_type string", describeGoldValue(v), int64(maxExactIntegerGold))
		}
		return int64(f), ""
	case datasets.Number:
		f, ok := v.(float64)
		if !ok {
			return nil, fmt.Sprintf("%s, which does not fit answer_type number: expected a number, such as 3.14%s", describeGoldValue(v), unquoteHint(v))
		}
		return f, ""
	case datasets.String:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Sprintf(`%s, which does not fit answer_type string: expected a string in double quotes, such as "Oslo"`, describeGoldValue(v))
		}
		if strings.TrimSpace(s) == "" {
			return nil, "an empty string, which no answer can match: give the text the answer must be"
		}
		return s, ""
	case datasets.Set, datasets.List:
		xs, ok := v.([]any)
		if !ok {
			return nil, fmt.Sprintf(`%s, which does not fit answer_type %s: expected an array of strings or numbers, such as ["a", "b"]`, describeGoldValue(v), typ)
		}
		out := make([]string, len(xs))
		for i, x := range xs {
			switch x := x.(type) {
			case string:
				out[i] = x
			case float64:
				out[i] = strconv.FormatFloat(x, 'f', -1, 64)
			default:
				return nil, fmt.Sprintf("an array whose element %d is %s, but a %s's elements must be strings or numbers", i+1, describeGoldValue(x), typ)
			}
		}
		return out, ""
	case datasets.Record:
		return fitRecordGold(v)
	}
	return nil, fmt.Sprintf("not checked: unknown answer_type %q (expected one of %s)", typ, answerTypeList())
}

// describeGoldValue says what a decoded JSON value is: the string "42", the
// number 4.5, an array of 3 elements.
func describeGoldValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("%v (a boolean)", v)
	case float64:
		return "the number " + strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return "the string " + strconv.Quote(clipTaskText(v))
	case []any:
		if len(v) == 1 {
			return "an array of 1 element"
		}
		return fmt.Sprintf("an array of %d elements", len(v))
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// unquoteHint suggests writing a number without quotes when v is a string
// that holds one.
func unquoteHint(v any) string {
	if s, ok := v.(string); ok {
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return " (write the number without quotes)"
		}
	}
	return ""
}

// jsonKindOf names the kind of a raw JSON value.
func jsonKindOf(v json.RawMessage) string {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return "not JSON"
	}
	switch x.(type) {
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a " + fmt.Sprintf("%T", x)
}

// clipTaskText cuts s to 60 runes for a message.
func clipTaskText(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

// GoldError is a task whose gold_code did not give a gold: it raised, ran
// past its timeout, killed the kernel, never called ANSWER (or answered
// None: the kernel does not tell them apart), or answered a value that does
// not fit the answer type. It is the user's input error
// (exit code 2), as a bad line of the task file is.
type GoldError struct {
	Task string // the task's id
	Line int    // the task's line in the task file
	Msg  string // what went wrong and what to do
	// Result is the gold_code cell's result, when it ran to an end.
	Result kernel.Result
	// Killed is the kernel's error when the cell ended the kernel itself
	// (a *kernel.DeadError or *kernel.DeadlineError).
	Killed error
}

func (e *GoldError) Error() string {
	return fmt.Sprintf("task %s (line %d): %s", e.Task, e.Line, e.Msg)
}

// Unwrap is the kernel's error, for gold_code that killed the kernel.
func (e *GoldError) Unwrap() error { return e.Killed }

// Problem is e as a problem of the task file, at the task's line.
func (e *GoldError) Problem() TaskProblem {
	return TaskProblem{Line: e.Line, Msg: fmt.Sprintf("task %s: %s", e.Task, e.Msg)}
}

// ResolveGolds gives each of tasks as ResolveGold does, in order, running
// every gold_code before it returns, each in a fresh kernel over p (nil:
// none) that it starts through tr (unused, and may be nil, when no task has
// gold_code). A gold_code that fails does not stop it: its task is left
// out of golds and its *GoldError is one of problems, so that a file's
// every failing gold_code is reported at once, with its line. The error is
// what stops it: ctx ended, a kernel that cannot start, or a prefix cell
// that fails (the *prefixes.BuildError of prefixes.Build, wrapped), which
// every gold_code would meet.
func ResolveGolds(ctx context.Context, tr kernel.Transport, p *prefixes.Prefix, tasks []UserTask, opts kernel.ExecOptions) (golds []datasets.Task, problems []TaskProblem, _ error) {
	lang := kernel.Python
	if p != nil {
		lang = p.Language
	}
	var k *kernel.Client
	defer func() {
		if k != nil {
			_ = k.Close()
		}
	}()
	for _, t := range tasks {
		var kk kernel.Kernel
		if t.GoldCode != "" {
			var err error
			if k == nil {
				if k, err = kernel.Start(ctx, lang, tr, kernel.ClientOptions{}); err != nil {
					return nil, nil, err
				}
			} else if err = k.Restart(ctx); err != nil {
				return nil, nil, err
			}
			kk = k
		}
		g, err := ResolveGold(ctx, kk, p, t, opts)
		var ge *GoldError
		switch {
		case errors.As(err, &ge):
			problems = append(problems, ge.Problem())
		case err != nil:
			return nil, nil, err
		default:
			golds = append(golds, g)
		}
	}
	return golds, problems, nil
}

// ResolveGold gives t as the datasets.Task a trial grades against, its
// Template and Params empty.
//
// A task with a gold needs no kernel (k may be nil). For a task with
// gold_code, ResolveGold builds p in k (p nil: no prefix), runs the
// gold_code as one cell, and takes the value it gave ANSWER as the gold,
// converted as ReadTasks converts a gold. k should be a fresh kernel over
// the task's data; ResolveGold leaves the prefix's and gold_code's names
// bound in it, so restart or close it after.
//
// gold_code that fails is a *GoldError (see there). A prefix cell that
// fails is the *prefixes.BuildError of prefixes.Build, wrapped; any other
// error means the kernel, not the task, is broken.
func ResolveGold(ctx context.Context, k kernel.Kernel, p *prefixes.Prefix, t UserTask, opts kernel.ExecOptions) (datasets.Task, error) {
	task := datasets.Task{ID: t.ID, Question: t.Question, AnswerType: t.AnswerType, Gold: t.Gold,
		Accept: t.Accept, Tolerance: t.Tolerance, Decimals: t.Decimals,
		PartTolerance: t.PartTolerance, PartDecimals: t.PartDecimals, Meta: t.Meta}
	if t.GoldCode == "" {
		if t.Gold == nil {
			return datasets.Task{}, &GoldError{Task: t.ID, Line: t.Line, Msg: `has neither gold nor gold_code: give the answer as "gold", or code that ends with ANSWER(value) as "gold_code"`}
		}
		return task, nil
	}
	if k == nil {
		return datasets.Task{}, fmt.Errorf("task %s (line %d): gold_code needs a kernel, and none was given", t.ID, t.Line)
	}
	if p != nil {
		if _, err := prefixes.Build(ctx, k, p, opts); err != nil {
			return datasets.Task{}, fmt.Errorf("task %s (line %d): build the prefix for gold_code: %w", t.ID, t.Line, err)
		}
	}
	res, err := k.Execute(ctx, t.GoldCode, opts)
	var dead *kernel.DeadError
	var deadline *kernel.DeadlineError
	if err != nil && ctx.Err() == nil && (errors.As(err, &dead) || errors.As(err, &deadline)) {
		return datasets.Task{}, &GoldError{Task: t.ID, Line: t.Line, Killed: err,
			Msg: fmt.Sprintf("gold_code killed the kernel (%v): it must not exit or block interrupts", err)}
	}
	if err != nil {
		return datasets.Task{}, fmt.Errorf("task %s (line %d): run gold_code: %w", t.ID, t.Line, err)
	}
	gerr := func(format string, args ...any) error {
		return &GoldError{Task: t.ID, Line: t.Line, Result: res, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case res.Status == kernel.StatusTimeout:
		return datasets.Task{}, gerr("gold_code ran past its timeout (%s) and was interrupted: make it faster, or give the answer as gold", goldTimeout(opts))
	case res.Status != kernel.StatusOK:
		name, tb := goldException(res)
		return datasets.Task{}, gerr("gold_code raised %s; fix the code (it runs after the prefix's cells, over the data folder), or give the answer as gold%s", name, tb)
	case !res.Answered():
		return datasets.Task{}, gerr("gold_code gave no answer: it ran to its end without calling ANSWER(value), or answered None (or NaN); end it with ANSWER of the gold")
	}
	var v any
	if err := json.Unmarshal(res.Answer, &v); err != nil {
		return datasets.Task{}, fmt.Errorf("task %s (line %d): the kernel recorded an answer that is not JSON (%q): %w", t.ID, t.Line, clipTaskText(string(res.Answer)), err)
	}
	gold, why := fitGold(t.AnswerType, v)
	if why != "" {
		return datasets.Task{}, gerr("gold_code answered %s", why)
	}
	if why := partsFitGold(t, gold); why != "" {
		return datasets.Task{}, gerr("gold_code answered a record whose parts do not fit the task: %s", why)
	}
	task.Gold = gold
	return task, nil
}

func goldTimeout(o kernel.ExecOptions) string {
	if o.Timeout > 0 {
		return o.Timeout.String()
	}
	return kernel.DefaultTimeout.String()
}

// goldException is "Name: value" of a failed cell, and its compact
// traceback, indented on lines of its own, when it has one.
func goldException(res kernel.Result) (name, traceback string) {
	if res.Error == nil {
		return "an error (status " + string(res.Status) + ")", ""
	}
	name = res.Error.Name
	if res.Error.Value != "" {
		name += ": " + res.Error.Value
	}
	for _, l := range strings.Split(strings.TrimSpace(res.Error.Traceback), "\n") {
		if l != "" {
			traceback += "\n    " + l
		}
	}
	return name, traceback
}

// Reference is the code the built-in reference model plays for t in a
// session that starts from prefix p, or "" when t has no solution.
//
// written is the prefix the solution was written against (the --prefix of
// the run; nil when the solution stands alone). When p is written (the
// same prefix, or one with the same language and cells), the solution runs
// as it is. Otherwise, as in condition A (p nil: no prefix, a bash tool)
// or a prefix that binds nothing, the names the solution uses are not
// bound, so Reference returns written's cells, in order and each followed
// by a blank line, then the solution: code that runs on its own over the
// data folder.
func (t UserTask) Reference(p, written *prefixes.Prefix) string {
	if t.Solution == "" || written == nil || samePrefix(p, written) {
		return t.Solution
	}
	var b strings.Builder
	for _, c := range written.Cells {
		b.WriteString(strings.TrimRight(c.Code, "\n"))
		b.WriteString("\n\n")
	}
	b.WriteString(t.Solution)
	return b.String()
}

func samePrefix(a, b *prefixes.Prefix) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.Language != b.Language || len(a.Cells) != len(b.Cells) {
		return false
	}
	for i := range a.Cells {
		if a.Cells[i].Code != b.Cells[i].Code {
			return false
		}
	}
	return true
}
