package sandbox

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/ctxcode/ctxcode/internal/kubetest"
	"github.com/ctxcode/ctxcode/kernel"
)

// fakeDriver is a container that speaks the kernel protocol as the driver
// does, in Go: ping and exec answer at once (exec's value is its code),
// "exit N" ends it with status N, the end of its input ends it with 0.
// The data container lists the tar it is sent on files.
func fakeDriver(files chan<- []string) kubetest.Func {
	return func(ctx context.Context, c corev1.Container, stdin io.Reader, stdout, stderr io.Writer) int {
		if c.Name == DataContainer {
			var names []string
			tr := tar.NewReader(stdin)
			for {
				h, err := tr.Next()
				if err != nil {
					break
				}
				names = append(names, h.Name)
			}
			_, _ = io.Copy(io.Discard, stdin)
			files <- names
			return 0
		}
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			var req kernel.Request
			if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
				fmt.Fprintln(stderr, "bad request:", err)
				return 2
			}
			if n, ok := strings.CutPrefix(req.Code, "exit "); ok {
				fmt.Fprintln(stderr, "exiting as asked")
				code, _ := strconv.Atoi(n)
				return code
			}
			b, _ := json.Marshal(kernel.Result{ID: req.ID, Status: kernel.StatusOK, Value: req.Code})
			if _, err := stdout.Write(append(b, '\n')); err != nil {
				return 1
			}
		}
		return 0
	}
}

// startFakeCluster is a kubetest cluster whose containers run fakeDriver,
// and a transport of cfg into it.
func startFakeCluster(t *testing.T, cfg Config, files chan<- []string) (*kubetest.Cluster, *Kube) {
	t.Helper()
	cl := kubetest.Start(t, fakeDriver(files))
	k, err := NewKubePython(Cluster{Client: cl.Client, REST: cl.REST, Namespace: kubetest.Namespace}, cfg)
	require.NoError(t, err)
	return cl, k
}

func startConn(t *testing.T, k *Kube) kernel.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	c, err := k.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestKubePodManifest(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = makeDataDir(t)
	cfg.Env = []string{"A=b"}
	cfg.CPUs, cfg.Memory, cfg.TmpSize = 1.5, 512<<20, 64<<20
	k, err := NewKubePython(Cluster{Client: fake.NewClientset(), REST: &rest.Config{Host: "https://127.0.0.1:1"}, Namespace: "ns"}, cfg)
	require.NoError(t, err)
	p := k.pod("ctxcode-abc", "a session")

	assert.Equal(t, "ns", p.Namespace)
	s := p.Spec
	assert.Equal(t, corev1.RestartPolicyNever, s.RestartPolicy)
	assert.Equal(t, new(false), s.AutomountServiceAccountToken)
	assert.Equal(t, new(false), s.EnableServiceLinks)
	require.NotNil(t, s.SecurityContext)
	assert.Equal(t, new(true), s.SecurityContext.RunAsNonRoot)
	assert.Equal(t, new(int64(65534)), s.SecurityContext.RunAsUser)
	assert.Equal(t, new(int64(65534)), s.SecurityContext.RunAsGroup)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, s.SecurityContext.SeccompProfile.Type)

	require.Len(t, s.Containers, 1)
	require.Len(t, s.InitContainers, 1)
	for _, c := range []corev1.Container{s.Containers[0], s.InitContainers[0]} {
		t.Run(c.Name, func(t *testing.T) {
			assert.Equal(t, cfg.Image, c.Image)
			assert.True(t, c.Stdin)
			assert.True(t, c.StdinOnce)
			assert.False(t, c.TTY)
			sc := c.SecurityContext
			require.NotNil(t, sc)
			assert.Equal(t, new(true), sc.RunAsNonRoot)
			assert.Equal(t, new(int64(65534)), sc.RunAsUser)
			assert.Equal(t, new(false), sc.AllowPrivilegeEscalation)
			assert.Equal(t, new(true), sc.ReadOnlyRootFilesystem)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			assert.Empty(t, sc.Capabilities.Add)
			assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
			// Requests equal limits: the Pod is Guaranteed.
			assert.Equal(t, c.Resources.Limits, c.Resources.Requests)
			assert.True(t, resource.MustParse("1500m").Equal(c.Resources.Limits[corev1.ResourceCPU]))
			assert.True(t, resource.MustParse("512Mi").Equal(c.Resources.Limits[corev1.ResourceMemory]))
		})
	}

	kc := s.Containers[0]
	// The driver's environment is the kernel's, whole: env -i drops what
	// the kubelet adds (the API server's KUBERNETES_SERVICE_*).
	env := kernelEnv(k.cfg)
	assert.Equal(t, slices.Concat([]string{"env", "-i"}, env, kernel.PythonArgv("python3")), kc.Command)
	assert.Contains(t, env, "A=b")
	assert.Empty(t, kc.Env)
	assert.Equal(t, WorkDir, kc.WorkingDir)
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range kc.VolumeMounts {
		mounts[m.MountPath] = m
	}
	assert.False(t, mounts["/tmp"].ReadOnly)
	assert.True(t, mounts[DataPath].ReadOnly, "the data is read-only for the kernel")
	vols := map[string]corev1.Volume{}
	for _, v := range s.Volumes {
		vols[v.Name] = v
	}
	tmp := vols[mounts["/tmp"].Name].EmptyDir
	require.NotNil(t, tmp)
	assert.Equal(t, corev1.StorageMediumMemory, tmp.Medium)
	assert.True(t, resource.MustParse("64Mi").Equal(*tmp.SizeLimit))
	require.NotNil(t, vols[mounts[DataPath].Name].EmptyDir)
	assert.Equal(t, mounts[DataPath].Name, s.InitContainers[0].VolumeMounts[0].Name, "the data container fills the kernel's data volume")

	t.Run("no data", func(t *testing.T) {
		cfg.DataDir = ""
		k, err := NewKubePython(Cluster{Client: k.c.Client, REST: k.c.REST}, cfg)
		require.NoError(t, err)
		p := k.pod("ctxcode-abc", "s")
		assert.Empty(t, p.Spec.InitContainers)
		assert.Len(t, p.Spec.Containers[0].VolumeMounts, 1)
		assert.Equal(t, metav1.NamespaceDefault, p.Namespace)
	})
}

func TestKubeUser(t *testing.T) {
	for _, tc := range []struct {
		user     string
		uid, gid int64
		ok       bool
	}{
		{"65534:65534", 65534, 65534, true},
		{"1000", 1000, 1000, true},
		{"1000:0", 1000, 0, true},
		{"0", 0, 0, false},
		{"0:0", 0, 0, false},
		{"nobody", 0, 0, false},
		{"1000:staff", 0, 0, false},
	} {
		t.Run(tc.user, func(t *testing.T) {
			uid, gid, err := kubeUser(tc.user)
			if !tc.ok {
				var ie *InputError
				require.ErrorAs(t, err, &ie)
				assert.Contains(t, err.Error(), "numeric user other than root")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.uid, uid)
			assert.Equal(t, tc.gid, gid)
		})
	}
}

func TestKubeLabels(t *testing.T) {
	for _, session := range []string{
		"0a1b2c3d4e5f",
		"ctxtest-123-TestKube/sub_test-abc",
		strings.Repeat("x", 100),
		"-._weird start and end!-",
	} {
		l := kubeLabels(session)
		for k, v := range l {
			assert.Empty(t, validation.IsQualifiedName(k), "key %q", k)
			assert.Empty(t, validation.IsValidLabelValue(v), "%s=%q", k, v)
		}
		assert.NotEmpty(t, l[LabelSession], "session %q", session)
		// The owner labels are the judge's, as on a container.
		assert.Equal(t, self().ID, ownerOf(l).ID)
		assert.Equal(t, self().PID, ownerOf(l).PID)
		assert.Equal(t, self().Boot, ownerOf(l).Boot)
		assert.Equal(t, self().PIDNS, ownerOf(l).PIDNS)
		assert.Equal(t, self().Start, ownerOf(l).Start)
	}
	assert.Equal(t, "0a1b2c3d4e5f", kubeLabels("0a1b2c3d4e5f")[LabelSession])
	assert.NotEqual(t, kubeLabelValue(strings.Repeat("x", 100)), kubeLabelValue(strings.Repeat("x", 101)),
		"long session ids stay apart")
}

// actions counts the fake clientset's actions of a verb on a resource.
func actions(cl *kubetest.Cluster, verb, res string) int {
	n := 0
	for _, a := range cl.Client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == res {
			n++
		}
	}
	return n
}

func TestKubeNetworkPolicy(t *testing.T) {
	cl, k := startFakeCluster(t, DefaultConfig(), nil)
	for range 2 {
		require.NoError(t, startConn(t, k).Close())
	}
	assert.Equal(t, 1, actions(cl, "create", "networkpolicies"), "made once")
	np, err := cl.Client.NetworkingV1().NetworkPolicies(kubetest.Namespace).Get(context.Background(), NetworkPolicyName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.LabelSelectorRequirement{{Key: LabelSession, Operator: metav1.LabelSelectorOpExists}}, np.Spec.PodSelector.MatchExpressions)
	assert.Empty(t, np.Spec.PodSelector.MatchLabels)
	assert.ElementsMatch(t, []string{"Ingress", "Egress"}, []string{string(np.Spec.PolicyTypes[0]), string(np.Spec.PolicyTypes[1])})
	assert.Empty(t, np.Spec.Ingress, "no ingress rule: all ingress denied")
	assert.Empty(t, np.Spec.Egress, "no egress rule: all egress denied")

	// Another transport (another ctxcode process) finds it there.
	k2, err := NewKubePython(k.c, DefaultConfig())
	require.NoError(t, err)
	require.NoError(t, startConn(t, k2).Close())
	assert.Equal(t, 1, actions(cl, "create", "networkpolicies"), "not made again")
}

func TestKubeLifecycle(t *testing.T) {
	t.Run("close ends the kernel gently and deletes its pod", func(t *testing.T) {
		cl, k := startFakeCluster(t, DefaultConfig(), nil)
		c, err := kernel.Start(context.Background(), kernel.Python, k, kernel.ClientOptions{})
		require.NoError(t, err)
		res, err := c.Execute(context.Background(), "1+1", kernel.ExecOptions{})
		require.NoError(t, err)
		assert.Equal(t, "1+1", res.Value)
		assert.Equal(t, 1, cl.Pods(t))
		require.NoError(t, c.Close())
		assert.Equal(t, 0, cl.Pods(t))
	})
	t.Run("the end of the input reaches the driver", func(t *testing.T) {
		_, k := startFakeCluster(t, DefaultConfig(), nil)
		conn := startConn(t, k)
		require.NoError(t, conn.Close())
		<-conn.Done()
		// The fake driver exits 0 only at the end of its input; a kill
		// would say SIGKILL.
		assert.Equal(t, kernel.Exit{Code: 0, MemLimit: DefaultConfig().Memory}, conn.Exit())
	})
	t.Run("a kernel that exits is dead with its status and stderr", func(t *testing.T) {
		cl, k := startFakeCluster(t, DefaultConfig(), nil)
		c, err := kernel.Start(context.Background(), kernel.Python, k, kernel.ClientOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = c.Execute(context.Background(), "exit 3", kernel.ExecOptions{})
		var de *kernel.DeadError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 3, de.Exit.Code)
		assert.Contains(t, de.Exit.StderrTail, "exiting as asked")
		assert.Equal(t, "exit 3", kernel.Death(err))
		require.NoError(t, c.Close())
		assert.Equal(t, 0, cl.Pods(t))
	})
	t.Run("kill deletes the pod at once", func(t *testing.T) {
		cl, k := startFakeCluster(t, DefaultConfig(), nil)
		conn := startConn(t, k)
		require.NoError(t, conn.Kill())
		<-conn.Done()
		assert.Equal(t, syscall.SIGKILL, conn.Exit().Signal)
		assert.Equal(t, 0, cl.Pods(t))
		_, err := conn.Write([]byte("{}\n"))
		assert.Error(t, err, "no write reaches a killed kernel")
	})
	t.Run("an interrupt is an exec", func(t *testing.T) {
		// kubetest serves attach only: the exec's failure comes back as the
		// interrupt's (TestE2EKube interrupts a cell on a real cluster).
		_, k := startFakeCluster(t, DefaultConfig(), nil)
		in, ok := startConn(t, k).(kernel.Interrupter)
		require.True(t, ok)
		err := in.Interrupt()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "interrupt the kernel of pod ctxcode-")
		assert.Contains(t, err.Error(), "an exec in its container")
	})
}

func TestKubeData(t *testing.T) {
	files := make(chan []string, 1)
	cfg := DefaultConfig()
	cfg.DataDir = makeDataDir(t)
	cl, k := startFakeCluster(t, cfg, files)
	conn := startConn(t, k)
	assert.ElementsMatch(t, []string{"notes.txt", "sales.csv", "sub/", "sub/nested.txt"}, <-files,
		"the data container got the folder as a tar")
	require.NoError(t, conn.Close())
	assert.Equal(t, 0, cl.Pods(t))
}

func TestKubeStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		err          error
		hint         string
	}{
		{"unschedulable", "Unschedulable", kubetest.ErrUnschedulable, "no node with room"},
		{"image not pulled", "ErrImagePull", &kubetest.Waiting{Reason: "ErrImagePull", Message: "pull access denied"}, "push the kernel image"},
		{"image pull backoff", "ImagePullBackOff", &kubetest.Waiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}, "--image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := kubetest.Start(t, failing{tc.err})
			k, err := NewKubePython(Cluster{Client: cl.Client, REST: cl.REST, Namespace: kubetest.Namespace}, DefaultConfig())
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			_, err = k.Start(ctx)
			var pe *PodError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.reason, pe.Reason)
			assert.Contains(t, err.Error(), tc.reason)
			assert.Contains(t, err.Error(), tc.hint)
			assert.Equal(t, 0, cl.Pods(t), "the pod is deleted")
		})
	}
}

// failing is a runtime that starts nothing, with err.
type failing struct{ err error }

func (f failing) Start(context.Context, *corev1.Pod, corev1.Container) (kubetest.Proc, error) {
	return nil, f.err
}
func (failing) End(*corev1.Pod) {}

func TestKubeForbidden(t *testing.T) {
	cl, k := startFakeCluster(t, DefaultConfig(), nil)
	cl.Client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "u" cannot create resource "pods"`))
	})
	_, err := k.Start(context.Background())
	var ae *AccessError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, err.Error(), "create and get on pods/attach")
	assert.Contains(t, err.Error(), kubetest.Namespace)
}

// TestKubeFallsBackToSPDY: an attach whose WebSocket upgrade is refused
// (an older API server, or a proxy) is tried again over SPDY. client-go's
// streams fail with k8s.io/streaming's errors; a check for those of
// apimachinery's copy never fell back (found on the real cluster,
// TestE2EKube, which also runs the whole kernel over SPDY).
func TestKubeFallsBackToSPDY(t *testing.T) {
	var refused, spdy int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch up := strings.ToLower(r.Header.Get("Upgrade")); {
		case up == "websocket" && r.Method == http.MethodGet:
			refused++
		case strings.HasPrefix(up, "spdy/") && r.Method == http.MethodPost:
			spdy++
		}
		http.Error(w, "no upgrade here", http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	k, err := NewKubePython(Cluster{Client: fake.NewClientset(), REST: &rest.Config{Host: srv.URL}, Namespace: "ns"}, DefaultConfig())
	require.NoError(t, err)
	exec, err := k.executor("ctxcode-abc", KernelContainer)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	require.Error(t, err, "neither upgrade is taken")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, refused, "WebSocket first")
	assert.Equal(t, 1, spdy, "then SPDY")
}

// heldRuntime holds every container in its creation until its Pod is
// deleted: a Pod of it never runs, nor fails.
type heldRuntime struct{}

func (heldRuntime) Start(ctx context.Context, _ *corev1.Pod, _ corev1.Container) (kubetest.Proc, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (heldRuntime) End(*corev1.Pod) {}

// TestKubeStartAndDeleteLimits: at most KubeMaxStarts Pods are between
// create and attach at a time (a start beyond waits, and makes no Pod), and
// deletions never wait behind starts: on a cluster whose Pods do not come
// up, a pool's deletes still free room.
func TestKubeStartAndDeleteLimits(t *testing.T) {
	cl := kubetest.Start(t, heldRuntime{})
	k, err := NewKubePython(Cluster{Client: cl.Client, REST: cl.REST, Namespace: kubetest.Namespace}, DefaultConfig())
	require.NoError(t, err)
	held, release := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range KubeMaxStarts {
		wg.Go(func() {
			_, err := k.Start(held)
			assert.Error(t, err, "a held Pod never runs")
		})
	}
	t.Cleanup(func() { release(); wg.Wait() })
	require.Eventually(t, func() bool { return cl.Pods(t) == KubeMaxStarts }, time.Minute, 10*time.Millisecond, "the starts made their Pods")

	late, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := k.Start(late); done <- err }()
	cancel()
	err = <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("wait for a start of a kernel pod (at most %d at a time)", KubeMaxStarts))
	assert.Equal(t, KubeMaxStarts, cl.Pods(t), "the start beyond the limit made no Pod")

	l, err := cl.Client.CoreV1().Pods(kubetest.Namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	deleted := make(chan error, 1)
	go func() { deleted <- k.deletePod(l.Items[0].Name) }()
	select {
	case err := <-deleted:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a hang guard: a delete that waits for a start never returns
		t.Fatal("a delete waited behind the starts")
	}
	assert.Equal(t, KubeMaxStarts-1, cl.Pods(t))
}

func TestKubePrune(t *testing.T) {
	cl := kubetest.Start(t, fakeDriver(nil))
	c := Cluster{Client: cl.Client, REST: cl.REST, Namespace: kubetest.Namespace}
	me := self()
	dead := me
	dead.ID, dead.PID, dead.Start = "gone", deadPID(t), ""
	old := time.Now().Add(-48 * time.Hour)
	mk := func(name string, o owner, made time.Time, phase corev1.PodPhase) {
		l := o.labels()
		l[LabelSession] = "s-" + name
		l[LabelCreated] = strconv.FormatInt(made.Unix(), 10)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: kubetest.Namespace, Labels: l}, Status: corev1.PodStatus{Phase: phase}}
		_, err := cl.Client.CoreV1().Pods(kubetest.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	mk("mine", me, old, corev1.PodRunning)
	mk("orphan", dead, time.Now(), corev1.PodRunning)
	mk("elsewhere", owner{ID: "x", Host: "other", Boot: "b", PIDNS: "1", PID: 7}, old, corev1.PodSucceeded)
	_, err := cl.Client.CoreV1().Pods(kubetest.Namespace).Create(context.Background(),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-ours", Namespace: kubetest.Namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)

	list, err := KubeList(context.Background(), c, 0)
	require.NoError(t, err)
	require.Len(t, list, 3, "only ctxcode pods")
	judged := orphanIDs(list)
	assert.Contains(t, judged["orphan"], "is gone")
	assert.Empty(t, judged["mine"])
	assert.Empty(t, judged["elsewhere"])

	removed, err := KubePrune(context.Background(), c, PruneOptions{DryRun: true})
	require.NoError(t, err)
	assert.Len(t, removed, 1)
	assert.Equal(t, 4, cl.Pods(t), "a dry run deletes nothing")

	require.NoError(t, KubeSweep(context.Background(), c))
	assert.Equal(t, 3, cl.Pods(t), "the sweep deletes the orphan only")

	removed, err = KubePrune(context.Background(), c, PruneOptions{OlderThan: time.Hour})
	require.NoError(t, err)
	require.Len(t, removed, 1)
	assert.Equal(t, "elsewhere", removed[0].ID, "an age limit deletes what cannot be judged, never this process's")
}

func TestKubeCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts OpenOptions
		want string
	}{
		{"go kernel", OpenOptions{Kind: KindKubernetes, Lang: kernel.Go}, "Python kernel only"},
		{"bad namespace", OpenOptions{Kind: KindKubernetes, Kube: KubeOptions{Namespace: "Not_A_Name"}}, "--namespace"},
		{"missing kubeconfig", OpenOptions{Kind: KindKubernetes, Kube: KubeOptions{Kubeconfig: "/nonexistent/kubeconfig"}}, "--kubeconfig"},
		{"kube options without kubernetes", OpenOptions{Kind: KindDocker, Kube: KubeOptions{Namespace: "ns"}}, "for --sandbox kubernetes"},
		{"root user", OpenOptions{Kind: KindKubernetes, Docker: &Config{User: "0", Memory: 1 << 30, CPUs: 1, Pids: 100}}, "other than root"},
		{"network", OpenOptions{Kind: KindKubernetes, Docker: &Config{User: "1000", Network: "bridge", Memory: 1 << 30, CPUs: 1, Pids: 100}}, "NetworkPolicy"},
		{"unknown kind", OpenOptions{Kind: "k8s"}, "docker, local or kubernetes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Check()
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	ok := OpenOptions{Kind: KindKubernetes, Kube: KubeOptions{Namespace: "team-a"}}
	require.NoError(t, ok.Check())
}

// TestKubePool: a warm pool of more Pods than start at once fills, hands
// out working kernels, and leaves no Pod once closed.
func TestKubePool(t *testing.T) {
	cl, k := startFakeCluster(t, DefaultConfig(), nil)
	p := NewPool(kernel.Python, k, KubeMaxStarts+2, kernel.ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	var got []*kernel.Client
	for range KubeMaxStarts + 2 {
		c, err := p.Acquire(ctx)
		require.NoError(t, err)
		got = append(got, c)
		res, err := c.Execute(ctx, "x", kernel.ExecOptions{})
		require.NoError(t, err)
		assert.Equal(t, "x", res.Value)
	}
	for _, c := range got {
		require.NoError(t, c.Close())
	}
	require.NoError(t, p.Close())
	assert.Equal(t, 0, cl.Pods(t))
}
