package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/sshtest"
	"github.com/ctxcode/ctxcode/kernel"
)

// sshHost starts an sshd on 127.0.0.1 (internal/sshtest) and returns the
// Host that reaches this machine's daemon through it, over ssh://, its
// connections shared through the server's control folder; and a client of
// the local socket, for checking what the remote one did. Without the
// local daemon, the kernel image, root or sshd the test skips (fails in
// CI).
func sshHost(tb testing.TB) (*sshtest.Server, Host, *client.Client) {
	tb.Helper()
	local := newDockerClient(tb)
	srv := sshtest.Start(tb)
	return srv, Host{Name: srv.URL(), SSHFlags: srv.SSHFlags(), ControlDir: srv.ControlDir()}, local
}

// connectSSH connects to h and closes the client when tb ends.
func connectSSH(tb testing.TB, srv *sshtest.Server, h Host) *client.Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := Connect(ctx, h)
	require.NoError(tb, err, "sshd's log:\n%s", srv.Log())
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// TestSSH: the kernel's whole life over ssh:// as over the local socket
// (attach, cells, data copied in by volume, stdin half-closed at Close),
// every connection after the first sharing its ssh connection.
func TestSSH(t *testing.T) {
	srv, h, local := sshHost(t)
	cli := connectSSH(t, srv, h)
	assert.True(t, Remote(cli), "an ssh daemon is remote: data goes in by volume")
	assert.Equal(t, 1, srv.Sessions(t), "connecting made one ssh connection")
	socks, err := filepath.Glob(filepath.Join(h.ControlDir, "*"))
	require.NoError(t, err)
	assert.Len(t, socks, 1, "the first connection should leave a control socket for the next ones")

	t.Run("cells over data copied by volume", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.DataDir = makeDataDir(t)
		removeSessionOnCleanup(t, local, cfg.Session)
		tr, err := NewPython(cli, cfg)
		require.NoError(t, err)
		assert.True(t, tr.Config().CopyData, "a remote daemon gets a copy of the data")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
		t.Cleanup(func() {
			if k != nil {
				_ = k.Close()
			}
		})
		require.NoError(t, err, "start a kernel over ssh; sshd's log:\n%s", srv.Log())
		var got struct {
			Notes  string `json:"notes"`
			Sales  int    `json:"sales"`
			Nested int    `json:"nested"`
		}
		answer(t, k, `import pandas as pd
ANSWER({"notes": open("data/notes.txt").read(), "sales": int(pd.read_csv("data/sales.csv").amount.sum()),
        "nested": len(open("data/sub/nested.txt").read().splitlines())})`, &got)
		assert.Equal(t, "do not change me\n", got.Notes)
		assert.Equal(t, 42, got.Sales)
		assert.Equal(t, 100, got.Nested)
		assert.Len(t, volumeNames(sessionVolumes(t, local, cfg.Session)), 1, "the data should be in a volume on the daemon")
		x := execCell(t, k, "x = 6 * 7\nx", 30*time.Second)
		assert.Equal(t, "42", x.Value, "a second cell in the same namespace")
		require.NoError(t, k.Close())
		k = nil
		assert.Empty(t, describe(sessionContainers(t, local, cfg.Session)), "Close should remove the container")
		assert.Empty(t, volumeNames(sessionVolumes(t, local, cfg.Session)), "Close should remove the data volume")
	})

	t.Run("close half-closes stdin", func(t *testing.T) {
		// The kernel ends by itself when its input ends; were the
		// half-close lost in ssh, Close would kill it after StopGrace.
		cfg := testConfig(t)
		cfg.StopGrace = 2 * time.Minute
		removeSessionOnCleanup(t, local, cfg.Session)
		tr, err := NewPython(cli, cfg)
		require.NoError(t, err)
		k, err := kernel.Start(context.Background(), kernel.Python, tr, kernel.ClientOptions{})
		require.NoError(t, err)
		requireWorks(t, k)
		conn, err := tr.Start(context.Background())
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		exit := conn.Exit()
		assert.Equal(t, 0, exit.Code, "the kernel should end on its own at end of input: %+v", exit)
		assert.Zero(t, exit.Signal, "%+v", exit)
		assert.NoError(t, k.Close())
	})

	t.Run("image missing on that daemon", func(t *testing.T) {
		for _, image := range []string{ImageRepo + ":does-not-exist", "ctxcode-test-no-such-image:latest"} {
			cfg := testConfig(t)
			cfg.Image = image
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			tr, stop, err := Open(ctx, OpenOptions{Kind: KindDocker, Host: h, Docker: &cfg}, os.Stderr)
			cancel()
			stop()
			assert.Nil(t, tr)
			require.Error(t, err, image)
			assert.Contains(t, err.Error(), image)
			if image == ImageRepo+":does-not-exist" {
				var ie *ImageError
				assert.ErrorAs(t, err, &ie, "ctxcode's own image: `ctxcode sandbox build`")
			} else {
				var ie *InputError
				assert.ErrorAs(t, err, &ie, "an image the user named is theirs to fix")
			}
		}
	})

	t.Run("DOCKER_HOST", func(t *testing.T) {
		t.Setenv("DOCKER_CONTEXT", "")
		t.Setenv("DOCKER_HOST", h.Name)
		env := h
		env.Name = ""
		cli := connectSSH(t, srv, env)
		assert.True(t, Remote(cli))
		requireWorks(t, startOn(t, cli, local))
	})

	// Every client, kernel and check above went over the one ssh
	// connection the first Connect made.
	assert.Equal(t, 1, srv.Sessions(t), "the attaches should share the first ssh connection")
	again := connectSSH(t, srv, h)
	k := startOn(t, again, local)
	requireWorks(t, k)
	assert.Equal(t, 1, srv.Sessions(t), "a second client's connect and attach should share it too")

	// Without sharing, each connection is a new ssh session: what the
	// count above would have seen.
	h.NoSharing = true
	unshared := connectSSH(t, srv, h)
	k = startOn(t, unshared, local)
	requireWorks(t, k)
	assert.GreaterOrEqual(t, srv.Sessions(t), 3, "connect and attach without sharing are new ssh sessions")
}

// startOn starts a Python kernel through cli; the test's cleanup closes it.
func startOn(tb testing.TB, cli, local *client.Client) *kernel.Client {
	tb.Helper()
	cfg := testConfig(tb)
	removeSessionOnCleanup(tb, local, cfg.Session)
	tr, err := NewPython(cli, cfg)
	require.NoError(tb, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
	tb.Cleanup(func() {
		if k != nil {
			assert.NoError(tb, k.Close())
		}
	})
	require.NoError(tb, err)
	return k
}
