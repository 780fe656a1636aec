package report

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The Kaplan–Meier passed share and CC_q, by hand. inf is a session that
// failed a check: censored at +Inf, at risk forever.
func TestBudgetQuantile(t *testing.T) {
	inf := math.Inf(1)
	type quantile struct {
		q    float64
		want float64 // +Inf: not reached
	}
	for _, tc := range []struct {
		name   string
		times  []float64
		event  []bool
		at     []float64
		share  []float64
		quants []quantile
	}{{
		// Ties: 10 10 20 30, all events.
		// At 10: 4 at risk, 2 events: S = 1 − 2/4 = 1/2.
		// At 20: 2 at risk, 1 event:  S = 1/2 · (1 − 1/2) = 1/4.
		// At 30: 1 at risk, 1 event:  S = 0.
		// Passed share 1/2, 3/4, 1: q 0.5 at 10, q 0.8 at 30 (3/4 < 0.8).
		name: "ties", times: []float64{20, 10, 30, 10}, event: []bool{true, true, true, true},
		at: []float64{10, 20, 30}, share: []float64{0.5, 0.75, 1},
		quants: []quantile{{0.5, 10}, {0.75, 20}, {0.8, 30}, {0.95, 30}},
	}, {
		// A censoring at an event's time: 10 (event), 10 (censored), 20, 30.
		// Events first: the censored session is at risk at 10.
		// At 10: 4 at risk, 1 event: S = 3/4.
		// At 20: 2 at risk (the censored one has left): S = 3/4 · 1/2 = 3/8.
		// At 30: 1 at risk: S = 0.
		// Passed share 1/4, 5/8, 1. With the censoring first, 3 would be at
		// risk at 10 and the share 1/3 there, so q 0.3 tells the two apart:
		// 20 here, 10 the other way.
		name: "censoring at an event's time", times: []float64{10, 10, 20, 30}, event: []bool{false, true, true, true},
		at: []float64{10, 20, 30}, share: []float64{0.25, 0.625, 1},
		quants: []quantile{{0.25, 10}, {0.3, 20}, {0.625, 20}, {0.8, 30}},
	}, {
		// Not reached: 10, 20 pass; 15 cut by a budget; two failed (+Inf).
		// At 10: 5 at risk: S = 4/5.
		// 15 censored.
		// At 20: 3 at risk (20, +Inf, +Inf): S = 4/5 · 2/3 = 8/15.
		// Passed share 1/5, 7/15 = 0.4667, and no more: q 0.8 is never
		// reached; q 0.4 is, at 20.
		name: "q not reached", times: []float64{inf, 20, 15, 10, inf}, event: []bool{false, true, false, true, false},
		at: []float64{10, 20}, share: []float64{0.2, 7.0 / 15},
		quants: []quantile{{0.2, 10}, {0.4, 20}, {0.8, inf}, {0.95, inf}},
	}, {
		// All censored: no event, no share, nothing reached.
		name: "all censored", times: []float64{5, 7, inf}, event: []bool{false, false, false},
		quants: []quantile{{0.8, inf}, {0.01, inf}},
	}, {
		// Cut early: a session cut at 5 leaves the others to carry it.
		// 5 censored; at 10: 4 at risk, S = 3/4; 20: S = 1/2; 30: 1/4;
		// 40: 0. Passed 1/4, 1/2, 3/4, 1: q 0.8 at 40, though only 4 of 5
		// sessions passed (4/5 = 0.8 would count the cut one as failed).
		name: "cut early", times: []float64{40, 30, 5, 20, 10}, event: []bool{true, true, false, true, true},
		at: []float64{10, 20, 30, 40}, share: []float64{0.25, 0.5, 0.75, 1},
		quants: []quantile{{0.75, 30}, {0.8, 40}},
	}, {
		// Rounding: five sessions passing one by one make S
		// 4/5 · 3/4 · 2/3 · 1/2, whose 1 − S is 0.8 only up to rounding;
		// it must count as reaching q 0.8.
		name: "rounding", times: []float64{1, 2, 3, 4, 5}, event: []bool{true, true, true, true, true},
		at: []float64{1, 2, 3, 4, 5}, share: []float64{0.2, 0.4, 0.6, 0.8, 1},
		quants: []quantile{{0.8, 4}, {0.6, 3}},
	}, {
		name:   "no sessions",
		quants: []quantile{{0.8, inf}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			at, share := PassedShare(tc.times, tc.event)
			assert.Equal(t, tc.at, at)
			assert.InDeltaSlice(t, tc.share, share, 1e-12)
			for _, q := range tc.quants {
				b, ok := BudgetQuantile(tc.times, tc.event, q.q)
				assert.Equal(t, q.want, b, "q %.2f", q.q)
				assert.Equal(t, !math.IsInf(q.want, 1), ok, "q %.2f reached", q.q)
			}
		})
	}
}
