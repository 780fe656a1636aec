package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestOrderInterleaves: the first fifth of a run's trials (5 conditions x
// 10 tasks) asks tasks in every condition; every key comes once; the same
// seed gives the same order and another seed another.
func TestOrderInterleaves(t *testing.T) {
	conds := []string{"A", "B", "B0", "D", "C"}
	var tasks []string
	for i := 1; i <= 10; i++ {
		tasks = append(tasks, fmt.Sprintf("t%d", i))
	}
	models := []string{"m1", "m2"}
	order := Order(7, models, conds, tasks, 2)
	require.Len(t, order, 2*5*10*2)
	seen := map[Key]bool{}
	for _, k := range order {
		assert.False(t, seen[k], "%s twice", k)
		seen[k] = true
	}
	first := map[string]bool{}
	for _, k := range order[:len(order)/5] {
		first[k.Condition] = true
		assert.Equal(t, 1, k.Rep, "rep 2 starts once rep 1 is done")
	}
	assert.Len(t, first, len(conds), "the first fifth spans every condition: %v", first)
	// Each task is asked in every (model, condition) before the next.
	for i := 0; i < len(order); i += len(models) * len(conds) {
		block := order[i : i+len(models)*len(conds)]
		for _, k := range block {
			assert.Equal(t, block[0].Task, k.Task, "trials %d to %d", i, i+len(block))
		}
	}

	assert.Equal(t, order, Order(7, models, conds, tasks, 2), "the same seed, the same order")
	assert.NotEqual(t, order, Order(8, models, conds, tasks, 2), "another seed, another order")
	// The conditions do not come in one fixed order within each task.
	firsts := map[string]bool{}
	for i := 0; i < len(order); i += len(models) * len(conds) {
		firsts[order[i].Condition] = true
	}
	assert.Greater(t, len(firsts), 1, "every task starts with the same condition")
}

// TestExecuteRunsInTheSeedsOrderAndAResumeKeepsIt: one trial at a time, a
// run's lines come in Order's order; stopped after a few trials and
// resumed, the lines of both parts are that order still.
func TestExecuteRunsInTheSeedsOrderAndAResumeKeepsIt(t *testing.T) {
	b := newBenchRun(t, 1, "A", "B", "D")
	b.spec.OrderSeed = 42
	want := b.order()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &recorder{}
	var n atomic.Int32
	obs.onFinish = func(Trial) {
		if n.Add(1) == 4 {
			cancel() // the worker takes no trial after this one
		}
	}
	l := b.open(t)
	_, err := execute(t, ctx, b.run(nil, obs), l)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, l.Trials, 4)
	require.NoError(t, l.Close())

	l = b.open(t)
	assert.Equal(t, int64(42), l.Spec.OrderSeed, "run.json keeps the seed")
	out, err := execute(t, context.Background(), b.run(nil, &recorder{}), l)
	require.NoError(t, err)
	assert.Equal(t, 4, out.Skipped)
	assert.Equal(t, want, keysOf(l.Trials), "the resumed run went on in the seed's order")
}

// slowTransport holds every kernel's start for delay before it starts it.
type slowTransport struct {
	kernel.Transport
	delay time.Duration
}

func (s *slowTransport) Start(ctx context.Context) (kernel.Conn, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Transport.Start(ctx)
}

// TestPoolWaitIsApartFromWall: a trial whose kernel is slow to come waits
// for the pool, and that wait is the line's pool_wait_ms, not part of its
// wall_ms (the trial's own time).
func TestPoolWaitIsApartFromWall(t *testing.T) {
	b := newBenchRun(t, 1, "B")
	const delay = 400 * time.Millisecond
	r := b.run(nil, nil)
	r.Tasks = r.Tasks[:1]
	b.spec.TaskList = r.Tasks
	r.Spec = b.spec
	r.Transport = &slowTransport{Transport: b.kernels.tr, delay: delay}
	l := b.open(t)
	began := time.Now()
	_, err := execute(t, context.Background(), r, l)
	require.NoError(t, err)
	elapsed := time.Since(began)
	require.Len(t, l.Trials, 1)
	tr := l.Trials[0]
	// (The start's timer may begin a moment before the trial asks.)
	assert.GreaterOrEqual(t, tr.PoolWaitMS, (delay - 50*time.Millisecond).Milliseconds(), "the trial waited for its kernel's start")
	assert.LessOrEqual(t, tr.PoolWaitMS+tr.WallMS, elapsed.Milliseconds(), "the wait is not also in wall")
	assert.Less(t, tr.KernelMS, delay.Milliseconds(), "the kernel was ready when the trial's own time began")
	line := trialLine(t, tr)
	assert.True(t, strings.Contains(line, `"pool_wait_ms":`), line)
}

// TestPoolSize: a pool gets its share of parallel + pools kernels, at
// least two (one when one trial runs at a time), at most its trials left.
func TestPoolSize(t *testing.T) {
	for _, tc := range []struct {
		parallel, pools int
		share           float64
		left, want      int
	}{
		{2, 3, 0.6, 100, 3}, // pm's B, D and C of the ladder
		{2, 3, 0.2, 100, 2}, // A's, B0's: not left one builder
		{16, 3, 0.6, 100, 11},
		{16, 3, 0.2, 100, 4},
		{16, 1, 1, 3, 3}, // never more than the trials left
		{1, 3, 0.01, 5, 1},
		{16, 3, 0.01, 1, 1},
	} {
		assert.Equal(t, tc.want, poolSize(tc.parallel, tc.pools, tc.share, tc.left), "%+v", tc)
	}
}
