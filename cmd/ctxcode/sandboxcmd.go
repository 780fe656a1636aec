package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/sandbox"
)

var sandboxUsage = helpText("sandbox")

func runSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("sandbox: missing subcommand\n\n%s", sandboxUsage)
	}
	switch args[0] {
	case "build":
		fs := newFlagSet("sandbox build", sandboxUsage, stderr)
		host := new(string)
		registerDockerHost(fs, host)
		mirror := fs.String("mirror", "", "Debian mirror (default: the one in this host's apt sources)")
		if err := fs.parse(args[1:], 0, ""); err != nil {
			return err
		}
		cli, err := connectDocker(ctx, *host)
		if err != nil {
			return err
		}
		defer cli.Close()
		start := time.Now()
		built, err := sandbox.Build(ctx, cli, sandbox.BuildOptions{Mirror: *mirror, Progress: stderr})
		if err != nil {
			return err
		}
		if built {
			fmt.Fprintf(stdout, "built %s in %s\n", sandbox.KernelImage(), time.Since(start).Round(time.Second))
		} else {
			fmt.Fprintf(stdout, "%s is already there\n", sandbox.KernelImage())
		}
		return nil
	case "status":
		fs := newFlagSet("sandbox status", sandboxUsage, stderr)
		host := new(string)
		registerDockerHost(fs, host)
		img := fs.String("image", sandbox.KernelImage(), "kernel image to look for")
		hosts := new(string)
		registerHosts(fs, hosts)
		kind, kube := registerKubeSandbox(fs)
		if err := fs.parse(args[1:], 0, ""); err != nil {
			return err
		}
		cl, isKube, err := openKubeSandbox(ctx, fs, *kind, kube)
		if err != nil {
			return err
		}
		if isKube {
			return kubeStatus(ctx, stdout, cl)
		}
		if *hosts != "" {
			if fs.Changed("docker-host") {
				return usagef("--hosts names the daemons, and --docker-host one: drop one of them")
			}
			hs, err := parseHosts(*hosts)
			if err != nil {
				return err
			}
			return hostsStatus(ctx, stdout, hs, *img)
		}
		cli, err := connectDocker(ctx, *host)
		if err != nil {
			fmt.Fprintf(stdout, "docker: not reachable\n")
			return err
		}
		defer cli.Close()
		fmt.Fprintf(stdout, "docker: reachable at %s (API %s)\n", sandbox.Host{Name: *host}.Describe(), cli.ClientVersion())
		ok, err := sandbox.ImageExists(ctx, cli, *img)
		switch {
		case err != nil:
			return err
		case ok:
			fmt.Fprintf(stdout, "image: %s present\n", *img)
		case *img == sandbox.KernelImage():
			fmt.Fprintf(stdout, "image: %s missing (run: ctxcode sandbox build)\n", *img)
		default:
			fmt.Fprintf(stdout, "image: %s missing (pull or build it)\n", *img)
		}
		cs, err := sandbox.List(ctx, cli, 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "containers: %d\n", len(cs))
		printOrphans(stdout, cs)
		return nil
	case "prune":
		fs := newFlagSet("sandbox prune", sandboxUsage, stderr)
		host := new(string)
		registerDockerHost(fs, host)
		older := fs.Duration("older-than", 0, "also remove containers older than this, whoever owns them: the only way to remove those of another PID namespace or host (e.g. 24h)")
		dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
		kind, kube := registerKubeSandbox(fs)
		if err := fs.parse(args[1:], 0, ""); err != nil {
			return err
		}
		cl, isKube, err := openKubeSandbox(ctx, fs, *kind, kube)
		if err != nil {
			return err
		}
		prune := func() ([]sandbox.Orphan, error) {
			return sandbox.KubePrune(ctx, cl, sandbox.PruneOptions{OlderThan: *older, DryRun: *dry})
		}
		if !isKube {
			cli, err := connectDocker(ctx, *host)
			if err != nil {
				return err
			}
			defer cli.Close()
			prune = func() ([]sandbox.Orphan, error) {
				return sandbox.Prune(ctx, cli, sandbox.PruneOptions{OlderThan: *older, DryRun: *dry})
			}
		}
		removed, err := prune()
		verb := "removed"
		if *dry {
			verb = "would remove"
		}
		for _, o := range removed {
			fmt.Fprintf(stdout, "%s %.12s (session %s): %s\n", verb, o.ID, o.Session, o.Reason)
		}
		if len(removed) == 0 && isKube {
			fmt.Fprintln(stdout, "no orphaned pods")
		} else if len(removed) == 0 {
			fmt.Fprintln(stdout, "no orphaned containers")
		}
		return err
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, sandboxUsage)
		return nil
	}
	return usagef("sandbox: unknown subcommand %q\n\n%s", args[0], sandboxUsage)
}

// registerKubeSandbox registers the flags that point status and prune at
// a cluster: --sandbox docker|kubernetes, --kubeconfig, --namespace.
func registerKubeSandbox(fs *flagSet) (*string, *sandbox.KubeOptions) {
	kind := fs.String("sandbox", "docker", "docker (the daemon's containers) or kubernetes (the namespace's Pods)")
	kube := &sandbox.KubeOptions{}
	registerKube(fs, &kube.Kubeconfig, &kube.Namespace)
	return kind, kube
}

// openKubeSandbox connects to the cluster when kind is kubernetes (ok);
// kind and the flags given must agree, or it is a usage error.
func openKubeSandbox(ctx context.Context, fs *flagSet, kind string, kube *sandbox.KubeOptions) (sandbox.Cluster, bool, error) {
	switch kind {
	case string(sandbox.KindDocker):
		if fs.Changed("kubeconfig") || fs.Changed("namespace") {
			return sandbox.Cluster{}, false, usagef("--kubeconfig and --namespace are for --sandbox kubernetes")
		}
		return sandbox.Cluster{}, false, nil
	case string(sandbox.KindKubernetes):
	default:
		return sandbox.Cluster{}, false, usagef("--sandbox %q: expected docker or kubernetes", kind)
	}
	for _, f := range []string{"docker-host", "hosts"} {
		if fs.Lookup(f) != nil && fs.Changed(f) {
			return sandbox.Cluster{}, false, usagef("--%s names Docker daemons, and --sandbox kubernetes a cluster: drop one of them", f)
		}
	}
	cl, err := sandbox.ConnectKube(ctx, *kube)
	if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
		err = usagef("%v", ie)
	}
	return cl, err == nil, err
}

// kubeStatus writes the cluster's API server and namespace, and its
// ctxcode Pods, each kept or orphaned.
func kubeStatus(ctx context.Context, stdout io.Writer, cl sandbox.Cluster) error {
	fmt.Fprintf(stdout, "kubernetes: reachable at %s, namespace %s\n", cl.REST.Host, cl.Namespace)
	pods, err := sandbox.KubeList(ctx, cl, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pods: %d\n", len(pods))
	printOrphans(stdout, pods)
	return nil
}

// printOrphans writes a line per container or Pod: its session, when it
// was made, and why it is kept or may be removed.
func printOrphans(stdout io.Writer, list []sandbox.Orphan) {
	for _, c := range list {
		state := "kept: " + c.Kept
		if c.Reason != "" {
			state = "orphan: " + c.Reason
		}
		fmt.Fprintf(stdout, "  %.12s session %s, created %s, %s\n", c.ID, c.Session, c.Created.Format(time.RFC3339), state)
	}
}

// hostsStatus writes a line per daemon of --hosts: whether it answers,
// its Docker version, whether it has the kernel image, its slots (CPUs
// unless given) and the ctxcode kernels on it. A daemon that does not
// answer is an error once every line is written.
func hostsStatus(ctx context.Context, stdout io.Writer, hosts []hostSlots, image string) error {
	var down []string
	for _, h := range hosts {
		st, err := sandbox.StatusOf(ctx, h.host, image)
		if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
			return usagef("%v", ie)
		}
		if st.Err != nil {
			fmt.Fprintf(stdout, "%s: not reachable: %v\n", h.host.Name, st.Err)
			down = append(down, h.host.Name)
			continue
		}
		slots, from := h.slots, "given"
		if slots == 0 {
			slots, from = st.CPUs, "its CPUs"
		}
		have := "present"
		if !st.HasImage {
			have = "missing (build it there with ctxcode sandbox build --docker-host URL, or copy it: docker save | docker load)"
		}
		live := 0
		for _, k := range st.Kernels {
			if k.Reason == "" {
				live++
			}
		}
		fmt.Fprintf(stdout, "%s: reachable (%s), Docker %s (API %s); image %s %s; slots %d (%s, %d CPUs); ctxcode kernels %d (%d orphaned)\n",
			h.host.Name, st.Host, st.Version, st.API, image, have, slots, from, st.CPUs, live, len(st.Kernels)-live)
	}
	if len(down) > 0 {
		return fmt.Errorf("%d of %d hosts not reachable: %s", len(down), len(hosts), strings.Join(down, ", "))
	}
	return nil
}
