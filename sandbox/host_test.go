package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerConfig makes a Docker CLI configuration folder (DOCKER_CONFIG)
// with the contexts given (name: endpoint), current as its current
// context, and a TLS folder for the contexts in tls.
func dockerConfig(t *testing.T, current string, contexts map[string]string, tls ...string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_HOST", "")
	cfg, err := json.Marshal(map[string]string{"currentContext": current})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600))
	for name, host := range contexts {
		sum := sha256.Sum256([]byte(name))
		id := hex.EncodeToString(sum[:])
		meta := map[string]any{"Name": name, "Metadata": map[string]any{},
			"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": false}}}
		b, err := json.Marshal(meta)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "contexts", "meta", id), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "contexts", "meta", id, "meta.json"), b, 0o644))
	}
	for _, name := range tls {
		sum := sha256.Sum256([]byte(name))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "contexts", "tls", hex.EncodeToString(sum[:]), "docker"), 0o700))
	}
	return dir
}

func TestHostResolve(t *testing.T) {
	contexts := map[string]string{"box": "ssh://me@box.example", "lab": "tcp://10.0.0.9:2376", "sock": "unix:///tmp/other.sock"}
	for _, tc := range []struct {
		name                 string
		host, current, dctx  string
		dockerHost           string
		wantURL, wantContext string
		wantTLS              bool
	}{
		{name: "URL as given", host: "tcp://127.0.0.1:2375", current: "box", wantURL: "tcp://127.0.0.1:2375"},
		{name: "ssh URL as given", host: "ssh://u@h:2222/run/docker.sock", wantURL: "ssh://u@h:2222/run/docker.sock"},
		{name: "context named", host: "box", current: "lab", wantURL: "ssh://me@box.example", wantContext: "box"},
		{name: "context with TLS files", host: "lab", wantURL: "tcp://10.0.0.9:2376", wantContext: "lab", wantTLS: true},
		{name: "default context is the environment", host: "default", current: "box"},
		{name: "default context is DOCKER_HOST", host: "default", dockerHost: "tcp://h:2375", wantURL: "tcp://h:2375"},
		{name: "DOCKER_CONTEXT", dctx: "sock", current: "box", wantURL: "unix:///tmp/other.sock", wantContext: "sock"},
		{name: "DOCKER_CONTEXT before DOCKER_HOST", dctx: "box", dockerHost: "unix:///x.sock", wantURL: "ssh://me@box.example", wantContext: "box"},
		{name: "DOCKER_HOST before the current context", dockerHost: "unix:///x.sock", current: "box", wantURL: "unix:///x.sock"},
		{name: "ssh in DOCKER_HOST", dockerHost: "ssh://me@h", wantURL: "ssh://me@h"},
		{name: "the current context", current: "box", wantURL: "ssh://me@box.example", wantContext: "box"},
		{name: "nothing set", wantURL: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dockerConfig(t, tc.current, contexts, "lab")
			t.Setenv("DOCKER_CONTEXT", tc.dctx)
			t.Setenv("DOCKER_HOST", tc.dockerHost)
			e, err := Host{Name: tc.host}.resolve()
			require.NoError(t, err)
			assert.Equal(t, tc.wantURL, e.url)
			assert.Equal(t, tc.wantContext, e.context)
			assert.Equal(t, tc.wantTLS, e.tlsDir != "", "TLS folder %q", e.tlsDir)
		})
	}
}

func TestHostBadScheme(t *testing.T) {
	for _, tc := range []struct{ name, host, env, from string }{
		{"flag", "bogus://x", "", "--docker-host"},
		{"DOCKER_HOST", "", "bogus://x", "DOCKER_HOST"},
		{"DOCKER_HOST without a scheme", "", "bogus", "DOCKER_HOST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKER_CONTEXT", "")
			t.Setenv("DOCKER_HOST", tc.env)
			err := Host{Name: tc.host}.Check()
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Contains(t, err.Error(), "bogus")
			assert.Contains(t, err.Error(), "(from "+tc.from+")")
			assert.Contains(t, err.Error(), "expected unix:///path, tcp://host:port, ssh://")
		})
	}
}

func TestHostUnknownContext(t *testing.T) {
	dockerConfig(t, "", map[string]string{"box": "ssh://me@box.example", "lab": "tcp://10.0.0.9:2376"})
	for _, tc := range []struct{ name, host, dctx, from string }{
		{"flag", "nosuch", "", "--docker-host"},
		{"DOCKER_CONTEXT", "", "nosuch", "DOCKER_CONTEXT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKER_CONTEXT", tc.dctx)
			h := Host{Name: tc.host}
			err := h.Check()
			require.Error(t, err)
			var ie *InputError
			require.ErrorAs(t, err, &ie, "an unknown context is the user's to fix")
			assert.Contains(t, err.Error(), `"nosuch"`)
			assert.Contains(t, err.Error(), tc.from, "say where the name came from")
			assert.Contains(t, err.Error(), "default, box, lab", "list the known contexts")
			cli, cerr := Connect(context.Background(), h)
			assert.Nil(t, cli)
			assert.ErrorAs(t, cerr, &ie, "Connect refuses it before connecting")
			oerr := (&OpenOptions{Host: h}).Check()
			assert.ErrorAs(t, oerr, &ie, "so does OpenOptions.Check")
		})
	}
}

func TestConnectNamesTheHost(t *testing.T) {
	dockerConfig(t, "", map[string]string{"gone": "unix:///nonexistent/ctx.sock"})
	for _, tc := range []struct{ name, host, want, hint string }{
		{"context", "gone", "unix:///nonexistent/ctx.sock (Docker context gone)", "start Docker"},
		{"tcp", "tcp://127.0.0.1:1", "tcp://127.0.0.1:1", "--docker-host"},
		// ssh to a port nothing listens on (ConnectTimeout is docker's).
		{"ssh", "ssh://nobody@127.0.0.1:1", "ssh://nobody@127.0.0.1:1", "key-based"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
			defer cancel()
			cli, err := Connect(ctx, Host{Name: tc.host, NoSharing: true, SSHFlags: []string{"-o", "BatchMode=yes"}})
			if cli != nil {
				_ = cli.Close()
			}
			var de *DaemonError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.want, de.Host)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), tc.hint, "the error should say what to do")
		})
	}
}

func TestSSHFlags(t *testing.T) {
	t.Setenv("CTXCODE_SSH_FLAGS", "-F /etc/x/config -o Port=2200")
	dir := filepath.Join(t.TempDir(), "ctl")
	flags, err := Host{ControlDir: dir}.sshFlags()
	require.NoError(t, err)
	assert.Equal(t, []string{"-F", "/etc/x/config", "-o", "Port=2200", "-o", "BatchMode=yes",
		"-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=20",
		"-o", "ControlMaster=auto", "-o", "ControlPath=" + dir + "/%C", "-o", "ControlPersist=" + SSHPersist}, flags)
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "the control folder should be private")

	flags, err = Host{SSHFlags: []string{"-i", "k", "-o", "BatchMode=no", "-o", "serveraliveinterval=2", "-oServerAliveCountMax=1", "-o", "ConnectTimeout 5"}, NoSharing: true}.sshFlags()
	require.NoError(t, err)
	assert.Equal(t, []string{"-i", "k", "-o", "BatchMode=no", "-o", "serveraliveinterval=2", "-oServerAliveCountMax=1", "-o", "ConnectTimeout 5"}, flags,
		"Host's flags replace the variable's, the options they name are theirs (in any case); no sharing asked")
}
