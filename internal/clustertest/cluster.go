// Package clustertest starts a real, single-node Kubernetes cluster on this
// machine for a test, built offline: etcd and containerd from Debian's
// packages, kube-apiserver, kube-controller-manager, kube-scheduler and the
// kubelet built from the k8s.io/kubernetes module (e2e/k8s, `make e2e`),
// Debian's CNI plugins, and a pause image made from the module's pause.c.
//
// Everything the cluster makes lives under one temporary folder (Dir):
// etcd's data, a second containerd (its own root, state, socket and runc
// root, CRI on, restrict_oom_score_adj, network namespaces under its
// state), the kubelet's root and pod logs, the PKI and kubeconfigs, each
// process's log. Everything listens on 127.0.0.1 only: etcd, the
// apiserver, the kubelet (whose node is named localhost, which the
// apiserver dials for logs, exec and attach), containerd's streaming
// server. Pods get a bridge of their own, with no address on this host,
// no gateway and no masquerading.
//
// The processes are started and stopped by PID. etcd, containerd, the
// apiserver and the kubelet each say they serve on a notify socket (as
// they tell systemd); the rest of ready is watched through the API: the
// node Ready and untainted, the default service account in the test's
// namespace; then /readyz must answer ok. Nothing waits on a sleep. At the
// end every container's first process, every shim, and every process
// started is killed by PID; mounts under Dir are unmounted, the bridge,
// the pods' cgroups and the files the kubelet and the CNI plugins leave
// elsewhere (/var/lib/kubelet, /var/log/containers, /var/lib/cni, the
// shims' sockets) are removed, the kernel settings the kubelet changed
// are put back, and Dir is removed.
//
// One cluster runs on a machine at a time (a file lock): the kubelet keeps
// some of its files at fixed paths.
//
// It runs only when CTXCODE_E2E=1 (`make e2e` sets it): a cluster takes
// a minute to start. Then it needs root, etcd, containerd, runc, the CNI
// plugins and the built binaries; without them the test skips, or fails
// in CI (internal/testenv), saying how to get them.
package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxcode/ctxcode/internal/proctest"
	"github.com/ctxcode/ctxcode/internal/testenv"
)

// Version is the Kubernetes release the cluster runs: the version of
// k8s.io/kubernetes that e2e/k8s/go.mod requires.
const Version = "v1.37.2"

// ReadyTimeout bounds each wait of Start (a process's READY=1, the node,
// the service account): a guard against a hang, not a guess at how long
// starting takes.
const ReadyTimeout = 3 * time.Minute

// StopTimeout bounds how long the cleanup waits for a process to end
// after SIGTERM before it kills it.
const StopTimeout = 30 * time.Second

// Namespace is the namespace Start makes for the test.
const Namespace = "ctxcode-test"

// NodeName is the cluster's one node. The apiserver reaches the kubelet
// by this name (--kubelet-preferred-address-types=Hostname), so it names
// 127.0.0.1; the kubelet refuses a loopback node IP.
const NodeName = "localhost"

// PauseImage is the name the pause image is imported under; it names no
// registry that exists, so that nothing is ever pulled.
const PauseImage = "ctxcode.invalid/pause:" + Version

// CNIBinDir is where Debian's containernetworking-plugins installs.
const CNIBinDir = "/usr/lib/cni"

// Cluster is a cluster started for one test.
type Cluster struct {
	// Kubeconfig is the path of the administrator's kubeconfig
	// (system:masters), with the certificates embedded.
	Kubeconfig string
	// Server is the apiserver's URL, https://127.0.0.1:PORT.
	Server string
	// Namespace is the test's namespace (the Namespace constant): made,
	// with its default service account.
	Namespace string
	// NodeName is the one node's name, Ready.
	NodeName string
	// ContainerdSocket is the path of the cluster's containerd socket
	// (CRI and containerd's API, namespace k8s.io).
	ContainerdSocket string
	// Dir holds everything the cluster made; each process's log is
	// Dir/NAME.log.
	Dir string
	// API is a REST client of the apiserver as the administrator.
	API *API

	id         string // a short random id: names the bridge and cgroup root
	bin        string
	pki        *pki
	procs      []*proc // in start order
	cgroupRoot string  // the kubelet's, in every cgroup v1 hierarchy
	bridge     string
	network    string
	host       *hostState
	shims      []string      // the shims' sockets the teardown found
	imported   time.Duration // how long importing the images took
}

// BinDir is where `make e2e` (e2e/k8s/build.sh) puts the binaries of
// Version: CTXCODE_K8S_BIN, else ${XDG_CACHE_HOME:-~/.cache}/ctxcode/k8s/VERSION/bin.
func BinDir() (string, error) {
	if d := os.Getenv("CTXCODE_K8S_BIN"); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "ctxcode", "k8s", Version, "bin"), nil
}

// Binaries are the files BinDir holds.
var Binaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "pause"}

// Start starts a cluster, imports images from this machine's Docker into
// its containerd (docker save, ctr import), waits until it is ready, and
// stops it and removes all it made when the test ends.
func Start(tb testing.TB, images ...string) *Cluster {
	tb.Helper()
	if os.Getenv("CTXCODE_E2E") != "1" {
		tb.Skip("a real Kubernetes cluster runs only in `make e2e` (CTXCODE_E2E=1): it takes a minute to start")
	}
	bin := need(tb, len(images) > 0)
	for _, ref := range images {
		if err := exec.Command("docker", "image", "inspect", ref).Run(); err != nil {
			testenv.SkipOrFail(tb, "the cluster needs the image %s in this machine's Docker (`make image` builds the kernel image): %v", ref, err)
		}
	}
	unlock := proctest.LockFile(tb, "/run/lock/ctxcode-clustertest.lock")
	c, err := newCluster(bin)
	if err != nil {
		unlock()
		tb.Fatalf("make the cluster's folder: %v", err)
	}
	tb.Cleanup(func() {
		defer unlock()
		if tb.Failed() {
			tb.Log(c.logTails(3 << 10))
		}
		if err := c.teardown(); err != nil {
			tb.Error(err)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	begin := time.Now()
	if err := c.start(ctx, images); err != nil {
		tb.Fatalf("start a cluster in %s: %v", c.Dir, err)
	}
	tb.Logf("cluster %s ready in %s (images imported in %s)", c.Server, time.Since(begin).Round(time.Millisecond), c.imported.Round(time.Millisecond))
	return c
}

// need skips (fails in CI) unless this process is root and what the
// cluster runs is here; it returns the binaries' folder.
func need(tb testing.TB, docker bool) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(tb, "a Kubernetes cluster needs root (euid %d)", os.Geteuid())
	}
	const apt = "`make e2e` installs them (apt-get install etcd-server containerd runc containernetworking-plugins)"
	tools := []string{"etcd", "containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip"}
	if docker {
		tools = append(tools, "docker")
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			testenv.SkipOrFail(tb, "a Kubernetes cluster needs %s: %v; %s", t, err, apt)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(CNIBinDir, p)); err != nil {
			testenv.SkipOrFail(tb, "a Kubernetes cluster needs the CNI plugin %s: %v; %s", p, err, apt)
		}
	}
	bin, err := BinDir()
	if err != nil {
		testenv.SkipOrFail(tb, "no cache folder for the Kubernetes binaries: %v", err)
	}
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			testenv.SkipOrFail(tb, "a Kubernetes cluster needs %s %s, built from k8s.io/kubernetes: %v; `make e2e` builds them (e2e/k8s/build.sh)", b, Version, err)
		}
	}
	return bin
}

func newCluster(bin string) (*Cluster, error) {
	// Short: unix sockets' paths are at most 107 bytes.
	dir, err := os.MkdirTemp("", "ctxk8s-")
	if err != nil {
		return nil, err
	}
	id := strings.TrimPrefix(filepath.Base(dir), "ctxk8s-")
	if len(id) > 8 {
		id = id[len(id)-8:]
	}
	return &Cluster{
		Dir:              dir,
		Namespace:        Namespace,
		NodeName:         NodeName,
		ContainerdSocket: filepath.Join(dir, "containerd.sock"),
		id:               id,
		bin:              bin,
		cgroupRoot:       "/ctxk8s-" + id,
		bridge:           "ctxk8s" + id, // at most 15 bytes
		network:          "ctxk8s-" + id,
	}, nil
}

// path is a path under the cluster's folder.
func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

func (c *Cluster) start(ctx context.Context, images []string) error {
	host, err := saveHost()
	if err != nil {
		return err
	}
	c.host = host
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, kubeletPort := ports[0], ports[1], ports[2], ports[3]
	c.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if err := c.makePKI(); err != nil {
		return fmt.Errorf("make the PKI: %w", err)
	}
	c.Kubeconfig = c.path("admin.kubeconfig")
	if c.API, err = newAPI(c.Server, c.pki.path("ca.crt"), c.pki.path("admin.crt"), c.pki.path("admin.key")); err != nil {
		return err
	}

	// containerd first, and the images in it before the kubelet asks.
	if err := c.startContainerd(); err != nil {
		return err
	}
	if err := c.importPause(); err != nil {
		return err
	}
	begin := time.Now()
	for _, ref := range images {
		if err := c.importDocker(ref); err != nil {
			return err
		}
	}
	c.imported = time.Since(begin)

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := c.run("etcd", true, "etcd", "--name=default", "--data-dir="+c.path("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL); err != nil {
		return err
	}
	if err := c.run("kube-apiserver", true, c.apiserverArgs(etcdURL, apiPort)...); err != nil {
		return err
	}
	for _, name := range []string{"controller-manager", "scheduler"} {
		if err := c.pki.kubeconfig(c.path(name+".kubeconfig"), name, c.Server, ""); err != nil {
			return err
		}
	}
	if err := c.run("kube-controller-manager", false, filepath.Join(c.bin, "kube-controller-manager"),
		"--kubeconfig="+c.path("controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--cert-dir="+c.path("controller-manager"),
		"--service-account-private-key-file="+c.pki.path("sa.key"),
		"--root-ca-file="+c.pki.path("ca.crt"),
		"--v=1"); err != nil {
		return err
	}
	if err := c.run("kube-scheduler", false, filepath.Join(c.bin, "kube-scheduler"),
		"--kubeconfig="+c.path("scheduler.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--v=1"); err != nil {
		return err
	}
	if err := c.startKubelet(kubeletPort); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// run starts a process of the cluster (see startProc) and keeps it for
// the teardown.
func (c *Cluster) run(name string, notify bool, argv ...string) error {
	return c.runEnv(name, notify, nil, argv...)
}

// runEnv is run with env added to this process's environment.
func (c *Cluster) runEnv(name string, notify bool, env []string, argv ...string) error {
	p, err := startProc(c.Dir, name, notify, env, argv...)
	if p != nil {
		c.procs = append(c.procs, p)
	}
	return err
}

func (c *Cluster) proc(name string) *proc {
	for _, p := range c.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

func (c *Cluster) makePKI() error {
	p, err := newPKI(c.path("pki"))
	if err != nil {
		return err
	}
	c.pki = p
	local := []net.IP{net.IPv4(127, 0, 0, 1)}
	ids := []identity{
		{name: "apiserver", cn: "kube-apiserver", server: true, ips: append(local, net.ParseIP(serviceIP)),
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{name: "admin", cn: "ctxcode-admin", orgs: []string{"system:masters"}},
		{name: "controller-manager", cn: "system:kube-controller-manager", orgs: []string{"system:masters"}},
		{name: "scheduler", cn: "system:kube-scheduler", orgs: []string{"system:masters"}},
		{name: "apiserver-kubelet", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		{name: "kubelet", cn: "system:node:" + NodeName, orgs: []string{"system:nodes"}},
		{name: "kubelet-serving", cn: NodeName, server: true, ips: local, dns: []string{NodeName}},
	}
	for _, id := range ids {
		if err := p.issue(id); err != nil {
			return err
		}
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	return p.kubeconfig(c.path("admin.kubeconfig"), "admin", c.Server, "")
}

// serviceRange is the cluster's service IP range, and serviceIP the
// address of its kubernetes service: addresses in the API's objects only
// (no kube-proxy runs, nothing routes them).
const (
	serviceRange = "10.233.0.0/24"
	serviceIP    = "10.233.0.1"
	podSubnet    = "10.232.0.0/24"
)

func (c *Cluster) apiserverArgs(etcdURL string, port int) []string {
	return []string{filepath.Join(c.bin, "kube-apiserver"),
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + c.path("apiserver"),
		"--tls-cert-file=" + c.pki.path("apiserver.crt"),
		"--tls-private-key-file=" + c.pki.path("apiserver.key"),
		"--client-ca-file=" + c.pki.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki.path("sa.pub"),
		"--service-account-signing-key-file=" + c.pki.path("sa.key"),
		"--service-cluster-ip-range=" + serviceRange,
		"--authorization-mode=Node,RBAC",
		"--kubelet-client-certificate=" + c.pki.path("apiserver-kubelet.crt"),
		"--kubelet-client-key=" + c.pki.path("apiserver-kubelet.key"),
		"--kubelet-certificate-authority=" + c.pki.path("ca.crt"),
		"--kubelet-preferred-address-types=Hostname",
		// The endpoints of the kubernetes service would be 127.0.0.1,
		// which the API refuses in an Endpoints.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--v=1",
	}
}

// waitReady waits until the node is Ready and takes pods, makes the
// test's namespace and waits for its default service account, and checks
// that /readyz says ok.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	// A process that dies ends the waits at once.
	go func() {
		done := make([]<-chan struct{}, 0, len(c.procs))
		for _, p := range c.procs {
			done = append(done, p.done)
		}
		select {
		case <-ctx.Done():
		case <-anyClosed(ctx, done):
			cancel()
		}
	}()
	why := func(err error) error {
		for _, p := range c.procs {
			if e := p.exited(); e != nil {
				return fmt.Errorf("%w: %s ended (%v); its log, the end:\n%s", err, p.name, e, p.tail(3<<10))
			}
		}
		return err
	}
	err := c.API.Watch(ctx, "/api/v1/nodes?fieldSelector="+url.QueryEscape("metadata.name="+NodeName), func(ev Event) (bool, error) {
		var n node
		if err := json.Unmarshal(ev.Object, &n); err != nil {
			return false, err
		}
		return n.ready(), nil
	})
	if err != nil {
		return why(fmt.Errorf("wait for node %s to be Ready: %w", NodeName, err))
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": c.Namespace}}
	if _, err := c.API.Do(ctx, http.MethodPost, "/api/v1/namespaces", ns); err != nil {
		return why(fmt.Errorf("make namespace %s: %w", c.Namespace, err))
	}
	err = c.API.Watch(ctx, "/api/v1/namespaces/"+c.Namespace+"/serviceaccounts?fieldSelector="+url.QueryEscape("metadata.name=default"),
		func(ev Event) (bool, error) { return ev.Type == "ADDED", nil })
	if err != nil {
		return why(fmt.Errorf("wait for the default service account of %s: %w", c.Namespace, err))
	}
	if body, err := c.API.Do(ctx, http.MethodGet, "/readyz?verbose", nil); err != nil {
		return why(fmt.Errorf("the apiserver is not ready: %w: %s", err, body))
	}
	return nil
}

// anyClosed returns a channel closed once one of chans is, or ctx ends.
func anyClosed(ctx context.Context, chans []<-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	closeOut := sync.OnceFunc(func() { close(out) }) // two may end at once
	for _, ch := range chans {
		go func() {
			select {
			case <-ch:
				closeOut()
			case <-ctx.Done():
			}
		}()
	}
	return out
}

// node is what readiness reads of a Node.
type node struct {
	Spec struct {
		Taints []struct {
			Key    string `json:"key"`
			Effect string `json:"effect"`
		} `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// ready says whether the node is Ready and has no taint that keeps pods
// off it (the not-ready taint goes a moment after Ready).
func (n node) ready() bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == "NoSchedule" || t.Effect == "NoExecute" {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == "Ready" {
			return cond.Status == "True"
		}
	}
	return false
}

// freePorts finds n free TCP ports on 127.0.0.1 (held open together, so
// they differ, then closed for the cluster's processes to take).
func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logTails is the end of every process's log, n bytes each at most.
func (c *Cluster) logTails(n int) string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "--- %s (pid %d), its log, the end:\n%s\n", p.name, p.pid, p.tail(n))
	}
	return b.String()
}
