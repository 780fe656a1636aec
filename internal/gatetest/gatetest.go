// Package gatetest lets a test prove the order of events across processes
// without timing anything: a gate is a FIFO that a kernel's cell (or a
// process the kernel starts) reads, and that the test writes when the event
// the cell must wait for has happened (a model request arrived). A reader
// cannot get past the gate before it; a test that expects the wrong order
// waits for the cell's timeout and fails, it never passes by luck.
//
// It imports no package of ctxcode, so that any package's tests may use it.
package gatetest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SharedDir is a temporary folder a local kernel can reach: it runs as user
// nobody when the tests run as root, and t.TempDir is private to its user;
// and, where it has namespaces, its /tmp is its own and it sees nothing
// else of the folder that holds the kernels' folders (os.TempDir()), so
// the folder is made in /var/tmp when there is one.
func SharedDir(tb testing.TB) string {
	tb.Helper()
	var dir string
	if st, err := os.Stat(sharedRoot); err == nil && st.IsDir() && filepath.Clean(os.TempDir()) != sharedRoot {
		if dir, err = os.MkdirTemp(sharedRoot, "ctxcode-gate-"); err != nil {
			tb.Fatalf("gatetest: %v", err)
		}
		tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	} else {
		dir = tb.TempDir()
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
			tb.Fatalf("gatetest: %v", err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatalf("gatetest: %v", err)
	}
	return dir
}

// sharedRoot is where SharedDir makes its folders when it can.
const sharedRoot = "/var/tmp"

// FIFO makes path (replacing any file there) a FIFO that every user may
// open, and returns release, which writes a line to it: it blocks until a
// reader opens the other end, and may be called from any goroutine (it
// reports a failure with Errorf). When the test ends, a writer that no
// reader ever met is let go.
func FIFO(tb testing.TB, path string) (release func()) {
	tb.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		tb.Fatalf("gatetest: %v", err)
	}
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		tb.Fatalf("gatetest: %v", err)
	}
	if err := os.Chmod(path, 0o666); err != nil { // past the umask
		tb.Fatalf("gatetest: %v", err)
	}
	tb.Cleanup(func() {
		// Opening the reading end without blocking frees a waiting writer.
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
	return func() {
		if err := os.WriteFile(path, []byte("open\n"), 0); err != nil {
			tb.Errorf("gatetest: release %s: %v", path, err)
		}
	}
}
