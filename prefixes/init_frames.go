package prefixes

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxcode/ctxcode/kernel"
)

// The frames style of Init's Python prefixes: each table of the folder is a
// pandas DataFrame, read as a pandas user would read it, and the cells show
// what an analyst looks at first (the libraries at hand, each frame's
// shape, dtypes and first rows).
//
// How tables are read:
//   - CSV and TSV with pd.read_csv: the sniffed delimiter (sep=), the
//     encoding ('utf-8-sig' after a byte-order mark, 'latin-1' for text
//     that is not UTF-8), skipinitialspace=True when fields have a space
//     after the delimiter, thousands= when numbers are written "1 234"
//     (or "1,234" where ',' is not the delimiter, "1.234,5" with
//     decimal=','), decimal=',' when decimals are written "3,20"; a file
//     with rows longer than its header gets names= for the extra fields
//     (pandas would refuse it). Quoted newlines need nothing.
//   - JSON with Python's json, then pd.DataFrame(records): the parser Init
//     checks files with. pd.read_json, in pandas 1.5 (the image's), turns
//     strings of digits into numbers ("007" is 7) and columns named like
//     dates (created_at) into dates, refuses integers past 64 bits, and
//     rounds floats its own way (1.0000000000000002 is 1.0; 86 of 20,000
//     random floats differed from Python's).
//
// pd.read_csv's default float converter differs from Python's float() in
// the last bit now and then (2,828 of those 20,004 floats); a pandas user
// lives with that, and so does the prefix.
//   - A group of files with one schema is one frame (pd.concat) whose last
//     column names each row's file.
//
// Init runs no kernel, so it cannot know pandas' exact text: it predicts
// the dtypes (int64, float64, bool, object) from the values as pandas'
// parsers infer them, and the outputs' widths from the fields, to estimate
// the tokens; Verify counts the real ones.

// frameInfo is what pandas is expected to make of a table.
type frameInfo struct {
	cols []*frameCol
	rows int
	csv  csvOptions
	held int64 // bytes the frame holds, about
	peak int64 // bytes the reading takes besides, at most, about
}

// frameCol is one column of a frame, with what its values are.
type frameCol struct {
	name                                 string
	ints, floats, bools, missing, others int
	head                                 []string // the first rows' values, as shown
	width                                int      // the widest shown value
	strBytes                             int64    // what its distinct text values take as Python str objects
	seen                                 map[string]bool
}

// maxSeen is how many distinct text values of a column Init remembers:
// past them, every value counts as new.
const maxSeen = 1 << 16

// text counts a text value's str object, once for equal values (pandas'
// parsers share them within a column).
func (c *frameCol) text(s string) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[s] {
		return
	}
	if len(c.seen) < maxSeen {
		c.seen[s] = true
	}
	c.strBytes += pyStr(s)
}

// dtype is pandas' dtype of the column, as its parsers infer it: integers
// without a gap are int64, numbers with a gap or a fraction float64,
// True/False without a gap bool, anything else object.
func (c *frameCol) dtype(jsonNulls bool) string {
	switch {
	case c.others > 0:
		return "object"
	case c.bools > 0 && (c.ints+c.floats > 0 || c.missing > 0):
		return "object"
	case c.bools > 0:
		return "bool"
	case c.ints+c.floats == 0 && jsonNulls:
		return "object" // a column of None
	case c.floats > 0 || c.missing > 0:
		return "float64"
	}
	return "int64"
}

// csvOptions are the arguments of pd.read_csv beyond the file's name.
type csvOptions struct {
	skipSpace bool
	thousands rune // 0: none
	decimal   rune // 0: '.'
	names     []string
}

// csvEvidence is what the fields of a CSV file say of how its numbers are
// written.
type csvEvidence struct {
	spaceAfter     bool // a field starts with a space
	spaceThousands bool // 1 234
	commaThousands bool // 1,234,567 or 1,234.5
	commaDecimal   bool // 3,20 (not three digits after the comma)
	dotDecimal     bool // 3.20
	dotThousands   bool // 1.234,5
}

var (
	reSpaceThousands = regexp.MustCompile(`^[+-]?\d{1,3}( \d{3})+([.,]\d+)?$`)
	reCommaThousands = regexp.MustCompile(`^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$`)
	reCommaDecimal   = regexp.MustCompile(`^[+-]?\d*,\d+$`)
	reDotDecimal     = regexp.MustCompile(`^[+-]?\d*\.\d+$`)
	reDotThousands   = regexp.MustCompile(`^[+-]?\d{1,3}(\.\d{3})+,\d+$`)
	reInt            = regexp.MustCompile(`^[+-]?\d+$`)
	reFloat          = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(?i:inf|infinity)$`)
)

func (e *csvEvidence) see(field string) {
	if strings.HasPrefix(field, " ") {
		e.spaceAfter = true
	}
	v := strings.TrimSpace(field)
	if v == "" || len(v) > 40 || !strings.ContainsAny(v, "0123456789") {
		return
	}
	switch {
	case reSpaceThousands.MatchString(v):
		e.spaceThousands = true
	case reDotThousands.MatchString(v):
		e.dotThousands = true
	case reCommaThousands.MatchString(v) && !reCommaDecimal.MatchString(v):
		e.commaThousands = true
	case reCommaThousands.MatchString(v):
		// 1,234: a thousand, or one and a bit; the other fields decide.
	case reCommaDecimal.MatchString(v):
		e.commaDecimal = true
	case reDotDecimal.MatchString(v):
		e.dotDecimal = true
	}
}

func (e *csvEvidence) merge(o csvEvidence) {
	e.spaceAfter = e.spaceAfter || o.spaceAfter
	e.spaceThousands = e.spaceThousands || o.spaceThousands
	e.commaThousands = e.commaThousands || o.commaThousands
	e.commaDecimal = e.commaDecimal || o.commaDecimal
	e.dotDecimal = e.dotDecimal || o.dotDecimal
	e.dotThousands = e.dotThousands || o.dotThousands
}

// options are the read_csv arguments that the evidence asks for, with
// delim the file's delimiter.
func (e csvEvidence) options(delim rune) csvOptions {
	o := csvOptions{skipSpace: e.spaceAfter && delim != ' '}
	if delim != ',' && (e.commaDecimal || e.dotThousands) && !e.dotDecimal && !e.commaThousands {
		o.decimal = ','
	}
	switch {
	case e.spaceThousands && delim != ' ':
		o.thousands = ' '
	case o.decimal == ',' && e.dotThousands && delim != '.':
		o.thousands = '.'
	case o.decimal == 0 && e.commaThousands && delim != ',':
		o.thousands = ','
	}
	return o
}

// pandasNA are the fields pd.read_csv reads as missing, by default.
var pandasNA = map[string]bool{
	"": true, "#N/A": true, "#N/A N/A": true, "#NA": true, "-1.#IND": true, "-1.#QNAN": true, "-NaN": true,
	"-nan": true, "1.#IND": true, "1.#QNAN": true, "<NA>": true, "N/A": true, "NA": true, "NULL": true,
	"NaN": true, "n/a": true, "nan": true, "null": true,
}

// maxDtypeLines is how many columns a frame may have for its cell to show
// their dtypes one a line (Series.to_string); a wider frame's cell shows a
// line per dtype that names its columns, which is shorter.
const maxDtypeLines = 24

// maxHeadRows is how many first rows a frame's cell shows.
const maxHeadRows = 3

// maxShownWidth is what pandas shows of a long text value (its
// display.max_colwidth, 50): 47 characters and "...".
const maxShownWidth = 50

// see adds one CSV field, as pd.read_csv reads it with o, to the column.
func (c *frameCol) seeCSV(field string, present bool, o csvOptions, row int) {
	if o.skipSpace {
		field = strings.TrimLeft(field, " ")
	}
	shown := field
	switch v := strings.TrimSpace(field); {
	case !present || pandasNA[field]:
		c.missing++
		shown = "NaN"
	case v == "True" || v == "TRUE" || v == "true" || v == "False" || v == "FALSE" || v == "false":
		c.bools++
		shown = strings.ToUpper(v[:1]) + strings.ToLower(v[1:])
	default:
		n := v
		if o.thousands != 0 {
			n = strings.ReplaceAll(n, string(o.thousands), "")
		}
		if o.decimal != 0 {
			n = strings.Replace(n, string(o.decimal), ".", 1)
		}
		switch {
		case reInt.MatchString(n):
			c.ints++
			shown = strings.TrimLeft(n, "+")
		case reFloat.MatchString(n):
			c.floats++
			shown = n
		default:
			c.others++
			c.text(field)
		}
	}
	c.show(shown, row)
}

// show keeps a value of one of the first rows, cut as pandas cuts it.
func (c *frameCol) show(s string, row int) {
	s = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
	if utf8.RuneCountInString(s) > maxShownWidth {
		s = string([]rune(s)[:maxShownWidth-3]) + "..."
	}
	if row < maxHeadRows {
		c.head = append(c.head, s)
		c.width = max(c.width, utf8.RuneCountInString(s))
	}
}

// inspectFrame learns what pandas will make of the table in b (f has been
// inspected as a record file already).
func (f *dataFile) inspectFrame(b []byte, format string) error {
	if !f.table {
		return nil
	}
	text, _, err := decodeText(b)
	if err != nil {
		return err
	}
	switch format {
	case "csv":
		f.frame = csvFrame(text, f.delim)
	case "jsonl":
		var raws [][]byte
		for _, line := range pyLines(text) {
			if line = strings.TrimRight(line, "\r\n"); !pyBlank(line) {
				clean, _ := nonFinite(line) // NaN is a gap, as null is
				raws = append(raws, []byte(clean))
			}
		}
		f.frame = jsonFrame(raws)
		f.frame.held = f.mem.held // the records' values, shared by the frame: about
	case "json":
		clean, _ := nonFinite(text)
		var raw json.RawMessage = []byte(clean)
		if f.envelope != "" {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(clean), &doc); err != nil {
				return fmt.Errorf("not valid JSON: %v", err)
			}
			raw = doc[f.envelope]
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("not valid JSON: %v", err)
		}
		raws := make([][]byte, len(list))
		for i, r := range list {
			raws[i] = r
		}
		f.frame = jsonFrame(raws)
		f.frame.held = f.mem.held // the records' values, shared by the frame: about
	}
	return nil
}

// csvFrame predicts the frame pd.read_csv makes of CSV text.
func csvFrame(text string, delim rune) *frameInfo {
	recs, _ := pyCSV(text, delim)
	var ev csvEvidence
	width := 0
	var rows [][]string
	for i, r := range recs {
		if len(r) == 0 {
			continue // a blank line: pandas skips it too
		}
		if i > 0 {
			rows = append(rows, r)
		}
		width = max(width, len(r))
		for _, field := range r {
			ev.see(field)
		}
	}
	fr := &frameInfo{csv: ev.options(delim)}
	if fr.csv.skipSpace {
		// A quote after the spaces opens a quoted field: read again.
		recs, _ = parseCSV(text, delim, true)
		width, rows = 0, nil
		for i, r := range recs {
			if len(r) > 0 && i > 0 {
				rows = append(rows, r)
			}
			width = max(width, len(r))
		}
	}
	fr.rows = len(rows)
	fr.csv.names, fr.cols = csvColumns(recs[0], width, fr.csv.skipSpace)
	for i, r := range rows {
		for j, c := range fr.cols {
			field, present := "", j < len(r)
			if present {
				field = r[j]
			}
			c.seeCSV(field, present, fr.csv, i)
		}
	}
	fr.held = frameHeld(fr.cols, fr.rows)
	fr.peak = int64(len(text)) * 3 / 2 // the text, and the parser's buffers
	for _, c := range fr.cols {
		c.seen = nil
	}
	return fr
}

// csvColumns names the columns of a CSV file whose header is header and
// whose widest row has width fields, as pandas names them: a blank name is
// "Unnamed: i", a repeated one gets ".1". When rows are longer than the
// header, names are the names pd.read_csv must be given for them.
func csvColumns(header []string, width int, skipSpace bool) (names []string, cols []*frameCol) {
	seen := map[string]int{}
	var all []string
	for i := 0; i < max(width, len(header)); i++ {
		name := ""
		if i < len(header) {
			name = header[i]
			if skipSpace {
				name = strings.TrimLeft(name, " ")
			}
		} else {
			name = freeKey("extra_"+strconv.Itoa(i-len(header)+1), all)
		}
		if name == "" {
			name = "Unnamed: " + strconv.Itoa(i)
		}
		if n := seen[name]; n > 0 {
			seen[name]++
			name = name + "." + strconv.Itoa(n)
		} else {
			seen[name] = 1
		}
		all = append(all, name)
		cols = append(cols, &frameCol{name: name})
	}
	if width > len(header) {
		names = all
	}
	return names, cols
}

// jsonFrame predicts the frame pd.DataFrame makes of JSON records: the
// columns in the order they first appear.
func jsonFrame(raws [][]byte) *frameInfo {
	fr := &frameInfo{rows: len(raws)}
	at := map[string]*frameCol{}
	for i, raw := range raws {
		obj, err := orderedObject(raw)
		if err != nil {
			continue
		}
		for _, k := range obj.keys {
			c, ok := at[k]
			if !ok {
				c = &frameCol{name: k, missing: i}
				for r := 0; r < min(i, maxHeadRows); r++ {
					c.show("NaN", r)
				}
				at[k] = c
				fr.cols = append(fr.cols, c)
			}
			v, _ := obj.vals[k].(json.RawMessage)
			shown := string(v)
			switch jsonKind(v) {
			case "int":
				c.ints++
			case "float":
				c.floats++
			case "bool":
				c.bools++
				shown = strings.ToUpper(shown[:1]) + shown[1:]
			case "null":
				c.missing++
				shown = "None"
			case "string":
				c.others++
				var s string
				_ = json.Unmarshal(v, &s)
				shown = s
				c.text(s)
			default:
				c.others++
			}
			c.show(shown, i)
		}
		for _, c := range fr.cols {
			if _, ok := obj.vals[c.name]; !ok {
				c.missing++
				c.show("NaN", i)
			}
		}
	}
	return fr
}

// frameHeld is about what a frame of these columns holds: 8 bytes a cell,
// and a str object for each distinct text value of a column.
func frameHeld(cols []*frameCol, rows int) int64 {
	var n int64
	for _, c := range cols {
		n += 8 * int64(rows)
		if c.dtype(false) == "object" {
			n += c.strBytes
		}
	}
	return n
}

// mergeFrames is the frame pd.concat makes of a group's frames, with a last
// column naming each row's file.
func mergeFrames(g *dataFile) *frameInfo {
	fr := &frameInfo{}
	var ev csvEvidence
	at := map[string]*frameCol{}
	for _, m := range g.members {
		mf := m.frame
		ev.merge(mf.evidence())
		for _, c := range mf.cols {
			gc, ok := at[c.name]
			if !ok {
				gc = &frameCol{name: c.name, missing: fr.rows}
				for r := 0; r < min(fr.rows, maxHeadRows); r++ {
					gc.show("NaN", r)
				}
				at[c.name] = gc
				fr.cols = append(fr.cols, gc)
			}
			gc.ints, gc.floats, gc.bools = gc.ints+c.ints, gc.floats+c.floats, gc.bools+c.bools
			gc.missing, gc.others, gc.strBytes = gc.missing+c.missing, gc.others+c.others, gc.strBytes+c.strBytes
			for r, s := range c.head {
				gc.show(s, fr.rows+r)
			}
		}
		for _, gc := range fr.cols {
			if !hasCol(mf.cols, gc.name) {
				gc.missing += mf.rows
				for r := 0; r < min(mf.rows, maxHeadRows); r++ {
					gc.show("NaN", fr.rows+r)
				}
			}
		}
		src := at[g.source]
		if src == nil {
			src = &frameCol{name: g.source}
			at[g.source] = src
		}
		src.others += mf.rows
		src.strBytes += int64(mf.rows) * 8 // one shared str per file
		for r := 0; r < mf.rows && fr.rows+r < maxHeadRows; r++ {
			src.show(m.name, fr.rows+r)
		}
		fr.rows += mf.rows
		fr.held += mf.held
		fr.peak = max(fr.peak, mf.peak)
		if len(mf.csv.names) > len(fr.csv.names) {
			fr.csv.names = mf.csv.names
		}
	}
	fr.cols = append(fr.cols, at[g.source])
	if g.format == "csv" {
		names := fr.csv.names
		fr.csv = ev.options(g.delim)
		fr.csv.names = names
	}
	fr.held += 8 * int64(fr.rows)
	return fr
}

// evidence is what a CSV frame's options were decided from, as far as the
// options tell it (for a group: the options of its files, joined).
func (fr *frameInfo) evidence() csvEvidence {
	o := fr.csv
	return csvEvidence{
		spaceAfter:     o.skipSpace,
		spaceThousands: o.thousands == ' ',
		dotThousands:   o.thousands == '.',
		commaThousands: o.thousands == ',',
		commaDecimal:   o.decimal == ',',
	}
}

func hasCol(cols []*frameCol, name string) bool {
	for _, c := range cols {
		if c.name == name {
			return true
		}
	}
	return false
}

// framesReserved are the names the frames prefix binds itself, which no
// data variable may take.
var framesReserved = []string{"np", "pd", "sys", "importlib"}

// analystLibraries are the libraries the library cell lists, by the name
// they import as and the name of their distribution.
var analystLibraries = [][2]string{{"numpy", "numpy"}, {"pandas", "pandas"}, {"scipy", "scipy"},
	{"sklearn", "scikit-learn"}, {"statsmodels", "statsmodels"}, {"matplotlib", "matplotlib"}}

// libraryCell imports pandas and numpy, binding them as pd and np (the
// control imports them and binds neither), and prints, on one line, each
// analyst library that is installed with its version, or that it is not.
// pandas comes first, so that a kernel without it fails there with "No
// module named 'pandas'". The others are only found (importlib.util.
// find_spec), not imported: importing scipy, scikit-learn, statsmodels and
// matplotlib would take every kernel seconds and some 95 MiB (VmRSS 77 MiB
// with numpy and pandas, 172 with all, in the kernel image), for libraries
// most questions never use; the model imports them when it needs them.
func libraryCell(bind bool) string {
	var pairs []string
	for _, l := range analystLibraries {
		pairs = append(pairs, "("+pyRepr(l[0])+", "+pyRepr(l[1])+")")
	}
	line := "print('; '.join(f'{m} {importlib.metadata.version(d)}' if importlib.util.find_spec(m) else f'{m}: not installed'\n" +
		"                for m, d in [" + strings.Join(pairs, ", ") + "]))\n"
	if !bind {
		return "import importlib.metadata, importlib.util\n" +
			"importlib.import_module('pandas'), importlib.import_module('numpy')\n" + line
	}
	return "import importlib.metadata, importlib.util\n" +
		"import pandas as pd\n" +
		"import numpy as np\n" + line
}

// libraryOut is the library cell's output as Init expects it: every
// library there, in the versions of the kernel image's Debian (the
// longest line it prints, so the estimate errs high).
const libraryOut = "numpy 1.24.2; pandas 1.5.3; scipy 1.10.1; sklearn 1.2.1; statsmodels 0.13.5; matplotlib 3.6.3\n"

// pyOpenEncoding is the encoding= of Python's open for f's text.
func pyOpenEncoding(f *dataFile) string {
	switch {
	case f.enc == encLatin1:
		return "'latin-1'"
	case f.bom:
		return "'utf-8-sig'"
	}
	return "'utf-8'"
}

// frameRead is the expression that reads one file of f (its name is the
// Python expression path) as a DataFrame.
func frameRead(f *dataFile, path string) string {
	enc := pyOpenEncoding(f)
	switch f.format {
	case "csv":
		var args []string
		if f.delim != ',' {
			args = append(args, "sep="+pyChar(f.delim))
		}
		if enc != "'utf-8'" {
			args = append(args, "encoding="+enc)
		}
		o := f.frame.csv
		if o.skipSpace {
			args = append(args, "skipinitialspace=True")
		}
		if o.thousands != 0 {
			args = append(args, "thousands="+pyChar(o.thousands))
		}
		if o.decimal != 0 {
			args = append(args, "decimal="+pyChar(o.decimal))
		}
		if o.names != nil {
			args = append(args, "skiprows=1", "names="+reprList(o.names))
		}
		return "pd.read_csv(" + strings.Join(append([]string{path}, args...), ", ") + ")"
	case "jsonl":
		return fmt.Sprintf("pd.DataFrame(json.loads(line) for line in open(%s, encoding=%s) if line.strip())", path, enc)
	}
	load := fmt.Sprintf("json.load(open(%s, encoding=%s))", path, enc)
	if f.envelope != "" {
		load += "[" + pyString(f.envelope) + "]"
	}
	return "pd.DataFrame(" + load + ")"
}

// frameExpr is the expression that makes f's frame; pad indents its later
// lines.
func frameExpr(f *dataFile, pad string) string {
	if f.members == nil {
		return frameRead(f, pyString("data/"+f.name))
	}
	files := memberLoop(f)
	return fmt.Sprintf("pd.concat([%s.assign(%s=n)\n%s           %s],\n%s          ignore_index=True)",
		frameRead(f, "f'data/{n}'"), f.source, pad, files, pad)
}

// framesInit writes the frames prefix of files and its control, at the
// most detail whose estimate fits o.MaxTokens (fewer rows and columns
// shown, then none; the shape and dtypes always).
func framesInit(folder string, files []*dataFile, names []string, o InitOptions, skipped []Skipped) (header, []initCell, []byte, error) {
	for _, f := range files {
		if f.members != nil && f.table {
			f.frame = mergeFrames(f)
			for _, m := range f.members {
				f.bom = f.bom || m.bom
			}
		}
	}
	var h header
	var cells []initCell
	var level headLevel
	for _, level = range headLevels {
		h, cells = renderFrames(folder, files, names, true, level)
		tokens, err := estimateTokens(kernel.Python, o.Encoding, cells)
		if err != nil {
			return h, nil, nil, err
		}
		if tokens <= o.MaxTokens {
			break
		}
	}
	ch, ccells := renderFrames(folder, files, names, false, level)
	ch.skipped = skipped
	return h, cells, []byte(ch.render(kernel.Python, ccells)), nil
}

// headLevel is how much of each frame's first rows the cells show.
type headLevel struct {
	rows  int // 0: none
	width int // the widest table shown, in characters
}

// headLevels are the details tried in turn until the estimate fits.
var headLevels = []headLevel{{3, 80}, {2, 80}, {1, 60}, {0, 0}}

// renderFrames writes the frames prefix of files, or with bind false its
// control: the same cells with the same outputs, no data variable bound
// (each use is the expression that loads the file) and no library bound.
func renderFrames(folder string, files []*dataFile, names []string, bind bool, level headLevel) (header, []initCell) {
	used := map[string]bool{}
	for _, r := range framesReserved {
		used[r] = true
	}
	var frames, docs []string
	hasJSON := false
	for _, f := range files {
		base := strings.TrimSuffix(f.name, filepath.Ext(f.name))
		hasJSON = hasJSON || f.format != "csv"
		switch {
		case f.members != nil:
			f.ident = identifier(groupBase(f.members), used)
			frames = append(frames, fmt.Sprintf("%s (%s, one DataFrame; its column %s is the file)", f.ident, groupNote(f), pyRepr(f.source)))
		case f.table && len(f.others) > 0:
			f.ident = identifier(base, used)
			f.docIdent = identifier(base+"_doc", used)
			frames = append(frames, f.ident)
			docs = append(docs, f.docIdent)
		case f.table:
			f.ident = identifier(base, used)
			frames = append(frames, f.ident)
		default:
			f.ident = identifier(base, used)
			docs = append(docs, f.ident)
		}
	}
	h := header{name: identifier(folder, map[string]bool{})}
	h.description = fmt.Sprintf("The files of %s: the tables as pandas DataFrames, one variable each. Written by ctxcode prefix init; edit freely.", folder)
	var loaded []string
	if len(frames) > 0 {
		loaded = append(loaded, "as pandas DataFrames: "+strings.Join(frames, ", "))
	}
	if len(docs) > 0 {
		loaded = append(loaded, "from JSON: "+strings.Join(docs, ", "))
	}
	h.rules = "The data is loaded " + strings.Join(loaded, "; ") + ". numpy and pandas are imported as np and pd; the other libraries the second cell lists are installed: import them when needed (matplotlib draws to files)."
	if !bind {
		h.name += NoBindSuffix
		h.description = fmt.Sprintf("The control of prefix %s (condition B0): the same cells and outputs, but no variable is bound: "+
			"every cell loads the files it reads. Written by ctxcode prefix init.", identifier(folder, map[string]bool{}))
		h.rules = "No data variable is bound: load the files of data/ in the cells you write, as the cells shown do."
	}

	var cells []initCell
	code, out := listing(names, kernel.Python)
	imports := "import os, sys\n"
	if hasJSON {
		imports = "import json, os, sys\n"
	}
	cells = append(cells, initCell{imports + code, out})
	cells = append(cells, initCell{libraryCell(bind), libraryOut})

	for _, f := range files {
		var note string
		if f.enc == encLatin1 {
			note = "not UTF-8: read as Latin-1"
		}
		if !f.table {
			cells = append(cells, jsonDocCell(f, bind, note))
			continue
		}
		cells = append(cells, frameCell(f, bind, note, level))
	}
	return h, cells
}

// jsonDocCell loads a JSON file that is not a table and shows a glimpse of
// it, as the records style does.
func jsonDocCell(f *dataFile, bind bool, note string) initCell {
	load := fmt.Sprintf("json.load(open(%s, encoding=%s))", pyString("data/"+f.name), pyOpenEncoding(f))
	ref := load
	var b strings.Builder
	if bind {
		b.WriteString(f.ident + " = " + load)
		if note != "" {
			b.WriteString("  # " + note)
		}
		b.WriteString("\n")
		ref = f.ident
	}
	switch f.kind {
	case "dict":
		fmt.Fprintf(&b, "sorted(%s)[:20]\n", ref)
		return initCell{b.String(), reprList(f.keys[:min(20, len(f.keys))])}
	case "list":
		fmt.Fprintf(&b, "%s[:3]\n", ref)
		return initCell{b.String(), f.peek}
	}
	fmt.Fprintf(&b, "%s\n", ref)
	return initCell{b.String(), f.scalar}
}

// frameCell binds f's frame (or, in the control, loads it in each line)
// and shows its shape, its dtypes and, at level, its first rows.
func frameCell(f *dataFile, bind bool, note string, level headLevel) initCell {
	fr := f.frame
	var b strings.Builder
	// ref is how a line names the frame, the expression starting at column
	// at: its variable, or in the control the expression that makes it.
	ref := func(at int) string { return f.ident }
	comment := ""
	if note != "" {
		comment = "  # " + note
	}
	if fr.csv.names != nil {
		if comment == "" {
			comment = "  # rows longer than the header: the extra fields are named"
		} else {
			comment += "; rows longer than the header: the extra fields are named"
		}
	}
	if bind {
		if len(f.others) > 0 {
			fmt.Fprintf(&b, "%s = json.load(open(%s, encoding=%s))%s\n", f.docIdent, pyString("data/"+f.name), pyOpenEncoding(f), comment)
			fmt.Fprintf(&b, "%s = pd.DataFrame(%s[%s])  # the records; the other keys: %s\n", f.ident, f.docIdent, pyString(f.envelope), strings.Join(f.others, ", "))
		} else {
			fmt.Fprintf(&b, "%s = %s%s\n", f.ident, frameExpr(f, strings.Repeat(" ", len(f.ident)+3)), comment)
		}
	} else {
		b.WriteString("import pandas as pd\n")
		ref = func(at int) string { return frameExpr(f, strings.Repeat(" ", at)) }
	}
	fmt.Fprintf(&b, "print(%s.shape)\n", ref(len("print(")))

	// The output, as predicted: shape, dtypes, first rows.
	var out strings.Builder
	fmt.Fprintf(&out, "(%d, %d)\n", fr.rows, len(fr.cols))
	jsonNulls := f.format != "csv"
	if len(fr.cols) <= maxDtypeLines {
		fmt.Fprintf(&b, "print(%s.dtypes.to_string())\n", ref(len("print(")))
		nameWidth := 0
		for _, c := range fr.cols {
			nameWidth = max(nameWidth, utf8.RuneCountInString(c.name))
		}
		for _, c := range fr.cols {
			fmt.Fprintf(&out, "%-*s    %s\n", nameWidth, c.name, c.dtype(jsonNulls))
		}
	} else {
		// A wide frame: one line per dtype, naming its columns.
		fmt.Fprintf(&b, "print('\\n'.join(f'{t}: {\", \".join(c)}' for t, c in %s.columns.groupby(%s.dtypes.astype(str)).items()))\n",
			ref(len("print('\\n'.join(f'{t}: {\", \".join(c)}' for t, c in ")), ref(0))
		byType := map[string][]string{}
		for _, c := range fr.cols {
			t := c.dtype(jsonNulls)
			byType[t] = append(byType[t], c.name)
		}
		for _, t := range []string{"bool", "float64", "int64", "object"} { // pandas sorts them
			if len(byType[t]) > 0 {
				fmt.Fprintf(&out, "%s: %s\n", t, strings.Join(byType[t], ", "))
			}
		}
	}
	rows := min(level.rows, fr.rows)
	if rows > 0 {
		shown, text := headText(fr, rows, level.width)
		if shown == len(fr.cols) {
			fmt.Fprintf(&b, "%s.head(%d)\n", ref(0), rows)
		} else {
			fmt.Fprintf(&b, "%s.iloc[:%d, :%d]\n", ref(0), rows, shown)
		}
		out.WriteString(text)
	}
	return initCell{b.String(), strings.TrimSuffix(out.String(), "\n")}
}

// headText predicts pandas' text of a frame's first rows, with as many of
// its first columns (one at least) as fit width characters, and says how
// many that is. Numbers are shown as written, which pandas may widen (it
// gives a float column one number of decimals): the estimate errs low
// there, and high where pandas cuts a float's digits.
func headText(fr *frameInfo, rows, width int) (int, string) {
	index := len(strconv.Itoa(rows - 1))
	total, shown := index, 0
	widths := make([]int, len(fr.cols))
	for i, c := range fr.cols {
		widths[i] = max(utf8.RuneCountInString(c.name), c.width)
		if c.dtype(false) == "float64" {
			widths[i] = max(widths[i], 3) // NaN
		}
		if shown > 0 && total+2+widths[i] > width {
			break
		}
		total += 2 + widths[i]
		shown++
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", index))
	for i := 0; i < shown; i++ {
		fmt.Fprintf(&b, "  %*s", widths[i], fr.cols[i].name)
	}
	b.WriteString("\n")
	for r := 0; r < rows; r++ {
		fmt.Fprintf(&b, "%-*d", index, r)
		for i := 0; i < shown; i++ {
			v := ""
			if r < len(fr.cols[i].head) {
				v = fr.cols[i].head[r]
			}
			fmt.Fprintf(&b, "  %*s", widths[i], v)
		}
		b.WriteString("\n")
	}
	return shown, b.String()
}

// pandasBaseline is what the library cell adds to a kernel, which
// imports numpy and pandas (and only finds the other libraries): VmRSS 77
// MiB in the kernel image after it, against the 40 MB of memBaseline.
const pandasBaseline = 38 << 20

// estimateFrameMemory is what the frames prefix holds once it ran (held)
// and at most while it runs (peak): the frames, and while one is read its
// file's text and parser buffers (CSV) or its records (JSON).
func estimateFrameMemory(files []*dataFile) (held, peak int64) {
	var sum, worst int64
	for _, f := range files {
		if f.frame == nil {
			sum += f.mem.held
			worst = max(worst, f.mem.peak)
			continue
		}
		sum += f.frame.held
		if f.format == "csv" {
			worst = max(worst, f.frame.peak)
		} else {
			worst = max(worst, f.mem.held+f.mem.peak)
		}
	}
	held = memBaseline + pandasBaseline + sum
	return held, held + worst
}
