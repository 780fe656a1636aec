package prefixes

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/ctxcode/ctxcode/kernel"
)

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

	"csv": true, "json": true, "fmt": true, "os": true, "sort": true, "strings": true, "bytes": true, "utf8": true,
	"entries": true, "loadJSONL": true, "loadJSON": true, "loadJSONKey": true, "loadCSV": true, "readData": true,
	"distinct": true, "sortedKeys": true, "brief": true, "ANSWER": true,
	// and the loop variables of its cells
	"e": true, "r": true, "i": true, "name": true, "part": true,
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
	source string   // a group: the field (or, for maps, the key) that names a record's file
	rest   string   // CSV with rows longer than the header: the field of the extra values
}

func newGoTable(f *dataFile, base string, usedTypes map[string]bool) *goTable {
	t := &goTable{}
	if f.format != "csv" {
		maps := len(f.columns) > maxStructFields
		var keys []string
		for _, c := range f.columns {
			maps = maps || !goTagKey(c.key)
			keys = append(keys, c.key)
		}
		if maps {
			if f.members != nil {
				t.source = freeKey("source", keys)
			}
			return t
		}
	}
	t.typ = goTypeName(base, usedTypes)
	usedFields := map[string]bool{}
	if f.members != nil {
		t.source = uniqueName("Source", usedFields)
	}
	for _, c := range f.columns {
		t.fields = append(t.fields, uniqueName(goExported(goWords(c.key), "F"), usedFields))
		typ := "string"
		if f.format != "csv" {
			typ, _ = c.goType()
		}
		t.types = append(t.types, typ)
	}
	if f.long {
		t.rest = uniqueName("Rest", usedFields)
	}
	return t
}

// briefFields are the string fields of t that hold the long values of f's
// last record, or nil when a long value is not in a string field.
func (t *goTable) briefFields(f *dataFile) []string {
	if t.typ == "" {
		return nil
	}
	var out []string
	for _, s := range f.last {
		if s.strLen <= briefOver {
			continue
		}
		found := false
		for i, c := range f.columns {
			if c.key == s.key && t.types[i] == "string" {
				out, found = append(out, t.fields[i]), true
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

// elemType is the Go type of one record.
func (t *goTable) elemType() string {
	if t.typ == "" {
		return "map[string]any"
	}
	return t.typ
}

// structDecl declares t's struct type, its fields aligned as gofmt does.
func (t *goTable) structDecl(f *dataFile) string {
	type line struct{ name, typ, tag, note string }
	var lines []line
	json := f.format != "csv"
	if t.source != "" {
		l := line{name: t.source, typ: "string", note: "the file of the record"}
		if json {
			l.tag = "`json:\"-\"`"
		}
		lines = append(lines, l)
	}
	for i, c := range f.columns {
		l := line{name: t.fields[i], typ: t.types[i]}
		if json {
			l.tag = fmt.Sprintf("`json:%q`", c.key)
			l.note = zeroNote(c, f.n)
		}
		lines = append(lines, l)
	}
	if t.rest != "" {
		lines = append(lines, line{name: t.rest, typ: "[]string", note: "the values after the header's fields"})
	}
	width, typeWidth := 0, 0
	for _, l := range lines {
		width, typeWidth = max(width, len(l.name)), max(typeWidth, len(l.typ))
	}
	text := make([]string, len(lines))
	for i, l := range lines {
		text[i] = fmt.Sprintf("%-*s %s", width, l.name, l.typ)
		if l.tag != "" {
			text[i] = fmt.Sprintf("%-*s %-*s %s", width, l.name, typeWidth, l.typ, l.tag)
		}
	}
	// As gofmt does, comments on consecutive lines line up.
	for i := 0; i < len(lines); {
		j, lineWidth := i, 0
		for ; j < len(lines) && lines[j].note != ""; j++ {
			lineWidth = max(lineWidth, len(text[j]))
		}
		for ; i < j; i++ {
			text[i] = fmt.Sprintf("%-*s // %s", lineWidth, text[i], lines[i].note)
		}
		i = max(i, j+1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "type %s struct {\n", t.typ)
	for _, l := range text {
		b.WriteString("\t" + l + "\n")
	}
	b.WriteString("}\n\n")
	return b.String()
}

// goLoaders are the Go prefix's loaders. readData reads as Init does: a
// byte-order mark dropped, Latin-1 when the bytes are not UTF-8.
const (
	goReadData = `// readData returns data/NAME as UTF-8 text: without a byte-order mark,
// and decoded from Latin-1 when it is not UTF-8.
func readData(name string) []byte {
	b, err := os.ReadFile("data/" + name)
	if err != nil {
		panic(err)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if utf8.Valid(b) {
		return b
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return []byte(string(r))
}

`
	goLoadJSONL = `// loadJSONL reads data/NAME, one JSON value a line, into v, a pointer to a slice.
func loadJSONL(name string, v any) {
	text := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(readData(name)))
	lines := []string{}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	if err := json.Unmarshal([]byte("["+strings.Join(lines, ",")+"]"), v); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
}

`
	goLoadJSON = `// loadJSON reads data/NAME, one JSON value, into v, a pointer.
func loadJSON(name string, v any) {
	if err := json.Unmarshal(readData(name), v); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
}

`
	goLoadJSONKey = `// loadJSONKey reads the value of key in the JSON object data/NAME into v.
func loadJSONKey(name, key string, v any) {
	var doc map[string]json.RawMessage
	loadJSON(name, &doc)
	if err := json.Unmarshal(doc[key], v); err != nil {
		panic(fmt.Sprintf("%s: %s: %v", name, key, err))
	}
}

`
	goLoadCSV = `// loadCSV reads data/NAME, its fields separated by comma (default ','),
// and returns its records after the header, each at least as long as the
// header (a short record is padded with "").
func loadCSV(name string, comma ...rune) [][]string {
	r := csv.NewReader(bytes.NewReader(readData(name)))
	r.LazyQuotes, r.FieldsPerRecord = true, -1
	if len(comma) > 0 {
		r.Comma = comma[0]
	}
	records, err := r.ReadAll()
	if err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	for i, rec := range records {
		for len(rec) < len(records[0]) {
			rec = append(rec, "")
		}
		records[i] = rec
	}
	return records[1:]
}

`
	goBrief = `// brief cuts s to its first 200 characters, to look at.
func brief(s string) string {
	r := []rune(s)
	if len(r) <= 200 {
		return s
	}
	return string(r[:200]) + fmt.Sprintf("... (%d more characters)", len(r)-200)
}

`
)

// goChar is a Go rune literal.
func goChar(r rune) string {
	return strconv.QuoteRune(r)
}

// goGroupLoop opens a loop over a group's file names, bound to name.
func goGroupLoop(f *dataFile) string {
	if p := f.pattern; p != [2]string{} {
		var conds []string
		if p[0] != "" {
			conds = append(conds, fmt.Sprintf("!strings.HasPrefix(name, %q)", p[0]))
		}
		if p[1] != "" {
			conds = append(conds, fmt.Sprintf("!strings.HasSuffix(name, %q)", p[1]))
		}
		return fmt.Sprintf("for _, e := range entries {\n\tname := e.Name()\n\tif %s {\n\t\tcontinue\n\t}\n", strings.Join(conds, " || "))
	}
	var ns []string
	for _, m := range f.members {
		ns = append(ns, strconv.Quote(m.name))
	}
	return fmt.Sprintf("for _, name := range []string{%s} {\n", strings.Join(ns, ", "))
}

// renderGoInit writes the Go prefix. A JSON or JSON-lines table is a slice
// of a struct type made from its records: one field per key, in the order
// the keys first appear, typed by the one JSON type of its non-null values
// (string, int, float64, bool, map[string]any or []any; any when the
// values' types differ), with null and a missing key left as the zero
// value. A table whose keys cannot all be struct tags, or that has more
// than maxStructFields keys, is []map[string]any. A CSV file is a slice of
// a struct of strings, one field per column (and Rest, the values past the
// header's, when some rows are longer). A group of files has a Source
// field (or key) naming each record's file. Other JSON is map[string]any,
// []any or any.
func renderGoInit(folder string, files []*dataFile, names []string) (header, []initCell) {
	usedVars, usedTypes := map[string]bool{}, map[string]bool{"ANSWER": true}
	tables := map[*dataFile]*goTable{}
	formats := map[string]bool{}
	var binds []string
	varTypes := map[*dataFile]string{}
	nullable, grouped, envelopes := false, false, false
	for _, f := range files {
		base := strings.TrimSuffix(f.name, filepath.Ext(f.name))
		if f.members != nil {
			base = groupBase(f.members)
			grouped = true
		}
		f.ident = goIdentifier(base, usedVars)
		if len(f.others) > 0 {
			f.docIdent = goIdentifier(base+"_doc", usedVars)
		}
		envelopes = envelopes || f.envelope != ""
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
		switch t := tables[f]; {
		case f.members != nil && t.typ != "":
			binds = append(binds, fmt.Sprintf("%s (%s, %s; %s is the file)", f.ident, typ, groupNote(f), t.source))
		case f.members != nil:
			binds = append(binds, fmt.Sprintf("%s (%s, %s; the key %q is the file)", f.ident, typ, groupNote(f), t.source))
		default:
			binds = append(binds, fmt.Sprintf("%s (%s)", f.ident, typ))
		}
		if f.docIdent != "" {
			binds = append(binds, fmt.Sprintf("%s (map[string]any)", f.docIdent))
		}
	}

	h := header{name: identifier(folder, map[string]bool{})}
	h.description = fmt.Sprintf("The files of %s, one variable each. Written by ctxcode prefix init; edit freely.", folder)
	if grouped {
		h.description = fmt.Sprintf("The files of %s, one variable per file or per group of files with one schema. Written by ctxcode prefix init; edit freely.", folder)
	}
	h.rules = "The data is loaded: " + strings.Join(binds, ", ") + "."
	if nullable {
		h.rules += " A JSON null or missing key is the field's zero value."
	}

	imports := []string{"bytes", "fmt", "os", "sort", "strings", "unicode/utf8"}
	if formats["csv"] {
		imports = append(imports, "encoding/csv")
	}
	if formats["json"] || formats["jsonl"] {
		imports = append(imports, "encoding/json")
	}
	sort.Strings(imports)
	var b strings.Builder
	b.WriteString("import (\n")
	for _, im := range imports {
		fmt.Fprintf(&b, "\t%q\n", im)
	}
	code, out := listing(names, kernel.Go)
	b.WriteString(")\n\n" + code)
	cells := []initCell{{b.String(), out}}

	// The types, the loaders and the bindings.
	b.Reset()
	for _, f := range files {
		if t := tables[f]; t != nil && t.typ != "" {
			b.WriteString(t.structDecl(f))
		}
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
	b.WriteString(goReadData)
	if formats["jsonl"] {
		b.WriteString(goLoadJSONL)
	}
	if formats["json"] {
		b.WriteString(goLoadJSON)
	}
	if envelopes {
		b.WriteString(goLoadJSONKey)
	}
	if formats["csv"] {
		b.WriteString(goLoadCSV)
	}
	b.WriteString("var (\n")
	width := 0
	for _, f := range files {
		width = max(width, len(f.ident), len(f.docIdent))
	}
	for _, f := range files {
		fmt.Fprintf(&b, "\t%-*s %s\n", width, f.ident, varTypes[f])
		if f.docIdent != "" {
			fmt.Fprintf(&b, "\t%-*s %s\n", width, f.docIdent, "map[string]any")
		}
	}
	b.WriteString(")\n")
	for _, f := range files {
		t := tables[f]
		var notes []string
		if f.enc == encLatin1 {
			notes = append(notes, "not UTF-8: read as Latin-1")
		}
		if f.short {
			notes = append(notes, `fields missing from short rows are ""`)
		}
		if f.long {
			notes = append(notes, "rows longer than the header keep the rest in "+t.rest)
		}
		if f.envelope != "" {
			notes = append(notes, fmt.Sprintf("the records, inside {%q: [...]}", f.envelope))
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, "// %s: %s\n", f.name, strings.Join(notes, "; "))
			if f.members != nil {
				fmt.Fprintf(&b, "// (and the other %d files of %s)\n", len(f.members)-1, f.ident)
			}
		}
		name := strconv.Quote(f.name)
		if f.members != nil {
			name = "name"
		}
		switch {
		case f.format == "csv":
			comma := ""
			if f.delim != ',' {
				comma = ", " + goChar(f.delim)
			}
			loop := fmt.Sprintf("for _, r := range loadCSV(%s%s) {\n", name, comma)
			indent := "\t"
			if f.members != nil {
				b.WriteString(goGroupLoop(f))
				loop, indent = "\t"+loop, "\t\t"
			}
			fmt.Fprintf(&b, "%s%s%s = append(%s, %s{", loop, indent, f.ident, f.ident, t.typ)
			var parts []string
			if t.source != "" {
				parts = append(parts, t.source+": name")
			}
			for i, field := range t.fields {
				parts = append(parts, fmt.Sprintf("%s: r[%d]", field, i))
			}
			if t.rest != "" {
				parts = append(parts, fmt.Sprintf("%s: r[%d:]", t.rest, len(t.fields)))
			}
			b.WriteString(strings.Join(parts, ", ") + "})\n" + indent[1:] + "}\n")
			if f.members != nil {
				b.WriteString("}\n")
			}
		case f.members != nil:
			load := fmt.Sprintf("\tload%s(name, &part)\n", map[string]string{"jsonl": "JSONL", "json": "JSON"}[f.format])
			if f.envelope != "" {
				load = fmt.Sprintf("\tloadJSONKey(name, %q, &part)\n", f.envelope)
			}
			set := fmt.Sprintf("part[i].%s = name", t.source)
			if t.typ == "" {
				set = fmt.Sprintf("part[i][%q] = name", t.source)
			}
			fmt.Fprintf(&b, "%s\tvar part []%s\n%s\tfor i := range part {\n\t\t%s\n\t}\n\t%s = append(%s, part...)\n}\n",
				goGroupLoop(f), t.elemType(), load, set, f.ident, f.ident)
		case f.format == "jsonl":
			fmt.Fprintf(&b, "loadJSONL(%s, &%s)\n", name, f.ident)
		case f.envelope != "":
			if f.docIdent != "" {
				fmt.Fprintf(&b, "loadJSON(%s, &%s)\n", name, f.docIdent)
			}
			fmt.Fprintf(&b, "loadJSONKey(%s, %q, &%s)\n", name, f.envelope, f.ident)
		default:
			fmt.Fprintf(&b, "loadJSON(%s, &%s)\n", name, f.ident)
		}
	}
	var lens, lensOut []string
	for _, f := range files {
		if f.table || f.kind == "dict" || f.kind == "list" {
			lens = append(lens, fmt.Sprintf("%q: len(%s)", f.ident, f.ident))
			lensOut = append(lensOut, fmt.Sprintf("%s:%d", f.ident, f.n))
		}
	}
	sort.Strings(lensOut)
	out = ""
	if len(lens) > 0 {
		fmt.Fprintf(&b, "map[string]int{%s}\n", strings.Join(lens, ", "))
		out = "map[" + strings.Join(lensOut, " ") + "]"
	}
	cells = append(cells, initCell{b.String(), out})

	// The values of fields with few distinct values.
	var small, smallOut []string
	for _, f := range files {
		t := tables[f]
		if t == nil {
			continue
		}
		for i, c := range f.columns {
			switch {
			case f.small[c.key] == nil:
				continue
			case t.typ != "" && t.types[i] == "string":
				small = append(small, fmt.Sprintf("fmt.Println(%q, distinct(len(%s), func(i int) string { return %s[i].%s }))",
					f.ident+"."+t.fields[i]+":", f.ident, f.ident, t.fields[i]))
			case t.typ == "" && len(c.kinds) == 1 && c.kinds["string"] && c.present == f.n:
				// Every record has the key, with a string.
				small = append(small, fmt.Sprintf("fmt.Println(%q, distinct(len(%s), func(i int) string { return %s[i][%q].(string) }))",
					f.ident+"."+c.key+":", f.ident, f.ident, c.key))
			default:
				continue
			}
			smallOut = append(smallOut, fmt.Sprintf("%s.%s: [%s]", f.ident, c.key, strings.Join(f.small[c.key], " ")))
		}
	}
	if len(small) > 0 {
		cells = append(cells, initCell{`// distinct returns the distinct values of n records, sorted.
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

` + strings.Join(small, "\n") + "\n", strings.Join(smallOut, "\n") + "\n"})
	}

	// The last records, and a look at the other JSON.
	keysHelper, briefHelper := false, false
	for _, f := range files {
		switch {
		case f.table && f.brief:
			code := ""
			if !briefHelper {
				code, briefHelper = goBrief, true
			}
			if fields := tables[f].briefFields(f); fields != nil {
				// Each long string of the record cut, the rest as it is. (A
				// named function: the Go kernel runs a func literal called
				// at the top of a cell again in every later cell.)
				fn := uniqueName("brief"+tables[f].typ, usedVars)
				code += fmt.Sprintf("// %s returns r with its long strings cut, to look at.\nfunc %s(r %s) %s {\n", fn, fn, tables[f].typ, tables[f].typ)
				for _, field := range fields {
					code += fmt.Sprintf("\tr.%s = brief(r.%s)\n", field, field)
				}
				code += fmt.Sprintf("\treturn r\n}\n\nfmt.Printf(\"%%+v\\n\", %s(%s[len(%s)-1]))\n", fn, f.ident, f.ident)
				cells = append(cells, initCell{code, reprRecord(f.last, true) + "\n"})
				break
			}
			shown := reprRecord(f.last, false)
			if r := []rune(shown); len(r) > briefWidth {
				shown = string(r[:briefWidth]) + fmt.Sprintf("... (%d more characters)", len(r)-briefWidth)
			}
			code += fmt.Sprintf("fmt.Println(brief(fmt.Sprintf(\"%%+v\", %s[len(%s)-1])))\n", f.ident, f.ident)
			cells = append(cells, initCell{code, shown + "\n"})
		case f.table:
			cells = append(cells, initCell{fmt.Sprintf("fmt.Printf(\"%%+v\\n\", %s[len(%s)-1])\n", f.ident, f.ident), reprRecord(f.last, false) + "\n"})
		case f.kind == "dict":
			code := ""
			if !keysHelper {
				code = `// sortedKeys returns the first limit keys of m, sorted.
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

`
				keysHelper = true
			}
			code += fmt.Sprintf("sortedKeys(%s, 20)\n", f.ident)
			cells = append(cells, initCell{code, "[" + strings.Join(f.keys[:min(20, len(f.keys))], " ") + "]"})
		case f.kind == "list" && f.n > 3:
			cells = append(cells, initCell{fmt.Sprintf("%s[:3]\n", f.ident), f.peek})
		case f.kind == "list":
			cells = append(cells, initCell{fmt.Sprintf("%s\n", f.ident), f.peek})
		default:
			cells = append(cells, initCell{fmt.Sprintf("%s\n", f.ident), f.scalar})
		}
	}
	return h, cells
}
