package prefixes

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

// csvCases are CSV texts that Python's csv module and Go's encoding/csv
// read differently, or that break a strict reader, and random ones.
func csvCases() []string {
	cases := []string{
		"", "\n", "\n\na,b\n", "a,b", "a,b\n1,2", "a,b\r\n1,2\r\n", "a,b\r1,2\r",
		"a,b\n1\n1,2,3\n", `a,b` + "\n" + `"x""y",2` + "\n", `a,b` + "\n" + `5" screen,2` + "\n",
		`a,b` + "\n" + `"ab"c,2` + "\n", `a,b` + "\n" + `"unterminated,2` + "\n3,4\n",
		"a,b\n\"line\r\nbreak\",2\n", "a,b\n,\n", "a,b\n \n", "a,,b\n1,,2\n", "a,b\n\"\"\n", `a` + "\n" + `""""`,
		"a;b\n1;2\n", "a\tb\n1\t2\n", "\"a\"\"\",b\n1,2",
	}
	r := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "b", "é", ",", ";", "\t", "\"", "\"\"", "\r", "\n", "\r\n", " ", "x y"}
	for i := 0; i < 1500; i++ {
		var b strings.Builder
		for n := r.Intn(24); n > 0; n-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	return cases
}

// pythonCSV runs Python's csv.reader and csv.DictReader (restkey '_rest')
// over each text with each delimiter.
func pythonCSV(t *testing.T, texts []string, delims []rune) [][2]json.RawMessage {
	t.Helper()
	python := kerneltest.FindPython(t)
	type input struct {
		Text  string `json:"text"`
		Delim string `json:"delim"`
	}
	var in []input
	for _, text := range texts {
		for _, d := range delims {
			in = append(in, input{text, string(d)})
		}
	}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	cmd := exec.Command(python, "-c", `
import csv, io, json, sys
out = []
for c in json.load(sys.stdin):
    reader = csv.reader(io.StringIO(c["text"], newline=""), delimiter=c["delim"])
    rows = csv.DictReader(io.StringIO(c["text"], newline=""), delimiter=c["delim"], restkey="_rest")
    out.append([list(reader), [list(r.items()) for r in rows]])
json.dump(out, sys.stdout)
`)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var out [][2]json.RawMessage
	require.NoError(t, json.Unmarshal(got, &out))
	require.Len(t, out, len(in))
	return out
}

// TestPyCSVMatchesPython: pyCSV and dictRows read every text as Python's
// csv.reader and csv.DictReader do, so what init accepts the Python loader
// reads, and init sees the records the loader binds.
func TestPyCSVMatchesPython(t *testing.T) {
	texts := csvCases()
	delims := []rune{',', ';', '\t'}
	want := pythonCSV(t, texts, delims)
	i := 0
	for _, text := range texts {
		for _, d := range delims {
			recs, _ := pyCSV(text, d)
			if recs == nil {
				recs = [][]string{}
			}
			for j := range recs {
				if recs[j] == nil {
					recs[j] = []string{}
				}
			}
			gotRecs, _ := json.Marshal(recs)
			rows := [][][2]any{}
			if len(recs) > 0 {
				// DictReader takes the first record as the header, blank or not.
				dictRows(recs[0], recs[1:], "_rest", false, func(row *pyDict) {
					items := [][2]any{}
					for _, k := range row.keys {
						items = append(items, [2]any{k, row.vals[k]})
					}
					rows = append(rows, items)
				})
			}
			gotRows, _ := json.Marshal(rows)
			if !assert.JSONEq(t, string(want[i][0]), string(gotRecs), "csv.reader, delimiter %q, text %q", d, text) ||
				!assert.JSONEq(t, string(want[i][1]), string(gotRows), "csv.DictReader, delimiter %q, text %q", d, text) {
				return
			}
			i++
		}
	}
}

func TestPyCSVLongestField(t *testing.T) {
	_, longest := pyCSV("a,b\n\"é\n"+strings.Repeat("x", 10)+"\",1\n", ',')
	assert.Equal(t, 12, longest, "characters, quoted newline included")
}

func TestSniffDelimiter(t *testing.T) {
	for _, tc := range []struct {
		text string
		want rune
	}{
		{"a,b,c\n1,2,3\n", ','},
		{"item;price\nbread;2,50\n\"jam; apricot\";3,20\n", ';'},
		{"gene\tchrom\nBRCA1\t17\n", '\t'},
		{"a|b\n1|2\n", '|'},
		{"name,comment\nx,\"a;b;c\"\n", ','},
		{"single\n1\n2\n", ','},
		{"a,b;c\n1,2;3\n", ','}, // a tie: the first in preference
		{"", ','},
	} {
		assert.Equal(t, string(tc.want), string(sniffDelimiter(tc.text)), "%q", tc.text)
	}
}

func TestDecodeText(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        []byte
		text, enc string
		err       string
	}{
		{"utf-8", []byte("a,é\n"), "a,é\n", encUTF8, ""},
		{"bom", []byte("\xef\xbb\xbfid\n"), "id\n", encUTF8, ""},
		{"latin-1", []byte("caf\xe9\n"), "café\n", encLatin1, ""},
		{"bom, then not utf-8", []byte("\xef\xbb\xbfcaf\xe9"), "", "", "starts with a UTF-8 byte-order mark but is not UTF-8"},
		{"utf-16", []byte("\xff\xfea\x00,\x00"), "", "", "has NUL bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, enc, err := decodeText(tc.in)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.text, text)
			assert.Equal(t, tc.enc, enc)
		})
	}
}

func TestNonFinite(t *testing.T) {
	out, found := nonFinite(`[NaN, Infinity, -Infinity, "NaN and Infinity", "a\"NaN", 1.5]`)
	assert.True(t, found)
	assert.Equal(t, `[null, null, null, "NaN and Infinity", "a\"NaN", 1.5]`, out)
	out, found = nonFinite(`{"note": "NaN"}`)
	assert.False(t, found)
	assert.Equal(t, `{"note": "NaN"}`, out)
}

func TestGroupPattern(t *testing.T) {
	files := func(names ...string) []*dataFile {
		var out []*dataFile
		for _, n := range names {
			out = append(out, &dataFile{name: n})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		members []string
		all     []string
		pattern [2]string
		base    string
	}{
		{"prefix and suffix", []string{"s-01.csv", "s-02.csv", "s-10.csv"}, []string{"s-01.csv", "s-02.csv", "s-10.csv", "notes.txt"}, [2]string{"s-", ".csv"}, "s"},
		{"another file matches", []string{"s-01.csv", "s-02.csv", "s-03.csv"}, []string{"s-01.csv", "s-02.csv", "s-03.csv", "s-meta.csv"}, [2]string{"s-0", ".csv"}, "s"},
		{"no pattern", []string{"a.csv", "b.csv", "c.csv"}, []string{"a.csv", "b.csv", "c.csv", "d.csv"}, [2]string{}, "records"},
		{"only a suffix", []string{"2023_sales.csv", "2024_sales.csv", "2025_sales.csv"}, []string{"2023_sales.csv", "2024_sales.csv", "2025_sales.csv", "x.json"}, [2]string{"", "_sales.csv"}, "sales"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.pattern, groupPattern(files(tc.members...), tc.all))
			assert.Equal(t, tc.base, groupBase(files(tc.members...)))
		})
	}
}
