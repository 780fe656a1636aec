package sandbox

// The Kubernetes backend: each kernel is a Pod whose one container runs the
// driver, spoken to over pods/attach. See Kube.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/klog/v2"
	// client-go's streams fail with this package's errors, not with those
	// of apimachinery's copy of it.
	"k8s.io/streaming/pkg/httpstream"

	"github.com/ctxcode/ctxcode/kernel"
)

// Names inside a kernel Pod.
const (
	// KernelContainer runs the driver.
	KernelContainer = "kernel"
	// DataContainer is the init container that unpacks the data folder,
	// sent through its attach stream as a tar, into the emptyDir the
	// kernel container mounts read-only at DataPath.
	DataContainer = "data"
	// NetworkPolicyName is the policy Kube makes in its namespace (once,
	// if missing): every ctxcode Pod (one with the ctxcode.session label)
	// gets no ingress and no egress.
	NetworkPolicyName = "ctxcode-deny-all"
)

// Cluster is a Kubernetes namespace kernels run in: a client for its API
// (Pods, NetworkPolicies), the REST configuration attach streams are opened
// with, and the namespace.
type Cluster struct {
	Client    kubernetes.Interface
	REST      *rest.Config
	Namespace string
}

// Kube starts kernels as Pods in a Cluster. It is a kernel.Transport.
//
// Each kernel is a Pod (restartPolicy Never) whose container "kernel" runs
// the driver with the same command line and environment as Docker's (under
// env -i, see kubeCommand), stdin open once
// (stdin, stdinOnce, no tty), under the restricted Pod Security Standard:
// uid and gid 65534 (Config.User), runAsNonRoot, no privilege escalation,
// every capability dropped, seccomp RuntimeDefault, a read-only root with
// a memory-backed emptyDir at /tmp of Config.TmpSize, no service account
// token, no service links, CPU and memory requests equal to their limits
// (Config.CPUs, Config.Memory). It carries the labels of a Docker container
// (owner.go; values Kubernetes refuses are left out, the session id made
// valid), so that KubeList, KubePrune and KubeSweep judge it as List judges
// a container. A NetworkPolicy denies all ingress and egress to ctxcode
// Pods; it is enforced only where the cluster's network plugin implements
// NetworkPolicy.
//
// The client speaks the kernel protocol over pods/attach (WebSocket v5,
// falling back to SPDY), which starts once the container runs: the driver
// writes nothing before its first request, so nothing is lost. Closing
// the input half-closes the stream, and the driver ends as in Docker.
//
// The data folder goes in before the kernel starts: an init container
// (DataContainer, as hardened) unpacks a tar of it, sent through its own
// attach stream, into an emptyDir that the kernel container mounts
// read-only at DataPath.
//
// Kubernetes has no call to signal a container: an interrupt is a process
// exec'd in the kernel's container that signals its first process, the
// kernel (kubeConn.Interrupt; pods/exec). Config.Pids has no per-Pod field
// (a node's kubelet sets podPidsLimit), and Config.Network, WritableRoot,
// KeepCaps, NewPrivileges and Swap are Docker's.
type Kube struct {
	c    Cluster
	cfg  Config
	argv []string
	uid  int64
	gid  int64

	policyMu   sync.Mutex
	policyMade bool

	// starting and deleting bound the Pods this transport has between
	// create and attach, and those it is deleting: apart, so that
	// deletions, which free room on the cluster, never wait behind starts
	// that wait for room (a full cluster cannot deadlock a pool).
	starting chan struct{}
	deleting chan struct{}
}

// The most Pods one Kube starts, and deletes, at a time.
const (
	KubeMaxStarts  = 4
	KubeMaxDeletes = 8
)

// KubeRoomWait is how long a start waits for a Pod the scheduler has no
// room for now (Insufficient cpu or memory on every node that would take
// it): a busy cluster places it once other Pods end. A Pod that no node
// could hold even empty fails at once, where the user may list nodes.
const KubeRoomWait = 2 * time.Minute

var _ kernel.Transport = (*Kube)(nil)

// NewKubePython is a transport for the Python kernel in Pods of c, made as
// cfg says. A Config Kubernetes cannot run (a user that is not a numeric
// non-root uid[:gid]) is an *InputError.
func NewKubePython(c Cluster, cfg Config) (*Kube, error) {
	quietClientGo()
	cfg, err := cfg.filled()
	if err != nil {
		return nil, err
	}
	if c.Client == nil || c.REST == nil {
		return nil, errors.New("kubernetes transport: no client")
	}
	if c.Namespace == "" {
		c.Namespace = metav1.NamespaceDefault
	}
	uid, gid, err := kubeUser(cfg.User)
	if err != nil {
		return nil, err
	}
	return &Kube{c: c, cfg: cfg, argv: kernel.PythonArgv("python3"), uid: uid, gid: gid,
		starting: make(chan struct{}, KubeMaxStarts), deleting: make(chan struct{}, KubeMaxDeletes)}, nil
}

// quietClientGo sends client-go's own logging (klog: "Copying stdin
// failed" as a stream ends, and such) nowhere: a library of ctxcode's
// prints nothing, and every error that matters comes back from its call.
var quietClientGo = sync.OnceFunc(func() { klog.SetLogger(logr.Discard()) })

// kubeUser reads Config.User as runAsUser and runAsGroup: numeric, and
// not root (runAsNonRoot).
func kubeUser(user string) (uid, gid int64, err error) {
	u, g, hasGroup := strings.Cut(user, ":")
	bad := inputErrorf("--user %q: Kubernetes runs the kernel as a numeric user other than root: give uid[:gid], e.g. 65534:65534 (the default)", user)
	if uid, err = strconv.ParseInt(u, 10, 64); err != nil || uid <= 0 {
		return 0, 0, bad
	}
	gid = uid
	if hasGroup {
		if gid, err = strconv.ParseInt(g, 10, 64); err != nil || gid < 0 {
			return 0, 0, bad
		}
	}
	return uid, gid, nil
}

// Config is the configuration Pods are made with.
func (k *Kube) Config() Config { return k.cfg }

// Namespace is the namespace Pods are made in.
func (k *Kube) Namespace() string { return k.c.Namespace }

// PodError is a kernel Pod the cluster cannot run: it cannot be scheduled
// (Unschedulable), its image cannot be pulled (ErrImagePull,
// ImagePullBackOff, InvalidImageName), its container cannot be made, or it
// failed before its kernel ran. It is the infrastructure's, not the cell's.
type PodError struct {
	Namespace string
	Pod       string
	// Container is the container that could not start; empty for the Pod.
	Container string
	// Reason is Kubernetes' reason, e.g. "Unschedulable" or "ErrImagePull".
	Reason  string
	Message string
	// Image is the image the container runs, for pull failures.
	Image string
	// Waited is how long the start waited for room on the cluster (at
	// most KubeRoomWait), when it did.
	Waited time.Duration
}

func (e *PodError) Error() string {
	what := fmt.Sprintf("kernel pod %s/%s", e.Namespace, e.Pod)
	if e.Container != "" {
		what += " container " + e.Container
	}
	msg := fmt.Sprintf("%s cannot run: %s", what, e.Reason)
	if e.Message != "" {
		msg += ": " + strings.TrimSpace(e.Message)
	}
	switch e.Reason {
	case corev1.PodReasonUnschedulable:
		if e.Waited > 0 {
			msg += fmt.Sprintf(" (after %s waiting for room)", e.Waited)
		}
		msg += "; the cluster has no node with room for its requests (--memory, --cpus) that it may use: free some, or ask for less"
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		msg += fmt.Sprintf("; the cluster cannot pull %s: push the kernel image to a registry the cluster reaches and name it with --image", e.Image)
	}
	return msg
}

// badWaiting are the waiting reasons of a container that will not start
// without someone's help.
var badWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// podProblem is why p cannot run, or nil while it may still.
func podProblem(p *corev1.Pod) *PodError {
	e := &PodError{Namespace: p.Namespace, Pod: p.Name}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			e.Reason, e.Message = c.Reason, c.Message
			return e
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && badWaiting[w.Reason] {
			e.Container, e.Reason, e.Message, e.Image = cs.Name, w.Reason, w.Message, cs.Image
			return e
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		e.Reason, e.Message = p.Status.Reason, p.Status.Message
		if e.Reason == "" {
			e.Reason = "Failed"
		}
		return e
	}
	return nil
}

// containerState is the state of the container name in p (init or not).
func containerState(p *corev1.Pod, name string) corev1.ContainerState {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return cs.State
			}
		}
	}
	return corev1.ContainerState{}
}

var invalidLabelChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// kubeLabelValue is s as a valid label value: characters Kubernetes
// refuses become '_', and one too long keeps its start and a hash of all.
func kubeLabelValue(s string) string {
	v := strings.Trim(invalidLabelChars.ReplaceAllString(s, "_"), "_.-")
	if len(v) > validation.LabelValueMaxLength {
		sum := sha256.Sum256([]byte(s))
		v = strings.TrimRight(v[:validation.LabelValueMaxLength-9], "_.-") + "-" + hex.EncodeToString(sum[:4])
	}
	return v
}

// kubeLabels are the labels of what is made for session, as Kubernetes
// takes them: the session id made a valid value, any other value it
// refuses (a hostname longer than 63 characters) left out.
func kubeLabels(session string) map[string]string {
	l := sessionLabels(kubeLabelValue(session))
	for k, v := range l {
		if len(validation.IsValidLabelValue(v)) > 0 {
			delete(l, k)
		}
	}
	return l
}

// hardened is the security context of every container of a kernel Pod.
func (k *Kube) hardened() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser:                &k.uid,
		RunAsGroup:               &k.gid,
		RunAsNonRoot:             new(true),
		AllowPrivilegeEscalation: new(false),
		Privileged:               new(false),
		ReadOnlyRootFilesystem:   new(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// untarScript unpacks a tar read on stdin into its argument: the data
// container's program (tarfile's "data" filter where the Python has it).
const untarScript = `import sys, tarfile
kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as t:
    t.extractall(sys.argv[1], **kw)
`

// kubeCommand is a container's command that runs argv with env as its
// whole environment (env -i). The kubelet gives every container the
// KUBERNETES_SERVICE_* variables of the API server, service links or not;
// a kernel gets the variables a Docker container gets, and none of the
// cluster's.
func kubeCommand(env, argv []string) []string {
	return slices.Concat([]string{"env", "-i"}, env, argv)
}

// pod is the manifest of one kernel Pod.
func (k *Kube) pod(name, session string) *corev1.Pod {
	limits := corev1.ResourceList{}
	if k.cfg.Memory > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(k.cfg.Memory, resource.BinarySI)
	}
	if k.cfg.CPUs > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(k.cfg.CPUs*1000+0.5), resource.DecimalSI)
	}
	res := corev1.ResourceRequirements{Requests: limits, Limits: limits.DeepCopy()}
	tmp := corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
	if k.cfg.TmpSize > 0 {
		tmp.SizeLimit = resource.NewQuantity(k.cfg.TmpSize, resource.BinarySI)
	}
	kc := corev1.Container{
		Name:            KernelContainer,
		Image:           k.cfg.Image,
		Command:         kubeCommand(kernelEnv(k.cfg), k.argv),
		WorkingDir:      WorkDir,
		Stdin:           true,
		StdinOnce:       true,
		TTY:             false,
		Resources:       res,
		SecurityContext: k.hardened(),
		ImagePullPolicy: corev1.PullIfNotPresent,
		VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		// The kernel's stderr is in the attach stream's tail; the
		// termination message would only repeat it.
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.c.Namespace, Labels: kubeLabels(session)},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			TerminationGracePeriodSeconds: new(int64(1)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      &k.uid,
				RunAsGroup:     &k.gid,
				RunAsNonRoot:   new(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes:    []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &tmp}}},
			Containers: []corev1.Container{kc},
		},
	}
	if k.cfg.DataDir != "" {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: "data", MountPath: DataPath, ReadOnly: true})
		p.Spec.InitContainers = []corev1.Container{{
			Name:            DataContainer,
			Image:           k.cfg.Image,
			Command:         kubeCommand(kernelEnv(k.cfg)[:1], []string{"python3", "-c", untarScript, "/data"}), // PATH only
			Stdin:           true,
			StdinOnce:       true,
			Resources:       res,
			SecurityContext: k.hardened(),
			ImagePullPolicy: corev1.PullIfNotPresent,
			VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}}
	}
	return p
}

// networkPolicy denies all ingress and egress to ctxcode Pods.
func (k *Kube) networkPolicy() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName, Namespace: k.c.Namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: LabelSession, Operator: metav1.LabelSelectorOpExists},
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// ensureNetworkPolicy makes the NetworkPolicy if the namespace lacks it,
// once per transport.
func (k *Kube) ensureNetworkPolicy(ctx context.Context) error {
	k.policyMu.Lock()
	defer k.policyMu.Unlock()
	if k.policyMade {
		return nil
	}
	api := k.c.Client.NetworkingV1().NetworkPolicies(k.c.Namespace)
	_, err := api.Get(ctx, NetworkPolicyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, k.networkPolicy(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return k.apiError(fmt.Sprintf("make the NetworkPolicy %s", NetworkPolicyName), err)
	}
	k.policyMade = true
	return nil
}

// AccessError is a request the cluster refused to this user: the
// namespace lacks the Role ctxcode needs (see the README).
type AccessError struct {
	Namespace string
	What      string
	Err       error
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("kubernetes namespace %s: %s: %v; the user needs a Role there with get, list, watch, create and delete on pods, "+
		"create and get on pods/attach (and on pods/exec, to interrupt a cell), and get and create on networkpolicies (see the README)", e.Namespace, e.What, e.Err)
}

func (e *AccessError) Unwrap() error { return e.Err }

// apiError is err of an API call doing what, an *AccessError when the
// cluster refused it.
func (k *Kube) apiError(what string, err error) error {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &AccessError{Namespace: k.c.Namespace, What: what, Err: err}
	}
	return fmt.Errorf("%s in kubernetes namespace %s: %w", what, k.c.Namespace, err)
}

// Start makes one kernel Pod, waits until it runs (its data unpacked
// first), and attaches to it. On any failure it deletes what it made.
func (k *Kube) Start(ctx context.Context) (_ kernel.Conn, err error) {
	select {
	case k.starting <- struct{}{}:
		defer func() { <-k.starting }()
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a start of a kernel pod (at most %d at a time): %w", cap(k.starting), ctx.Err())
	}
	if err := k.ensureNetworkPolicy(ctx); err != nil {
		return nil, err
	}
	session := k.cfg.Session
	if session == "" {
		session = NewSessionID()
	}
	name := "ctxcode-" + NewSessionID()
	pods := k.c.Client.CoreV1().Pods(k.c.Namespace)
	cctx, ccancel := detached(ctx)
	_, err = pods.Create(cctx, k.pod(name, session), metav1.CreateOptions{})
	ccancel()
	if err != nil {
		return nil, k.apiError("create the kernel pod", err)
	}
	wctx, stopWatch := context.WithCancel(context.Background())
	w := watchPod(wctx, pods, name)
	defer func() {
		if err != nil {
			stopWatch()
			err = errors.Join(err, k.deletePod(name))
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k.cfg.DataDir != "" {
		if err := k.sendData(ctx, w, name); err != nil {
			return nil, err
		}
	}
	if err := k.waitRunning(ctx, w, KernelContainer); err != nil {
		return nil, err
	}
	c := &kubeConn{k: k, pod: name, w: w, stopWatch: stopWatch,
		tail: kernel.NewTailBuffer(k.cfg.StderrTail), streamed: make(chan struct{}), done: make(chan struct{}), killed: make(chan struct{})}
	if err := c.attach(ctx); err != nil {
		return nil, err
	}
	go c.wait()
	return c, nil
}

// waitRunning waits until container runs in the Pod w follows. A Pod
// unschedulable for want of room waits for it, up to KubeRoomWait, unless
// no node could hold it (fitsANode); then, and after the wait, it is the
// *PodError that says so.
func (k *Kube) waitRunning(ctx context.Context, w *podWatch, container string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var patience *time.Timer
	var since time.Time // when the wait for room began
	defer func() {
		if patience != nil {
			patience.Stop()
		}
	}()
	err := w.until(ctx, func(p *corev1.Pod) (bool, error) {
		ok, err := running(p, container)
		var pe *PodError
		if errors.As(err, &pe) && pe.Reason == corev1.PodReasonUnschedulable && strings.Contains(pe.Message, "Insufficient ") {
			if patience == nil {
				if !k.fitsANode(ctx, p) {
					return false, pe
				}
				patience, since = time.AfterFunc(KubeRoomWait, cancel), time.Now()
			}
			return false, nil
		}
		if patience != nil && p != nil && p.Spec.NodeName != "" {
			patience.Stop() // placed: the rest of the start is not the scheduler's
		}
		return ok, err
	})
	var pe *PodError
	if errors.As(err, &pe) && patience != nil && pe.Reason == corev1.PodReasonUnschedulable {
		pe.Waited = time.Since(since).Round(time.Second) // until returned the Pod's problem as the wait ended
	}
	return err
}

// fitsANode reports whether some schedulable node of the cluster has the
// CPU and memory p's containers request, with nothing else on it; true
// when the nodes cannot be listed (the user's Role need not allow it).
func (k *Kube) fitsANode(ctx context.Context, p *corev1.Pod) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := k.c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return true
	}
	want := corev1.ResourceList{}
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		for name, q := range c.Resources.Requests {
			if cur, ok := want[name]; !ok || q.Cmp(cur) > 0 {
				want[name] = q // the containers run one after another: the largest counts
			}
		}
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		fits := true
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := want[name]; ok {
				if have, ok := n.Status.Allocatable[name]; ok && have.Cmp(q) < 0 {
					fits = false
				}
			}
		}
		if fits {
			return true
		}
	}
	return false
}

// running reports whether container runs in p; an error when it never will.
func running(p *corev1.Pod, container string) (bool, error) {
	if p == nil {
		return false, errors.New("the pod was deleted")
	}
	if e := podProblem(p); e != nil {
		return false, e
	}
	st := containerState(p, container)
	if t := st.Terminated; t != nil {
		return false, fmt.Errorf("container %s of pod %s ended before it was attached to (exit code %d, %s)", container, p.Name, t.ExitCode, t.Reason)
	}
	return st.Running != nil, nil
}

// sendData attaches to the data container, sends it the data folder as a
// tar and waits for it to have unpacked it.
func (k *Kube) sendData(ctx context.Context, w *podWatch, name string) error {
	if err := k.waitRunning(ctx, w, DataContainer); err != nil {
		return err
	}
	exec, err := k.executor(name, DataContainer)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	tarErr := make(chan error, 1)
	go func() {
		err := tarReadOnly(pw, k.cfg.DataDir, k.cfg.FollowLinks)
		pw.CloseWithError(err)
		tarErr <- err
	}()
	stderr := kernel.NewTailBuffer(k.cfg.StderrTail)
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr, Stdout: io.Discard, Stderr: stderr})
	pr.CloseWithError(errors.New("the data stream has ended"))
	terr := <-tarErr
	if err != nil { // the cause of a tar cut short, if it was
		return k.attachError(name, DataContainer, err)
	}
	if terr != nil {
		return fmt.Errorf("copy the data folder into pod %s: %w", name, terr)
	}
	return w.until(ctx, func(p *corev1.Pod) (bool, error) {
		if p == nil {
			return false, errors.New("the pod was deleted")
		}
		t := containerState(p, DataContainer).Terminated
		switch {
		case t == nil:
			return false, nil
		case t.ExitCode != 0:
			return false, fmt.Errorf("unpack the data folder in pod %s: exit code %d: %s", name, t.ExitCode, strings.TrimSpace(stderr.String()))
		}
		return true, nil
	})
}

// executor is an attach stream to container of pod name: WebSocket (v5,
// which can half-close stdin), falling back to SPDY where an older API
// server or a proxy refuses the upgrade.
func (k *Kube) executor(name, container string) (remotecommand.Executor, error) {
	return k.stream(name, "attach", url.Values{"container": {container}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}})
}

// stream is a stream to the subresource (attach, exec) of pod name, with
// query: WebSocket, falling back to SPDY.
func (k *Kube) stream(name, subresource string, query url.Values) (remotecommand.Executor, error) {
	base, _, err := rest.DefaultServerUrlFor(k.c.REST)
	if err != nil {
		return nil, fmt.Errorf("kubernetes API server %q: %w", k.c.REST.Host, err)
	}
	u := *base
	u.Path = path.Join("/", base.Path, "api/v1/namespaces", k.c.Namespace, "pods", name, subresource)
	u.RawQuery = query.Encode()
	ws, err := remotecommand.NewWebSocketExecutor(k.c.REST, "GET", u.String())
	if err != nil {
		return nil, fmt.Errorf("%s pod %s: %w", subresource, name, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(k.c.REST, "POST", &u)
	if err != nil {
		return nil, fmt.Errorf("%s pod %s: %w", subresource, name, err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// attachError is the failure of an attach to container of pod name.
func (k *Kube) attachError(name, container string, err error) error {
	return k.streamError(fmt.Sprintf("attach to container %s of pod %s", container, name), err)
}

// streamError is the failure of a stream doing what, an *AccessError when
// the cluster refused it.
func (k *Kube) streamError(what string, err error) error {
	if strings.Contains(err.Error(), "403") || strings.Contains(strings.ToLower(err.Error()), "forbidden") {
		return &AccessError{Namespace: k.c.Namespace, What: what, Err: err}
	}
	return fmt.Errorf("%s in kubernetes namespace %s: %w", what, k.c.Namespace, err)
}

// deletePod deletes a Pod at once; nil-safe ("" does nothing) and
// idempotent.
func (k *Kube) deletePod(name string) error {
	if name == "" {
		return nil
	}
	if k.deleting != nil {
		k.deleting <- struct{}{}
		defer func() { <-k.deleting }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := k.c.Client.CoreV1().Pods(k.c.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	if err != nil && !apierrors.IsNotFound(err) {
		return k.apiError("delete pod "+name, err)
	}
	return nil
}

// podWatch follows one Pod: the last state seen (nil once it is deleted),
// and a channel closed at each change.
type podWatch struct {
	mu      sync.Mutex
	pod     *corev1.Pod
	gone    bool
	lost    error // why the Pod can no longer be followed
	changed chan struct{}
}

type podsAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watchPod follows the Pod name until ctx ends or the Pod is deleted.
func watchPod(ctx context.Context, pods podsAPI, name string) *podWatch {
	w := &podWatch{changed: make(chan struct{})}
	go w.run(ctx, pods, name)
	return w
}

func (w *podWatch) set(p *corev1.Pod, gone bool, lost error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone || w.lost != nil {
		return
	}
	if p != nil {
		w.pod = p
	}
	w.gone, w.lost = gone, lost
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *podWatch) run(ctx context.Context, pods podsAPI, name string) {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Watch first, then get: a change between the two is in both.
		wi, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel})
		if err == nil {
			var p *corev1.Pod
			p, err = pods.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				wi.Stop()
				w.set(nil, true, nil)
				return
			case err == nil:
				w.set(p, false, nil)
				gone := w.follow(ctx, wi, name)
				wi.Stop()
				if gone {
					return
				}
				backoff = 100 * time.Millisecond
			default:
				wi.Stop()
			}
		}
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			w.set(nil, false, fmt.Errorf("watch pod %s: %w", name, err))
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	w.set(nil, false, errors.New("the pod is no longer followed"))
}

// follow takes the events of wi until it ends; true once the Pod is gone.
func (w *podWatch) follow(ctx context.Context, wi watch.Interface, name string) bool {
	for {
		var ev watch.Event
		var open bool
		select {
		case ev, open = <-wi.ResultChan():
		case <-ctx.Done():
			return false
		}
		if !open {
			return false
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || p.Name != name {
			continue // an error event ends the watch; others are other Pods'
		}
		switch ev.Type {
		case watch.Deleted:
			w.set(p, true, nil)
			return true
		case watch.Added, watch.Modified:
			w.set(p, false, nil)
		}
	}
}

// until waits until cond holds for the Pod as last seen (nil once it is
// deleted), cond fails, the Pod can no longer be followed, or ctx ends.
func (w *podWatch) until(ctx context.Context, cond func(p *corev1.Pod) (bool, error)) error {
	for {
		w.mu.Lock()
		p, gone, lost, changed := w.pod, w.gone, w.lost, w.changed
		w.mu.Unlock()
		if lost != nil {
			return lost
		}
		if gone {
			p = nil
		}
		if p != nil || gone {
			if ok, err := cond(p); ok || err != nil {
				return err
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if p != nil {
				if e := podProblem(p); e != nil {
					return e
				}
			}
			return fmt.Errorf("wait for the kernel pod: %w", ctx.Err())
		}
	}
}

// kubeConn is one running kernel Pod.
type kubeConn struct {
	k         *Kube
	pod       string
	w         *podWatch
	stopWatch context.CancelFunc

	stdin    *io.PipeWriter
	stdout   *io.PipeReader
	tail     *kernel.TailBuffer
	cancel   context.CancelFunc // ends the attach stream
	streamed chan struct{}      // closed when the attach stream has ended

	done chan struct{}
	exit kernel.Exit

	killed    chan struct{}
	killOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

var (
	_ kernel.Conn        = (*kubeConn)(nil)
	_ kernel.Interrupter = (*kubeConn)(nil)
)

// firstRead closes ready at its first Read: the stream reads its stdin
// only once its streams are made.
type firstRead struct {
	r     io.Reader
	once  *sync.Once
	ready chan struct{}
}

func (f firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.ready) })
	return f.r.Read(p)
}

// attach opens the kernel's attach stream and returns once it is open.
func (c *kubeConn) attach(ctx context.Context) error {
	exec, err := c.k.executor(c.pod, KernelContainer)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c.stdin, c.stdout = inW, outR
	sctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	ready := make(chan struct{})
	var streamErr error
	go func() {
		streamErr = exec.StreamWithContext(sctx, remotecommand.StreamOptions{
			Stdin: firstRead{r: inR, once: &sync.Once{}, ready: ready}, Stdout: outW, Stderr: c.tail})
		inR.CloseWithError(io.ErrClosedPipe) // writes fail once the stream is gone
		outW.CloseWithError(streamErr)
		close(c.streamed)
	}()
	select {
	case <-ready:
		return nil
	case <-c.streamed:
		if streamErr == nil {
			streamErr = errors.New("the stream ended at once")
		}
		return c.k.attachError(c.pod, KernelContainer, streamErr)
	case <-ctx.Done():
		cancel()
		<-c.streamed
		return ctx.Err()
	}
}

// wait owns the kernel's end: it waits until the kernel container has
// ended or the Pod is gone, and closes done.
func (c *kubeConn) wait() {
	e := kernel.Exit{Code: -1, MemLimit: c.k.cfg.Memory}
	var last *corev1.Pod
	err := c.w.until(context.Background(), func(p *corev1.Pod) (bool, error) {
		if p == nil {
			return true, nil
		}
		last = p
		return containerState(p, KernelContainer).Terminated != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded, nil
	})
	var t *corev1.ContainerStateTerminated
	if last != nil {
		t = containerState(last, KernelContainer).Terminated
	}
	killed := false
	select {
	case <-c.killed:
		killed = true
	default:
	}
	switch {
	case t != nil:
		e.Code = int(t.ExitCode)
		e.OOMKilled = t.Reason == "OOMKilled"
		if e.Code > 128 && e.Code < 128+65 && !e.OOMKilled {
			e.Signal = syscall.Signal(e.Code - 128)
		}
	case killed:
		e.Code, e.Signal = 128+int(syscall.SIGKILL), syscall.SIGKILL
	case err != nil:
		e.Lost = fmt.Sprintf("lost track of pod %s: %v", c.pod, err)
	case last != nil && last.Status.Phase == corev1.PodFailed:
		e.Lost = fmt.Sprintf("pod %s failed: %s %s", c.pod, last.Status.Reason, last.Status.Message)
	default:
		e.Lost = fmt.Sprintf("pod %s was deleted by someone else", c.pod)
	}
	select { // let the last of the output arrive
	case <-c.streamed:
	case <-time.After(time.Second):
	}
	e.StderrTail = strings.TrimSpace(c.tail.String())
	c.exit = e
	close(c.done)
}

func (c *kubeConn) Read(p []byte) (int, error)  { return c.stdout.Read(p) }
func (c *kubeConn) Write(p []byte) (int, error) { return c.stdin.Write(p) }
func (c *kubeConn) Done() <-chan struct{}       { return c.done }

func (c *kubeConn) Exit() kernel.Exit {
	<-c.done
	return c.exit
}

// interruptScript sends SIGINT to the container's first process, the
// kernel: a process of the container's own user may.
const interruptScript = "import os, signal; os.kill(1, signal.SIGINT)"

// Interrupt sends SIGINT to the kernel from a process run in its container
// (pods/exec): Kubernetes has no call that signals a container. The
// kernel is the container's first process, whose handler takes it as
// Docker's init hands it on. It needs create on pods/exec; a user
// without it gets an *AccessError, and the cell runs to its timeout.
func (c *kubeConn) Interrupt() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	q := url.Values{"container": {KernelContainer}, "stdout": {"true"}, "stderr": {"true"}}
	for _, arg := range kubeCommand(kernelEnv(c.k.cfg)[:1], []string{"python3", "-c", interruptScript}) {
		q.Add("command", arg)
	}
	exec, err := c.k.stream(c.pod, "exec", q)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
	select {
	case <-c.done:
		return nil // it ended meanwhile: nothing to interrupt
	default:
	}
	if err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return c.k.streamError(fmt.Sprintf("interrupt the kernel of pod %s (an exec in its container)", c.pod), err)
	}
	return nil
}

// Kill deletes the Pod at once (grace period 0).
func (c *kubeConn) Kill() error {
	var err error
	c.killOnce.Do(func() {
		close(c.killed)
		err = c.k.deletePod(c.pod)
	})
	return err
}

// Close ends the kernel: its input closes (the stream's stdin is
// half-closed), it gets StopGrace to finish, then it is killed; the Pod is
// deleted.
func (c *kubeConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.stdin.Close()
		endGently(c.done, c.k.cfg.StopGrace, c.Kill)
		c.cancel()
		<-c.streamed
		_ = c.stdout.Close()
		c.closeErr = c.k.deletePod(c.pod)
		c.stopWatch()
	})
	return c.closeErr
}
