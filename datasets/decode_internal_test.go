package datasets

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitLines(t *testing.T) {
	b := []byte("aa\nbb\ncc\ndd\nee")
	for _, tc := range []struct {
		n, min int
		want   []string
	}{
		{1, 1, []string{"aa\nbb\ncc\ndd\nee"}},
		{2, 1, []string{"aa\nbb\ncc\n", "dd\nee"}},
		{3, 1, []string{"aa\nbb\n", "cc\ndd\n", "ee"}},
		{8, 1, []string{"aa\n", "bb\n", "cc\n", "dd\n", "ee"}},
		{2, 100, []string{"aa\nbb\ncc\ndd\nee"}},
	} {
		t.Run(fmt.Sprintf("%d parts of %d", tc.n, tc.min), func(t *testing.T) {
			var got []string
			for _, p := range splitLines(b, tc.n, tc.min) {
				got = append(got, string(p))
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, string(b), strings.Join(got, ""))
		})
	}
	assert.Empty(t, splitLines(nil, 2, 1))
}

// TestDecodeLinesInParts: decoded in parts, a large file gives the rows of
// one pass, and a bad row is named by its number in the whole file.
func TestDecodeLinesInParts(t *testing.T) {
	var b bytes.Buffer
	for i := range 40000 {
		fmt.Fprintf(&b, `{"id":"T%05d","name":"team %d"}`+"\n", i, i)
	}
	rows, err := decodeLines[Team](b.Bytes(), 40000)
	require.NoError(t, err)
	one, err := decodeAll[Team](b.Bytes(), 0)
	require.NoError(t, err)
	assert.Equal(t, one, rows)
	require.Len(t, rows, 40000)
	assert.Equal(t, Team{ID: "T39999", Name: "team 39999"}, rows[39999])

	bad := bytes.Replace(b.Bytes(), []byte(`{"id":"T30000",`), []byte(`{"id":"T30000","extra":1,`), 1)
	_, err = decodeLines[Team](bad, 0)
	assert.ErrorContains(t, err, "row 30001:")
	assert.ErrorContains(t, err, `unknown field "extra"`)
}
