package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/internal/dockertest"
	"github.com/ctxcode/ctxcode/internal/sshtest"
	"github.com/ctxcode/ctxcode/sandbox"
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

// TestBenchHostsPartition: bench --hosts over this machine's daemon and a
// second dockerd reached over ssh, both inside a network namespace of the
// test's own, and the namespace's link taken down once a trial has run
// there: the run notices the host is lost (ssh's keepalives end its
// connections), runs that host's trials on this machine's daemon, names the
// lost host, and ends every trial exactly once in trials.jsonl. What it
// left on the cut host (its warm kernels, its data volume) stays there
// while the link is down; once the link is back the next command on that
// host (ctxcode exec) sweeps it, judged by the labels: nothing is left on
// either daemon.
func TestBenchHostsPartition(t *testing.T) {
	local := requireDocker(t)
	second := dockertest.StartInNetns(t)
	srv := sshtest.StartInNetns(t, second.Link.Netns, second.Link.PeerAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a hang guard
	defer cancel()
	// The image is copied over the admin socket first: bench's copy over
	// ssh is TestBenchHostsCopiesTheImage's.
	_, err := sandbox.EnsureImage(ctx, local, second.Admin, sandbox.KernelImage(), nil)
	require.NoError(t, err)

	// Keepalives shorter than ctxcode's defaults (a cut noticed within 30
	// seconds), so the test takes less time.
	flags := append(srv.SSHFlags(), "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=5")
	t.Setenv("CTXCODE_SSH_FLAGS", strings.Join(flags, " "))
	t.Setenv("XDG_RUNTIME_DIR", srv.Dir) // the control sockets go where the server's cleanup ends their masters
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_HOST", "")
	cut := srv.URL() + second.Socket
	sock := "unix:///var/run/docker.sock"
	out := filepath.Join(t.TempDir(), "run")
	p := startBench(t, "bench", "--model", "reference", "--tier", "s", "--conditions", "D", "--reps", "2",
		"--hosts", sock+"=2,"+cut+"=2", "--out", out)

	// Cut the link once a trial line names the host.
	for ran := false; !ran; {
		p.waitLines(t, out, 1)
		for _, tr := range readTrials(t, out) {
			ran = ran || tr.Host == cut
		}
		if !ran {
			n := len(readTrials(t, out))
			p.waitLines(t, out, n+1)
		}
	}
	second.LinkDown(t)
	cutAt := time.Now()
	<-p.done
	t.Logf("the run ended %s after the cut; its warnings:\n%s", time.Since(cutAt).Round(time.Second), p.stderr.String())
	require.NoError(t, p.err, "stdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderr.String())

	all := readTrials(t, out)
	final := map[bench.Key][]bench.Trial{}
	for _, tr := range all {
		if tr.Class != bench.ClassInfra {
			final[tr.Key] = append(final[tr.Key], tr)
		}
	}
	require.GreaterOrEqual(t, len(final), 16, "the run's keys")
	var afterCut int
	for key, trs := range final {
		require.Len(t, trs, 1, "%s: one result line", key)
		assert.True(t, trs[0].Correct, "%s on %s: %s %s", key, trs[0].Host, trs[0].Status, trs[0].Error)
		if trs[0].Host == sock {
			afterCut++
		}
	}
	assert.Positive(t, afterCut, "trials ran on this machine's daemon")
	t.Logf("%d trials, %d of them in flight on the cut host (infra lines, run again)", len(final), len(all)-len(final))
	assert.Contains(t, p.stderr.String(), "host "+cut+" lost")
	assert.Regexp(t, `host `+regexp.QuoteMeta(cut)+` lost at \S+: .*its trials ran again on the other hosts`, p.stdout.String())
	assert.Empty(t, containersOf(t, local, p.cmd.Process.Pid), "containers left on this machine's daemon")

	// What the run left on the cut host is there still, and removed by the
	// next command that runs a kernel there, once it answers again.
	f := filters.NewArgs(filters.Arg("label", sandbox.LabelPID+"="+strconv.Itoa(p.cmd.Process.Pid)))
	left, err := second.Admin.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	require.NoError(t, err)
	assert.NotEmpty(t, left, "the cut host's warm kernels could not be removed while it was cut off")
	second.LinkUp(t)
	got := runCLI(t, "", "exec", "--docker-host", cut, "--", "1 + 1")
	require.Equal(t, 0, got.code, "stderr:\n%s", got.stderr)
	assert.Contains(t, got.stdout, "Out[1]: 2")
	left, err = second.Admin.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSession))})
	require.NoError(t, err)
	assert.Empty(t, left, "containers left on the cut host after the next command's sweep")
	vols, err := second.Admin.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", sandbox.LabelSession))})
	require.NoError(t, err)
	assert.Empty(t, vols.Volumes, "volumes left on the cut host after the next command's sweep")
}
