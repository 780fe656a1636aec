package datasets_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
)

// TestCached: the first call generates the data set into the cache folder
// and says so; the second finds it there and says nothing.
func TestCached(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)

	var warn bytes.Buffer
	dir, err := datasets.Cached(tier, 3, &warn)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(cache, "ctxcode", fmt.Sprintf("pm-s-3-v%d", datasets.GeneratorVersion)), dir)
	assert.Contains(t, warn.String(), "generating the built-in data set (tier s, seed 3) into "+dir)
	d, m, err := datasets.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, "s", m.Tier)
	assert.EqualValues(t, 3, m.Seed)
	assert.Len(t, d.Tasks, tier.Tasks)

	warn.Reset()
	again, err := datasets.Cached(tier, 3, &warn)
	require.NoError(t, err)
	assert.Equal(t, dir, again)
	assert.Empty(t, warn.String(), "the data set is generated once")
}
