package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
)

// Pool keeps kernels started ahead, each with its kernel ready, so that a
// session gets one without paying for a container start. Each kernel serves
// one session only: Acquire hands it over for good (the caller closes it)
// and the pool starts a replacement in the background. Close drains the
// pool and stops what it holds.
type Pool struct {
	warm *WarmPool[struct{}]
}

// NewPool starts size kernels over tr in the background.
func NewPool(lang kernel.Language, tr kernel.Transport, size int, opts kernel.ClientOptions) *Pool {
	return &Pool{warm: NewWarmPool[struct{}](lang, tr, size, 0, opts, nil)}
}

// Acquire returns a ready kernel, waiting for one if none is ready; see
// WarmPool.Acquire.
func (p *Pool) Acquire(ctx context.Context) (*kernel.Client, error) {
	k, _, err := p.warm.Acquire(ctx)
	return k, err
}

// Ready is how many kernels wait in the pool, started (and prepared) and
// not yet taken.
func (p *Pool) Ready() int { return p.warm.Ready() }

// Close stops the refilling and every kernel still in the pool.
func (p *Pool) Close() error { return p.warm.Close() }

// Prepare readies a kernel just started for the session that will take it
// (a prefix built, say) and returns what that session needs to know of it.
// An error drops the kernel: the pool closes it.
type Prepare[T any] func(ctx context.Context, k *kernel.Client) (T, error)

// WarmPool is a Pool whose kernels are each prepared before they are ready,
// so that a session that takes one starts where the preparation left off:
// a benchmark's trial takes a kernel whose prefix is already executed.
type WarmPool[T any] struct {
	lang    kernel.Language
	tr      kernel.Transport
	opts    kernel.ClientOptions
	prepare Prepare[T]

	ready    chan warm[T]
	tokens   chan struct{} // one per kernel the pool may start
	failures chan error

	mu     sync.Mutex // guards left, closed and the start of fillers
	left   int        // kernels still to start when the pool has a total; < 0: no total
	closed bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

type warm[T any] struct {
	k *kernel.Client
	v T
}

// ErrPoolClosed is returned by Acquire on a closed pool.
var ErrPoolClosed = errors.New("kernel pool is closed")

// NewWarmPool starts size kernels over tr in the background, up to size at
// a time, and runs prepare (nil: none) on each before it is ready. With a
// total above 0 it starts that many kernels in all (a kernel that failed
// to start, or died while it waited, does not count) and no more, so that
// a caller that knows how many it needs wastes no start; an Acquire beyond
// the total waits until its context ends.
func NewWarmPool[T any](lang kernel.Language, tr kernel.Transport, size, total int, opts kernel.ClientOptions, prepare Prepare[T]) *WarmPool[T] {
	size = max(size, 1)
	if total > 0 {
		size = min(size, total)
	} else {
		total = -1
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &WarmPool[T]{lang: lang, tr: tr, opts: opts, prepare: prepare, ctx: ctx, cancel: cancel, left: total,
		ready: make(chan warm[T], size), tokens: make(chan struct{}, size), failures: make(chan error, 1)}
	for range size {
		p.tokens <- struct{}{}
	}
	// One filler per kernel: starts overlap, so a pool emptied at once
	// refills in about one start's time, not size of them.
	for range size {
		p.wg.Add(1)
		go p.fill(ctx)
	}
	return p
}

// claim takes one start from the total; false when none is left.
func (p *WarmPool[T]) claim() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.left < 0:
		return true
	case p.left == 0:
		return false
	}
	p.left--
	return true
}

// unclaim gives back a start that did not make a kernel to hand out, and
// starts a filler for it when the others may have ended.
func (p *WarmPool[T]) unclaim(refill bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left < 0 {
		return
	}
	p.left++
	if refill && !p.closed {
		p.wg.Add(1)
		go p.fill(p.ctx)
	}
}

// fill starts and prepares a kernel for every token it takes, backing off
// after a failure.
func (p *WarmPool[T]) fill(ctx context.Context) {
	defer p.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.tokens:
		}
		if !p.claim() {
			p.tokens <- struct{}{} // for a filler started by unclaim
			return
		}
		w, err := p.start(ctx)
		if err != nil {
			p.unclaim(false) // this filler tries again
			p.tokens <- struct{}{}
			if ctx.Err() != nil {
				return
			}
			select {
			case p.failures <- err:
			default:
			}
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		select { // a failure from before this success is stale
		case <-p.failures:
		default:
		}
		p.ready <- w // never blocks: a token was taken for it
	}
}

func (p *WarmPool[T]) start(ctx context.Context) (warm[T], error) {
	k, err := kernel.Start(ctx, p.lang, p.tr, p.opts)
	if err != nil {
		return warm[T]{}, err
	}
	w := warm[T]{k: k}
	if p.prepare != nil {
		if w.v, err = p.prepare(ctx, k); err != nil {
			_ = k.Close()
			return warm[T]{}, err
		}
	}
	return w, nil
}

// Acquire returns a ready kernel and what its preparation returned,
// waiting for one if none is ready. The caller owns the kernel and must
// Close it. Each kernel is pinged before it is handed out: one that died
// while it waited in the pool (a docker kill, a prune from elsewhere) is
// dropped for the next. A start or preparation failure is returned at
// once.
func (p *WarmPool[T]) Acquire(ctx context.Context) (*kernel.Client, T, error) {
	for {
		w, err := p.take(ctx)
		if err != nil {
			return nil, w.v, err
		}
		if w.k.Ping(ctx, 5*time.Second) == nil {
			return w.k, w.v, nil
		}
		_ = w.k.Close()
		p.unclaim(true) // dead while it waited: it does not count
		if err := ctx.Err(); err != nil {
			var zero T
			return nil, zero, err
		}
	}
}

func (p *WarmPool[T]) take(ctx context.Context) (warm[T], error) {
	select {
	case w, ok := <-p.ready:
		if !ok {
			return w, ErrPoolClosed
		}
		p.tokens <- struct{}{}
		return w, nil
	default:
	}
	select {
	case w, ok := <-p.ready:
		if !ok {
			return w, ErrPoolClosed
		}
		p.tokens <- struct{}{}
		return w, nil
	case err := <-p.failures:
		return warm[T]{}, err
	case <-ctx.Done():
		return warm[T]{}, ctx.Err()
	}
}

// Ready is how many kernels wait in the pool, started, prepared and not yet
// taken. A failure before the start of one of them is stale by then.
func (p *WarmPool[T]) Ready() int { return len(p.ready) }

// Close stops the refilling and every kernel still in the pool, waiting
// for a start under way to end.
func (p *WarmPool[T]) Close() error {
	var errs []error
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.cancel()
		p.wg.Wait()
		close(p.ready)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range p.ready { // in parallel: each close waits for its container
			wg.Go(func() {
				err := w.k.Close()
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
		wg.Wait()
	})
	return errors.Join(errs...)
}
