package export

import (
	"context"
	"errors"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
)

// ErrInvalid wraps the spec problems Create refuses; the API answers them with 400.
var ErrInvalid = errors.New("invalid export")

// Jobs is how the export API creates and reads jobs, whichever driver runs them: KubeJobs in a
// cluster, the local runner in the dev stack.
type Jobs interface {
	// Create validates spec and queues a job for it.
	Create(ctx context.Context, spec v1alpha1.ExportJobSpec) (*v1alpha1.ExportJob, error)
	// List returns the authority's jobs, newest first.
	List(ctx context.Context, authority string) ([]v1alpha1.ExportJob, error)
}

// KubeJobs keeps jobs as ExportJob resources in one namespace.
type KubeJobs struct {
	Client    client.Client
	Namespace string
}

// Create implements Jobs. The name is generated; the authority label is set so List can select it.
func (k KubeJobs) Create(ctx context.Context, spec v1alpha1.ExportJobSpec) (*v1alpha1.ExportJob, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	job := &v1alpha1.ExportJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    k.Namespace,
			GenerateName: "export-",
			Labels:       map[string]string{v1alpha1.AuthorityLabel: string(spec.Authority)},
		},
		Spec: spec,
	}
	if err := k.Client.Create(ctx, job); err != nil {
		return nil, fmt.Errorf("create export job: %w", err)
	}
	return job, nil
}

// List implements Jobs.
func (k KubeJobs) List(ctx context.Context, authority string) ([]v1alpha1.ExportJob, error) {
	var list v1alpha1.ExportJobList
	if err := k.Client.List(ctx, &list, client.InNamespace(k.Namespace),
		client.MatchingLabels{v1alpha1.AuthorityLabel: authority}); err != nil {
		return nil, fmt.Errorf("list export jobs of %s: %w", authority, err)
	}
	SortNewestFirst(list.Items)
	return list.Items, nil
}

// SortNewestFirst orders jobs by creation time, newest first, then by name for a stable order.
func SortNewestFirst(jobs []v1alpha1.ExportJob) {
	sort.SliceStable(jobs, func(i, j int) bool {
		a, b := jobs[i].CreationTimestamp, jobs[j].CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a)
		}
		return jobs[i].Name > jobs[j].Name
	})
}
