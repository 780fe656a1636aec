package llm

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Gate paces the HTTP attempts of the clients that share it (see
// Config.Gate), so that a provider's throttling reply to one slows them
// all, and its acceptance of the next attempts speeds them up again.
type Gate interface {
	// Wait blocks until the caller may send its next attempt, or until
	// ctx ends, when it returns ctx's error.
	Wait(ctx context.Context) error
	// Slow is told of a throttling reply: its HTTP status (429, or 503
	// with Retry-After) and the wait the client chose for it, the
	// provider's Retry-After when it sent one. It must not block.
	Slow(status int, wait time.Duration)
	// Pass is told of an attempt the provider took: one it answered with
	// a status below 500 other than 429 (a server error or an attempt
	// that got no answer tells nothing). It must not block.
	Pass()
}

// The constants of Throttle's policy.
const (
	throttleFloor  rate.Limit = 0.2              // the lowest steady rate a throttling reply sets, per second
	throttleWindow            = 10 * time.Second // the longest span over which the rate sent is measured
	throttleSpan              = time.Second      // the shortest span over which it is measured (a burst)
	throttleQuiet             = 10 * time.Second // a quiet period: one step of recovery
	throttleSteps             = 3                // steps from the lowered rate back to the one of NewThrottle
)

// Throttle is a Gate shared by the concurrent clients of one endpoint. It
// is safe for concurrent use.
//
// A throttling reply, Slow(429 or 503, d), pauses every caller: no Wait,
// from any goroutine, returns before now+d (a later Slow may push the pause
// further, never nearer). The first such reply of a pause also lowers the
// steady rate to half of r, and never below 0.2/s, where r is the lower of
// the rate in force and the rate the Throttle admitted lately (the
// admissions of the last 10s over the time since the oldest of them, at
// least 1s, so that a burst early in a run counts as the burst it was);
// replies that come during a pause extend it without lowering the rate
// again, since they answer requests sent before it.
//
// The rate recovers as fast as it slowed: after the pause, each attempt
// the provider passes (Pass, for an attempt admitted after the last
// throttling reply) and each 10s without a throttling reply is a step
// that closes a third of the gap between the lowered rate and r; the
// third step restores the rate of NewThrottle. So a few accepted requests
// undo what one 429 did.
//
// Callers wait in the order they came, one at a time at the steady rate
// (a burst of 1), so callers released together by the end of a pause go
// out spaced. Whenever the rate or the pause changes, every waiting caller
// is scheduled again, in the same order, at the rate now in force: a
// caller that queued at the lowered rate goes out at the restored one, not
// at the turn it was first given. (golang.org/x/time/rate's reservations
// cannot be moved, which is why the queue is the Throttle's own.) Slow
// ignores other statuses.
type Throttle struct {
	mu    sync.Mutex
	limit rate.Limit // the steady rate in force; rate.Inf for none
	base  rate.Limit // the rate of NewThrottle; rate.Inf for none
	// until is the end of the current pause (in the past when none).
	until time.Time
	// last is the turn of the latest caller admitted; zero when the next
	// caller need not keep a distance from it (none yet, or the rate
	// dropped since: the first caller after a pause goes at its end).
	last time.Time
	// queue holds the callers waiting, in the order they came, each with
	// its turn; moved is closed (and replaced) when their turns move.
	queue []*turn
	moved chan struct{}
	// The recovery from the last drop: the rate before it (before), the
	// rate it set (low), how many steps were taken (steps) and when the
	// next quiet period ends (next). Unused while the rate is base.
	before, low rate.Limit
	steps       int
	next        time.Time
	// fresh counts the callers admitted since the last throttling reply
	// whose answers Pass has not yet heard of: only such an answer is a
	// step of recovery, not a late one to a request sent before it.
	fresh int
	sent  []time.Time // admissions within throttleWindow, oldest first
	stats ThrottleStats
}

// turn is one waiting caller's time to go.
type turn struct{ at time.Time }

var _ Gate = (*Throttle)(nil)

// NewThrottle returns a Throttle that admits perSecond callers a second
// until it is throttled; 0 or less admits callers without a steady limit
// (rate.Inf) until then.
func NewThrottle(perSecond float64) *Throttle {
	base := rate.Limit(perSecond)
	if perSecond <= 0 || math.IsNaN(perSecond) {
		base = rate.Inf
	}
	return &Throttle{limit: base, base: base, moved: make(chan struct{})}
}

// ThrottleStats is what a Throttle has done so far.
type ThrottleStats struct {
	// Throttled is how many throttling replies Slow was told of.
	Throttled int
	// Waited is the time callers spent blocked in Wait, summed over
	// callers (two callers blocked for 1s add 2s), cancelled waits
	// included.
	Waited time.Duration
	// Limit is the steady rate now, per second; +Inf for none.
	Limit float64
	// Queued is how many callers are blocked in Wait now.
	Queued int
}

// String is the stats as one line: "3 throttling replies, callers waited
// 12.5s, limit 0.8/s" (or "no limit").
func (s ThrottleStats) String() string {
	replies := "replies"
	if s.Throttled == 1 {
		replies = "reply"
	}
	limit := "no limit"
	if !math.IsInf(s.Limit, 1) {
		limit = fmt.Sprintf("limit %.3g/s", s.Limit)
	}
	return fmt.Sprintf("%d throttling %s, callers waited %s, %s", s.Throttled, replies, s.Waited.Round(time.Millisecond), limit)
}

// Stats returns the counts so far and the rate in force.
func (t *Throttle) Stats() ThrottleStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recover(time.Now())
	s := t.stats
	s.Limit = float64(t.limit)
	if t.limit == rate.Inf { // math.MaxFloat64
		s.Limit = math.Inf(1)
	}
	s.Queued = len(t.queue)
	return s
}

// Wait queues the caller and blocks until its turn, which comes after the
// pause, if any, at the steady rate, or until ctx ends.
func (t *Throttle) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	t.recover(start)
	w := &turn{at: t.after(start, t.previous())}
	t.queue = append(t.queue, w)
	for {
		now := time.Now()
		if !now.Before(w.at) {
			t.queue = slices.DeleteFunc(t.queue, func(q *turn) bool { return q == w })
			t.admit(now, w.at)
			t.stats.Waited += now.Sub(start)
			return nil
		}
		wake := w.at
		if t.limit != t.base && t.next.Before(wake) {
			wake = t.next // a quiet period ends first: a step of recovery
		}
		moved := t.moved
		t.mu.Unlock()
		timer := time.NewTimer(wake.Sub(now))
		select {
		case <-timer.C:
		case <-moved:
		case <-ctx.Done():
		}
		timer.Stop()
		t.mu.Lock()
		t.recover(time.Now())
		if err := ctx.Err(); err != nil {
			// The turn goes to the callers behind.
			t.queue = slices.DeleteFunc(t.queue, func(q *turn) bool { return q == w })
			t.reschedule(time.Now())
			t.stats.Waited += time.Since(start)
			return err
		}
	}
}

// Slow pauses every caller for wait and lowers the steady rate, when status
// is 429 or 503; see Throttle.
func (t *Throttle) Slow(status int, wait time.Duration) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.recover(now)
	t.stats.Throttled++
	if !now.Before(t.until) {
		t.drop(now)
	}
	if end := now.Add(max(wait, 0)); end.After(t.until) {
		t.until = end
	}
	t.steps, t.next, t.fresh = 0, t.until.Add(throttleQuiet), 0
	t.reschedule(now)
}

// Pass takes a step of recovery when the attempt it answers was admitted
// after the last throttling reply, and the rate is not yet restored; see
// Throttle.
func (t *Throttle) Pass() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.recover(now)
	if t.fresh == 0 {
		return
	}
	t.fresh--
	if t.limit != t.base {
		t.step(now)
	}
}

// drop lowers the steady rate to half of the lower of the rate in force
// and the rate admitted lately, not below the floor (nor above the rate in
// force).
func (t *Throttle) drop(now time.Time) {
	t.prune(now)
	r := rate.Limit(0) // nothing admitted lately
	if n := len(t.sent); n > 0 {
		span := min(max(now.Sub(t.sent[0]), throttleSpan), throttleWindow)
		r = min(t.limit, rate.Limit(float64(n)/span.Seconds()))
	}
	low := min(max(r/2, throttleFloor), t.limit)
	t.before, t.low, t.limit = r, low, low
	t.last = time.Time{} // the first caller after the pause goes at its end
}

// recover takes the steps of recovery whose quiet periods ended by now.
func (t *Throttle) recover(now time.Time) {
	for t.limit != t.base && !now.Before(t.next) {
		t.step(t.next)
	}
}

// step raises the steady rate by a step of recovery taken at now, and
// schedules the waiting callers again at it.
func (t *Throttle) step(now time.Time) {
	t.steps++
	t.next = now.Add(throttleQuiet)
	t.limit = t.base
	if t.steps < throttleSteps {
		t.limit = max(t.low, t.low+(t.before-t.low)*rate.Limit(t.steps)/throttleSteps)
	}
	t.reschedule(now)
}

// reschedule gives the waiting callers, in order, their turns at the pause
// and rate in force, and wakes them to take them.
func (t *Throttle) reschedule(now time.Time) {
	prev := t.last
	for _, w := range t.queue {
		w.at = t.after(now, prev)
		prev = w.at
	}
	close(t.moved)
	t.moved = make(chan struct{})
}

// previous is the turn the next caller to queue keeps its distance from:
// the last caller's in the queue, else the last admitted.
func (t *Throttle) previous() time.Time {
	if n := len(t.queue); n > 0 {
		return t.queue[n-1].at
	}
	return t.last
}

// after is the first turn, from now, after the pause and at the steady
// rate after prev (zero: none to keep a distance from).
func (t *Throttle) after(now, prev time.Time) time.Time {
	at := now
	if t.until.After(at) {
		at = t.until
	}
	if !prev.IsZero() && t.limit != rate.Inf {
		if next := prev.Add(time.Duration(float64(time.Second) / float64(t.limit))); next.After(at) {
			at = next
		}
	}
	return at
}

// admit records an admission at now, for a turn at at.
func (t *Throttle) admit(now, at time.Time) {
	if at.After(t.last) {
		t.last = at
	}
	t.fresh++
	t.prune(now)
	t.sent = append(t.sent, now)
}

// prune forgets the admissions older than the window.
func (t *Throttle) prune(now time.Time) {
	cut := 0
	for cut < len(t.sent) && now.Sub(t.sent[cut]) >= throttleWindow {
		cut++
	}
	if cut > 0 {
		t.sent = append(t.sent[:0], t.sent[cut:]...)
	}
}
