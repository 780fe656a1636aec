package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
)

func TestWilson(t *testing.T) {
	// Known values, computed independently with Python's standard library:
	//
	//	from math import sqrt
	//	z = 1.959964
	//	p = k/n; d = 1 + z*z/n; c = (p + z*z/(2*n))/d
	//	h = z/d*sqrt(p*(1-p)/n + z*z/(4*n*n)); print(c-h, c+h)
	tests := []struct {
		name   string
		k, n   int
		est    float64
		lo, hi float64
	}{
		{"8 of 10", 8, 10, 0.8, 0.490162, 0.943318},
		{"0 of 10", 0, 10, 0, 0, 0.277533},
		{"10 of 10", 10, 10, 1, 0.722467, 1},
		{"24 of 24", 24, 24, 1, 0.862024, 1},
		{"1 of 2", 1, 2, 0.5, 0.094531, 0.905469},
		{"5 of 10", 5, 10, 0.5, 0.236593, 0.763407},
		{"0 of 1", 0, 1, 0, 0, 0.793451},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Wilson(tt.k, tt.n)
			assert.Equal(t, tt.est, got.Est)
			assert.InDelta(t, tt.lo, got.Lo, 1e-6)
			assert.InDelta(t, tt.hi, got.Hi, 1e-6)
			assert.GreaterOrEqual(t, got.Lo, 0.0)
			assert.LessOrEqual(t, got.Hi, 1.0)
		})
	}

	t.Run("bounds are exact at the ends", func(t *testing.T) {
		for _, n := range []int{1, 3, 7, 24, 1000} {
			assert.Equal(t, 0.0, Wilson(0, n).Lo, "n=%d", n)
			assert.Equal(t, 1.0, Wilson(n, n).Hi, "n=%d", n)
		}
	})

	t.Run("no trials is the whole range, and no interval in JSON", func(t *testing.T) {
		got := Wilson(0, 0)
		assert.Equal(t, Interval{Est: 0, Lo: 0, Hi: 1}, got)
		b, err := json.Marshal(got)
		require.NoError(t, err)
		assert.JSONEq(t, `{"est":0,"lo":null,"hi":null,"tasks":0}`, string(b))
	})

	t.Run("narrows as n grows", func(t *testing.T) {
		w10, w100 := Wilson(5, 10), Wilson(50, 100)
		assert.Less(t, w100.Hi-w100.Lo, w10.Hi-w10.Lo)
	})

	t.Run("bad counts panic", func(t *testing.T) {
		assert.Panics(t, func() { Wilson(3, 2) })
		assert.Panics(t, func() { Wilson(-1, 2) })
		assert.Panics(t, func() { Wilson(0, -1) })
	})
}

func TestDescribeQuantiles(t *testing.T) {
	// stat.Empirical: the q-quantile of n sorted values is the value at
	// 1-based rank ceil(q*n).
	tests := []struct {
		name           string
		values         []float64
		mean           float64
		q1, median, q3 float64
	}{
		// ranks ceil(1.25)=2, ceil(2.5)=3, ceil(3.75)=4
		{"odd count", []float64{5, 1, 4, 2, 3}, 3, 2, 3, 4},
		// ranks 1, 2, 3: the lower middle value is the median
		{"even count", []float64{4, 3, 2, 1}, 2.5, 1, 2, 3},
		// ranks ceil(2.5)=3, 5, ceil(7.5)=8
		{"ten values", []float64{100, 90, 80, 70, 60, 50, 40, 30, 20, 10}, 55, 30, 50, 80},
		{"one value", []float64{7}, 7, 7, 7, 7},
		{"ties", []float64{2, 2, 2, 9}, 3.75, 2, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups := make([]int, len(tt.values))
			for i := range groups {
				groups[i] = i // one trial per task
			}
			before := slices.Clone(tt.values)
			got := Describe(tt.values, groups, NewRand(1), 200)
			assert.Equal(t, before, tt.values, "Describe must not sort its input")
			assert.Equal(t, len(tt.values), got.N)
			assert.InDelta(t, tt.mean, got.Mean, 1e-12)
			assert.Equal(t, tt.q1, got.Q1, "Q1")
			assert.Equal(t, tt.median, got.Median, "median")
			assert.Equal(t, tt.q3, got.Q3, "Q3")
			assert.LessOrEqual(t, got.Lo, got.Mean)
			assert.GreaterOrEqual(t, got.Hi, got.Mean)
		})
	}
}

func TestDescribeEdges(t *testing.T) {
	t.Run("empty is the zero Dist", func(t *testing.T) {
		assert.Equal(t, Dist{}, Describe(nil, nil, nil, 0))
	})

	t.Run("one task: the interval is the mean", func(t *testing.T) {
		// rng is nil: with one task there is nothing to draw.
		got := Describe([]float64{1, 2, 6}, []int{4, 4, 4}, nil, 0)
		assert.Equal(t, Dist{N: 3, Tasks: 1, Mean: 3, Lo: 3, Hi: 3, Median: 2, Q1: 1, Q3: 6}, got)
	})

	t.Run("length mismatch panics", func(t *testing.T) {
		assert.Panics(t, func() { Describe([]float64{1, 2}, []int{0}, NewRand(1), 10) })
	})

	t.Run("JSON names", func(t *testing.T) {
		b, err := json.Marshal(Dist{N: 2, Tasks: 2, Mean: 1, Lo: 0.5, Hi: 1.5, Median: 1, Q1: 0.5, Q3: 1.5})
		require.NoError(t, err)
		assert.JSONEq(t, `{"n":2,"tasks":2,"mean":1,"lo":0.5,"hi":1.5,"median":1,"q1":0.5,"q3":1.5}`, string(b))
	})

	t.Run("resamples <= 0 means DefaultResamples", func(t *testing.T) {
		values, groups := normalSample(NewRand(9), 30, 3)
		assert.Equal(t,
			Describe(values, groups, NewRand(5), DefaultResamples),
			Describe(values, groups, NewRand(5), 0))
	})
}

// TestDescribeResamplesTasks checks that the bootstrap draws tasks, not
// trials. Task 17 has nine trials of 0, task 3 one trial of 10; the mean of
// the ten trials is 1.
//
// Drawing two tasks with replacement gives {17,17} (mean 0) with
// probability 1/4, {3,3} (mean 10) with 1/4 and a mix (10/10 = 1) with
// 1/2, so the 2.5% and 97.5% points of the draws are 0 and 10: the
// interval spans both task means.
//
// Drawing ten trials instead would count the tens as Binomial(10, 0.1),
// whose 97.5% point is 3 (P(X <= 2) = 0.930, P(X <= 3) = 0.987), so the
// interval would be [0, 3].
func TestDescribeResamplesTasks(t *testing.T) {
	values := []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 10}
	groups := []int{17, 17, 17, 17, 17, 17, 17, 17, 17, 3}
	got := Describe(values, groups, NewRand(1), 2000)
	assert.Equal(t, 10, got.N)
	assert.InDelta(t, 1.0, got.Mean, 1e-12)
	assert.Equal(t, 0.0, got.Lo)
	assert.Equal(t, 10.0, got.Hi)
	assert.Equal(t, 0.0, got.Median)
}

func TestDescribeNarrows(t *testing.T) {
	// Standard normal values, three trials per task; the trials of a task
	// are independent here, so the mean over k tasks has a standard error
	// of about sd/sqrt(3k), and a 95% interval about 3.92 times that.
	src := NewRand(42)
	var prev float64 = math.Inf(1)
	for _, tasks := range []int{10, 100, 1000} {
		values, groups := normalSample(src, tasks, 3)
		got := Describe(values, groups, NewRand(7), 2000)
		width := got.Hi - got.Lo
		assert.Less(t, got.Lo, got.Mean, "tasks=%d", tasks)
		assert.Greater(t, got.Hi, got.Mean, "tasks=%d", tasks)
		assert.Less(t, width, prev, "tasks=%d", tasks)
		want := 2 * Z95 * stat.StdDev(values, nil) / math.Sqrt(float64(len(values)))
		assert.InEpsilon(t, want, width, 0.25, "tasks=%d", tasks)
		prev = width
	}
}

func TestDescribeDeterministic(t *testing.T) {
	values, groups := normalSample(NewRand(3), 40, 2)
	a := Describe(values, groups, NewRand(11), 500)
	b := Describe(values, groups, NewRand(11), 500)
	c := Describe(values, groups, NewRand(12), 500)
	assert.Equal(t, a, b, "same seed")
	assert.NotEqual(t, [2]float64{a.Lo, a.Hi}, [2]float64{c.Lo, c.Hi}, "different seed")
	assert.Equal(t, a.Mean, c.Mean, "the estimate does not depend on the seed")
}

func TestGeoMeanRatio(t *testing.T) {
	t.Run("constant ratio", func(t *testing.T) {
		a := []float64{1, 3, 10, 250, 0.5}
		b := []float64{2, 6, 20, 500, 1}
		got, skipped := GeoMeanRatio(a, b, NewRand(1), 1000)
		assert.Equal(t, 0, skipped)
		assert.InDelta(t, 2, got.Est, 1e-12)
		assert.InDelta(t, 2, got.Lo, 1e-12)
		assert.InDelta(t, 2, got.Hi, 1e-12)
	})

	t.Run("ratios 1 and 4", func(t *testing.T) {
		// Est = exp((log 1 + log 4)/2) = 2. The draws of two pairs are
		// ratios {1,1} (1/4), {4,4} (1/4) or one of each (geometric mean
		// 2, 1/2), so the 2.5% and 97.5% points are 1 and 4.
		got, skipped := GeoMeanRatio([]float64{5, 5}, []float64{5, 20}, NewRand(1), 2000)
		assert.Equal(t, 0, skipped)
		assert.InDelta(t, 2, got.Est, 1e-12)
		assert.InDelta(t, 1, got.Lo, 1e-12)
		assert.InDelta(t, 4, got.Hi, 1e-12)
	})

	t.Run("one pair", func(t *testing.T) {
		got, skipped := GeoMeanRatio([]float64{3}, []float64{6}, nil, 0)
		assert.Equal(t, 0, skipped)
		assert.InDelta(t, 2, got.Est, 1e-12)
		assert.Equal(t, got.Est, got.Lo)
		assert.Equal(t, got.Est, got.Hi)
	})

	t.Run("non-positive and non-finite pairs are skipped", func(t *testing.T) {
		nan, inf := math.NaN(), math.Inf(1)
		a := []float64{4, 0, -1, 2, nan, 1, inf, 1, 4}
		b := []float64{12, 5, 5, 0, 1, nan, 1, inf, 12}
		got, skipped := GeoMeanRatio(a, b, NewRand(1), 100)
		assert.Equal(t, 7, skipped)
		assert.InDelta(t, 3, got.Est, 1e-12)
		assert.InDelta(t, 3, got.Lo, 1e-12)
		assert.InDelta(t, 3, got.Hi, 1e-12)
	})

	t.Run("no usable pair is the zero Interval", func(t *testing.T) {
		got, skipped := GeoMeanRatio([]float64{0, 1}, []float64{1, -2}, nil, 0)
		assert.Equal(t, Interval{}, got)
		assert.Equal(t, 2, skipped)
		got, skipped = GeoMeanRatio(nil, nil, nil, 0)
		assert.Equal(t, Interval{}, got)
		assert.Equal(t, 0, skipped)
	})

	t.Run("noisy ratios", func(t *testing.T) {
		a, b := ratioSample(NewRand(4), 60)
		x, _ := GeoMeanRatio(a, b, NewRand(8), 1000)
		y, _ := GeoMeanRatio(a, b, NewRand(8), 1000)
		z, _ := GeoMeanRatio(a, b, NewRand(9), 1000)
		assert.Equal(t, x, y, "same seed")
		assert.NotEqual(t, x, z, "different seed")
		assert.Equal(t, x.Est, z.Est)
		assert.Less(t, x.Lo, x.Est)
		assert.Greater(t, x.Hi, x.Est)
		assert.InDelta(t, 1.5, x.Est, 0.2, "ratios scatter around 1.5")
	})

	t.Run("length mismatch panics", func(t *testing.T) {
		assert.Panics(t, func() { GeoMeanRatio([]float64{1}, nil, NewRand(1), 10) })
	})
}

func TestMeanDiff(t *testing.T) {
	t.Run("constant difference", func(t *testing.T) {
		a := []float64{0, 0.5, 0.25, 0.75}
		b := []float64{0.25, 0.75, 0.5, 1}
		got := MeanDiff(a, b, NewRand(1), 1000)
		assert.Equal(t, Interval{Est: 0.25, Lo: 0.25, Hi: 0.25, Tasks: 4}, got)
	})

	t.Run("differences 0 and 1", func(t *testing.T) {
		// Draws of two tasks: 0 (1/4), 1 (1/4), 0.5 (1/2).
		got := MeanDiff([]float64{1, 0}, []float64{1, 1}, NewRand(1), 2000)
		assert.Equal(t, Interval{Est: 0.5, Lo: 0, Hi: 1, Tasks: 2}, got)
	})

	t.Run("b worse than a is negative", func(t *testing.T) {
		got := MeanDiff([]float64{1, 1, 1}, []float64{0, 0, 0}, NewRand(1), 100)
		assert.Equal(t, Interval{Est: -1, Lo: -1, Hi: -1, Tasks: 3}, got)
	})

	t.Run("one task", func(t *testing.T) {
		assert.Equal(t, Interval{Est: 0.5, Lo: 0.5, Hi: 0.5, Tasks: 1},
			MeanDiff([]float64{0.25}, []float64{0.75}, nil, 0))
	})

	t.Run("no tasks is the zero Interval", func(t *testing.T) {
		assert.Equal(t, Interval{}, MeanDiff(nil, nil, nil, 0))
	})

	t.Run("narrows and is deterministic", func(t *testing.T) {
		src := NewRand(5)
		prev := math.Inf(1)
		for _, n := range []int{10, 100, 1000} {
			a, b := make([]float64, n), make([]float64, n)
			for i := range a {
				a[i] = src.Float64()
				b[i] = a[i] + 0.1 + src.NormFloat64()*0.2
			}
			got := MeanDiff(a, b, NewRand(6), 1000)
			assert.Equal(t, got, MeanDiff(a, b, NewRand(6), 1000), "n=%d", n)
			assert.NotEqual(t, got, MeanDiff(a, b, NewRand(7), 1000), "n=%d", n)
			assert.Less(t, got.Lo, got.Est, "n=%d", n)
			assert.Greater(t, got.Hi, got.Est, "n=%d", n)
			assert.Less(t, got.Hi-got.Lo, prev, "n=%d", n)
			prev = got.Hi - got.Lo
		}
	})

	t.Run("length mismatch panics", func(t *testing.T) {
		assert.Panics(t, func() { MeanDiff([]float64{1}, []float64{1, 2}, NewRand(1), 10) })
	})
}

func TestNewRand(t *testing.T) {
	draw := func(seed uint64) []uint64 {
		r := NewRand(seed)
		out := make([]uint64, 8)
		for i := range out {
			out[i] = r.Uint64()
		}
		return out
	}
	assert.Equal(t, draw(1), draw(1))
	assert.NotEqual(t, draw(1), draw(2))
	assert.NotEqual(t, draw(0), draw(1))
}

// normalSample returns tasks*trials standard normal values, trials per
// task, with the task index as group.
func normalSample(r *rand.Rand, tasks, trials int) ([]float64, []int) {
	var values []float64
	var groups []int
	for task := range tasks {
		for range trials {
			values = append(values, r.NormFloat64())
			groups = append(groups, task)
		}
	}
	return values, groups
}

// ratioSample returns n pairs of costs whose ratio b/a is 1.5 times a
// log-normal factor with median 1.
func ratioSample(r *rand.Rand, n int) (a, b []float64) {
	a, b = make([]float64, n), make([]float64, n)
	for i := range a {
		a[i] = 1000 + 9000*r.Float64()
		b[i] = a[i] * 1.5 * math.Exp(0.3*r.NormFloat64())
	}
	return a, b
}
