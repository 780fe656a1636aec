//go:build linux

package kernel

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocalTempIsPrivate: each local kernel has a temporary folder of its
// own ($TMPDIR, tempfile.gettempdir(), TMP and TEMP), open to its user
// only, inside its folder and gone with it: two kernels on one host never
// see each other's files there, as the host's shared /tmp would let them.
func TestLocalTempIsPrivate(t *testing.T) {
	t.Parallel()
	f := flavours(t)[0]
	one := startPython(t, f, LocalConfig{})
	two := startPython(t, f, LocalConfig{})
	where := "import os, tempfile\nprint(tempfile.gettempdir(), os.environ['TMPDIR'], os.environ['TMP'], os.environ['TEMP'], os.getcwd())"
	dirs := func(k *Client) []string {
		d := strings.Fields(runOK(t, k, where).Stdout)
		require.Len(t, d, 5)
		return d
	}
	d1, d2 := dirs(one), dirs(two)
	tmp1, tmp2 := d1[0], d2[0]
	assert.Equal(t, []string{tmp1, tmp1, tmp1}, d1[1:4], "tempfile, TMPDIR, TMP and TEMP agree")
	assert.NotEqual(t, tmp1, tmp2)
	assert.Equal(t, filepath.Join(d1[4], tmpName), tmp1, "inside the kernel's own folder")
	st, err := os.Stat(tmp1)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	uid := os.Geteuid()
	if uid == 0 {
		uid = nobody
	}
	assert.EqualValues(t, uid, st.Sys().(*syscall.Stat_t).Uid, "the kernel's user owns it")

	runOK(t, one, "import tempfile\nwith tempfile.NamedTemporaryFile('w', delete=False, prefix='mine-') as f: f.write('secret')\n"+
		"open(os.path.join(os.environ['TMPDIR'], 'notes.txt'), 'w').write('secret')")
	sh, err := one.Shell(context.Background(), `echo secret > "$TMPDIR/shell.txt" && ls "$TMPDIR" | grep -vc ^ctxcode-kernel-`, ShellOptions{})
	require.NoError(t, err)
	assert.Equal(t, "3\n", sh.Output)
	seen := runOK(t, two, "import os, tempfile\nprint([n for n in os.listdir(tempfile.gettempdir()) if not n.startswith('ctxcode-kernel-')], os.path.exists("+strconv.Quote(filepath.Join(tmp1, "notes.txt"))+"))")
	// (With namespaces, the kernel's own folder shows in its /tmp: below.)
	assert.Equal(t, "[] False\n", seen.Stdout, "the second kernel sees nothing of the first's")

	// With namespaces, /tmp is that folder too, as in a container.
	tr, err := NewLocal(LocalConfig{Argv: []string{"true"}})
	require.NoError(t, err)
	if conf := tr.Confinement(); conf.Namespaces {
		runOK(t, one, "open('/tmp/habit.txt', 'w').write('secret')")
		assert.FileExists(t, filepath.Join(tmp1, "habit.txt"), "/tmp is the kernel's own temporary folder")
		seen := runOK(t, two, "import os\nprint(os.path.exists('/tmp/habit.txt'), [n for n in os.listdir('/tmp') if n.startswith('ctxcode-kernel-')])")
		assert.Equal(t, "False ['"+filepath.Base(d2[4])+"']\n", seen.Stdout,
			"the second kernel sees its own folder in /tmp, and nothing of the first's")
	} else {
		t.Logf("without namespaces (%s), /tmp stays the host's", conf.Why)
	}

	require.NoError(t, one.Close())
	assert.NoDirExists(t, tmp1, "gone with its kernel")
}

// TestPrivateTmpViews: the helper's views for a kernel's private /tmp: the
// kernel's own folder is shown whole and alone (not its siblings), and
// what else it needs is shown again where a view covers it.
func TestPrivateTmpViews(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  string
		need []string
		want []string
	}{
		{"in the host's /tmp", "/tmp/ck", []string{"/tmp/ck", "/usr/bin/python3"},
			[]string{"tmp=/tmp/ck/.tmp", "show=/tmp/ck"}},
		{"deeper in /tmp, an interpreter there too", "/tmp/a/b/ck", []string{"/tmp/a/b/ck", "/tmp/venv/bin/python"},
			[]string{"tmp=/tmp/a/b/ck/.tmp", "show=/tmp/a/b/ck", "show=/tmp/venv"}},
		{"elsewhere", "/var/k/ck", []string{"/var/k/ck", "/tmp/venv/bin/python", "/var/k/data/x"},
			[]string{"hide=/var/k", "show=/var/k/ck", "show=/var/k/data", "tmp=/var/k/ck/.tmp", "show=/tmp/venv"}},
		{"at the root", "/ck", []string{"/ck"}, []string{"tmp=/ck/.tmp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, privateTmp(tc.dir, tc.need))
		})
	}
}
