package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/sandbox"
)

// BenchmarkBenchVersusSequentialAsk runs the whole ladder (five conditions
// × the 24 built-in xl tasks, the reference model, Docker) twice in one
// run: as one `ctxcode bench` (parallel trials over warm kernel pools) and,
// the baseline, as 120 sequential `ctxcode ask --task ID --condition C`
// processes, each with its cold kernel. It reports both wall times, their
// ratio, and the median time from a bench trial's start to its first model
// request (the trial line's kernel_ms).
func BenchmarkBenchVersusSequentialAsk(b *testing.B) {
	requireDocker(b)
	exe, err := os.Executable()
	require.NoError(b, err)
	cli := func(args ...string) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1")
		out, err := cmd.CombinedOutput()
		require.NoError(b, err, "%s\n%s", strings.Join(args, " "), out)
	}
	dir, err := datasets.Builtin(os.Stderr)
	require.NoError(b, err)
	d, _, err := datasets.Load(dir)
	require.NoError(b, err)
	tasks, err := datasets.Tasks(d)
	require.NoError(b, err)
	conds := []string{"A", "B", "B0", "C", "D"}
	for b.Loop() {
		start := time.Now()
		for _, c := range conds {
			for _, t := range tasks {
				cli("ask", "--model", "reference", "--task", t.ID, "--condition", c)
			}
		}
		asks := time.Since(start)

		out := filepath.Join(b.TempDir(), "run")
		start = time.Now()
		cli("bench", "--model", "reference", "--conditions", strings.Join(conds, ","), "--tier", "xl", "--out", out)
		run := time.Since(start)

		_, trials, err := bench.ReadDir(out)
		require.NoError(b, err)
		require.Len(b, trials, len(conds)*len(tasks))
		var firsts []float64
		for _, t := range trials {
			require.True(b, t.Correct, "trial %s", t.Key)
			firsts = append(firsts, float64(t.KernelMS))
		}
		sort.Float64s(firsts)
		b.ReportMetric(asks.Seconds(), "asks-s")
		b.ReportMetric(run.Seconds(), "bench-s")
		b.ReportMetric(asks.Seconds()/run.Seconds(), "speedup")
		b.ReportMetric(firsts[len(firsts)/2], "first-request-ms-median")
	}
}

// BenchmarkAskFirstRequest measures `ctxcode ask` from the process's start
// to its first model request (Docker, the built-in xl data, the pm prefix),
// beside its baseline in the same run: `docker run --rm IMAGE python3 -c
// pass`. Two cases: without the prefix cache (--no-cache: the sweep, the
// container's cold start and the prefix build come first), and with a warm
// one (the request goes out while the kernel starts). Each is reported in
// milliseconds (the median) and as a ratio to docker run's median.
func BenchmarkAskFirstRequest(b *testing.B) {
	requireDocker(b)
	exe, err := os.Executable()
	require.NoError(b, err)
	data, err := datasets.Builtin(os.Stderr)
	require.NoError(b, err)
	// The built prefixes go to a cache folder of the benchmark's own.
	env := append(os.Environ(), "CTXCODE_TEST_CLI=1", "OPENAI_API_KEY=test", "XDG_CACHE_HOME="+b.TempDir())
	ask := func(args ...string) float64 {
		srv := llmtest.NewServer(b, llmtest.Text("ANSWER(1)", 10, 2))
		cmd := exec.Command(exe, append([]string{"ask", "--model", "m", "--base-url", srv.URL, "--task", "xl-t1-1", "--retries", "0", "--data", data}, args...)...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		require.NoError(b, err, "%s", out)
		reqs := srv.Requests()
		require.Len(b, reqs, 1)
		return float64(reqs[0].At.Sub(start).Microseconds()) / 1000
	}
	ask() // warms the cache
	var cold, warm, runs []float64
	for b.Loop() {
		cold = append(cold, ask("--no-cache"))
		warm = append(warm, ask())

		start := time.Now()
		out, err := exec.Command("docker", "run", "--rm", "--network", "none", sandbox.KernelImage(), "python3", "-c", "pass").CombinedOutput()
		require.NoError(b, err, "%s", out)
		runs = append(runs, float64(time.Since(start).Microseconds())/1000)
	}
	median := func(xs []float64) float64 {
		sort.Float64s(xs)
		return xs[len(xs)/2]
	}
	run := median(runs)
	b.ReportMetric(median(cold), "first-request-ms")
	b.ReportMetric(median(warm), "warm-first-request-ms")
	b.ReportMetric(run, "docker-run-ms")
	b.ReportMetric(median(cold)/run, "ratio-x")
	b.ReportMetric(median(warm)/run, "warm-ratio-x")
}
