package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
	"github.com/ctxcode/ctxcode/kernel"
)

// testSessionPrefix starts the session id of every container this test
// process makes (and of the helper process it runs), so TestMain can find
// what leaked even when the owner label names another process.
var testSessionPrefix = fmt.Sprintf("ctxtest-%d-", os.Getpid())

// childEnv makes the test binary a helper that starts one kernel in the
// session named by the variable, says "ready <container id>" and blocks
// until it is killed (TestPruneAfterOwnerKilled).
const childEnv = "CTXCODE_SANDBOX_TEST_CHILD_SESSION"

func TestMain(m *testing.M) {
	if session := os.Getenv(childEnv); session != "" {
		os.Exit(runChild(session))
	}
	code := m.Run()
	if leaks := removeLeaks(); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the tests left %d Docker object(s) behind (now removed):\n  %s\n",
			len(leaks), strings.Join(leaks, "\n  "))
		code = 1
	}
	os.Exit(code)
}

// removeLeaks removes and describes the containers and volumes this test
// process (or its helper) made that are still there.
func removeLeaks() []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := Connect(ctx, Host{})
	if err != nil {
		return nil // no daemon: nothing can have been made
	}
	defer cli.Close()
	pid := strconv.Itoa(os.Getpid())
	mine := func(labels map[string]string) bool {
		return labels[LabelPID] == pid || strings.HasPrefix(labels[LabelSession], testSessionPrefix)
	}
	var leaks []string
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return []string{"list containers: " + err.Error()}
	}
	for _, c := range cs {
		if !mine(c.Labels) {
			continue
		}
		leaks = append(leaks, fmt.Sprintf("container %.12s session=%s state=%s", c.ID, c.Labels[LabelSession], c.State))
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !client.IsErrNotFound(err) {
			leaks = append(leaks, "  remove: "+err.Error())
		}
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return append(leaks, "list volumes: "+err.Error())
	}
	for _, v := range vs.Volumes {
		if !mine(v.Labels) {
			continue
		}
		leaks = append(leaks, fmt.Sprintf("volume %s session=%s", v.Name, v.Labels[LabelSession]))
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !client.IsErrNotFound(err) {
			leaks = append(leaks, "  remove: "+err.Error())
		}
	}
	return leaks
}

// runChild is the helper process: a ctxcode process that owns a kernel
// container and dies without cleaning up.
func runChild(session string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := Connect(ctx, Host{})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	cfg := DefaultConfig()
	cfg.Session = session
	tr, err := NewPython(cli, cfg)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	if _, err := k.Execute(ctx, "1+1", kernel.ExecOptions{}); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done() // the parent kills us long before this
	return 0
}

func skipOrFail(tb testing.TB, format string, args ...any) {
	tb.Helper()
	testenv.SkipOrFail(tb, format, args...)
}

// newDockerClient connects to the daemon and checks that the kernel image is
// there; without either the test is skipped (failed in CI).
func newDockerClient(tb testing.TB) *client.Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := Connect(ctx, Host{})
	if err != nil {
		skipOrFail(tb, "these tests need a Docker Engine: %v", err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	ok, err := ImageExists(ctx, cli, KernelImage())
	require.NoError(tb, err)
	if !ok {
		skipOrFail(tb, "kernel image %s is missing: build it with `ctxcode sandbox build` (or `make test`)", KernelImage())
	}
	return cli
}

var unsafeLabel = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// testSession is a session id of its own for this test.
func testSession(tb testing.TB) string {
	return testSessionPrefix + unsafeLabel.ReplaceAllString(tb.Name(), "_") + "-" + NewSessionID()[:6]
}

// testConfig is DefaultConfig with a session id of this test's own.
func testConfig(tb testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Session = testSession(tb)
	return cfg
}

// startKernel starts a Python kernel in a container made by cfg; the test's
// cleanup closes it (and so removes the container).
func startKernel(tb testing.TB, cfg Config) *kernel.Client {
	tb.Helper()
	cli := newDockerClient(tb)
	if cfg.Session == "" {
		cfg.Session = testSession(tb)
	}
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
	require.NoError(tb, err, "start a kernel in a container")
	return k
}

// execCell runs code and requires the kernel to answer (any status).
func execCell(tb testing.TB, k *kernel.Client, code string, timeout time.Duration) kernel.Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute) // a hang guard
	defer cancel()
	res, err := k.Execute(ctx, code, kernel.ExecOptions{Timeout: timeout})
	require.NoError(tb, err, "cell:\n%s", code)
	return res
}

// answer runs code that ends with ANSWER(...) and decodes the answer into v.
func answer(tb testing.TB, k *kernel.Client, code string, v any) {
	tb.Helper()
	res := execCell(tb, k, code, 30*time.Second)
	require.Equal(tb, kernel.StatusOK, res.Status, "cell:\n%s\nerror: %+v\nstderr: %s", code, res.Error, res.Stderr)
	require.True(tb, res.Answered(), "the cell did not call ANSWER:\n%s", code)
	require.NoError(tb, json.Unmarshal(res.Answer, v))
}

// requireWorks checks that the kernel runs a cell.
func requireWorks(tb testing.TB, k *kernel.Client) {
	tb.Helper()
	res := execCell(tb, k, "1+1", 30*time.Second)
	require.Equal(tb, kernel.StatusOK, res.Status, "error: %+v", res.Error)
	require.Equal(tb, "2", res.Value)
}

// restart restarts the kernel and checks that the fresh one works.
func restart(tb testing.TB, k *kernel.Client) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(tb, k.Restart(ctx))
	requireWorks(tb, k)
}

// sessionContainers lists the containers, running or not, of one session.
func sessionContainers(tb testing.TB, cli *client.Client, session string) []container.Summary {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelSession+"="+session))})
	require.NoError(tb, err)
	return cs
}

// describe is a short form of containers for failure messages.
func describe(cs []container.Summary) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%.12s %s (%s)", c.ID, c.State, c.Status))
	}
	return out
}

func volumeNames(vs []*volume.Volume) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// sessionVolumes lists the volumes of one session.
func sessionVolumes(tb testing.TB, cli *client.Client, session string) []*volume.Volume {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelSession+"="+session))})
	require.NoError(tb, err)
	return vs.Volumes
}

// removeSessionOnCleanup removes whatever a test leaves in a session, so a
// failing test does not leak (TestMain still reports what its own
// cleanups missed).
func removeSessionOnCleanup(tb testing.TB, cli *client.Client, session string) {
	tb.Cleanup(func() {
		for _, c := range sessionContainers(tb, cli, session) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
			cancel()
			if err != nil && !client.IsErrNotFound(err) {
				tb.Errorf("remove container %.12s: %v", c.ID, err)
			}
		}
	})
}

func TestConnectUnreachableDaemon(t *testing.T) {
	for _, tc := range []struct{ name, host string }{
		{"missing socket", "unix:///nonexistent.sock"},
		{"refused tcp port", "tcp://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", tc.host)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard
			defer cancel()
			cli, err := Connect(ctx, Host{})
			if cli != nil {
				_ = cli.Close()
			}
			require.Error(t, err)
			var de *DaemonError
			require.ErrorAs(t, err, &de)
			assert.NoError(t, ctx.Err(), "Connect returned only when the hang guard expired")
			assert.Contains(t, err.Error(), tc.host)
			assert.Contains(t, err.Error(), "start Docker", "the error should say what to do")
			assert.NotContains(t, err.Error(), "--sandbox local", "which not every command that connects takes")
		})
	}
}

func TestStartMissingImage(t *testing.T) {
	cli := newDockerClient(t)
	for _, tc := range []struct {
		name, image, hint string
		copyData          bool
	}{
		{"ctxcode image", ImageRepo + ":does-not-exist", "build it with `ctxcode sandbox build`", false},
		{"ctxcode image with copied data", ImageRepo + ":does-not-exist", "build it with `ctxcode sandbox build`", true},
		{"user image", "ctxcode-test-no-such-image:latest", "pull or build it", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Image = tc.image
			cfg.DataDir = makeDataDir(t)
			cfg.CopyData = tc.copyData
			removeSessionOnCleanup(t, cli, cfg.Session)
			tr, err := NewPython(cli, cfg)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			k, err := kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
			if k != nil {
				_ = k.Close()
			}
			require.Error(t, err)
			var ie *ImageError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tc.image, ie.Image)
			assert.Contains(t, err.Error(), tc.image)
			assert.Contains(t, err.Error(), tc.hint)
			assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)), "a failed start left a container")
			assert.Empty(t, volumeNames(sessionVolumes(t, cli, cfg.Session)), "a failed start left a volume")
		})
	}
}

func TestCloseRemovesContainer(t *testing.T) {
	cli := newDockerClient(t)
	for _, copyData := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy data %v", copyData), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.DataDir = makeDataDir(t)
			cfg.CopyData = copyData
			removeSessionOnCleanup(t, cli, cfg.Session)
			k := startKernel(t, cfg)
			requireWorks(t, k)
			cs := sessionContainers(t, cli, cfg.Session)
			require.Len(t, cs, 1, "one kernel, one container (the data copier is gone)")
			assert.Equal(t, "running", cs[0].State)
			assert.Equal(t, strconv.Itoa(os.Getpid()), cs[0].Labels[LabelPID])
			assert.NotEmpty(t, cs[0].Labels[LabelCreated])
			if copyData {
				assert.Len(t, sessionVolumes(t, cli, cfg.Session), 1)
			}

			require.NoError(t, k.Close())
			assert.NoError(t, k.Close(), "Close is idempotent")
			assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)), "Close left the container")
			assert.Empty(t, volumeNames(sessionVolumes(t, cli, cfg.Session)), "Close left the data volume")
		})
	}
}

// deadPID returns the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	pid := cmd.Process.Pid
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "pid %d was reused already", pid)
	return pid
}

func orphanIDs(list []Orphan) map[string]string {
	m := map[string]string{}
	for _, o := range list {
		m[o.ID] = o.Reason
	}
	return m
}

func containerExists(t *testing.T, cli *client.Client, id string) bool {
	t.Helper()
	return inspected(t, func(ctx context.Context) error { _, err := cli.ContainerInspect(ctx, id); return err })
}

// inspected says whether the object inspect looks up exists: not found is
// false, any other error fails the test.
func inspected(t *testing.T, inspect func(context.Context) error) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := inspect(ctx)
	if client.IsErrNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestPrune(t *testing.T) {
	cli := newDockerClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	live := testConfig(t)
	removeSessionOnCleanup(t, cli, live.Session)
	k := startKernel(t, live)
	liveCs := sessionContainers(t, cli, live.Session)
	require.Len(t, liveCs, 1)
	liveID := liveCs[0].ID

	// A container whose owner is gone: what a crashed ctxcode leaves.
	host, err := os.Hostname()
	require.NoError(t, err)
	deadSession := testSession(t) + "-dead"
	removeSessionOnCleanup(t, cli, deadSession)
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image: KernelImage(), Cmd: []string{"true"}, Entrypoint: []string{},
		Labels: fakeLabels(deadSession, otherOwner(deadPID(t)), time.Now()),
	}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	require.NoError(t, err)
	deadID := created.ID

	all, err := List(ctx, cli, 0)
	require.NoError(t, err)
	reasons := orphanIDs(all)
	require.Contains(t, reasons, liveID)
	require.Contains(t, reasons, deadID)
	assert.Empty(t, reasons[liveID], "a container of a live owner is in use")
	assert.Contains(t, reasons[deadID], "is gone")

	t.Run("dry run removes nothing", func(t *testing.T) {
		listed, err := Prune(ctx, cli, PruneOptions{DryRun: true})
		require.NoError(t, err)
		ids := orphanIDs(listed)
		assert.Contains(t, ids, deadID)
		assert.NotContains(t, ids, liveID)
		assert.True(t, containerExists(t, cli, deadID), "a dry run removed the orphan")
		assert.True(t, containerExists(t, cli, liveID))
	})

	t.Run("older than lists a live owner's, never this process's", func(t *testing.T) {
		// The owner is the test's parent process (go test), alive.
		parents := testSession(t)
		removeSessionOnCleanup(t, cli, parents)
		p, err := cli.ContainerCreate(ctx, &container.Config{
			Image: KernelImage(), Cmd: []string{"true"}, Entrypoint: []string{},
			Labels: fakeLabels(parents, otherOwner(os.Getppid()), time.Now()),
		}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		require.NoError(t, err)
		time.Sleep(1100 * time.Millisecond) // the created label counts seconds
		// A dry run only: a real one would remove every ctxcode container
		// on this daemon, other processes' included.
		listed, err := Prune(ctx, cli, PruneOptions{OlderThan: time.Nanosecond, DryRun: true})
		require.NoError(t, err)
		ids := orphanIDs(listed)
		assert.Contains(t, ids[p.ID], "older than")
		assert.NotContains(t, ids, liveID, "an age limit never removes the containers of the process that prunes")
		assert.True(t, containerExists(t, cli, liveID))
	})

	t.Run("removes the orphan only", func(t *testing.T) {
		removed, err := Prune(ctx, cli, PruneOptions{})
		require.NoError(t, err)
		ids := orphanIDs(removed)
		// Another ctxcode process on this machine (a test run next to this
		// one) may sweep the orphan first: then it is gone, not ours to list.
		if _, ours := ids[deadID]; !ours {
			t.Logf("the orphan %.12s was swept by another process first", deadID)
		}
		assert.NotContains(t, ids, liveID)
		assert.False(t, containerExists(t, cli, deadID), "Prune left the orphan")
		assert.True(t, containerExists(t, cli, liveID), "Prune removed a container in use")
		requireWorks(t, k)
	})

	t.Run("older than removes a stale container of a live owner", func(t *testing.T) {
		// Created a year ago by this (live) process; the limit is a month,
		// so nothing another process uses now can match it.
		stale := testSession(t)
		removeSessionOnCleanup(t, cli, stale)
		c, err := cli.ContainerCreate(ctx, &container.Config{
			Image: KernelImage(), Cmd: []string{"true"}, Entrypoint: []string{},
			Labels: map[string]string{
				LabelSession: stale,
				LabelPID:     strconv.Itoa(os.Getpid()),
				LabelHost:    host,
				LabelCreated: strconv.FormatInt(time.Now().AddDate(-1, 0, 0).Unix(), 10),
			},
		}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		require.NoError(t, err)
		removed, err := Prune(ctx, cli, PruneOptions{OlderThan: 30 * 24 * time.Hour})
		require.NoError(t, err)
		assert.Contains(t, orphanIDs(removed)[c.ID], "older than")
		assert.NotContains(t, orphanIDs(removed), liveID, "a container younger than the limit was removed")
		assert.False(t, containerExists(t, cli, c.ID))
		assert.True(t, containerExists(t, cli, liveID))
	})
}

// TestPruneAfterOwnerKilled kills (SIGKILL) a process that owns a kernel
// container, as a user's kill -9 of ctxcode would, and checks that Sweep
// removes what it left.
func TestPruneAfterOwnerKilled(t *testing.T) {
	cli := newDockerClient(t)
	session := testSession(t)
	removeSessionOnCleanup(t, cli, session)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+session)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line, "the helper process could not start its kernel")
	cs := sessionContainers(t, cli, session)
	require.Len(t, cs, 1)
	assert.Equal(t, strconv.Itoa(child.Process.Pid), cs[0].Labels[LabelPID])

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	assert.Len(t, describe(sessionContainers(t, cli, session)), 1, "the container outlives its killed owner (the sweep's reason to be)")

	require.NoError(t, Sweep(ctx, cli))
	assert.Empty(t, describe(sessionContainers(t, cli, session)), "Sweep left the container of a killed process")
}

func TestPool(t *testing.T) {
	cli := newDockerClient(t)
	cfg := testConfig(t)
	removeSessionOnCleanup(t, cli, cfg.Session)
	tr, err := NewPython(cli, cfg)
	require.NoError(t, err)
	pool := NewPool(kernel.Python, tr, 2, kernel.ClientOptions{})
	t.Cleanup(func() { _ = pool.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	hostname := func(k *kernel.Client) string {
		var h string
		answer(t, k, "import os\nANSWER(os.environ.get('HOSTNAME', ''))", &h)
		require.NotEmpty(t, h)
		return h
	}
	seen := map[string]bool{}
	var acquired []*kernel.Client
	for i := range 3 { // the third comes from the refill
		k, err := pool.Acquire(ctx)
		require.NoError(t, err, "acquire %d", i+1)
		acquired = append(acquired, k)
		t.Cleanup(func() { _ = k.Close() })
		requireWorks(t, k)
		h := hostname(k)
		assert.False(t, seen[h], "acquire %d returned a kernel already handed out (%s)", i+1, h)
		seen[h] = true
	}
	assert.GreaterOrEqual(t, len(sessionContainers(t, cli, cfg.Session)), 3, "three kernels handed out, each its own container")

	require.NoError(t, pool.Close())
	assert.NoError(t, pool.Close(), "Close is idempotent")
	_, err = pool.Acquire(ctx)
	assert.ErrorIs(t, err, ErrPoolClosed)
	assert.Len(t, describe(sessionContainers(t, cli, cfg.Session)), 3, "only the handed-out kernels outlive the pool")
	for _, k := range acquired {
		requireWorks(t, k) // the pool's Close does not stop what it handed out
		assert.NoError(t, k.Close())
	}
	assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)), "containers remain after the pool and its kernels closed")
}

func TestPoolCloseLeavesNothing(t *testing.T) {
	cli := newDockerClient(t)
	for _, wait := range []time.Duration{0, 50 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second} {
		t.Run(fmt.Sprintf("close after %s", wait), func(t *testing.T) {
			cfg := testConfig(t)
			removeSessionOnCleanup(t, cli, cfg.Session)
			tr, err := NewPython(cli, cfg)
			require.NoError(t, err)
			pool := NewPool(kernel.Python, tr, 2, kernel.ClientOptions{})
			time.Sleep(wait) // close while a container is being created, started, or ready
			require.NoError(t, pool.Close())
			assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)), "Pool.Close left containers")
		})
	}
}

func TestPoolStartFailure(t *testing.T) {
	cli := newDockerClient(t)
	cfg := testConfig(t)
	cfg.Image = ImageRepo + ":does-not-exist"
	removeSessionOnCleanup(t, cli, cfg.Session)
	tr, err := NewPython(cli, cfg)
	require.NoError(t, err)
	pool := NewPool(kernel.Python, tr, 2, kernel.ClientOptions{})
	t.Cleanup(func() { assert.NoError(t, pool.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	k, err := pool.Acquire(ctx)
	require.Nil(t, k)
	var ie *ImageError
	require.ErrorAs(t, err, &ie, "Acquire should report the start failure, not wait")
	assert.False(t, errors.Is(err, context.DeadlineExceeded))
	assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)))
}

// TestStartCanceledLeavesNothing cancels Start at every stage, the
// container (and data volume) create included: whatever the daemon made
// must be removed.
func TestStartCanceledLeavesNothing(t *testing.T) {
	cli := newDockerClient(t)
	for _, copyData := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy data %v", copyData), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.DataDir, cfg.CopyData = makeDataDir(t), copyData
			t.Cleanup(func() { // after the containers that use them are gone
				for _, v := range sessionVolumes(t, cli, cfg.Session) {
					_ = cli.VolumeRemove(context.Background(), v.Name, true)
				}
			})
			removeSessionOnCleanup(t, cli, cfg.Session)
			tr, err := NewPython(cli, cfg)
			require.NoError(t, err)
			started := 0
			var delays []time.Duration // fine steps over create, coarser over attach and start
			for d := time.Duration(0); d < 400*time.Millisecond; d += time.Duration(4+d/(10*time.Millisecond)) * time.Millisecond {
				delays = append(delays, d)
			}
			for _, delay := range delays {
				ctx, cancel := context.WithTimeout(context.Background(), delay)
				conn, err := tr.Start(ctx)
				cancel()
				if err == nil {
					started++
					assert.NoError(t, conn.Close())
				}
			}
			t.Logf("%d of %d starts completed before their deadline", started, len(delays))
			// Start waits for the daemon's answer to every create it sent,
			// cancelled or not, and removes what it made before it returns:
			// nothing can appear after.
			assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)), "a cancelled Start left containers")
			assert.Empty(t, volumeNames(sessionVolumes(t, cli, cfg.Session)), "a cancelled Start left volumes")
		})
	}
}

// TestPoolSkipsDeadKernels: a pooled kernel killed while it waits is never
// handed out.
func TestPoolSkipsDeadKernels(t *testing.T) {
	cli := newDockerClient(t)
	cfg := testConfig(t)
	removeSessionOnCleanup(t, cli, cfg.Session)
	tr, err := NewPython(cli, cfg)
	require.NoError(t, err)
	pool := NewPool(kernel.Python, tr, 1, kernel.ClientOptions{})
	t.Cleanup(func() { _ = pool.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	require.Eventually(t, func() bool { return pool.Ready() == 1 }, 2*time.Minute, 20*time.Millisecond, "a kernel ready in the pool")
	cs := sessionContainers(t, cli, cfg.Session)
	require.Len(t, cs, 1)
	victim := cs[0].ID
	require.NoError(t, cli.ContainerKill(ctx, victim, "KILL"))
	require.Eventually(t, func() bool {
		info, err := cli.ContainerInspect(ctx, victim)
		return err != nil || !info.State.Running
	}, 30*time.Second, 50*time.Millisecond)

	k, err := pool.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.Close() })
	requireWorks(t, k)
}

// flakyTransport fails its first start.
type flakyTransport struct {
	kernel.Transport
	mu     sync.Mutex
	starts int
}

func (f *flakyTransport) Start(ctx context.Context) (kernel.Conn, error) {
	f.mu.Lock()
	f.starts++
	n := f.starts
	f.mu.Unlock()
	if n == 1 {
		return nil, errors.New("transient failure")
	}
	return f.Transport.Start(ctx)
}

// TestPoolForgetsRecoveredFailures: once a start succeeds, an earlier
// failure is not reported any more.
func TestPoolForgetsRecoveredFailures(t *testing.T) {
	cli := newDockerClient(t)
	cfg := testConfig(t)
	removeSessionOnCleanup(t, cli, cfg.Session)
	tr, err := NewPython(cli, cfg)
	require.NoError(t, err)
	pool := NewPool(kernel.Python, &flakyTransport{Transport: tr}, 1, kernel.ClientOptions{})
	t.Cleanup(func() { _ = pool.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.Eventually(t, func() bool { return pool.Ready() == 1 }, 2*time.Minute, 20*time.Millisecond, "a kernel ready in the pool")
	k, err := pool.Acquire(ctx)
	require.NoError(t, err, "the failure before the success is stale")
	t.Cleanup(func() { _ = k.Close() })
	requireWorks(t, k)
}

// TestContainerDefaults inspects a container made from DefaultConfig: every
// hardening default is really set on the daemon's side.
func TestContainerDefaults(t *testing.T) {
	cli := newDockerClient(t)
	cfg := testConfig(t)
	removeSessionOnCleanup(t, cli, cfg.Session)
	k := startKernel(t, cfg)
	requireWorks(t, k)
	cs := sessionContainers(t, cli, cfg.Session)
	require.Len(t, cs, 1)
	info, err := cli.ContainerInspect(context.Background(), cs[0].ID)
	require.NoError(t, err)
	hc := info.HostConfig
	assert.Equal(t, "none", string(hc.NetworkMode))
	assert.Equal(t, []string{"ALL"}, []string(hc.CapDrop))
	assert.Contains(t, hc.SecurityOpt, "no-new-privileges")
	assert.True(t, hc.ReadonlyRootfs)
	require.NotNil(t, hc.Init)
	assert.True(t, *hc.Init)
	assert.Equal(t, int64(2<<30), hc.Memory)
	assert.Equal(t, int64(2<<30), hc.MemorySwap, "no swap beyond the memory limit")
	assert.Equal(t, int64(1e9), hc.NanoCPUs)
	require.NotNil(t, hc.PidsLimit)
	assert.Equal(t, int64(256), *hc.PidsLimit)
	assert.Contains(t, hc.Tmpfs["/tmp"], fmt.Sprintf("size=%d", 256<<20))
	assert.Empty(t, hc.PortBindings)
	assert.Equal(t, "65534:65534", info.Config.User)
	assert.Equal(t, WorkDir, info.Config.WorkingDir)
	for _, l := range []string{LabelSession, LabelCreated, LabelPID, LabelHost} {
		assert.NotEmpty(t, info.Config.Labels[l], l)
	}
	assert.Equal(t, strconv.Itoa(os.Getpid()), info.Config.Labels[LabelPID])
	for _, e := range info.Config.Env {
		name, _, _ := strings.Cut(e, "=")
		assert.Contains(t, []string{"PATH", "HOME", "LANG", "IPYTHONDIR", "MPLCONFIGDIR", "MPLBACKEND", "TERM", "HOSTNAME"}, name, "environment variable %s", name)
	}
	var pidsMax string
	answer(t, k, "ANSWER(open('/sys/fs/cgroup/pids.max').read().strip() if __import__('os').path.exists('/sys/fs/cgroup/pids.max') else open('/sys/fs/cgroup/pids/pids.max').read().strip())", &pidsMax)
	assert.Equal(t, "256", pidsMax, "the pids limit, as the kernel's cgroup sees it")
}

// A warm pool hands out kernels its Prepare has already worked in, with
// what Prepare returned; a Prepare that fails drops its kernel (no
// container stays) and the failure reaches Acquire.
func TestWarmPool(t *testing.T) {
	cli := newDockerClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("prepared", func(t *testing.T) {
		cfg := testConfig(t)
		removeSessionOnCleanup(t, cli, cfg.Session)
		tr, err := NewPython(cli, cfg)
		require.NoError(t, err)
		var mu sync.Mutex
		prepared := 0
		pool := NewWarmPool(kernel.Python, tr, 2, 0, kernel.ClientOptions{}, func(ctx context.Context, k *kernel.Client) (string, error) {
			res, err := k.Execute(ctx, "import os\nbound = 41 + 1\nANSWER(os.environ.get('HOSTNAME', ''))", kernel.ExecOptions{})
			if err != nil {
				return "", err
			}
			mu.Lock()
			prepared++
			mu.Unlock()
			var h string
			return h, json.Unmarshal(res.Answer, &h)
		})
		t.Cleanup(func() { _ = pool.Close() })
		for i := range 3 {
			k, host, err := pool.Acquire(ctx)
			require.NoError(t, err, "acquire %d", i+1)
			var got struct {
				Bound int    `json:"bound"`
				Host  string `json:"host"`
			}
			answer(t, k, "import os\nANSWER({'bound': bound, 'host': os.environ.get('HOSTNAME', '')})", &got)
			assert.Equal(t, 42, got.Bound, "the preparation's namespace is the session's")
			assert.Equal(t, got.Host, host, "Acquire returns what Prepare returned for this kernel")
			require.NoError(t, k.Close())
		}
		require.NoError(t, pool.Close())
		mu.Lock()
		assert.GreaterOrEqual(t, prepared, 3)
		mu.Unlock()
		assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)), "containers remain after the pool and its kernels closed")
	})

	t.Run("total", func(t *testing.T) {
		cfg := testConfig(t)
		removeSessionOnCleanup(t, cli, cfg.Session)
		tr, err := NewPython(cli, cfg)
		require.NoError(t, err)
		pool := NewWarmPool[struct{}](kernel.Python, tr, 2, 3, kernel.ClientOptions{}, nil)
		t.Cleanup(func() { _ = pool.Close() })
		var got []*kernel.Client
		for i := range 3 {
			k, _, err := pool.Acquire(ctx)
			require.NoError(t, err, "acquire %d", i+1)
			got = append(got, k)
		}
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, _, err = pool.Acquire(short)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "no kernel beyond the total")
		assert.Len(t, describe(sessionContainers(t, cli, cfg.Session)), 3, "the pool started its total and no more")
		require.NoError(t, pool.Close())
		for _, k := range got {
			require.NoError(t, k.Close())
		}
	})

	t.Run("prepare fails", func(t *testing.T) {
		cfg := testConfig(t)
		removeSessionOnCleanup(t, cli, cfg.Session)
		tr, err := NewPython(cli, cfg)
		require.NoError(t, err)
		pool := NewWarmPool(kernel.Python, tr, 1, 0, kernel.ClientOptions{}, func(ctx context.Context, k *kernel.Client) (int, error) {
			return 0, errors.New("the prefix does not build")
		})
		_, _, err = pool.Acquire(ctx)
		require.ErrorContains(t, err, "the prefix does not build")
		require.NoError(t, pool.Close())
		assert.Empty(t, describe(sessionContainers(t, cli, cfg.Session)), "a kernel whose preparation failed was left running")
	})
}

// TestInterruptKeepsNamespace: an interrupt reaches the kernel through the
// daemon (SIGINT to the container's init) and stops the running cell; the
// namespace stays.
func TestInterruptKeepsNamespace(t *testing.T) {
	cli := newDockerClient(t)
	cfg := testConfig(t)
	removeSessionOnCleanup(t, cli, cfg.Session)
	k := startKernel(t, cfg)
	execCell(t, k, "kept = 'still here'", time.Minute)
	cs := sessionContainers(t, cli, cfg.Session)
	require.Len(t, cs, 1)
	done := make(chan kernel.Result, 1)
	go func() {
		res, err := k.Execute(context.Background(), "import subprocess\npartial = 1\nsubprocess.run(['sleep', '300'])\npartial = 2",
			kernel.ExecOptions{Timeout: 10 * time.Minute})
		assert.NoError(t, err)
		done <- res
	}()
	// The event: the cell's sleep is running in the container.
	require.Eventually(t, func() bool {
		top, err := cli.ContainerTop(context.Background(), cs[0].ID, nil)
		if err != nil {
			return false
		}
		for _, p := range top.Processes {
			if strings.Contains(strings.Join(p, " "), "sleep 300") {
				return true
			}
		}
		return false
	}, 2*time.Minute, 20*time.Millisecond, "the cell's command never ran")
	require.NoError(t, k.Interrupt())
	res := <-done
	assert.Equal(t, kernel.StatusError, res.Status)
	require.NotNil(t, res.Error)
	assert.Equal(t, "CellInterrupted", res.Error.Name)
	assert.Equal(t, "'still here'", execCell(t, k, "kept", time.Minute).Value)
	assert.Equal(t, "1", execCell(t, k, "partial", time.Minute).Value)
}
