package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// MinMemory is the smallest memory limit Docker accepts (the daemon's own
// minimum: "Minimum memory limit allowed is 6MB").
const MinMemory = 6 << 20

// MinPids is the smallest process limit a kernel starts with: Docker's
// init, the kernel, and the driver's capture thread (a limit counts
// threads).
const MinPids = 3

// Check refuses the limits Docker would refuse, or with which no kernel
// can start, naming the flag of each: every problem at once, as an
// *InputError. It needs no daemon; what only the daemon knows (does the
// image exist, the network, enough CPUs) Open checks once connected.
func (c *Config) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Memory < MinMemory {
		bad("--memory %s: below Docker's minimum of %s: give a limit such as 512m or 2g (the default)", FormatSize(c.Memory), FormatSize(MinMemory))
	}
	if c.Swap != 0 && c.Swap != -1 && c.Swap < c.Memory {
		bad("--memory-swap %s: below --memory %s: it is memory plus swap, so give at least --memory (or leave it out: no swap)", FormatSize(c.Swap), FormatSize(c.Memory))
	}
	if c.CPUs <= 0 {
		bad("--cpus %s: give a positive number of CPUs, such as 0.5 or 2 (default 1)", strconv.FormatFloat(c.CPUs, 'f', -1, 64))
	}
	if c.Pids < MinPids {
		bad("--pids %d: a kernel needs at least %d (Docker's init, the kernel and its output thread; a shell command needs more): give %d or more (default 256)", c.Pids, MinPids, MinPids)
	}
	if c.TmpSize < 0 {
		bad("--tmp-size %d: give a size such as 256m", c.TmpSize)
	}
	if strings.HasPrefix(c.Network, "container:") {
		bad("--network %s: a kernel never joins another container's network: give none (the default: no network), bridge or host", c.Network)
	}
	if len(errs) > 0 {
		return &InputError{Err: errors.Join(errs...)}
	}
	return nil
}

// checkDaemon refuses, before any container is made, what the daemon
// does not have: the image (an *InputError when the user named it, an
// *ImageError when it is ctxcode's own, which `ctxcode sandbox build`
// makes), the network, as many CPUs as the quota.
func (c *Config) checkDaemon(ctx context.Context, cli *client.Client) error {
	var errs []error
	switch ok, err := ImageExists(ctx, cli, c.Image); {
	case err != nil:
		return err
	case !ok && c.Image == KernelImage():
		return &ImageError{Image: c.Image}
	case !ok:
		errs = append(errs, &ImageError{Image: c.Image})
	}
	if c.Network != "" && c.Network != "none" {
		_, err := cli.NetworkInspect(ctx, c.Network, network.InspectOptions{})
		switch {
		case isNotFound(err):
			errs = append(errs, fmt.Errorf("--network %s: the Docker daemon has no such network: give none (the default: no network), bridge (Docker's default network) or host, or a network made with docker network create", c.Network))
		case err != nil:
			return fmt.Errorf("inspect network %s: %w", c.Network, err)
		}
	}
	if c.CPUs > 1 { // one CPU is there whatever the host
		info, err := cli.Info(ctx)
		if err != nil {
			return fmt.Errorf("ask the Docker daemon for its CPUs: %w", err)
		}
		if n := info.NCPU; n > 0 && c.CPUs > float64(n) {
			errs = append(errs, fmt.Errorf("--cpus %s: the Docker host has %d CPUs: give at most %d", strconv.FormatFloat(c.CPUs, 'f', -1, 64), n, n))
		}
	}
	if len(errs) > 0 {
		return &InputError{Err: errors.Join(errs...)}
	}
	return nil
}
