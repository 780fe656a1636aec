package bench

import (
	"fmt"
	"io"
	"sync"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// askCache is what an ask knows of the transcript cache (prefixes.Cache):
// the folder and the parts of each key that every question shares.
type askCache struct {
	cache   prefixes.Cache // the zero Cache is off
	data    string         // prefixes.DataHash of the data folder
	runtime string         // where kernels run (sandbox.OpenOptions.RuntimeIdentity); "" is off
}

// usesCache says whether the ask keeps and starts from built prefixes.
func (s *AskSetup) usesCache() bool {
	return !s.cfg.NoCache && s.cfg.Rung.Prefix != agent.PrefixNone
}

// openCache finds the cache folder and the shared parts of the keys, once
// wg has waited for the Docker image's id (imageID); what goes wrong is a
// warning, and the ask goes on without the cache.
func (s *AskSetup) openCache(wg *sync.WaitGroup, imageID *string) askCache {
	if !s.usesCache() {
		return askCache{}
	}
	dir, err := s.cfg.CacheDir, error(nil)
	if dir == "" {
		dir, err = prefixes.CacheDir()
	}
	if err == nil {
		var c askCache
		if c.data, err = prefixes.DataHash(s.cfg.DataDir, s.cfg.Sandbox.FollowLinks); err == nil {
			wg.Wait()
			c.cache, c.runtime = prefixes.Cache{Dir: dir}, s.kern.opts.RuntimeIdentity(*imageID)
			return c
		}
	}
	fmt.Fprintf(s.warn, "ctxcode: warning: no prefix cache: %v\n", err)
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

// state is what the cache did for a run over prefix p (AskResult.Cache).
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
