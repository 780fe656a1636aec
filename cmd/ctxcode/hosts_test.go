package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/dockertest"
	"github.com/ctxcode/ctxcode/internal/sshtest"
)

// TestHostsFlag: bench --hosts and sandbox status --hosts refuse, with
// exit 2 and before anything starts, a list they cannot use: slots that
// are not a whole number of 1 or more, a Docker context that is not there,
// an empty item, a daemon named twice, and --docker-host beside it.
func TestHostsFlag(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no contexts but default
	t.Setenv("DOCKER_CONTEXT", "")
	sock := "unix:///var/run/docker.sock"
	for _, tc := range []struct {
		name, hosts, want string
		more              []string
	}{
		{name: "slots not a number", hosts: sock + "=x", want: `slots "x": expected URL[=slots], slots a whole number of 1 or more`},
		{name: "slots zero", hosts: sock + "=0", want: `slots "0": expected URL[=slots]`},
		{name: "unknown context", hosts: sock + ",nosuchctx=2", want: `Docker context "nosuchctx" (from --hosts) not found`},
		{name: "empty item", hosts: sock + ",", want: "an empty item in the list"},
		{name: "named twice", hosts: sock + "=1," + sock + "=2", want: sock + " is named twice"},
		{name: "no daemon", hosts: "=2", want: "no daemon named"},
		{name: "with --docker-host", hosts: sock, more: []string{"--docker-host", sock}, want: "drop"},
	} {
		for _, cmd := range [][]string{
			{"bench", "--model", "reference", "--tier", "s", "--conditions", "D", "--out", filepath.Join(t.TempDir(), "run")},
			{"sandbox", "status"},
		} {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				args := append(append(append([]string{}, cmd...), "--hosts", tc.hosts), tc.more...)
				got := runCLI(t, "", args...)
				assert.Equal(t, exitUsage, got.code, "stdout:\n%s\nstderr:\n%s", got.stdout, got.stderr)
				assert.Contains(t, got.stderr, tc.want)
				assert.NotContains(t, got.stderr, "generating", "refused before any work")
			})
		}
	}
}

// TestHostsStatus: sandbox status --hosts writes a line per daemon (this
// machine's, over its socket and over ssh): reachable, the kernel image
// present, the slots given or its CPUs; and a daemon that does not answer
// gets its line and fails the command.
func TestHostsStatus(t *testing.T) {
	requireDocker(t)
	srv := sshtest.Start(t)
	t.Setenv("CTXCODE_SSH_FLAGS", strings.Join(srv.SSHFlags(), " "))
	t.Setenv("XDG_RUNTIME_DIR", srv.Dir) // the control sockets go where the server's cleanup ends their masters
	sock := "unix:///var/run/docker.sock"
	got := runCLI(t, "", "sandbox", "status", "--hosts", sock+","+srv.URL()+"=3")
	require.Equal(t, 0, got.code, "stderr:\n%s\nsshd:\n%s", got.stderr, srv.Log())
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 2, got.stdout)
	assert.Regexp(t, `^`+regexp.QuoteMeta(sock)+`: reachable .*image \S+ present; slots [1-9]\d* \(its CPUs, [1-9]\d* CPUs\); ctxcode kernels \d+`, lines[0])
	assert.Regexp(t, `^`+regexp.QuoteMeta(srv.URL())+`: reachable .*image \S+ present; slots 3 \(given, [1-9]\d* CPUs\)`, lines[1])

	got = runCLI(t, "", "sandbox", "status", "--hosts", sock+",unix:///nonexistent/docker.sock")
	assert.Equal(t, 1, got.code, "stderr:\n%s", got.stderr)
	assert.Contains(t, got.stdout, "unix:///nonexistent/docker.sock: not reachable")
	assert.Contains(t, got.stderr, "1 of 2 hosts not reachable: unix:///nonexistent/docker.sock")
}

// TestBenchHostsCopiesTheImage: bench --hosts over this machine's daemon
// and a second, fresh dockerd that has no images. The run copies the kernel
// image to the second daemon (with a progress bar) before it starts, then
// spreads the trials over both; every trial is right and no container is
// left on the second daemon.
func TestBenchHostsCopiesTheImage(t *testing.T) {
	requireDocker(t)
	second := dockertest.Start(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_HOST", "")
	out := filepath.Join(t.TempDir(), "run")
	got := runCLI(t, "", "bench", "--model", "reference", "--tier", "s", "--conditions", "D", "--reps", "1",
		"--hosts", "unix:///var/run/docker.sock=2,"+second.Host+"=2", "--out", out)
	require.Equal(t, 0, got.code, "stdout:\n%s\nstderr:\n%s", got.stdout, got.stderr)
	assert.Contains(t, got.stderr, "copying it there from this machine's daemon")
	imgs, err := second.Client.ImageList(context.Background(), image.ListOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, imgs, "the kernel image is on the second daemon now")

	hosts := map[string]int{}
	for _, tr := range readTrials(t, out) {
		assert.True(t, tr.Correct, "%s on %s", tr.Key, tr.Host)
		hosts[tr.Host]++
	}
	assert.Len(t, hosts, 2, "trials ran on both daemons: %v", hosts)
	left, err := second.Client.ContainerList(context.Background(), container.ListOptions{All: true})
	require.NoError(t, err)
	assert.Empty(t, left, "no container is left on the second daemon")
}
