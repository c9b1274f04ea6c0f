package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tidemark/tidemark/platform/testbed"
	"github.com/tidemark/tidemark/tools/deploy"
)

const (
	release   = "tidemark"
	namespace = "tidemark"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := deploy.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), deploy.ChartDir) }

func helmBin(t testing.TB) string { return testbedBin(t, "helm") }

// testbedBin is the test bed's command name.
func testbedBin(t testing.TB, name string) string {
	t.Helper()
	dir, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no %s in the test bed (run make testbed): %v", name, err)
	}
	return bin
}

// helm runs the test bed's helm and returns its standard output, or an error with its standard error.
func helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.New(strings.TrimSpace(stderr.String()) + ": " + err.Error())
	}
	return stdout.String(), nil
}

// monitoringAPIs make the Prometheus Operator's kinds render, as a cluster serving them would.
var monitoringAPIs = []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"}

// productionValues are the chart's production-like example.
func productionValues(t testing.TB) []string {
	return append([]string{"-f", filepath.Join(chartDir(t), "ci", "production-values.yaml")}, monitoringAPIs...)
}

// render is helm template of the chart as release tidemark in namespace tidemark.
func render(t testing.TB, args ...string) string {
	t.Helper()
	out, err := helm(t, append([]string{"template", release, chartDir(t), "--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// objects parses a rendering into its objects.
func objects(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("rendered YAML: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func kinds(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// typed converts a rendered object to its Go type.
func typed[T any](t testing.TB, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &v); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &v
}

func deployment(t testing.TB, objs []*unstructured.Unstructured, component string) *appsv1.Deployment {
	t.Helper()
	o := find(objs, "Deployment", release+"-"+component)
	if o == nil {
		t.Fatalf("no Deployment %s-%s", release, component)
	}
	return typed[appsv1.Deployment](t, o)
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}
