package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctxcode/ctxcode/kernel"
)

// KindKubernetes runs kernels as Pods in a Kubernetes namespace (Kube).
const KindKubernetes Kind = "kubernetes"

// KubeOptions name the cluster and namespace of KindKubernetes.
type KubeOptions struct {
	// Kubeconfig is the kubeconfig file. Empty means kubectl's choice:
	// $KUBECONFIG, else ~/.kube/config (its current context).
	Kubeconfig string
	// Namespace is where Pods are made. Empty means the kubeconfig
	// context's namespace, else "default".
	Namespace string
}

// set reports whether any option is given.
func (o KubeOptions) set() bool { return o.Kubeconfig != "" || o.Namespace != "" }

// check refuses what cannot work: a kubeconfig that is not a file, a
// namespace that is not a valid name.
func (o KubeOptions) check() error {
	if o.Kubeconfig != "" {
		st, err := os.Stat(o.Kubeconfig)
		switch {
		case err != nil:
			return inputErrorf("--kubeconfig %s: %v: give the kubeconfig file of your cluster (kubectl's, e.g. ~/.kube/config)", o.Kubeconfig, err)
		case st.IsDir():
			return inputErrorf("--kubeconfig %s is a folder: give the kubeconfig file of your cluster (kubectl's, e.g. ~/.kube/config)", o.Kubeconfig)
		}
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return inputErrorf("--namespace %q: not a Kubernetes namespace name: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

// KubePingTimeout bounds how long ConnectKube waits for the API server.
const KubePingTimeout = 10 * time.Second

// ConnectKube reads the kubeconfig o names and checks, within
// KubePingTimeout, that its API server answers. A kubeconfig that cannot
// be read or has no cluster is an *InputError; an API server that does not
// answer, a plain error.
func ConnectKube(ctx context.Context, o KubeOptions) (Cluster, error) {
	if err := o.check(); err != nil {
		return Cluster{}, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		return Cluster{}, inputErrorf("kubeconfig: %v: name your cluster's kubeconfig with --kubeconfig (or $KUBECONFIG, ~/.kube/config)", err)
	}
	ns := o.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = metav1.NamespaceDefault
		}
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return Cluster{}, inputErrorf("kubeconfig: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, KubePingTimeout)
	defer cancel()
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(pctx).Raw(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", KubePingTimeout)
		}
		return Cluster{}, fmt.Errorf("kubernetes API server not reachable at %s: %v; check the cluster and your kubeconfig", rc.Host, err)
	}
	return Cluster{Client: cs, REST: rc, Namespace: ns}, nil
}

// openKube is Open for KindKubernetes: it connects, sweeps the namespace's
// orphaned Pods, and makes the transport.
func openKube(ctx context.Context, opts OpenOptions, warn io.Writer) (kernel.Transport, func(), error) {
	noop := func() {}
	cl, err := ConnectKube(ctx, opts.Kube)
	if err != nil {
		return nil, noop, err
	}
	cleanup := func() {
		sctx, cancel := context.WithTimeout(context.Background(), opts.SweepTimeout)
		_ = KubeSweep(sctx, cl)
		cancel()
	}
	sctx, cancel := context.WithTimeout(ctx, opts.SweepTimeout)
	err = KubeSweep(sctx, cl)
	cancel()
	var ae *AccessError
	switch {
	case errors.As(err, &ae):
		return nil, noop, err
	case err != nil:
		fmt.Fprintf(warn, "ctxcode: warning: removing leftover pods: %v\n", err)
	}
	cfg := opts.config()
	tr, err := NewKubePython(cl, cfg)
	if err != nil {
		return nil, noop, err
	}
	return tr, cleanup, nil
}

// checkKube is OpenOptions.Check's part for KindKubernetes.
func (o *OpenOptions) checkKube() error {
	if o.Kind != KindKubernetes {
		if o.Kube.set() {
			return inputErrorf("--kubeconfig and --namespace are for --sandbox kubernetes")
		}
		return nil
	}
	if o.Lang == kernel.Go {
		return inputErrorf("--sandbox kubernetes runs the Python kernel only (the Go kernel needs the ctxcode binary mounted into its container): use --lang python, or --sandbox docker")
	}
	if o.HostFallback {
		o.HostFallback = false // a cluster named is never replaced by this host
	}
	if o.Docker != nil {
		if _, _, err := kubeUser(o.Docker.User); err != nil {
			return err
		}
		if o.Docker.Network != "" && o.Docker.Network != "none" {
			return inputErrorf("--network %s: on Kubernetes a NetworkPolicy denies the kernel every connection; --network is for --sandbox docker", o.Docker.Network)
		}
	}
	return o.Kube.check()
}
