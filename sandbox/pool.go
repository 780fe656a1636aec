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
	lang kernel.Language
	tr   kernel.Transport
	opts kernel.ClientOptions

	ready    chan *kernel.Client
	tokens   chan struct{} // one per kernel the pool may start
	failures chan error

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// ErrPoolClosed is returned by Acquire on a closed pool.
var ErrPoolClosed = errors.New("kernel pool is closed")

// NewPool starts size kernels over tr in the background.
func NewPool(lang kernel.Language, tr kernel.Transport, size int, opts kernel.ClientOptions) *Pool {
	size = max(size, 1)
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{lang: lang, tr: tr, opts: opts, cancel: cancel,
		ready: make(chan *kernel.Client, size), tokens: make(chan struct{}, size), failures: make(chan error, 1)}
	for range size {
		p.tokens <- struct{}{}
	}
	p.wg.Add(1)
	go p.fill(ctx)
	return p
}

// fill starts a kernel for every token, one at a time, backing off after a
// failure.
func (p *Pool) fill(ctx context.Context) {
	defer p.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.tokens:
		}
		k, err := kernel.Start(ctx, p.lang, p.tr, p.opts)
		if err != nil {
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
		p.ready <- k // never blocks: a token was taken for it
	}
}

// Acquire returns a ready kernel, waiting for one if none is ready. The
// caller owns it and must Close it. Each kernel is pinged before it is
// handed out: one that died while it waited in the pool (a docker kill, a
// prune from elsewhere) is dropped for the next. A start failure is
// returned at once.
func (p *Pool) Acquire(ctx context.Context) (*kernel.Client, error) {
	for {
		k, err := p.take(ctx)
		if err != nil {
			return nil, err
		}
		if k.Ping(ctx, 5*time.Second) == nil {
			return k, nil
		}
		_ = k.Close()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func (p *Pool) take(ctx context.Context) (*kernel.Client, error) {
	select {
	case k, ok := <-p.ready:
		if !ok {
			return nil, ErrPoolClosed
		}
		p.tokens <- struct{}{}
		return k, nil
	default:
	}
	select {
	case k, ok := <-p.ready:
		if !ok {
			return nil, ErrPoolClosed
		}
		p.tokens <- struct{}{}
		return k, nil
	case err := <-p.failures:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops the refilling and every kernel still in the pool.
func (p *Pool) Close() error {
	var errs []error
	p.once.Do(func() {
		p.cancel()
		p.wg.Wait()
		close(p.ready)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for k := range p.ready { // in parallel: each close waits for its container
			wg.Go(func() {
				err := k.Close()
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
		wg.Wait()
	})
	return errors.Join(errs...)
}
