package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// Orphan is a ctxcode container and whether it may be removed.
type Orphan struct {
	ID      string
	Session string
	Created time.Time
	// Reason says why it may be removed; empty means it is kept.
	Reason string
	// Kept says why it is kept (in use, or an owner that cannot be looked
	// up from here), when Reason is empty.
	Kept string
}

// PruneOptions choose what Prune removes.
type PruneOptions struct {
	// OlderThan also removes containers and volumes older than this whose
	// owner is not this process, alive or not, and whoever made them. Zero
	// means no age limit: only what is judged orphaned by its owner labels.
	OlderThan time.Duration
	// DryRun lists without removing.
	DryRun bool
}

// judge decides whether a container or volume may be removed by me, the
// process judging: it returns the reason to remove it, or else the reason
// to keep it. o is its owner as labelled, created when it was made, and
// stopped says nothing runs in it (an exited container; a volume, which
// the daemon refuses to remove while a container uses it). booted is when
// me's kernel booted.
//
// The rule is to judge an owner only where it can be looked up:
//
//   - a container of this process is kept;
//   - on me's boot and in me's PID namespace (the labels say so), the
//     owner is gone when its pid does not exist or started at another time
//     than labelled (the pid was reused);
//   - made on this host's name under another boot id, it is gone when the
//     container is stopped and was made before this kernel booted: a
//     reboot ends every process and stops every container of the old boot
//     (ctxcode sets no restart policy), and no live session's container can
//     be both stopped and older than this boot, which protects against
//     another machine with the same hostname (a clone, a CI runner, a VM
//     whose kernel is not ours) sharing the daemon. A sibling container
//     shares our kernel and so our boot id, and is judged by namespace;
//   - anything else (another PID namespace, another host, labels missing,
//     a running container of another boot) cannot be judged from here, and
//     only olderThan removes it.
func judge(me owner, booted time.Time, o owner, stopped bool, created time.Time, olderThan time.Duration, now time.Time) (reason, kept string) {
	const ageOnly = "; only an age limit (prune --older-than) removes it"
	switch {
	case o.ID != "" && o.ID == me.ID:
		return "", "in use by this process"
	case sameProcessTable(me, o) && o.PID > 0:
		if !exists(o.PID) {
			return fmt.Sprintf("its owner (pid %d) is gone", o.PID), ""
		}
		if start := processStart(o.PID); o.Start != "" && start != "" && start != o.Start {
			return fmt.Sprintf("its owner (pid %d) is gone; that pid is another process now", o.PID), ""
		}
		kept = fmt.Sprintf("in use by pid %d", o.PID)
	case me.Boot != "" && o.Boot != "" && o.Boot != me.Boot && o.Host != "" && o.Host == me.Host:
		if stopped && !booted.IsZero() && created.Before(booted) {
			return fmt.Sprintf("its owner's boot has ended: made on %s under boot id %.8s, before this boot, and stopped", o.Host, o.Boot), ""
		}
		kept = fmt.Sprintf("made on a host named %s under another boot id (%.8s), running or newer than this boot: "+
			"another machine with this name may own it"+ageOnly, o.Host, o.Boot)
	case o.Boot == "" || o.PIDNS == "" || o.PID <= 0:
		kept = "made without owner labels (by an older ctxcode, or where /proc cannot tell)" + ageOnly
	case me.Boot == "" || me.PIDNS == "":
		kept = "this process cannot tell its own boot or PID namespace" + ageOnly
	case o.Boot == me.Boot:
		kept = fmt.Sprintf("owned by pid %d in another PID namespace on this machine, which cannot be looked up from here"+ageOnly, o.PID)
	default:
		kept = fmt.Sprintf("owned by pid %d on host %s", o.PID, o.Host) + ageOnly
	}
	if olderThan > 0 && now.Sub(created) > olderThan {
		return fmt.Sprintf("older than %s", olderThan), ""
	}
	return "", kept
}

// labelTime is the ctxcode.created label, or fallback when it is missing.
func labelTime(labels map[string]string, fallback time.Time) time.Time {
	if sec, err := strconv.ParseInt(labels[LabelCreated], 10, 64); err == nil {
		return time.Unix(sec, 0)
	}
	return fallback
}

// List returns every ctxcode container, with the reason it may be removed
// (see judge: its owner is gone, or it is older than olderThan) or the
// reason it is kept.
func List(ctx context.Context, cli *client.Client, olderThan time.Duration) ([]Orphan, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return nil, fmt.Errorf("list ctxcode containers: %w", err)
	}
	me, booted, now := self(), bootTime(), time.Now()
	out := make([]Orphan, 0, len(cs))
	for _, c := range cs {
		o := Orphan{ID: c.ID, Session: c.Labels[LabelSession], Created: labelTime(c.Labels, time.Unix(c.Created, 0))}
		stopped := c.State == container.StateExited || c.State == container.StateDead
		o.Reason, o.Kept = judge(me, booted, ownerOf(c.Labels), stopped, o.Created, olderThan, now)
		out = append(out, o)
	}
	return out, nil
}

// Prune removes orphaned ctxcode containers and data volumes, and returns
// the containers it removed (or, with DryRun, would remove).
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

// pruneVolumes removes the data volumes judged orphaned, by the rule of
// judge; the daemon refuses to remove a volume a container uses, and such a
// volume is kept.
func pruneVolumes(ctx context.Context, cli *client.Client, olderThan time.Duration) error {
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelSession))})
	if err != nil {
		return fmt.Errorf("list ctxcode volumes: %w", err)
	}
	me, booted, now := self(), bootTime(), time.Now()
	var errs []error
	for _, v := range vs.Volumes {
		made, _ := time.Parse(time.RFC3339, v.CreatedAt)
		if reason, _ := judge(me, booted, ownerOf(v.Labels), true, labelTime(v.Labels, made), olderThan, now); reason == "" {
			continue
		}
		if err := teardown(cli, "", v.Name); err != nil && !cerrdefs.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sweep is the prune every command that starts containers runs first: it
// removes the containers whose owner is judged gone (see judge), never one
// only old.
func Sweep(ctx context.Context, cli *client.Client) error {
	_, err := Prune(ctx, cli, PruneOptions{})
	return err
}
