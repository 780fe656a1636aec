package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// open calls Open with a hang guard and checks what holds for every call:
// a cleanup function, and a transport exactly when there is no error.
func open(t *testing.T, opts OpenOptions) (kernel.Transport, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var warn bytes.Buffer
	tr, cleanup, err := Open(ctx, opts, &warn)
	require.NotNil(t, cleanup, "Open returned no cleanup function")
	t.Cleanup(cleanup)
	if err != nil {
		assert.Nil(t, tr, "a transport with the error %v", err)
	} else {
		assert.NotNil(t, tr)
	}
	return tr, warn.String(), err
}

// countFiles starts a kernel through tr and asks how many files it sees in
// data/.
func countFiles(t *testing.T, tr kernel.Transport) int {
	t.Helper()
	k := startFrom(t, tr)
	var n int
	answer(t, k, "import os\nANSWER(len(os.listdir('data')))", &n)
	return n
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		skipOrFail(t, "this test runs a local kernel, which needs python3 on PATH")
	}
}

// TestOpenWithoutDocker covers the choice of transport when the daemon does
// not answer: cells of a model never run on this host unless asked.
func TestOpenWithoutDocker(t *testing.T) {
	requirePython(t)
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	data := makeDataDir(t)
	for _, tc := range []struct {
		name     string
		opts     OpenOptions
		local    bool   // the transport runs kernels on this host
		err      string // a fragment of the error; empty: none
		warn     string // a fragment of the warning; empty: none at all
		noteHost bool   // the error says cells never run on this host unless asked
	}{
		{name: "auto", opts: OpenOptions{}, err: "docker daemon not reachable", noteHost: true},
		{name: "docker", opts: OpenOptions{Kind: KindDocker}, err: "docker daemon not reachable"},
		{name: "auto with host fallback", opts: OpenOptions{HostFallback: true}, local: true,
			warn: "ctxcode: Docker is not reachable (docker daemon not reachable at unix:///nonexistent.sock"},
		{name: "docker ignores the host fallback", opts: OpenOptions{Kind: KindDocker, HostFallback: true}, err: "docker daemon not reachable"},
		{name: "local", opts: OpenOptions{Kind: KindLocal}, local: true,
			warn: "ctxcode: warning: --sandbox local runs the cells on this host, without isolation\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.DataDir = data
			tr, warn, err := open(t, tc.opts)
			if tc.err != "" {
				require.Error(t, err)
				var de *DaemonError
				assert.ErrorAs(t, err, &de, "unreachable is a *DaemonError, whatever wraps it")
				assert.Contains(t, err.Error(), tc.err)
				note := "(cells are never run on this host unless you say so with --sandbox local, which runs them without isolation)"
				if tc.noteHost {
					assert.Contains(t, err.Error(), note)
				} else {
					assert.NotContains(t, err.Error(), note)
				}
			} else {
				require.NoError(t, err)
			}
			if tc.warn == "" {
				assert.Empty(t, warn)
			} else {
				assert.Contains(t, warn, tc.warn)
			}
			if tc.local {
				assert.IsType(t, &kernel.Local{}, tr)
				assert.Equal(t, 3, countFiles(t, tr), "the local kernel sees the data")
			}
		})
	}
	t.Run("fallback message", func(t *testing.T) {
		_, warn, err := open(t, OpenOptions{HostFallback: true})
		require.NoError(t, err)
		assert.Regexp(t, `^ctxcode: Docker is not reachable \(.*\);\nctxcode: the reference model runs ctxcode's own solutions, so they run on this host\n$`, warn)
	})
}

// TestOpenBadInput: options that cannot work are an *InputError (exit 2 in
// the command line), found before the daemon is asked anything or a
// warning is printed.
func TestOpenBadInput(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock") // a *DaemonError would mean Open got that far
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	docker := func(change func(*Config)) *Config {
		cfg := DefaultConfig()
		change(&cfg)
		return &cfg
	}
	for _, tc := range []struct {
		name string
		opts OpenOptions
		err  string
	}{
		{"unknown kind", OpenOptions{Kind: "podman"}, `--sandbox "podman": expected docker, local or kubernetes`},
		{"unknown language", OpenOptions{Lang: "rust"}, `unknown language "rust": expected python or go`},
		{"missing data folder", OpenOptions{DataDir: "/nonexistent/data"}, `data folder "/nonexistent/data"`},
		{"data is a file", OpenOptions{DataDir: file}, "is not a folder"},
		{"missing data folder, local", OpenOptions{Kind: KindLocal, DataDir: "/nonexistent/data"}, `data folder "/nonexistent/data"`},
		{"named python missing", OpenOptions{Kind: KindLocal, Python: "/nonexistent/python3"}, "--python /nonexistent/python3: no such interpreter"},
		{"memory below Docker's minimum", OpenOptions{Docker: docker(func(c *Config) { c.Memory = MinMemory - 1 })}, "--memory 6291455: below Docker's minimum of 6m"},
		{"swap below memory", OpenOptions{Docker: docker(func(c *Config) { c.Swap = 1 << 30 })}, "--memory-swap 1g: below --memory 2g"},
		{"no CPU", OpenOptions{Docker: docker(func(c *Config) { c.CPUs = 0 })}, "--cpus 0: give a positive number"},
		{"too few processes", OpenOptions{Docker: docker(func(c *Config) { c.Pids = 2 })}, "--pids 2: a kernel needs at least 3"},
		{"another container's network", OpenOptions{Kind: KindDocker, Docker: docker(func(c *Config) { c.Network = "container:x" })}, "never joins another container's network"},
		{"every limit at once", OpenOptions{Docker: docker(func(c *Config) { c.Memory, c.Pids = 0, 0 })}, "or 2g (the default)\n--pids 0: a kernel needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warn, err := open(t, tc.opts)
			require.Error(t, err)
			var ie *InputError
			assert.ErrorAs(t, err, &ie)
			var de *DaemonError
			assert.False(t, errors.As(err, &de), "Open asked the daemon before checking its options")
			assert.Contains(t, err.Error(), tc.err)
			assert.Empty(t, warn, "a warning before refusing bad input")
		})
	}
}

// TestOpenRefusesWhatTheDaemonLacks: an image or a network the user named
// that the daemon does not have, or more CPUs than it has, is an
// *InputError from Open, before any container is made; a network other
// than none is taken, with a warning.
func TestOpenRefusesWhatTheDaemonLacks(t *testing.T) {
	newDockerClient(t)
	for _, tc := range []struct {
		name   string
		change func(*Config)
		err    string
	}{
		{"image", func(c *Config) { c.Image = "ctxcode-test-no-such-image:1" }, "image ctxcode-test-no-such-image:1 not found"},
		{"network", func(c *Config) { c.Network = "ctxcode-test-no-such-network" }, "--network ctxcode-test-no-such-network: the Docker daemon has no such network"},
		{"CPUs", func(c *Config) { c.CPUs = 100000 }, "--cpus 100000: the Docker host has"},
		{"image and network at once", func(c *Config) { c.Image, c.Network = "ctxcode-test-no-such-image:1", "ctxcode-test-no-such-network" },
			"not found: pull or build it (any image with python3, 3.9 or later, works), or drop --image to use ctxcode's own\n--network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			tc.change(&cfg)
			_, _, err := open(t, OpenOptions{Kind: KindDocker, Docker: &cfg})
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	cfg := testConfig(t)
	cfg.Network = "bridge"
	_, warn, err := open(t, OpenOptions{Kind: KindDocker, Docker: &cfg})
	require.NoError(t, err)
	assert.Equal(t, "ctxcode: warning: --network bridge: the cells can reach the network\n", warn)
}

// TestOpenDocker: with the daemon there, Open sweeps the orphans of gone
// owners in this PID namespace (and leaves another namespace's) before it
// hands out a transport whose kernels see the data.
func TestOpenDocker(t *testing.T) {
	cli := newDockerClient(t)
	base := testSession(t)
	dead := deadPID(t)
	otherNS := otherOwner(dead)
	otherNS.PIDNS = "4026500001"
	for name, kind := range map[string]Kind{"auto": KindAuto, "docker": KindDocker} {
		t.Run(name, func(t *testing.T) {
			orphan := fakeContainer(t, cli, fakeLabels(base+"-orphan-"+name, otherOwner(dead), time.Now()), container.StateRunning)
			foreign := fakeContainer(t, cli, fakeLabels(base+"-foreign-"+name, otherNS, time.Now()), container.StateRunning)
			cfg := testConfig(t)
			removeSessionOnCleanup(t, cli, cfg.Session)
			tr, warn, err := open(t, OpenOptions{Kind: kind, HostFallback: true, DataDir: makeDataDir(t), Docker: &cfg})
			require.NoError(t, err)
			assert.Empty(t, warn)
			require.IsType(t, &Docker{}, tr)
			assert.Equal(t, cfg.Session, tr.(*Docker).Config().Session, "the Docker config is used")
			assert.False(t, containerExists(t, cli, orphan), "Open did not sweep the orphan of a gone owner")
			assert.True(t, containerExists(t, cli, foreign), "Open removed a container of another PID namespace")
			assert.Equal(t, 3, countFiles(t, tr), "the container sees the data")
		})
	}
}

// TestStartStops: Start's stop closes the kernel and then the transport,
// once, and a failed Start's stop may be called too.
func TestStartStops(t *testing.T) {
	python, err := kernel.FindPython("")
	if err != nil {
		t.Skip("no python3 on this host")
	}
	k, stop, err := Start(context.Background(), OpenOptions{Kind: KindLocal, Lang: kernel.Python, Python: python, NoIPython: true}, io.Discard)
	require.NoError(t, err)
	res, err := k.Execute(context.Background(), "1 + 1", kernel.ExecOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2", res.Value)
	require.NoError(t, stop())
	_, err = k.Execute(context.Background(), "1", kernel.ExecOptions{})
	assert.Error(t, err, "the kernel is closed")

	_, stop, err = Start(context.Background(), OpenOptions{Kind: KindLocal, Lang: kernel.Python, Python: "/no/such/python"}, io.Discard)
	require.Error(t, err)
	require.NotNil(t, stop)
	assert.NoError(t, stop())
}
