package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// Orphan is a ctxcode container and why it may be removed.
type Orphan struct {
	ID      string
	Session string
	Created time.Time
	Reason  string // empty: it is alive and owned
}

// PruneOptions choose what Prune removes.
type PruneOptions struct {
	// OlderThan also removes containers older than this, owner alive or
	// not. Zero means no age limit.
	OlderThan time.Duration
	// DryRun lists without removing.
	DryRun bool
}

// List returns every ctxcode container, with the reason it is an orphan
// (its owning process on this host is gone, or it is older than olderThan)
// or an empty reason when it is in use.
func List(ctx context.Context, cli *client.Client, olderThan time.Duration) ([]Orphan, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return nil, fmt.Errorf("list ctxcode containers: %w", err)
	}
	host, _ := os.Hostname()
	out := make([]Orphan, 0, len(cs))
	for _, c := range cs {
		o := Orphan{ID: c.ID, Session: c.Labels[LabelSession], Created: time.Unix(c.Created, 0)}
		if sec, err := strconv.ParseInt(c.Labels[LabelCreated], 10, 64); err == nil {
			o.Created = time.Unix(sec, 0)
		}
		pid, _ := strconv.Atoi(c.Labels[LabelPID])
		switch {
		case c.Labels[LabelHost] == host && pid > 0 && !alive(pid):
			o.Reason = fmt.Sprintf("its owner (pid %d) is gone", pid)
		case olderThan > 0 && time.Since(o.Created) > olderThan:
			o.Reason = fmt.Sprintf("older than %s", olderThan)
		}
		out = append(out, o)
	}
	return out, nil
}

// alive reports whether a process with this pid exists on this host.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Prune removes orphaned ctxcode containers and data volumes, and returns
// what it removed (or, with DryRun, would remove).
func Prune(ctx context.Context, cli *client.Client, opts PruneOptions) ([]Orphan, error) {
	all, err := List(ctx, cli, opts.OlderThan)
	if err != nil {
		return nil, err
	}
	var removed []Orphan
	var errs []error
	for _, o := range all {
		if o.Reason == "" {
			continue
		}
		removed = append(removed, o)
		if !opts.DryRun {
			errs = append(errs, teardown(cli, o.ID, ""))
		}
	}
	if !opts.DryRun {
		errs = append(errs, pruneVolumes(ctx, cli, opts.OlderThan))
	}
	return removed, errors.Join(errs...)
}

// pruneVolumes removes data volumes whose owner is gone.
func pruneVolumes(ctx context.Context, cli *client.Client, olderThan time.Duration) error {
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return fmt.Errorf("list ctxcode volumes: %w", err)
	}
	host, _ := os.Hostname()
	var errs []error
	for _, v := range vs.Volumes {
		pid, _ := strconv.Atoi(v.Labels[LabelPID])
		sec, _ := strconv.ParseInt(v.Labels[LabelCreated], 10, 64)
		gone := v.Labels[LabelHost] == host && pid > 0 && !alive(pid)
		old := olderThan > 0 && sec > 0 && time.Since(time.Unix(sec, 0)) > olderThan
		if gone || old {
			errs = append(errs, teardown(cli, "", v.Name))
		}
	}
	return errors.Join(errs...)
}

// Sweep is the prune every command that starts containers runs first: it
// removes the containers of ctxcode processes that are gone.
func Sweep(ctx context.Context, cli *client.Client) error {
	_, err := Prune(ctx, cli, PruneOptions{})
	return err
}
