// Package datatest makes data folders for tests that hold what a data
// folder someone else prepared may hold: a symbolic link to a private file
// outside it, a link inside it, a named pipe, a socket, a link to a device.
//
// Nothing here waits on time. A named pipe made by Pipe has a writer that
// waits for a reader: code that opens it gets a small CSV and an end of
// file (so code that wrongly opens it finishes, and its test fails rather
// than hangs), and the test's cleanup says whether anyone did.
package datatest

import (
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Secret is the content of the private file behind Folder's link creds.csv:
// it must never reach a kernel, a request or a trajectory.
const Secret = "user,token\nroot,SECRET-TOKEN-7f3a9c\n"

// SecretToken is the part of Secret a test looks for.
const SecretToken = "SECRET-TOKEN-7f3a9c"

// Sales is the content of Folder's one regular file, sales.csv.
const Sales = "region,amount\nnorth,10\nsouth,5\n"

// Folder makes a data folder (returned) that holds
//   - sales.csv, a regular file (Sales);
//   - alias.csv, a link to sales.csv (inside: a kernel sees it);
//   - creds.csv, a link to a 0600 file outside the folder (Secret);
//   - pipe.csv, a named pipe (see Pipe: the test fails if it is opened);
//   - null.csv, a link to /dev/null, a device;
//   - sock, a Unix socket.
//
// secret is the path of the private file.
func Folder(t *testing.T) (dir, secret string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "data")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sales.csv"), []byte(Sales), 0o644))
	require.NoError(t, os.Symlink("sales.csv", filepath.Join(dir, "alias.csv")))
	secret = filepath.Join(base, "home", ".secret")
	require.NoError(t, os.MkdirAll(filepath.Dir(secret), 0o755))
	require.NoError(t, os.WriteFile(secret, []byte(Secret), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "creds.csv")))
	Pipe(t, filepath.Join(dir, "pipe.csv"))
	require.NoError(t, os.Symlink("/dev/null", filepath.Join(dir, "null.csv")))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return dir, secret
}

// Pipe makes a named pipe at p. Its writer waits for a reader, writes a
// small CSV and closes, as often as the pipe is opened, so whatever opens
// it gets an end of file. When the test ends, it fails if anything opened
// the pipe.
func Pipe(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(p, 0o644))
	var ended atomic.Bool
	var opens atomic.Int64 // of the writer: one per reader that came
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for a reader
			if err != nil {
				return
			}
			opens.Add(1)
			_, _ = f.WriteString("a,b\n1,2\n")
			_ = f.Close()
			if ended.Load() {
				return
			}
		}
	}()
	t.Cleanup(func() {
		ended.Store(true)
		// A reader of our own lets the writer's last open return; what it
		// reads says whether that open was ours.
		r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if !assert.NoError(t, err) {
			return
		}
		defer r.Close()
		<-done
		buf := make([]byte, 64)
		n, _ := r.Read(buf)
		ours := int64(0)
		if n > 0 {
			ours = 1
		}
		assert.Zero(t, opens.Load()-ours, "%s, a named pipe, was opened: it must never be", p)
	})
}
