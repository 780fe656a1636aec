package sandbox

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeList returns every ctxcode Pod of the cluster's namespace (those
// with the ctxcode.session label), judged as List judges a container (see
// judge): a Pod that has ended (Succeeded or Failed) is stopped.
func KubeList(ctx context.Context, cl Cluster, olderThan time.Duration) ([]Orphan, error) {
	k := &Kube{c: cl}
	pods, err := cl.Client.CoreV1().Pods(cl.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelSession})
	if err != nil {
		return nil, k.apiError("list ctxcode pods", err)
	}
	me, booted, now := self(), bootTime(), time.Now()
	out := make([]Orphan, 0, len(pods.Items))
	for _, p := range pods.Items {
		o := Orphan{ID: p.Name, Session: p.Labels[LabelSession], Created: labelTime(p.Labels, p.CreationTimestamp.Time)}
		stopped := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		o.Reason, o.Kept = judge(me, booted, ownerOf(p.Labels), stopped, o.Created, olderThan, now)
		out = append(out, o)
	}
	return out, nil
}

// KubePrune deletes the orphaned ctxcode Pods of the cluster's namespace
// and returns those it deleted (or, with DryRun, would delete).
func KubePrune(ctx context.Context, cl Cluster, opts PruneOptions) ([]Orphan, error) {
	all, err := KubeList(ctx, cl, opts.OlderThan)
	if err != nil {
		return nil, err
	}
	k := &Kube{c: cl}
	var removed []Orphan
	var errs []error
	for _, o := range all {
		if o.Reason == "" {
			continue
		}
		if !opts.DryRun {
			if err := k.deletePod(o.ID); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		removed = append(removed, o)
	}
	return removed, errors.Join(errs...)
}

// KubeSweep is the prune every command that starts Pods runs first: it
// deletes the Pods whose owner is judged gone, never one only old.
func KubeSweep(ctx context.Context, cl Cluster) error {
	_, err := KubePrune(ctx, cl, PruneOptions{})
	return err
}
