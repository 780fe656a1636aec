package sandbox

// The Kubernetes backend on a real cluster: kube-apiserver, the scheduler,
// the controller manager and a kubelet with containerd, started on this
// machine by internal/clustertest. Run by `make e2e` only (CTXCODE_E2E=1).

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/ctxcode/ctxcode/internal/clustertest"
	"github.com/ctxcode/ctxcode/kernel"
)

// connectKube connects to the cluster of kubeconfig as ConnectKube does.
func connectKube(tb testing.TB, kubeconfig, namespace string) Cluster {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	cl, err := ConnectKube(ctx, KubeOptions{Kubeconfig: kubeconfig, Namespace: namespace})
	require.NoError(tb, err)
	return cl
}

// kubeStart starts a Python kernel of cfg in a Pod of cl.
func kubeStart(tb testing.TB, cl Cluster, cfg Config) (*kernel.Client, error) {
	tb.Helper()
	tr, err := NewKubePython(cl, cfg)
	require.NoError(tb, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
	defer cancel()
	return kernel.Start(ctx, kernel.Python, tr, kernel.ClientOptions{})
}

// startKube starts a Python kernel of cfg in a Pod of cl; the test's
// cleanup closes it.
func startKube(tb testing.TB, cl Cluster, cfg Config) *kernel.Client {
	tb.Helper()
	k, err := kubeStart(tb, cl, cfg)
	require.NoError(tb, err, "start a kernel in a pod")
	tb.Cleanup(func() { assert.NoError(tb, k.Close()) })
	return k
}

// startKubeErr is the error of a kernel start in a Pod of cl that must fail.
func startKubeErr(tb testing.TB, cl Cluster, cfg Config) error {
	tb.Helper()
	k, err := kubeStart(tb, cl, cfg)
	if err == nil {
		_ = k.Close()
		tb.Fatal("the kernel started")
	}
	return err
}

// readmeRole is the Role the README tells users to make, as JSON.
func readmeRole(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(tb, err)
	// A fenced block, indented as a list item's text may be.
	m := regexp.MustCompile("(?s)\n( *)```yaml\n( *apiVersion: rbac.authorization.k8s.io/v1\n *kind: Role\n.*?)\n *```").FindSubmatch(b)
	require.NotNil(tb, m, "the README shows no Role")
	role := regexp.MustCompile(`(?m)^`+string(m[1])).ReplaceAll(m[2], nil)
	j, err := yaml.YAMLToJSON(role)
	require.NoError(tb, err, "the README's Role:\n%s", role)
	return j
}

// spdyOnlyProxy is a plain-HTTP proxy to the cluster's API server, as its
// administrator, that refuses every WebSocket upgrade, as an older API
// server or proxy does, and passes SPDY's on. It returns its URL and the
// counts of upgrades it refused and passed.
func spdyOnlyProxy(t *testing.T, c *clustertest.Cluster) (string, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(c.Server)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = c.API.HTTP.Transport
	var refused, upgraded atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch up := strings.ToLower(r.Header.Get("Upgrade")); {
		case up == "websocket":
			refused.Add(1)
			http.Error(w, "this proxy passes no WebSocket", http.StatusBadRequest)
			return
		case strings.HasPrefix(up, "spdy/"):
			upgraded.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &refused, &upgraded
}

// podOf is the one Pod of the session of cfg.
func podOf(ctx context.Context, tb testing.TB, admin Cluster, cfg Config) *corev1.Pod {
	tb.Helper()
	l, err := admin.Client.CoreV1().Pods(admin.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelSession + "=" + kubeLabelValue(cfg.Session)})
	require.NoError(tb, err)
	require.Len(tb, l.Items, 1)
	return &l.Items[0]
}

// waitMark waits until a cell running in the Pod p has made the file name
// in its /tmp, an emptyDir this machine sees: the cell has started.
func waitMark(t *testing.T, c *clustertest.Cluster, p *corev1.Pod, name string) {
	t.Helper()
	mark := filepath.Join(c.EmptyDir(string(p.UID), "tmp"), name)
	require.Eventually(t, func() bool { _, err := os.Stat(mark); return err == nil }, 2*time.Minute, 20*time.Millisecond,
		"the cell started")
}

// interruptCell interrupts a cell of k's, which runs in the Pod p of
// cluster c, once it has started (it marks its start in its /tmp, an
// emptyDir this machine sees): the cell ends interrupted, and the
// namespace is kept.
func interruptCell(t *testing.T, c *clustertest.Cluster, p *corev1.Pod, k *kernel.Client) {
	t.Helper()
	execCell(t, k, "kept = 'still here'", time.Minute)
	type outcome struct {
		res kernel.Result
		err error
	}
	done := make(chan outcome, 1) // the goroutine ends with the cell, or with k's close
	go func() {
		res, err := k.Execute(context.Background(), "open('/tmp/interrupted-cell', 'w').close()\npartial = 1\nimport time; time.sleep(300)\npartial = 2",
			kernel.ExecOptions{Timeout: 10 * time.Minute})
		done <- outcome{res, err}
	}()
	waitMark(t, c, p, "interrupted-cell")
	require.NoError(t, k.Interrupt())
	o := <-done
	require.NoError(t, o.err)
	res := o.res
	assert.Equal(t, kernel.StatusError, res.Status)
	require.NotNil(t, res.Error)
	assert.Equal(t, "CellInterrupted", res.Error.Name)
	assert.Equal(t, "'still here'", execCell(t, k, "kept", time.Minute).Value)
	assert.Equal(t, "1", execCell(t, k, "partial", time.Minute).Value)
}

func TestE2EKube(t *testing.T) {
	c := clustertest.Start(t, KernelImage())
	admin := connectKube(t, c.Kubeconfig, c.Namespace)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard, well inside make e2e's -timeout
	defer cancel()
	list := func(tb testing.TB) []string {
		tb.Helper()
		l, err := admin.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelSession})
		require.NoError(tb, err)
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		return names
	}
	pods := func(tb testing.TB) int { return len(list(tb)) }

	t.Run("battery", func(t *testing.T) {
		dir := makeDataDir(t)
		before := hashTree(t, dir)
		cfg := testConfig(t)
		cfg.DataDir = dir // with IPython, as a user runs it
		kubeBattery(t, startKube(t, admin, cfg), before, pods)
		assert.Equal(t, before, hashTree(t, dir), "the data changed")
	})

	t.Run("the network policy", func(t *testing.T) {
		p, err := admin.Client.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, NetworkPolicyName, metav1.GetOptions{})
		require.NoError(t, err, "the first kernel made it")
		assert.ElementsMatch(t, []networkingv1.PolicyType{"Ingress", "Egress"}, p.Spec.PolicyTypes)
		assert.Empty(t, p.Spec.Ingress, "no ingress is allowed")
		assert.Empty(t, p.Spec.Egress, "no egress is allowed")
	})

	t.Run("SPDY, where a proxy refuses WebSocket", func(t *testing.T) {
		proxy, refused, upgraded := spdyOnlyProxy(t, c)
		cl := admin
		cl.REST = &rest.Config{Host: proxy}
		dir := makeDataDir(t)
		cfg := testConfig(t)
		cfg.DataDir = dir
		cfg.NoIPython = true
		k := startKube(t, cl, cfg)
		requireWorks(t, k)
		var seen map[string]string
		answer(t, k, dataHashCell, &seen)
		assert.Equal(t, hashTree(t, dir), seen, "the data went in over SPDY")
		require.NoError(t, k.Close(), "closing stdin ends the kernel over SPDY too")
		assert.Zero(t, pods(t))
		assert.Equal(t, int64(2), refused.Load(), "the data's and the kernel's WebSocket attach were refused")
		assert.Equal(t, int64(2), upgraded.Load(), "both attached over SPDY")
	})

	t.Run("interrupt", func(t *testing.T) {
		cfg := testConfig(t)
		k := startKube(t, admin, cfg)
		interruptCell(t, c, podOf(ctx, t, admin, cfg), k)
	})

	t.Run("a pod deleted mid-cell", func(t *testing.T) {
		cfg := testConfig(t)
		k := startKube(t, admin, cfg)
		p := podOf(ctx, t, admin, cfg)
		done := make(chan error, 1)
		go func() {
			_, err := k.Execute(ctx, "open('/tmp/started', 'w').close()\nimport time; time.sleep(600)", kernel.ExecOptions{Timeout: 10 * time.Minute})
			done <- err
		}()
		waitMark(t, c, p, "started")
		require.NoError(t, admin.Client.CoreV1().Pods(c.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}))
		err := <-done
		var de *kernel.DeadError
		require.ErrorAs(t, err, &de, "the cell ends with the kernel's death")
		t.Logf("the cell's end: %v", err)
		require.NoError(t, k.Restart(ctx))
		requireWorks(t, k)
		assert.Equal(t, 1, pods(t))
	})

	t.Run("a pod that cannot be scheduled", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Memory = 1 << 40 // 1 TiB: no node has it
		err := startKubeErr(t, admin, cfg)
		var pe *PodError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "Unschedulable", pe.Reason)
		assert.Contains(t, err.Error(), "no node with room")
		assert.Zero(t, pods(t), "the pod is deleted")
	})

	t.Run("a pod waits for room", func(t *testing.T) {
		nodes, err := admin.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, nodes.Items, 1)
		all := nodes.Items[0].Status.Allocatable[corev1.ResourceCPU]
		big := testConfig(t)
		big.CPUs = all.AsApproximateFloat64() // the whole node
		big.NoIPython = true
		k1 := startKube(t, admin, big)
		small := testConfig(t)
		small.CPUs = 0.5
		small.NoIPython = true
		type outcome struct {
			k   *kernel.Client
			err error
		}
		started := make(chan outcome, 1)
		sctx, stop := context.WithCancel(ctx)
		tr, err := NewKubePython(admin, small)
		require.NoError(t, err)
		go func() {
			k, err := kernel.Start(sctx, kernel.Python, tr, kernel.ClientOptions{})
			started <- outcome{k, err}
		}()
		var k2 *kernel.Client
		taken := false     // the outcome was read
		t.Cleanup(func() { // also when the test stops early: the start ends, its kernel is closed
			stop()
			if !taken {
				k2 = (<-started).k
			}
			if k2 != nil {
				assert.NoError(t, k2.Close())
			}
		})
		require.Eventually(t, func() bool {
			l, err := admin.Client.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelSession + "=" + kubeLabelValue(small.Session)})
			if err != nil || len(l.Items) != 1 {
				return false
			}
			e := podProblem(&l.Items[0])
			return e != nil && e.Reason == corev1.PodReasonUnschedulable
		}, time.Minute, 20*time.Millisecond, "the second pod waits, unschedulable")
		select {
		case o := <-started:
			k2, taken = o.k, true // for the cleanup
			t.Fatalf("the second kernel started while the node was full (%v)", o.err)
		default:
		}
		require.NoError(t, k1.Close())
		o := <-started
		k2, taken = o.k, true
		require.NoError(t, o.err, "the second kernel starts once there is room")
		requireWorks(t, k2)
	})

	t.Run("an image that cannot be pulled", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Image = "ctxcode.invalid/no-such-kernel:1" // .invalid never resolves
		err := startKubeErr(t, admin, cfg)
		var pe *PodError
		require.ErrorAs(t, err, &pe)
		assert.Contains(t, []string{"ErrImagePull", "ImagePullBackOff"}, pe.Reason)
		assert.Contains(t, err.Error(), "push the kernel image to a registry")
		assert.Zero(t, pods(t), "the pod is deleted")
	})

	t.Run("the README's Role is enough", func(t *testing.T) {
		// Without the policy, so that the Role's create on it is used.
		err := admin.Client.NetworkingV1().NetworkPolicies(c.Namespace).Delete(ctx, NetworkPolicyName, metav1.DeleteOptions{})
		require.NoError(t, err)
		const user = "ctxcode-user"
		kubeconfig := c.UserKubeconfig(t, user)
		c.Grant(t, user, readmeRole(t))
		cl := connectKube(t, kubeconfig, "") // the context's namespace
		assert.Equal(t, c.Namespace, cl.Namespace)
		dir := makeDataDir(t)
		cfg := testConfig(t)
		cfg.DataDir = dir
		cfg.NoIPython = true
		k := startKube(t, cl, cfg)
		var seen map[string]string
		answer(t, k, dataHashCell, &seen)
		assert.Equal(t, hashTree(t, dir), seen)
		interruptCell(t, c, podOf(ctx, t, admin, cfg), k)
		_, err = KubeList(ctx, cl, 0)
		require.NoError(t, err, "status lists pods")
		_, err = KubePrune(ctx, cl, PruneOptions{})
		require.NoError(t, err, "prune may delete pods")
		require.NoError(t, k.Close())
		assert.Zero(t, pods(t))
		_, err = admin.Client.NetworkingV1().NetworkPolicies(c.Namespace).Get(ctx, NetworkPolicyName, metav1.GetOptions{})
		assert.NoError(t, err, "the user made the policy")
	})

	t.Run("a user without the Role", func(t *testing.T) {
		cl := connectKube(t, c.UserKubeconfig(t, "nobody"), "")
		err := startKubeErr(t, cl, testConfig(t))
		var ae *AccessError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, c.Namespace, ae.Namespace)
		assert.Contains(t, err.Error(), "needs a Role there")
		_, err = KubeList(ctx, cl, 0)
		assert.True(t, errors.As(err, &ae), "status says the Role is missing: %v", err)
		assert.Zero(t, pods(t))
	})
}
