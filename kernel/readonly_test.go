package kernel

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seen is an entry of a read-only copy, as a test compares it.
type seen struct {
	Rel  string
	Dir  bool
	Mode fs.FileMode
	Size int64
}

// dataTree writes a data folder with every kind of entry a walk must judge,
// and returns it with the entries a read-only copy of it holds, in order.
func dataTree(t *testing.T) (string, []seen) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "data")
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o640))
	}
	write(filepath.Join(root, "a.jsonl"), "{\"a\":1}\n")
	write(filepath.Join(root, "sub", "x.csv"), "a,b\n")
	write(filepath.Join(root, "sub", "deeper", "y.txt"), "y")
	write(filepath.Join(base, "outside.txt"), "from outside")
	require.NoError(t, os.Symlink("sub/x.csv", filepath.Join(root, "link-file")))
	require.NoError(t, os.Symlink(filepath.Join(base, "outside.txt"), filepath.Join(root, "link-outside")))
	require.NoError(t, os.Symlink("sub", filepath.Join(root, "link-dir")))
	require.NoError(t, os.Symlink(".", filepath.Join(root, "loop")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	return root, []seen{
		{"a.jsonl", false, 0o444, 8},
		{"link-file", false, 0o444, 4},     // the file a link leads to
		{"link-outside", false, 0o444, 12}, // even outside the tree
		{"sub", true, 0o555, 0},
		{"sub/deeper", true, 0o555, 0},
		{"sub/deeper/y.txt", false, 0o444, 1},
		{"sub/x.csv", false, 0o444, 4},
		// not: link-dir, loop (folder links), dangling, fifo
	}
}

func walkAll(t *testing.T, root string, limit int64) ([]seen, error) {
	t.Helper()
	var got []seen
	err := WalkReadOnly(root, limit, func(e DataEntry) error {
		got = append(got, seen{e.Rel, e.Dir, e.Mode, e.Size})
		_, serr := os.Stat(e.Path)
		assert.NoError(t, serr, "Path is where to read %s", e.Rel)
		return nil
	})
	return got, err
}

func TestWalkReadOnly(t *testing.T) {
	root, want := dataTree(t)
	var total int64
	for _, e := range want {
		total += e.Size
	}
	link := filepath.Join(t.TempDir(), "data-link")
	require.NoError(t, os.Symlink(root, link))

	t.Run("entries", func(t *testing.T) {
		got, err := walkAll(t, root, 0)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("root is a link", func(t *testing.T) {
		got, err := walkAll(t, link, 0)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("at the limit", func(t *testing.T) {
		_, err := walkAll(t, root, total)
		assert.NoError(t, err)
	})
	t.Run("over the limit", func(t *testing.T) {
		_, err := walkAll(t, root, total-1)
		var big *DataTooLargeError
		require.ErrorAs(t, err, &big)
		assert.Equal(t, total-1, big.Limit)
	})
	t.Run("fn stops it", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		err := WalkReadOnly(root, 0, func(DataEntry) error { n++; return stop })
		assert.ErrorIs(t, err, stop)
		assert.Equal(t, 1, n)
	})
	t.Run("unreadable folder", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads every folder")
		}
		closed := filepath.Join(t.TempDir(), "d")
		require.NoError(t, os.MkdirAll(filepath.Join(closed, "no"), 0o755))
		require.NoError(t, os.Chmod(filepath.Join(closed, "no"), 0))
		t.Cleanup(func() { _ = os.Chmod(filepath.Join(closed, "no"), 0o755) })
		_, err := walkAll(t, closed, 0)
		assert.ErrorIs(t, err, fs.ErrPermission)
	})
}

// TestCopyReadOnlyHoldsWhatTheWalkShows: the local kernel's copy holds
// exactly the walk's entries with its modes, the root read-only too, also
// when the data folder is named by a link.
func TestCopyReadOnlyHoldsWhatTheWalkShows(t *testing.T) {
	root, want := dataTree(t)
	link := filepath.Join(t.TempDir(), "data-link")
	require.NoError(t, os.Symlink(root, link))
	for name, src := range map[string]string{"folder": root, "link": link} {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy")
			t.Cleanup(func() { _ = removeTree(dst) })
			require.NoError(t, copyReadOnly(src, dst, 1<<20))
			var got []seen
			require.NoError(t, filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
				require.NoError(t, err)
				info, err := d.Info()
				require.NoError(t, err)
				if p == dst {
					assert.Equal(t, fs.FileMode(0o555), info.Mode().Perm(), "the copy's root")
					return nil
				}
				rel, _ := filepath.Rel(dst, p)
				s := seen{filepath.ToSlash(rel), d.IsDir(), info.Mode().Perm(), 0}
				if !d.IsDir() {
					s.Size = info.Size()
					assert.True(t, info.Mode().IsRegular(), "%s is a file, not a link", rel)
				}
				got = append(got, s)
				return nil
			}))
			assert.Equal(t, want, got)
		})
	}
}
