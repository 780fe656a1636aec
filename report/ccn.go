package report

import (
	"math"
	"slices"
)

// CC_q(n), seed 000's context complexity: the smallest budget b of a
// resource (input tokens, output tokens, calls, tool-result bytes) with
// which a share q of sessions passes every check of stages 1..n. Some
// sessions never show what budget they would have needed: one cut by a
// budget before stage n was done might have passed with more. They are
// censored, as a survival analysis censors a patient who left the study,
// and the passed share at b is the Kaplan–Meier estimate 1 − S(b) with the
// resource in the place of time:
//
//   - a session that passed stages 1..n has its event at its cumulative
//     resource at stage n;
//   - a session cut by a budget at or before stage n is censored at its
//     cumulative resource at the stage where it was cut;
//   - a session that failed a check never passes, whatever the budget: it
//     is censored at +Inf, at risk forever.
//
// This file holds the estimator alone, over times and events; sessions.go
// turns a run's session trials into them.

// PassedShare is the Kaplan–Meier estimate of the share of sessions that
// passed by each budget: at[i] are the distinct event times in increasing
// order, and share[i] is 1 − S(at[i]), S the product over the event times
// t ≤ at[i] of (1 − d(t)/n(t)), d(t) the events at t and n(t) the
// sessions at risk at t (those whose time is ≥ t). A censoring at the
// same time as an event is at risk at that time: events come before
// censorings at a tie, the usual convention. times[i] is session i's
// resource, event[i] says it passed (false: censored there; +Inf for a
// session that never passes); len(event) must equal len(times). With no
// event it returns nothing.
func PassedShare(times []float64, event []bool) (at, share []float64) {
	if len(times) != len(event) {
		panic("report: PassedShare needs one event flag per time")
	}
	order := make([]int, len(times))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case times[a] < times[b]:
			return -1
		case times[a] > times[b]:
			return 1
		}
		return 0
	})
	s := 1.0
	risk := len(times)
	for i := 0; i < len(order); {
		t := times[order[i]]
		d, j := 0, i
		for ; j < len(order) && times[order[j]] == t; j++ {
			if event[order[j]] {
				d++
			}
		}
		if d > 0 && !math.IsInf(t, 1) {
			s *= 1 - float64(d)/float64(risk)
			at, share = append(at, t), append(share, 1-s)
		}
		risk -= j - i
		i = j
	}
	return at, share
}

// shareSlack absorbs the rounding of PassedShare's product: 1 − S is a
// ratio of whole numbers that floating point may land just under (five
// sessions passing one after another give 0.8 as 0.7999…).
const shareSlack = 1e-9

// BudgetQuantile is CC_q over sessions whose resources are times and
// whose events are event (as PassedShare's): the smallest event time at
// which the Kaplan–Meier passed share 1 − S reaches q. ok is false when
// it never does (too many sessions failed or were cut before it), and
// then b is +Inf.
func BudgetQuantile(times []float64, event []bool, q float64) (b float64, ok bool) {
	at, share := PassedShare(times, event)
	for i, p := range share {
		if p >= q-shareSlack {
			return at[i], true
		}
	}
	return math.Inf(1), false
}
