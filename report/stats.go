package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// The statistics of a report. Every function here is deterministic: given
// the same inputs and a *rand.Rand in the same state (see NewRand), it
// returns the same bits, so rendered reports can be compared with golden
// files. Intervals are 95% intervals. Nothing here returns NaN or ±Inf for
// finite inputs, so every result can be encoded as JSON; where there is no
// data the documented zero-like value says so instead.

// Z95 is the standard normal quantile for a two-sided 95% interval,
// Φ⁻¹(0.975) rounded to seven significant digits.
const Z95 = 1.959964

// DefaultResamples is the number of bootstrap draws used when a function is
// given resamples <= 0.
const DefaultResamples = 2000

// Z80 is the standard normal quantile Φ⁻¹(0.80), for a test's 80% power,
// rounded to seven significant digits.
const Z80 = 0.8416212

// Interval is an estimate with a 95% interval: Lo <= Est <= Hi in all but
// pathological bootstrap samples.
//
// Tasks is the number of independent units the interval is over: tasks,
// or pairs of tasks in a comparison. Below two there is nothing to
// resample and no interval: Lo = Hi = Est, the pages print "n < 2" in its
// place, and in JSON lo and hi are null.
type Interval struct {
	Est   float64 `json:"est"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Tasks int     `json:"tasks"`
}

// MarshalJSON writes lo and hi as null when the interval is over fewer
// than two tasks (see Interval).
func (iv Interval) MarshalJSON() ([]byte, error) {
	lo, hi := bounds(iv.Lo, iv.Hi, iv.Tasks)
	return json.Marshal(struct {
		Est   float64  `json:"est"`
		Lo    *float64 `json:"lo"`
		Hi    *float64 `json:"hi"`
		Tasks int      `json:"tasks"`
	}{iv.Est, lo, hi, iv.Tasks})
}

// bounds are lo and hi for JSON: nil (null) over fewer than two tasks.
func bounds(lo, hi float64, tasks int) (*float64, *float64) {
	if tasks < 2 {
		return nil, nil
	}
	return &lo, &hi
}

// Dist describes per-trial values of one (model, condition): their count,
// mean with a bootstrap 95% interval over tasks, and median and quartiles
// over trials. Tasks is how many tasks the trials are of; as with an
// Interval, below two there is no interval (lo and hi null in JSON).
type Dist struct {
	N      int     `json:"n"`
	Tasks  int     `json:"tasks"`
	Mean   float64 `json:"mean"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Median float64 `json:"median"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
}

// MarshalJSON writes lo and hi as null when the trials are of fewer than
// two tasks.
func (d Dist) MarshalJSON() ([]byte, error) {
	lo, hi := bounds(d.Lo, d.Hi, d.Tasks)
	return json.Marshal(struct {
		N      int      `json:"n"`
		Tasks  int      `json:"tasks"`
		Mean   float64  `json:"mean"`
		Lo     *float64 `json:"lo"`
		Hi     *float64 `json:"hi"`
		Median float64  `json:"median"`
		Q1     float64  `json:"q1"`
		Q3     float64  `json:"q3"`
	}{d.N, d.Tasks, d.Mean, lo, hi, d.Median, d.Q1, d.Q3})
}

// NewRand returns the generator the report's bootstraps draw from: a
// math/rand/v2 PCG seeded with (seed, 0). The same seed gives the same
// stream on every platform, so a report made twice from the same run is
// byte-identical. Each bootstrap consumes the generator, so results depend
// on the order of the calls as well as on the seed.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0))
}

// Wilson returns the proportion k/n of successes with its Wilson score
// interval at z = Z95. Est is k/n itself, not the interval's centre, and
// the bounds are clamped to [0, 1] (Lo is exactly 0 when k == 0 and Hi
// exactly 1 when k == n).
//
// The n trials are taken as independent units, so Tasks is n: Wilson is
// the interval of one trial per task (TaskAccuracy uses it so).
//
// With no trials (n == 0) nothing is known: Wilson returns Est 0, Lo 0,
// Hi 1, the whole range, rather than NaN (which JSON cannot encode);
// callers show n beside the interval. Wilson panics unless 0 <= k <= n.
func Wilson(k, n int) Interval {
	if n < 0 || k < 0 || k > n {
		panic("report: Wilson needs 0 <= k <= n")
	}
	if n == 0 {
		return Interval{Est: 0, Lo: 0, Hi: 1}
	}
	p := float64(k) / float64(n)
	lo, hi := wilson(p, float64(n))
	return Interval{Est: p, Lo: lo, Hi: hi, Tasks: n}
}

// wilson is the Wilson score interval at z = Z95 of a proportion p
// (0 <= p <= 1) observed over n > 0 units, n not necessarily whole,
// clamped to [0, 1]: lo is exactly 0 when p is 0, hi exactly 1 when p is 1.
func wilson(p, n float64) (lo, hi float64) {
	z2 := Z95 * Z95
	denom := 1 + z2/n
	centre := (p + z2/(2*n)) / denom
	half := Z95 / denom * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	lo, hi = max(0, centre-half), min(1, centre+half)
	if p == 0 {
		lo = 0
	}
	if p == 1 {
		hi = 1
	}
	return lo, hi
}

// TaskAccuracy is the accuracy of one (model, condition): correct[i] is
// trial i's grade and groups[i] its task (len(groups) must equal
// len(correct)).
//
// Est is the share of correct trials, k/n. The 95% interval is over tasks,
// not trials, since a task's reps are not independent (the same question,
// and with greedy decoding often the same answer): ten reps of the same
// answers must not narrow it. It is the Wilson interval of Est at an
// effective number of independent trials n* (Kish's design effect, as
// survey statistics uses it for clustered samples: Korn and Graubard 1998,
// Dean and Pagano 2015):
//
//	n* = min(tasks, Est(1-Est) / V)
//
// where V is the variance of the cluster bootstrap's draws (taskDraws:
// tasks drawn with replacement, each with all its trials, resamples draws,
// <= 0 means DefaultResamples), the variance of Est over tasks. n* is at
// most the number of tasks, the effective sample size when a task's reps
// all agree (the most they can be correlated): reps never count for more.
// It is less when the tasks' shares spread more than one trial per task
// would (tasks with unequal numbers of trials: infra failures, an
// unfinished run). When every task is all right or all wrong, or all
// tasks alike (V = 0), n* is the number of tasks.
//
// Why not the bootstrap's percentiles, as for tokens: they are [1, 1] when
// every task is all right, which overstates certainty, and with few tasks
// they are coarse (7 of 10 tasks right gives [0.4, 1.0]: 1 is impossible
// once a task failed). The Wilson form keeps a width at 0 and 1, stays
// inside (0, 1) when there are failures and successes, and is the interval
// over tasks of one trial each.
//
// Repeating every trial of every task r times leaves the interval as it
// was, to the bit (the same draws, the same Est). Over fewer than two
// tasks there is no interval: Lo = Hi = Est and Tasks says so. With no
// trials it returns the zero Interval.
func TaskAccuracy(correct []bool, groups []int, rng *rand.Rand, resamples int) Interval {
	if len(correct) != len(groups) {
		panic("report: TaskAccuracy needs one group per trial")
	}
	if len(correct) == 0 {
		return Interval{}
	}
	values := make([]float64, len(correct))
	for i, c := range correct {
		if c {
			values[i] = 1
		}
	}
	return TaskShare(values, groups, rng, resamples)
}

// TaskShare is TaskAccuracy of trials whose results are shares, values[i]
// in [0, 1] (the share of a record's parts that are right), rather than
// right or wrong: Est is their mean, the interval over tasks is the Wilson
// interval of Est at the effective number of tasks n*, as TaskAccuracy's.
// For 0/1 values it is TaskAccuracy, to the bit.
func TaskShare(values []float64, groups []int, rng *rand.Rand, resamples int) Interval {
	if len(values) != len(groups) {
		panic("report: TaskShare needs one group per trial")
	}
	if len(values) == 0 {
		return Interval{}
	}
	p := stat.Mean(values, nil)
	draws, tasks := taskDraws(values, groups, rng, resamples)
	iv := Interval{Est: p, Lo: p, Hi: p, Tasks: tasks}
	if draws == nil {
		return iv
	}
	iv.Lo, iv.Hi = wilson(p, EffectiveTasks(p, draws, tasks))
	return iv
}

// EffectiveTasks is n* of TaskAccuracy: min(tasks, p(1-p)/V) with V the
// variance of the bootstrap draws, or tasks when V or p(1-p) is 0.
func EffectiveTasks(p float64, draws []float64, tasks int) float64 {
	n := float64(tasks)
	v := stat.Variance(draws, nil)
	if v <= 0 || p <= 0 || p >= 1 {
		return n
	}
	return min(n, p*(1-p)/v)
}

// MinDetectableDiff is the smallest difference in accuracy between two
// conditions that a two-sided test at the 5% level detects with 80% power
// over n tasks: (Z95 + Z80) * sqrt(2 * 0.25 / n), about 1.98/sqrt(n). It
// takes the worst case for the variance of a per-task accuracy (0.25, at
// 50%) in each condition and no correlation between the conditions' per-task
// results; conditions that fail the same tasks (as usual) tell smaller
// differences apart, so this is an upper bound on the smallest detectable
// difference, not a guess at it. With n <= 0 it returns +Inf.
func MinDetectableDiff(n int) float64 {
	if n <= 0 {
		return math.Inf(1)
	}
	return (Z95 + Z80) * math.Sqrt(0.5/float64(n))
}

// Describe summarises per-trial values; groups[i] is the task of trial i
// (any int that identifies it) and len(groups) must equal len(values).
//
// Mean is the plain mean of all values (stat.Mean), so a task with more
// trials weighs more. Lo and Hi are a percentile-bootstrap 95% interval
// that resamples tasks, not trials: each of the resamples draws (<= 0
// means DefaultResamples) picks as many tasks as there are, with
// replacement, and takes the mean of all the trials of the drawn tasks;
// Lo and Hi are the 2.5% and 97.5% empirical quantiles of those means.
// Trials of one task are not independent (same prompt, same difficulty),
// so resampling tasks keeps the interval honest. With a single task there
// is nothing to resample and Lo = Hi = Mean, and rng is not used.
//
// Median, Q1 and Q3 are over all values, by stat.Quantile with
// stat.Empirical: the smallest value with at least that fraction of the
// trials at or below it. Each is therefore a value some trial had, and for
// an even count the median is the lower of the two middle values (the
// median of 1, 2, 3, 4 is 2).
//
// Tasks is the number of distinct groups. With no values Describe returns
// the zero Dist (N 0). Values must be finite. Describe does not modify its
// arguments.
func Describe(values []float64, groups []int, rng *rand.Rand, resamples int) Dist {
	if len(values) != len(groups) {
		panic("report: Describe needs one group per value")
	}
	if len(values) == 0 {
		return Dist{}
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	d := Dist{
		N:      len(values),
		Mean:   stat.Mean(values, nil),
		Median: stat.Quantile(0.5, stat.Empirical, sorted, nil),
		Q1:     stat.Quantile(0.25, stat.Empirical, sorted, nil),
		Q3:     stat.Quantile(0.75, stat.Empirical, sorted, nil),
	}
	var draws []float64
	draws, d.Tasks = taskDraws(values, groups, rng, resamples)
	if draws == nil {
		d.Lo, d.Hi = d.Mean, d.Mean
		return d
	}
	d.Lo, d.Hi = percentile95(draws)
	return d
}

// taskDraws is the bootstrap over tasks, the one place that resamples
// trials: each of the resamples draws (<= 0 means DefaultResamples) picks
// as many tasks as there are (groups' distinct values), with replacement,
// and is the mean of all the trials of the drawn tasks. It returns the
// draws and the number of tasks; with fewer than two tasks there is
// nothing to resample, no draws (nil), and rng is not used. A draw is a
// ratio of sums, so repeating every trial r times gives the same draws to
// the bit when the values are whole numbers (r·sum / r·count is the same
// rational as sum / count, rounded once).
func taskDraws(values []float64, groups []int, rng *rand.Rand, resamples int) ([]float64, int) {
	// One cluster per task, in increasing task order so that the draws
	// do not depend on map iteration.
	ids := slices.Clone(groups)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sums := make([]float64, len(ids))
	counts := make([]float64, len(ids))
	for i, v := range values {
		c, _ := slices.BinarySearch(ids, groups[i])
		sums[c] += v
		counts[c]++
	}
	if len(ids) < 2 {
		return nil, len(ids)
	}
	draws := make([]float64, resampleCount(resamples))
	for r := range draws {
		var sum, count float64
		for range ids {
			c := rng.IntN(len(ids))
			sum += sums[c]
			count += counts[c]
		}
		draws[r] = sum / count
	}
	return draws, len(ids)
}

// GeoMeanRatio compares condition b with condition a task by task: a[i] and
// b[i] are task i's mean cost (tokens, turns, seconds) in each, and
// len(a) must equal len(b). Est is the geometric mean of the ratios
// b[i]/a[i], exp(stat.Mean(log(b/a))); 2 means b costs twice as much as a
// on a typical task. Lo and Hi are a percentile-bootstrap 95% interval
// over the pairs (resamples draws, <= 0 means DefaultResamples); with one
// pair Lo = Hi = Est.
//
// A pair is skipped unless both values are finite and > 0 (a ratio of
// nothing means nothing); the second result is the number of pairs
// skipped. With no usable pair the Interval is the zero Interval, which no
// real ratio can be, and rng is not used.
func GeoMeanRatio(a, b []float64, rng *rand.Rand, resamples int) (Interval, int) {
	if len(a) != len(b) {
		panic("report: GeoMeanRatio needs pairs of equal length")
	}
	logs := make([]float64, 0, len(a))
	for i := range a {
		if !positive(a[i]) || !positive(b[i]) {
			continue
		}
		logs = append(logs, math.Log(b[i]/a[i]))
	}
	skipped := len(a) - len(logs)
	if len(logs) == 0 {
		return Interval{}, skipped
	}
	iv := bootstrapMean(logs, rng, resamples)
	return Interval{Est: math.Exp(iv.Est), Lo: math.Exp(iv.Lo), Hi: math.Exp(iv.Hi), Tasks: iv.Tasks}, skipped
}

// MeanDiff compares condition b with condition a task by task: a[i] and
// b[i] are task i's value in each (for example its accuracy over the
// repetitions), and len(a) must equal len(b). Est is the mean paired
// difference b[i] - a[i] (stat.Mean); Lo and Hi are a percentile-bootstrap
// 95% interval over the tasks (resamples draws, <= 0 means
// DefaultResamples); with one task Lo = Hi = Est. With no tasks it
// returns the zero Interval and does not use rng; callers know len(a).
// Values must be finite.
func MeanDiff(a, b []float64, rng *rand.Rand, resamples int) Interval {
	if len(a) != len(b) {
		panic("report: MeanDiff needs pairs of equal length")
	}
	if len(a) == 0 {
		return Interval{}
	}
	diffs := make([]float64, len(a))
	for i := range a {
		diffs[i] = b[i] - a[i]
	}
	return bootstrapMean(diffs, rng, resamples)
}

// PairedAccuracyDiff compares the accuracy of condition b with that of
// condition a task by task: a[i] and b[i] are task i's accuracy (its share
// of correct reps, in [0, 1]) in each; len(a) must equal len(b). Est is the
// mean paired difference b[i] - a[i], as MeanDiff's. The 95% interval is
// the wider, at each end, of MeanDiff's bootstrap over tasks and
// Newcombe's score interval for a paired difference of proportions (his
// method 10, Statistics in Medicine 17:2635, 1998) with n the number of
// tasks: the Wilson intervals of each side's mean accuracy over n, joined
// with the correlation of the per-task accuracies of the two sides
// (newcombePaired). For tasks right or wrong in every rep this is
// Newcombe's interval for the 2×2 table of paired tasks exactly.
//
// As with TaskAccuracy, the bootstrap alone is [0, 0] when every task
// comes out the same in both conditions (all right in both, say), which
// says a difference of zero is certain; the score interval keeps the
// width that n tasks leave (about ±56 pp with 3 tasks, ±11 pp with 30).
// Over fewer than two tasks there is no interval (Tasks says so); with no
// tasks it returns the zero Interval. Repeating every rep of every task
// leaves it as it was: it sees only per-task accuracies.
func PairedAccuracyDiff(a, b []float64, rng *rand.Rand, resamples int) Interval {
	iv := MeanDiff(a, b, rng, resamples)
	if iv.Tasks < 2 {
		return iv
	}
	lo, hi := newcombePaired(a, b)
	iv.Lo, iv.Hi = min(iv.Lo, lo), max(iv.Hi, hi)
	return iv
}

// newcombePaired is Newcombe's method 10 for the difference mean(b) -
// mean(a) of paired proportions over n = len(a) >= 2 units (see
// PairedAccuracyDiff), clamped to [-1, 1]. For 0/1 values it is his
// interval for the paired 2×2 table: the Wilson intervals of the two
// margins, joined with the correlation phi = (ad - bc - n/2) /
// sqrt(r1 r2 c1 c2) when ad - bc > n/2, 0 when 0 <= ad - bc <= n/2,
// (ad - bc) / sqrt(r1 r2 c1 c2) when negative, and 0 when a margin is
// empty (the published correction that keeps a table without discordant
// pairs from a zero-width interval). For values between 0 and 1 (a task's
// share of correct reps) ad - bc is n² times their covariance and r1 r2 c1
// c2 is n⁴ p1(1-p1) p2(1-p2), so the same formula applies; p(1-p) bounds
// the variance of such values, so phi stays within [-1, 1].
func newcombePaired(a, b []float64) (lo, hi float64) {
	n := float64(len(a))
	p1, p2 := stat.Mean(b, nil), stat.Mean(a, nil)
	l1, u1 := wilson(p1, n)
	l2, u2 := wilson(p2, n)
	phi := 0.0
	if margins := p1 * (1 - p1) * p2 * (1 - p2); margins > 0 {
		var cov float64 // the population covariance, (ad - bc) / n²
		for i := range a {
			cov += (b[i] - p1) * (a[i] - p2)
		}
		cov /= n
		switch half := 1 / (2 * n); {
		case cov > half:
			phi = (cov - half) / math.Sqrt(margins)
		case cov < 0:
			phi = cov / math.Sqrt(margins)
		}
	}
	d := p1 - p2
	lo = d - math.Sqrt(max(0, (p1-l1)*(p1-l1)-2*phi*(p1-l1)*(u2-p2)+(u2-p2)*(u2-p2)))
	hi = d + math.Sqrt(max(0, (u1-p1)*(u1-p1)-2*phi*(u1-p1)*(p2-l2)+(p2-l2)*(p2-l2)))
	return max(-1, lo), min(1, hi)
}

// bootstrapMean returns the mean of x (non-empty) with a percentile
// bootstrap interval over its elements (Tasks is len(x)). Draws are
// averaged by stat.Mean too, so a constant x gives Lo = Est = Hi exactly.
func bootstrapMean(x []float64, rng *rand.Rand, resamples int) Interval {
	est := stat.Mean(x, nil)
	if len(x) == 1 {
		return Interval{Est: est, Lo: est, Hi: est, Tasks: 1}
	}
	draws := make([]float64, resampleCount(resamples))
	sample := make([]float64, len(x))
	for r := range draws {
		for i := range sample {
			sample[i] = x[rng.IntN(len(x))]
		}
		draws[r] = stat.Mean(sample, nil)
	}
	lo, hi := percentile95(draws)
	return Interval{Est: est, Lo: lo, Hi: hi, Tasks: len(x)}
}

// percentile95 sorts draws in place and returns their 2.5% and 97.5%
// empirical quantiles (stat.Quantile, stat.Empirical).
func percentile95(draws []float64) (lo, hi float64) {
	slices.Sort(draws)
	return stat.Quantile(0.025, stat.Empirical, draws, nil),
		stat.Quantile(0.975, stat.Empirical, draws, nil)
}

func resampleCount(resamples int) int {
	if resamples <= 0 {
		return DefaultResamples
	}
	return resamples
}

func positive(x float64) bool {
	return x > 0 && !math.IsInf(x, 1)
}
