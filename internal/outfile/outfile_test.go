package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func isInput(t *testing.T, err error, contains string) {
	t.Helper()
	var ie *InputError
	require.True(t, errors.As(err, &ie), "want an *InputError, got %v", err)
	assert.Contains(t, ie.Msg, contains)
}

func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere"), dangling))

	tests := []struct {
		name  string
		path  string
		force bool
		want  string // "" for no error
	}{
		{"new file", filepath.Join(dir, "new.txt"), false, ""},
		{"existing file", file, false, file + " exists; pass --force to overwrite it"},
		{"existing file, force", file, true, ""},
		{"dangling link", dangling, false, "exists; pass --force"},
		{"folder", dir, true, dir + " is a folder: name the file to write"},
		{"missing folder", filepath.Join(dir, "no", "f.txt"), false, "does not exist; make it first (mkdir -p " + filepath.Join(dir, "no") + ")"},
		{"folder is a file", filepath.Join(file, "f.txt"), false, "is not a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOutput(tt.path, tt.force)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			isInput(t, err, tt.want)
		})
	}
}

func TestCheckWritableDirReadOnly(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("a read-only folder takes files for root")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	isInput(t, CheckWritableDir(dir, "the run"), "does not take new files")
}

func TestCheckDataDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	assert.NoError(t, CheckDataDir(dir))
	isInput(t, CheckDataDir(filepath.Join(dir, "no")), "no such folder")
	isInput(t, CheckDataDir(file), file+": not a folder but a file")
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	require.NoError(t, WriteAtomic(path, []byte("one"), false))
	isInput(t, WriteAtomic(path, []byte("two"), false), "exists; pass --force")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "one", string(b), "without force the file stays")
	require.NoError(t, WriteAtomic(path, []byte("three"), true))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "three", string(b))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	left, err := filepath.Glob(filepath.Join(dir, ".*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file is left")
}

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traj.jsonl")
	f, err := Create(path, false)
	require.NoError(t, err)
	_, err = f.WriteString("line\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = Create(path, false)
	isInput(t, err, "exists; pass --force")
	f, err = Create(path, true)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Empty(t, b, "force truncates")
}

func TestSameFileAndInside(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, 0o755))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(real, link))
	file := filepath.Join(real, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	hard := filepath.Join(dir, "hard")
	require.NoError(t, os.Link(file, hard))

	assert.True(t, SameFile(file, filepath.Join(link, "f")), "through a link to its folder")
	assert.True(t, SameFile(file, hard), "a hard link is one file")
	assert.True(t, SameFile(filepath.Join(real, "new"), filepath.Join(link, "new")), "a file not yet written")
	assert.False(t, SameFile(file, filepath.Join(real, "g")))

	assert.True(t, Inside(filepath.Join(link, "f"), real), "through a link to its folder")
	assert.True(t, Inside(real, link), "the folder itself")
	assert.False(t, Inside(filepath.Join(dir, "other"), real))
	assert.False(t, Inside(dir, real))
}

func TestCheckNewDir(t *testing.T) {
	dir := t.TempDir()
	assert.NoError(t, CheckNewDir(filepath.Join(dir, "a", "b", "c")), "made with its parents")
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	isInput(t, CheckNewDir(filepath.Join(file, "sub")), "is not a folder")
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		require.NoError(t, os.Mkdir(ro, 0o555))
		t.Cleanup(func() { _ = os.Chmod(ro, 0o755) })
		isInput(t, CheckNewDir(filepath.Join(ro, "x", "y")), "the folder "+ro+" does not take new files")
	}
}
