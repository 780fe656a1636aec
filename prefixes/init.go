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
}

// maxDistinct is how many distinct values a field may have for Init to show
// them all.
const maxDistinct = 8

// Init writes a prefix for a folder of .jsonl, .json and .csv files: it
// lists the folder, binds one variable per file (names made from the file
// names, valid and unique), shows their lengths, their field names, the
// values of fields with few distinct values, and the last record of each.
// It returns the prefix source and the files it left out, with reasons.
func Init(dir string, lang kernel.Language) ([]byte, []Skipped, error) {
	if lang != kernel.Python {
		return nil, nil, fmt.Errorf("prefix init writes Python prefixes for now; %s is not available yet", lang)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read data folder: %w", err)
	}
	var files []*dataFile
	var skipped []Skipped
	used := map[string]bool{}
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
		f.name, f.format, f.ident = name, format, identifier(strings.TrimSuffix(name, filepath.Ext(name)), used)
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
	return renderInit(filepath.Base(dir), files), skipped, nil
}

// inspect reads a file to learn its records' fields and small value sets.
func inspect(path, format string) (*dataFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []map[string]any
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
				return &dataFile{kind: "list"}, nil
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
	f := &dataFile{table: true, small: map[string][]string{}}
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
	fmt.Fprintf(&b, "# rules: The data is loaded: %s. Call ANSWER(value) with the final answer.\n", strings.Join(idents, ", "))

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
