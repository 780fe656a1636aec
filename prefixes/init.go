package prefixes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

// Skipped is a file of the data folder that Init left out, and why.
type Skipped struct {
	File   string
	Reason string
}

// Style is how a Python prefix written by Init binds the tables of its
// folder.
type Style string

const (
	// StyleFrames binds each table as a pandas DataFrame (dtypes inferred
	// as pd.read_csv infers them), imports the analyst's libraries (numpy,
	// pandas, and scipy, scikit-learn, statsmodels and matplotlib where they
	// import) and shows each frame's shape, dtypes and first rows. The
	// kernel needs pandas.
	StyleFrames Style = "frames"
	// StyleRecords binds each table as a list of dicts of strings (CSV) or
	// of JSON values, with Python's csv and json only: the seed's form.
	StyleRecords Style = "records"
)

// ParseStyle reads a style by its name; empty means StyleFrames.
func ParseStyle(s string) (Style, error) {
	switch Style(s) {
	case "", StyleFrames:
		return StyleFrames, nil
	case StyleRecords:
		return StyleRecords, nil
	}
	return "", fmt.Errorf("unknown prefix style %q: use frames (pandas DataFrames) or records (lists of dicts)", s)
}

// InitOptions say what prefix Init writes. The zero value means a Python
// prefix of DataFrames checked against DefaultMaxTokens in o200k_base.
type InitOptions struct {
	// Lang is python (tables are DataFrames, or lists of dicts; see Style)
	// or go (tables are slices of generated struct types). Empty means
	// python.
	Lang kernel.Language
	// Style is how a Python prefix binds tables. Empty means StyleFrames.
	// A Go prefix ignores it.
	Style Style
	// MaxTokens is the budget Init's estimate of the rendered transcript is
	// checked against (a warning, not an error). Zero means
	// DefaultMaxTokens, the budget of Verify and prefix verify.
	MaxTokens int
	// Encoding is the token vocabulary of the estimate. Empty means
	// o200k_base.
	Encoding session.Encoding
	// MemoryLimit is the memory limit, in bytes, of the kernels the prefix
	// will run in (the sandbox's --memory): a prefix whose data would take
	// more than half of it gets a warning (see InitResult.Memory). Zero or
	// less: no limit, no warning.
	MemoryLimit int64
	// FollowLinks takes the files that links in the folder lead to outside
	// it too, as the kernels are told to (see kernel.WalkReadOnly: what a
	// kernel cannot see, Init never reads nor names).
	FollowLinks bool
}

// InitResult is a prefix Init wrote, and what a person should know of it.
type InitResult struct {
	Source []byte // the prefix, in the percent format
	// Control is the prefix's control, NAME-nobind, for condition B0: the
	// same cells with the same outputs, but no data variable bound (every
	// cell that reads the data loads it again). Python only; nil for Go.
	Control []byte
	Skipped []Skipped // the files left out, with reasons (also in Source's header)
	// Warnings are one-line notes for the person running init: files read
	// as Latin-1, and a prefix whose estimated transcript is over budget.
	Warnings []string
	// Tokens estimates the tokens of the transcript the prefix renders to
	// (its code and outputs predicted from the files), in Encoding. Verify
	// counts the real ones.
	Tokens int
	// Memory estimates the bytes the kernel holds once the prefix has run
	// (the objects it bound, and the kernel's own), and MemoryPeak the
	// most it holds while the prefix runs.
	Memory, MemoryPeak int64
}

// maxDistinct is how many distinct values a field may have for Init to show
// them all.
const maxDistinct = 8

// maxSmallValue is the longest value (in characters) of a field whose
// values Init shows: longer ones are text, not categories.
const maxSmallValue = 60

// minGroup is how many files with one schema Init binds as one variable.
const minGroup = 3

// briefOver is the length (in characters) of a string value past which the
// last record is shown cut, and briefWidth how much of it is shown.
const (
	briefOver  = 500
	briefWidth = 200
)

// maxListed is how many folder entries the first cell lists in full.
const maxListed = 40

// Init writes a prefix for a folder of .jsonl, .json, .csv and .tsv files;
// see InitWith. It returns the prefix source and the files it left out.
func Init(dir string, lang kernel.Language) ([]byte, []Skipped, error) {
	r, err := InitWith(dir, InitOptions{Lang: lang})
	if err != nil {
		if r != nil {
			return nil, r.Skipped, err
		}
		return nil, nil, err
	}
	return r.Source, r.Skipped, nil
}

// InitWith writes a prefix for a folder of .jsonl, .json, .csv and .tsv
// files: it lists the folder, binds one variable per file (names made from
// the file names, valid and unique), or one per group of three or more
// files with one schema.
//
// In the frames style (Python's default) each table is a pandas DataFrame
// (a group: one frame whose source column names the file), after a cell
// that imports the analyst's libraries and prints their versions; each
// frame's cell shows its shape, dtypes and first rows. See init_frames.go.
//
// In the records style (and in Go) each table is a list of records (a
// group: one list whose records say their file in a source field), and the
// cells show their lengths, their field names, the values of fields with
// few distinct values, and the last record of each.
//
// The loaders read what Python's csv and json read, and Init checks each
// file the way its loader reads it, so a prefix Init writes builds: text
// is UTF-8 (a byte-order mark dropped) or else Latin-1, said in the cell;
// a CSV file's delimiter is sniffed (',', tab, ';' or '|'; tab for .tsv),
// rows shorter or longer than the header are kept as csv.DictReader keeps
// them (missing fields None, extra values a list under a named key), and
// fields over 128 KiB are allowed; a JSON object whose one list of records
// is under a key (an envelope) binds the records. A file its loader could
// not read is skipped, with the reason in the prefix's header and in
// Skipped. For Go (lang go) the loaders are encoding/json and encoding/csv
// (lazy quotes, ragged rows padded); JSON with NaN or Infinity is skipped.
//
// With no loadable file, the error says why each file was left out (and
// the result holds Skipped).
func InitWith(dir string, o InitOptions) (*InitResult, error) {
	lang := o.Lang
	if lang == "" {
		lang = kernel.Python
	}
	if lang != kernel.Python && lang != kernel.Go {
		return nil, fmt.Errorf("prefix init writes python and go prefixes, not %q", lang)
	}
	style, err := ParseStyle(string(o.Style))
	if err != nil {
		return nil, err
	}
	frames := lang == kernel.Python && style == StyleFrames
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.Encoding == "" {
		o.Encoding = session.O200kBase
	}
	// Only what a kernel sees as data/: never a named pipe or a device,
	// nor a link out of the folder unless FollowLinks.
	entries, _, err := kernel.ListData(dir, "", o.FollowLinks)
	if err != nil {
		return nil, fmt.Errorf("read data folder: %w", err)
	}
	res := &InitResult{}
	var files []*dataFile
	var names []string // every entry of the folder, as the kernel lists it
	for _, e := range entries {
		name := e.Rel
		names = append(names, name)
		if e.Dir || strings.HasPrefix(name, ".") {
			continue
		}
		ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(name)), ".")
		format := ext
		if ext == "tsv" {
			format = "csv"
		}
		if format != "jsonl" && format != "json" && format != "csv" {
			res.Skipped = append(res.Skipped, Skipped{name, "not .jsonl, .json, .csv or .tsv"})
			continue
		}
		if name == "manifest.json" {
			res.Skipped = append(res.Skipped, Skipped{name, "a ctxcode manifest, not data"})
			continue
		}
		f, err := inspectFile(e, format, ext == "tsv", lang, frames)
		if err != nil {
			res.Skipped = append(res.Skipped, Skipped{name, err.Error()})
			continue
		}
		f.name, f.format = name, format
		files = append(files, f)
		if f.enc == encLatin1 {
			res.Warnings = append(res.Warnings, name+" is not UTF-8: read as Latin-1")
		}
	}
	if len(files) == 0 {
		var why []string
		for _, s := range res.Skipped {
			why = append(why, s.File+": "+s.Reason)
		}
		if len(why) == 0 {
			why = append(why, "the folder is empty")
		}
		return res, fmt.Errorf("no loadable file in %s (%s)", dir, strings.Join(why, "; "))
	}
	files = groupFiles(files, names)
	for _, f := range files {
		f.finish()
	}
	folder := filepath.Base(dir)
	var h header
	var cells []initCell
	switch {
	case lang == kernel.Go:
		h, cells = renderGoInit(folder, files, names)
	case frames:
		h, cells, res.Control, err = framesInit(folder, files, names, o, res.Skipped)
		if err != nil {
			return nil, err
		}
	default:
		h, cells = renderInit(folder, files, names, true)
		ch, ccells := renderInit(folder, files, names, false)
		ch.skipped = res.Skipped
		res.Control = []byte(ch.render(lang, ccells))
	}
	h.skipped = res.Skipped
	res.Source = []byte(h.render(lang, cells))
	if res.Tokens, err = estimateTokens(lang, o.Encoding, cells); err != nil {
		return nil, err
	}
	if frames {
		res.Memory, res.MemoryPeak = estimateFrameMemory(files)
	} else {
		res.Memory, res.MemoryPeak = estimateMemory(lang, files)
	}
	if w := memoryWarning(res.Memory, res.MemoryPeak, o.MemoryLimit); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	if res.Tokens > o.MaxTokens {
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"the prefix renders to about %d tokens (%s), over the %d that prefix verify allows: "+
				"move files out of the folder or cut cells (check with prefix verify, or verify with a larger --max-tokens)",
			res.Tokens, o.Encoding, o.MaxTokens))
	}
	return res, nil
}

// WriteNotes writes to w, one line each, what the person running init
// should know of r: the files it left out, then its warnings. A nil r
// writes nothing.
func (r *InitResult) WriteNotes(w io.Writer) {
	if r == nil {
		return
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "ctxcode: prefix init: skipped %s: %s\n", s.File, s.Reason)
	}
	for _, m := range r.Warnings {
		fmt.Fprintf(w, "ctxcode: prefix init: warning: %s\n", m)
	}
}

// dataFile is a loadable file of the data folder, or a group of files with
// one schema, as Init saw it.
type dataFile struct {
	name   string // file name in the data folder (a group: its first file's)
	format string // jsonl, json or csv (.tsv files are csv)
	ident  string // the variable it is bound to

	enc      string // encUTF8 or encLatin1
	bom      bool   // UTF-8 with a byte-order mark
	delim    rune   // csv: the delimiter
	header   []string
	short    bool   // csv: rows shorter than the header
	long     bool   // csv: rows longer than the header
	restKey  string // csv, Python: the key of a long row's extra values
	bigField bool   // csv, Python: a field over Python's default limit

	envelope string   // json: the key of the records in an envelope object
	others   []string // json: the envelope's other keys
	docIdent string   // json: the variable of an envelope with other keys

	table  bool   // a list of records (fields and values make sense)
	kind   string // for JSON that is not a table: dict, list or scalar
	n      int    // records of a table, elements of a list, keys of a dict
	fields []string
	// distinct holds, per field, up to maxDistinct+1 of its string values;
	// notSmall the fields with a value too long to be a category.
	distinct map[string]map[string]bool
	notSmall map[string]bool
	// small lists, per field, the values of fields with few distinct values.
	small map[string][]string

	// What the last cells show, to estimate the transcript: the last
	// record, a list's first elements, a dict's first keys, a scalar.
	last   []shownField
	peek   string
	brief  bool // the last record has long strings, shown cut
	keys   []string
	scalar string

	// For the Go prefix: the fields in the order they first appear (CSV:
	// the header, duplicates included), with the JSON kinds of their values.
	columns []column

	// mem is what the loaded objects take in the kernel of the prefix's
	// language.
	mem memUse

	members []*dataFile // a group: its files, in order
	source  string      // a group, Python: the key that names a record's file
	pattern [2]string   // a group: the prefix and suffix that select exactly its files, if any

	frame *frameInfo // the frames style: what pandas is expected to make of a table
}

// shownField is one field of a record as a Python repr would show it.
type shownField struct {
	key    string
	repr   string
	strLen int // the length in characters of a string value, else -1
}

// column is one field of a table as Init saw it.
type column struct {
	key     string
	kinds   map[string]bool // string, int, float, bool, null, object or array
	present int             // how many records have it
}

// inspect reads the bytes of a .jsonl, .json or .csv file as Init's Python
// loader would, for the skill document: its fields are sorted.
func inspect(b []byte, format string) (*dataFile, error) {
	f, err := inspectBytes(b, format, false, kernel.Python)
	if err != nil {
		return nil, err
	}
	f.finish()
	return f, nil
}

// inspectFile reads the file of e as its loader will, to learn its
// records' fields and small value sets; an error says why the loader could
// not read it.
func inspectFile(e kernel.DataEntry, format string, tsv bool, lang kernel.Language, frames bool) (*dataFile, error) {
	b, err := kernel.ReadData(e)
	if err != nil {
		return nil, err
	}
	f, err := inspectBytes(b, format, tsv, lang)
	if err != nil || !frames {
		return f, err
	}
	f.bom = bytes.HasPrefix(b, utf8BOM)
	if err := f.inspectFrame(b, format); err != nil {
		return nil, err
	}
	return f, nil
}

func inspectBytes(b []byte, format string, tsv bool, lang kernel.Language) (*dataFile, error) {
	text, enc, err := decodeText(b)
	if err != nil {
		return nil, err
	}
	f := &dataFile{enc: enc}
	switch format {
	case "csv":
		err = f.inspectCSV(text, tsv, lang)
	case "json":
		err = f.inspectJSON(text, lang)
	case "jsonl":
		err = f.inspectJSONL(text, lang)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (f *dataFile) inspectCSV(text string, tsv bool, lang kernel.Language) error {
	f.delim = '\t'
	if !tsv {
		f.delim = sniffDelimiter(text)
	}
	var recs [][]string
	if lang == kernel.Go {
		var err error
		if recs, err = goCSV(text, f.delim); err != nil {
			return fmt.Errorf("not valid CSV for Go's encoding/csv: %v", err)
		}
	} else {
		var longest int
		recs, longest = pyCSV(text, f.delim)
		f.bigField = longest > pyCSVFieldLimit
	}
	if len(recs) == 0 {
		return errors.New("empty CSV (no header)")
	}
	f.header = recs[0]
	if len(f.header) == 0 {
		return errors.New("the first line is blank, so csv.DictReader would find no field names")
	}
	for _, rec := range recs[1:] {
		if len(rec) == 0 {
			continue // csv.DictReader skips blank lines (encoding/csv never returns them)
		}
		f.short = f.short || len(rec) < len(f.header)
		f.long = f.long || len(rec) > len(f.header)
	}
	if f.long && lang != kernel.Go {
		f.restKey = freeKey("_rest", f.header)
	}
	f.table = true
	for _, h := range f.header {
		f.columns = append(f.columns, column{key: h, kinds: map[string]bool{"string": true}})
	}
	var last *pyDict
	var cells int64 // the fields of every record
	dictRows(f.header, recs[1:], f.restKey, lang == kernel.Go, func(row *pyDict) {
		f.n++
		f.count(row)
		last = row
		cells += int64(len(row.keys))
		if lang == kernel.Python {
			size, plusKey := pyRow(row)
			f.mem.held += size
			f.mem.plusKey += plusKey
		}
	})
	if f.n == 0 {
		return errors.New("no records")
	}
	if lang == kernel.Go {
		f.mem = goCSVMem(cells, len(text))
	} else {
		f.mem.held += pyListSize(f.n)
	}
	for i := range f.columns {
		f.columns[i].present = f.n
	}
	f.last = last.shown()
	return nil
}

// dictRows calls each with the records of a CSV file after its header as
// csv.DictReader returns them: blank lines skipped, dict(zip(header, rec)),
// the rest of a long record a list under restKey, None for the fields a
// short one lacks. With pad (the Go loader), a short record is padded with
// "" and a long one keeps its rest apart.
func dictRows(header []string, recs [][]string, restKey string, pad bool, each func(*pyDict)) {
	for _, rec := range recs {
		if len(rec) == 0 {
			continue
		}
		row := &pyDict{}
		for i, h := range header {
			switch {
			case i < len(rec):
				row.set(h, rec[i])
			case pad:
				row.set(h, "")
			}
		}
		if !pad && len(rec) < len(header) {
			for _, h := range header[len(rec):] {
				row.set(h, nil)
			}
		}
		if !pad && len(rec) > len(header) {
			row.set(restKey, rec[len(header):])
		}
		each(row)
	}
}

func (f *dataFile) inspectJSON(text string, lang kernel.Language) error {
	clean, nonFin := nonFinite(text)
	if nonFin && lang == kernel.Go {
		return errors.New("has NaN or Infinity, which Python's json reads but Go's encoding/json does not")
	}
	v, err := decodeJSON(clean, lang)
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	f.mem = jsonMem(lang, v, text)
	var records []any
	var raw json.RawMessage // the records' text
	switch x := v.(type) {
	case map[string]any:
		var keys []string
		for k, val := range x {
			if isRecords(val) {
				keys = append(keys, k)
			}
		}
		if len(keys) != 1 {
			f.kind, f.n = "dict", len(x)
			for k := range x {
				f.keys = append(f.keys, k)
			}
			sort.Strings(f.keys)
			return nil
		}
		f.envelope = keys[0]
		for k := range x {
			if k != f.envelope {
				f.others = append(f.others, k)
			}
		}
		sort.Strings(f.others)
		if len(f.others) == 0 { // only the records stay bound
			f.mem = jsonMem(lang, x[f.envelope], text)
		} else if lang == kernel.Go { // the document as maps, and a typed copy of its records
			f.mem.held += goJSONMem(x[f.envelope], "").held
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(clean), &doc); err != nil {
			return fmt.Errorf("not valid JSON: %v", err)
		}
		records, raw = x[f.envelope].([]any), doc[f.envelope]
	case []any:
		if !isRecords(x) {
			f.kind, f.n = "list", len(x)
			peek, _ := json.Marshal(x[:min(3, len(x))])
			f.peek = string(peek)
			return nil
		}
		records, raw = x, json.RawMessage(clean)
	default:
		f.kind = "scalar"
		s, _ := json.Marshal(x)
		f.scalar = string(s)
		return nil
	}
	f.table = true
	for _, r := range records {
		f.n++
		for k, val := range r.(map[string]any) {
			f.countField(k, val)
		}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	last, err := orderedObject(raws[len(raws)-1])
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	f.last = last.shown()
	if lang == kernel.Go {
		var rawBytes [][]byte
		for _, r := range raws {
			rawBytes = append(rawBytes, r)
		}
		f.columns = jsonColumns(rawBytes)
	}
	return nil
}

func (f *dataFile) inspectJSONL(text string, lang kernel.Language) error {
	blank := pyBlank
	if lang == kernel.Go {
		blank = func(s string) bool { return strings.TrimSpace(s) == "" }
	}
	var raws [][]byte // Go: the records, for their fields' order and kinds
	var last []byte
	var values int64 // Go: the JSON values of every record
	for n, line := range pyLines(text) {
		line = strings.TrimRight(line, "\r\n")
		if blank(line) {
			continue
		}
		clean, nonFin := nonFinite(line)
		if nonFin && lang == kernel.Go {
			return fmt.Errorf("line %d has NaN or Infinity, which Python's json reads but Go's encoding/json does not", n+1)
		}
		obj, err := decodeObject([]byte(clean), lang)
		if err != nil {
			return fmt.Errorf("line %d is not a JSON object: %v", n+1, err)
		}
		if lang == kernel.Go {
			values += goValues(obj)
		} else {
			size, _ := pyJSON([]byte(clean))
			f.mem.held += size
			f.mem.plusKey += pyDictSize(len(obj)+1) - pyDictSize(len(obj))
		}
		f.n++
		for k, val := range obj {
			f.countField(k, val)
		}
		last = []byte(clean)
		if lang == kernel.Go {
			raws = append(raws, last)
		}
	}
	if f.n == 0 {
		return errors.New("no records")
	}
	if lang == kernel.Go {
		f.mem = goJSONLMem(values, len(text))
	} else {
		f.mem.held += pyListSize(f.n)
	}
	row, err := orderedObject(last)
	if err != nil {
		return err
	}
	f.table = true
	f.last = row.shown()
	if lang == kernel.Go {
		f.columns = jsonColumns(raws)
	}
	return nil
}

// decodeObject reads one JSON object as the loader will (see decodeJSON),
// with its values' text.
func decodeObject(b []byte, lang kernel.Language) (map[string]json.RawMessage, error) {
	if lang == kernel.Go {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null")
	}
	return m, nil
}

// decodeJSON reads one JSON value as the loader will: Python's json keeps
// every number (1e400 is inf), so numbers stay text; Go's encoding/json
// must fit them in a float64.
func decodeJSON(text string, lang kernel.Language) (any, error) {
	var raw json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, err // syntax: the same for both
	}
	var v any
	if lang == kernel.Go {
		err := json.Unmarshal(raw, &v)
		return v, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := dec.Decode(&v)
	return v, err
}

// isRecords reports whether v is a non-empty list of JSON objects.
func isRecords(v any) bool {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return false
	}
	for _, item := range list {
		if _, ok := item.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// pyDict is a record as a Python dict: keys in insertion order.
type pyDict struct {
	keys []string
	vals map[string]any
}

func (d *pyDict) set(k string, v any) {
	if d.vals == nil {
		d.vals = map[string]any{}
	}
	if _, ok := d.vals[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.vals[k] = v
}

// shown is the record as its fields would be shown.
func (d *pyDict) shown() []shownField {
	var out []shownField
	for _, k := range d.keys {
		out = append(out, shownValue(k, d.vals[k]))
	}
	return out
}

func shownValue(k string, v any) shownField {
	switch x := v.(type) {
	case nil:
		return shownField{k, "None", -1}
	case string:
		return shownField{k, pyRepr(x), len([]rune(x))}
	case []string:
		var parts []string
		for _, s := range x {
			parts = append(parts, pyRepr(s))
		}
		return shownField{k, "[" + strings.Join(parts, ", ") + "]", -1}
	case json.RawMessage:
		var s string
		if len(x) > 0 && x[0] == '"' && json.Unmarshal(x, &s) == nil {
			return shownField{k, pyRepr(s), len([]rune(s))}
		}
		return shownField{k, string(x), -1}
	}
	return shownField{k, fmt.Sprint(v), -1}
}

// orderedObject reads a JSON object's keys in order, with their raw values.
func orderedObject(raw []byte) (*pyDict, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	d := &pyDict{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		d.set(key, val)
	}
	return d, nil
}

// count adds a record's fields and string values to f's.
func (f *dataFile) count(row *pyDict) {
	for _, k := range row.keys {
		f.countField(k, row.vals[k])
	}
}

// countField adds a field and, if it is a string (or a JSON string's
// text), its value to f's.
func (f *dataFile) countField(k string, v any) {
	if f.distinct == nil {
		f.distinct, f.notSmall = map[string]map[string]bool{}, map[string]bool{}
	}
	vals, ok := f.distinct[k]
	if !ok {
		vals = map[string]bool{}
		f.distinct[k] = vals
		f.fields = append(f.fields, k)
	}
	if len(vals) > maxDistinct || f.notSmall[k] {
		return // too many values, or too long, to show: no need to look
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.RawMessage:
		if len(x) == 0 || x[0] != '"' {
			return
		}
		if (len(x)-2)/6 > maxSmallValue { // even if every character were escaped
			f.notSmall[k] = true
			return
		}
		if json.Unmarshal(x, &s) != nil {
			return
		}
	default:
		return
	}
	if utf8.RuneCountInString(s) > maxSmallValue {
		f.notSmall[k] = true
		return
	}
	vals[s] = true
}

// finish decides what Init shows of f: the values of its fields with few
// distinct values, and whether its last record is shown cut.
func (f *dataFile) finish() {
	f.small = map[string][]string{}
	for k, vals := range f.distinct {
		if !f.notSmall[k] && len(vals) >= 2 && len(vals) <= maxDistinct && f.n > 2*len(vals) {
			for v := range vals {
				f.small[k] = append(f.small[k], v)
			}
			sort.Strings(f.small[k])
		}
	}
	sort.Strings(f.fields)
	for _, s := range f.last {
		if s.strLen > briefOver {
			f.brief = true
		}
	}
}

// freeKey is key, or key with a number appended, not among taken.
func freeKey(key string, taken []string) string {
	used := map[string]bool{}
	for _, t := range taken {
		used[t] = true
	}
	out := key
	for n := 2; used[out]; n++ {
		out = key + strconv.Itoa(n)
	}
	return out
}

// schema is what files must share to be one group: format, how they are
// read, and their fields.
func (f *dataFile) schema() string {
	if !f.table || len(f.others) > 0 {
		return "" // an envelope with more than records is bound alone
	}
	fields := f.header
	if f.format != "csv" {
		fields = append([]string(nil), f.fields...)
		sort.Strings(fields)
	}
	return strings.Join([]string{f.format, f.enc, string(f.delim), f.envelope, strings.Join(fields, "\x00")}, "\x01")
}

// groupFiles binds each set of minGroup or more tables with one schema as
// one dataFile, at the place of its first file.
func groupFiles(files []*dataFile, names []string) []*dataFile {
	by := map[string][]*dataFile{}
	for _, f := range files {
		if s := f.schema(); s != "" {
			by[s] = append(by[s], f)
		}
	}
	var out []*dataFile
	done := map[string]bool{}
	for _, f := range files {
		s := f.schema()
		members := by[s]
		if s == "" || len(members) < minGroup {
			out = append(out, f)
			continue
		}
		if done[s] {
			continue
		}
		done[s] = true
		out = append(out, newGroup(members, names))
	}
	return out
}

func newGroup(members []*dataFile, names []string) *dataFile {
	first := members[0]
	g := &dataFile{
		name: first.name, format: first.format, enc: first.enc, delim: first.delim, header: first.header,
		envelope: first.envelope, table: true, members: members,
		distinct: map[string]map[string]bool{}, notSmall: map[string]bool{},
	}
	for _, m := range members {
		g.n += m.n
		g.short, g.long, g.bigField = g.short || m.short, g.long || m.long, g.bigField || m.bigField
		if m.restKey != "" {
			g.restKey = m.restKey
		}
		for _, k := range m.fields {
			if _, ok := g.distinct[k]; !ok {
				g.distinct[k] = map[string]bool{}
				g.fields = append(g.fields, k)
			}
			for v := range m.distinct[k] {
				if len(g.distinct[k]) <= maxDistinct {
					g.distinct[k][v] = true
				}
			}
			g.notSmall[k] = g.notSmall[k] || m.notSmall[k]
		}
	}
	g.columns = mergeColumns(members)
	g.source = freeKey("source", g.fields)
	last := members[len(members)-1]
	g.last = append([]shownField{{g.source, pyRepr(last.name), len(last.name)}}, last.last...)
	g.fields = append(g.fields, g.source)
	g.pattern = groupPattern(members, names)
	return g
}

// mergeColumns joins the columns of a group's files: CSV files share their
// header; JSON fields keep the order they first appear in, and every kind.
func mergeColumns(members []*dataFile) []column {
	var cols []column
	at := map[string]int{}
	for _, m := range members {
		if m.format == "csv" && len(cols) > 0 {
			for i := range cols {
				cols[i].present += m.n
			}
			continue
		}
		for _, c := range m.columns {
			i, ok := at[c.key]
			if !ok || m.format == "csv" {
				i = len(cols)
				at[c.key] = i
				cols = append(cols, column{key: c.key, kinds: map[string]bool{}})
			}
			for k := range c.kinds {
				cols[i].kinds[k] = true
			}
			cols[i].present += c.present
		}
	}
	return cols
}

// groupPattern is a prefix and suffix of file names that select exactly
// the group's files among names (as Python's str.startswith and endswith
// would), or two empty strings when there is none.
func groupPattern(members []*dataFile, names []string) [2]string {
	prefix, suffix := members[0].name, members[0].name
	for _, m := range members[1:] {
		for !strings.HasPrefix(m.name, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
		for !strings.HasSuffix(m.name, suffix) {
			suffix = suffix[1:]
		}
	}
	if prefix == "" && suffix == "" {
		return [2]string{}
	}
	want := map[string]bool{}
	for _, m := range members {
		want[m.name] = true
	}
	// The tidiest first: the prefix without its trailing digits.
	for _, p := range []string{strings.TrimRight(prefix, "0123456789"), prefix} {
		exact := true
		for _, n := range names {
			if strings.HasPrefix(n, p) && strings.HasSuffix(n, suffix) != want[n] {
				exact = false
				break
			}
			if !strings.HasPrefix(n, p) && want[n] {
				exact = false
				break
			}
		}
		if exact && p+suffix != "" {
			return [2]string{p, suffix}
		}
	}
	return [2]string{}
}

// groupBase is the name a group's variable is made from: its files' common
// prefix without trailing digits and separators, else their common suffix
// without its extension and leading ones, else "records".
func groupBase(members []*dataFile) string {
	prefix := members[0].name
	suffix := strings.TrimSuffix(prefix, filepath.Ext(prefix))
	for _, m := range members[1:] {
		for !strings.HasPrefix(m.name, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
		base := strings.TrimSuffix(m.name, filepath.Ext(m.name))
		for !strings.HasSuffix(base, suffix) {
			suffix = suffix[1:]
		}
	}
	trim := "0123456789_-. "
	if p := strings.TrimRight(prefix, trim); p != "" {
		return p
	}
	if s := strings.TrimLeft(suffix, trim); s != "" {
		return s
	}
	return "records"
}

// groupNote describes a group for the rules: "80 files sensor-001.csv ...
// sensor-080.csv".
func groupNote(g *dataFile) string {
	return fmt.Sprintf("%d files %s ... %s", len(g.members), g.members[0].name, g.members[len(g.members)-1].name)
}

var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
	// names the prefix itself uses
	"json": true, "os": true, "csv": true, "load_jsonl": true, "load_json": true, "load_csv": true, "brief": true,
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

// initCell is a cell Init writes, with the output Init expects of it (to
// estimate the transcript's tokens).
type initCell struct {
	code string
	out  string
}

// header is the comment block of a prefix.
type header struct {
	name, description, rules string
	skipped                  []Skipped
}

// maxSkippedListed is how many skipped files the header names.
const maxSkippedListed = 20

func (h header) render(lang kernel.Language, cells []initCell) string {
	c, marker := "#", "# %%"
	if lang == kernel.Go {
		c, marker = "//", "// %%"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s name: %s\n%s language: %s\n", c, h.name, c, lang)
	fmt.Fprintf(&b, "%s description: %s\n", c, h.description)
	fmt.Fprintf(&b, "%s rules: %s\n", c, h.rules)
	for i, s := range h.skipped {
		if i == maxSkippedListed {
			fmt.Fprintf(&b, "%s skipped: %d more files\n", c, len(h.skipped)-i)
			break
		}
		fmt.Fprintf(&b, "%s skipped: %s: %s\n", c, headerLine(s.File), headerLine(s.Reason))
	}
	for _, cell := range cells {
		b.WriteString(marker + "\n" + cell.code)
		if !strings.HasSuffix(cell.code, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// headerLine keeps a text on one comment line.
func headerLine(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		return strconv.Quote(s)
	}
	return s
}

// estimateTokens renders the cells with their expected outputs as the
// transcript prefix verify counts, and counts its tokens.
func estimateTokens(lang kernel.Language, enc session.Encoding, cells []initCell) (int, error) {
	var sc []session.Cell
	for i, c := range cells {
		res := kernel.Result{Count: i + 1, Status: kernel.StatusOK}
		if lang == kernel.Go {
			res.Stdout = c.out
		} else {
			res.Value = c.out
		}
		sc = append(sc, session.Cell{Code: strings.TrimRight(c.code, "\n"), Result: res, From: session.FromPrefix})
	}
	return session.CountTokens(enc, session.RenderCells(sc))
}

// pyRepr is roughly Python's repr of a string (enough to count tokens).
func pyRepr(s string) string {
	q := strconv.Quote(s)
	return "'" + strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`) + "'"
}

// pyString is a Python string literal (JSON's escapes are Python's too).
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pyChar is a one-character Python string literal, in single quotes.
func pyChar(r rune) string {
	if r == '\t' {
		return `'\t'`
	}
	return "'" + string(r) + "'"
}

// reprRecord shows a record as a dict, its long strings cut when brief.
func reprRecord(fields []shownField, brief bool) string {
	var parts []string
	for _, f := range fields {
		v := f.repr
		if brief && f.strLen > briefWidth {
			v = v[:min(len(v), briefWidth)] + fmt.Sprintf("... (%d more characters)'", f.strLen-briefWidth)
		}
		parts = append(parts, pyRepr(f.key)+": "+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// reprList shows strings as a Python list.
func reprList(items []string) string {
	var parts []string
	for _, s := range items {
		parts = append(parts, pyRepr(s))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// listing is the first cell's code and output: the folder's entries, or
// their count and the first 20 when there are more than maxListed.
func listing(names []string, lang kernel.Language) (code, out string) {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	if lang == kernel.Go {
		if len(sorted) <= maxListed {
			return "entries, _ := os.ReadDir(\"data\")\nfor _, e := range entries {\n\tfmt.Println(e.Name())\n}\n",
				strings.Join(sorted, "\n") + "\n"
		}
		return "entries, _ := os.ReadDir(\"data\")\nfmt.Println(len(entries), \"entries; the first 20:\")\nfor _, e := range entries[:20] {\n\tfmt.Println(e.Name())\n}\n",
			fmt.Sprintf("%d entries; the first 20:\n", len(sorted)) + strings.Join(sorted[:20], "\n") + "\n"
	}
	if len(sorted) <= maxListed {
		return "sorted(os.listdir('data'))\n", reprList(sorted)
	}
	return "len(os.listdir('data')), sorted(os.listdir('data'))[:20]\n",
		fmt.Sprintf("(%d, %s)", len(sorted), reprList(sorted[:20]))
}

// pyLoadArgs are the arguments of a file's Python loader after its name,
// and a comment on how it is read ("" if none).
func pyLoadArgs(f *dataFile) (args, note string) {
	var notes []string
	if f.enc == encLatin1 {
		args += ", encoding='latin-1'"
		notes = append(notes, "not UTF-8: read as Latin-1")
	}
	if f.format == "csv" && f.delim != ',' {
		args += ", delimiter=" + pyChar(f.delim)
	}
	if f.restKey != "" {
		args += ", restkey=" + pyRepr(f.restKey)
		notes = append(notes, fmt.Sprintf("rows longer than the header keep the rest in %s", pyRepr(f.restKey)))
	}
	if f.short {
		notes = append(notes, "fields missing from short rows are None")
	}
	return args, strings.Join(notes, "; ")
}

// renderInit writes the Python prefix of files, or with bind false its
// control: the same cells with the same outputs, whose data variables are
// never bound (each use is the expression that loads the file).
func renderInit(folder string, files []*dataFile, names []string, bind bool) (header, []initCell) {
	used := map[string]bool{}
	grouped := false
	var binds []string
	for _, f := range files {
		base := strings.TrimSuffix(f.name, filepath.Ext(f.name))
		switch {
		case f.members != nil:
			grouped = true
			f.ident = identifier(groupBase(f.members), used)
			binds = append(binds, fmt.Sprintf("%s (%s, one list; %s is the file)", f.ident, groupNote(f), pyRepr(f.source)))
		case len(f.others) > 0:
			f.ident = identifier(base, used)
			f.docIdent = identifier(base+"_doc", used)
			binds = append(binds, f.ident, f.docIdent)
		default:
			f.ident = identifier(base, used)
			binds = append(binds, f.ident)
		}
	}
	h := header{name: identifier(folder, map[string]bool{})}
	h.description = fmt.Sprintf("The files of %s, one variable each. Written by ctxcode prefix init; edit freely.", folder)
	if grouped {
		h.description = fmt.Sprintf("The files of %s, one variable per file or per group of files with one schema. Written by ctxcode prefix init; edit freely.", folder)
	}
	h.rules = "The data is loaded: " + strings.Join(binds, ", ") + "."
	// ref is how a later cell names f's data: its variable, or in the
	// control the expression that loads it.
	ref := func(f *dataFile) string { return f.ident }
	if !bind {
		h.name += NoBindSuffix
		h.description = fmt.Sprintf("The control of prefix %s (condition B0): the same cells and outputs, but no data variable is bound: "+
			"every cell loads the files it reads. Written by ctxcode prefix init.", identifier(folder, map[string]bool{}))
		h.rules = "No data variable is bound: load the files of data/ in the cells you write, as the cells shown do."
		ref = pyLoadExpr
	}

	var cells []initCell
	code, out := listing(names, kernel.Python)
	cells = append(cells, initCell{"import csv, json, os\n" + code, out})

	var b strings.Builder
	formats := map[string]bool{}
	bigFields, brief := []string{}, false
	for _, f := range files {
		formats[f.format] = true
		if f.bigField {
			bigFields = append(bigFields, f.name)
		}
		brief = brief || f.brief
	}
	if len(bigFields) > 0 {
		fmt.Fprintf(&b, "csv.field_size_limit(1 << 30)  # %s: fields over 128 KiB\n", strings.Join(bigFields, ", "))
	}
	if formats["jsonl"] {
		b.WriteString("def load_jsonl(name, encoding='utf-8-sig'):\n    with open(f'data/{name}', encoding=encoding) as f:\n        return [json.loads(l) for l in f if l.strip()]\n")
	}
	if formats["json"] {
		b.WriteString("def load_json(name, encoding='utf-8-sig'):\n    with open(f'data/{name}', encoding=encoding) as f:\n        return json.load(f)\n")
	}
	if formats["csv"] {
		b.WriteString("def load_csv(name, encoding='utf-8-sig', **options):\n    with open(f'data/{name}', encoding=encoding, newline='') as f:\n        return list(csv.DictReader(f, **options))\n")
	}
	if brief {
		fmt.Fprintf(&b, "def brief(r, width=%d):\n    \"\"\"r with its strings over width characters cut, to look at.\"\"\"\n"+
			"    return {k: v[:width] + f'... ({len(v) - width} more characters)' if isinstance(v, str) and len(v) > width else v\n"+
			"            for k, v in r.items()}\n", briefWidth)
	}
	for _, f := range files {
		if !bind {
			break // the control binds no data variable
		}
		args, note := pyLoadArgs(f)
		comment := ""
		if note != "" {
			comment = "  # " + note
		}
		switch {
		case f.members != nil:
			load := fmt.Sprintf("load_%s(n%s)", f.format, args)
			if f.envelope != "" {
				load += "[" + pyString(f.envelope) + "]"
			}
			if note != "" {
				fmt.Fprintf(&b, "# %s\n", note)
			}
			fmt.Fprintf(&b, "%s = [{%s: n, **r}\n", f.ident, pyRepr(f.source))
			pad := strings.Repeat(" ", len(f.ident)+4)
			if p := f.pattern; p != [2]string{} {
				var conds []string
				if p[0] != "" {
					conds = append(conds, fmt.Sprintf("n.startswith(%s)", pyString(p[0])))
				}
				if p[1] != "" {
					conds = append(conds, fmt.Sprintf("n.endswith(%s)", pyString(p[1])))
				}
				fmt.Fprintf(&b, "%sfor n in sorted(os.listdir('data')) if %s\n", pad, strings.Join(conds, " and "))
			} else {
				var ns []string
				for _, m := range f.members {
					ns = append(ns, pyString(m.name))
				}
				fmt.Fprintf(&b, "%sfor n in [%s]\n", pad, strings.Join(ns, ", "))
			}
			fmt.Fprintf(&b, "%sfor r in %s]\n", pad, load)
		case f.envelope != "" && len(f.others) > 0:
			fmt.Fprintf(&b, "%s = load_json(%s%s)%s\n", f.docIdent, pyString(f.name), args, comment)
			fmt.Fprintf(&b, "%s = %s[%s]  # the records; the other keys: %s\n", f.ident, f.docIdent, pyString(f.envelope), strings.Join(f.others, ", "))
		case f.envelope != "":
			fmt.Fprintf(&b, "%s = load_json(%s%s)[%s]  # the records, inside {%s: [...]}%s\n",
				f.ident, pyString(f.name), args, pyString(f.envelope), pyString(f.envelope), strings.ReplaceAll(comment, "  #", ";"))
		default:
			fmt.Fprintf(&b, "%s = load_%s(%s%s)%s\n", f.ident, f.format, pyString(f.name), args, comment)
		}
	}
	var lens, lensOut []string
	for _, f := range files {
		if f.kind != "scalar" {
			lens = append(lens, "len("+ref(f)+")")
			lensOut = append(lensOut, strconv.Itoa(f.n))
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
	cells = append(cells, initCell{b.String(), "(" + strings.Join(lensOut, ", ") + ")"})

	var fieldLines, fieldOut, smallLines, smallOut []string
	for _, f := range files {
		if !f.table {
			continue
		}
		fieldLines = append(fieldLines, fmt.Sprintf(" %s: sorted({k for r in %s for k in r}),", pyString(f.ident), ref(f)))
		fieldOut = append(fieldOut, pyRepr(f.ident)+": "+reprList(f.fields))
		var keys []string
		for k := range f.small {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			smallLines = append(smallLines, fmt.Sprintf(" %s: sorted({r[%s] for r in %s if isinstance(r.get(%s), str)}),",
				pyString(f.ident+"."+k), pyString(k), ref(f), pyString(k)))
			smallOut = append(smallOut, pyRepr(f.ident+"."+k)+": "+reprList(f.small[k]))
		}
	}
	if len(fieldLines) > 0 {
		cells = append(cells, initCell{"{\n" + strings.Join(fieldLines, "\n") + "\n}\n", "{" + strings.Join(fieldOut, ",\n ") + "}"})
	}
	if len(smallLines) > 0 {
		cells = append(cells, initCell{"{\n" + strings.Join(smallLines, "\n") + "\n}\n", "{" + strings.Join(smallOut, ",\n ") + "}"})
	}
	for _, f := range files {
		switch {
		case f.table && f.brief:
			cells = append(cells, initCell{fmt.Sprintf("brief(%s[-1])\n", ref(f)), reprRecord(f.last, true)})
		case f.table:
			cells = append(cells, initCell{fmt.Sprintf("%s[-1]\n", ref(f)), reprRecord(f.last, false)})
		case f.kind == "dict":
			cells = append(cells, initCell{fmt.Sprintf("sorted(%s)[:20]\n", ref(f)), reprList(f.keys[:min(20, len(f.keys))])})
		case f.kind == "list":
			cells = append(cells, initCell{fmt.Sprintf("%s[:3]\n", ref(f)), f.peek})
		default:
			cells = append(cells, initCell{fmt.Sprintf("%s\n", ref(f)), f.scalar})
		}
	}
	return h, cells
}

// pyLoadExpr is the Python expression that loads f's data as the prefix
// binds it, for the control, which binds nothing.
func pyLoadExpr(f *dataFile) string {
	args, _ := pyLoadArgs(f)
	if f.members == nil {
		load := fmt.Sprintf("load_%s(%s%s)", f.format, pyString(f.name), args)
		if f.envelope != "" {
			load += "[" + pyString(f.envelope) + "]"
		}
		return load
	}
	load := fmt.Sprintf("load_%s(n%s)", f.format, args)
	if f.envelope != "" {
		load += "[" + pyString(f.envelope) + "]"
	}
	files := memberLoop(f)
	return fmt.Sprintf("[{%s: n, **r} %s for r in %s]", pyRepr(f.source), files, load)
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

// memberLoop is the Python for clause over the file names n of a group's
// members: those the folder's listing matches by the group's pattern, or
// the members named one by one.
func memberLoop(f *dataFile) string {
	if p := f.pattern; p != [2]string{} {
		var conds []string
		if p[0] != "" {
			conds = append(conds, fmt.Sprintf("n.startswith(%s)", pyString(p[0])))
		}
		if p[1] != "" {
			conds = append(conds, fmt.Sprintf("n.endswith(%s)", pyString(p[1])))
		}
		return fmt.Sprintf("for n in sorted(os.listdir('data')) if %s", strings.Join(conds, " and "))
	}
	var ns []string
	for _, m := range f.members {
		ns = append(ns, pyString(m.name))
	}
	return fmt.Sprintf("for n in [%s]", strings.Join(ns, ", "))
}
