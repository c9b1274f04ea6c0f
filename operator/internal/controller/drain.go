package controller

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/platform/objstore"
)

// Drained says how a namespace's export jobs went away.
type Drained struct {
	// Jobs is how many there were.
	Jobs int
	// ByOperator were finalized by a running operator; the rest by Drain itself.
	ByOperator int
}

// Drain deletes every export job of namespace and its stored file, and waits until none is left: a
// release's uninstall runs it before its operator goes, because a job still carrying the finalizer
// when its CRD is deleted holds the CRD in Terminating for good. A running operator finalizes the
// deleted jobs as usual (stopping their attempts first); those still there after wait, with no
// operator to see them, Drain finalizes itself: their objects deleted, the finalizer removed.
func Drain(ctx context.Context, c client.Client, store objstore.Store, namespace string, wait time.Duration) (Drained, error) {
	var jobs v1alpha1.ExportJobList
	if err := c.List(ctx, &jobs, client.InNamespace(namespace)); err != nil {
		return Drained{}, fmt.Errorf("list the export jobs of %s: %w", namespace, err)
	}
	d := Drained{Jobs: len(jobs.Items)}
	for i := range jobs.Items {
		if err := client.IgnoreNotFound(c.Delete(ctx, &jobs.Items[i])); err != nil {
			return d, fmt.Errorf("delete export job %s/%s: %w", namespace, jobs.Items[i].Name, err)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		if err := c.List(ctx, &jobs, client.InNamespace(namespace)); err != nil {
			return d, fmt.Errorf("list the export jobs of %s: %w", namespace, err)
		}
		if len(jobs.Items) == 0 || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	d.ByOperator = d.Jobs - len(jobs.Items)
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if !controllerutil.ContainsFinalizer(job, Finalizer) {
			continue
		}
		if err := export.RemoveObjects(ctx, store, job); err != nil {
			return d, err
		}
		orig := job.DeepCopy()
		controllerutil.RemoveFinalizer(job, Finalizer)
		if err := client.IgnoreNotFound(c.Patch(ctx, job, client.MergeFrom(orig))); err != nil {
			return d, fmt.Errorf("remove the finalizer of %s/%s: %w", namespace, job.Name, err)
		}
	}
	return d, nil
}
