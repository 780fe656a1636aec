package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoveRootUnmountsFirst: what an interrupted debootstrap leaves
// mounted under the build folder is unmounted, never deleted through.
func TestRemoveRootUnmountsFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	require.NoError(t, os.MkdirAll(proc, 0o755))
	require.NoError(t, syscall.Mount("tmpfs", proc, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = syscall.Unmount(proc, syscall.MNT_DETACH) })
	require.NoError(t, os.WriteFile(filepath.Join(proc, "marker"), []byte("x"), 0o644))

	mounts, err := mountsUnder(root)
	require.NoError(t, err)
	assert.Equal(t, []string{proc}, mounts)
	require.NoError(t, removeRoot(root))
	assert.NoDirExists(t, root)
	mounts, err = mountsUnder(root)
	require.NoError(t, err)
	assert.Empty(t, mounts)
}

func TestHostMirrorFormats(t *testing.T) {
	dir := t.TempDir()
	deb822 := filepath.Join(dir, "debian.sources")
	require.NoError(t, os.WriteFile(deb822, []byte("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"+
		"Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n"), 0o644))
	assert.Equal(t, "http://mirror.example/debian", mirrorDeb822(deb822))
	security := filepath.Join(dir, "security.sources")
	require.NoError(t, os.WriteFile(security, []byte("Types: deb\nURIs: http://security.example/\nSuites: bookworm-security\n"), 0o644))
	assert.Empty(t, mirrorDeb822(security))

	list := filepath.Join(dir, "sources.list")
	require.NoError(t, os.WriteFile(list, []byte("# comment\ndeb-src http://src.example/ bookworm main\n"+
		"deb [arch=amd64 signed-by=/x.gpg] http://one.example/debian bookworm main\n"), 0o644))
	assert.Equal(t, "http://one.example/debian", mirrorOneLine(list))
}
