package export

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/objstore"
)

// ErrInvalid wraps the spec problems Create refuses; the API answers them with 400.
var ErrInvalid = errors.New("invalid export")

// Jobs is how the export API creates and reads jobs, whichever driver runs them: KubeJobs in a
// cluster, the local runner in the dev stack.
type Jobs interface {
	// Create validates spec and queues a job named name for it; "" generates a name. When a job of
	// that name exists already, Create returns it as it is and creates nothing: a caller that derives
	// the name from a request can retry it, from any replica, without making a second job. A name
	// that is no DNS-1123 subdomain is refused with ErrInvalid.
	Create(ctx context.Context, name string, spec v1alpha1.ExportJobSpec) (*v1alpha1.ExportJob, error)
	// List returns the authority's jobs, newest first.
	List(ctx context.Context, authority string) ([]v1alpha1.ExportJob, error)
}

// KubeJobs keeps jobs as ExportJob resources in one namespace.
type KubeJobs struct {
	Client    client.Client
	Namespace string
}

// Create implements Jobs. The authority label is set so List can select the job. The API server
// keeps names unique, so replicas creating one name at once make one job.
func (k KubeJobs) Create(ctx context.Context, name string, spec v1alpha1.ExportJobSpec) (*v1alpha1.ExportJob, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	job := &v1alpha1.ExportJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: k.Namespace,
			Name:      name,
			Labels:    map[string]string{v1alpha1.AuthorityLabel: string(spec.Authority)},
		},
		Spec: spec,
	}
	if name == "" {
		job.GenerateName = "export-"
	}
	err := k.Client.Create(ctx, job)
	if apierrors.IsAlreadyExists(err) && name != "" {
		existing := &v1alpha1.ExportJob{}
		if err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, existing); err != nil {
			return nil, fmt.Errorf("read export job %s: %w", name, err)
		}
		return existing, nil
	}
	if err != nil {
		return nil, fmt.Errorf("create export job: %w", err)
	}
	return job, nil
}

// ValidateName refuses a job name the API server would: "" (generate one) passes.
func ValidateName(name string) error {
	if name == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%w: job name %q: %s", ErrInvalid, name, strings.Join(errs, "; "))
	}
	return nil
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
