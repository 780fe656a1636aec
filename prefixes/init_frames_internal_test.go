package prefixes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCSVFrameOptions: the read_csv arguments and the dtypes Init predicts
// for CSV text as it is written. (That pandas agrees is checked in the
// kernel image by TestInitFramesMessy and TestInitFramesRealWorld.)
func TestCSVFrameOptions(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		delim  rune
		args   string
		dtypes []string
	}{
		{"plain", "a,b,c\n1,x,1.5\n2,y,\n", ',', `pd.read_csv(P)`, []string{"int64", "object", "float64"}},
		{"space after the delimiter", "a, b\n1, x\n2, \"y, z\"\n", ',', `pd.read_csv(P, skipinitialspace=True)`, []string{"int64", "object"}},
		{"thousands with spaces", "a;b\n1 234;x\n12;y\n", ';', `pd.read_csv(P, sep=';', thousands=' ')`, []string{"int64", "object"}},
		{"decimal commas", "a;b\n3,20;1\n1,05;2\n", ';', `pd.read_csv(P, sep=';', decimal=',')`, []string{"float64", "int64"}},
		{"European numbers", "a;b\n1.234,50;x\n7,25;y\n", ';', `pd.read_csv(P, sep=';', thousands='.', decimal=',')`, []string{"float64", "object"}},
		{"thousands with commas", "a\tb\n1,234,567\tx\n12\ty\n", '\t', `pd.read_csv(P, sep='\t', thousands=',')`, []string{"int64", "object"}},
		{"ambiguous 1,234", "a;b\n1,234;x\n", ';', `pd.read_csv(P, sep=';')`, []string{"object", "object"}},
		{"booleans, with a gap", "a,b\nTrue,false\nFalse,\n", ',', `pd.read_csv(P)`, []string{"bool", "object"}},
		{"missing markers", "a,b\nNA,1\nnull,n/a\n3,4\n", ',', `pd.read_csv(P)`, []string{"float64", "float64"}},
		{"ragged", "a,b\n1,2,3\n4\n", ',', `pd.read_csv(P, skiprows=1, names=['a', 'b', 'extra_1'])`, []string{"int64", "float64", "float64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &dataFile{format: "csv", delim: tt.delim, table: true}
			f.frame = csvFrame(tt.text, tt.delim)
			assert.Equal(t, tt.args, frameRead(f, "P"))
			var got []string
			for _, c := range f.frame.cols {
				got = append(got, c.dtype(false))
			}
			assert.Equal(t, tt.dtypes, got)
		})
	}
}

func TestParseStyle(t *testing.T) {
	for in, want := range map[string]Style{"": StyleFrames, "frames": StyleFrames, "records": StyleRecords} {
		got, err := ParseStyle(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseStyle("rows")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown prefix style "rows": use frames (pandas DataFrames) or records (lists of dicts)`)
	_, err = InitWith(t.TempDir(), InitOptions{Style: "rows"})
	assert.ErrorContains(t, err, "unknown prefix style")
}
