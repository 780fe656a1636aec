package prefixes

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/ctxcode/ctxcode/kernel"
)

// Skipped is a file of the data folder that Init left out, and why.
type Skipped struct {
	File   string
	Reason string
}

// dataFile is a loadable file of the data folder, as Init saw it.
type dataFile struct {
	name   string // file name in the data folder
	format string // jsonl, json or csv
	ident  string // the variable it is bound to
	fields []string
	// small lists, per field, the values of fields with few distinct values.
	small map[string][]string
	table bool   // a list of records (fields and values make sense)
	kind  string // for JSON that is not a table: dict, list or scalar
	n     int    // records of a table, elements of a list

	// For the Go prefix: the fields in the order they first appear (CSV:
	// the header, duplicates included), with the JSON kinds of their values.
	columns []column
}

// column is one field of a table as Init saw it.
type column struct {
	key     string
	kinds   map[string]bool // string, int, float, bool, null, object or array
	present int             // how many records have it
}

// maxDistinct is how many distinct values a field may have for Init to show
// them all.
const maxDistinct = 8

// Init writes a prefix for a folder of .jsonl, .json and .csv files: it
// lists the folder, binds one variable per file (names made from the file
// names, valid and unique), shows their lengths, their field names, the
// values of fields with few distinct values, and the last record of each.
// It returns the prefix source and the files it left out, with reasons.
//
// lang is python (tables are lists of dicts) or go (tables are slices of
// generated struct types, whose declarations name the fields; see
// renderGoInit for the typing).
func Init(dir string, lang kernel.Language) ([]byte, []Skipped, error) {
	if lang != kernel.Python && lang != kernel.Go {
		return nil, nil, fmt.Errorf("prefix init writes python and go prefixes, not %q", lang)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read data folder: %w", err)
	}
	var files []*dataFile
	var skipped []Skipped
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		format := strings.TrimPrefix(strings.ToLower(filepath.Ext(name)), ".")
		if format != "jsonl" && format != "json" && format != "csv" {
			skipped = append(skipped, Skipped{name, "not .jsonl, .json or .csv"})
			continue
		}
		if name == "manifest.json" {
			skipped = append(skipped, Skipped{name, "a ctxcode manifest, not data"})
			continue
		}
		f, err := inspect(filepath.Join(dir, name), format)
		if err != nil {
			skipped = append(skipped, Skipped{name, err.Error()})
			continue
		}
		f.name, f.format = name, format
		files = append(files, f)
	}
	if len(files) == 0 {
		var why []string
		for _, s := range skipped {
			why = append(why, s.File+": "+s.Reason)
		}
		if len(why) == 0 {
			why = append(why, "the folder is empty")
		}
		return nil, skipped, fmt.Errorf("no loadable file in %s (%s)", dir, strings.Join(why, "; "))
	}
	if lang == kernel.Go {
		return renderGoInit(filepath.Base(dir), files), skipped, nil
	}
	used := map[string]bool{}
	for _, f := range files {
		f.ident = identifier(strings.TrimSuffix(f.name, filepath.Ext(f.name)), used)
	}
	return renderInit(filepath.Base(dir), files), skipped, nil
}

// inspect reads a file to learn its records' fields and small value sets.
func inspect(path, format string) (*dataFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []map[string]any
	var raws [][]byte // the JSON records, for their fields' order and kinds
	var header []string
	switch format {
	case "jsonl":
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var row map[string]any
			if err := json.Unmarshal(line, &row); err != nil {
				return nil, fmt.Errorf("line %d is not a JSON object: %v", n, err)
			}
			rows = append(rows, row)
			raws = append(raws, bytes.Clone(line))
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	case "json":
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		switch x := v.(type) {
		case map[string]any:
			return &dataFile{kind: "dict"}, nil // loaded and shown, but not a table
		case []any:
			for _, item := range x {
				if m, ok := item.(map[string]any); ok {
					rows = append(rows, m)
				}
			}
			if len(rows) != len(x) || len(x) == 0 {
				return &dataFile{kind: "list", n: len(x)}, nil
			}
			var elems []json.RawMessage
			if err := json.Unmarshal(b, &elems); err != nil {
				return nil, fmt.Errorf("not valid JSON: %v", err)
			}
			for _, e := range elems {
				raws = append(raws, e)
			}
		default:
			return &dataFile{kind: "scalar"}, nil
		}
	case "csv":
		r := csv.NewReader(bytes.NewReader(b))
		recs, err := r.ReadAll()
		if err != nil {
			return nil, fmt.Errorf("not valid CSV: %v", err)
		}
		if len(recs) == 0 {
			return nil, fmt.Errorf("empty CSV (no header)")
		}
		header = recs[0]
		for _, rec := range recs[1:] {
			row := map[string]any{}
			for i, h := range recs[0] {
				if i < len(rec) {
					row[h] = rec[i]
				}
			}
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no records")
	}
	f := &dataFile{table: true, small: map[string][]string{}, n: len(rows)}
	if format == "csv" {
		for _, h := range header {
			f.columns = append(f.columns, column{key: h, kinds: map[string]bool{"string": true}, present: len(rows)})
		}
	} else {
		f.columns = jsonColumns(raws)
	}
	distinct := map[string]map[string]bool{}
	seen := map[string]bool{}
	for _, row := range rows {
		for k, v := range row {
			if !seen[k] {
				seen[k] = true
				f.fields = append(f.fields, k)
			}
			s, ok := v.(string)
			if !ok {
				continue
			}
			if distinct[k] == nil {
				distinct[k] = map[string]bool{}
			}
			if len(distinct[k]) <= maxDistinct {
				distinct[k][s] = true
			}
		}
	}
	sort.Strings(f.fields)
	for k, vals := range distinct {
		if len(vals) >= 2 && len(vals) <= maxDistinct && len(rows) > 2*len(vals) {
			for v := range vals {
				f.small[k] = append(f.small[k], v)
			}
			sort.Strings(f.small[k])
		}
	}
	return f, nil
}

var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
	// names the prefix itself uses
	"json": true, "os": true, "csv": true, "load_jsonl": true, "load_json": true, "load_csv": true,
}

// identifier makes a valid, unused Python name from a file name.
func identifier(base string, used map[string]bool) string {
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	id := strings.Trim(b.String(), "_")
	if id == "" {
		id = "data"
	}
	if id[0] >= '0' && id[0] <= '9' {
		id = "data_" + id
	}
	if pythonKeywords[id] {
		id += "_"
	}
	name := id
	for n := 2; used[name]; n++ {
		name = id + "_" + strconv.Itoa(n)
	}
	used[name] = true
	return name
}

func renderInit(folder string, files []*dataFile) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# name: %s\n# language: python\n", identifier(folder, map[string]bool{}))
	fmt.Fprintf(&b, "# description: The files of %s, one variable each. Written by ctxcode prefix init; edit freely.\n", folder)
	var idents []string
	for _, f := range files {
		idents = append(idents, f.ident)
	}
	fmt.Fprintf(&b, "# rules: The data is loaded: %s.\n", strings.Join(idents, ", "))

	b.WriteString("# %%\nimport csv, json, os\nsorted(os.listdir('data'))\n")

	b.WriteString("# %%\n")
	formats := map[string]bool{}
	for _, f := range files {
		formats[f.format] = true
	}
	if formats["jsonl"] {
		b.WriteString("def load_jsonl(name):\n    return [json.loads(l) for l in open(f'data/{name}') if l.strip()]\n")
	}
	if formats["json"] {
		b.WriteString("def load_json(name):\n    return json.load(open(f'data/{name}'))\n")
	}
	if formats["csv"] {
		b.WriteString("def load_csv(name):\n    return list(csv.DictReader(open(f'data/{name}', newline='')))\n")
	}
	for _, f := range files {
		fmt.Fprintf(&b, "%s = load_%s(%s)\n", f.ident, f.format, pyString(f.name))
	}
	var lens []string
	for _, f := range files {
		if f.kind != "scalar" {
			lens = append(lens, "len("+f.ident+")")
		}
	}
	b.WriteString(strings.Join(lens, ", "))
	if len(lens) == 1 {
		b.WriteString(",")
	}
	if len(lens) == 0 {
		b.WriteString("None")
	}
	b.WriteString("\n")

	var fieldLines, smallLines []string
	for _, f := range files {
		if !f.table {
			continue
		}
		fieldLines = append(fieldLines, fmt.Sprintf(" %s: sorted({k for r in %s for k in r}),", pyString(f.ident), f.ident))
		var keys []string
		for k := range f.small {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			smallLines = append(smallLines, fmt.Sprintf(" %s: sorted({r[%s] for r in %s if isinstance(r.get(%s), str)}),",
				pyString(f.ident+"."+k), pyString(k), f.ident, pyString(k)))
		}
	}
	if len(fieldLines) > 0 {
		b.WriteString("# %%\n{\n" + strings.Join(fieldLines, "\n") + "\n}\n")
	}
	if len(smallLines) > 0 {
		b.WriteString("# %%\n{\n" + strings.Join(smallLines, "\n") + "\n}\n")
	}
	for _, f := range files {
		switch {
		case f.table:
			fmt.Fprintf(&b, "# %%%%\n%s[-1]\n", f.ident)
		case f.kind == "dict":
			fmt.Fprintf(&b, "# %%%%\nsorted(%s)[:20]\n", f.ident)
		case f.kind == "list":
			fmt.Fprintf(&b, "# %%%%\n%s[:3]\n", f.ident)
		default:
			fmt.Fprintf(&b, "# %%%%\n%s\n", f.ident)
		}
	}
	return []byte(b.String())
}

// pyString is a Python string literal (JSON's escapes are Python's too).
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonColumns lists the fields of JSON records in the order they first
// appear, with the kinds of their values (read from the JSON text, so that
// 2.0 is a float and 2 an int).
func jsonColumns(raws [][]byte) []column {
	var cols []column
	at := map[string]int{}
	for _, raw := range raws {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			continue
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			key, _ := tok.(string)
			var val json.RawMessage
			if err := dec.Decode(&val); err != nil {
				break
			}
			i, ok := at[key]
			if !ok {
				i = len(cols)
				at[key] = i
				cols = append(cols, column{key: key, kinds: map[string]bool{}})
			}
			cols[i].kinds[jsonKind(val)] = true
			if !seen[key] {
				seen[key] = true
				cols[i].present++
			}
		}
	}
	return cols
}

// jsonKind names the kind of a JSON value from its text.
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "null"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return "int"
	}
	return "float"
}

// goType is the Go type of a field, and the value it has where the data
// has null or nothing: the one type of all its non-null values (int and
// float together are float64), or any.
func (c column) goType() (typ, zero string) {
	var kinds []string
	for k := range c.kinds {
		if k != "null" {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	switch strings.Join(kinds, " ") {
	case "string":
		return "string", `""`
	case "int":
		return "int", "0"
	case "float", "float int":
		return "float64", "0"
	case "bool":
		return "bool", "false"
	case "object":
		return "map[string]any", "nil"
	case "array":
		return "[]any", "nil"
	}
	return "any", "nil"
}

// zeroNote says where a field holds its zero value for want of data, or "".
func zeroNote(c column, records int) string {
	_, zero := c.goType()
	switch {
	case zero == "nil":
		return ""
	case c.kinds["null"] && c.present < records:
		return zero + " when null or missing"
	case c.kinds["null"]:
		return zero + " when null"
	case c.present < records:
		return zero + " when missing"
	}
	return ""
}

// goReserved are the names a Go prefix's variables must not take: Go's
// keywords and predeclared identifiers, and the names the prefix itself uses.
var goReserved = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
	"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true, "goto": true,
	"if": true, "import": true, "interface": true, "map": true, "package": true, "range": true,
	"return": true, "select": true, "struct": true, "switch": true, "type": true, "var": true,

	"any": true, "bool": true, "byte": true, "comparable": true, "complex64": true, "complex128": true,
	"error": true, "float32": true, "float64": true, "int": true, "int8": true, "int16": true,
	"int32": true, "int64": true, "rune": true, "string": true, "uint": true, "uint8": true,
	"uint16": true, "uint32": true, "uint64": true, "uintptr": true, "true": true, "false": true,
	"iota": true, "nil": true, "append": true, "cap": true, "clear": true, "close": true,
	"complex": true, "copy": true, "delete": true, "imag": true, "len": true, "make": true,
	"max": true, "min": true, "new": true, "panic": true, "print": true, "println": true,
	"real": true, "recover": true,

	"csv": true, "json": true, "fmt": true, "os": true, "sort": true, "strings": true,
	"entries": true, "loadJSONL": true, "loadJSON": true, "loadCSV": true, "distinct": true,
	"sortedKeys": true, "ANSWER": true,
}

// goInitialisms are words Go spells in capitals inside a name.
var goInitialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "uri": "URI", "uuid": "UUID", "api": "API",
	"http": "HTTP", "ip": "IP", "json": "JSON", "csv": "CSV", "sql": "SQL",
}

// goWords splits a name into its ASCII letter-and-digit runs.
func goWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r >= unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	})
}

// goExported joins words into an exported name, TeamID style; a name that
// would start with a digit starts with lead.
func goExported(words []string, lead string) string {
	var b strings.Builder
	for _, w := range words {
		if up, ok := goInitialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	name := b.String()
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = lead + name
	}
	return name
}

// uniqueName returns name, or name with the first free number appended.
func uniqueName(name string, used map[string]bool) string {
	out := name
	for n := 2; used[out]; n++ {
		out = name + strconv.Itoa(n)
	}
	used[out] = true
	return out
}

// goIdentifier makes a valid, unused Go variable name from a file name:
// camelCase from its letters and digits ("2024-budget" is data2024Budget),
// with _ after a keyword or predeclared name ("type" is type_).
func goIdentifier(base string, used map[string]bool) string {
	words := goWords(base)
	if len(words) == 0 {
		words = []string{"data"}
	}
	first := words[0]
	if strings.ToUpper(first) == first {
		first = strings.ToLower(first)
	} else {
		first = strings.ToLower(first[:1]) + first[1:]
	}
	id := first
	if len(words) > 1 {
		id += goExported(words[1:], "")
	}
	if id[0] >= '0' && id[0] <= '9' {
		id = "data" + strings.ToUpper(id[:1]) + id[1:]
	}
	if goReserved[id] {
		id += "_"
	}
	return uniqueName(id, used)
}

// goTypeName makes an unused exported type name for a file's records:
// its name in the singular, roughly ("tasks" is Task).
func goTypeName(base string, used map[string]bool) string {
	words := goWords(base)
	if len(words) == 0 {
		words = []string{"record"}
	}
	last := words[len(words)-1]
	lower := strings.ToLower(last)
	switch {
	case len(last) > 4 && strings.HasSuffix(lower, "ies"):
		last = last[:len(last)-3] + "y"
	case len(last) > 3 && strings.HasSuffix(lower, "s") && !strings.HasSuffix(lower, "ss") &&
		!strings.HasSuffix(lower, "us") && !strings.HasSuffix(lower, "is"):
		last = last[:len(last)-1]
	}
	words[len(words)-1] = last
	return uniqueName(goExported(words, "Data"), used)
}

// goTagKey reports whether a JSON key can be a struct tag's name:
// encoding/json ignores a tag name with other characters.
func goTagKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", r) {
			return false
		}
	}
	return true
}

// maxStructFields is how many fields a table may have for Init to give it a
// struct type; wider tables are []map[string]any.
const maxStructFields = 64

// goTable is how the Go prefix binds a table.
type goTable struct {
	typ    string   // the struct type, or "" for []map[string]any
	fields []string // the field of each column
	types  []string // the Go type of each column
}

func newGoTable(f *dataFile, base string, usedTypes map[string]bool) *goTable {
	t := &goTable{}
	if f.format != "csv" {
		if len(f.columns) > maxStructFields {
			return t
		}
		for _, c := range f.columns {
			if !goTagKey(c.key) {
				return t
			}
		}
	}
	t.typ = goTypeName(base, usedTypes)
	usedFields := map[string]bool{}
	for _, c := range f.columns {
		t.fields = append(t.fields, uniqueName(goExported(goWords(c.key), "F"), usedFields))
		typ := "string"
		if f.format != "csv" {
			typ, _ = c.goType()
		}
		t.types = append(t.types, typ)
	}
	return t
}

// elemType is the Go type of one record.
func (t *goTable) elemType() string {
	if t.typ == "" {
		return "map[string]any"
	}
	return t.typ
}

// renderGoInit writes the Go prefix. A JSON or JSON-lines table is a slice
// of a struct type made from its records: one field per key, in the order
// the keys first appear, typed by the one JSON type of its non-null values
// (string, int, float64, bool, map[string]any or []any; any when the
// values' types differ), with null and a missing key left as the zero
// value. A table whose keys cannot all be struct tags, or that has more
// than maxStructFields keys, is []map[string]any. A CSV file is a slice of
// a struct of strings, one field per column. Other JSON is map[string]any,
// []any or any.
func renderGoInit(folder string, files []*dataFile) []byte {
	usedVars, usedTypes := map[string]bool{}, map[string]bool{"ANSWER": true}
	tables := map[*dataFile]*goTable{}
	formats := map[string]bool{}
	var binds []string
	varTypes := map[*dataFile]string{}
	nullable := false
	for _, f := range files {
		base := strings.TrimSuffix(f.name, filepath.Ext(f.name))
		f.ident = goIdentifier(base, usedVars)
		formats[f.format] = true
		var typ string
		switch {
		case f.table:
			t := newGoTable(f, base, usedTypes)
			tables[f] = t
			typ = "[]" + t.elemType()
			for _, c := range f.columns {
				if f.format != "csv" && t.typ != "" && (c.kinds["null"] || c.present < f.n) {
					nullable = true
				}
			}
		case f.kind == "dict":
			typ = "map[string]any"
		case f.kind == "list":
			typ = "[]any"
		default:
			typ = "any"
		}
		varTypes[f] = typ
		binds = append(binds, fmt.Sprintf("%s (%s)", f.ident, typ))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "// name: %s\n// language: go\n", identifier(folder, map[string]bool{}))
	fmt.Fprintf(&b, "// description: The files of %s, one variable each. Written by ctxcode prefix init; edit freely.\n", folder)
	rules := "The data is loaded: " + strings.Join(binds, ", ") + "."
	if nullable {
		rules += " A JSON null or missing key is the field's zero value."
	}
	fmt.Fprintf(&b, "// rules: %s\n", rules)

	imports := []string{"fmt", "os", "sort", "strings"}
	if formats["csv"] {
		imports = append(imports, "encoding/csv")
	}
	if formats["json"] || formats["jsonl"] {
		imports = append(imports, "encoding/json")
	}
	sort.Strings(imports)
	b.WriteString("// %%\nimport (\n")
	for _, im := range imports {
		fmt.Fprintf(&b, "\t%q\n", im)
	}
	b.WriteString(")\n\nentries, _ := os.ReadDir(\"data\")\nfor _, e := range entries {\n\tfmt.Println(e.Name())\n}\n")

	// The types, the loaders and the bindings.
	b.WriteString("// %%\n")
	for _, f := range files {
		t := tables[f]
		if t == nil || t.typ == "" {
			continue
		}
		fmt.Fprintf(&b, "type %s struct {\n", t.typ)
		width, typeWidth := 0, 0
		for i := range t.fields {
			width, typeWidth = max(width, len(t.fields[i])), max(typeWidth, len(t.types[i]))
		}
		fieldLines := make([]string, len(f.columns))
		notes := make([]string, len(f.columns))
		for i, c := range f.columns {
			fieldLines[i] = fmt.Sprintf("%-*s %s", width, t.fields[i], t.types[i])
			if f.format != "csv" {
				fieldLines[i] = fmt.Sprintf("%-*s %-*s `json:%q`", width, t.fields[i], typeWidth, t.types[i], c.key)
				notes[i] = zeroNote(c, f.n)
			}
			fieldLines[i] = strings.TrimRight(fieldLines[i], " ")
		}
		// As gofmt does, comments on consecutive fieldLines line up.
		for i := 0; i < len(fieldLines); {
			j, lineWidth := i, 0
			for ; j < len(fieldLines) && notes[j] != ""; j++ {
				lineWidth = max(lineWidth, len(fieldLines[j]))
			}
			for ; i < j; i++ {
				fieldLines[i] = fmt.Sprintf("%-*s // %s", lineWidth, fieldLines[i], notes[i])
			}
			i = max(i, j+1)
		}
		for _, line := range fieldLines {
			b.WriteString("\t" + line + "\n")
		}
		b.WriteString("}\n\n")
	}
	for _, f := range files {
		if t := tables[f]; t != nil && t.typ == "" {
			var keys []string
			for _, c := range f.columns {
				keys = append(keys, strconv.Quote(c.key))
			}
			fmt.Fprintf(&b, "// The records of %s are maps: their keys (%s) cannot all be struct fields.\n\n", f.name, strings.Join(keys, ", "))
		}
	}
	if formats["jsonl"] {
		b.WriteString(`// loadJSONL reads data/NAME, one JSON value a line, into v, a pointer to a slice.
func loadJSONL(name string, v any) {
	b, err := os.ReadFile("data/" + name)
	if err != nil {
		panic(err)
	}
	lines := []string{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	if err := json.Unmarshal([]byte("["+strings.Join(lines, ",")+"]"), v); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
}

`)
	}
	if formats["json"] {
		b.WriteString(`// loadJSON reads data/NAME, one JSON value, into v, a pointer.
func loadJSON(name string, v any) {
	b, err := os.ReadFile("data/" + name)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
}

`)
	}
	if formats["csv"] {
		b.WriteString(`// loadCSV reads data/NAME and returns its records after the header.
func loadCSV(name string) [][]string {
	f, err := os.Open("data/" + name)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	return records[1:]
}

`)
	}
	b.WriteString("var (\n")
	width := 0
	for _, f := range files {
		width = max(width, len(f.ident))
	}
	for _, f := range files {
		fmt.Fprintf(&b, "\t%-*s %s\n", width, f.ident, varTypes[f])
	}
	b.WriteString(")\n")
	for _, f := range files {
		switch {
		case f.format == "csv":
			t := tables[f]
			fmt.Fprintf(&b, "for _, r := range loadCSV(%q) {\n\t%s = append(%s, %s{", f.name, f.ident, f.ident, t.typ)
			for i, field := range t.fields {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s: r[%d]", field, i)
			}
			b.WriteString("})\n}\n")
		case f.format == "jsonl":
			fmt.Fprintf(&b, "loadJSONL(%q, &%s)\n", f.name, f.ident)
		default:
			fmt.Fprintf(&b, "loadJSON(%q, &%s)\n", f.name, f.ident)
		}
	}
	var lens []string
	for _, f := range files {
		if f.table || f.kind == "dict" || f.kind == "list" {
			lens = append(lens, fmt.Sprintf("%q: len(%s)", f.ident, f.ident))
		}
	}
	if len(lens) > 0 {
		fmt.Fprintf(&b, "map[string]int{%s}\n", strings.Join(lens, ", "))
	}

	// The values of fields with few distinct values.
	var small []string
	for _, f := range files {
		t := tables[f]
		if t == nil {
			continue
		}
		for i, c := range f.columns {
			switch {
			case f.small[c.key] == nil:
			case t.typ != "" && t.types[i] == "string":
				small = append(small, fmt.Sprintf("fmt.Println(%q, distinct(len(%s), func(i int) string { return %s[i].%s }))",
					f.ident+"."+t.fields[i]+":", f.ident, f.ident, t.fields[i]))
			case t.typ == "" && len(c.kinds) == 1 && c.kinds["string"] && c.present == f.n:
				// Every record has the key, with a string.
				small = append(small, fmt.Sprintf("fmt.Println(%q, distinct(len(%s), func(i int) string { return %s[i][%q].(string) }))",
					f.ident+"."+c.key+":", f.ident, f.ident, c.key))
			}
		}
	}
	if len(small) > 0 {
		b.WriteString(`// %%
// distinct returns the distinct values of n records, sorted.
func distinct(n int, value func(i int) string) []string {
	seen := map[string]bool{}
	out := []string{}
	for i := 0; i < n; i++ {
		if v := value(i); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

`)
		b.WriteString(strings.Join(small, "\n") + "\n")
	}

	// The last records, and a look at the other JSON.
	keysHelper := false
	for _, f := range files {
		switch {
		case f.table:
			fmt.Fprintf(&b, "// %%%%\nfmt.Printf(\"%%+v\\n\", %s[len(%s)-1])\n", f.ident, f.ident)
		case f.kind == "dict":
			b.WriteString("// %%\n")
			if !keysHelper {
				b.WriteString(`// sortedKeys returns the first limit keys of m, sorted.
func sortedKeys(m map[string]any, limit int) []string {
	keys := []string{}
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > limit {
		keys = keys[:limit]
	}
	return keys
}

`)
				keysHelper = true
			}
			fmt.Fprintf(&b, "sortedKeys(%s, 20)\n", f.ident)
		case f.kind == "list" && f.n > 3:
			fmt.Fprintf(&b, "// %%%%\n%s[:3]\n", f.ident)
		default:
			fmt.Fprintf(&b, "// %%%%\n%s\n", f.ident)
		}
	}
	return []byte(b.String())
}
