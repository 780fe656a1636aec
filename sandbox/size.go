package sandbox

import (
	"math"
	"strconv"
	"strings"
)

// Sizes, such as the limits --memory, --memory-swap and --tmp-size take,
// are written as a number of bytes with an optional unit k, m or g
// (powers of 1024; "kb", "kib", "MB" and the like are the same), as
// Docker writes them: 512m, 2g, 1.5g, 100.

// ParseSize reads a size such as 512m or 2g. A size that is not a
// non-negative number with an optional unit, or is too large, is an *InputError that quotes
// it and says what is expected. A fraction of a byte is dropped.
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	if t != "" {
		switch t[len(t)-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || !(n >= 0) || n*float64(mult) >= math.MaxInt64 { // NaN, infinity

		return 0, inputErrorf("%q is not a size: expected a number with an optional unit k, m or g (e.g. 512m)", s)
	}
	return int64(n * float64(mult)), nil
}

// FormatSize writes n bytes as ParseSize reads them, in the largest unit
// that divides n: 6m, 2g, 1536k, 100.
func FormatSize(n int64) string {
	for _, u := range []struct {
		size int64
		unit string
	}{{1 << 30, "g"}, {1 << 20, "m"}, {1 << 10, "k"}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.unit
		}
	}
	return strconv.FormatInt(n, 10)
}
