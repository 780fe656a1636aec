package report

import (
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

// Interval is an estimate with a 95% interval: Lo <= Est <= Hi in all but
// pathological bootstrap samples.
type Interval struct {
	Est float64 `json:"est"`
	Lo  float64 `json:"lo"`
	Hi  float64 `json:"hi"`
}

// Dist describes per-trial values of one (model, condition): their count,
// mean with a bootstrap 95% interval over tasks, and median and quartiles
// over trials.
type Dist struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Median float64 `json:"median"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
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
	nf := float64(n)
	p := float64(k) / nf
	z2 := Z95 * Z95
	denom := 1 + z2/nf
	centre := (p + z2/(2*nf)) / denom
	half := Z95 / denom * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	iv := Interval{Est: p, Lo: max(0, centre-half), Hi: min(1, centre+half)}
	if k == 0 {
		iv.Lo = 0
	}
	if k == n {
		iv.Hi = 1
	}
	return iv
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
// With no values Describe returns the zero Dist (N 0). Values must be
// finite. Describe does not modify its arguments.
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
	if len(ids) == 1 {
		d.Lo, d.Hi = d.Mean, d.Mean
		return d
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
	d.Lo, d.Hi = percentile95(draws)
	return d
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
	return Interval{Est: math.Exp(iv.Est), Lo: math.Exp(iv.Lo), Hi: math.Exp(iv.Hi)}, skipped
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

// bootstrapMean returns the mean of x (non-empty) with a percentile
// bootstrap interval over its elements. Draws are averaged by stat.Mean
// too, so a constant x gives Lo = Est = Hi exactly.
func bootstrapMean(x []float64, rng *rand.Rand, resamples int) Interval {
	est := stat.Mean(x, nil)
	if len(x) == 1 {
		return Interval{Est: est, Lo: est, Hi: est}
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
	return Interval{Est: est, Lo: lo, Hi: hi}
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
