package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/dockertest"
	"github.com/ctxcode/ctxcode/kernel"
)

// TestEnsureImage copies the kernel image to a second daemon that has no
// image at all, runs a kernel there, and copies nothing the second time.
func TestEnsureImage(t *testing.T) {
	local := newDockerClient(t)
	second := dockertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	ref := KernelImage()

	t.Run("missing on the source", func(t *testing.T) {
		missing := ImageRepo + ":000000000000"
		called := false
		copied, err := EnsureImage(ctx, local, second.Client, missing, func(int64, int64) { called = true })
		var ie *ImageError
		require.True(t, errors.As(err, &ie), "want an *ImageError, got %v", err)
		assert.Equal(t, missing, ie.Image)
		assert.Contains(t, err.Error(), "ctxcode sandbox build")
		assert.Contains(t, err.Error(), local.DaemonHost(), "the error names where the image was looked for")
		assert.False(t, copied)
		assert.False(t, called)
	})

	src, err := local.ImageInspect(ctx, ref)
	require.NoError(t, err)
	var calls [][2]int64
	start := time.Now()
	copied, err := EnsureImage(ctx, local, second.Client, ref, func(done, total int64) {
		calls = append(calls, [2]int64{done, total})
	})
	took := time.Since(start)
	require.NoError(t, err)
	assert.True(t, copied)
	require.NotEmpty(t, calls)
	last := calls[len(calls)-1]
	assert.Equal(t, last[0], last[1], "the last call says the copy is whole")
	assert.GreaterOrEqual(t, last[0], src.Size, "the stream holds the whole image")
	for i := 1; i < len(calls); i++ {
		assert.Greater(t, calls[i][0], calls[i-1][0], "progress goes forward")
	}
	for _, c := range calls[:len(calls)-1] {
		assert.Equal(t, src.Size, c[1], "the total is the image's size")
	}
	t.Logf("copied %s (%d MB, %d bytes streamed) to a second daemon in %s (%.0f MB/s), %d progress calls",
		ref, src.Size>>20, last[0], took.Round(time.Millisecond), float64(last[0])/(1<<20)/took.Seconds(), len(calls))

	dst, err := second.Client.ImageInspect(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, src.ID, dst.ID)

	called := false
	copied, err = EnsureImage(ctx, local, second.Client, ref, func(int64, int64) { called = true })
	require.NoError(t, err)
	assert.False(t, copied, "the second daemon has the image now")
	assert.False(t, called)

	cfg := testConfig(t)
	tr, err := NewPython(second.Client, cfg)
	require.NoError(t, err)
	k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
	require.NoError(t, err, "start a kernel on the second daemon")
	res := execCell(t, k, "import pandas\nlen(pandas.DataFrame({'a': [1, 2, 3]})) * 14", 30*time.Second)
	assert.Equal(t, kernel.StatusOK, res.Status, "error: %+v", res.Error)
	assert.Equal(t, "42", res.Value)
	onSecond, err := second.Client.ContainerList(ctx, container.ListOptions{All: true})
	require.NoError(t, err)
	assert.Len(t, onSecond, 1, "the kernel runs on the second daemon")
	assert.Empty(t, sessionContainers(t, local, cfg.Session), "and not on the local one")
	require.NoError(t, k.Close())

	onSecond, err = second.Client.ContainerList(ctx, container.ListOptions{All: true})
	require.NoError(t, err)
	assert.Empty(t, onSecond, "a container is left on the second daemon")
	assert.Empty(t, sessionContainers(t, local, cfg.Session), "a container is left on the local daemon")
}

// TestEnsureImageCut copies the kernel image over TCP with TLS to a daemon
// in a network namespace, cuts the link in the middle of the copy and
// cancels it, then copies again once the link is back: the cut copy left
// no image behind that would make the second one skip.
func TestEnsureImageCut(t *testing.T) {
	local := newDockerClient(t)
	second := dockertest.StartInNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	ref := KernelImage()

	// The copy runs on; once bytes flow, this goroutine cuts the link and
	// then cancels the copy, which is stuck on a link that drops all.
	cutCtx, cut := context.WithCancel(ctx)
	defer cut()
	flowing := make(chan int64, 1)
	type result struct {
		copied bool
		err    error
	}
	ended := make(chan result, 1)
	go func() {
		copied, err := EnsureImage(cutCtx, local, second.Client, ref, func(done, total int64) {
			select {
			case flowing <- done:
			default:
			}
		})
		ended <- result{copied, err}
	}()
	var cutAt int64
	select {
	case cutAt = <-flowing:
	case r := <-ended:
		t.Fatalf("the copy ended before any progress: %+v", r)
	}
	second.LinkDown(t)
	cut()
	r := <-ended
	require.Error(t, r.err, "a copy cut after %d bytes ended without an error", cutAt)
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.False(t, r.copied)
	second.LinkUp(t)
	ok, err := ImageExists(ctx, second.Client, ref)
	require.NoError(t, err)
	assert.False(t, ok, "a cut copy left the image tagged")

	start := time.Now()
	copied, err := EnsureImage(ctx, local, second.Client, ref, nil)
	took := time.Since(start)
	require.NoError(t, err)
	assert.True(t, copied)
	t.Logf("copied %s over TCP with TLS to %s in %s, after a copy cut at %d MB", ref, second.Host, took.Round(time.Millisecond), cutAt>>20)
	src, err := local.ImageInspect(ctx, ref)
	require.NoError(t, err)
	dst, err := second.Client.ImageInspect(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, src.ID, dst.ID)
}
