package service_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
	"github.com/tidemark/tidemark/platform/testbed"
)

// clusterEnv is a real kube-apiserver and etcd (envtest) with the ExportJob CRD and RBAC, a MinIO
// server and the operator command built for the tests, started by the first test that needs them and
// stopped when the package's tests end.
type clusterEnv struct {
	env      *envtest.Environment
	config   *rest.Config
	client   client.Client // uncached and all-powerful: assertions see the API server
	scheme   *runtime.Scheme
	admin    string // a kubeconfig file of an all-powerful user
	bin      string // .tools/bin: kubectl
	operator string // the operator command
	minio    *miniotest.Server
	tmp      string
}

var (
	clusterOnce sync.Once
	theCluster  *clusterEnv
	clusterErr  error
)

func cluster(t *testing.T) *clusterEnv {
	t.Helper()
	clusterOnce.Do(func() { theCluster, clusterErr = startCluster() })
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return theCluster
}

func startCluster() (*clusterEnv, error) {
	c := &clusterEnv{scheme: runtime.NewScheme()}
	if err := errors.Join(clientgoscheme.AddToScheme(c.scheme), v1alpha1.AddToScheme(c.scheme)); err != nil {
		return nil, err
	}
	var err error
	if c.bin, err = testbed.Dir(); err != nil {
		return nil, err
	}
	if c.tmp, err = os.MkdirTemp("", "authority-cluster-"); err != nil {
		return nil, err
	}
	c.operator = filepath.Join(c.tmp, "operator")
	if out, err := exec.Command("go", "build", "-o", c.operator, "github.com/tidemark/tidemark/operator/cmd/operator").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the operator: %w\n%s", err, out)
	}
	c.env = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "operator", "config", "crd")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: c.bin,
	}
	// The issuer's discovery document names its keys at the external address, which is otherwise
	// an address nothing here listens on: the web identity test's STS fetches them.
	c.env.ControlPlane.GetAPIServer().Configure().Set("external-hostname", "127.0.0.1")
	if c.config, err = c.env.Start(); err != nil {
		return nil, fmt.Errorf("start envtest (run `make testbed` first): %w", err)
	}
	theCluster = c // stopCluster stops what started, whatever fails next
	if c.client, err = client.New(c.config, client.Options{Scheme: c.scheme}); err != nil {
		return nil, err
	}
	if c.admin, err = c.kubeconfig(envtest.User{Name: "admin", Groups: []string{"system:masters"}}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if c.minio, err = miniotest.Run(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// stopCluster stops what a test started.
func stopCluster() {
	c := theCluster
	if c == nil {
		return
	}
	if c.minio != nil {
		_ = c.minio.Stop()
	}
	if c.env != nil {
		_ = c.env.Stop()
	}
	_ = os.RemoveAll(c.tmp)
}

// kubeconfig writes a kubeconfig file of user and returns its path.
func (c *clusterEnv) kubeconfig(user envtest.User) (string, error) {
	u, err := c.env.AddUser(user, nil)
	if err != nil {
		return "", err
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(c.tmp, "kubeconfig-")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.Write(b)
	return f.Name(), err
}

// namespace creates a namespace of the test.
func (c *clusterEnv) namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "authority-"}}
	if err := c.client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// serviceAccount gives the service's ServiceAccount in ns the Role the chart gives it (the rules of
// authority.rbac in charts/tidemark/values.yaml) and returns a kubeconfig file that authenticates as it.
func (c *clusterEnv) serviceAccount(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "charts", "tidemark", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Authority struct {
			RBAC struct {
				Create bool                `json:"create"`
				Rules  []rbacv1.PolicyRule `json:"rules"`
			} `json:"rbac"`
		} `json:"authority"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil || !values.Authority.RBAC.Create || len(values.Authority.RBAC.Rules) == 0 {
		t.Fatalf("the chart's values give the authority no Role: %v %+v", err, values.Authority.RBAC)
	}
	role := rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tidemark-authority"}, Rules: values.Authority.RBAC.Rules}
	if err := c.client.Create(ctx, &role); err != nil {
		t.Fatalf("create the Role: %v", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "authority"}}
	if err := c.client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tidemark-authority"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	if err := c.client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	// A ServiceAccount's token authenticates as this user and these groups.
	path, err := c.kubeconfig(envtest.User{Name: "system:serviceaccount:" + ns + ":authority",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// startOperator runs the operator command on ns, as its Deployment would, until the test ends,
// storing files in bucket of the package's MinIO with its root keys.
func (c *clusterEnv) startOperator(t *testing.T, ns, bucket string, sources map[v1alpha1.FileType]string) {
	t.Helper()
	c.startOperatorWith(t, ns, sources, "TIDEMARK_S3_ENDPOINT="+c.minio.Endpoint, "TIDEMARK_S3_BUCKET="+bucket,
		"TIDEMARK_S3_ACCESS_KEY="+c.minio.AccessKey, "TIDEMARK_S3_SECRET_KEY="+c.minio.SecretKey)
}

// startOperatorWith is startOperator with the bucket and its credentials given as variables.
func (c *clusterEnv) startOperatorWith(t *testing.T, ns string, sources map[v1alpha1.FileType]string, s3 ...string) {
	t.Helper()
	var pairs []string
	for ft, u := range sources {
		pairs = append(pairs, string(ft)+"="+strings.TrimSuffix(u, "/"))
	}
	cmd := exec.Command(c.operator)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.admin, "TIDEMARK_NAMESPACE="+ns, "TIDEMARK_LEADER_ELECT=false",
		"TIDEMARK_INTERNAL_ADDR=127.0.0.1:0", "TIDEMARK_LOG_LEVEL=warn", "TIDEMARK_EXPORT_SOURCES="+strings.Join(pairs, ","))
	cmd.Env = append(cmd.Env, s3...)
	kittest.StartDaemon(t, "operator", cmd)
}

// kubectl runs kubectl with the admin's kubeconfig and returns its output.
func (c *clusterEnv) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.bin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.admin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
