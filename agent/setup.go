package agent

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// A run's set-up in the background (Session.Start, Session.Cached): the
// kernel starts and the prefix builds in one goroutine while the first
// request may already be on its way. The rule that keeps every output
// real: the first call is the only thing that may happen before the
// set-up is settled, and settling (waiting for it, then checking the
// cached cells against the live ones) comes before anything is done with
// the call's reply, or with its failure.

// setup is the kernel's start and the prefix's build, running in the
// background. Its fields are the goroutine's until done is closed.
type setup struct {
	done   chan struct{}
	cancel context.CancelFunc
	k      kernel.Kernel
	build  bool // the prefix is built (Session.Cells was nil)
	cells  []session.Cell
	err    error
	at     time.Time // when it ended
}

// startSetup starts what the session still needs: the kernel (with
// Session.Start) and the prefix's build. Call stop before the run returns.
func (r *runner) startSetup(ctx context.Context) *setup {
	s := r.s
	sctx, cancel := context.WithCancel(ctx)
	st := &setup{done: make(chan struct{}), cancel: cancel, k: s.Kernel, build: s.Prefix != nil && s.Cells == nil}
	start, prefix, opts := s.Start, s.Prefix, r.execOptions()
	go func() {
		defer close(st.done)
		defer func() { st.at = time.Now() }()
		if st.k == nil {
			k, err := start(sctx)
			if err != nil {
				st.err = err // Start leaves no kernel behind when it fails
				return
			}
			st.k = k
		}
		if st.build {
			st.cells, st.err = prefixes.Build(sctx, st.k, prefix, opts)
		}
	}()
	r.setup = st
	return st
}

// stop ends the set-up if it still runs and waits for it; the session gets
// the kernel it started, so that the caller can close it.
func (st *setup) stop(s *Session) {
	st.cancel()
	<-st.done
	if s.Kernel == nil {
		s.Kernel = st.k
	}
}

// settle waits for the set-up, takes the kernel and the live cells into the
// session, checks them against the cached ones (Result.Cache) and writes
// the prefix event. Its error is the set-up's: a kernel that would not
// start, a prefix that does not build, a cancelled context.
func (r *runner) settle(ctx context.Context) error {
	st := r.setup
	if st == nil {
		return nil
	}
	select {
	case <-st.done:
	default:
		r.progress("waiting for the kernel")
		select {
		case <-st.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.setup = nil
	s := r.s
	if s.Kernel == nil {
		s.Kernel = st.k
	}
	if st.err != nil {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w, as the kernel was set up: %v", err, st.err) // the cancel's, not the prefix's
		}
		return st.err
	}
	if s.Prefix == nil {
		if err := checkShell(s.Kernel); err != nil {
			return err
		}
	}
	r.res.Setup = st.at.Sub(r.started)
	if st.build {
		s.Cells, r.res.Built = st.cells, st.cells
		if s.Cached != nil {
			r.res.Cache, r.staleWhy = CacheVerified, r.differs(s.Cached, s.Cells)
			if r.staleWhy != "" {
				r.res.Cache = CacheStale
			}
		}
		r.in.Transcript.Cells = s.Cells
	}
	r.emitPrefix()
	return nil
}

// differs says how the first request over the cached cells differs from
// the one over the live cells, as the model reads them (the request's
// bytes, in this run's protocol and output budget): "" when it does not.
func (r *runner) differs(cached, live []session.Cell) string {
	render := func(cells []session.Cell) []byte {
		in := r.in
		in.Transcript.Cells, in.New = cells, nil
		req, err := session.Render(r.cfg.Protocol, in)
		if err != nil {
			return nil // Run rendered this input already
		}
		return req.JSON()
	}
	if bytes.Equal(render(cached), render(live)) {
		return ""
	}
	lang := r.in.Transcript.Language
	for i := range min(len(cached), len(live)) {
		if cached[i].Text(lang, r.cfg.OutputBudget) != live[i].Text(lang, r.cfg.OutputBudget) {
			return fmt.Sprintf("the output of prefix cell %d differs from the cached one", i+1)
		}
	}
	return "the prefix's cells differ from the cached ones"
}

// emitPrefix writes the prefix event: the built cells with the kernel's own
// results, so that a trajectory alone shows the session as the model met
// it (ctxcode notebook), and what became of the cached cells.
func (r *runner) emitPrefix() {
	cells := r.s.Cells
	results := make([]session.PrefixCell, len(cells))
	for i, c := range cells {
		results[i] = session.PrefixCell{Code: c.Code, Result: c.Result}
	}
	r.tr.Prefix(session.PrefixEvent{Cells: len(cells), SetupMS: r.res.Setup.Milliseconds(), Cached: string(r.res.Cache),
		Stale: r.staleWhy, Results: results})
}

// call makes one model call within the budgets (send); ok is false when
// the run ended (its status is set). The first call of a run whose set-up
// is still running settles it once the call is back: when the live prefix
// differs from the cached one the request was rendered over, whatever came
// back is discarded (discard) and the call made again over the live cells.
func (r *runner) call(ctx context.Context) (llm.Reply, bool, error) {
	reply, ok, ev, err := r.send(ctx)
	if err == nil && r.setup != nil {
		if err := r.settle(ctx); err != nil {
			if ev != nil {
				r.tr.Call(*ev) // it was made, and is in the cost
			}
			return reply, false, err
		}
		if r.res.Cache == CacheStale {
			r.discard(ev)
			reply, ok, ev, err = r.send(ctx)
		}
	}
	if ev != nil {
		r.tr.Call(*ev)
	}
	return reply, ok, err
}

// discard forgets the outcome of the first call, made over stale cached
// cells (ev nil when a budget stopped it before it was sent), and counts
// what it cost.
func (r *runner) discard(ev *session.CallEvent) {
	r.res.Status, r.res.Err = "", nil
	r.lastPrompt, r.lastEstimate = 0, 0
	if ev == nil {
		return
	}
	r.res.Turns--
	r.res.Discarded++
	r.res.DiscardedUsage.Add(ev.Usage)
	r.tr.Discarded(session.DiscardedEvent{CallEvent: *ev, Reason: r.staleWhy + ": the reply was sent over the cached outputs, so it is discarded unread and the request is sent again over the live ones"})
}
