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
	dir, err := cachedData("xl", 1, os.Stderr)
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
