package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/prefixes"
)

// tripsFolder writes a folder with one CSV of rows trips, ten short fields
// a row (the shape of a taxi-trips table), and returns it.
func tripsFolder(t *testing.T, rows int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "trips")
	require.NoError(t, os.Mkdir(dir, 0o755))
	var b strings.Builder
	b.WriteString("trip_id,pickup_time,city,distance_km,fare,tip,payment,passengers,driver_id,rating\n")
	cities := []string{"Berlin", "Paris", "Lisbon", "Oslo", "Rome", "Madrid", "Vienna", "Prague"}
	for i := range rows {
		fmt.Fprintf(&b, "%d,2024-%02d-%02d %02d:%02d:%02d,%s,%d.%02d,%d.%02d,%d.%02d,%s,%d,D%05d,%d\n",
			i+1, i%12+1, i%28+1, i%24, i%60, (i*7)%60, cities[i%len(cities)], i%40, i%100, 3+i%117, (i*3)%100,
			i%20, (i*7)%100, []string{"card", "cash", "app"}[i%3], i%6+1, i%5000, i%5+1)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trips.csv"), []byte(b.String()), 0o644))
	return dir
}

// TestPrefixInitWarnsOfMemory: prefix init compares what its prefix's data
// will take with the kernels' memory limit (--memory, 2g by default) and
// warns, naming the estimate, the limit and the flag, with a value that
// leaves room; it starts no kernel to do so.
func TestPrefixInitWarnsOfMemory(t *testing.T) {
	dir := tripsFolder(t, 100000) // 7 MB; about 110 MiB as dicts
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	tests := []struct {
		name string
		args []string
		want *regexp.Regexp // nil: no warning of memory
	}{
		{"the default limit leaves room", nil, nil},
		{"little room", []string{"--memory", "192m"}, regexp.MustCompile(
			`ctxcode: prefix init: warning: the loaded data takes about \d+ MiB of the kernel's memory limit of 192 MiB, ` +
				`which leaves \d+ MiB for the cells after the prefix, .*: give it more with --memory 256m, or move files out of the folder\n`)},
		{"no room to load", []string{"--memory", "64m"}, regexp.MustCompile(
			`ctxcode: prefix init: warning: loading the data takes about \d+ MiB, more than the kernel's memory limit of 64 MiB, ` +
				`so the prefix would not finish .*: give it more with --memory 256m .*\n`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, "", append([]string{"prefix", "init", "--data", dir, "--style", "records"}, tt.args...)...)
			require.Equal(t, exitOK, got.code, got.stderr)
			assert.Contains(t, got.stdout, `trips = load_csv("trips.csv")`)
			if tt.want == nil {
				assert.NotContains(t, got.stderr, "--memory")
				return
			}
			assert.Regexp(t, tt.want, got.stderr)
		})
	}
}

// TestAskWarnsOfMemoryBeforeAnyKernel: ask, writing a prefix on the fly,
// warns of data that would not fit in --memory before it starts a kernel:
// with Docker unreachable, the warning comes, and then the failure to
// start one.
func TestAskWarnsOfMemoryBeforeAnyKernel(t *testing.T) {
	privateCache(t)
	dir := tripsFolder(t, 100000)
	srv := llmtest.NewServer(t) // never asked: no kernel, no prefix, no request
	t.Setenv("OPENAI_API_KEY", "sk-x")
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	got := runCLI(t, "", "ask", "How many trips were paid by card?", "--model", "m", "--base-url", srv.URL,
		"--data", dir, "--memory", "64m", "--no-cache")
	assert.Equal(t, exitInfra, got.code, got.stderr)
	warning := strings.Index(got.stderr, "warning: loading the data takes about")
	kernel := strings.Index(got.stderr, "not reachable")
	require.GreaterOrEqual(t, warning, 0, got.stderr)
	require.GreaterOrEqual(t, kernel, 0, got.stderr)
	assert.Less(t, warning, kernel, "the warning comes before the kernel's start:\n%s", got.stderr)
	assert.Contains(t, got.stderr, "the kernel's memory limit of 64 MiB")
	assert.Contains(t, got.stderr, "give it more with --memory 256m")
}

// TestOutOfMemorySaysTheLimitAndTheFlag: a kernel the out-of-memory killer
// ends says so with its limit and the flag that sets it, in exec and in an
// ask whose one cell allocates past the limit (the model's result there:
// kernel_died, exit 3). Real: Docker, --memory 64m,
// a cell that allocates 200 MB.
func TestOutOfMemorySaysTheLimitAndTheFlag(t *testing.T) {
	requireDocker(t)
	const oom = "out of memory, at its limit of 64 MiB (give it more with --memory, e.g. --memory 128m)"
	t.Run("exec", func(t *testing.T) {
		got := runCLI(t, "", "exec", "--memory", "64m", "--", "x = 1", "b = bytearray(200 << 20)", "x")
		assert.Equal(t, exitInfra, got.code, got.stderr)
		assert.Contains(t, got.stderr, "python kernel killed: "+oom)
	})
	t.Run("ask, one shot", func(t *testing.T) {
		// The prefix init writes imports the analyst's libraries, which
		// take more than 64 MiB: the run has room for them, not for the
		// model's 600 MiB.
		privateCache(t)
		dir := tripsFolder(t, 10)
		srv := llmtest.NewServer(t, llmtest.Text("```python\nb = bytearray(600 << 20)\nANSWER(len(b))\n```", 700, 20))
		t.Setenv("OPENAI_API_KEY", "sk-x")
		got := runCLI(t, "", "ask", "How many trips?", "--condition", "C", "--model", "m", "--base-url", srv.URL,
			"--data", dir, "--memory", "512m", "--no-cache")
		assert.Equal(t, exitNoAnswer, got.code, "the model's cell killed it: its result, no answer\n%s", got.stderr)
		assert.Contains(t, got.stderr, "no answer: kernel_died")
		assert.Contains(t, got.stderr, "python kernel killed: out of memory, at its limit of 512 MiB (give it more with --memory, e.g. --memory 1g)")
	})
}

// TestAskCostLineCountsPrefixInit: when ask writes the prefix on the fly,
// the time prefix init took is on the cost line, and in the wall time.
func TestAskCostLineCountsPrefixInit(t *testing.T) {
	requirePython(t)
	privateCache(t)
	dir := tripsFolder(t, 2000)
	t.Setenv("OPENAI_API_KEY", "sk-x")
	answer := "ANSWER(sum(r['payment'] == 'card' for r in trips))"

	srv := llmtest.NewServer(t, llmtest.Text(answer, 500, 20))
	got := runCLI(t, "", "ask", "How many trips were paid by card?", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local")
	require.Equal(t, exitOK, got.code, got.stderr)
	m := regexp.MustCompile(`\[1 turn, 500 context tokens, 20 output tokens, 0 cached, ([\d.]+)s \(model ([\d.]+)s, prefix init ([\d.]+)s, kernel and prefix ([\d.]+)s\)\]`).
		FindStringSubmatch(got.stdout)
	require.Len(t, m, 5, got.stdout)
	wall, model, init, setup := parseSeconds(t, m[1]), parseSeconds(t, m[2]), parseSeconds(t, m[3]), parseSeconds(t, m[4])
	assert.Positive(t, init)
	assert.GreaterOrEqual(t, wall+0.01, model+init+setup, "the wall time holds prefix init's")

	srv = llmtest.NewServer(t, llmtest.Text(answer, 500, 20))
	got = runCLI(t, "", "ask", "How many trips were paid by card?", "--model", "m", "--base-url", srv.URL, "--data", dir, "--sandbox", "local", "--json")
	require.Equal(t, exitOK, got.code, got.stderr)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &rec), got.stdout)
	require.Contains(t, rec, "prefix_init_ms")
	// The prefix is in the cache now: the request went out while the
	// kernel started, so the model's and the kernel's times overlap.
	assert.Equal(t, "hit", rec["prefix_cache"])
	initMS, wallMS := rec["prefix_init_ms"].(float64), rec["wall_ms"].(float64)
	assert.Positive(t, initMS)
	assert.GreaterOrEqual(t, wallMS+1, initMS+max(rec["model_ms"].(float64), rec["setup_ms"].(float64)))

	// A named prefix is not written: no prefix init on the line.
	srv = llmtest.NewServer(t, llmtest.Text("ANSWER(1)", 500, 20))
	p := filepath.Join(t.TempDir(), "trips.py")
	require.Equal(t, exitOK, runCLI(t, "", "prefix", "init", "--data", dir, "--out", p, "--style", "records").code)
	got = runCLI(t, "", "ask", "How many trips?", "--model", "m", "--base-url", srv.URL, "--data", dir, "--prefix", p, "--sandbox", "local")
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.NotContains(t, got.stdout, "prefix init")
}

// TestPrefixInitMemoryEstimateMatchesTheKernel holds prefix init's memory
// estimate to what a real kernel in the image holds once the prefix ran
// (VmRSS), for a folder of every kind of file, in both languages: within
// a fifth for Python, whose objects add up exactly (measured: within 4%),
// and a third for Go, whose heap depends on when its collector ran
// (measured: within 15%).
func TestPrefixInitMemoryEstimateMatchesTheKernel(t *testing.T) {
	requireDocker(t)
	dir := tripsFolder(t, 60000)
	var jsonl, array []string
	for i := range 20000 {
		r := fmt.Sprintf(`{"id": %d, "user": "u%d", "kind": "%s", "price": %d.25, "ok": %t, "tags": ["a", "bb"], "meta": {"ref": "x%d", "n": %d}}`,
			i, i%5000, []string{"view", "click", "buy"}[i%3], i%500, i%2 == 0, i%7, i*13)
		jsonl = append(jsonl, r)
		array = append(array, r)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(strings.Join(jsonl, "\n")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "orders.json"), []byte("["+strings.Join(array, ",")+"]"), 0o644))

	rss := "print([int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')][0])"
	tests := []struct {
		lang     string
		style    prefixes.Style
		tolerate float64
		cell     string
	}{
		{"python", prefixes.StyleRecords, 0.2, rss},
		{"python", prefixes.StyleFrames, 0.2, rss},
		{"go", "", 0.35, `b, _ := os.ReadFile("/proc/self/status"); for _, l := range strings.Split(string(b), "\n") { if strings.HasPrefix(l, "VmRSS:") { fmt.Println(strings.Fields(l)[1]) } }`},
	}
	for _, tt := range tests {
		t.Run(tt.lang+" "+string(tt.style), func(t *testing.T) {
			lang, err := kernel.ParseLanguage(tt.lang)
			require.NoError(t, err)
			r, err := prefixes.InitWith(dir, prefixes.InitOptions{Lang: lang, Style: tt.style})
			require.NoError(t, err)
			p := filepath.Join(t.TempDir(), "p."+tt.lang)
			require.NoError(t, os.WriteFile(p, r.Source, 0o644))
			got := runCLI(t, "", "exec", "--lang", tt.lang, "--data", dir, "--prefix", p, "--memory", "2g", "--timeout", "5m", "--", tt.cell)
			require.Equal(t, exitOK, got.code, got.stderr)
			lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
			kb, err := strconv.ParseInt(strings.TrimSpace(lines[len(lines)-1]), 10, 64)
			require.NoError(t, err, got.stdout)
			rss := kb << 10
			t.Logf("%s: estimate %d MiB, VmRSS %d MiB", tt.lang, r.Memory>>20, rss>>20)
			assert.InEpsilon(t, rss, r.Memory, tt.tolerate, "estimate %d MiB, VmRSS %d MiB", r.Memory>>20, rss>>20)
		})
	}
}
