package export

import (
	"context"
	"errors"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/objstore"
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

// DownloadURL mints the download URL of a Ready job from its objectKey, valid until its expiresAt.
// URLs are minted on each read rather than kept in the status: a URL is a bearer credential.
func DownloadURL(ctx context.Context, store objstore.Store, job *v1alpha1.ExportJob) (string, error) {
	st := job.Status
	if st.Phase != v1alpha1.PhaseReady || st.ObjectKey == "" || st.ExpiresAt == nil {
		return "", fmt.Errorf("export %s is %s, not ready for download", job.Name, st.Phase)
	}
	return store.URL(ctx, st.ObjectKey, st.ExpiresAt.Time)
}
