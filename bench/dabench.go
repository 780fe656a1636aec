package bench

// Importing InfiAgent-DABench, a public benchmark of data-analysis
// questions over CSV tables, into a task file (ctxcode tasks import
// --format dabench DIR --out FILE).
//
// The benchmark's folder, as it is published, holds for a set X (such as
// da-dev):
//
//	X-questions.jsonl  one JSON object a line: id (an integer), question,
//	                   concepts (strings), constraints (the method and its
//	                   parameters), format (the answer's form, such as
//	                   "@mean_fare[mean_fare_value] where ..."), file_name
//	                   (the table), level (easy, medium or hard)
//	X-labels.jsonl     one JSON object a line: id, and common_answers, a
//	                   list of [name, value as text] pairs
//	X-tables/          every CSV a question names
//
// Each question with labels and a table becomes one task line:
//
//	id           "dabench-" and the question's id
//	question     the question, its constraints and its format, and a line
//	             saying that ANSWER takes a dict of the labels' names
//	answer_type  "record"
//	gold         the labels as a record: a value written as a number is a
//	             JSON number, True and False are booleans, any other text
//	             is a string
//	decimals     by part, the decimals a number's text has ("34.65": 2);
//	             whole numbers have none
//	data         the task's own folder, relative to the task file's: the
//	             tables folder written beside it (TablesDirFor) and, in it,
//	             one folder per table holding a copy of that table alone,
//	             since a task's data folder is shown whole to the kernel
//	solution     optional, from a solutions file (AttachSolutions)
//	meta         level, concepts and file_name, as the question gives them
//
// Lines that cannot be imported (a question without labels, labels
// without a question, a missing table, a malformed line) are Problems,
// each with its file and line; the good ones are imported all the same.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/internal/outfile"
)

// DABenchIDPrefix begins the id of every task the importer writes.
const DABenchIDPrefix = "dabench-"

// The names of a DABench set's files: X-questions.jsonl, X-labels.jsonl
// and the folder X-tables.
const (
	dabenchQuestions = "-questions.jsonl"
	dabenchLabels    = "-labels.jsonl"
	dabenchTables    = "-tables"
)

// ImportedTask is one task line as the DABench importer writes it (see the
// top of this file for its fields). Its JSON is the line.
type ImportedTask struct {
	ID         string     `json:"id"`
	Question   string     `json:"question"`
	AnswerType string     `json:"answer_type"`
	Gold       NamedParts `json:"gold"`
	// Decimals holds an int for each numeric part whose text has decimals.
	Decimals NamedParts  `json:"decimals,omitempty"`
	Data     string      `json:"data"`
	Solution string      `json:"solution,omitempty"`
	Meta     DABenchMeta `json:"meta"`

	// Table is the folder, under the tables folder, that holds the task's
	// table; Data is set from it when the file is written (TaskFile).
	Table string `json:"-"`
	// Source is the path of the table in the benchmark's folder.
	Source string `json:"-"`
}

// DABenchMeta is a task's meta field: what the question says of itself.
type DABenchMeta struct {
	Level    string   `json:"level,omitempty"`
	Concepts []string `json:"concepts,omitempty"`
	FileName string   `json:"file_name"`
}

// NamedPart is one named part of a record.
type NamedPart struct {
	Name  string
	Value any // int64, float64, bool or string
}

// NamedParts is a record whose parts keep their order: its JSON is an object
// with the parts as its fields, in order.
type NamedParts []NamedPart

// MarshalJSON writes p as a JSON object, its fields in p's order.
func (p NamedParts) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, part := range p {
		if i > 0 {
			b.WriteString(", ")
		}
		k, err := marshalPlain(part.Name)
		if err != nil {
			return nil, err
		}
		v, err := marshalPlain(part.Value)
		if err != nil {
			return nil, fmt.Errorf("part %s: %w", part.Name, err)
		}
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalPlain is v's JSON without HTML escaping, so that text such as
// "a < b" stays as written.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// ImportProblem is a line of the benchmark's files (or a file, Line 0)
// that could not be imported, and why.
type ImportProblem struct {
	File string
	Line int // 1-based; 0 for the file as a whole
	Msg  string
}

func (p ImportProblem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// DABenchImport is what ImportDABench read: the tasks it can write, in the
// questions file's order, and the problems of the lines it left out.
type DABenchImport struct {
	Tasks    []ImportedTask
	Problems []ImportProblem
	// Notes are about tasks imported all the same: a format line that
	// names other parts than the labels do.
	Notes []ImportProblem
	// Tables is the benchmark's tables folder; Questions and Labels its
	// files.
	Tables, Questions, Labels string
	// Solutions is the solutions file attached, if any.
	Solutions string
}

// dabenchQuestion is a line of X-questions.jsonl as decoded.
type dabenchQuestion struct {
	ID          json.RawMessage `json:"id"`
	Question    *string         `json:"question"`
	Concepts    []string        `json:"concepts"`
	Constraints string          `json:"constraints"`
	Format      string          `json:"format"`
	FileName    *string         `json:"file_name"`
	Level       string          `json:"level"`
}

// dabenchLabel is a line of X-labels.jsonl as decoded.
type dabenchLabel struct {
	ID            json.RawMessage   `json:"id"`
	CommonAnswers []json.RawMessage `json:"common_answers"`
}

// ImportDABench reads the DABench set in dir (see the top of this file)
// and converts every question that has labels and a table. The problems
// of the lines it leaves out are in the result's Problems. The error is an
// *InputError when dir is not such a folder (no questions file, several,
// no labels file), or a failure to read it.
func ImportDABench(dir string) (*DABenchImport, error) {
	if err := outfile.CheckDataDir(dir); err != nil {
		return nil, inputErrorf("%v", err)
	}
	qpath, err := findQuestions(dir)
	if err != nil {
		return nil, err
	}
	set := strings.TrimSuffix(filepath.Base(qpath), dabenchQuestions)
	lpath := filepath.Join(dir, set+dabenchLabels)
	if !outfile.Exists(lpath) {
		return nil, inputErrorf("%s: no labels file %s beside %s: the answers are in it; give the folder that holds both, as the benchmark publishes them", dir, filepath.Base(lpath), filepath.Base(qpath))
	}
	im := &DABenchImport{Questions: qpath, Labels: lpath}
	var tablesProblem *ImportProblem
	im.Tables, tablesProblem = findTables(dir, set)
	if tablesProblem != nil {
		im.Problems = append(im.Problems, *tablesProblem)
	}

	questions, qlines, problems, err := readQuestions(qpath)
	if err != nil {
		return nil, err
	}
	im.Problems = append(im.Problems, problems...)
	labels, llines, badLabels, problems, err := readLabels(lpath)
	if err != nil {
		return nil, err
	}
	im.Problems = append(im.Problems, problems...)

	folders := tableFolders(questions)
	for _, id := range sortedByLine(qlines) {
		q, line := questions[id], qlines[id]
		problem := func(format string, args ...any) {
			im.Problems = append(im.Problems, ImportProblem{File: qpath, Line: line, Msg: fmt.Sprintf(format, args...)})
		}
		parts, ok := labels[id]
		if bad, isBad := badLabels[id]; !ok && isBad {
			problem("question %s: its labels (%s, line %d) cannot be used: it is left out", id, filepath.Base(lpath), bad)
			continue
		}
		if !ok {
			problem("question %s has no labels in %s: it is left out (its answers are needed to grade it)", id, filepath.Base(lpath))
			continue
		}
		if im.Tables == "" {
			continue // the folder's problem says it
		}
		src := filepath.Join(im.Tables, *q.FileName)
		if st, err := os.Stat(src); err != nil || !st.Mode().IsRegular() {
			problem("question %s: its table %s is not in %s: it is left out; put the table there", id, *q.FileName, im.Tables)
			continue
		}
		gold, decimals := goldOf(parts)
		if named := formatNames(q.Format); len(named) > 0 && !sameNames(named, gold) {
			im.Notes = append(im.Notes, ImportProblem{File: qpath, Line: line, Msg: fmt.Sprintf(
				"question %s: its format names %s but its labels %s: the task asks for the labels' names, which it is graded by", id, strings.Join(named, ", "), partNames(gold))})
		}
		im.Tasks = append(im.Tasks, ImportedTask{
			ID:         DABenchIDPrefix + id,
			Question:   dabenchQuestionText(q, gold),
			AnswerType: "record",
			Gold:       gold,
			Decimals:   decimals,
			Meta:       DABenchMeta{Level: q.Level, Concepts: q.Concepts, FileName: *q.FileName},
			Table:      folders[*q.FileName],
			Source:     src,
		})
	}
	for _, id := range sortedByLine(llines) {
		if _, ok := questions[id]; !ok {
			im.Problems = append(im.Problems, ImportProblem{File: lpath, Line: llines[id],
				Msg: fmt.Sprintf("labels of question %s, which %s does not have: they are left out", id, filepath.Base(qpath))})
		}
	}
	// The folder's problems first, then the questions', then the labels'.
	rank := map[string]int{dir: 0, qpath: 1, lpath: 2}
	sort.SliceStable(im.Problems, func(i, j int) bool {
		a, b := im.Problems[i], im.Problems[j]
		if a.File != b.File {
			return rank[a.File] < rank[b.File]
		}
		return a.Line < b.Line
	})
	return im, nil
}

// findQuestions is the one X-questions.jsonl in dir.
func findQuestions(dir string) (string, error) {
	found, err := filepath.Glob(filepath.Join(dir, "*"+dabenchQuestions))
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", inputErrorf("%s holds no *%s: give the folder of InfiAgent-DABench's data, which holds da-dev%s, da-dev%s and the folder da-dev%s", dir, dabenchQuestions, dabenchQuestions, dabenchLabels, dabenchTables)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = filepath.Base(f)
	}
	return "", inputErrorf("%s holds %d question files (%s): put each set in a folder of its own and import them one at a time", dir, len(found), strings.Join(names, ", "))
}

// findTables is the tables folder of set in dir: X-tables, else tables.
func findTables(dir, set string) (string, *ImportProblem) {
	for _, name := range []string{set + dabenchTables, "tables"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p, nil
		}
	}
	return "", &ImportProblem{File: dir, Msg: fmt.Sprintf("no tables folder: expected %s%s (or tables) in it, holding the CSV files the questions name", set, dabenchTables)}
}

// readQuestions reads X-questions.jsonl: the good questions by id, their
// lines, and the problems of the others.
func readQuestions(path string) (map[string]dabenchQuestion, map[string]int, []ImportProblem, error) {
	qs := map[string]dabenchQuestion{}
	lines := map[string]int{}
	problems, err := eachLine(path, func(n int, line []byte, problem func(string, ...any)) {
		var q dabenchQuestion
		if err := json.Unmarshal(line, &q); err != nil {
			problem("not a question (%s): expected a JSON object with id, question, constraints, format, file_name, level and concepts", dabenchJSONProblem(err))
			return
		}
		id, why := dabenchID(q.ID)
		msgs := []string{}
		if why != "" {
			msgs = append(msgs, why)
		}
		if q.Question == nil || strings.TrimSpace(*q.Question) == "" {
			msgs = append(msgs, "no question text")
		}
		switch {
		case q.FileName == nil || strings.TrimSpace(*q.FileName) == "":
			msgs = append(msgs, "no file_name: name the table the question is about")
		case !plainFileName(*q.FileName):
			msgs = append(msgs, fmt.Sprintf("file_name %q is not a file's name: expected a name such as test_ave.csv, without folders", *q.FileName))
		}
		if len(msgs) > 0 {
			problem("%s: it is left out", strings.Join(msgs, "; "))
			return
		}
		if first, ok := lines[id]; ok {
			problem("question %s again (line %d has it): it is left out", id, first)
			return
		}
		qs[id], lines[id] = q, n
	})
	return qs, lines, problems, err
}

// readLabels reads X-labels.jsonl: the good labels by id, as parts, their
// lines, the first line of each id whose labels cannot be used, and the
// problems of those lines.
func readLabels(path string) (labels map[string][][2]string, lines, bad map[string]int, _ []ImportProblem, _ error) {
	labels = map[string][][2]string{}
	lines, bad = map[string]int{}, map[string]int{}
	markBad := func(id string, n int) {
		if _, ok := bad[id]; !ok {
			bad[id] = n
		}
	}
	problems, err := eachLine(path, func(n int, line []byte, problem func(string, ...any)) {
		var l dabenchLabel
		if err := json.Unmarshal(line, &l); err != nil {
			problem("not a label (%s): expected a JSON object with id and common_answers, such as %s", dabenchJSONProblem(err), `{"id": 0, "common_answers": [["mean_fare", "34.65"]]}`)
			return
		}
		id, why := dabenchID(l.ID)
		if why != "" {
			problem("%s: it is left out", why)
			return
		}
		if len(l.CommonAnswers) == 0 {
			problem("labels of question %s have no common_answers: they are left out", id)
			markBad(id, n)
			return
		}
		var parts [][2]string
		seen := map[string]bool{}
		for i, raw := range l.CommonAnswers {
			name, value, why := labelPart(raw)
			if why == "" && seen[name] {
				why = fmt.Sprintf("names %q twice", name)
			}
			if why != "" {
				problem("labels of question %s: answer %d %s: they are left out", id, i+1, why)
				markBad(id, n)
				return
			}
			seen[name] = true
			parts = append(parts, [2]string{name, value})
		}
		if first, ok := lines[id]; ok {
			problem("labels of question %s again (line %d has them): they are left out", id, first)
			return
		}
		labels[id], lines[id] = parts, n
	})
	return labels, lines, bad, problems, err
}

// labelPart reads one [name, value] pair of common_answers; a value given
// as a JSON number or boolean is taken as its text.
func labelPart(raw json.RawMessage) (name, value, why string) {
	var pair []json.RawMessage
	if json.Unmarshal(raw, &pair) != nil || len(pair) != 2 {
		return "", "", "is not a [name, value] pair"
	}
	if json.Unmarshal(pair[0], &name) != nil || strings.TrimSpace(name) == "" {
		return "", "", "has no name (expected a string first)"
	}
	name = strings.TrimSpace(name)
	var v any
	if json.Unmarshal(pair[1], &v) != nil {
		return "", "", "has a value that is not JSON"
	}
	switch v := v.(type) {
	case string:
		value = strings.TrimSpace(v)
	case float64:
		value = strings.TrimSpace(string(pair[1]))
	case bool:
		value = "False"
		if v {
			value = "True"
		}
	default:
		return "", "", fmt.Sprintf("%q has a value that is neither text nor a number", name)
	}
	if value == "" {
		return "", "", fmt.Sprintf("%q has an empty value", name)
	}
	return name, value, ""
}

// eachLine calls f on each non-blank line of the file at path, with its
// number and a function that records a problem of it.
func eachLine(path string, f func(n int, line []byte, problem func(string, ...any))) ([]ImportProblem, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	var problems []ImportProblem
	for i, raw := range bytes.Split(src, []byte("\n")) {
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			continue
		}
		n := i + 1
		f(n, line, func(format string, args ...any) {
			problems = append(problems, ImportProblem{File: path, Line: n, Msg: fmt.Sprintf(format, args...)})
		})
	}
	return problems, nil
}

// dabenchJSONProblem says what encoding/json found wrong with a line, in
// the file's terms rather than Go's.
func dabenchJSONProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	if te.Field == "" {
		return "a JSON " + te.Value + ", not an object"
	}
	want := "text"
	switch te.Type.Kind() {
	case reflect.Slice:
		want = "a list"
		if te.Type.Elem().Kind() == reflect.String {
			want = "a list of strings"
		}
	case reflect.Ptr:
		if te.Type.Elem().Kind() != reflect.String {
			want = te.Type.Elem().Kind().String()
		}
	}
	return fmt.Sprintf("%s is a JSON %s, not %s", te.Field, te.Value, want)
}

// dabenchID is the text of a question's id: a whole number (as the
// benchmark writes it) or a string that can end a task id.
func dabenchID(raw json.RawMessage) (string, string) {
	if raw == nil || string(raw) == "null" {
		return "", "no id"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", "an id that is not JSON"
	}
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil && i >= 0 {
			return strconv.FormatInt(i, 10), ""
		}
		return "", fmt.Sprintf("id %s is not a whole number of 0 or more", v)
	case string:
		if validTaskID(DABenchIDPrefix + v) {
			return v, ""
		}
		return "", fmt.Sprintf("id %q is not a whole number or a plain name (letters, digits, '.', '_' and '-')", clipTaskText(v))
	}
	return "", "id is not a whole number"
}

// plainFileName says whether name is a file's name, without folders, that
// is not hidden.
func plainFileName(name string) bool {
	return name != "" && name[0] != '.' && !strings.ContainsAny(name, `/\`) && filepath.IsLocal(name)
}

// sortedByLine is the keys of lines in the order of their lines.
func sortedByLine(lines map[string]int) []string {
	ids := make([]string, 0, len(lines))
	for id := range lines {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return lines[ids[i]] < lines[ids[j]] })
	return ids
}

// tableFolders names the folder, under the tables folder, of each table
// the questions name: the table's name without its extension, or, when
// two tables share that (a.csv, a.tsv), the whole name with its dot made a
// '-'.
func tableFolders(qs map[string]dabenchQuestion) map[string]string {
	byStem := map[string][]string{}
	for _, q := range qs {
		name := *q.FileName
		stem := strings.TrimSuffix(name, filepath.Ext(name))
		if !slices.Contains(byStem[stem], name) {
			byStem[stem] = append(byStem[stem], name)
		}
	}
	folders := map[string]string{}
	for stem, names := range byStem {
		for _, name := range names {
			if len(names) == 1 && stem != "" {
				folders[name] = stem
			} else {
				folders[name] = strings.ReplaceAll(name, ".", "-")
			}
		}
	}
	return folders
}

// dabenchNumber is a label's text that is a number: an optional sign,
// digits with an optional fraction (or a fraction alone), an optional
// exponent. A whole part with a leading zero ("007") is not one: that is
// a code, kept as text.
var dabenchNumber = regexp.MustCompile(`^[+-]?([1-9][0-9]*|0)?(\.[0-9]*)?([eE][+-]?[0-9]+)?$`)

// maxExactDigits is the most digits a whole number may have to be a JSON
// number that a float64 holds exactly; longer ones stay text.
const maxExactDigits = 15

// goldOf is the record of a question's labels and the decimals of its
// numeric parts.
func goldOf(labels [][2]string) (gold, decimals NamedParts) {
	for _, l := range labels {
		v, d := labelValue(l[1])
		gold = append(gold, NamedPart{Name: l[0], Value: v})
		if d > 0 {
			decimals = append(decimals, NamedPart{Name: l[0], Value: d})
		}
	}
	return gold, decimals
}

// labelValue is a label's text as a record part: an int64 or a float64 for
// a number, with the decimals its text has (0 for a whole number or one
// with an exponent), a bool for True or False, else the text.
func labelValue(text string) (any, int) {
	switch text {
	case "True", "true":
		return true, 0
	case "False", "false":
		return false, 0
	}
	m := dabenchNumber.FindStringSubmatch(text)
	if m == nil || m[1] == "" && len(m[2]) < 2 {
		return text, 0
	}
	whole, frac, exp := m[1], m[2], m[3]
	if frac == "" && exp == "" {
		if len(whole) > maxExactDigits {
			return text, 0
		}
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return text, 0
		}
		return i, 0
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return text, 0
	}
	d := 0
	if exp == "" && len(frac) > 1 && len(frac)-1 <= maxDecimals {
		d = len(frac) - 1
	}
	return f, d
}

// dabenchQuestionText is the question a task asks: DABench's question,
// its constraints and format, and how to answer.
func dabenchQuestionText(q dabenchQuestion, gold NamedParts) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(*q.Question))
	if c := strings.TrimSpace(q.Constraints); c != "" {
		b.WriteString("\nConstraints: " + c)
	}
	if f := strings.TrimSpace(q.Format); f != "" {
		b.WriteString("\nFormat: " + f)
	}
	b.WriteString("\nGive ANSWER a dict of these named parts: {")
	for i, p := range gold {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := marshalPlain(p.Name)
		b.Write(k)
		b.WriteString(": ...")
	}
	b.WriteString("}.")
	return b.String()
}

// formatParts finds the parts a DABench format line names: @name[...].
var formatParts = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)\[`)

// formatNames is the names of the parts a format line asks for, in order,
// each once.
func formatNames(format string) []string {
	var names []string
	for _, m := range formatParts.FindAllStringSubmatch(format, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// sameNames says whether names and the parts of gold are the same set.
func sameNames(names []string, gold NamedParts) bool {
	if len(names) != len(gold) {
		return false
	}
	for _, p := range gold {
		if !slices.Contains(names, p.Name) {
			return false
		}
	}
	return true
}

func partNames(gold NamedParts) string {
	names := make([]string, len(gold))
	for i, p := range gold {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// TablesDirFor is the tables folder written beside the task file out: its
// name without the extension, and "-tables" (tasks.jsonl: tasks-tables).
func TablesDirFor(out string) string {
	base := filepath.Base(out)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if stem == "" {
		stem = base
	}
	return filepath.Join(filepath.Dir(out), stem+dabenchTables)
}

// CheckOutputs is an *InputError unless the task file out and the tables
// folder beside it (TablesDirFor) may be written: out is none of the files
// read, and the tables folder does not exist (or force is on and it is a
// folder), and it is neither the benchmark's tables folder nor in it, nor
// holds it. That out itself may be written is outfile.CheckOutput's.
func (im *DABenchImport) CheckOutputs(out string, force bool) error {
	for _, in := range []string{im.Questions, im.Labels, im.Solutions} {
		if in != "" && outfile.SameFile(out, in) {
			return inputErrorf("--out %s is %s, which the import reads: name another file", out, in)
		}
	}
	dir := TablesDirFor(out)
	if im.Tables != "" && (outfile.Inside(dir, im.Tables) || outfile.Inside(im.Tables, dir)) {
		return inputErrorf("the tables would be written to %s, which overlaps the benchmark's tables folder %s: name --out elsewhere", dir, im.Tables)
	}
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return outInputError(outfile.CheckNewDir(dir))
	case err != nil:
		return inputErrorf("%s: %v", dir, outfile.UnwrapPath(err))
	case !st.IsDir():
		return inputErrorf("%s is not a folder, and the tables go there: move it away or name --out elsewhere", dir)
	case !force:
		return inputErrorf("%s exists; pass --force to write the tables into it (its other files are left alone)", dir)
	}
	return nil
}

func outInputError(err error) error {
	var ie *outfile.InputError
	if errors.As(err, &ie) {
		return &InputError{Msg: ie.Msg}
	}
	return err
}

// WriteTables copies each task's table into its folder under dir, made if
// needed: each table once, through a temporary file, replacing a file of
// that name (CheckOutputs first refuses a dir that exists without force).
// Other files in dir are left alone.
func (im *DABenchImport) WriteTables(dir string) error {
	done := map[string]bool{}
	for _, t := range im.Tasks {
		dst := filepath.Join(dir, t.Table, t.Meta.FileName)
		if done[dst] {
			continue
		}
		done[dst] = true
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := copyFile(t.Source, dst); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst through a temporary file beside dst.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := out.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	_, err = io.Copy(out, in)
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return os.Rename(tmp, dst)
}

// TaskFile is the task file of the tasks, one JSON line each, whose data
// folders lie in tables, the tables folder's path relative to the task
// file's folder (filepath.Base(TablesDirFor(out))).
func (im *DABenchImport) TaskFile(tables string) ([]byte, error) {
	var b bytes.Buffer
	for _, t := range im.Tasks {
		t.Data = filepath.ToSlash(filepath.Join(tables, t.Table))
		line, err := marshalPlain(t)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// TableCount is the number of tables the tasks use.
func (im *DABenchImport) TableCount() int {
	seen := map[string]bool{}
	for _, t := range im.Tasks {
		seen[t.Table] = true
	}
	return len(seen)
}

// AttachSolutions reads a solutions file (JSON lines: {"id": ..., "solution":
// "code"}, the id a task's, such as "dabench-3", or the question's, 3) and
// gives each task its solution. Lines it cannot use are problems; they
// leave no task out. A file that cannot be read is an *InputError.
func (im *DABenchImport) AttachSolutions(path string) ([]ImportProblem, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, inputErrorf("--solutions %s: %v", path, outfile.UnwrapPath(err))
	}
	im.Solutions = path
	byID := map[string]int{}
	for i, t := range im.Tasks {
		byID[t.ID] = i
	}
	seen := map[string]int{}
	return eachLine(path, func(n int, line []byte, problem func(string, ...any)) {
		var s struct {
			ID       json.RawMessage `json:"id"`
			Solution string          `json:"solution"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			problem("not a solution (%s): expected a JSON object such as %s", dabenchJSONProblem(err), `{"id": "dabench-0", "solution": "ANSWER({...})"}`)
			return
		}
		id, why := dabenchID(s.ID)
		if why != "" {
			problem("%s", why)
			return
		}
		if !strings.HasPrefix(id, DABenchIDPrefix) {
			id = DABenchIDPrefix + id
		}
		i, ok := byID[id]
		switch {
		case strings.TrimSpace(s.Solution) == "":
			problem("solution of %s is empty", id)
		case !ok:
			problem("solution of %s, a task the import does not have: left out", id)
		case seen[id] > 0:
			problem("solution of %s again (line %d has it): left out", id, seen[id])
		default:
			seen[id] = n
			im.Tasks[i].Solution = s.Solution
		}
	})
}
