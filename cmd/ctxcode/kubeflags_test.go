package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubernetesFlags: --sandbox kubernetes and its flags are checked
// before anything starts (exit 2), and a cluster that does not answer is
// the machine's failure (exit 1), each with what to do.
func TestKubernetesFlags(t *testing.T) {
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"kubeconfig missing", []string{"exec", "--sandbox", "kubernetes", "--kubeconfig", "/nonexistent/kc", "--", "1"}, exitUsage, "--kubeconfig /nonexistent/kc"},
		{"namespace not a name", []string{"exec", "--sandbox", "kubernetes", "--namespace", "Not_OK", "--", "1"}, exitUsage, "not a Kubernetes namespace name"},
		{"namespace without kubernetes", []string{"exec", "--sandbox", "docker", "--namespace", "ns", "--", "1"}, exitUsage, "for --sandbox kubernetes"},
		{"go kernel", []string{"exec", "--sandbox", "kubernetes", "--lang", "go", "--", "1"}, exitUsage, "Python kernel only"},
		{"unknown sandbox", []string{"exec", "--sandbox", "k8s", "--", "1"}, exitUsage, "docker, local or kubernetes"},
		{"prune: namespace not a name", []string{"sandbox", "prune", "--sandbox", "kubernetes", "--namespace", "Not_OK"}, exitUsage, "not a Kubernetes namespace name"},
		{"status: docker with a namespace", []string{"sandbox", "status", "--namespace", "ns"}, exitUsage, "for --sandbox kubernetes"},
		{"status: kubernetes with --docker-host", []string{"sandbox", "status", "--sandbox", "kubernetes", "--docker-host", "unix:///x.sock"}, exitUsage, "drop one of them"},
		{"exec: cluster not reachable", []string{"exec", "--sandbox", "kubernetes", "--kubeconfig", unreachable, "--", "1"}, exitInfra, "API server not reachable at https://127.0.0.1:1"},
		{"status: cluster not reachable", []string{"sandbox", "status", "--sandbox", "kubernetes", "--kubeconfig", unreachable}, exitInfra, "not reachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runCLI(t, "", tc.args...)
			assert.Equal(t, tc.code, got.code, got.stderr)
			assert.Contains(t, got.stderr, tc.want)
		})
	}
}
