package bench

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// RemoteModel is a model behind a pause, as an API would be: while a
// trial waits for it, the pool refills. (Exported for bench_test's
// benchmarks too; it is part of the test build only.)
type RemoteModel struct {
	llm.Model
	Delay time.Duration
}

func (m RemoteModel) Complete(ctx context.Context, req session.Request) (llm.Reply, error) {
	select {
	case <-time.After(m.Delay):
	case <-ctx.Done():
		return llm.Reply{}, ctx.Err()
	}
	return m.Model.Complete(ctx, req)
}

// BenchmarkTrialStart measures, in Docker over the xl data with the pm
// prefix (condition D), the time from a trial's start to its first model
// request when the warm pool has had time to refill (the model answers
// after 1 s, as an API would), beside its baseline in the same run: a cold
// kernel start plus the prefix build, what a trial waits without the pool.
func BenchmarkTrialStart(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "pm")
	tier, err := datasets.ParseTier("xl")
	require.NoError(b, err)
	d := datasets.Generate(tier, 1)
	_, err = d.Write(dir, false)
	require.NoError(b, err)
	tasks, err := datasets.Tasks(d)
	require.NoError(b, err)
	tasks = tasks[:8]
	tr, cleanup, err := sandbox.Open(ctx, sandbox.OpenOptions{Kind: sandbox.KindDocker, DataDir: dir}, io.Discard)
	if err != nil {
		testenv.SkipOrFail(b, "docker: %v", err)
	}
	defer cleanup()
	pm, err := prefixes.Load("pm")
	require.NoError(b, err)
	solutions := map[string]string{}
	for _, t := range tasks {
		code, err := datasets.Reference(t, datasets.PythonPM)
		require.NoError(b, err)
		solutions[t.Question] = code
	}
	model := RemoteModel{Model: llm.NewReference(solutions, session.O200kBase), Delay: time.Second}
	cond := Condition{Name: "D", Protocol: session.Bare, Prefix: pm}

	for b.Loop() {
		var cold []float64
		for range 5 {
			start := time.Now()
			k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
			require.NoError(b, err)
			_, err = prefixes.Build(ctx, k, pm, kernel.ExecOptions{})
			require.NoError(b, err)
			cold = append(cold, float64(time.Since(start).Microseconds())/1000)
			require.NoError(b, k.Close())
		}

		run := &Run{
			Spec:       Spec{Reps: 1, Budgets: BudgetsOf(agent.DefaultConfig()), TaskList: tasks},
			Models:     []Model{{ModelInfo: ModelInfo{Name: "remote"}, For: func(Condition) (llm.Model, error) { return model, nil }}},
			Conditions: []Condition{cond},
			Tasks:      tasks,
			DataDir:    dir,
			Transport:  tr,
			Language:   kernel.Python,
			Agent:      agent.DefaultConfig(),
			Parallel:   1,
		}
		out := filepath.Join(b.TempDir(), "run")
		require.NoError(b, os.MkdirAll(out, 0o755))
		l, err := Open(out, run.Spec, Continue, io.Discard)
		require.NoError(b, err)
		res, err := run.Execute(ctx, l)
		require.NoError(b, err)
		require.NoError(b, l.Close())
		var warm []float64
		for i, t := range res.Final {
			require.True(b, t.Correct, "trial %s", t.Key)
			if i > 0 { // the first trial meets a pool that is still filling
				warm = append(warm, float64(t.KernelMS))
			}
		}
		b.ReportMetric(median(warm), "warm-first-request-ms")
		b.ReportMetric(median(cold), "cold-start-ms")
	}
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// BenchmarkIdleKernelRSS measures the memory of one idle Docker kernel
// with the xl data bound by the pm prefix (the driver's resident set, read
// from /proc inside the container), beside its baseline in the same run:
// the same kernel before the prefix. It sizes a pool: each warm kernel
// holds this much.
func BenchmarkIdleKernelRSS(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "pm")
	tier, err := datasets.ParseTier("xl")
	require.NoError(b, err)
	_, err = datasets.Generate(tier, 1).Write(dir, false)
	require.NoError(b, err)
	pm, err := prefixes.Load("pm")
	require.NoError(b, err)
	for _, path := range []struct {
		name      string
		noIPython bool
	}{{"ipython", false}, {"stdlib", true}} {
		b.Run(path.name, func(b *testing.B) {
			tr, cleanup, err := sandbox.Open(ctx, sandbox.OpenOptions{Kind: sandbox.KindDocker, DataDir: dir, NoIPython: path.noIPython}, io.Discard)
			if err != nil {
				testenv.SkipOrFail(b, "docker: %v", err)
			}
			defer cleanup()
			rss := func(k kernel.Kernel) float64 {
				res, err := k.Execute(ctx, "import re\nANSWER(int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1)))", kernel.ExecOptions{})
				require.NoError(b, err)
				var kb float64
				require.NoError(b, json.Unmarshal(res.Answer, &kb), "%+v", res)
				return kb / 1024
			}
			var empty, bound float64
			for b.Loop() {
				k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
				require.NoError(b, err)
				// IPython loads in the background; a cell naming get_ipython
				// waits for it (and fails on the stdlib path), so what is
				// measured is the kernel with IPython loaded.
				_, err = k.Execute(ctx, "get_ipython", kernel.ExecOptions{})
				require.NoError(b, err)
				empty = rss(k)
				_, err = prefixes.Build(ctx, k, pm, kernel.ExecOptions{})
				require.NoError(b, err)
				bound = rss(k)
				require.NoError(b, k.Close())
			}
			b.ReportMetric(bound, "rss-MiB")
			b.ReportMetric(empty, "before-prefix-MiB")
		})
	}
}
