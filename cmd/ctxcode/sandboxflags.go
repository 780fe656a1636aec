package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/docker/docker/client"
)

// sandboxFlags are the flags of every command that starts kernels.
type sandboxFlags struct {
	kind string // "", "docker", "local" or "kubernetes"
	// kubeconfig and namespace name the cluster of --sandbox kubernetes.
	kubeconfig string
	namespace  string
	// dockerHost is the daemon: a URL or a Docker context name; "" is
	// the environment's (sandbox.Host).
	dockerHost string
	// hostFallback lets the default (no --sandbox) run on this host when
	// Docker is unreachable: only for code ctxcode itself wrote.
	hostFallback bool
	image        string
	network      string
	memory       byteSize
	cpus         float64
	pids         int64
	tmpSize      byteSize
	user         string
	writableRoot bool
	keepCaps     bool
	newPrivs     bool
	swap         byteSize
	python       string
	noIPython    bool
	dataLink     bool
	followLinks  bool
}

func (s *sandboxFlags) register(fs *flagSet) {
	def := sandbox.DefaultConfig()
	s.memory, s.tmpSize = byteSize(def.Memory), byteSize(def.TmpSize)
	fs.StringVar(&s.kind, "sandbox", "", "where kernels run: docker (isolated; the default when Docker is reachable), local (this host, not isolated) or kubernetes (Pods in a cluster)")
	registerDockerHost(fs, &s.dockerHost)
	registerKube(fs, &s.kubeconfig, &s.namespace)
	fs.StringVar(&s.image, "image", "", "docker: image to run the kernel in, any with python3 (default "+def.Image+")")
	fs.StringVar(&s.network, "network", def.Network, "docker: network mode: none (no network), bridge or host, or a network made with docker network create")
	fs.Var(&s.memory, "memory", "docker: memory limit, swap included (e.g. 512m, 2g; at least 6m, Docker's minimum)")
	fs.Float64Var(&s.cpus, "cpus", def.CPUs, "docker: CPU quota, more than 0 and at most the Docker host's CPUs")
	fs.Int64Var(&s.pids, "pids", def.Pids, "docker: most processes (and threads) in the container; a kernel needs at least 3")
	fs.Var(&s.tmpSize, "tmp-size", "docker: size of the /tmp tmpfs")
	fs.StringVar(&s.user, "user", def.User, "docker: user:group the kernel runs as")
	fs.BoolVar(&s.writableRoot, "writable-root", false, "docker: leave the root filesystem writable")
	fs.BoolVar(&s.keepCaps, "keep-caps", false, "docker: keep Docker's default capabilities instead of dropping all")
	fs.BoolVar(&s.newPrivs, "new-privileges", false, "docker: let setuid programs gain privileges (drops no-new-privileges)")
	fs.Var(&s.swap, "memory-swap", "docker: memory plus swap limit (default: equal to --memory, so no swap)")
	fs.StringVar(&s.python, "python", "", "local: Python interpreter (default: python3 on PATH, or $CTXCODE_PYTHON)")
	fs.BoolVar(&s.noIPython, "no-ipython", false, "use the Python driver's standard-library path even when IPython is there (starts faster)")
	fs.BoolVar(&s.dataLink, "data-link", false, "local: show --data by a link instead of a read-only copy (cells can then change your files)")
	registerFollowLinks(fs, &s.followLinks)
}

// registerKube registers --kubeconfig and --namespace, the same wherever
// a cluster is taken.
func registerKube(fs *flagSet, kubeconfig, namespace *string) {
	fs.StringVar(kubeconfig, "kubeconfig", "", "kubernetes: the cluster's kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(namespace, "namespace", "", "kubernetes: the namespace kernel Pods run in (default: the kubeconfig context's, else default)")
}

func (s *sandboxFlags) kube() sandbox.KubeOptions {
	return sandbox.KubeOptions{Kubeconfig: s.kubeconfig, Namespace: s.namespace}
}

// registerDockerHost registers --docker-host, the same wherever Docker is
// opened.
func registerDockerHost(fs *flagSet, v *string) {
	fs.StringVar(v, "docker-host", "", "docker: the daemon: unix:///path, tcp://host:port, ssh://[user@]host[:port][/socket] or a Docker context name (default: DOCKER_CONTEXT, DOCKER_HOST, the docker CLI's current context, else the local socket)")
}

// connectDocker connects to the daemon host names (sandbox.Connect); a
// host that cannot work is an input error.
func connectDocker(ctx context.Context, host string) (*client.Client, error) {
	cli, err := sandbox.Connect(ctx, sandbox.Host{Name: host})
	if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
		err = usagef("%v", ie)
	}
	return cli, err
}

// registerFollowLinks registers --follow-links, the same wherever --data
// is taken.
func registerFollowLinks(fs *flagSet, v *bool) {
	fs.BoolVar(v, "follow-links", false, "take the files that links in --data lead to outside it (skipped by default, with a warning)")
}

// noteData tells stderr what of the data folder dir no kernel sees
// (kernel.DataNotes).
func noteData(dir string, follow bool, stderr io.Writer) {
	for _, l := range kernel.DataNotes(dir, follow) {
		fmt.Fprintln(stderr, "ctxcode: "+l)
	}
}

func (s *sandboxFlags) check() error {
	// The sandbox's own checks, now: bad input is found before any work
	// (what this machine lacks, such as python3, is found when it starts).
	cfg := s.dockerConfig()
	opts := sandbox.OpenOptions{Kind: sandbox.Kind(s.kind), Python: s.python, Docker: &cfg, Host: sandbox.Host{Name: s.dockerHost},
		Kube: s.kube()}
	if ie := (*sandbox.InputError)(nil); errors.As(opts.Check(), &ie) {
		return usagef("%v", ie)
	}
	if s.python == "" {
		s.python = os.Getenv("CTXCODE_PYTHON")
	}
	return nil
}

// openOptions are the sandbox's options the flags give, for kernels of
// lang without data.
func (s *sandboxFlags) openOptions(lang kernel.Language) sandbox.OpenOptions {
	cfg := s.dockerConfig()
	return sandbox.OpenOptions{
		Kind:         sandbox.Kind(s.kind),
		HostFallback: s.hostFallback,
		Host:         sandbox.Host{Name: s.dockerHost},
		Kube:         s.kube(),
		Lang:         lang,
		FollowLinks:  s.followLinks,
		NoIPython:    s.noIPython,
		Docker:       &cfg,
		Local:        kernel.LocalConfig{LinkData: s.dataLink},
		Python:       s.python,
		SweepTimeout: 30 * time.Second,
	}
}

// start starts a kernel of lang over dataDir in a fresh transport
// (sandbox.Start); stop closes both and is never nil.
func (s *sandboxFlags) start(ctx context.Context, lang kernel.Language, dataDir string, stderr io.Writer) (kernel.Kernel, func() error, error) {
	opts := s.openOptions(lang)
	opts.DataDir = dataDir
	k, stop, err := sandbox.Start(ctx, opts, stderr)
	if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
		err = usagef("%v", err)
	}
	return k, stop, err
}

// dockerConfig is the containers' configuration the flags give.
func (s *sandboxFlags) dockerConfig() sandbox.Config {
	cfg := sandbox.DefaultConfig()
	if s.image != "" {
		cfg.Image = s.image
	}
	cfg.Network, cfg.Memory, cfg.CPUs, cfg.Pids = s.network, int64(s.memory), s.cpus, s.pids
	cfg.TmpSize, cfg.User, cfg.WritableRoot, cfg.KeepCaps = int64(s.tmpSize), s.user, s.writableRoot, s.keepCaps
	cfg.NewPrivileges, cfg.Swap = s.newPrivs, int64(s.swap)
	return cfg
}

// byteSize is a flag for sizes such as 512m or 2g (sandbox.ParseSize).
type byteSize int64

func (b *byteSize) String() string { return sandbox.FormatSize(int64(*b)) }

// Type names the value in the flag help.
func (b *byteSize) Type() string { return "size" }

func (b *byteSize) Set(s string) error {
	n, err := sandbox.ParseSize(s)
	if err == nil {
		*b = byteSize(n)
	}
	return err
}

// hostSlots is one item of --hosts: a daemon, and the trials at once on
// it (0: its CPUs).
type hostSlots struct {
	host  sandbox.Host
	slots int
}

// registerHosts registers --hosts, the same wherever several daemons are
// taken.
func registerHosts(fs *flagSet, v *string) {
	fs.StringVar(v, "hosts", "", "docker: several daemons, a comma list of URL[=slots]: URL as --docker-host takes it (a daemon URL or a Docker context name), slots the trials at once there (default: its CPUs)")
}

// parseHosts reads --hosts s; a bad item (slots that are not a whole
// number of 1 or more, a Docker context that is not there, a daemon named
// twice) is a usage error.
func parseHosts(s string) ([]hostSlots, error) {
	var out []hostSlots
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			return nil, usagef("--hosts %q: an empty item in the list: expected URL[=slots],URL[=slots],...", s)
		}
		h, slots, err := sandbox.ParseHostSlots(item)
		if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
			return nil, usagef("%v", ie)
		}
		if err != nil {
			return nil, err
		}
		if seen[h.Name] {
			return nil, usagef("--hosts %q: %s is named twice: give each daemon once, with its slots (URL=slots)", s, h.Name)
		}
		seen[h.Name] = true
		out = append(out, hostSlots{host: h, slots: slots})
	}
	return out, nil
}
