package kernel

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// tree is a data folder with every kind of entry a walk must judge: what
// a walk takes of it by default, what --follow-links adds, and what it
// leaves out (each with a word of why).
type tree struct {
	root    string
	want    []seen            // by default, in walk order
	follow  []seen            // with FollowLinks
	skipped map[string]string // rel: a word the reason holds, by default
}

func dataTree(t *testing.T) tree {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "data")
	write := func(p, s string, perm fs.FileMode) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), perm))
	}
	write(filepath.Join(root, "a.jsonl"), "{\"a\":1}\n", 0o640)
	write(filepath.Join(root, "sub", "x.csv"), "a,b\n", 0o640)
	write(filepath.Join(root, "sub", "deeper", "y.txt"), "y", 0o640)
	write(filepath.Join(base, "secret.txt"), "from outside", 0o600)
	require.NoError(t, os.Symlink("sub/x.csv", filepath.Join(root, "link-file")))
	require.NoError(t, os.Symlink(filepath.Join(root, "a.jsonl"), filepath.Join(root, "link-abs")))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(root, "link-outside")))
	require.NoError(t, os.Symlink("../../secret.txt", filepath.Join(root, "sub", "up")))
	require.NoError(t, os.Symlink("sub", filepath.Join(root, "link-dir")))
	require.NoError(t, os.Symlink(".", filepath.Join(root, "loop")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
	require.NoError(t, os.Symlink("/dev/null", filepath.Join(root, "null.csv")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo.csv"), 0o644))
	l, err := net.Listen("unix", filepath.Join(root, "sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	tr := tree{root: root,
		want: []seen{
			{"a.jsonl", false, 0o444, 8},
			{"link-abs", false, 0o444, 8},  // a link inside, written as an absolute path
			{"link-file", false, 0o444, 4}, // the file a link leads to
			{"sub", true, 0o555, 0},
			{"sub/deeper", true, 0o555, 0},
			{"sub/deeper/y.txt", false, 0o444, 1},
			{"sub/x.csv", false, 0o444, 4},
		},
		skipped: map[string]string{
			"link-outside": "outside the data folder",
			"sub/up":       "outside the data folder",
			"link-dir":     "links to folders are not followed",
			"loop":         "links to folders are not followed",
			"dangling":     "leads nowhere",
			"null.csv":     "a device: never opened",
			"fifo.csv":     "a named pipe (FIFO): never opened",
			"sock":         "a socket: never opened",
		},
	}
	tr.follow = append(append(append([]seen(nil), tr.want[:3]...), seen{"link-outside", false, 0o444, 12}), tr.want[3:5]...)
	tr.follow = append(append(tr.follow, tr.want[5]), seen{"sub/up", false, 0o444, 12}, tr.want[6])
	return tr
}

func walkAll(t *testing.T, root string, o WalkOptions) ([]seen, error) {
	t.Helper()
	var got []seen
	err := WalkReadOnly(root, o, func(e DataEntry) error {
		got = append(got, seen{e.Rel, e.Dir, e.Mode, e.Size})
		_, serr := os.Stat(e.Path)
		assert.NoError(t, serr, "Path is where to read %s", e.Rel)
		return nil
	})
	return got, err
}

func TestWalkReadOnly(t *testing.T) {
	tr := dataTree(t)
	var total int64
	for _, e := range tr.want {
		total += e.Size
	}
	link := filepath.Join(t.TempDir(), "data-link")
	require.NoError(t, os.Symlink(tr.root, link))

	t.Run("entries", func(t *testing.T) {
		got, err := walkAll(t, tr.root, WalkOptions{})
		require.NoError(t, err)
		assert.Equal(t, tr.want, got)
	})
	t.Run("what it leaves out, and why", func(t *testing.T) {
		why := map[string]string{}
		_, err := walkAll(t, tr.root, WalkOptions{Skipped: func(s DataSkip) { why[s.Rel] = s.Why }})
		require.NoError(t, err)
		require.Len(t, why, len(tr.skipped), "%v", why)
		for rel, word := range tr.skipped {
			assert.Contains(t, why[rel], word, rel)
		}
		assert.Contains(t, why["link-outside"], filepath.Dir(tr.root), "the reason names where the link leads")
	})
	t.Run("follow links", func(t *testing.T) {
		var skipped []string
		got, err := walkAll(t, tr.root, WalkOptions{FollowLinks: true, Skipped: func(s DataSkip) { skipped = append(skipped, s.Rel) }})
		require.NoError(t, err)
		assert.Equal(t, tr.follow, got)
		assert.ElementsMatch(t, []string{"link-dir", "loop", "dangling", "null.csv", "fifo.csv", "sock"}, skipped,
			"only links out of the folder are taken; pipes, sockets and devices never")
	})
	t.Run("root is a link", func(t *testing.T) {
		got, err := walkAll(t, link, WalkOptions{})
		require.NoError(t, err)
		assert.Equal(t, tr.want, got)
	})
	t.Run("at the limit", func(t *testing.T) {
		_, err := walkAll(t, tr.root, WalkOptions{Limit: total})
		assert.NoError(t, err)
	})
	t.Run("over the limit", func(t *testing.T) {
		_, err := walkAll(t, tr.root, WalkOptions{Limit: total - 1})
		var big *DataTooLargeError
		require.ErrorAs(t, err, &big)
		assert.Equal(t, total-1, big.Limit)
	})
	t.Run("fn stops it", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		err := WalkReadOnly(tr.root, WalkOptions{}, func(DataEntry) error { n++; return stop })
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
		_, err := walkAll(t, closed, WalkOptions{})
		assert.ErrorIs(t, err, fs.ErrPermission)
	})
}

// TestLookupAndListAgreeWithTheWalk: the one definition of what is in a
// data folder answers the same whether a tree is walked, a path looked up
// (condition A's read) or a folder listed: every path on disk, also those
// through folder links, is an entry of one iff the walk gives it.
func TestLookupAndListAgreeWithTheWalk(t *testing.T) {
	tr := dataTree(t)
	var paths []string // every name on disk, and some through links
	require.NoError(t, filepath.WalkDir(tr.root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(tr.root, p)
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	}))
	paths = append(paths, "link-dir/x.csv", "loop/a.jsonl", "loop/sub/x.csv", "a.jsonl/x", "no-such-file", "../secret.txt")
	for _, follow := range []bool{false, true} {
		walked := map[string]DataEntry{}
		children := map[string][]string{"": nil}
		skips := map[string]string{}
		require.NoError(t, WalkReadOnly(tr.root, WalkOptions{FollowLinks: follow, Skipped: func(s DataSkip) { skips[s.Rel] = s.Why }},
			func(e DataEntry) error {
				walked[e.Rel] = e
				parent := filepath.ToSlash(filepath.Dir(e.Rel))
				if parent == "." {
					parent = ""
				}
				children[parent] = append(children[parent], e.Rel)
				if e.Dir {
					children[e.Rel] = children[e.Rel][:0:0]
				}
				return nil
			}))
		for _, rel := range paths {
			if rel == "." {
				continue
			}
			e, skip, err := LookupData(tr.root, rel, follow)
			want, in := walked[rel]
			switch {
			case in:
				require.NoError(t, err, rel)
				require.Nil(t, skip, rel)
				assert.Equal(t, want, e, "follow=%v %s", follow, rel)
			case skips[rel] != "":
				require.NoError(t, err, rel)
				require.NotNil(t, skip, "follow=%v %s", follow, rel)
				assert.Equal(t, skips[rel], skip.Why, rel)
			default:
				assert.True(t, skip != nil || errors.Is(err, fs.ErrNotExist), "follow=%v %s: not in the walk, so not found (%v)", follow, rel, err)
			}
		}
		for dir, want := range children {
			entries, _, err := ListData(tr.root, dir, follow)
			require.NoError(t, err, dir)
			var got []string
			for _, e := range entries {
				got = append(got, e.Rel)
			}
			sort.Strings(want)
			assert.Equal(t, want, got, "follow=%v: list %q", follow, dir)
		}
		_, _, err := ListData(tr.root, "link-dir", follow)
		assert.Error(t, err, "a folder reached by a link is not listed")
	}
}

// TestOpenDataNeverBlocks: a file that became a named pipe after the walk
// is refused at once, not waited on.
func TestOpenDataNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.csv")
	require.NoError(t, os.WriteFile(p, []byte("a,b\n"), 0o644))
	e, skip, err := LookupData(dir, "x.csv", false)
	require.NoError(t, err)
	require.Nil(t, skip)
	b, err := ReadData(e)
	require.NoError(t, err)
	assert.Equal(t, "a,b\n", string(b))

	require.NoError(t, os.Remove(p))
	require.NoError(t, syscall.Mkfifo(p, 0o644))
	_, err = OpenData(e)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a named pipe (FIFO) now")
}

// TestCopyReadOnlyHoldsWhatTheWalkShows: the local kernel's copy holds
// exactly the walk's entries with its modes, the root read-only too, also
// when the data folder is named by a link; with FollowLinks it holds the
// files links lead to outside the folder too.
func TestCopyReadOnlyHoldsWhatTheWalkShows(t *testing.T) {
	tr := dataTree(t)
	link := filepath.Join(t.TempDir(), "data-link")
	require.NoError(t, os.Symlink(tr.root, link))
	for _, c := range []struct {
		name, src string
		follow    bool
		want      []seen
	}{
		{"folder", tr.root, false, tr.want},
		{"link", link, false, tr.want},
		{"follow links", tr.root, true, tr.follow},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy")
			t.Cleanup(func() { _ = removeTree(dst) })
			require.NoError(t, copyReadOnly(c.src, dst, WalkOptions{Limit: 1 << 20, FollowLinks: c.follow}))
			assert.Equal(t, c.want, copied(t, dst))
		})
	}
}

// copied is what a copy at dst holds.
func copied(t *testing.T, dst string) []seen {
	t.Helper()
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
	return got
}

// TestLinkDataRefusesWhatACopyLeavesOut: a link shows the folder as it
// is, so --data-link is refused for one that holds what no kernel may see.
func TestLinkDataRefusesWhatACopyLeavesOut(t *testing.T) {
	tr := dataTree(t)
	_, err := NewLocal(LocalConfig{Argv: []string{"true"}, DataDir: tr.root, LinkData: true})
	var le *LinkDataError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, err.Error(), "--data-link")
	assert.True(t, strings.Contains(err.Error(), "dangling") || strings.Contains(err.Error(), "fifo.csv"), err.Error())

	clean := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(clean, "a.csv"), []byte("a\n1\n"), 0o644))
	require.NoError(t, os.Symlink("a.csv", filepath.Join(clean, "b.csv")))
	_, err = NewLocal(LocalConfig{Argv: []string{"true"}, DataDir: clean, LinkData: true})
	assert.NoError(t, err, "links inside the folder are fine")
}
