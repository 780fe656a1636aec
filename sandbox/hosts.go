package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// HostStatus is what one daemon says of itself, for `sandbox status
// --hosts` and for a run spread over several daemons: whether it answers,
// its version, whether it has the kernel image, its CPUs (a run's default
// slots there) and the ctxcode containers on it.
type HostStatus struct {
	// Host names the daemon for people (Host.Describe).
	Host string
	// Err is why it could not be asked (nil: it answered).
	Err error
	// Version is the daemon's Docker version, and API its API version.
	Version, API string
	// Image is the image looked for, and HasImage whether it is there.
	Image    string
	HasImage bool
	// CPUs are the daemon's CPUs (docker info's NCPU).
	CPUs int
	// Kernels are the ctxcode containers on it, running or not.
	Kernels []Orphan
}

// StatusOf asks the daemon h leads to for its status, image being the
// kernel image to look for ("": KernelImage()). An unknown context is an
// *InputError, returned as such; a daemon that does not answer is
// HostStatus.Err.
func StatusOf(ctx context.Context, h Host, image string) (HostStatus, error) {
	if image == "" {
		image = KernelImage()
	}
	st := HostStatus{Host: h.Describe(), Image: image}
	cli, err := Connect(ctx, h)
	if ie := (*InputError)(nil); errors.As(err, &ie) {
		return st, err
	}
	if err != nil {
		st.Err = err
		return st, nil
	}
	defer cli.Close()
	st.API = cli.ClientVersion()
	if v, err := cli.ServerVersion(ctx); err == nil {
		st.Version = v.Version
	}
	if st.CPUs, err = CPUs(ctx, cli); err != nil {
		st.Err = err
		return st, nil
	}
	if st.HasImage, err = ImageExists(ctx, cli, image); err != nil {
		st.Err = err
		return st, nil
	}
	if st.Kernels, err = List(ctx, cli, 0); err != nil {
		st.Err = err
	}
	return st, nil
}

// CPUs is how many CPUs the daemon's machine has (docker info's NCPU).
func CPUs(ctx context.Context, cli *client.Client) (int, error) {
	info, err := cli.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("docker info at %s: %w", cli.DaemonHost(), err)
	}
	return max(info.NCPU, 1), nil
}

// RemoveSession removes every container and volume labelled with session
// (Config.Session) from the daemon of cli, whoever owns them: for a run
// spread over several hosts, whose kernels on a host it lost stay behind
// on that host's daemon, labelled with this (live) process, where no Sweep
// would remove them. The caller must know that none of them is in use.
func RemoveSession(ctx context.Context, cli *client.Client, session string) error {
	if session == "" {
		return errors.New("remove session: no session named")
	}
	f := filters.NewArgs(filters.Arg("label", LabelSession+"="+session))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list the containers of session %s: %w", session, err)
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, teardown(cli, c.ID, ""))
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list the volumes of session %s: %w", session, err))...)
	}
	for _, v := range vs.Volumes {
		errs = append(errs, teardown(cli, "", v.Name))
	}
	return errors.Join(errs...)
}

// ParseHostSlots reads one item of --hosts: URL[=slots], URL as
// --docker-host takes it (a daemon URL or a Docker context name); slots 0
// means the daemon's CPUs. A bad slots value, or a Docker context that is
// not there, is an *InputError.
func ParseHostSlots(item string) (Host, int, error) {
	item = strings.TrimSpace(item)
	name, slots := item, 0
	if i := strings.LastIndex(item, "="); i >= 0 {
		name = item[:i]
		n, err := strconv.Atoi(item[i+1:])
		if err != nil || n < 1 {
			return Host{}, 0, inputErrorf("--hosts %q: slots %q: expected URL[=slots], slots a whole number of 1 or more (trials at once on that daemon; default its CPUs)", item, item[i+1:])
		}
		slots = n
	}
	if name == "" {
		return Host{}, 0, inputErrorf("--hosts %q: no daemon named: expected URL[=slots], URL a daemon URL (unix://, tcp://, ssh://) or a Docker context name", item)
	}
	h := Host{Name: name, flag: "--hosts"}
	if err := h.Check(); err != nil {
		return Host{}, 0, err
	}
	return h, slots, nil
}
