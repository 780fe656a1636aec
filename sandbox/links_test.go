package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/datatest"
	"github.com/ctxcode/ctxcode/kernel"
)

// TestKernelSeesWhatTheWalkTakes: whatever the backend (a bind mount, a
// copied volume, the local kernel's copy), a kernel's data/ holds exactly
// what kernel.WalkReadOnly takes of the folder: a link inside it, as a
// file; not a link to a file outside it (unless FollowLinks), a named pipe
// (never opened: datatest.Pipe fails the test if it is), a link to a
// device or a socket. The folder and the file outside are readable by
// every user, so nothing but its links and special files decides against
// a bind mount.
func TestKernelSeesWhatTheWalkTakes(t *testing.T) {
	requirePython(t)
	for _, tc := range []struct {
		name     string
		kind     Kind
		copyData bool
	}{
		{"docker", KindDocker, false},
		{"docker, copied volume", KindDocker, true},
		{"local", KindLocal, false},
	} {
		for _, follow := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: ", follow links"}[follow], func(t *testing.T) {
				dir, secret := datatest.Folder(t)
				require.NoError(t, os.Chmod(secret, 0o644))
				require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
				var want []string
				require.NoError(t, kernel.WalkReadOnly(dir, kernel.WalkOptions{FollowLinks: follow}, func(e kernel.DataEntry) error {
					want = append(want, e.Rel)
					return nil
				}))
				names := []string{"alias.csv", "sales.csv"}
				if follow {
					names = []string{"alias.csv", "creds.csv", "sales.csv"}
				}
				require.Equal(t, names, want)

				opts := OpenOptions{Kind: tc.kind, DataDir: dir, FollowLinks: follow}
				if tc.kind == KindDocker {
					newDockerClient(t)
					cfg := testConfig(t)
					cfg.CopyData = tc.copyData
					opts.Docker = &cfg
				}
				tr, _, err := open(t, opts)
				require.NoError(t, err)
				k := startFrom(t, tr)
				var seen []string
				answer(t, k, "import os\nANSWER(sorted(os.listdir('data')))", &seen)
				assert.Equal(t, want, seen, "the kernel's data/ is the walk")
				var alias string
				answer(t, k, "ANSWER(open('data/alias.csv').read())", &alias)
				assert.Equal(t, datatest.Sales, alias, "a link inside the folder is read as its file")
				var creds string
				answer(t, k, "import os\nANSWER(open('data/creds.csv').read() if os.path.exists('data/creds.csv') else '')", &creds)
				if follow {
					assert.Equal(t, datatest.Secret, creds)
				} else {
					assert.Empty(t, creds, "a link out of the folder is not followed")
				}
			})
		}
	}
}

// startFrom starts a Python kernel through tr; the test's cleanup closes it.
func startFrom(t *testing.T, tr kernel.Transport) *kernel.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
	if k != nil {
		t.Cleanup(func() { assert.NoError(t, k.Close()) })
	}
	require.NoError(t, err)
	return k
}

// TestDataLinkRefusesWhatACopyLeavesOut: --data-link shows the folder as
// it is, so Open refuses it, as bad input, for one that holds what a copy
// leaves out.
func TestDataLinkRefusesWhatACopyLeavesOut(t *testing.T) {
	requirePython(t)
	dir, _ := datatest.Folder(t)
	_, _, err := open(t, OpenOptions{Kind: KindLocal, DataDir: dir, Local: kernel.LocalConfig{LinkData: true}})
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "--data-link shows the data folder")
}

// TestBindOnlyWhatTheWalkTakesAsItIs: a bind mount shows a folder as it
// is, so it is used only for a folder of real folders and regular files
// every user can read; anything else gets a copy.
func TestBindOnlyWhatTheWalkTakesAsItIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(t *testing.T, dir string)
		bind bool
	}{
		{"files and folders", func(*testing.T, string) {}, true},
		{"a link inside", func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("sales.csv", filepath.Join(dir, "alias.csv")))
		}, false},
		{"a link outside", func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "host.csv")))
		}, false},
		{"a named pipe", func(t *testing.T, dir string) { datatest.Pipe(t, filepath.Join(dir, "pipe.csv")) }, false},
		{"a link to a device", func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.csv")))
		}, false},
		{"a private file", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "private.csv"), []byte("a\n"), 0o600))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := makeDataDir(t)
			tc.add(t, dir)
			assert.Equal(t, tc.bind, bindable(dir, false))
		})
	}
}
