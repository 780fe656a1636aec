package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// idleTransport starts no kernel: its starts wait for their context to end.
type idleTransport struct{}

func (idleTransport) Start(ctx context.Context) (kernel.Conn, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// manyFolders is a run of tasks each over a folder of its own, in
// conditions A and B.
func manyFolders(t *testing.T, tasks, reps, parallel int) *Run {
	t.Helper()
	p, err := prefixes.Parse("p.py", []byte("# name: p\n# language: python\n# %%\nx = 1\n"))
	require.NoError(t, err)
	r := &Run{
		Models:     []Model{{ModelInfo: ModelInfo{Name: "m"}}},
		Conditions: []Condition{{Name: "A", Protocol: session.CLI}, {Name: "B", Protocol: session.Eval, Prefix: p}},
		Parallel:   parallel,
		TaskData:   map[string]*Folder{},
		Language:   kernel.Python,
	}
	r.Spec.Reps, r.Spec.OrderSeed = reps, 3
	for i := range tasks {
		id := fmt.Sprintf("t%d", i)
		f := &Folder{Dir: "/data/" + id, Transport: idleTransport{}, Prefixes: []*prefixes.Prefix{nil, p}}
		r.Tasks = append(r.Tasks, datasets.Task{ID: id, Question: "q " + id})
		r.Folders = append(r.Folders, f)
		r.TaskData[id] = f
	}
	return r
}

// TestPlanPoolsOfManyFolders: each (folder, prefix) has its pool, and a
// pool lives for one stretch of the order: a folder asked again in the
// next rep, far later, gets a new one.
func TestPlanPoolsOfManyFolders(t *testing.T) {
	r := manyFolders(t, 20, 2, 2)
	todo, total, err := r.plan(context.Background(), &Log{Last: map[Key]Trial{}})
	require.NoError(t, err)
	assert.Equal(t, 20*2*2, total)
	refs := map[*poolRef]bool{}
	for _, w := range todo {
		refs[w.pool] = true
		assert.Same(t, r.TaskData[w.key.Task], w.data, "%s runs over its task's folder", w.key)
		assert.Same(t, w.data, w.pool.data)
		assert.Same(t, w.data.Prefixes[w.cond], w.pool.prefix)
	}
	assert.Len(t, refs, 20*2*2, "a pool per folder, prefix and rep")
	for ref := range refs {
		assert.Equal(t, 1, ref.left, "one trial each: A and B of one task, in one rep")
	}

	one := manyFolders(t, 1, 3, 2)
	todo, _, err = one.plan(context.Background(), &Log{Last: map[Key]Trial{}})
	require.NoError(t, err)
	refs = map[*poolRef]bool{}
	for _, w := range todo {
		refs[w.pool] = true
	}
	assert.Len(t, refs, 2, "one folder: one pool per prefix for the whole run, as before")
}

// TestSchedulerBudget: with trials over many folders, the pools open at
// once keep at most parallel kernels in all.
func TestSchedulerBudget(t *testing.T) {
	r := manyFolders(t, 12, 1, 3)
	todo, _, err := r.plan(context.Background(), &Log{Last: map[Key]Trial{}})
	require.NoError(t, err)
	s := &scheduler{run: r, todo: todo, parallel: 3, npools: 24, pools: map[*poolRef]bool{}, budget: 3}
	defer s.closeAll()
	ctx := context.Background()
	for range todo {
		w, ok := s.next(ctx)
		require.True(t, ok)
		held := 0
		s.mu.Lock()
		for ref := range s.pools {
			held += min(ref.size, ref.left)
		}
		s.mu.Unlock()
		assert.LessOrEqual(t, held, 3, "after %s", w.key)
		s.taken(w.pool)
	}
}
