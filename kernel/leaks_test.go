//go:build linux

package kernel_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestLeaks: what a graded run leaves in reach of local kernels, by who
// ctxcode is and how the kernels are confined.
func TestLeaks(t *testing.T) {
	open, err := os.MkdirTemp("", "ctxcode-leaks-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(open) })
	require.NoError(t, os.Chmod(open, 0o755))
	file := func(name string, perm os.FileMode) string {
		p := filepath.Join(open, name)
		require.NoError(t, os.WriteFile(p, []byte(`{"id": "q", "gold": 1}`), perm))
		require.NoError(t, os.Chmod(p, perm))
		return p
	}
	readable, closed := file("tasks.jsonl", 0o644), file("private.jsonl", 0o600)
	require.NoError(t, os.Mkdir(filepath.Join(open, "shut"), 0o700))
	inShut := filepath.Join(open, "shut", "tasks.jsonl")
	require.NoError(t, os.WriteFile(inShut, nil, 0o644))
	const user = 1000
	asNobody := kernel.Confinement{UID: nobody, GID: nobody, Namespaces: true}
	for _, tc := range []struct {
		name    string
		euid    int
		c       kernel.Confinement
		secrets []string
		want    []string // a piece of each reason, in order
	}{
		{"not root: the kernels run as you", user, kernel.Confinement{UID: user, GID: user, Namespaces: true}, []string{closed},
			[]string{"local kernels run as your user (uid 1000)"}},
		{"root, a task file closed to others", 0, asNobody, []string{closed}, nil},
		{"root, a task file in a folder closed to others", 0, asNobody, []string{inShut}, nil},
		{"root, no task file", 0, asNobody, nil, nil},
		{"root, a task file others can read", 0, asNobody, []string{readable},
			[]string{readable + " can be read by user 65534, whom local kernels run as", "chmod o-r " + readable}},
		{"root, without namespaces", 0, kernel.Confinement{UID: nobody, GID: nobody, Why: "not here"}, []string{closed},
			[]string{"local kernels run without namespaces (not here), all as one user"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := kernel.Leaks(tc.euid, tc.c, tc.secrets...)
			if tc.want == nil {
				assert.Empty(t, why)
				return
			}
			require.Len(t, why, 1, "%q", why)
			for _, w := range tc.want {
				assert.Contains(t, why[0], w)
			}
		})
	}
}
