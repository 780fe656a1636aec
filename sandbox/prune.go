package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
		case c.Labels[LabelHost] == host && pid > 0 && !alive(pid, c.Labels[LabelPIDStart]):
			o.Reason = fmt.Sprintf("its owner (pid %d) is gone", pid)
		case olderThan > 0 && time.Since(o.Created) > olderThan:
			o.Reason = fmt.Sprintf("older than %s", olderThan)
		}
		out = append(out, o)
	}
	return out, nil
}

// alive reports whether the process that owns a container still runs on
// this host: the pid exists and, when the label recorded it, started at the
// same time (so a reused pid does not keep an orphan alive).
func alive(pid int, start string) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return start == "" || processStart(pid) == "" || processStart(pid) == start
}

// processStart is a process's start time in clock ticks since boot (field
// 22 of /proc/PID/stat), or "" where /proc cannot tell.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
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
		if opts.DryRun {
			removed = append(removed, o)
			continue
		}
		if err := teardown(cli, o.ID, ""); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, o)
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
		gone := v.Labels[LabelHost] == host && pid > 0 && !alive(pid, v.Labels[LabelPIDStart])
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
