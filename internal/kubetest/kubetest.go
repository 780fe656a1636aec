// Package kubetest is a small stand-in for a Kubernetes cluster, for the
// tests that run in every `go test`: the Pod API of client-go's fake
// clientset, a kubelet that runs each Pod's containers on a Runtime, and
// an httptest TLS server (on 127.0.0.1) that serves
// /api/v1/namespaces/{ns}/pods/{name}/attach in the v5 WebSocket attach
// protocol (v5.channel.k8s.io: a message's first byte is its channel, 0
// stdin, 1 stdout, 2 stderr, 3 error, and 255 closes the channel named by
// the next byte), so that a client's attach code runs as against an API
// server.
//
// The kubelet follows Pods as a real one shows them: init containers one
// after the other, then the containers (one at a time: ctxcode's Pods have
// one); each container is "running" once
// its Runtime started it and "terminated" with its exit code once it
// ended; the Pod is Succeeded or Failed when all have. A Runtime that
// cannot start a container returns a *Waiting (the container waits with
// its reason, e.g. ErrImagePull) or ErrUnschedulable (the Pod is not
// scheduled). Deleting a Pod kills its containers.
//
// Two Runtimes: Func runs a Go function as a container, and Docker (in
// docker.go) runs each container in a real Docker container, made from
// the Pod's spec, attached with docker attach.
package kubetest

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// Namespace is the namespace a Cluster runs Pods in.
const Namespace = "ctxtest"

// A Runtime starts containers.
type Runtime interface {
	// Start starts container c of pod; it runs until it ends or is removed.
	Start(ctx context.Context, pod *corev1.Pod, c corev1.Container) (Proc, error)
	// End removes what the runtime made for pod (its volumes), once its
	// containers are removed.
	End(pod *corev1.Pod)
}

// Proc is one started container.
type Proc interface {
	// Attach connects the container's stdin, stdout and stderr to these
	// until its output ends; the end of stdin closes the container's
	// (stdinOnce).
	Attach(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error
	// Wait blocks until the container has ended: its exit code, and a
	// reason such as "OOMKilled" or "Error".
	Wait() (code int, reason string)
	// Remove ends the container at once if it still runs, and removes it;
	// idempotent.
	Remove()
}

// Waiting is a container that cannot start, as a kubelet reports it.
type Waiting struct{ Reason, Message string }

func (w *Waiting) Error() string { return w.Reason + ": " + w.Message }

// ErrUnschedulable makes the kubelet report the Pod unschedulable.
var ErrUnschedulable = errors.New("0/1 nodes are available: 1 Insufficient memory")

// Cluster is the stand-in: Client serves the Pod API, REST reaches the
// attach server.
type Cluster struct {
	Client *fake.Clientset
	REST   *rest.Config

	t       testing.TB
	runtime Runtime
	srv     *httptest.Server

	mu    sync.Mutex
	procs map[string]Proc // "pod/container" of what runs
	pods  map[string]context.CancelFunc
	wg    sync.WaitGroup
}

// Start starts a cluster whose containers run on rt; it stops when the
// test ends, killing what still runs.
func Start(t testing.TB, rt Runtime) *Cluster {
	t.Helper()
	c := &Cluster{Client: fake.NewClientset(), t: t, runtime: rt, procs: map[string]Proc{}, pods: map[string]context.CancelFunc{}}
	c.srv = httptest.NewTLSServer(http.HandlerFunc(c.serveAttach))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw})
	c.REST = &rest.Config{Host: c.srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Client.CoreV1().Pods(Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.wg.Add(1)
	go c.kubelet(ctx, w)
	t.Cleanup(func() {
		cancel()
		w.Stop()
		c.mu.Lock()
		for _, stop := range c.pods {
			stop()
		}
		c.mu.Unlock()
		c.wg.Wait()
		c.srv.Close()
	})
	return c
}

// Pods is how many Pods the API holds.
func (c *Cluster) Pods(t testing.TB) int {
	t.Helper()
	l, err := c.Client.CoreV1().Pods(Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// kubelet runs each new Pod and stops those deleted.
func (c *Cluster) kubelet(ctx context.Context, w watch.Interface) {
	defer c.wg.Done()
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-w.ResultChan():
		case <-ctx.Done():
			return
		}
		if !ok {
			return
		}
		p, isPod := ev.Object.(*corev1.Pod)
		if !isPod {
			continue
		}
		c.mu.Lock()
		stop, known := c.pods[p.Name]
		switch {
		case ev.Type == watch.Added && !known:
			pctx, cancel := context.WithCancel(ctx)
			c.pods[p.Name] = cancel
			c.wg.Add(1)
			go c.runPod(pctx, p.DeepCopy())
		case ev.Type == watch.Deleted && known:
			stop()
		}
		c.mu.Unlock()
	}
}

// runPod runs the init containers, then the containers, of p, and writes
// their states into its status as they change.
func (c *Cluster) runPod(ctx context.Context, p *corev1.Pod) {
	defer c.wg.Done()
	defer c.runtime.End(p)
	st := &p.Status
	st.Phase = corev1.PodPending
	for _, ic := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{Name: ic.Name, Image: ic.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}})
	}
	for _, ct := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: ct.Name, Image: ct.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}})
	}
	failed := false
	for i, ic := range p.Spec.InitContainers {
		if code, ok := c.runContainer(ctx, p, ic, &st.InitContainerStatuses[i]); !ok || code != 0 {
			failed = true
			break
		}
	}
	// The containers run one after the other: ctxcode's Pods have one.
	for i, ct := range p.Spec.Containers {
		if failed {
			break
		}
		if code, ok := c.runContainer(ctx, p, ct, &st.ContainerStatuses[i]); !ok || code != 0 {
			failed = true
		}
	}
	if ctx.Err() != nil {
		return
	}
	st.Phase = corev1.PodSucceeded
	if failed {
		st.Phase = corev1.PodFailed
	}
	c.update(p)
}

// runContainer runs one container and records its states in cs; ok is
// false when it never ran (or the Pod was deleted).
func (c *Cluster) runContainer(ctx context.Context, p *corev1.Pod, ct corev1.Container, cs *corev1.ContainerStatus) (code int, ok bool) {
	proc, err := c.runtime.Start(ctx, p, ct)
	var wt *Waiting
	switch {
	case errors.As(err, &wt):
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: wt.Reason, Message: wt.Message}}
		c.update(p)
		return 0, false
	case errors.Is(err, ErrUnschedulable):
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: err.Error()})
		c.update(p)
		return 0, false
	case err != nil:
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: err.Error()}}
		c.update(p)
		return 0, false
	}
	key := p.Name + "/" + ct.Name
	c.mu.Lock()
	c.procs[key] = proc
	c.mu.Unlock()
	ended := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			proc.Remove()
		case <-ended:
		}
	}()
	now := metav1.NewTime(time.Now())
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	cs.Ready, cs.Started = true, ptrTrue()
	p.Status.Phase = corev1.PodRunning
	c.update(p)
	code, reason := proc.Wait()
	close(ended)
	c.mu.Lock()
	delete(c.procs, key)
	c.mu.Unlock()
	defer proc.Remove()
	if ctx.Err() != nil {
		return code, false
	}
	cs.Ready = false
	cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason,
		StartedAt: now, FinishedAt: metav1.NewTime(time.Now())}}
	c.update(p)
	return code, true
}

func ptrTrue() *bool { v := true; return &v }

// update writes p's status; a Pod deleted meanwhile is left alone.
func (c *Cluster) update(p *corev1.Pod) {
	_, err := c.Client.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p.DeepCopy(), metav1.UpdateOptions{})
	if err != nil && !strings.Contains(err.Error(), "not found") {
		c.t.Errorf("kubetest: update the status of pod %s: %v", p.Name, err)
	}
}

// attachProtocols is the one subprotocol the server speaks: v5, binary,
// with stdin (read), stdout, stderr and error (written) and resize
// (ignored).
var attachProtocols = map[string]wsstream.ChannelProtocolConfig{
	"v5.channel.k8s.io": {Binary: true, Channels: []wsstream.ChannelType{
		wsstream.ReadChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.IgnoreChannel}},
}

// serveAttach serves /api/v1/namespaces/{ns}/pods/{name}/attach.
func (c *Cluster) serveAttach(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 7 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces" || parts[4] != "pods" || parts[6] != "attach" {
		http.NotFound(w, r)
		return
	}
	pod, container := parts[5], r.URL.Query().Get("container")
	c.mu.Lock()
	proc := c.procs[pod+"/"+container]
	c.mu.Unlock()
	if parts[3] != Namespace || proc == nil {
		http.Error(w, fmt.Sprintf("container %s of pod %s/%s is not running", container, parts[3], pod), http.StatusBadRequest)
		return
	}
	if !wsstream.IsWebSocketRequest(r) {
		http.Error(w, "this server speaks only WebSocket (v5.channel.k8s.io)", http.StatusBadRequest)
		return
	}
	conn := wsstream.NewConn(attachProtocols)
	_, ch, err := conn.Open(w, r)
	if err != nil {
		c.t.Errorf("kubetest: open the attach stream: %v", err)
		return
	}
	defer conn.Close()
	if err := proc.Attach(r.Context(), ch[0], ch[1], ch[2]); err != nil {
		_, _ = fmt.Fprintf(ch[3], `{"kind":"Status","apiVersion":"v1","status":"Failure","message":%q}`, err.Error())
	}
}

// Func is a Runtime whose containers run Go functions: main gets the
// container, its stdin (which ends when the first attach's does) and
// stdout and stderr (which block until an attach reads them), and returns
// the exit code.
type Func func(ctx context.Context, c corev1.Container, stdin io.Reader, stdout, stderr io.Writer) int

// Start runs f for c.
func (f Func) Start(ctx context.Context, _ *corev1.Pod, c corev1.Container) (Proc, error) {
	ctx, cancel := context.WithCancel(ctx)
	p := &funcProc{cancel: cancel, done: make(chan struct{})}
	p.inR, p.inW = io.Pipe()
	p.outR, p.outW = io.Pipe()
	p.errR, p.errW = io.Pipe()
	go func() {
		p.code = f(ctx, c, p.inR, p.outW, p.errW)
		if ctx.Err() != nil {
			p.code = 137
		}
		p.outW.Close()
		p.errW.Close()
		p.inR.Close()
		close(p.done)
	}()
	return p, nil
}

type funcProc struct {
	cancel     context.CancelFunc
	inR        *io.PipeReader
	inW        *io.PipeWriter
	outR, errR *io.PipeReader
	outW, errW *io.PipeWriter
	done       chan struct{}
	code       int
}

func (p *funcProc) Attach(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	go func() {
		_, err := io.Copy(p.inW, stdin)
		p.inW.CloseWithError(err) // stdinOnce: the first attach's end is the end
	}()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(stderr, p.errR) })
	_, err := io.Copy(stdout, p.outR)
	wg.Wait()
	return err
}

func (p *funcProc) Wait() (int, string) {
	<-p.done
	if p.code != 0 {
		return p.code, "Error"
	}
	return 0, "Completed"
}

// End does nothing: a function makes nothing.
func (f Func) End(*corev1.Pod) {}

func (p *funcProc) Remove() {
	p.cancel()
	p.inW.CloseWithError(errors.New("killed"))
	<-p.done
}
