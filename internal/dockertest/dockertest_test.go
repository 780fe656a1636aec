package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/proctest"
)

// gone checks that what a daemon made is gone once its test has ended.
func gone(t *testing.T, d *Daemon) {
	t.Helper()
	assert.ErrorIs(t, syscall.Kill(d.PID, 0), syscall.ESRCH, "dockerd %d still runs", d.PID)
	assert.Empty(t, proctest.PIDsServing(d.Dir), "processes still serve %s", d.Dir)
	mounts, err := proctest.MountsUnder(d.Dir)
	require.NoError(t, err)
	assert.Empty(t, mounts)
	_, err = os.Stat(d.Dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "the daemon's folder is left")
}

func TestStart(t *testing.T) {
	var d *Daemon
	t.Run("daemon", func(t *testing.T) {
		d = Start(t)
		ctx := context.Background()
		info, err := d.Client.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(d.Dir, "data"), info.DockerRootDir)
		assert.Zero(t, info.Containers)
		images, err := d.Client.ImageList(ctx, image.ListOptions{All: true})
		require.NoError(t, err)
		assert.Empty(t, images, "a new daemon has no images")
		assert.Equal(t, "unix://"+d.Socket, d.Host)
		pid, err := os.ReadFile(filepath.Join(d.Dir, "dockerd.pid"))
		require.NoError(t, err)
		assert.Equal(t, d.PID, mustAtoi(t, strings.TrimSpace(string(pid))), "the pid file names the process started")
	})
	require.NotNil(t, d)
	gone(t, d)
}

// TestCleanupWithContainers ends daemons that still run a container: one
// stopped as a test ends, and one killed first (so that its containerd,
// shim and container are left to the cleanup).
func TestCleanupWithContainers(t *testing.T) {
	for _, kill := range []bool{false, true} {
		var d *Daemon
		var initPID int
		t.Run(map[bool]string{false: "stopped", true: "killed"}[kill], func(t *testing.T) {
			d = Start(t)
			ctx := context.Background()
			ref := sleeperImage(t, d)
			c, err := d.Client.ContainerCreate(ctx, &container.Config{Image: ref, Cmd: []string{"/usr/bin/sleep", "infinity"}},
				&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
			require.NoError(t, err)
			require.NoError(t, d.Client.ContainerStart(ctx, c.ID, container.StartOptions{}))
			inspect, err := d.Client.ContainerInspect(ctx, c.ID)
			require.NoError(t, err)
			require.True(t, inspect.State.Running)
			initPID = inspect.State.Pid
			mounts, err := proctest.MountsUnder(d.Dir)
			require.NoError(t, err)
			require.NotEmpty(t, mounts, "a running container has its root mounted under the data root")
			if kill {
				require.NoError(t, syscall.Kill(d.PID, syscall.SIGKILL))
				<-d.done
				require.NoError(t, syscall.Kill(initPID, 0), "the container outlives its daemon")
			}
		})
		require.NotNil(t, d)
		gone(t, d)
		assert.False(t, running(initPID), "the container's process %d still runs", initPID)
	}
}

// running says whether pid runs: neither gone nor a zombie. A container's
// process whose shim was killed before it reaped it is left to this
// machine's first process, which may not reap it.
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// sleeperImage imports, into d, an image of the host's sleep and the
// libraries it loads.
func sleeperImage(t *testing.T, d *Daemon) string {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	out, err := exec.Command("ldd", sleep).Output()
	require.NoError(t, err)
	files := []string{sleep}
	for _, m := range regexp.MustCompile(`(/\S+)`).FindAllString(string(out), -1) {
		files = append(files, m)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		b, err := os.ReadFile(f) // through links: the image holds files
		require.NoError(t, err)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(f, "/"), Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}))
		_, err = tw.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	const ref = "dockertest-sleeper:1"
	rc, err := d.Client.ImageImport(context.Background(), image.ImportSource{Source: &buf, SourceName: "-"}, ref, image.ImportOptions{})
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	return ref
}

func TestStartInNetns(t *testing.T) {
	var d *Daemon
	t.Run("daemon", func(t *testing.T) {
		d = StartInNetns(t)
		require.NotNil(t, d.Link)
		assert.Equal(t, "tcp://"+d.Link.PeerAddr+":2375", d.Host)
		ping := func() error {
			// The bound only ends the attempt that is expected to fail;
			// an answer comes back at once.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err := d.Client.Ping(ctx)
			return err
		}
		require.NoError(t, ping(), "the daemon answers over the link")

		d.LinkDown(t)
		err := ping()
		require.Error(t, err, "the daemon answers with its link down")
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "a cut link drops packets unanswered: %v", err)
		_, err = d.Admin.Ping(context.Background())
		assert.NoError(t, err, "the unix socket answers whatever the link")

		d.LinkUp(t)
		require.NoError(t, ping(), "the daemon answers once the link is back")
	})
	require.NotNil(t, d)
	gone(t, d)
	_, err := os.Stat(proctest.NetnsPath(d.Link.Netns))
	assert.ErrorIs(t, err, os.ErrNotExist, "the namespace is left")
	_, err = os.Stat(filepath.Join("/sys/class/net", d.Link.HostIf))
	assert.ErrorIs(t, err, os.ErrNotExist, "the host's end of the link is left")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
