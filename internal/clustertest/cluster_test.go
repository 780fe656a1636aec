package clustertest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/proctest"
	"github.com/ctxcode/ctxcode/sandbox"
)

// TestVersion checks that Version is the release e2e/k8s builds.
func TestVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "e2e", "k8s", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "e2e/k8s/go.mod requires no k8s.io/kubernetes")
	assert.Equal(t, Version, string(m[1]))
}

// gone checks that nothing the cluster made is left once its test ended.
func gone(t *testing.T, c *Cluster) {
	t.Helper()
	for _, p := range c.procs {
		assert.ErrorIs(t, syscall.Kill(p.pid, 0), syscall.ESRCH, "%s %d still runs", p.name, p.pid)
	}
	assert.Empty(t, proctest.PIDsServing(c.Dir), "processes still serve %s", c.Dir)
	mounts, err := proctest.MountsUnder(c.Dir)
	require.NoError(t, err)
	assert.Empty(t, mounts)
	_, err = os.Stat(c.Dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "the cluster's folder is left")
	_, err = net.InterfaceByName(c.bridge)
	assert.Error(t, err, "the bridge %s is left", c.bridge)
	hs, err := cgroupHierarchies()
	require.NoError(t, err)
	for _, h := range hs {
		_, err := os.Stat(filepath.Join(h, c.cgroupRoot))
		assert.ErrorIs(t, err, os.ErrNotExist, "cgroup %s is left in %s", c.cgroupRoot, h)
	}
	for _, s := range c.shims {
		_, err := os.Stat(s)
		assert.ErrorIs(t, err, os.ErrNotExist, "a shim's socket is left")
	}
	assert.Empty(t, c.host.changes(), "left on this machine")
}

// pod is what the test reads of a Pod.
type pod struct {
	Spec struct {
		Volumes []json.RawMessage `json:"volumes"`
	} `json:"spec"`
	Status struct {
		Phase             string          `json:"phase"`
		ContainerStatuses json.RawMessage `json:"containerStatuses"`
	} `json:"status"`
}

// TestE2EPod runs the kernel image's python3 in a Pod as nobody, with no
// service account token, reads its log, deletes it, and checks that the
// cluster leaves nothing behind.
func TestE2EPod(t *testing.T) {
	var c *Cluster
	t.Run("cluster", func(t *testing.T) {
		c = Start(t, sandbox.KernelImage())
		ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
		defer cancel()
		pods := "/api/v1/namespaces/" + c.Namespace + "/pods"
		last := runPod(ctx, t, c, "six-times-seven", true, "print(6*7)")
		require.Equal(t, "Succeeded", last.Status.Phase, "containers: %s", last.Status.ContainerStatuses)
		assert.Empty(t, last.Spec.Volumes, "no service account token is mounted")

		log, err := c.API.Do(ctx, http.MethodGet, pods+"/six-times-seven/log", nil)
		require.NoError(t, err)
		assert.Equal(t, "42\n", string(log))

		_, err = c.API.Do(ctx, http.MethodDelete, pods+"/six-times-seven", nil)
		require.NoError(t, err)
		require.NoError(t, c.API.WaitDeleted(ctx, pods, "six-times-seven"))
	})
	if c == nil {
		t.Skip("no cluster")
	}
	gone(t, c)
}

// TestE2ETeardownRunningPod ends a test while a pod still runs: the
// teardown kills its container and leaves nothing behind.
func TestE2ETeardownRunningPod(t *testing.T) {
	var c *Cluster
	t.Run("cluster", func(t *testing.T) {
		c = Start(t, sandbox.KernelImage())
		ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
		defer cancel()
		last := runPod(ctx, t, c, "sleeper", false, "print('up', flush=True); import time; time.sleep(3600)")
		require.Equal(t, "Running", last.Status.Phase, "containers: %s", last.Status.ContainerStatuses)
	})
	if c == nil {
		t.Skip("no cluster")
	}
	gone(t, c)
}

// runPod runs python3 -c code in the kernel image in a pod named name, as
// nobody, with no service account token, and returns the pod once it has
// ended (Succeeded or Failed) or, without end, once it is past Pending.
func runPod(ctx context.Context, t *testing.T, c *Cluster, name string, end bool, code string) pod {
	t.Helper()
	pods := "/api/v1/namespaces/" + c.Namespace + "/pods"
	spec := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"restartPolicy":                "Never",
			"automountServiceAccountToken": false,
			"securityContext":              map[string]any{"runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65534},
			"containers": []any{map[string]any{
				"name": "python", "image": sandbox.KernelImage(), "imagePullPolicy": "Never",
				"command": []string{"python3", "-c", code},
				"securityContext": map[string]any{
					"allowPrivilegeEscalation": false,
					"capabilities":             map[string]any{"drop": []string{"ALL"}},
				},
			}},
		},
	}
	_, err := c.API.Do(ctx, http.MethodPost, pods, spec)
	require.NoError(t, err)
	var last pod
	err = c.API.Watch(ctx, pods+"?fieldSelector="+url.QueryEscape("metadata.name="+name), func(ev Event) (bool, error) {
		if err := json.Unmarshal(ev.Object, &last); err != nil {
			return false, err
		}
		if end {
			return last.Status.Phase == "Succeeded" || last.Status.Phase == "Failed", nil
		}
		return last.Status.Phase != "Pending", nil
	})
	require.NoError(t, err, "pod %s, its last state: %+v", name, last)
	return last
}
