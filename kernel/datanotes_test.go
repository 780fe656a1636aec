package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDataNotes(t *testing.T) {
	tr := dataTree(t)
	t.Run("what no kernel sees", func(t *testing.T) {
		notes := DataNotes(tr.root, false)
		require.Len(t, notes, len(tr.skipped), "%q", notes)
		for rel, word := range tr.skipped {
			line := lineFor(notes, filepath.Join(tr.root, rel)+":")
			require.NotEmpty(t, line, rel)
			assert.True(t, strings.HasPrefix(line, "warning: skipped "), line)
			assert.Contains(t, line, word)
			assert.Contains(t, line, "no kernel sees it")
			assert.Equal(t, rel == "link-outside" || rel == "sub/up", strings.HasSuffix(line, "(--follow-links takes it)"), line)
		}
	})
	t.Run("follow links", func(t *testing.T) {
		notes := DataNotes(tr.root, true)
		line := lineFor(notes, filepath.Join(tr.root, "link-outside")+",")
		assert.True(t, strings.HasPrefix(line, "--follow-links: took "), "%q", notes)
		assert.Contains(t, line, "outside the data folder")
		assert.Empty(t, lineFor(notes, "(--follow-links takes it)"), "nothing it takes is said to be skipped")
	})
	t.Run("a clean folder", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.csv"), []byte("x\n"), 0o644))
		assert.Empty(t, DataNotes(dir, false))
	})
	t.Run("many", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(t.TempDir(), "secret")
		require.NoError(t, os.WriteFile(out, nil, 0o644))
		for i := range maxDataNotes + 5 {
			require.NoError(t, os.Symlink(out, filepath.Join(dir, fmt.Sprintf("l%02d", i))))
		}
		notes := DataNotes(dir, false)
		require.Len(t, notes, maxDataNotes+1)
		assert.Equal(t, "and 5 more entries of "+dir+" like these", notes[maxDataNotes])
	})
	t.Run("no folder", func(t *testing.T) {
		assert.Empty(t, DataNotes(filepath.Join(t.TempDir(), "none"), false))
	})
}

func lineFor(lines []string, part string) string {
	for _, l := range lines {
		if strings.Contains(l, part) {
			return l
		}
	}
	return ""
}
