package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/docker/docker/client"
)

// progressStep is how many bytes pass between two calls of EnsureImage's
// progress function.
const progressStep = 4 << 20

// EnsureImage makes sure the daemon to has the image ref, copying it from
// the daemon from when it does not, and reports whether it copied. The copy
// streams `docker save` on one daemon into `docker load` on the other
// through their APIs: nothing is written to this machine's disk, and
// neither daemon needs a registry or a route to the other. It is how a host
// without the kernel image gets it (KernelImage is content-addressed, so an
// image of that tag on the other daemon is the same image).
//
// progress, when not nil, is called every few MiB with the bytes copied so
// far and the image's size as from reports it; the stream is a little
// larger (tar headers, the image's configuration), so done may pass total
// near the end. A last call, once the copy succeeded, has total == done.
// It is not called when to has the image already.
//
// When from lacks the image too, the error is an *ImageError (build the
// kernel image with `ctxcode sandbox build`).
func EnsureImage(ctx context.Context, from, to *client.Client, ref string, progress func(done, total int64)) (copied bool, err error) {
	if ok, err := ImageExists(ctx, to, ref); err != nil || ok {
		return false, err
	}
	src, err := from.ImageInspect(ctx, ref)
	if isNotFound(err) {
		return false, fmt.Errorf("copy %s to %s: not on %s either: %w", ref, to.DaemonHost(), from.DaemonHost(), &ImageError{Image: ref})
	}
	if err != nil {
		return false, fmt.Errorf("inspect image %s on %s: %w", ref, from.DaemonHost(), err)
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("copy %s from %s to %s: %w", ref, from.DaemonHost(), to.DaemonHost(), err)
	}

	saved, err := from.ImageSave(ctx, []string{ref})
	if err != nil {
		return fail(fmt.Errorf("save: %w", err))
	}
	defer saved.Close()
	counted := &countingReader{r: saved, total: src.Size, progress: progress}
	defer counted.finish() // no report after EnsureImage returns
	loaded, err := to.ImageLoad(ctx, counted, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fail(fmt.Errorf("load: %w", err))
	}
	err = readJSONMessages(loaded.Body)
	_ = loaded.Body.Close()
	sent, saveErr := counted.finish()
	if saveErr != nil && !errors.Is(saveErr, io.EOF) {
		return fail(fmt.Errorf("save: %w", saveErr))
	}
	if err != nil {
		return fail(fmt.Errorf("load: %w", err))
	}

	// A load that read a cut stream can end without an error and without
	// the image; and an image of another content under the tag would run
	// other code than the kernel's.
	dst, err := to.ImageInspect(ctx, ref)
	if isNotFound(err) {
		return fail(fmt.Errorf("the load ended without the image (%d bytes sent)", sent))
	}
	if err != nil {
		return fail(fmt.Errorf("inspect after load: %w", err))
	}
	if dst.ID != src.ID {
		return fail(fmt.Errorf("the copy has ID %s, the original %s", dst.ID, src.ID))
	}
	progress(sent, sent)
	return true, nil
}

// countingReader counts what is read through it, calls progress every
// progressStep bytes, and keeps the error the source ended with. The HTTP
// client may still read a request's body after the response came back, so
// what it keeps is behind a lock, and after finish it calls progress no
// more.
type countingReader struct {
	r        io.Reader
	total    int64
	progress func(done, total int64)

	mu       sync.Mutex
	done     int64
	reported int64
	err      error
	finished bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return 0, io.ErrClosedPipe
	}
	c.done += int64(n)
	if c.done-c.reported >= progressStep {
		c.reported = c.done
		c.progress(c.done, c.total)
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// finish stops the reports and returns the bytes read and the source's
// error.
func (c *countingReader) finish() (done int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished = true
	return c.done, c.err
}
