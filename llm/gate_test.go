package llm

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// The Throttle tests run in a synctest bubble: its clock is fake and
// moves only when every goroutine of the bubble is blocked, so the times
// they compare are exact and none is a wall-time bound.

// waitN admits n callers one after the other.
func waitN(t *testing.T, th *Throttle, n int) {
	t.Helper()
	for range n {
		require.NoError(t, th.Wait(context.Background()))
	}
}

// timeWait is how long one Wait blocks.
func timeWait(t *testing.T, th *Throttle) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, th.Wait(context.Background()))
	return time.Since(start)
}

func TestThrottleRateDropsAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottle(4)
		waitN(t, th, 40) // 4/s, the last at 9.75s
		assert.InDelta(t, 4.0, th.Stats().Limit, 1e-9)

		th.Slow(http.StatusTooManyRequests, 2*time.Second)
		s := th.Stats()
		assert.Equal(t, 1, s.Throttled)
		assert.InDelta(t, 2.0, s.Limit, 1e-9, "half the 4/s admitted over the last 10s")
		assert.Equal(t, 2*time.Second, timeWait(t, th), "the pause")
		assert.Equal(t, 500*time.Millisecond, timeWait(t, th), "then one turn every 1/2s")

		// No reply is heard of (no Pass): the pause ended 0.5s ago, and each
		// 10s quiet from then closes a third of the gap from 2/s back to
		// 4/s; the third restores the rate of NewThrottle.
		time.Sleep(9500*time.Millisecond - time.Nanosecond)
		assert.InDelta(t, 2.0, th.Stats().Limit, 1e-9, "not yet a quiet period")
		for _, want := range []float64{2 + 2.0/3, 2 + 4.0/3} {
			time.Sleep(time.Nanosecond)
			assert.InDelta(t, want, th.Stats().Limit, 1e-9)
			time.Sleep(throttleQuiet - time.Nanosecond)
		}
		time.Sleep(time.Nanosecond)
		assert.InDelta(t, 4.0, th.Stats().Limit, 1e-9, "the rate of NewThrottle again")
	})
}

// TestThrottleRecoversWithinAFewPasses: the replies the provider takes
// after a pause each close a third of the gap, so three of them undo what
// one 429 did; late answers to requests sent before the 429 do not count.
func TestThrottleRecoversWithinAFewPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottle(0)
		waitN(t, th, 8) // a burst of 8 at once: 8/s
		th.Slow(http.StatusTooManyRequests, 3*time.Second)
		assert.InDelta(t, 4.0, th.Stats().Limit, 1e-9, "half the 8/s of the burst, measured over 1s, not over a 10s window it did not fill")

		for range 8 {
			th.Pass() // the other answers to the burst, heard during the pause
		}
		time.Sleep(3 * time.Second)
		th.Pass() // and after it
		assert.InDelta(t, 4.0, th.Stats().Limit, 1e-9, "answers to requests sent before the 429 are no step")

		for _, want := range []float64{4 + 4.0/3, 4 + 8.0/3, math.Inf(1)} {
			waitN(t, th, 1)
			th.Pass()
			assert.InDelta(t, want, th.Stats().Limit, 1e-9)
		}
		assert.Equal(t, time.Duration(0), timeWait(t, th))
		assert.Equal(t, time.Duration(0), timeWait(t, th))
	})
}

// TestThrottleReschedulesWaiters: callers that queued at the lowered rate
// go out at the rate restored while they wait, in the order they came, and
// do not keep the turns they were first given.
func TestThrottleReschedulesWaiters(t *testing.T) {
	tests := []struct {
		name    string
		restore func(t *testing.T, th *Throttle, admitted func() int)
	}{
		{"restored by quiet periods", func(t *testing.T, th *Throttle, _ func() int) {
			for !math.IsInf(th.Stats().Limit, 1) {
				time.Sleep(time.Second)
			}
		}},
		{"restored by the replies to the first callers", func(t *testing.T, th *Throttle, admitted func() int) {
			for i := range throttleSteps {
				for admitted() <= i {
					time.Sleep(time.Millisecond) // to the next turn
				}
				th.Pass()
			}
			assert.True(t, math.IsInf(th.Stats().Limit, 1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				th := NewThrottle(0)
				th.Slow(http.StatusTooManyRequests, 0) // nothing admitted lately: the floor, one turn every 5s
				const n = 12                           // turns from 0s to 55s at the floor
				var mu sync.Mutex
				went := make([]time.Time, n) // when each caller, in the order they came, went
				count := 0
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						assert.NoError(t, th.Wait(context.Background()))
						mu.Lock()
						went[i] = time.Now()
						count++
						mu.Unlock()
					})
					synctest.Wait() // queued before the next comes
				}
				admitted := func() int {
					mu.Lock()
					defer mu.Unlock()
					return count
				}
				tt.restore(t, th, admitted)
				restored := time.Now()
				synctest.Wait() // every caller that can go has gone
				assert.Equal(t, n, admitted(), "every caller goes once the rate is restored, none keeps its turn at the floor")
				assert.Equal(t, restored, time.Now())
				wg.Wait()
				assert.True(t, slices.IsSortedFunc(went, time.Time.Compare), "none went before a caller that came earlier: %v", went)
				assert.Zero(t, th.Stats().Queued)
			})
		})
	}
}

func TestThrottlePolicy(t *testing.T) {
	t.Run("a throttling reply during a pause extends it and does not lower the rate again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(0)
			waitN(t, th, 4)
			th.Slow(http.StatusTooManyRequests, time.Second)
			th.Slow(http.StatusServiceUnavailable, 3*time.Second)
			th.Slow(http.StatusTooManyRequests, time.Second) // nearer: the pause stays
			s := th.Stats()
			assert.Equal(t, 3, s.Throttled)
			assert.InDelta(t, 2.0, s.Limit, 1e-9, "halved once")
			assert.Equal(t, 3*time.Second, timeWait(t, th))
		})
	})
	t.Run("a throttling reply after a pause lowers the rate again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(8)
			waitN(t, th, 80) // 8/s for 10s
			th.Slow(http.StatusTooManyRequests, time.Second)
			assert.InDelta(t, 4.0, th.Stats().Limit, 1e-9)
			assert.Equal(t, time.Second, timeWait(t, th))
			waitN(t, th, 3) // at the 4/s set by the first 429
			th.Slow(http.StatusTooManyRequests, 0)
			// Over the last 10s: about 7/s, but 4/s is in force.
			assert.InDelta(t, 2.0, th.Stats().Limit, 1e-9)
		})
	})
	t.Run("never below the floor", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(0)
			th.Slow(http.StatusTooManyRequests, 0) // nothing admitted lately
			assert.InDelta(t, float64(throttleFloor), th.Stats().Limit, 1e-9)
			waitN(t, th, 1)
			assert.Equal(t, 5*time.Second, timeWait(t, th), "0.2/s: one turn every 5s")
		})
	})
	t.Run("a steady rate of NewThrottle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(2)
			assert.Equal(t, time.Duration(0), timeWait(t, th))
			assert.Equal(t, 500*time.Millisecond, timeWait(t, th))
			th.Slow(http.StatusTooManyRequests, 0)
			// 2 admissions within 1s: 2/s, halved.
			assert.InDelta(t, 1.0, th.Stats().Limit, 1e-9)
			time.Sleep(throttleSteps * throttleQuiet)
			assert.InDelta(t, 2.0, th.Stats().Limit, 1e-9, "recovers to the rate of NewThrottle, not to none")
		})
	})
	t.Run("other statuses are not throttling", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(0)
			for _, status := range []int{400, 408, 500, 502} {
				th.Slow(status, time.Hour)
			}
			assert.Equal(t, time.Duration(0), timeWait(t, th))
			s := th.Stats()
			assert.Zero(t, s.Throttled)
			assert.True(t, math.IsInf(s.Limit, 1))
		})
	})
	t.Run("stats", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(0)
			th.Slow(http.StatusTooManyRequests, 1500*time.Millisecond)
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() { assert.NoError(t, th.Wait(context.Background())) })
			}
			synctest.Wait()
			assert.Equal(t, 2, th.Stats().Queued)
			wg.Wait()
			s := th.Stats()
			// Both wait out the pause; the floor's 5s spacing then holds one back.
			assert.Equal(t, 1500*time.Millisecond+1500*time.Millisecond+5*time.Second, s.Waited)
			assert.Equal(t, "1 throttling reply, callers waited 8s, limit 0.2/s", s.String())
			assert.Zero(t, s.Queued)
		})
	})
}

func TestThrottleWaitHonoursContext(t *testing.T) {
	t.Run("during a pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(0)
			th.Slow(http.StatusTooManyRequests, time.Hour)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			err := th.Wait(ctx)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, time.Second, time.Since(start), "returns when the context ends, not at the pause's end")
			assert.Equal(t, time.Second, th.Stats().Waited)
		})
	})
	t.Run("waiting for a turn, which goes to the next caller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(0.5)
			waitN(t, th, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			assert.ErrorIs(t, th.Wait(ctx), context.DeadlineExceeded)
			assert.Equal(t, time.Second, time.Since(start))
			waitN(t, th, 1)
			assert.Equal(t, 2*time.Second, time.Since(start), "the cancelled turn is given back")
		})
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, NewThrottle(0).Wait(ctx), context.Canceled)
	})
}

func TestThrottleConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottle(50)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 25 {
					assert.NoError(t, th.Wait(context.Background()))
					th.Pass()
				}
			})
		}
		for i := range 4 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
				th.Slow(http.StatusTooManyRequests, 200*time.Millisecond)
				th.Slow(http.StatusInternalServerError, time.Hour)
				_ = th.Stats()
			})
		}
		wg.Wait()
		s := th.Stats()
		assert.Equal(t, 4, s.Throttled)
		assert.Positive(t, s.Waited)
		assert.InDelta(t, 50.0, s.Limit, 1e-9, "the turns after the last 429 restored the rate of NewThrottle")
		assert.Zero(t, s.Queued)
	})
}

// send is one HTTP attempt as a client's transport saw it.
type send struct {
	client   string
	sent     time.Time // when the request left
	answered time.Time // when the response's headers came
	status   int
	limit    float64 // the steady rate of the transport's gate when the request left
}

// sendLog records the attempts of several clients.
type sendLog struct {
	mu    sync.Mutex
	sends []send
}

func (l *sendLog) all() []send {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]send(nil), l.sends...)
}

// loggingTransport records each attempt of one client in a sendLog.
type loggingTransport struct {
	client string
	log    *sendLog
	next   http.RoundTripper
	gate   *Throttle // nil: no limit is recorded
}

func (lt loggingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := send{client: lt.client, sent: time.Now()}
	if lt.gate != nil {
		s.limit = lt.gate.Stats().Limit
	}
	resp, err := lt.next.RoundTrip(req)
	s.answered = time.Now()
	if resp != nil {
		s.status = resp.StatusCode
	}
	lt.log.mu.Lock()
	lt.log.sends = append(lt.log.sends, s)
	lt.log.mu.Unlock()
	return resp, err
}

func TestSharedThrottleSlowsEveryClient(t *testing.T) {
	tests := []struct {
		name  string
		gated bool
	}{
		{"a shared throttle pauses the other client", true},
		{"without a gate the other client is not held (the control)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.NewServer(t,
				llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"1"}}, Body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded")},
				llmtest.Text("ok", 10, 1), // client 1's retry and client 2, in either order
				llmtest.Text("ok", 10, 1),
			)
			var log sendLog
			transport := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(transport.CloseIdleConnections)
			var th *Throttle
			if tt.gated {
				th = NewThrottle(0)
				waitN(t, th, 40) // 4/s lately, so the rate after the 429 is 2/s, not the floor
			}
			config := func(name string) Config {
				cfg := testConfig(f)
				cfg.RetryMax = 5 * time.Second // above the Retry-After
				cfg.HTTPClient = &http.Client{Transport: loggingTransport{client: name, log: &log, next: transport}}
				if th != nil {
					cfg.Gate = th
				}
				return cfg
			}
			throttled := make(chan struct{})
			cfg1 := config("client 1")
			cfg1.OnRetry = func(Retry) { close(throttled) } // after the gate heard of the 429
			c1, c2 := newClient(t, cfg1), newClient(t, config("client 2"))

			var wg sync.WaitGroup
			var reply1, reply2 Reply
			var err1, err2 error
			wg.Go(func() { reply1, err1 = c1.Complete(context.Background(), simpleRequest()) })
			wg.Go(func() {
				<-throttled
				reply2, err2 = c2.Complete(context.Background(), simpleRequest())
			})
			wg.Wait()

			require.NoError(t, err1)
			require.NoError(t, err2)
			assert.Equal(t, "ok", reply1.Content)
			assert.Equal(t, "ok", reply2.Content)
			assert.Equal(t, 2, reply1.Attempts)
			assert.Equal(t, 1, reply2.Attempts, "client 2 met no error of its own")

			sends := log.all()
			require.Len(t, sends, 3)
			require.Equal(t, "client 1", sends[0].client)
			require.Equal(t, http.StatusTooManyRequests, sends[0].status)
			limited := sends[0].answered
			for _, s := range sends[1:] {
				assert.Equal(t, http.StatusOK, s.status)
				if s.client == "client 1" || tt.gated {
					assert.GreaterOrEqual(t, s.sent.Sub(limited), time.Second,
						"%s sent its request only after the 1s Retry-After", s.client)
				}
			}
			if tt.gated {
				assert.Positive(t, reply2.Waited, "client 2's wait for the gate counts in its reply")
				assert.Equal(t, 1, th.Stats().Throttled)
			} else {
				assert.Zero(t, reply2.Waited, "nothing held client 2")
			}
		})
	}
}

// TestThrottleRecoversOverHTTP is the run, over real HTTP: 24
// one-call trials on 4 workers whose clients share a Throttle, and a
// provider whose first two replies are 429s with Retry-After: 3. After the
// pause, the requests the provider takes restore the rate within
// throttleSteps of them; the rest go out at the rate of NewThrottle.
//
// It runs in a synctest bubble, whose fake clock is the one the Throttle
// and the clients read: the 3s pause passes at once, and what is compared
// is counts and the limit in force as each request left, never a time.
// The server lives outside the bubble; the clients open a connection per
// request, since an idle kept-alive one would keep the bubble's clock from
// moving.
func TestThrottleRecoversOverHTTP(t *testing.T) {
	const workers, trials = 4, 24
	tooMany := llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"3"}}, Body: errorBody("Rate limit reached for requests", "requests", "rate_limit_exceeded")}
	replies := []llmtest.Reply{tooMany, tooMany}
	// The provider answers nothing else before the clients have taken
	// both 429s (Slow). Else a worker whose first reply came before them
	// sends its next request at once, unthrottled, and the run the test
	// reads depends on the order the real network delivered the replies.
	// (The channel is made outside the bubble: the server, which waits on
	// it, is outside.)
	slowed := make(chan struct{})
	for range trials {
		ok := llmtest.Text("ok", 10, 1)
		ok.OnRequest = func() { <-slowed }
		replies = append(replies, ok)
	}
	f := llmtest.NewServer(t, replies...)
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottle(0)
		var log sendLog
		transport := &http.Transport{DisableKeepAlives: true}
		cfg := testConfig(f)
		cfg.RetryMax = 5 * time.Second // above the Retry-After
		cfg.Gate = &signalingGate{Throttle: th, after: 2, slowed: slowed}
		cfg.HTTPClient = &http.Client{Transport: loggingTransport{client: "worker", log: &log, next: transport, gate: th}}
		c := newClient(t, cfg)

		jobs := make(chan int, trials)
		for i := range trials {
			jobs <- i
		}
		close(jobs)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range jobs {
					reply, err := c.Complete(context.Background(), simpleRequest())
					assert.NoError(t, err)
					assert.Equal(t, "ok", reply.Content)
				}
			})
		}
		wg.Wait()

		sends := log.all()
		require.Len(t, sends, trials+2, "each trial once, and the two throttled ones again")
		statuses := map[int]int{}
		var paused time.Time // when the last 429 came back: the pause began
		for _, s := range sends {
			statuses[s.status]++
			if s.status == http.StatusTooManyRequests && s.answered.After(paused) {
				paused = s.answered
			}
		}
		// A request the Throttle admitted before the 429s can leave just
		// after them, in the same instant of the bubble's clock: it is
		// logged with the lowered limit but was not held by it. The
		// requests that count are the ones sent after the pause began.
		lowered := 0 // requests the provider took that left after the pause, at a lowered rate
		for _, s := range sends {
			if s.status == http.StatusOK && s.sent.After(paused) && !math.IsInf(s.limit, 1) {
				lowered++
			}
		}
		assert.Equal(t, map[int]int{http.StatusTooManyRequests: 2, http.StatusOK: trials}, statuses)
		assert.Equal(t, throttleSteps, lowered, "after the pause, the rate is restored within %d requests", throttleSteps)
		s := th.Stats()
		assert.Equal(t, 2, s.Throttled)
		assert.True(t, math.IsInf(s.Limit, 1), "no limit, as before the 429s: %s", s)
	})
}

// signalingGate is a Throttle that closes slowed once it has been told of
// after throttling replies.
type signalingGate struct {
	*Throttle
	after  int
	slowed chan struct{}
	mu     sync.Mutex
	n      int
}

func (g *signalingGate) Slow(status int, wait time.Duration) {
	g.Throttle.Slow(status, wait)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n++; g.n == g.after {
		close(g.slowed)
	}
}

// TestThrottleRecoveryRatio runs the run in the Throttle's fake
// clock, without the network, for several worker counts and reply
// latencies: its time with two early 429s (Retry-After: 3) over its time
// without them. Before the rate recovered by replies, two 429s made the
// run 3 to 24 times as long (the 24 trials took 92s); now the
// pause and the few requests after it cost what they must. The ratio is
// a fake-clock quotient, the same on any machine.
func TestThrottleRecoveryRatio(t *testing.T) {
	run := func(t *testing.T, workers int, latency time.Duration, throttled int) time.Duration {
		var took time.Duration
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(0)
			var next, calls atomic.Int64
			start := time.Now()
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for next.Add(1) <= 24 {
						for {
							assert.NoError(t, th.Wait(context.Background()))
							n := calls.Add(1)
							time.Sleep(latency)
							if n > int64(throttled) {
								th.Pass()
								break
							}
							th.Slow(http.StatusTooManyRequests, 3*time.Second)
							time.Sleep(3 * time.Second) // the client's own wait before its retry
						}
					}
				})
			}
			wg.Wait()
			took = time.Since(start)
		})
		return took
	}
	for _, workers := range []int{4, 8, 16} {
		for _, latency := range []time.Duration{500 * time.Millisecond, time.Second, 3 * time.Second} {
			t.Run(fmt.Sprintf("%d workers, %s a reply", workers, latency), func(t *testing.T) {
				// What the 429s must cost: the pause, and the first reply's
				// latency, spent again on the retry.
				must := run(t, workers, latency, 0) + 3*time.Second + latency
				took := run(t, workers, latency, 2)
				ratio := float64(took) / float64(must)
				t.Logf("the run took %s with two early 429s, %.2f times the %s it must", took, ratio, must)
				assert.Less(t, ratio, 1.5)
			})
		}
	}
}

// recordingGate is a Gate that holds each Wait for hold and records, in
// order, the calls it gets.
type recordingGate struct {
	hold   time.Duration
	mu     sync.Mutex
	events []string
}

func (g *recordingGate) record(e string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, e)
}

func (g *recordingGate) Wait(ctx context.Context) error {
	g.record("wait")
	_, err := sleep(ctx, g.hold)
	return err
}

func (g *recordingGate) Slow(status int, wait time.Duration) {
	g.record(fmt.Sprintf("slow %d %s", status, wait))
}

func (g *recordingGate) Pass() { g.record("pass") }

func TestCompleteTellsTheGate(t *testing.T) {
	ok := llmtest.Text("ok", 10, 1)
	tests := []struct {
		name       string
		replies    []llmtest.Reply
		maxRetries int
		want       []string
	}{
		{"a 429", []llmtest.Reply{
			{Status: 429, Header: http.Header{"Retry-After-Ms": {"30"}}, Body: errorBody("slow down", "requests", "rate_limit_exceeded")}, ok,
		}, 0, []string{"wait", "slow 429 30ms", "retry", "wait", "pass"}},
		{"a 503 with Retry-After", []llmtest.Reply{
			// Retry-After 1s, capped by RetryMax: the gate hears the wait chosen.
			{Status: 503, Header: http.Header{"Retry-After": {"1"}}, Body: errorBody("overloaded", "server_error", "")}, ok,
		}, 0, []string{"wait", "slow 503 50ms", "retry", "wait", "pass"}},
		{"a 429 on the last attempt still reaches the gate", []llmtest.Reply{
			{Status: 429, Header: http.Header{"Retry-After-Ms": {"30"}}, Body: errorBody("slow down", "requests", "rate_limit_exceeded")},
		}, -1, []string{"wait", "slow 429 30ms"}},
		{"a 503 without Retry-After is not throttling, nor taken", []llmtest.Reply{
			{Status: 503, Body: errorBody("overloaded", "server_error", "")}, ok,
		}, 0, []string{"wait", "retry", "wait", "pass"}},
		{"a 500 is not throttling, nor taken", []llmtest.Reply{
			{Status: 500, Body: errorBody("boom", "server_error", "")}, ok,
		}, 0, []string{"wait", "retry", "wait", "pass"}},
		{"insufficient quota is not throttling, nor taken", []llmtest.Reply{
			llmtest.Error(429, "insufficient_quota", "You exceeded your current quota"),
		}, 0, []string{"wait"}},
		{"an attempt that got no answer tells nothing", []llmtest.Reply{
			{Hangup: true}, ok,
		}, 0, []string{"wait", "retry", "wait", "pass"}},
		{"a 400 was taken", []llmtest.Reply{
			llmtest.Error(400, "invalid_request_error", "bad request"),
		}, 0, []string{"wait", "pass"}},
		{"a success", []llmtest.Reply{ok}, 0, []string{"wait", "pass"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.NewServer(t, tt.replies...)
			gate := &recordingGate{}
			cfg := testConfig(f)
			cfg.MaxRetries = tt.maxRetries
			cfg.Gate = gate
			cfg.OnRetry = func(Retry) { gate.record("retry") }
			reply, _ := newClient(t, cfg).Complete(context.Background(), simpleRequest())
			assert.Equal(t, tt.want, gate.events)
			assert.Equal(t, len(tt.replies), reply.Attempts)
		})
	}
}

func TestWaitedIncludesGateTime(t *testing.T) {
	t.Run("first attempt", func(t *testing.T) {
		f := llmtest.NewServer(t, llmtest.Text("ok", 10, 1))
		cfg := testConfig(f)
		cfg.Gate = &recordingGate{hold: 100 * time.Millisecond}
		reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
		require.NoError(t, err)
		assert.Equal(t, 1, reply.Attempts)
		assert.GreaterOrEqual(t, reply.Waited, 100*time.Millisecond, "the gate held the only attempt")
		assert.GreaterOrEqual(t, reply.Latency, reply.Waited)
	})
	t.Run("every attempt and the sleeps between", func(t *testing.T) {
		f := llmtest.NewServer(t,
			llmtest.Reply{Status: 500, Body: errorBody("boom", "server_error", "")},
			llmtest.Text("ok", 10, 1))
		cfg := testConfig(f)
		var sleeps time.Duration
		cfg.OnRetry = func(r Retry) { sleeps += r.Wait }
		cfg.Gate = &recordingGate{hold: 100 * time.Millisecond}
		reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
		require.NoError(t, err)
		assert.Equal(t, 2, reply.Attempts)
		assert.GreaterOrEqual(t, reply.Waited, 200*time.Millisecond+sleeps)
	})
}

func TestCancelWhileWaitingForTheGate(t *testing.T) {
	f := llmtest.NewServer(t) // no request reaches the server
	th := NewThrottle(0)
	th.Slow(http.StatusTooManyRequests, time.Hour)
	cfg := testConfig(f)
	cfg.Gate = th
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)

	reply, err := newClient(t, cfg).Complete(ctx, simpleRequest())
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "model test-model: waiting for the shared rate limit (Config.Gate) before attempt 1")
	assert.Zero(t, reply.Attempts, "no attempt was made")
	assert.Positive(t, reply.Waited)
}
