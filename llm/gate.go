package llm

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Gate paces the HTTP attempts of the clients that share it (see
// Config.Gate), so that a provider's throttling reply to one slows them
// all.
type Gate interface {
	// Wait blocks until the caller may send its next attempt, or until
	// ctx ends, when it returns ctx's error.
	Wait(ctx context.Context) error
	// Slow is told of a throttling reply: its HTTP status (429, or 503
	// with Retry-After) and the wait the client chose for it, the
	// provider's Retry-After when it sent one. It must not block.
	Slow(status int, wait time.Duration)
}

// The constants of Throttle's policy.
const (
	throttleFloor  rate.Limit = 0.2              // the lowest steady rate a throttling reply sets, per second
	throttleWindow            = 10 * time.Second // the span over which the rate sent is measured
	throttleQuiet             = 10 * time.Second // a quiet period: one step of recovery
	throttleSteps             = 5                // quiet periods from the lowered rate back to the one before
)

// Throttle is a Gate shared by the concurrent clients of one endpoint. It
// is safe for concurrent use.
//
// A throttling reply, Slow(429 or 503, d), pauses every caller: no Wait,
// from any goroutine, returns before now+d (a later Slow may push the pause
// further, never nearer). The first such reply of a pause also lowers the
// steady rate to half of r, and never below 0.2/s, where r is the lower of
// the rate in force and the rate the Throttle admitted over the last 10s
// (admissions/10s); replies that come during a pause extend it without
// lowering the rate again, since they answer requests sent before it.
// After the pause, each 10s without a throttling reply closes a fifth of
// the gap between the lowered rate and r; the fifth quiet period restores
// the rate of NewThrottle. The steady rate admits one caller at a time
// (a burst of 1), so callers released together by the end of a pause go
// out spaced; a caller already waiting for its turn when the rate drops
// queues again at the new rate. Slow ignores other statuses.
type Throttle struct {
	mu   sync.Mutex
	lim  *rate.Limiter
	base rate.Limit // the rate of NewThrottle; rate.Inf for none
	// until is the end of the current pause (in the past when none).
	until time.Time
	// The recovery from the last drop: the rate before it (before), the
	// rate it set (low), how many quiet periods have passed (steps) and
	// when the next one ends (next). Unused while the rate is base.
	before, low rate.Limit
	steps       int
	next        time.Time
	sent        []time.Time // admissions within throttleWindow, oldest first
	stats       ThrottleStats
}

var _ Gate = (*Throttle)(nil)

// NewThrottle returns a Throttle that admits perSecond callers a second
// until it is throttled; 0 or less admits callers without a steady limit
// (rate.Inf) until then.
func NewThrottle(perSecond float64) *Throttle {
	base := rate.Limit(perSecond)
	if perSecond <= 0 || math.IsNaN(perSecond) {
		base = rate.Inf
	}
	return &Throttle{lim: rate.NewLimiter(base, 1), base: base}
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
	s.Limit = float64(t.lim.Limit())
	if t.lim.Limit() == rate.Inf { // math.MaxFloat64
		s.Limit = math.Inf(1)
	}
	return s
}

// Wait blocks until the pause, if any, is over and the steady rate admits
// the caller, or until ctx ends.
func (t *Throttle) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.mu.Lock()
		now := time.Now()
		t.recover(now)
		var res *rate.Reservation
		lim := t.lim
		d := t.until.Sub(now)
		if d <= 0 {
			res = lim.ReserveN(now, 1)
			if d = res.DelayFrom(now); d <= 0 {
				t.admit(now)
				t.mu.Unlock()
				return nil
			}
		}
		t.mu.Unlock()

		slept, err := sleep(ctx, d)
		t.mu.Lock()
		t.stats.Waited += slept
		if err != nil {
			t.mu.Unlock()
			if res != nil {
				res.Cancel()
			}
			return err
		}
		if res != nil {
			if now := time.Now(); lim == t.lim && !now.Before(t.until) {
				t.admit(now)
				t.mu.Unlock()
				return nil
			}
			// A throttling reply came while this caller waited for its
			// turn: the turn is void, and it queues again.
		}
		t.mu.Unlock()
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
	t.steps, t.next = 0, t.until.Add(throttleQuiet)
}

// drop lowers the steady rate to half of the lower of the rate in force
// and the rate admitted over the last window, not below the floor (nor
// above the rate in force).
func (t *Throttle) drop(now time.Time) {
	t.prune(now)
	r := min(t.lim.Limit(), rate.Limit(float64(len(t.sent))/throttleWindow.Seconds()))
	low := min(max(r/2, throttleFloor), t.lim.Limit())
	t.before, t.low = r, low
	// A fresh limiter, not SetLimitAt: the turns reserved at the old rate
	// are void (their callers queue again, see Wait), and SetLimitAt from
	// rate.Inf may leave the token count undefined (Inf·0).
	t.lim = rate.NewLimiter(low, 1)
}

// recover takes the steps of recovery whose quiet periods ended by now.
func (t *Throttle) recover(now time.Time) {
	for t.lim.Limit() != t.base && !now.Before(t.next) {
		t.steps++
		t.next = t.next.Add(throttleQuiet)
		limit := t.base
		if t.steps < throttleSteps {
			limit = max(t.low, t.low+(t.before-t.low)*rate.Limit(t.steps)/throttleSteps)
		}
		t.lim.SetLimitAt(now, limit)
	}
}

// admit records an admission at now.
func (t *Throttle) admit(now time.Time) {
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
