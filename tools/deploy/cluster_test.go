package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tidemark/tidemark/platform/objstore/miniotest"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/testbed"
)

// The package shares one real kube-apiserver and etcd (the test bed's), one PostgreSQL cluster and
// one MinIO; each test has its own namespace, database and bucket.
var (
	kube            *rest.Config
	adminKubeconfig string
	pgSrv           *pglocal.Server
	minioSrv        *miniotest.Server
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	bin, err := testbed.Dir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin}
	if kube, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "start the test bed's API server (run make testbed first): %v\n", err)
		return 1
	}
	defer env.Stop()
	tmp, err := os.MkdirTemp("", "deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		var b []byte
		if b, err = admin.KubeConfig(); err == nil {
			adminKubeconfig = filepath.Join(tmp, "kubeconfig")
			err = os.WriteFile(adminKubeconfig, b, 0o600)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		return 1
	}
	ctx := context.Background()
	if pgSrv, err = pglocal.Start(ctx, pglocal.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "start postgres:", err)
		return 1
	}
	defer pgSrv.Stop()
	if minioSrv, err = miniotest.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "start minio:", err)
		return 1
	}
	defer minioSrv.Stop()
	return m.Run()
}

// cluster is the test bed's API server as its admin sees it.
type cluster struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	k, err := kubernetes.NewForConfig(kube)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(kube)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(kube)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{kube: k, dynamic: d, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

func (c *cluster) namespace(t testing.TB, name string) {
	t.Helper()
	_, err := c.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func (c *cluster) resource(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dynamic.Resource(m.Resource).Namespace(o.GetNamespace()), nil
	}
	return c.dynamic.Resource(m.Resource), nil
}

// apply applies o for real (server-side apply, unknown fields refused).
func (c *cluster) apply(t testing.TB, o *unstructured.Unstructured) {
	t.Helper()
	r, err := c.resource(o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := r.Patch(context.Background(), o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		FieldManager: "tidemark-chart-test", Force: &force, FieldValidation: "Strict",
	}); err != nil {
		t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// dryRun creates o with server-side dry-run: the API server's own schemas, defaulting, admission
// and the RBAC escalation checks see it, and nothing is stored.
func (c *cluster) dryRun(o *unstructured.Unstructured) error {
	r, err := c.resource(o)
	if err != nil {
		return err
	}
	_, err = r.Create(context.Background(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}

// installCRDs applies the CRDs among objs for real and waits until the API server serves them.
func (c *cluster) installCRDs(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	var names []string
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			c.apply(t, o)
			names = append(names, o.GetName())
		}
	}
	crds := c.dynamic.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range names {
		for !established(crds, name) {
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not established", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	c.mapper.Reset()
}

func established(crds dynamic.NamespaceableResourceInterface, name string) bool {
	crd, err := crds.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == string(apiextensionsv1.Established) && m["status"] == "True" {
			return true
		}
	}
	return false
}

// manifestOf is the manifest part of helm install's dry-run report.
func manifestOf(out string) string {
	_, after, _ := strings.Cut(out, "MANIFEST:")
	before, _, _ := strings.Cut(after, "NOTES:")
	return before
}

// monitoringCRDs are the Prometheus Operator's CRDs the test bed generated (scripts/testbed).
func monitoringCRDs(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	bin, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(filepath.Dir(bin), "crds", "monitoring.coreos.com", "*.yaml"))
	if len(paths) != 2 {
		t.Fatalf("want the ServiceMonitor and PrometheusRule CRDs under .tools/crds (run make testbed), have %v", paths)
	}
	var out []*unstructured.Unstructured
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objects(t, string(b))...)
	}
	return out
}

// TestServerSideDryRun: every object of the default and the production renderings is accepted by
// the test bed's API server, the CRDs first (applied for real), with unknown fields refused.
func TestServerSideDryRun(t *testing.T) {
	c := newCluster(t)
	for name, args := range map[string][]string{
		"default":    nil,
		"production": productionValues(t),
		// A projected service account token, which only the API server validates.
		"web-identity": {"--set", "global.s3.webIdentity.enabled=true,global.s3.webIdentity.roleArn=arn:aws:iam::1:role/exports"},
	} {
		t.Run(name, func(t *testing.T) {
			ns := "dryrun-" + name
			c.namespace(t, ns)
			objs := objects(t, render(t, append([]string{"--namespace", ns}, args...)...))
			if name == "production" {
				c.installCRDs(t, monitoringCRDs(t))
			}
			c.installCRDs(t, objs)
			var errs []error
			count := map[string]int{}
			for _, o := range objs {
				if o.GetKind() == "CustomResourceDefinition" {
					continue
				}
				if o.GetNamespace() != ns {
					errs = append(errs, fmt.Errorf("%s %s is in namespace %q, not the release's", o.GetKind(), o.GetName(), o.GetNamespace()))
				}
				if err := c.dryRun(o); err != nil {
					errs = append(errs, err)
				}
				count[o.GetKind()]++
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d objects accepted: %v", len(objs), count)
		})
	}
}

// TestHelmInstallDryRunServer: helm itself installs the production values against the test bed with
// --dry-run=server (its lookups answered by the cluster). The package's other tests installed the
// CRD without helm, as a platform team that manages CRDs apart would: crds.enabled=false.
func TestHelmInstallDryRunServer(t *testing.T) {
	c := newCluster(t)
	c.installCRDs(t, monitoringCRDs(t))
	c.namespace(t, "helm-dry-run")
	out, err := helm(t, "install", release, chartDir(t), "--namespace", "helm-dry-run", "--dry-run=server",
		"--kubeconfig", adminKubeconfig, "-f", filepath.Join(chartDir(t), "ci", "production-values.yaml"), "--set", "crds.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, manifestOf(out))
	if len(kinds(objs, "ServiceMonitor")) == 0 || len(kinds(objs, "Deployment")) == 0 {
		t.Errorf("helm install --dry-run=server rendered %d objects, without ServiceMonitors or Deployments", len(objs))
	}
	t.Logf("helm install --dry-run=server: %d objects", len(objs))
}
