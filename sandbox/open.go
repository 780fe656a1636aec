package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
)

// Kind says where kernels run.
type Kind string

// The kinds of transport Open makes.
const (
	// KindAuto is Docker when the daemon answers; otherwise an error, or
	// this host when OpenOptions.HostFallback allows it.
	KindAuto Kind = ""
	// KindDocker is Docker, or an error when the daemon does not answer.
	KindDocker Kind = "docker"
	// KindLocal runs kernels as processes on this host, without isolation.
	KindLocal Kind = "local"
)

// OpenOptions choose and configure the transport Open makes. The zero
// value is a Python kernel in Docker with DefaultConfig, without data.
type OpenOptions struct {
	// Kind is where kernels run. Default KindAuto.
	Kind Kind
	// HostFallback lets KindAuto run kernels on this host when Docker
	// cannot be reached. Only for code ctxcode wrote itself (the reference
	// model's solutions): other code never runs on the host unless Kind is
	// KindLocal.
	HostFallback bool
	// Lang is the kernel's language. Default kernel.Python.
	Lang kernel.Language
	// DataDir is shown read-only to the kernel as data/, in either kind;
	// it replaces Docker.DataDir and Local.DataDir. Empty means no data.
	DataDir string
	// FollowLinks brings in the files that links in DataDir lead to
	// outside it (left out by default), in either kind; it replaces
	// Docker.FollowLinks and Local.FollowLinks.
	FollowLinks bool
	// NoIPython makes the Python driver use its standard-library path, in
	// either kind; it replaces Docker.NoIPython.
	NoIPython bool
	// Host is the Docker daemon kernels run on. The zero value is the
	// environment's (see Host).
	Host Host
	// Kube names the cluster and namespace of KindKubernetes; Docker's
	// Config sets its Pods' image and limits.
	Kube KubeOptions
	// Docker configures the containers. Nil means DefaultConfig().
	Docker *Config
	// Local configures kernels on this host; Open sets its Argv and
	// DataDir.
	Local kernel.LocalConfig
	// Python is the interpreter of a local Python kernel: a path or a
	// command on PATH. Default python3 (see kernel.FindPython).
	Python string
	// Exe is the ctxcode binary that serves the Go kernel. Default
	// os.Executable().
	Exe string
	// SweepTimeout bounds the removal of orphaned containers before the
	// first Docker kernel starts. Default 30s.
	SweepTimeout time.Duration
}

// InputError is options that cannot work whatever the machine's state: an
// unknown kind or language, a data folder that is not one, a Python
// interpreter that is not there, limits Docker refuses (Config.Check); or
// an image or network the user named that the daemon does not have. It is
// the user's to fix (exit code 2), unlike a *DaemonError, which is the
// machine's.
type InputError struct {
	Err error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// Open makes the transport kernels start through, as opts say, and writes
// warnings to warn: that KindLocal runs cells without isolation, that
// HostFallback is used, that orphans could not be removed.
//
// KindAuto and KindDocker connect to the daemon (the error is a
// *DaemonError when it does not answer; with KindAuto it adds that cells
// are never run on this host unless asked), then Sweep the orphans of
// gone processes. Bad options are an *InputError, found before anything
// is connected or started; so are an image and a network the daemon does
// not have, found before any container is made (the kernel image missing
// is an *ImageError). It warns of a network other than none (the commands
// name the files of DataDir no kernel sees).
//
// The cleanup function, never nil, sweeps the orphans again (a killed
// process's container may have been created after the first sweep) and
// closes the Docker client: call it once the transport's kernels are
// closed.
func Open(ctx context.Context, opts OpenOptions, warn io.Writer) (kernel.Transport, func(), error) {
	noop := func() {}
	if err := opts.Check(); err != nil {
		return nil, noop, err
	}
	if opts.Kind == KindLocal {
		fmt.Fprintln(warn, "ctxcode: warning: --sandbox local runs the cells on this host, without isolation")
		tr, err := opts.local(warn)
		return tr, noop, err
	}
	if opts.Kind == KindKubernetes {
		return openKube(ctx, opts, warn)
	}
	cli, err := Connect(ctx, opts.Host)
	if err != nil {
		switch {
		case opts.Kind == KindAuto && opts.HostFallback:
			fmt.Fprintf(warn, "ctxcode: Docker is not reachable (%v);\nctxcode: the reference model runs ctxcode's own solutions, so they run on this host\n", err)
			tr, lerr := opts.local(warn)
			return tr, noop, lerr
		case opts.Kind == KindAuto:
			return nil, noop, fmt.Errorf("%w\n(cells are never run on this host unless you say so with --sandbox local, which runs them without isolation)", err)
		}
		return nil, noop, err
	}
	cleanup := func() {
		// Sweep again at the end: a container a killed process was still
		// creating when the first sweep ran may have appeared since.
		sctx, cancel := context.WithTimeout(context.Background(), opts.SweepTimeout)
		_ = Sweep(sctx, cli)
		cancel()
		_ = cli.Close()
	}
	sctx, cancel := context.WithTimeout(ctx, opts.SweepTimeout)
	err = Sweep(sctx, cli)
	cancel()
	if err != nil {
		fmt.Fprintf(warn, "ctxcode: warning: removing leftover containers: %v\n", err)
	}
	cfg := opts.config()
	if err := cfg.checkDaemon(ctx, cli); err != nil {
		cleanup()
		return nil, noop, err
	}
	var tr *Docker
	if opts.Lang == kernel.Go {
		exe, eerr := opts.exe()
		if eerr != nil {
			cleanup()
			return nil, noop, eerr
		}
		if tr, err = NewGo(cli, cfg, exe); err != nil && Remote(cli) {
			err = &InputError{Err: err} // the Go kernel needs a local daemon
		}
	} else {
		tr, err = NewPython(cli, cfg)
	}
	if err != nil {
		cleanup()
		return nil, noop, err
	}
	if cfg.Network != "" && cfg.Network != "none" {
		fmt.Fprintf(warn, "ctxcode: warning: --network %s: the cells can reach the network\n", cfg.Network)
	}
	return tr, cleanup, nil
}

// config is the Config of the containers (or Pods) opts make.
func (o *OpenOptions) config() Config {
	cfg := DefaultConfig()
	if o.Docker != nil {
		cfg = *o.Docker
	}
	cfg.DataDir, cfg.FollowLinks, cfg.NoIPython = o.DataDir, o.FollowLinks, o.NoIPython
	if cfg.Image == "" {
		cfg.Image = KernelImage()
	}
	return cfg
}

// Check fills the defaults and refuses what cannot work (an *InputError),
// before anything is connected or started; Open calls it, and a command
// may call it as soon as its flags are parsed.
func (o *OpenOptions) Check() error {
	switch o.Kind {
	case KindAuto, KindDocker, KindLocal, KindKubernetes:
	default:
		return inputErrorf("--sandbox %q: expected docker, local or kubernetes", string(o.Kind))
	}
	switch o.Lang {
	case "":
		o.Lang = kernel.Python
	case kernel.Python, kernel.Go:
	default:
		return inputErrorf("unknown language %q: expected python or go", string(o.Lang))
	}
	if o.Kind != KindLocal && o.Docker != nil {
		if err := o.Docker.Check(); err != nil {
			return err
		}
	}
	if o.Kind != KindLocal && o.Kind != KindKubernetes {
		if err := o.Host.Check(); err != nil {
			return err
		}
	}
	if err := o.checkKube(); err != nil {
		return err
	}
	if o.SweepTimeout <= 0 {
		o.SweepTimeout = 30 * time.Second
	}
	if o.DataDir != "" {
		st, err := os.Stat(o.DataDir)
		switch {
		case err != nil:
			return inputErrorf("data folder %q: %w", o.DataDir, err)
		case !st.IsDir():
			return inputErrorf("data folder %q is not a folder", o.DataDir)
		}
	}
	if o.Python != "" || o.Kind == KindLocal && o.Lang == kernel.Python {
		// A named interpreter that is not there is bad input, whatever the
		// kind: it says the user means to run on this host.
		if _, err := o.findPython(); err != nil {
			return err
		}
	}
	return nil
}

// findPython resolves the local interpreter. One that was named but is not
// there is bad input; python3 missing from PATH is this machine's lack.
func (o *OpenOptions) findPython() (string, error) {
	python, err := kernel.FindPython(o.Python)
	if err != nil && o.Python != "" {
		return "", inputErrorf("--python %s: no such interpreter: give the path or name of a CPython 3.9 or later (e.g. python3 or /usr/bin/python3)", o.Python)
	}
	return python, err
}

// local is the transport that runs kernels on this host; what its
// confinement cannot hide (see kernel.Confinement) is a warning.
func (o *OpenOptions) local(warn io.Writer) (kernel.Transport, error) {
	cfg := o.Local
	cfg.DataDir, cfg.FollowLinks = o.DataDir, o.FollowLinks
	var tr *kernel.Local
	var err error
	if o.Lang == kernel.Go {
		exe, eerr := o.exe()
		if eerr != nil {
			return nil, eerr
		}
		cfg.Argv = []string{exe, "kernel", "serve", "--lang", "go"}
		tr, err = kernel.NewLocal(cfg)
	} else {
		python, perr := o.findPython()
		if perr != nil {
			return nil, perr
		}
		tr, err = kernel.NewLocalPython(python, o.NoIPython, cfg)
	}
	if le := (*kernel.LinkDataError)(nil); errors.As(err, &le) {
		return nil, &InputError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	if w := tr.Confinement().Warning(); w != "" {
		fmt.Fprintf(warn, "ctxcode: warning: %s\n", w)
	}
	return tr, nil
}

// exe is the ctxcode binary that serves the Go kernel.
func (o *OpenOptions) exe() (string, error) {
	if o.Exe != "" {
		return o.Exe, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the ctxcode binary to serve the Go kernel: %w", err)
	}
	return exe, nil
}

// Start opens the transport opts say (Open) and starts one kernel of
// opts.Lang through it. stop closes the kernel, then the transport; it is
// never nil, and is to be called once, whatever Start returned.
func Start(ctx context.Context, opts OpenOptions, warn io.Writer) (kernel.Kernel, func() error, error) {
	tr, cleanup, err := Open(ctx, opts, warn)
	closeTransport := func() error {
		if cleanup != nil {
			cleanup()
		}
		return nil
	}
	if err != nil {
		return nil, closeTransport, err
	}
	c, err := kernel.Start(ctx, opts.Lang, tr, kernel.ClientOptions{})
	if err != nil {
		return nil, closeTransport, err
	}
	return c, func() error {
		err := c.Close()
		_ = closeTransport()
		return err
	}, nil
}
