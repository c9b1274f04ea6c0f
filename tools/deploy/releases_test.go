package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tidemark/tidemark/platform/testbed"
)

// TestSeveralReleasesOnOneCluster installs the chart for real, twice, in two namespaces of an API
// server of its own (the package's shared one has the CRD applied apart): the second release leaves
// the CRD to the first instead of failing on its ownership, upgrades and uninstalls without
// touching it, and the CRD outlives the first release's uninstall (crds.keep).
func TestSeveralReleasesOnOneCluster(t *testing.T) {
	bin, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	k8s, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = apiextensionsv1.AddToScheme(crds.Scheme())
	owner := func() string {
		t.Helper()
		var crd apiextensionsv1.CustomResourceDefinition
		if err := crds.Get(context.Background(), client.ObjectKey{Name: "exportjobs.exports.tidemark.io"}, &crd); err != nil {
			if apierrors.IsNotFound(err) {
				return ""
			}
			t.Fatal(err)
		}
		return crd.Annotations["meta.helm.sh/release-namespace"] + "/" + crd.Annotations["meta.helm.sh/release-name"]
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := helm(t, append(args, "--kubeconfig", kubeconfig)...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	for _, ns := range []string{"staging", "production"} {
		if _, err := k8s.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	run("install", "tidemark", chartDir(t), "--namespace", "staging")
	if got := owner(); got != "staging/tidemark" {
		t.Fatalf("after the first install the CRD belongs to %q", got)
	}
	run("install", "tidemark", chartDir(t), "--namespace", "production")
	run("upgrade", "tidemark", chartDir(t), "--namespace", "production", "--set", "market.replicas=3")
	if m := run("get", "manifest", "tidemark", "--namespace", "production"); strings.Contains(m, "kind: CustomResourceDefinition") {
		t.Error("the second release manages the CRD too")
	}
	if m := run("get", "manifest", "tidemark", "--namespace", "staging"); !strings.Contains(m, "kind: CustomResourceDefinition") {
		t.Error("the first release no longer manages the CRD")
	}
	run("upgrade", "tidemark", chartDir(t), "--namespace", "staging", "--set", "market.replicas=3")
	run("uninstall", "tidemark", "--namespace", "production")
	if got := owner(); got != "staging/tidemark" {
		t.Errorf("after the second release's uninstall the CRD belongs to %q", got)
	}
	run("uninstall", "tidemark", "--namespace", "staging")
	if got := owner(); got != "staging/tidemark" {
		t.Errorf("crds.keep: after the first release's uninstall the CRD is %q, want kept", got)
	}
}
