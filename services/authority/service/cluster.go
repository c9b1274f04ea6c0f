package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/objstore"
)

// cluster is the service's Kubernetes API client and export bucket, opened when a request first needs
// them rather than when the service is declared: a declaration builds no client (tools/deploy reads
// every service's parts without a cluster), and a replica starts while the bucket is briefly away. An
// open that fails is tried again by the next request.
type cluster struct {
	cfg    Config
	logger *slog.Logger

	mu    sync.Mutex
	jobs  export.Jobs
	files objstore.Store
}

func (c *cluster) open(ctx context.Context) (export.Jobs, objstore.Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs != nil {
		return c.jobs, c.files, nil
	}
	if c.logger != nil {
		// The Kubernetes client logs through controller-runtime's process-wide logger.
		ctrllog.SetLogger(logr.FromSlogHandler(c.logger.Handler()))
	}
	kube, err := ctrlconfig.GetConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	// Each export request costs an API call or two; the client's default rate would queue a burst of
	// them behind each other.
	kube.QPS, kube.Burst = 100, 200
	jobs, err := KubeJobs(kube, c.cfg.Namespace)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	files, err := objstore.NewS3(ctx, c.cfg.S3)
	if err != nil {
		return nil, nil, fault.Wrap(fault.Unavailable, err, "the export bucket is unavailable")
	}
	c.jobs, c.files = jobs, files
	return jobs, files, nil
}

// clusterJobs are the cluster's export jobs, opened on first use.
type clusterJobs struct{ c *cluster }

func (j clusterJobs) Create(ctx context.Context, name string, spec v1alpha1.ExportJobSpec) (*v1alpha1.ExportJob, error) {
	jobs, _, err := j.c.open(ctx)
	if err != nil {
		return nil, err
	}
	return jobs.Create(ctx, name, spec)
}

func (j clusterJobs) List(ctx context.Context, authority string) ([]v1alpha1.ExportJob, error) {
	jobs, _, err := j.c.open(ctx)
	if err != nil {
		return nil, err
	}
	return jobs.List(ctx, authority)
}

// clusterFiles is the export bucket, opened on first use.
type clusterFiles struct{ c *cluster }

func (f clusterFiles) Put(ctx context.Context, key string, r io.Reader, o objstore.PutOptions) (int64, error) {
	_, files, err := f.c.open(ctx)
	if err != nil {
		return 0, err
	}
	return files.Put(ctx, key, r, o)
}

func (f clusterFiles) Stat(ctx context.Context, key string) (objstore.Info, error) {
	_, files, err := f.c.open(ctx)
	if err != nil {
		return objstore.Info{}, err
	}
	return files.Stat(ctx, key)
}

func (f clusterFiles) Delete(ctx context.Context, key string) error {
	_, files, err := f.c.open(ctx)
	if err != nil {
		return err
	}
	return files.Delete(ctx, key)
}

func (f clusterFiles) URL(ctx context.Context, key string, expires time.Time) (string, error) {
	_, files, err := f.c.open(ctx)
	if err != nil {
		return "", err
	}
	return files.URL(ctx, key, expires)
}

var (
	_ export.Jobs    = clusterJobs{}
	_ objstore.Store = clusterFiles{}
)
