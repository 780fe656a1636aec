package prefixes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestPythonObjectSizes: the sizes are sys.getsizeof's in the kernel image
// (CPython 3.11), rounded up to pymalloc's 16 bytes; singletons cost
// nothing.
func TestPythonObjectSizes(t *testing.T) {
	tests := []struct {
		name string
		got  int64
		want int64
	}{
		{"''", pyStr(""), 0},
		{"'a' (a cached one-character string)", pyStr("a"), 0},
		{"'é' (cached too)", pyStr("é"), 0},
		{"'abab…' (20 ASCII characters: 69)", pyStr(strings.Repeat("ab", 10)), 80},
		{"'éé…' (10 Latin-1 characters: 83)", pyStr(strings.Repeat("é", 10)), 96},
		{"'€€' (UCS-2: 78)", pyStr("€€"), 80},
		{"'😀😀' (UCS-4: 84)", pyStr("😀😀"), 96},
		{"a dict of 5 keys (184)", pyDictSize(5), 192},
		{"a dict of 10 keys (272)", pyDictSize(10), 272},
		{"a dict of 11 keys (464)", pyDictSize(11), 464},
		{"a dict of 42 keys (832: malloc, beyond 512)", pyDictSize(42), 64 + 784},
		{"an empty list (56)", pyListSize(0), 64},
		{"a list of 3 appended (56 + 4·8)", pyListSize(3), 96},
		{"7 (cached)", pyNumber("7"), 0},
		{"300 (28)", pyNumber("300"), 32},
		{"2**40 (32)", pyNumber("1099511627776"), 32},
		{"2**70 (36)", pyNumber("1180591620717411303424"), 48},
		{"1.5 (24)", pyNumber("1.5"), 32},
		{"1e400 (a float: inf)", pyNumber("1e400"), 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
		})
	}
}

// TestPyJSONAgreesWithDecoding: pyJSON, which reads a .jsonl line's text
// once, finds the size that sizing its decoded value finds.
func TestPyJSONAgreesWithDecoding(t *testing.T) {
	for _, line := range []string{
		`{"id": 1, "name": "Ana", "ok": true, "x": null, "f": false}`,
		`{"id": 123456789012, "price": 12.5, "tags": ["a", "bb", "ccc"], "meta": {"ref": "yy", "n": 300}}`,
		`{"text": "a \"quoted\" line\nand an escape \u00e9 and \u20ac", "é": "ça va", "long": "` + strings.Repeat("x", 600) + `"}`,
		`{"nested": [[1, 2, [3, {"a": [300, 400]}]], {}], "empty": [], "neg": -17, "e": 1E5}`,
		`  {"spaced" :  [ 1 , 2 ] , "k" : "v" }  `,
		`{"big": 1180591620717411303424, "wide": "😀 and 中文"}`,
	} {
		t.Run(line[:min(len(line), 30)], func(t *testing.T) {
			v, err := decodeJSON(line, kernel.Python)
			require.NoError(t, err)
			got, rest := pyJSON([]byte(line))
			assert.Equal(t, pyValue(v, true), got)
			assert.Empty(t, strings.TrimSpace(string(rest)))
		})
	}
	got, _ := pyJSON([]byte(`{"a": NaN, "b": -Infinity}`)) // Python's json reads them
	assert.Equal(t, pyDictSize(2)+2*pyAlloc(24), got)
}

// TestInitWarnsOfMemory: the estimate of what a prefix's data takes is
// compared with the kernels' memory limit: more than half of it, or more
// than all of it while loading, is a warning that says how much, the
// limit, and the flag to change (--memory) with a value that leaves room.
func TestInitWarnsOfMemory(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,city,fare,payment\n")
	for i := range 50000 { // about 1.5 MB; 50000 dicts of 4 strings: some 22 MiB
		fmt.Fprintf(&b, "%d,%s,%d.%02d,%s\n", i, []string{"Berlin", "Lisbon", "Oslo"}[i%3], i%97, i%100, []string{"card", "cash"}[i%2])
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trips.csv"), []byte(b.String()), 0o644))

	r, err := InitWith(dir, InitOptions{Style: StyleRecords})
	require.NoError(t, err)
	held := r.Memory - memBaseline
	// 50000 rows: a dict of 4 keys (192), a list slot (8, and an eighth
	// more), and four strings of 2 to 6 characters (64 each).
	assert.InEpsilon(t, 50000*(192+8+4*64), held, 0.01, "estimate %d", held)
	assert.Equal(t, r.Memory, r.MemoryPeak, "csv.DictReader makes no large garbage")

	tests := []struct {
		name  string
		limit int64
		want  []string // in the warning; none: no warning
	}{
		{"no limit", 0, nil},
		{"room", 2 << 30, nil},
		{"little room", r.Memory + r.Memory/2, []string{"the loaded data takes about", "which leaves", "--memory " + memoryFlag(2*r.Memory)}},
		{"no room to load", r.Memory - 1<<20, []string{"loading the data takes about", "more than the kernel's memory limit", "--memory " + memoryFlag(2*r.Memory)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := InitWith(dir, InitOptions{Style: StyleRecords, MemoryLimit: tt.limit})
			require.NoError(t, err)
			var warned []string
			for _, w := range r.Warnings {
				if strings.Contains(w, "--memory") {
					warned = append(warned, w)
				}
			}
			if tt.want == nil {
				assert.Empty(t, warned)
				return
			}
			require.Len(t, warned, 1, "%q", r.Warnings)
			for _, want := range tt.want {
				assert.Contains(t, warned[0], want)
			}
			assert.Contains(t, warned[0], formatSize(tt.limit))
		})
	}
}

func TestMemoryFlag(t *testing.T) {
	for n, want := range map[int64]string{
		1:                       "256m",
		300 << 20:               "512m",
		1 << 30:                 "1g",
		(1 << 30) + 1:           "1280m",
		(4 << 30) + (1 << 20):   "5g",
		int64(4.75 * (1 << 30)): "5g",
	} {
		assert.Equal(t, want, memoryFlag(n), "%d bytes", n)
	}
}

// TestInitEstimatesEveryShape: every kind of file Init binds has an
// estimate of its own, in both languages, and one group's is about the sum
// of its files'.
func TestInitEstimatesEveryShape(t *testing.T) {
	dir := t.TempDir()
	rec := func(i int) string {
		return fmt.Sprintf(`{"id": %d, "user": "u%d", "price": %d.5, "tags": ["a", "bb"], "meta": {"n": %d}}`, i, i%50, i, i*1000)
	}
	var lines []string
	for i := range 3000 {
		lines = append(lines, rec(i))
	}
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("events.jsonl", strings.Join(lines, "\n")+"\n")
	write("array.json", "["+strings.Join(lines, ",")+"]")
	write("dump.json", `{"version": 3, "items": [`+strings.Join(lines, ",")+"]}")
	for _, lang := range []kernel.Language{kernel.Python, kernel.Go} {
		t.Run(string(lang), func(t *testing.T) {
			var sizes []int64
			for _, name := range []string{"events.jsonl", "array.json", "dump.json"} {
				one := t.TempDir()
				b, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(one, name), b, 0o644))
				r, err := InitWith(one, InitOptions{Lang: lang, Style: StyleRecords})
				require.NoError(t, err)
				assert.Greater(t, r.Memory, int64(3000*100), "%s: 3000 records of 8 values", name)
				assert.GreaterOrEqual(t, r.MemoryPeak, r.Memory)
				sizes = append(sizes, r.Memory)
			}
			r, err := InitWith(dir, InitOptions{Lang: lang, Style: StyleRecords})
			require.NoError(t, err)
			base := int64(memBaseline)
			if lang == kernel.Go {
				base = goBaseline
			}
			sum := sizes[0] + sizes[1] + sizes[2] - 2*base
			assert.InEpsilon(t, sum, r.Memory, 0.1, "three files: about the sum of each alone")
		})
	}
}
