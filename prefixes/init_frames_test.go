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

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// dockerPython starts Python kernels in the kernel image (which has
// pandas; this host's python3 may not) over dir; the test is skipped
// (failed in CI) without Docker or the image.
func dockerPython(t *testing.T, dir string) func(t *testing.T) kernel.Kernel {
	t.Helper()
	ctx := context.Background()
	cli, err := sandbox.Connect(ctx, sandbox.Host{})
	if err != nil {
		testenv.SkipOrFail(t, "%v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if ok, err := sandbox.ImageExists(ctx, cli, sandbox.KernelImage()); err != nil || !ok {
		testenv.SkipOrFail(t, "kernel image %s is missing (%v): build it with ctxcode sandbox build", sandbox.KernelImage(), err)
	}
	return func(t *testing.T) kernel.Kernel {
		cfg := sandbox.DefaultConfig()
		cfg.DataDir = dir
		tr, err := sandbox.NewPython(cli, cfg)
		require.NoError(t, err)
		return kerneltest.Start(t, kernel.Python, tr)
	}
}

// writeFiles writes name → content into a new folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

// initRecords is prefixes.Init of a Python prefix in the records style.
func initRecords(dir string) ([]byte, []prefixes.Skipped, error) {
	r, err := prefixes.InitWith(dir, prefixes.InitOptions{Style: prefixes.StyleRecords})
	if r == nil {
		return nil, nil, err
	}
	if err != nil {
		return nil, r.Skipped, err
	}
	return r.Source, r.Skipped, nil
}

// messyFiles are tables as they come: a byte-order mark, ';' and tab
// separators, quoted newlines, numbers written "1 234", " 2010" and "3,25",
// missing values, Latin-1 text, JSON with nulls, a JSON envelope and a
// group of files with one header.
func messyFiles(t *testing.T) string {
	t.Helper()
	files := map[string]string{
		"cities.csv": "\ufeffid;city;pop;area;capital\n" +
			"1;Zürich;\"1 234\";12,5;False\n" +
			"2;\"Bern\nBundesstadt\";2 010;3,25;True\n" +
			"3;Genève;987;7;False\n",
		"genes.tsv":  "gene\tchrom\tstart\tscore\nBRCA1\t17\t43044295\t0.5\nTP53\t17\t7668402\t\nEGFR\t7\t55019017\t1e-3\n",
		"people.csv": "name, year, score, note\nCaf\xe9, 2010, 1.5, ok\nRen\xe9, 2011, , \"late, but fine\"\nAnn, 2012, 3, NA\n",
		"events.jsonl": "{\"ts\": 1, \"kind\": \"open\", \"cost\": 1.5, \"user\": {\"id\": 7}}\n\n" +
			"{\"ts\": 2, \"kind\": \"close\", \"cost\": null}\n{\"ts\": 3, \"kind\": \"open\", \"cost\": 2}\n",
		"catalog.json":  `{"version": 3, "items": [{"sku": "a-1", "price": 9.5, "stock": 3}, {"sku": "b-2", "price": 12, "stock": 0}]}`,
		"settings.json": `{"units": "metric", "version": 2}`,
	}
	for i := 1; i <= 3; i++ {
		files[fmt.Sprintf("station_%02d.csv", i)] = fmt.Sprintf("date,temp_c,rain_mm\n2024-01-0%d,%d,0.%d\n2024-01-1%d,-%d,\n", i, i, i, i, i)
	}
	return writeFiles(t, files)
}

// buildCells builds src in a fresh kernel and returns its cells.
func buildCells(t *testing.T, src []byte, k kernel.Kernel) []session.Cell {
	t.Helper()
	p, err := prefixes.Parse("init", src)
	require.NoError(t, err, string(src))
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(t, err, string(src))
	return cells
}

// TestInitFramesMessy: prefix init's default, frames, reads messy tables
// into DataFrames with the dtypes a pandas user expects (whole numbers
// int64, numbers with a gap float64 with NaN, text object), passes prefix
// verify (two builds, identical) in the kernel image, and its control
// builds to the same outputs with no data variable bound.
func TestInitFramesMessy(t *testing.T) {
	dir := messyFiles(t)
	start := dockerPython(t, dir)
	r, err := prefixes.InitWith(dir, prefixes.InitOptions{})
	require.NoError(t, err)
	assert.Empty(t, r.Skipped)
	text := string(r.Source)
	assert.Contains(t, text, `cities = pd.read_csv("data/cities.csv", sep=';', encoding='utf-8-sig', thousands=' ', decimal=',')`)
	assert.Contains(t, text, `people = pd.read_csv("data/people.csv", encoding='latin-1', skipinitialspace=True)  # not UTF-8: read as Latin-1`)
	assert.Contains(t, text, `genes = pd.read_csv("data/genes.tsv", sep='\t')`)

	v, k := verifyInit(t, r.Source, start)
	t.Logf("frames prefix: %d tokens counted, %d estimated", v.Tokens, r.Tokens)
	assert.InEpsilon(t, v.Tokens, r.Tokens, 0.15, "estimate %d, counted %d", r.Tokens, v.Tokens)
	assert.Contains(t, v.Text, "numpy 1.24.2; pandas 1.5.3", "the library cell says what imported")

	dtypes := eval(t, k, "print('\\n'.join(f'{n}: {dict(df.dtypes.astype(str))}' for n, df in "+
		"[('cities', cities), ('genes', genes), ('people', people), ('events', events), ('catalog', catalog), ('station', station)]))")
	assert.Equal(t, strings.Join([]string{
		"cities: {'id': 'int64', 'city': 'object', 'pop': 'int64', 'area': 'float64', 'capital': 'bool'}",
		"genes: {'gene': 'object', 'chrom': 'int64', 'start': 'int64', 'score': 'float64'}",
		"people: {'name': 'object', 'year': 'int64', 'score': 'float64', 'note': 'object'}",
		"events: {'ts': 'int64', 'kind': 'object', 'cost': 'float64', 'user': 'object'}",
		"catalog: {'sku': 'object', 'price': 'float64', 'stock': 'int64'}",
		"station: {'date': 'object', 'temp_c': 'int64', 'rain_mm': 'float64', 'source': 'object'}",
	}, "\n")+"\n", dtypes)
	for code, want := range map[string]string{
		"cities['pop'].tolist(), cities['city'][1]":        "([1234, 2010, 987], 'Bern\\nBundesstadt')",
		"people['name'].tolist(), people['note'].tolist()": "(['Café', 'René', 'Ann'], ['ok', 'late, but fine', nan])",
		"catalog_doc['version'], settings['units']":        "(3, 'metric')",
		"station['source'].unique().tolist()":              "['station_01.csv', 'station_02.csv', 'station_03.csv']",
	} {
		assert.Equal(t, want, eval(t, k, code), code)
	}

	kc := sameOutputs(t, r, start)
	assert.Equal(t, "[]", eval(t, kc, "sorted(n for n in ['cities', 'genes', 'people', 'events', 'catalog', 'catalog_doc', 'settings', 'station', 'np', 'stats', 'sm', 'plt'] if n in globals())"),
		"the control binds no data, nor a library under its alias (a cell that reads a frame imports pandas as pd)")
}

// sameOutputs builds r's prefix and its control in fresh kernels and checks
// that every cell has the same output, from other code (but the listing);
// it returns the kernel that built the control.
func sameOutputs(t *testing.T, r *prefixes.InitResult, start func(t *testing.T) kernel.Kernel) kernel.Kernel {
	t.Helper()
	require.NotNil(t, r.Control)
	prefixOut := buildCells(t, r.Source, start(t))
	kc := start(t)
	controlOut := buildCells(t, r.Control, kc)
	require.Len(t, controlOut, len(prefixOut))
	for i := range prefixOut {
		assert.Equal(t, prefixOut[i].Output(kernel.Python, -1), controlOut[i].Output(kernel.Python, -1), "cell %d", i+1)
		if i > 0 { // the listing binds nothing in either
			assert.NotEqual(t, prefixOut[i].Code, controlOut[i].Code, "cell %d", i+1)
		}
	}
	return kc
}

// TestInitFramesRealWorld: the real-world folder of the records tests
// (ragged rows, a 140 KiB field, decimal commas, NaN and Infinity in JSON,
// an envelope, Latin-1 JSON lines, a group) in the frames style passes
// prefix verify in the kernel image, and its control has the same outputs.
func TestInitFramesRealWorld(t *testing.T) {
	dir := realWorld(t)
	start := dockerPython(t, dir)
	r, err := prefixes.InitWith(dir, prefixes.InitOptions{})
	require.NoError(t, err)
	assert.Len(t, r.Skipped, 4, "what the records style skips, and no more")
	assert.Contains(t, string(r.Source), `ragged = pd.read_csv("data/ragged.csv", skiprows=1, names=['id', 'name', 'extra_1', 'extra_2'])`)
	v, k := verifyInit(t, r.Source, start)
	assert.InEpsilon(t, v.Tokens, r.Tokens, 0.15, "estimate %d, counted %d", r.Tokens, v.Tokens)
	for code, want := range map[string]string{
		"prices['price'].tolist(), prices['item'][1]":   "([2.5, 3.2, 1.05], 'jam; apricot')",
		"ragged['extra_2'].tolist()":                    "[nan, nan, 'extra3', nan]",
		"readings['value'].tolist()":                    "[1.5, nan, inf, -inf, 2.0]",
		"quoted['text'][0], len(big['blob'][1])":        fmt.Sprintf("('line one\\nline two', %d)", 140<<10),
		"list(bom.columns), str(genes['start'].dtype)":  "(['id', 'city', 'country'], 'int64')",
		"latin1['label'][0], notes_latin1['author'][0]": "('Café crème', 'René')",
		"station.shape, station['source'].iloc[-1]":     "((12, 4), 'station_04.csv')",
	} {
		assert.Equal(t, want, eval(t, k, code), code)
	}
	sameOutputs(t, r, start)
}

// mixedTable is a CSV file of n rows of mixed types: ints, floats with
// gaps, dates, a category, free text and booleans.
func mixedTable(n int) string {
	var b strings.Builder
	b.WriteString("order_id,date,region,product,quantity,unit_price,discount,customer,returned\n")
	regions := []string{"north", "south", "east", "west"}
	products := []string{"widget", "gadget", "gizmo", "doohickey", "sprocket"}
	for i := 1; i <= n; i++ {
		discount := ""
		if i%7 != 0 {
			discount = fmt.Sprintf("%.2f", float64(i%20)/100)
		}
		fmt.Fprintf(&b, "%d,2024-%02d-%02d,%s,%s,%d,%.2f,%s,Customer %d of %s,%t\n",
			10000+i, 1+i%12, 1+i%28, regions[i%4], products[i%5], 1+i%9, 3.5+float64(i%50)*1.25, discount, i%97, regions[(i/4)%4], i%13 == 0)
	}
	return b.String()
}

// TestInitFramesFirstRequest: the first request of conditions B, B0 and D
// over one 1000-row table of mixed types, with the frames prefix and with
// the records prefix, both built in the kernel image: the figures are
// logged (go test -v); each prefix passes prefix verify.
func TestInitFramesFirstRequest(t *testing.T) {
	dir := writeFiles(t, map[string]string{"orders.csv": mixedTable(1000)})
	start := dockerPython(t, dir)
	const question = "What is the total revenue of the north region?"
	for _, style := range []prefixes.Style{prefixes.StyleFrames, prefixes.StyleRecords} {
		r, err := prefixes.InitWith(dir, prefixes.InitOptions{Style: style})
		require.NoError(t, err)
		v, _ := verifyInit(t, r.Source, start)
		t.Logf("%s: prefix transcript %d tokens (estimate %d)", style, v.Tokens, r.Tokens)
		for _, c := range []struct {
			name     string
			src      []byte
			protocol session.Protocol
		}{{"B", r.Source, session.Eval}, {"B0", r.Control, session.Eval}, {"D", r.Source, session.Bare}, {"C", r.Source, session.TranscriptText}} {
			p, err := prefixes.Parse("orders", c.src)
			require.NoError(t, err)
			cells := buildCells(t, c.src, start(t))
			req, err := session.Render(c.protocol, p.Input(cells, question))
			require.NoError(t, err)
			n, err := session.CountRequest(session.O200kBase, req)
			require.NoError(t, err)
			t.Logf("%s: first request of %s: %d tokens", style, c.name, n)
		}
	}
}

// TestInitRecordsWithoutPandas: where the kernel has no pandas (this host's
// python3, as a rule), the records style builds, and the frames style
// fails at its library cell saying that pandas is missing.
func TestInitRecordsWithoutPandas(t *testing.T) {
	dir := messyFiles(t)
	probe := kerneltest.Python(t, "")
	if eval(t, probe, "import importlib.util\nimportlib.util.find_spec('pandas') is None") != "True" {
		t.Skip("this python3 has pandas: the test is for one without")
	}
	r, err := prefixes.InitWith(dir, prefixes.InitOptions{Style: prefixes.StyleRecords})
	require.NoError(t, err)
	assert.NotContains(t, string(r.Source), "pandas")
	_, k := verifyInit(t, r.Source, func(t *testing.T) kernel.Kernel { return kerneltest.Python(t, dir) })
	assert.Equal(t, "'Zürich'", eval(t, k, "cities[0]['city']"))
	_, _ = verifyInit(t, r.Control, func(t *testing.T) kernel.Kernel { return kerneltest.Python(t, dir) })

	r, err = prefixes.InitWith(dir, prefixes.InitOptions{Style: prefixes.StyleFrames})
	require.NoError(t, err)
	p, err := prefixes.Parse("init", r.Source)
	require.NoError(t, err)
	_, err = prefixes.Build(context.Background(), kerneltest.Python(t, dir), p, kernel.ExecOptions{Timeout: time.Minute})
	var be *prefixes.BuildError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, err.Error(), "No module named 'pandas'")
}

// manyTables writes n CSV files of 7 columns, each with its own header.
func manyTables(t *testing.T, n int) string {
	files := map[string]string{}
	for i := 1; i <= n; i++ {
		var b strings.Builder
		for c := 0; c < 6; c++ {
			fmt.Fprintf(&b, "col_%d_%d,", i, c)
		}
		b.WriteString("note\n")
		for r := 0; r < 3; r++ {
			fmt.Fprintf(&b, "%d,%d,%d,%d,%d,%d,row %d of file %d\n", r, r*i, i, r+i, r-i, r*r, r, i)
		}
		files[fmt.Sprintf("table%02d.csv", i)] = b.String()
	}
	return writeFiles(t, files)
}

// TestInitFramesBudget: when the frames would be over the token budget,
// Init shows fewer of their rows, then none, but every frame's shape and
// dtypes; its estimate stays close to what Verify counts.
func TestInitFramesBudget(t *testing.T) {
	dir := manyTables(t, 16)
	start := dockerPython(t, dir)
	for _, tt := range []struct {
		max  int
		head string // what each frame's cell shows of its rows
	}{{100000, ".head(3)\n"}, {3800, ".head(2)\n"}, {3300, ".iloc[:1, :"}, {2500, ""}, {1500, ""}} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			r, err := prefixes.InitWith(dir, prefixes.InitOptions{MaxTokens: tt.max})
			require.NoError(t, err)
			src := string(r.Source)
			assert.Equal(t, 16, strings.Count(src, ".dtypes.to_string())\n"), "every frame's dtypes")
			assert.Equal(t, 16, strings.Count(src, ".shape)\n"), "every frame's shape")
			if tt.head != "" {
				assert.Equal(t, 16, strings.Count(src, tt.head))
			} else {
				assert.NotContains(t, src, ".head(")
				assert.NotContains(t, src, ".iloc[")
			}
			if tt.max < r.Tokens {
				assert.Len(t, r.Warnings, 1, "still over budget")
			} else {
				assert.Empty(t, r.Warnings)
			}
			p, err := prefixes.Parse("init", r.Source)
			require.NoError(t, err)
			v, err := prefixes.Verify(context.Background(), func(context.Context) (kernel.Kernel, func(), error) {
				k := start(t)
				return k, func() { _ = k.Close() }, nil
			}, p, prefixes.VerifyOptions{MaxTokens: 100000, Exec: kernel.ExecOptions{Timeout: time.Minute}})
			require.NoError(t, err)
			t.Logf("budget %d: estimate %d, counted %d", tt.max, r.Tokens, v.Tokens)
			assert.InEpsilon(t, v.Tokens, r.Tokens, 0.15, "estimate %d, counted %d", r.Tokens, v.Tokens)
			if tt.max >= r.Tokens {
				assert.LessOrEqual(t, v.Tokens, tt.max)
			}
		})
	}
}

// TestInitFramesWide: a frame of many columns shows its dtypes a line per
// dtype, and as many first columns as fit; the control shows the same.
func TestInitFramesWide(t *testing.T) {
	var b strings.Builder
	for c := 0; c < 40; c++ {
		fmt.Fprintf(&b, "measure_%02d,", c)
	}
	b.WriteString("label,flag\n")
	for r := 0; r < 50; r++ {
		for c := 0; c < 40; c++ {
			if c%2 == 0 {
				fmt.Fprintf(&b, "%d,", r*c)
			} else {
				fmt.Fprintf(&b, "%d.5,", r+c)
			}
		}
		fmt.Fprintf(&b, "row %d,%t\n", r, r%3 == 0)
	}
	dir := writeFiles(t, map[string]string{"wide.csv": b.String()})
	start := dockerPython(t, dir)
	r, err := prefixes.InitWith(dir, prefixes.InitOptions{})
	require.NoError(t, err)
	v, _ := verifyInit(t, r.Source, start)
	assert.InEpsilon(t, v.Tokens, r.Tokens, 0.15, "estimate %d, counted %d", r.Tokens, v.Tokens)
	assert.Contains(t, v.Text, "\nbool: flag\nfloat64: measure_01, measure_03, ")
	assert.Contains(t, v.Text, "\nobject: label\n")
	assert.Contains(t, string(r.Source), "wide.iloc[:3, :")
	sameOutputs(t, r, start)
}

// TestInitFramesGroupsJSON: groups of JSON-lines files (one with a
// byte-order mark) and of envelopes are one frame each, with the source
// column; keys that are no identifiers stay columns.
func TestInitFramesGroupsJSON(t *testing.T) {
	files := map[string]string{}
	for i, name := range []string{"log-a.jsonl", "log-b.jsonl", "log-c.jsonl"} {
		bom := ""
		if i == 1 {
			bom = "\ufeff"
		}
		files[name] = fmt.Sprintf("%s{\"ts\": %d, \"level\": \"info\", \"msg\": \"start\"}\n{\"ts\": %d, \"level\": \"warn\", \"msg\": \"slow\"}\n", bom, 10*i, 10*i+1)
	}
	for i := 1; i <= 3; i++ {
		files[fmt.Sprintf("codes-%d.json", i)] = fmt.Sprintf(`{"codes": [{"code": "c%d", "n": %d}]}`, i, i)
		files[fmt.Sprintf("weird-%d.jsonl", i)] = fmt.Sprintf(`{"a b": %d, "odd\"key": "x"}`+"\n", i)
	}
	dir := writeFiles(t, files)
	start := dockerPython(t, dir)
	r, err := prefixes.InitWith(dir, prefixes.InitOptions{})
	require.NoError(t, err)
	assert.Contains(t, string(r.Source), "encoding='utf-8-sig'", "a member has a byte-order mark")
	v, k := verifyInit(t, r.Source, start)
	assert.InEpsilon(t, v.Tokens, r.Tokens, 0.15, "estimate %d, counted %d", r.Tokens, v.Tokens)
	for code, want := range map[string]string{
		"log.shape, log['source'].tolist()[-1], str(log['ts'].dtype)": "((6, 4), 'log-c.jsonl', 'int64')",
		"codes.to_dict('records')[2]":                                 "{'code': 'c3', 'n': 3, 'source': 'codes-3.json'}",
		"list(weird.columns)":                                         `['a b', 'odd"key', 'source']`,
	} {
		assert.Equal(t, want, eval(t, k, code), code)
	}
	sameOutputs(t, r, start)
}
