package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// askKernel is the one kernel of an ask: started by the first question's
// run (in the background, agent.Session.Start), restarted by each later
// one's, closed at the end.
type askKernel struct {
	o       *askOptions
	lang    kernel.Language
	dataDir string
	warn    io.Writer // safe to write from the run's goroutine
	k       kernel.Kernel
	cleanup func()
}

// ready is agent.Session.Start: a fresh kernel, the first time started
// (the transport opened), afterwards restarted.
func (a *askKernel) ready(ctx context.Context) (kernel.Kernel, error) {
	if a.k != nil {
		if err := a.k.Restart(ctx); err != nil {
			return nil, fmt.Errorf("restart the kernel: %w", err)
		}
		return a.k, nil
	}
	tr, cleanup, err := a.o.sandbox.transport(ctx, a.lang, a.dataDir, a.warn)
	a.cleanup = cleanup
	if err != nil {
		return nil, err
	}
	k, err := kernel.Start(ctx, a.lang, tr, kernel.ClientOptions{})
	if err != nil {
		return nil, err
	}
	a.k = k
	return k, nil
}

func (a *askKernel) close() {
	if a.k != nil {
		_ = a.k.Close()
	}
	if a.cleanup != nil {
		a.cleanup()
	}
}

// askCache is what an ask knows of the transcript cache: the folder and
// the parts of each key that every question shares.
type askCache struct {
	cache   prefixes.Cache // the zero Cache is off
	data    string         // prefixes.DataHash of the data folder
	runtime string         // where kernels run (runtimeIdentity)
}

// usesCache says whether the ask keeps and starts from built prefixes.
func (o *askOptions) usesCache() bool { return !o.noCache && bench.NeedsPrefix(o.rung) }

// warmUp is what the first request waits for and no data decides, done in
// the background while the data loads: the Docker image's id, for the
// cache's key.
type warmUp struct {
	wg      sync.WaitGroup
	imageID string // "" when not asked for, or Docker did not answer
}

func (o *askOptions) warmUp(ctx context.Context) *warmUp {
	w := &warmUp{}
	if o.usesCache() && o.sandbox.kind != string(sandbox.KindLocal) {
		w.wg.Go(func() { w.imageID, _ = dockerImageID(ctx, o.sandbox.image) })
	}
	return w
}

// wait waits for the warm-up; it may be called more than once.
func (w *warmUp) wait() { w.wg.Wait() }

// openCache finds the cache folder and the shared parts of the keys; what
// goes wrong is a warning, and the ask goes on without the cache.
func (o *askOptions) openCache(s *askSetup, w *warmUp, warn io.Writer) askCache {
	if !o.usesCache() {
		return askCache{}
	}
	dir, err := prefixes.CacheDir()
	if err == nil {
		var c askCache
		if c.data, err = prefixes.DataHash(s.dataDir, o.sandbox.followLinks); err == nil {
			w.wait()
			c.cache, c.runtime = prefixes.Cache{Dir: dir}, o.sandbox.runtimeIdentity(s.language, w.imageID)
			return c
		}
	}
	fmt.Fprintf(warn, "ctxcode: warning: no prefix cache: %v\n", err)
	return askCache{}
}

// lookup is the key and the cached cells of prefix p (nil for none); a
// cache entry that cannot be read is a warning, and a miss.
func (c askCache) lookup(p *prefixes.Prefix, warn io.Writer) (prefixes.CacheKey, []session.Cell) {
	if p == nil || c.runtime == "" {
		return prefixes.CacheKey{}, nil
	}
	key, err := prefixes.KeyFor(p, c.data, c.runtime)
	var cells []session.Cell
	if err == nil {
		cells, err = c.cache.Load(key, p)
	}
	if err != nil {
		fmt.Fprintf(warn, "ctxcode: warning: %v; the prefix is built before the first request\n", err)
	}
	return key, cells
}

// keep stores the prefix res built, unless it was the cached one.
func (c askCache) keep(key prefixes.CacheKey, p *prefixes.Prefix, k kernel.Kernel, res *agent.Result, warn io.Writer) {
	if res == nil || res.Built == nil || res.Cache == agent.CacheVerified || c.runtime == "" {
		return
	}
	info := ""
	if i, ok := k.(interface{ Info() string }); ok {
		info = i.Info()
	}
	if err := c.cache.Store(key, p, info, res.Built); err != nil {
		fmt.Fprintf(warn, "ctxcode: warning: %v\n", err)
	}
}

// state is what the cache did for a run over prefix p, for --json: off,
// miss, hit (the cached cells were the live ones) or stale (they were not:
// a call was discarded); "" without a prefix.
func (c askCache) state(p *prefixes.Prefix, res *agent.Result) string {
	switch {
	case p == nil:
		return ""
	case c.runtime == "":
		return "off"
	case res.Cache == agent.CacheVerified:
		return "hit"
	case res.Cache == agent.CacheStale:
		return "stale"
	}
	return "miss"
}

// runtimeIdentity names where the kernels of lang will run, for the
// cache's key, before they start: the Docker image's id (imageID, not its
// tag, which may move), or the local interpreter's resolved path with its
// size and modification time; with the flags that change what a kernel
// prints. "" when it cannot tell (Docker unreachable without the host
// fallback): then nothing is cached. A shim or a PATH change can put
// another interpreter behind the same identity; the run's check catches
// that, at the cost of one discarded call.
func (s *sandboxFlags) runtimeIdentity(lang kernel.Language, imageID string) string {
	flags := ""
	if s.noIPython {
		flags += " no-ipython"
	}
	if s.kind != string(sandbox.KindLocal) {
		if imageID != "" {
			return "docker " + imageID + " " + string(lang) + flags
		}
		if !s.hostFallback {
			return ""
		}
	}
	if s.dataLink {
		flags += " data-link"
	}
	if lang == kernel.Go {
		return "local go" + flags // the driver's version names the binary
	}
	python, err := kernel.FindPython(s.python)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(python); err == nil {
		python = real
	}
	st, err := os.Stat(python)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("local %s %d %d%s", python, st.Size(), st.ModTime().UnixNano(), flags)
}

// dockerImageID is the id of image (default: the kernel image).
func dockerImageID(ctx context.Context, image string) (string, error) {
	if image == "" {
		image = sandbox.DefaultConfig().Image
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	info, err := cli.ImageInspect(ctx, image)
	if err != nil {
		return "", err
	}
	if info.ID == "" {
		return "", errors.New("the image has no id")
	}
	return info.ID, nil
}
