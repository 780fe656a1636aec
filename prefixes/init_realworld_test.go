package prefixes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/prefixes"
)

// realWorld copies testdata/init-realworld into a temporary folder and adds
// what is too big to commit: big.csv, whose blob field is 140 KiB (Python's
// csv refuses fields over 128 KiB unless told otherwise).
func realWorld(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "init-realworld")
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // .gitattributes keeps the bytes as written; it is not data
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	blob := strings.Repeat("0123456789abcdef", 140<<10/16)
	big := "id,blob,note\n1,short,a\n2,\"" + blob + "\",b\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.csv"), []byte(big), 0o644))
	return dir
}

// pythonFlavours starts local Python kernels over a data folder: with
// IPython, and with the driver's standard-library path.
func pythonFlavours(t *testing.T) map[string]func(t *testing.T, dir string) kernel.Kernel {
	return map[string]func(t *testing.T, dir string) kernel.Kernel{
		"ipython": func(t *testing.T, dir string) kernel.Kernel { return kerneltest.Python(t, dir) },
		"stdlib":  func(t *testing.T, dir string) kernel.Kernel { return kerneltest.PythonNoIPython(t, dir) },
	}
}

// verifyInit parses an init prefix and runs prefix verify's checks on it:
// two builds in fresh kernels, every cell ok, identical transcripts, within
// the default token budget. It returns a kernel holding the built prefix.
func verifyInit(t *testing.T, src []byte, start func(t *testing.T) kernel.Kernel) (*prefixes.Verified, kernel.Kernel) {
	t.Helper()
	p, err := prefixes.Parse("init", src)
	require.NoError(t, err, string(src))
	opts := prefixes.VerifyOptions{Exec: kernel.ExecOptions{Timeout: time.Minute}}
	v, err := prefixes.Verify(context.Background(), func(context.Context) (kernel.Kernel, func(), error) {
		k := start(t)
		return k, func() { _ = k.Close() }, nil
	}, p, opts)
	require.NoError(t, err, string(src))
	k := start(t)
	_, err = prefixes.Build(context.Background(), k, p, opts.Exec)
	require.NoError(t, err)
	return v, k
}

// eval runs code in k and returns its value (or stdout), failing on error.
func eval(t *testing.T, k kernel.Kernel, code string) string {
	t.Helper()
	res, err := k.Execute(context.Background(), code, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, kernel.StatusOK, res.Status, "%s: %+v", code, res.Error)
	return res.Stdout + res.Value
}

// skippedFiles maps the files Init left out to its reasons.
func skippedFiles(skipped []prefixes.Skipped) map[string]string {
	m := map[string]string{}
	for _, s := range skipped {
		m[s.File] = s.Reason
	}
	return m
}

// TestInitRealWorld: prefix init over files nobody here would write the
// same way (BOMs, Latin-1, ragged and sniffed CSV, huge fields, envelopes,
// NaN, a group of files with one header) writes a Python prefix that passes
// prefix verify, skips only what cannot be loaded (saying why in its
// header), and binds what Python's csv and json read.
func TestInitRealWorld(t *testing.T) {
	for name, start := range pythonFlavours(t) {
		t.Run(name, func(t *testing.T) {
			dir := realWorld(t)
			src, skipped, err := initRecords(dir)
			require.NoError(t, err)
			text := string(src)
			assert.Equal(t, map[string]string{
				"README.md":       "not .jsonl, .json, .csv or .tsv",
				"broken.json":     "not valid JSON: invalid character '}' looking for beginning of object key string",
				"empty.csv":       "empty CSV (no header)",
				"header-only.csv": "no records",
			}, skippedFiles(skipped))
			for _, s := range skipped {
				assert.Contains(t, text, "# skipped: "+s.File+": "+s.Reason+"\n", "the header says what was left out")
			}
			assert.Contains(t, text, `latin1 = load_csv("latin1.csv", encoding='latin-1')  # not UTF-8: read as Latin-1`)
			assert.Contains(t, text, `prices = load_csv("prices.csv", delimiter=';')`)
			assert.Contains(t, text, `genes = load_csv("genes.tsv", delimiter='\t')`)

			v, k := verifyInit(t, src, func(t *testing.T) kernel.Kernel { return start(t, dir) })
			assert.NotContains(t, v.Text, "Out[2]: (1,", "an envelope shows its records, not the length of the dict")

			for code, want := range map[string]string{
				"list(bom[0]), bom[0]['city']":                         "(['id', 'city', 'country'], 'Zürich')", // no BOM in the key
				"latin1[0]['label']":                                   "'Café crème'",
				"[r['eol'] for r in debian]":                           "['2022-09-10', '2024-08-14', '2026-06-10', None, None]",
				"[r.get('_rest') for r in ragged]":                     "[None, ['extra1'], ['extra2', 'extra3'], None]",
				"ragged[3]":                                            "{'id': '4', 'name': None}",
				"prices[1]":                                            "{'item': 'jam; apricot', 'price': '3,20', 'unit': 'jar'}",
				"genes[0]['chrom'], len(genes)":                        "('17', 3)",
				"[r['text'] for r in quoted]":                          `['line one\nline two', 'she said "hi"', 'a, b, c']`,
				"quoted[0]['size']":                                    `'5" screen'`,
				"len(iso_3166_1), iso_3166_1[0]['alpha_3']":            "(4, 'AND')",
				"settings":                                             "{'units': 'metric', 'version': 2}",
				"[str(r['value']) for r in readings]":                  "['1.5', 'nan', 'inf', '-inf', '2.0']",
				"list(events[0]), len(events)":                         "(['id', 'kind'], 5)",
				"notes_latin1[0]['author']":                            "'René'",
				"len(station), sorted({r['source'] for r in station})": "(12, ['station_01.csv', 'station_02.csv', 'station_03.csv', 'station_04.csv'])",
				"list(station[0])":                                     "['source', 'date', 'temp_c', 'rain_mm']",
				"len(big[1]['blob'])":                                  fmt.Sprint(140 << 10),
			} {
				assert.Equal(t, want, eval(t, k, code), code)
			}
			assert.NotContains(t, v.Text, strings.Repeat("0123456789abcdef", 100), "a huge value is cut in what the model sees")
			assert.Contains(t, v.Text, "'alpha_3': 'ZWE'", "the last record of the envelope is shown")
		})
	}
}

// TestInitRealWorldGo: the same folder with --lang go gives a Go prefix
// that passes prefix verify; what Go cannot read (NaN in JSON) is skipped
// with the reason.
func TestInitRealWorldGo(t *testing.T) {
	dir := realWorld(t)
	src, skipped, err := prefixes.Init(dir, kernel.Go)
	require.NoError(t, err)
	text := string(src)
	assert.Equal(t, map[string]string{
		"README.md":       "not .jsonl, .json, .csv or .tsv",
		"broken.json":     "not valid JSON: invalid character '}' looking for beginning of object key string",
		"empty.csv":       "empty CSV (no header)",
		"header-only.csv": "no records",
		"readings.json":   "has NaN or Infinity, which Python's json reads but Go's encoding/json does not",
	}, skippedFiles(skipped))
	for _, s := range skipped {
		assert.Contains(t, text, "// skipped: "+s.File+": "+s.Reason+"\n")
	}
	_, k := verifyInit(t, src, func(t *testing.T) kernel.Kernel { return startGo(t, dir) })
	for code, want := range map[string]string{
		`bom[0].ID + " " + bom[0].City`:                                     `"1 Zürich"`,
		`latin1[0].Label`:                                                   `"Café crème"`,
		`debian[4].Codename + "|" + debian[4].Eol`:                          `"Forky|"`,
		`fmt.Sprint(ragged[2].Rest, ragged[3].Name == "")`:                  `"[extra2 extra3] true"`,
		`prices[1].Item + "|" + prices[1].Price`:                            `"jam; apricot|3,20"`,
		`genes[0].Chrom`:                                                    `"17"`,
		`quoted[0].Text + "|" + quoted[0].Size + "|" + quoted[1].Text`:      `"line one\nline two|5\" screen|she said \"hi\""`,
		`fmt.Sprintln(len(iso31661), iso31661[0].Alpha3)`:                   `"4 AND\n"`,
		`settings["units"]`:                                                 `"metric"`,
		`fmt.Sprintln(len(events), events[0].ID, events[0].Kind)`:           `"5 1 open\n"`,
		`notesLatin1[0].Author`:                                             `"René"`,
		`fmt.Sprintln(len(station), station[0].Source, station[11].Source)`: `"12 station_01.csv station_04.csv\n"`,
		`len(big[1].Blob)`:                                                  fmt.Sprint(140 << 10),
	} {
		assert.Equal(t, want, eval(t, k, code), code)
	}
}

// manyFiles writes n CSV files with one header, and a file of another kind.
func manyFiles(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := 1; i <= n; i++ {
		var b strings.Builder
		b.WriteString("date,station,temp_c,rain_mm,wind_kmh,pressure_hpa\n")
		for d := 1; d <= 3; d++ {
			fmt.Fprintf(&b, "2024-01-%02d,S%03d,%d,%d.%d,%d,%d\n", d, i, (i*7+d)%20-5, d%3, i%10, (i+d)%40, 990+(i*d)%40)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("sensor-%03d.csv", i)), []byte(b.String()), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stations.json"), []byte(`[{"id": "S001", "name": "Alp"}, {"id": "S002", "name": "Bay"}]`), 0o644))
	return dir
}

// TestInitManyFiles: 80 CSV files with one header are one variable with a
// source field, so the prefix stays within prefix verify's budget.
func TestInitManyFiles(t *testing.T) {
	dir := manyFiles(t, 80)
	t.Run("python", func(t *testing.T) {
		src, skipped, err := initRecords(dir)
		require.NoError(t, err)
		assert.Empty(t, skipped)
		p, err := prefixes.Parse("init", src)
		require.NoError(t, err)
		assert.Contains(t, p.Rules, "sensor (80 files sensor-001.csv ... sensor-080.csv, one list; 'source' is the file)")
		for name, start := range pythonFlavours(t) {
			t.Run(name, func(t *testing.T) {
				_, k := verifyInit(t, src, func(t *testing.T) kernel.Kernel { return start(t, dir) })
				assert.Equal(t, "240 {'source': 'sensor-080.csv', 'date': '2024-01-03', 'station': 'S080', 'temp_c': '-2', 'rain_mm': '0.0', 'wind_kmh': '3', 'pressure_hpa': '990'}\n",
					eval(t, k, "print(len(sensor), sensor[-1])"))
				assert.Equal(t, "[{'id': 'S001', 'name': 'Alp'}, {'id': 'S002', 'name': 'Bay'}]", eval(t, k, "stations"))
			})
		}
	})
	t.Run("go", func(t *testing.T) {
		src, skipped, err := prefixes.Init(dir, kernel.Go)
		require.NoError(t, err)
		assert.Empty(t, skipped)
		_, k := verifyInit(t, src, func(t *testing.T) kernel.Kernel { return startGo(t, dir) })
		assert.Equal(t, `"240 sensor-080.csv S080"`, eval(t, k, `fmt.Sprint(len(sensor), " ", sensor[239].Source, " ", sensor[239].Station)`))
	})
}

// TestInitWarnings: InitWith says which files it read as Latin-1, and warns
// when the prefix it writes would be over prefix verify's budget; its
// estimate of the tokens is close to what Verify counts.
func TestInitWarnings(t *testing.T) {
	t.Run("real world", func(t *testing.T) {
		dir := realWorld(t)
		for lang, start := range map[kernel.Language]func(t *testing.T) kernel.Kernel{
			kernel.Python: func(t *testing.T) kernel.Kernel { return kerneltest.Python(t, dir) },
			kernel.Go:     func(t *testing.T) kernel.Kernel { return startGo(t, dir) },
		} {
			t.Run(string(lang), func(t *testing.T) {
				r, err := prefixes.InitWith(dir, prefixes.InitOptions{Lang: lang, Style: prefixes.StyleRecords})
				require.NoError(t, err)
				assert.Equal(t, []string{"latin1.csv is not UTF-8: read as Latin-1", "notes-latin1.jsonl is not UTF-8: read as Latin-1"}, r.Warnings)
				v, _ := verifyInit(t, r.Source, start)
				assert.InEpsilon(t, v.Tokens, r.Tokens, 0.15, "estimate %d, counted %d", r.Tokens, v.Tokens)
			})
		}
	})
	t.Run("over budget", func(t *testing.T) {
		// 40 files, each with its own header: nothing to group.
		dir := t.TempDir()
		for i := 1; i <= 40; i++ {
			var b strings.Builder
			for c := 0; c < 6; c++ {
				fmt.Fprintf(&b, "col_%d_%d,", i, c)
			}
			b.WriteString("note\n")
			for r := 0; r < 3; r++ {
				fmt.Fprintf(&b, "%d,%d,%d,%d,%d,%d,row %d of file %d\n", r, r*i, i, r+i, r-i, r*r, r, i)
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("table%02d.csv", i)), []byte(b.String()), 0o644))
		}
		r, err := prefixes.InitWith(dir, prefixes.InitOptions{Style: prefixes.StyleRecords})
		require.NoError(t, err)
		require.Len(t, r.Warnings, 1)
		assert.Regexp(t, `^the prefix renders to about \d+ tokens \(o200k_base\), over the 4000 that prefix verify allows: `, r.Warnings[0])

		p, err := prefixes.Parse("init", r.Source)
		require.NoError(t, err)
		_, err = prefixes.Verify(context.Background(), func(context.Context) (kernel.Kernel, func(), error) {
			k := kerneltest.Python(t, dir)
			return k, func() { _ = k.Close() }, nil
		}, p, prefixes.VerifyOptions{})
		var over *prefixes.OverBudgetError
		require.ErrorAs(t, err, &over, "the warning was right")
		assert.True(t, prefixes.IsNotGood(err))
		assert.InEpsilon(t, over.Tokens, r.Tokens, 0.15)

		r, err = prefixes.InitWith(dir, prefixes.InitOptions{Style: prefixes.StyleRecords, MaxTokens: 100000})
		require.NoError(t, err)
		assert.Empty(t, r.Warnings, "within a larger budget")
	})
}

// TestVerifyNondeterministic: a prefix whose output changes from one build
// to the next is not good, and says where the builds differ.
func TestVerifyNondeterministic(t *testing.T) {
	p, err := prefixes.Parse("random.py", []byte("# %%\nimport random\nrandom.random()\n"))
	require.NoError(t, err)
	_, err = prefixes.Verify(context.Background(), func(context.Context) (kernel.Kernel, func(), error) {
		k := kerneltest.Python(t, "")
		return k, nil, nil
	}, p, prefixes.VerifyOptions{})
	var nd *prefixes.NondeterministicError
	require.ErrorAs(t, err, &nd)
	assert.Contains(t, err.Error(), "line 3:\n  first:  Out[1]: 0.")
	assert.True(t, prefixes.IsNotGood(err))

	bad, err := prefixes.Parse("bad.py", []byte("# %%\n1/0\n"))
	require.NoError(t, err)
	_, err = prefixes.Verify(context.Background(), func(context.Context) (kernel.Kernel, func(), error) {
		return kerneltest.Python(t, ""), nil, nil
	}, bad, prefixes.VerifyOptions{})
	var be *prefixes.BuildError
	require.ErrorAs(t, err, &be)
	assert.True(t, prefixes.IsNotGood(err))
}

// TestInitGroupsJSON: JSON-lines files, envelopes and records that Go
// keeps as maps are grouped too; an envelope with more than its records
// keeps the rest bound.
func TestInitGroupsJSON(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	for i, name := range []string{"log-a.jsonl", "log-b.jsonl", "log-c.jsonl"} {
		bom := ""
		if i == 1 {
			bom = "\ufeff"
		}
		write(name, fmt.Sprintf("%s{\"ts\": %d, \"level\": \"info\", \"msg\": \"start\"}\n{\"ts\": %d, \"level\": \"warn\", \"msg\": \"slow\"}\n", bom, 10*i, 10*i+1))
	}
	for i := 1; i <= 3; i++ {
		write(fmt.Sprintf("codes-%d.json", i), fmt.Sprintf(`{"codes": [{"code": "c%d", "n": %d}]}`, i, i))
		write(fmt.Sprintf("weird-%d.jsonl", i), fmt.Sprintf(`{"a b": %d, "odd\"key": "x"}`+"\n", i))
	}
	write("meta.json", `{"version": 3, "items": [{"id": 1}, {"id": 2}]}`)

	t.Run("python", func(t *testing.T) {
		src, skipped, err := initRecords(dir)
		require.NoError(t, err)
		assert.Empty(t, skipped)
		assert.Contains(t, string(src), "# rules: The data is loaded: codes (3 files codes-1.json ... codes-3.json, one list; 'source' is the file), "+
			"log (3 files log-a.jsonl ... log-c.jsonl, one list; 'source' is the file), meta, meta_doc, weird (3 files weird-1.jsonl ... weird-3.jsonl, one list; 'source' is the file).\n")
		for name, start := range pythonFlavours(t) {
			t.Run(name, func(t *testing.T) {
				_, k := verifyInit(t, src, func(t *testing.T) kernel.Kernel { return start(t, dir) })
				for code, want := range map[string]string{
					"[(r['source'], r['ts']) for r in log]": "[('log-a.jsonl', 0),\n ('log-a.jsonl', 1),\n ('log-b.jsonl', 10),\n ('log-b.jsonl', 11),\n ('log-c.jsonl', 20),\n ('log-c.jsonl', 21)]",
					"codes[2]":                              "{'source': 'codes-3.json', 'code': 'c3', 'n': 3}",
					"weird[0]":                              `{'source': 'weird-1.jsonl', 'a b': 1, 'odd"key': 'x'}`,
					"meta, meta_doc['version']":             "([{'id': 1}, {'id': 2}], 3)",
				} {
					assert.Equal(t, want, eval(t, k, code), code)
				}
			})
		}
	})
	t.Run("go", func(t *testing.T) {
		src, skipped, err := prefixes.Init(dir, kernel.Go)
		require.NoError(t, err)
		assert.Empty(t, skipped)
		assert.Contains(t, string(src), "\tSource string `json:\"-\"` // the file of the record\n")
		_, k := verifyInit(t, src, func(t *testing.T) kernel.Kernel { return startGo(t, dir) })
		for code, want := range map[string]string{
			`fmt.Sprintln(len(log), log[2].Source, log[2].Ts, log[5].Msg)`: `"6 log-b.jsonl 10 slow\n"`,
			`fmt.Sprintln(codes[2].Source, codes[2].Code, codes[2].N)`:     `"codes-3.json c3 3\n"`,
			`fmt.Sprintln(weird[1]["source"], weird[1]["a b"])`:            `"weird-2.jsonl 2\n"`,
			`fmt.Sprintln(len(meta), meta[1].ID, metaDoc["version"])`:      `"2 2 3\n"`,
		} {
			assert.Equal(t, want, eval(t, k, code), code)
		}
	})
}

// TestInitSkipsWhatLoadersCannotRead: a file the loader would fail on, or
// bind as something other than records, is skipped with the reason; the
// rest of the prefix builds.
func TestInitSkipsWhatLoadersCannotRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("nulls.jsonl", "{\"a\": 1}\nnull\n")
	write("huge.json", `[{"x": 1e400}]`) // Python reads inf; Go's float64 cannot hold it
	write("binary.csv", "a,b\n1,\x002\n")
	write("mixed.csv", "\xef\xbb\xbfa,b\ncaf\xe9,1\n")
	write("blank-header.csv", "\na,b\n1,2\n")
	write("ok.csv", "a,b\n1,2\n")
	want := map[string]string{
		"nulls.jsonl":      "line 2 is not a JSON object: null",
		"binary.csv":       "has NUL bytes: binary, or UTF-16, which init does not read",
		"mixed.csv":        "starts with a UTF-8 byte-order mark but is not UTF-8",
		"blank-header.csv": "the first line is blank, so csv.DictReader would find no field names",
	}
	src, skipped, err := initRecords(dir)
	require.NoError(t, err)
	assert.Equal(t, want, skippedFiles(skipped))
	_, k := verifyInit(t, src, func(t *testing.T) kernel.Kernel { return kerneltest.Python(t, dir) })
	assert.Equal(t, "[{'x': inf}]", eval(t, k, "huge"))

	src, skipped, err = prefixes.Init(dir, kernel.Go)
	require.NoError(t, err)
	want["huge.json"] = "not valid JSON: json: cannot unmarshal number 1e400 into Go value of type float64"
	delete(want, "blank-header.csv") // encoding/csv skips blank lines
	assert.Equal(t, want, skippedFiles(skipped))
	_, k = verifyInit(t, src, func(t *testing.T) kernel.Kernel { return startGo(t, dir) })
	assert.Equal(t, `"1 2"`, eval(t, k, `blankHeader[0].A + " " + blankHeader[0].B`))
}
