package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/sshtest"
)

// TestDockerHostUnknownContext: every command that opens Docker takes
// --docker-host, and refuses a context that is not there with exit 2,
// naming the known ones, before it starts anything.
func TestDockerHostUnknownContext(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no contexts but default
	t.Setenv("DOCKER_CONTEXT", "")
	tasks := goldOnlyTasks(t, 1)
	for name, args := range map[string][]string{
		"exec":           {"exec", "--docker-host", "nosuchctx", "--", "1 + 1"},
		"ask":            {"ask", "--model", "reference", "--data", userData, "--prefix", userPrefix, "how many?"},
		"chat":           {"chat", "--model", "reference", "--data", userData, "--prefix", userPrefix},
		"bench":          {"bench", "--model", "reference", "--tasks", tasks, "--data", userData, "--prefix", userPrefix, "--conditions", "B", "--out", filepath.Join(t.TempDir(), "run")},
		"prefix verify":  {"prefix", "verify", userPrefix, "--data", userData},
		"sandbox build":  {"sandbox", "build"},
		"sandbox status": {"sandbox", "status"},
		"sandbox prune":  {"sandbox", "prune"},
	} {
		t.Run(name, func(t *testing.T) {
			if args[0] != "exec" {
				args = append(args, "--docker-host", "nosuchctx")
			}
			got := runCLI(t, "", args...)
			assert.Equal(t, exitUsage, got.code, "stdout:\n%s\nstderr:\n%s", got.stdout, got.stderr)
			assert.Contains(t, got.stderr, `Docker context "nosuchctx" (from --docker-host) not found`)
			assert.Contains(t, got.stderr, "one of the contexts default")
		})
	}
}

// TestExecOverSSH: ctxcode exec --docker-host ssh://... runs its cells on
// the daemon behind sshd, with ssh's flags from $CTXCODE_SSH_FLAGS; and
// sandbox status names that daemon.
func TestExecOverSSH(t *testing.T) {
	requireDocker(t)
	srv := sshtest.Start(t)
	t.Setenv("CTXCODE_SSH_FLAGS", strings.Join(srv.SSHFlags(), " "))
	t.Setenv("XDG_RUNTIME_DIR", srv.Dir) // the control sockets go where the server's cleanup ends their masters
	got := runCLI(t, "", "exec", "--docker-host", srv.URL(), "--data", userData, "--", "import os", "sorted(os.listdir('data'))[:1]")
	require.Equal(t, 0, got.code, "stderr:\n%s\nsshd:\n%s", got.stderr, srv.Log())
	assert.Regexp(t, `Out\[2\]: \['.+'\]`, got.stdout, "the data folder, copied to the daemon")
	got = runCLI(t, "", "sandbox", "status", "--docker-host", srv.URL())
	require.Equal(t, 0, got.code, got.stderr)
	assert.Contains(t, got.stdout, "docker: reachable at "+srv.URL())
	assert.Equal(t, 1, srv.Sessions(t), "exec and status share one ssh connection")
}
