package sandbox

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// The benchmarks of issue 3, each beside the baseline it is judged against:
//
//	go test ./sandbox/ -run '^$' -bench . -benchtime 10x

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runTimed runs a command and returns how long it took.
func runTimed(b *testing.B, name string, args ...string) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	d := time.Since(start)
	require.NoError(b, err, "%s %v: %s", name, args, out)
	return d
}

// execBaselineSamples bounds the docker exec samples: each costs tens of
// milliseconds, and b.Loop may run the cell loop many thousands of times.
const execBaselineSamples = 20

// BenchmarkDockerCell: a trivial cell round trip through the attached
// kernel, beside `docker exec <container> python3 -c '1+1'` against the same
// container (what a CLI agent pays per command).
func BenchmarkDockerCell(b *testing.B) {
	cli := newDockerClient(b)
	cfg := testConfig(b)
	k := startKernel(b, cfg)
	cs := sessionContainers(b, cli, cfg.Session)
	require.Len(b, cs, 1)
	id := cs[0].ID
	ctx := context.Background()
	// Warm up; a cell naming get_ipython waits until IPython, loading in
	// the background, has taken over, so that its cells are what is timed.
	if _, err := k.Execute(ctx, "get_ipython().execution_count", kernel.ExecOptions{}); err != nil {
		b.Fatal(err)
	}

	var cells, execs []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := k.Execute(ctx, "1+1", kernel.ExecOptions{})
		cells = append(cells, time.Since(start))
		if err != nil || res.Value != "2" {
			b.Fatalf("1+1: %q, %v", res.Value, err)
		}
		if len(execs) < execBaselineSamples {
			b.StopTimer()
			execs = append(execs, runTimed(b, "docker", "exec", id, "python3", "-c", "1+1"))
			b.StartTimer()
		}
	}
	ours, base := median(cells), median(execs)
	b.ReportMetric(micros(ours), "median-µs/cell")
	b.ReportMetric(micros(base), "exec-median-µs/cell")
	b.ReportMetric(float64(base)/float64(ours), "speedup-x")
}

// BenchmarkDockerColdStart: create + start + kernel ready + first result
// (the removal after it is not timed), beside `docker run --rm --network none
// IMAGE python3 -c pass`, on the driver's two shells: IPython (imported
// before the first answer) and the stdlib path.
func BenchmarkDockerColdStart(b *testing.B) {
	for _, path := range []struct {
		name      string
		noIPython bool
		env       []string
	}{{"ipython", false, nil}, {"stdlib", true, nil}} {
		b.Run(path.name, func(b *testing.B) {
			cli := newDockerClient(b)
			cfg := testConfig(b)
			cfg.NoIPython = path.noIPython
			cfg.Env = path.env
			tr, err := NewPython(cli, cfg)
			require.NoError(b, err)
			ctx := context.Background()
			runTimed(b, "docker", "run", "--rm", "--network", "none", cfg.Image, "python3", "-c", "pass") // warm the caches

			var ours, base []time.Duration
			for b.Loop() {
				start := time.Now()
				k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := k.Execute(ctx, "1+1", kernel.ExecOptions{})
				ours = append(ours, time.Since(start))
				b.StopTimer()
				cerr := k.Close()
				if err != nil || res.Value != "2" || cerr != nil {
					b.Fatalf("first cell: %q, %v; close: %v", res.Value, err, cerr)
				}
				base = append(base, runTimed(b, "docker", "run", "--rm", "--network", "none", cfg.Image, "python3", "-c", "pass"))
				b.StartTimer()
			}
			b.ReportMetric(millis(median(ours)), "median-ms/start")
			b.ReportMetric(millis(median(base)), "run-median-ms/start")
			b.ReportMetric(float64(median(ours))/float64(median(base)), "ratio-x")
		})
	}
}

// BenchmarkPoolAcquire: from Acquire on a warm pool of two to the first
// cell's result (median-ms/acquire). Each kernel is closed after use and the
// pool refilled before the next acquire, as sessions use it; ns/op is that
// whole cycle, which keeps the default -benchtime to a few iterations.
func BenchmarkPoolAcquire(b *testing.B) {
	cli := newDockerClient(b)
	cfg := testConfig(b)
	removeSessionOnCleanup(b, cli, cfg.Session)
	tr, err := NewPython(cli, cfg)
	require.NoError(b, err)
	pool := NewPool(kernel.Python, tr, 2, kernel.ClientOptions{})
	b.Cleanup(func() { _ = pool.Close() })
	ctx := context.Background()

	// waitFull waits until the pool holds all its kernels again.
	waitFull := func() {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for len(pool.warm.ready) < cap(pool.warm.ready) {
			select {
			case <-wctx.Done():
				b.Fatalf("the pool did not refill: %d of %d ready", len(pool.warm.ready), cap(pool.warm.ready))
			case <-tick.C:
			}
		}
	}
	waitFull()

	var acquires []time.Duration
	for b.Loop() {
		start := time.Now()
		k, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		res, err := k.Execute(ctx, "1+1", kernel.ExecOptions{})
		acquires = append(acquires, time.Since(start))
		if err != nil || res.Value != "2" {
			b.Fatalf("first cell: %q, %v", res.Value, err)
		}
		require.NoError(b, k.Close())
		waitFull()
	}
	b.ReportMetric(millis(median(acquires)), "median-ms/acquire")
}

// BenchmarkAttach: a kernel started through a connected client and its
// first cell answered (the removal after it is not timed), over the local
// socket and over ssh:// to the same daemon through an sshd on 127.0.0.1
// (internal/sshtest), with ssh's connection sharing and without; the
// three take turns in each iteration, so the ratios against the local
// socket are of one run:
//
//	go test ./sandbox -run '^$' -bench Attach -benchtime 10x
func BenchmarkAttach(b *testing.B) {
	srv, h, local := sshHost(b)
	noshare := h
	noshare.NoSharing = true
	paths := []struct {
		name string
		cli  *client.Client
	}{{"local", local}, {"ssh", connectSSH(b, srv, h)}, {"ssh-noshare", connectSSH(b, srv, noshare)}}
	trs := make([]*Docker, len(paths))
	for i, p := range paths {
		cfg := testConfig(b)
		removeSessionOnCleanup(b, local, cfg.Session)
		tr, err := NewPython(p.cli, cfg)
		require.NoError(b, err)
		trs[i] = tr
	}
	ctx := context.Background()
	attach := func(tr *Docker) time.Duration {
		start := time.Now()
		k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := k.Execute(ctx, "1+1", kernel.ExecOptions{})
		d := time.Since(start)
		b.StopTimer()
		cerr := k.Close()
		if err != nil || res.Value != "2" || cerr != nil {
			b.Fatalf("first cell: %q, %v; close: %v", res.Value, err, cerr)
		}
		b.StartTimer()
		return d
	}
	b.StopTimer()
	for _, tr := range trs { // warm the image's pages and the connections
		attach(tr)
	}
	b.StartTimer()
	times := make([][]time.Duration, len(paths))
	for b.Loop() {
		for i, tr := range trs {
			times[i] = append(times[i], attach(tr))
		}
	}
	base := median(times[0])
	for i, p := range paths {
		m := median(times[i])
		b.ReportMetric(millis(m), p.name+"-ms/attach")
		if i > 0 {
			b.ReportMetric(float64(m)/float64(base), p.name+"/local-x")
		}
	}
}
