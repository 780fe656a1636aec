package sandbox

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"100", 100},
		{"0", 0},
		{"512m", 512 << 20},
		{"2g", 2 << 30},
		{"2G", 2 << 30},
		{"1536k", 1536 << 10},
		{"1.5g", 3 << 29},
		{"64MB", 64 << 20},
		{"64mib", 64 << 20},
		{"10b", 10},
		{" 6m ", 6 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	for _, bad := range []string{"", "lots", "-1m", "m", "2t", "1g2", "inf", "NaN", "1e30g"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := ParseSize(bad)
			var ie *InputError
			require.True(t, errors.As(err, &ie), "want an *InputError, got %v", err)
			assert.Contains(t, err.Error(), `is not a size: expected a number with an optional unit k, m or g (e.g. 512m)`)
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{100, "100"},
		{1 << 10, "1k"},
		{1536 << 10, "1536k"},
		{6 << 20, "6m"},
		{512 << 20, "512m"},
		{2 << 30, "2g"},
		{3 << 29, "1536m"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, FormatSize(tt.n))
			back, err := ParseSize(tt.want)
			require.NoError(t, err)
			assert.Equal(t, tt.n, back, "ParseSize reads what FormatSize writes")
		})
	}
}
