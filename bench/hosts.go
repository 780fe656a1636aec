package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/client"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
	"github.com/ctxcode/ctxcode/session"
)

// RunHost is a Docker daemon a run's trials spread over (Run.Hosts, bench
// --hosts). Each trial takes a slot on whichever host has one free, and
// its kernel from that host's pool of its prefix and data folder: pools
// are per (host, prefix, data).
type RunHost struct {
	// Name names the host for people; each trial line records it (Trial.Host).
	Name string
	// Slots is how many trials run on it at once (at least 1).
	Slots int
	// Transport is the transport of its kernels over the data folder dir
	// (Folder.Dir).
	Transport func(dir string) kernel.Transport
	// Alive checks that the daemon still answers; nil means it always
	// does. It is asked when a kernel could not start there or a trial
	// there ended as an infra failure: an error means the host is lost.
	Alive func(ctx context.Context) error
}

// LostHost is a host a run stopped using: it stopped answering while
// trials ran on it.
type LostHost struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
	Err  string    `json:"error"`
}

// aliveTimeout bounds the check of a host that may be lost.
const aliveTimeout = 20 * time.Second

// hostState is a RunHost as a run uses it.
type hostState struct {
	RunHost
	lost bool // guarded by scheduler.mu
}

// errAllLost stops a run whose every host is lost.
var errAllLost = errors.New("every host of the run is lost (see the warnings above for why each was): bring one back, or name others with --hosts, and run again (the run resumes)")

// slot takes a free slot on a live host, waiting for one; the trial gives
// it back with release.
func (s *scheduler) slot(ctx context.Context) (*hostState, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case h := <-s.slots:
			s.mu.Lock()
			lost := h.lost
			s.mu.Unlock()
			if !lost { // a lost host's slots are dropped as they come
				return h, nil
			}
		}
	}
}

// release gives back a slot of h, unless h is lost.
func (s *scheduler) release(h *hostState) {
	s.mu.Lock()
	lost := h.lost
	s.mu.Unlock()
	if !lost {
		s.slots <- h // never blocks: it has room for every slot
	}
}

// poolOn is the pool of ref on host h, opened now if it is not open. It
// keeps its share of h's slots ready, and has no total: how many of ref's
// trials land on h is not known ahead; it is closed with ref's others.
func (s *scheduler) poolOn(ref *poolRef, h *hostState) *sandbox.WarmPool[[]session.Cell] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := ref.hosted[h]; p != nil {
		return p
	}
	var prepare sandbox.Prepare[[]session.Cell]
	if p := ref.prefix; p != nil {
		opts := kernel.ExecOptions{Timeout: s.run.Agent.CellTimeout}
		prepare = func(ctx context.Context, k *kernel.Client) ([]session.Cell, error) {
			return prefixes.Build(ctx, k, p, opts)
		}
	}
	size := poolSize(h.Slots, s.npools, ref.share, ref.left)
	p := sandbox.NewWarmPool(s.run.Language, h.Transport(ref.data.Dir), size, 0, kernel.ClientOptions{}, prepare)
	if ref.hosted == nil {
		ref.hosted = map[*hostState]*sandbox.WarmPool[[]session.Cell]{}
	}
	ref.hosted[h] = p
	s.pools[ref] = true
	return p
}

// lostHost checks, after a kernel of h could not start or a trial on h
// ended as an infra failure, whether h still answers; when it does not,
// h is lost: its slots are dropped, its pools closed, and the run goes on
// on the other hosts (not retried in this run: a host that came back
// would be found again by the next resume). It reports whether h is lost
// (now or before), and an error when no host is left.
func (s *scheduler) lostHost(ctx context.Context, h *hostState) (bool, error) {
	s.mu.Lock()
	lost := h.lost
	s.mu.Unlock()
	if !lost {
		if h.Alive == nil {
			return false, nil
		}
		actx, cancel := context.WithTimeout(ctx, aliveTimeout)
		err := h.Alive(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return false, nil
		}
		s.markLost(h, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.hosts {
		if !o.lost {
			return true, nil
		}
	}
	return true, errAllLost
}

// markLost marks h lost, once, and closes its pools off the trials' path.
func (s *scheduler) markLost(h *hostState, cause error) {
	s.mu.Lock()
	if h.lost {
		s.mu.Unlock()
		return
	}
	h.lost = true
	s.lost = append(s.lost, LostHost{Name: h.Name, At: time.Now().UTC(), Err: cause.Error()})
	var pools []*sandbox.WarmPool[[]session.Cell]
	for ref := range s.pools {
		if p := ref.hosted[h]; p != nil {
			pools = append(pools, p)
			delete(ref.hosted, h)
		}
	}
	s.mu.Unlock()
	s.warnf("ctxcode: host %s lost (%v): its trials run again on the other hosts\n", h.Name, cause)
	for _, p := range pools {
		s.closing.Go(func() { _ = p.Close() })
	}
}

// requeue puts w back at the head of the trials to run: its kernel's host
// was lost.
func (s *scheduler) requeue(w work) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.pool.left++
	s.todo = append([]work{w}, s.todo...)
}

// hostsOf is the run's hosts as the scheduler keeps them, and a channel
// holding one token per slot.
func hostsOf(hosts []RunHost) ([]*hostState, chan *hostState, error) {
	var hs []*hostState
	n := 0
	for _, h := range hosts {
		if h.Slots < 1 || h.Transport == nil {
			return nil, nil, fmt.Errorf("host %s: %d slots and a transport: give at least 1 slot, and a transport", h.Name, h.Slots)
		}
		hs = append(hs, &hostState{RunHost: h})
		n += h.Slots
	}
	slots := make(chan *hostState, n)
	for _, h := range hs {
		for range h.Slots {
			slots <- h
		}
	}
	return hs, slots, nil
}

// slotsOf is the sum of the hosts' slots.
func slotsOf(hosts []RunHost) int {
	n := 0
	for _, h := range hosts {
		n += h.Slots
	}
	return n
}

// HostSpec is one daemon of a run spread over several (Config.Hosts).
type HostSpec struct {
	Host sandbox.Host
	// Slots is how many trials run on it at once; 0: its CPUs (docker
	// info's NCPU).
	Slots int
	// EnsureImage, when not nil, is called when the daemon lacks the
	// kernel image (a *sandbox.ImageError): it puts image there (copies it
	// from a daemon that has it, say), and the host is opened again. Nil:
	// the run stops with the error, which says to build or copy it.
	EnsureImage func(ctx context.Context, h sandbox.Host, image string) error
}

// hostSet is one host's transports (one per data folder), and the
// session label on all its containers and volumes.
type hostSet struct {
	host    sandbox.Host
	ts      *transportSet
	session string
}

// openHosts makes the run's hosts (Run.Hosts) of Config.Hosts: each its
// transports, opened as a data folder's first kernel starts there, with
// one session label for its containers (closeHosts removes what a lost
// host left), and its slots, asked of the daemon when not given; and the
// run's width, at most their sum. The first host's transports are the
// run's main ones (golds, the Spec's runtime). A host that does not
// answer now stops the run before it starts.
func (s *Setup) openHosts(ctx context.Context, warn io.Writer) error {
	cfg, run := s.cfg, s.Run
	run.Hosts = nil
	image := sandbox.KernelImage()
	if d := cfg.Sandbox.Docker; d != nil && d.Image != "" {
		image = d.Image
	}
	for _, hs := range cfg.Hosts {
		h, ensure := hs.Host, hs.EnsureImage
		set := hostSet{host: h, session: sandbox.NewSessionID()}
		set.ts = &transportSet{open: func(ctx context.Context, dir string) (kernel.Transport, func(), error) {
			opts := cfg.sandboxFor(run.Language, dir)
			opts.Kind, opts.Host, opts.HostFallback = sandbox.KindDocker, h, false
			dc := sandbox.DefaultConfig()
			if opts.Docker != nil {
				dc = *opts.Docker
			}
			dc.Session = set.session
			opts.Docker = &dc
			tr, cleanup, err := sandbox.Open(ctx, opts, warn)
			var ie *sandbox.ImageError
			if errors.As(err, &ie) && ensure != nil {
				cleanup()
				if eerr := ensure(ctx, h, ie.Image); eerr != nil {
					return nil, func() {}, fmt.Errorf("host %s lacks the kernel image %s, and putting it there failed: %w", h.Describe(), ie.Image, eerr)
				}
				tr, cleanup, err = sandbox.Open(ctx, opts, warn)
			}
			if errors.As(err, &ie) {
				err = fmt.Errorf("host %s: %w (or copy it there: docker save %s | docker -H HOST load)", h.Describe(), err, ie.Image)
			}
			if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
				err = inputErrorf("--hosts %s: %v", h.Name, err)
			}
			return tr, cleanup, err
		}}
		s.hostSets = append(s.hostSets, set)
		slots, err := checkHost(ctx, hs, image)
		if err != nil {
			return err
		}
		name := h.Name
		if name == "" {
			name = h.Describe()
		}
		run.Hosts = append(run.Hosts, RunHost{Name: name, Slots: slots, Transport: set.ts.lazy,
			Alive: func(ctx context.Context) error {
				cli, err := connectPatient(ctx, h)
				if err == nil {
					_ = cli.Close()
				}
				return err
			}})
	}
	s.transports = s.hostSets[0].ts
	run.Parallel = min(cfg.Parallel, slotsOf(run.Hosts))
	return nil
}

// closeHosts closes every host's transports, then removes from each host
// that answers the containers and volumes of every host's session: the
// run's kernels are all closed by now, and those on a host lost during
// the run could not be removed there (a daemon reached two ways, as
// tests do, gets them removed through the other; a daemon on a machine
// that is gone keeps them until `ctxcode sandbox prune --older-than`).
func (s *Setup) closeHosts() {
	for _, set := range s.hostSets {
		set.ts.close()
	}
	for _, set := range s.hostSets {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cli, err := sandbox.Connect(ctx, set.host)
		if err == nil {
			for _, o := range s.hostSets {
				_ = sandbox.RemoveSession(ctx, cli, o.session)
			}
			_ = cli.Close()
		}
		cancel()
	}
}

// checkHost checks, before the run starts, that the daemon of hs answers
// and has image (putting it there with hs.EnsureImage when it has not, if
// that is set), and returns its slots: hs.Slots, or its CPUs.
func checkHost(ctx context.Context, hs HostSpec, image string) (int, error) {
	h := hs.Host
	cli, err := connectPatient(ctx, h)
	if ie := (*sandbox.InputError)(nil); errors.As(err, &ie) {
		return 0, inputErrorf("--hosts %s: %v", h.Name, err)
	}
	if err != nil {
		return 0, fmt.Errorf("host %s: %w", h.Describe(), err)
	}
	defer cli.Close()
	ok, err := sandbox.ImageExists(ctx, cli, image)
	if err != nil {
		return 0, fmt.Errorf("host %s: %w", h.Describe(), err)
	}
	if !ok && hs.EnsureImage != nil {
		if err := hs.EnsureImage(ctx, h, image); err != nil {
			return 0, fmt.Errorf("host %s lacks the kernel image %s, and putting it there failed: %w", h.Describe(), image, err)
		}
	} else if !ok {
		return 0, fmt.Errorf("host %s: %w (or copy it there from a daemon that has it: docker save %s | docker -H URL load)", h.Describe(), &sandbox.ImageError{Image: image}, image)
	}
	if hs.Slots > 0 {
		return hs.Slots, nil
	}
	return sandbox.CPUs(ctx, cli)
}

// connectTries is how often connectPatient asks a daemon.
const connectTries = 3

// connectPatient is sandbox.Connect, asked up to connectTries times while
// the daemon does not answer: on a loaded machine the first ssh
// connection to a host (handshake, then docker system dial-stdio there)
// can take longer than sandbox.PingTimeout, and a host that is only slow
// must not be taken for lost. One that is gone (connection refused) fails
// as fast each time.
func connectPatient(ctx context.Context, h sandbox.Host) (*client.Client, error) {
	var err error
	for range connectTries {
		var cli *client.Client
		if cli, err = sandbox.Connect(ctx, h); err == nil {
			return cli, nil
		}
		if de := (*sandbox.DaemonError)(nil); !errors.As(err, &de) || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}
