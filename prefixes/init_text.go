package prefixes

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How Init reads text: the way the loaders it writes do. Python opens a
// file with encoding='utf-8-sig' (a byte-order mark is dropped, never part
// of the first key) or, when the file is not UTF-8, 'latin-1' (every byte
// is a character; the cell says so). The Go loaders drop the mark and turn
// Latin-1 into UTF-8 by the same rule.

// utf8BOM is the UTF-8 byte-order mark.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// encodings of data files as Init names them.
const (
	encUTF8   = ""        // UTF-8, with or without a byte-order mark
	encLatin1 = "latin-1" // not UTF-8: each byte is the character of that code
)

// decodeText returns the text of a data file and its encoding, or why it
// is not text that Init reads.
func decodeText(b []byte) (text, enc string, err error) {
	if bytes.IndexByte(b, 0) >= 0 {
		return "", "", errors.New("has NUL bytes: binary, or UTF-16, which init does not read")
	}
	if rest, ok := bytes.CutPrefix(b, utf8BOM); ok {
		if !utf8.Valid(rest) {
			return "", "", errors.New("starts with a UTF-8 byte-order mark but is not UTF-8")
		}
		return string(rest), encUTF8, nil
	}
	if utf8.Valid(b) {
		return string(b), encUTF8, nil
	}
	return latin1(b), encLatin1, nil
}

// latin1 decodes Latin-1 bytes.
func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// pyLines splits text into lines as Python's file iteration does with
// newline=” (universal newlines, terminators kept): at "\r\n", "\r" or "\n".
func pyLines(text string) []string {
	var lines []string
	for len(text) > 0 {
		i := strings.IndexAny(text, "\r\n")
		if i < 0 {
			lines = append(lines, text)
			break
		}
		end := i + 1
		if text[i] == '\r' && end < len(text) && text[end] == '\n' {
			end++
		}
		lines = append(lines, text[:end])
		text = text[end:]
	}
	return lines
}

// pyIsSpace is Python's str.isspace for one character.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// pyBlank is Python's not s.strip().
func pyBlank(s string) bool {
	return strings.TrimFunc(s, pyIsSpace) == ""
}

// pyCSVFieldLimit is the default of Python's csv.field_size_limit(): a
// longer field is an error unless the prefix raises the limit.
const pyCSVFieldLimit = 128 << 10

// pyCSV parses text as Python's csv.reader does with the excel dialect and
// another delimiter (doublequote, no escape character, strict off) on a
// file opened with newline=”: it never fails. A blank line is an empty
// record, as in Python. It also returns the length of the longest field,
// in characters.
//
// The states and transitions are those of parse_process_char in CPython's
// Modules/_csv.c.
func pyCSV(text string, delim rune) (records [][]string, longest int) {
	return parseCSV(text, delim, false)
}

// parseCSV is pyCSV, with skipinitialspace (spaces at the start of a field
// are dropped, so that a quote after them opens a quoted field) when
// skipSpace: Python's csv and pandas' parser read it alike.
func parseCSV(text string, delim rune, skipSpace bool) (records [][]string, longest int) {
	const (
		startRecord = iota
		startField
		inField
		inQuotedField
		quoteInQuotedField
		eatCRNL
	)
	state := startRecord
	var fields []string
	var field []rune
	save := func() {
		longest = max(longest, len(field))
		fields = append(fields, string(field))
		field = field[:0]
	}
	// process handles one character; eol is the end of a line.
	process := func(c rune, eol bool) {
		nl := !eol && (c == '\n' || c == '\r')
		switch state {
		case startRecord:
			if eol {
				return // an empty line: the record is []
			}
			if nl {
				state = eatCRNL
				return
			}
			state = startField
			fallthrough
		case startField:
			switch {
			case nl || eol:
				save()
				state = eatCRNL
				if eol {
					state = startRecord
				}
			case c == '"':
				state = inQuotedField
			case c == delim:
				save()
			case c == ' ' && skipSpace:
				// the start of the field is still to come
			default:
				field = append(field, c)
				state = inField
			}
		case inField:
			switch {
			case nl || eol:
				save()
				state = eatCRNL
				if eol {
					state = startRecord
				}
			case c == delim:
				save()
				state = startField
			default:
				field = append(field, c)
			}
		case inQuotedField:
			switch {
			case eol:
			case c == '"':
				state = quoteInQuotedField
			default:
				field = append(field, c)
			}
		case quoteInQuotedField:
			switch {
			case !eol && c == '"':
				field = append(field, c)
				state = inQuotedField
			case !eol && c == delim:
				save()
				state = startField
			case nl || eol:
				save()
				state = eatCRNL
				if eol {
					state = startRecord
				}
			default: // not strict: the quote ends, the field goes on
				field = append(field, c)
				state = inField
			}
		case eatCRNL:
			// With newline='' a line holds one terminator, at its end, so
			// Python's "new-line character seen in unquoted field" cannot
			// happen here.
			if eol {
				state = startRecord
			}
		}
	}
	for _, line := range pyLines(text) {
		for _, c := range line {
			process(c, false)
		}
		process(0, true)
		if state == startRecord {
			records = append(records, fields)
			fields = nil
		}
	}
	// The end of the text inside a quoted field ends the record.
	if len(field) > 0 || state == inQuotedField {
		save()
		records = append(records, fields)
	}
	return records, longest
}

// goCSV parses text as the Go prefix's loadCSV does: encoding/csv with lazy
// quotes and any number of fields per record.
func goCSV(text string, delim rune) ([][]string, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = delim
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	return r.ReadAll()
}

// csvDelimiters are the delimiters Init recognizes, in order of preference.
var csvDelimiters = []rune{',', '\t', ';', '|'}

// sniffSample is how much of a file sniffDelimiter looks at.
const sniffSample = 64 << 10

// sniffDelimiter picks the delimiter of CSV text: of those that split the
// header into two fields or more, the one that gives most of the first
// records the header's width (the first in csvDelimiters on a tie); ','
// when none splits the header.
func sniffDelimiter(text string) rune {
	if len(text) > sniffSample {
		cut := strings.LastIndexAny(text[:sniffSample], "\r\n")
		if cut > 0 {
			text = text[:cut+1]
		} else {
			text = text[:sniffSample]
		}
	}
	best, bestScore := ',', -1.0
	for _, d := range csvDelimiters {
		recs, _ := pyCSV(text, d)
		var nonEmpty [][]string
		for _, r := range recs {
			if len(r) > 0 {
				nonEmpty = append(nonEmpty, r)
			}
			if len(nonEmpty) == 50 {
				break
			}
		}
		if len(nonEmpty) == 0 || len(nonEmpty[0]) < 2 {
			continue
		}
		same := 0
		for _, r := range nonEmpty {
			if len(r) == len(nonEmpty[0]) {
				same++
			}
		}
		if score := float64(same) / float64(len(nonEmpty)); score > bestScore {
			best, bestScore = d, score
		}
	}
	return best
}

// nonFinite replaces the NaN, Infinity and -Infinity that Python's json
// reads (outside strings) by null, so that encoding/json can read the
// rest; found says whether there were any.
func nonFinite(text string) (out string, found bool) {
	if !strings.Contains(text, "NaN") && !strings.Contains(text, "Infinity") {
		return text, false
	}
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			b.WriteByte(c)
			continue
		}
		switch {
		case c == '"':
			inString = true
		case strings.HasPrefix(text[i:], "NaN"):
			b.WriteString("null")
			i += len("NaN") - 1
			found = true
			continue
		case strings.HasPrefix(text[i:], "Infinity"):
			b.WriteString("null")
			i += len("Infinity") - 1
			found = true
			continue
		case strings.HasPrefix(text[i:], "-Infinity"):
			b.WriteString("null")
			i += len("-Infinity") - 1
			found = true
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), found
}
