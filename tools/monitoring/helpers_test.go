package monitoring_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tidemark/tidemark/platform/testbed"
	"github.com/tidemark/tidemark/tools/deploy"
	"github.com/tidemark/tidemark/tools/monitoring"
)

// release is what the tests render the chart as: release tidemark in namespace tidemark, so its
// full name is tidemark too.
var release = monitoring.Release{Namespace: monitoring.LocalNamespace, Fullname: "tidemark"}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := deploy.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tool is the path of a command the tests run: promtool and prometheus come from Debian's
// prometheus package, which scripts/deps installs (make test runs it first).
func tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("no %s on PATH (scripts/deps installs Debian's prometheus package): %v", name, err)
	}
	return p
}

// run runs a command and fails the test with its output when it fails.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// renderedRules are the groups of the chart's PrometheusRule as helm renders it by default for the
// release, written to dir as a Prometheus rule file; it returns the file's path.
func renderedRules(t testing.TB, dir string, set ...string) string {
	t.Helper()
	bin, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(bin, "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no helm in the test bed (run make testbed): %v", err)
	}
	args := []string{"template", release.Fullname, filepath.Join(repoRoot(t), deploy.ChartDir), "--namespace", release.Namespace,
		"--show-only", "templates/prometheusrule.yaml", "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	var rule struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Groups []any `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(out, &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("rendered %q, not a PrometheusRule: %v", out, err)
	}
	b, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, "rules.yaml", b)
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
