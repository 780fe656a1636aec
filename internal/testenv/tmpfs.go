package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes (rounded up to pages by the kernel)
// on a new folder under the test's temporary folder, and returns the
// folder: a real small disk, for tests of what a full one does. It is
// unmounted when the test ends (lazily, should a file still be open). It
// needs root (CAP_SYS_ADMIN): without it the test skips, or fails in CI
// (see SkipOrFail).
func Tmpfs(tb testing.TB, size int) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(tb, "mounting a small tmpfs needs root (euid %d)", os.Geteuid())
	}
	dir := filepath.Join(tb.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, tmpfsOptions(size)); err != nil {
		SkipOrFail(tb, "mount a tmpfs on %s: %v", dir, err)
	}
	// Registered after TempDir's: it runs first, so the folder is removed
	// once nothing is mounted on it.
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// ResizeTmpfs gives the tmpfs Tmpfs mounted on dir a new size: a disk
// freed, so that a run can finish.
func ResizeTmpfs(tb testing.TB, dir string, size int) {
	tb.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, tmpfsOptions(size)); err != nil {
		tb.Fatalf("resize the tmpfs on %s: %v", dir, err)
	}
}

func tmpfsOptions(size int) string {
	return "size=" + strconv.Itoa(size) + ",mode=0755"
}
