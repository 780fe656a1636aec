package kernel

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// realPython resolves the interpreter behind a wrapper such as a pyenv shim,
// so that the spawn baseline pays no wrapper cost.
func realPython(tb testing.TB, modules ...string) string {
	tb.Helper()
	p, ok := findPython(modules...)
	if !ok {
		skipOrFail(tb, "no python3 with %v", modules)
	}
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	require.NoError(tb, err)
	return strings.TrimSpace(string(out))
}

// driverPaths are the two ways the Python driver runs cells.
var driverPaths = []struct {
	name      string
	modules   []string
	noIPython bool
}{{"stdlib", nil, true}, {"ipython", []string{"IPython"}, false}}

// benchCells runs `1+1` b.N times and reports the median round trip.
func benchCells(b *testing.B, k Kernel) {
	ctx := context.Background()
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := k.Execute(ctx, "1+1", ExecOptions{})
		durations = append(durations, time.Since(start))
		if err != nil || res.Value != "2" {
			b.Fatalf("1+1 gave %q, %v", res.Value, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(median(durations).Microseconds()), "median-µs/cell")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkPythonCell is the round trip of a trivial cell through the local
// Python kernel, on both driver paths, beside the baseline a CLI agent pays:
// spawning `python3 -c '1+1'` for every cell. speedup-x is baseline/kernel
// medians measured in the same run.
func BenchmarkPythonCell(b *testing.B) {
	for _, fl := range driverPaths {
		b.Run(fl.name, func(b *testing.B) {
			python := realPython(b, fl.modules...)
			k := startPython(b, flavour{name: fl.name, python: python, noIPython: fl.noIPython}, LocalConfig{})
			benchCells(b, k)
			spawn := spawnMedian(b, python, 15)
			b.ReportMetric(float64(spawn.Microseconds()), "spawn-median-µs/cell")
			ds := make([]time.Duration, 0, 50)
			for range 50 {
				start := time.Now()
				_, err := k.Execute(context.Background(), "1+1", ExecOptions{})
				ds = append(ds, time.Since(start))
				require.NoError(b, err)
			}
			b.ReportMetric(float64(spawn)/float64(median(ds)), "speedup-x")
		})
	}
	b.Run("spawn-baseline", func(b *testing.B) {
		python := realPython(b)
		durations := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if err := exec.Command(python, "-c", "1+1").Run(); err != nil {
				b.Fatal(err)
			}
			durations = append(durations, time.Since(start))
		}
		b.ReportMetric(float64(median(durations).Microseconds()), "median-µs/cell")
	})
}

func spawnMedian(tb testing.TB, python string, n int) time.Duration {
	ds := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		require.NoError(tb, exec.Command(python, "-c", "1+1").Run())
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// BenchmarkPythonStart is kernel start to first result.
func BenchmarkPythonStart(b *testing.B) {
	for _, fl := range driverPaths {
		b.Run(fl.name, func(b *testing.B) {
			python := realPython(b, fl.modules...)
			tr, err := NewLocalPython(python, fl.noIPython, LocalConfig{})
			require.NoError(b, err)
			for b.Loop() {
				k, err := Start(context.Background(), Python, tr, ClientOptions{})
				require.NoError(b, err)
				_, err = k.Execute(context.Background(), "1+1", ExecOptions{})
				require.NoError(b, err)
				require.NoError(b, k.Close())
			}
		})
	}
}
