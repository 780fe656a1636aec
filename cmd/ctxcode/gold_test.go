package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// userTasksCopy copies testdata/usertasks (data/, prefix.py, tasks.jsonl)
// into a folder of the test's own and returns it.
func userTasksCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "usertasks")
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../testdata/usertasks")))
	return dir
}

// TestBenchTasksInDataRefused: a task file a kernel would see (inside
// --data, by a link --follow-links takes, by a hard link) is refused with
// exit 2 before anything starts, and the message names both paths.
func TestBenchTasksInDataRefused(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	for _, tc := range []struct {
		name   string
		place  func(t *testing.T, src, data string) string // puts the task file where a kernel sees it; returns --tasks
		follow bool
		seen   string
	}{
		{"inside", func(t *testing.T, src, data string) string {
			dst := filepath.Join(data, "tasks.jsonl")
			require.NoError(t, os.Rename(src, dst))
			return dst
		}, false, "data/tasks.jsonl"},
		{"in a subfolder, named through a link to the data", func(t *testing.T, src, data string) string {
			require.NoError(t, os.Mkdir(filepath.Join(data, "sub"), 0o755))
			require.NoError(t, os.Rename(src, filepath.Join(data, "sub", "q.jsonl")))
			link := filepath.Join(filepath.Dir(data), "alias")
			require.NoError(t, os.Symlink(data, link))
			return filepath.Join(link, "sub", "q.jsonl")
		}, false, "data/sub/q.jsonl"},
		{"a link --follow-links takes", func(t *testing.T, src, data string) string {
			require.NoError(t, os.Symlink(src, filepath.Join(data, "more.jsonl")))
			return src
		}, true, "data/more.jsonl"},
		{"a hard link", func(t *testing.T, src, data string) string {
			require.NoError(t, os.Link(src, filepath.Join(data, "copy.jsonl")))
			return src
		}, false, "data/copy.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := userTasksCopy(t)
			data := filepath.Join(dir, "data")
			tasks := tc.place(t, filepath.Join(dir, "tasks.jsonl"), data)
			out := filepath.Join(t.TempDir(), "run")
			args := []string{"bench", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--tasks", tasks, "--data", data,
				"--prefix", filepath.Join(dir, "prefix.py"), "--out", out}
			if tc.follow {
				args = append(args, "--follow-links")
			}
			got := runCLI(t, "", args...)
			assert.Equal(t, exitUsage, got.code, got.stderr)
			assert.Contains(t, got.stderr, "--tasks "+tasks+" is inside --data "+data+" (as "+tc.seen+")")
			assert.Contains(t, got.stderr, "put the task file outside the data folder")
			assert.NotContains(t, got.stderr, "docker daemon not reachable", "found before the sandbox is opened")
			assert.NoDirExists(t, out)
		})
	}
	t.Run("beside the data", func(t *testing.T) {
		dir := userTasksCopy(t)
		got := runCLI(t, "", "bench", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--tasks", filepath.Join(dir, "tasks.jsonl"),
			"--data", filepath.Join(dir, "data"), "--prefix", filepath.Join(dir, "prefix.py"), "--out", filepath.Join(t.TempDir(), "run"))
		assert.NotContains(t, got.stderr, "is inside --data", "a task file the kernels do not see is taken")
	})
}

// TestBenchLocalRefusedWhereKernelsReadTheGolds: a model behind an API in
// local kernels that could read the task file (as root: a file user nobody
// can read; as another user: always, the kernels run as you) is refused
// with exit 2 before anything starts, saying why and what to do;
// --unsafe-local accepts it, and the reference model needs nothing.
func TestBenchLocalRefusedWhereKernelsReadTheGolds(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	open, err := os.MkdirTemp("", "ctxcode-gold-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(open) })
	require.NoError(t, os.Chmod(open, 0o755))
	dir := filepath.Join(open, "usertasks")
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../testdata/usertasks")))
	tasks := filepath.Join(dir, "tasks.jsonl")
	require.NoError(t, os.Chmod(tasks, 0o644))
	base := []string{"bench", "--sandbox", "local", "--tasks", tasks, "--data", filepath.Join(dir, "data"),
		"--prefix", filepath.Join(dir, "prefix.py"), "--task", "no-such-task", "--out", filepath.Join(t.TempDir(), "run")}
	api := []string{"--model", "m", "--base-url", "http://127.0.0.1:9/v1"}

	got := runCLI(t, "", append(base, api...)...)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, "--sandbox local: ")
	if os.Geteuid() == 0 {
		assert.Contains(t, got.stderr, tasks+" can be read by user 65534, whom local kernels run as")
		assert.Contains(t, got.stderr, "chmod o-r "+tasks)
	} else {
		assert.Contains(t, got.stderr, "local kernels run as your user")
	}
	assert.Contains(t, got.stderr, "model m could then read answers it must find itself. Use --sandbox docker")
	assert.Contains(t, got.stderr, "or pass --unsafe-local to accept it")
	assert.NotContains(t, got.stderr, "no-such-task", "found before the tasks are read")

	// Accepted: the run goes on to the next check (the unknown task).
	for name, args := range map[string][]string{
		"--unsafe-local": append(append(base, api...), "--unsafe-local"),
		"reference":      append(base, "--model", "reference"),
	} {
		got := runCLI(t, "", args...)
		assert.Equal(t, exitUsage, got.code, "%s: %s", name, got.stderr)
		assert.NotContains(t, got.stderr, "--unsafe-local", name)
		assert.Contains(t, got.stderr, "no task no-such-task", name)
	}
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chmod(tasks, 0o600))
		got := runCLI(t, "", append(base, api...)...)
		assert.NotContains(t, got.stderr, "--unsafe-local", "a task file closed to others is out of the kernels' reach")
		assert.Contains(t, got.stderr, "no task no-such-task")
	}
}
