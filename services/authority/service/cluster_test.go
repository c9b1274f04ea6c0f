package service_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/testbed"
)

// cluster is a real kube-apiserver and etcd (envtest) with the ExportJob CRD, started by the first
// test that needs it and stopped when the package's tests end.
type clusterEnv struct {
	env    *envtest.Environment
	config *rest.Config
	client client.Client // uncached: assertions see the API server
	scheme *runtime.Scheme
}

var (
	clusterOnce sync.Once
	theCluster  *clusterEnv
	clusterErr  error
)

func cluster(t *testing.T) *clusterEnv {
	t.Helper()
	clusterOnce.Do(func() {
		c := &clusterEnv{scheme: runtime.NewScheme()}
		if err := errors.Join(clientgoscheme.AddToScheme(c.scheme), v1alpha1.AddToScheme(c.scheme)); err != nil {
			clusterErr = err
			return
		}
		bin, err := testbed.Dir()
		if err != nil {
			clusterErr = err
			return
		}
		c.env = &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "operator", "config", "crd")},
			ErrorIfCRDPathMissing: true,
			BinaryAssetsDirectory: bin,
		}
		if c.config, err = c.env.Start(); err != nil {
			clusterErr = fmt.Errorf("start envtest (run `make testbed` first): %w", err)
			return
		}
		if c.client, err = client.New(c.config, client.Options{Scheme: c.scheme}); err != nil {
			clusterErr = err
			return
		}
		theCluster = c
	})
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return theCluster
}

// stopCluster stops the cluster if a test started it.
func stopCluster() {
	if theCluster != nil {
		_ = theCluster.env.Stop()
	}
}
