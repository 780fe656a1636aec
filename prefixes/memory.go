package prefixes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxcode/ctxcode/kernel"
)

// The memory a prefix written by Init holds in its kernel, estimated from
// the records Init reads, object by object, as CPython 3.11 (the kernel
// image's) and the Go kernel lay them out. The sizes are sys.getsizeof's
// in the image: '' 49 bytes and one more per ASCII character, 'é' 74,
// '€' 76, 0 28, 2**40 32, 1.5 24, [] 56 and 8 per element, and a dict of
// string keys 64 + 32 + c + 16·⌊2c/3⌋ for the smallest table c (8, 16,
// 32, ...) that holds its keys (5 keys: 184, 10: 272, 21: 464, 42: 832).
// Each object is rounded up to pymalloc's 16 bytes.
//
// Measured: VmRSS (and VmHWM, the peak) of the kernel after the prefix
// Init wrote ran, in the ctxcode-kernel image (CPython 3.11.2; the Go
// kernel under yaegi) with --memory 8g, for folders of one shape each,
// against the estimate, in MiB:
//
//	folder (size)                         python: RSS  estimate   go: RSS  estimate
//	trips.csv, 10 short fields (51 MB)           642       643        770       702
//	wide.csv, 40 numbers a row (39 MB)           456       457        518       480
//	reviews.csv, long text (39 MB)               100       104        137       120
//	people.csv, non-ASCII (29 MB)                389       392        331       281
//	events.jsonl, nested (48 MB)                 512       513        784       737
//	events.json, one array (36 MB)         253 (289)  255 (291)        367       379
//	dump.json, envelope + keys (29 MB)     210 (239)  212 (241)        534       561
//	4 × log_N.jsonl, one group (29 MB)           333       322        306       323
//	trips.csv, 10 short fields (210 MB)         2438      2431
//
// Python's objects add up exactly; the Go kernel's heap depends on when its
// collector ran, so its estimate is a fit (within about 15%). A
// pandas DataFrame read from the 51 MB trips.csv (pd.read_csv) holds 124
// MiB more once made, 249 MiB at its peak; a list of new dicts with one
// field converted, 359 MiB: the cells after a prefix need room.

// memBaseline is what a Python kernel holds before any cell runs
// (IPython and the driver): VmRSS 36-37 MB in the image.
const memBaseline = 40 << 20

// memUse is what one file's loaded objects take in a kernel, in bytes.
type memUse struct {
	held int64 // the objects bound once the loading cell ran
	// peak is the garbage the loading makes (such as the text json.load
	// reads): in Python it is given back at once, so it counts only while
	// the cell runs; in Go the heap keeps it after.
	peak int64
	// plusKey is what the records' dicts would take with one more key (a
	// group's source field), less what they take.
	plusKey int64
}

// pyAlloc is n bytes as pymalloc (up to 512 bytes) or malloc hands them
// out: rounded up to 16, and malloc's header beyond 512.
func pyAlloc(n int64) int64 {
	if n > 512 {
		n += 16
	}
	return (n + 15) &^ 15
}

// pyStr is the size of a Python str holding s (UTF-8). The empty string
// and one-character Latin-1 strings are shared singletons: no cost.
func pyStr[T string | []byte](s T) int64 {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		if len(s) <= 1 {
			return 0
		}
		return pyAlloc(49 + int64(len(s)))
	}
	n, widest := int64(0), rune(0)
	for _, r := range string(s) { // no copy: the compiler ranges over s
		n++
		widest = max(widest, r)
	}
	switch {
	case n == 1 && widest <= 0xff:
		return 0
	case widest <= 0xff:
		return pyAlloc(73 + n)
	case widest <= 0xffff:
		return pyAlloc(74 + 2*n)
	}
	return pyAlloc(76 + 4*n)
}

// pyDictSize is the size of a dict with n string keys, built by insertion.
func pyDictSize(n int) int64 {
	if n == 0 {
		return 64
	}
	c := int64(8)
	for (2*c)/3 < int64(n) {
		c *= 2
	}
	return pyAlloc(64) + pyAlloc(32+c+16*((2*c)/3))
}

// pyListSize is the size of a list of n elements built by appending: its
// array over-allocated as CPython's list_resize grows it.
func pyListSize(n int) int64 {
	allocated := 0
	for allocated < n {
		size := allocated + 1
		allocated = (size + size>>3 + 6) &^ 3
	}
	return pyAlloc(56) + pyAlloc(8*int64(allocated))
}

// pyNumber is the size of the int or float json reads from a number's
// text; the ints from -5 to 256 are shared: no cost.
func pyNumber(text string) int64 {
	if strings.ContainsAny(text, ".eE") {
		return pyAlloc(24)
	}
	bitLen := 0
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		if n >= -5 && n <= 256 {
			return 0
		}
		bitLen = bits.Len64(uint64(max(n, -n)))
	} else if b, ok := new(big.Int).SetString(text, 10); ok {
		bitLen = b.BitLen()
	} else {
		return pyAlloc(24) // not an integer after all
	}
	return pyAlloc(24 + 4*int64(max(1, (bitLen+29)/30)))
}

// pyValue is the size of a value json decoded (with UseNumber); fresh says
// the keys of its dicts are objects of their own (json.loads of one line:
// json memoizes keys only within one call), not shared.
func pyValue(v any, fresh bool) int64 {
	switch x := v.(type) {
	case string:
		return pyStr(x)
	case json.Number:
		return pyNumber(string(x))
	case []any:
		n := pyListSize(len(x))
		for _, e := range x {
			n += pyValue(e, fresh)
		}
		return n
	case map[string]any:
		n := pyDictSize(len(x))
		for k, e := range x {
			if fresh {
				n += pyStr(k)
			}
			n += pyValue(e, fresh)
		}
		return n
	}
	return 0 // None, True, False
}

// pyJSON is the size of the value json.loads makes of the valid JSON text
// at the start of b, with fresh keys (json shares keys only within one
// call), and the rest of b after it. It reads b once, without decoding it
// into Go values: a .jsonl file has a record a line.
func pyJSON(b []byte) (size int64, rest []byte) {
	b = skipSpace(b)
	if len(b) == 0 {
		return 0, b
	}
	switch b[0] {
	case '"':
		s, rest := jsonString(b)
		return pyStr(s), rest
	case '{', '[':
		end := byte('}')
		if b[0] == '[' {
			end = ']'
		}
		b = b[1:]
		n := 0
		for {
			b = skipSpace(b)
			if len(b) == 0 {
				return size, b
			}
			if b[0] == end {
				b = b[1:]
				break
			}
			if b[0] == ',' {
				b = b[1:]
				continue
			}
			if end == '}' {
				var key []byte
				key, b = jsonString(b)
				size += pyStr(key)
				if b = skipSpace(b); len(b) > 0 && b[0] == ':' {
					b = b[1:]
				}
			}
			var v int64
			v, b = pyJSON(b)
			size += v
			n++
		}
		if end == '}' {
			return size + pyDictSize(n), b
		}
		return size + pyListSize(n), b
	case 't', 'n':
		return 0, b[min(4, len(b)):]
	case 'f':
		return 0, b[min(5, len(b)):]
	}
	i := 0 // a number, NaN, Infinity or -Infinity
	for i < len(b) && strings.IndexByte("+-.0123456789eEINanfinity", b[i]) >= 0 {
		i++
	}
	if i == 0 {
		return 0, b[1:] // not JSON: skip a byte
	}
	if bytes.ContainsAny(b[:i], "IN") {
		return pyAlloc(24), b[i:]
	}
	return pyNumber(string(b[:i])), b[i:]
}

// jsonString is the text of the JSON string at the start of b, and the
// rest of b after it.
func jsonString(b []byte) (s, rest []byte) {
	escaped := false
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			if !escaped {
				return b[1:i], b[i+1:]
			}
			var str string
			if json.Unmarshal(b[:i+1], &str) != nil {
				return b[1:i], b[i+1:]
			}
			return []byte(str), b[i+1:]
		}
	}
	return b[min(1, len(b)):], nil
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// pyRow is the size of a record csv.DictReader read: its dict (whose keys
// are the header's strings, shared) and its values.
func pyRow(d *pyDict) (size, plusKey int64) {
	size = pyDictSize(len(d.keys))
	for _, k := range d.keys {
		switch v := d.vals[k].(type) {
		case string:
			size += pyStr(v)
		case []string: // the rest of a long row
			size += pyListSize(len(v))
			for _, s := range v {
				size += pyStr(s)
			}
		}
	}
	return size, pyDictSize(len(d.keys)+1) - pyDictSize(len(d.keys))
}

// estimateMemory is what the files' loaded objects take in the kernel, in
// bytes, once the prefix ran (held) and at most while it runs (peak).
func estimateMemory(lang kernel.Language, files []*dataFile) (held, peak int64) {
	var sum, worst int64 // worst: the largest transient of one loading step
	for _, f := range files {
		if f.members == nil {
			sum += f.mem.held
			worst = max(worst, f.mem.peak)
			continue
		}
		// Python: {source: n, **r}: each record of a member file is
		// copied into a dict with one more key, sharing its values; the
		// member's own list of records is garbage once it has been copied.
		// (Go: plusKey is 0; the Source field is a string header.)
		for _, m := range f.members {
			sum += m.mem.held + m.mem.plusKey
			if lang == kernel.Go {
				worst = max(worst, m.mem.peak)
			} else {
				worst = max(worst, m.mem.held+m.mem.peak)
			}
		}
	}
	if lang == kernel.Go {
		// The heap keeps the garbage of the loading (the text and its
		// copies) after it: the system sees it as held.
		held = goBaseline + sum + worst
		return held, int64(float64(held) * goPeak)
	}
	// pymalloc gives its pools back, and malloc its large blocks (the
	// text json.load reads): what the loading left is garbage no more.
	held = memBaseline + sum
	return held, held + worst
}

// formatSize is n bytes for a person: "1.8 GiB", "640 MiB".
func formatSize(n int64) string {
	const gib, mib = 1 << 30, 1 << 20
	if n >= gib {
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	}
	return fmt.Sprintf("%d MiB", int64(math.Ceil(float64(n)/mib)))
}

// memoryWarning says, when the data would take more than half of limit
// once loaded, or more than limit while it loads, how much it takes and
// what to do; "" when there is room, or no limit. The cells after the
// prefix need room: one that converts the records or copies them (a list
// of new dicts, pd.read_csv of the same file) took a fifth to a half
// again of what the prefix holds, in the measurements above.
func memoryWarning(held, peak, limit int64) string {
	if limit <= 0 || held <= limit/2 && peak <= limit {
		return ""
	}
	suggest := memoryFlag(max(2*held, peak))
	if peak > limit {
		return fmt.Sprintf("loading the data takes about %s, more than the kernel's memory limit of %s, so the prefix "+
			"would not finish (its kernel is killed, or stalls, at the limit): give it more with --memory %s "+
			"(room for the cells after it too), or move files out of the folder",
			formatSize(peak), formatSize(limit), suggest)
	}
	return fmt.Sprintf("the loaded data takes about %s of the kernel's memory limit of %s, which leaves %s for the cells "+
		"after the prefix, less than one that converts or copies the records needs: give it more with --memory %s, "+
		"or move files out of the folder",
		formatSize(held), formatSize(limit), formatSize(limit-held), suggest)
}

// memoryFlag is a --memory value of at least n bytes: a multiple of 256m
// below 4g, of 1g above.
func memoryFlag(n int64) string {
	const gib, step = 1 << 30, 256 << 20
	if n < 4*gib {
		n = (n + step - 1) / step * step
		if n%gib == 0 {
			return fmt.Sprintf("%dg", n/gib)
		}
		return fmt.Sprintf("%dm", n>>20)
	}
	return fmt.Sprintf("%dg", (n+gib-1)/gib)
}

// jsonMem is what the value v of a .json file, read from text, takes
// once bound.
func jsonMem(lang kernel.Language, v any, text string) memUse {
	if lang == kernel.Go {
		return goJSONMem(v, text)
	}
	// json.load reads the whole text, then makes the objects.
	return memUse{held: pyValue(v, false), peak: pyStr(text)}
}

// The Go kernel's memory, fitted to what was measured (see the table
// above): yaegi's values, and the text the loaders read and copy, which
// the Go heap keeps after it is garbage (its collector lets the heap grow
// to twice what is live, and returns memory to the system lazily).
const (
	goBaseline     = 28 << 20 // VmRSS of a Go kernel before any cell
	goPerCSVField  = 77       // per field of a CSV record: a string in a struct, and encoding/csv's records
	goPerCSVByte   = 2        // per byte of a CSV file: its text, read whole, and the records' strings
	goPerJSONValue = 106      // per JSON value (every scalar, object and array)
	goPerJSONByte  = 1        // per byte of a .json file, read whole
	goPerJSONLByte = 6        // per byte of a .jsonl file: loadJSONL copies its text five times
	goPeak         = 1.25     // the most a Go kernel holds while the files load, over what it holds after
)

// goCSVMem is what a CSV file of text bytes whose records have cells
// fields in all takes in a Go kernel.
func goCSVMem(cells int64, text int) memUse {
	return memUse{held: goPerCSVField * cells, peak: goPerCSVByte * int64(text)}
}

// goJSONMem is what the value v of a .json file of len(text) bytes takes
// in a Go kernel.
func goJSONMem(v any, text string) memUse {
	return memUse{held: goPerJSONValue * jsonValues(v), peak: goPerJSONByte * int64(len(text))}
}

// goJSONLMem is what a .jsonl file of text bytes whose records hold
// values JSON values takes in a Go kernel.
func goJSONLMem(values int64, text int) memUse {
	return memUse{held: goPerJSONValue * values, peak: goPerJSONLByte * int64(text)}
}

// jsonValues counts the JSON values in v: itself and, in an object or
// array, every value inside.
func jsonValues(v any) int64 {
	n := int64(1)
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n += jsonValues(e)
		}
	case map[string]any:
		for _, e := range x {
			n += jsonValues(e)
		}
	}
	return n
}

// goValues counts the JSON values of a record read from one line.
func goValues(obj map[string]json.RawMessage) int64 {
	n := int64(1)
	for _, raw := range obj {
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && (raw[0] == '[' || raw[0] == '{') {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				n += jsonValues(v)
				continue
			}
		}
		n++
	}
	return n
}
