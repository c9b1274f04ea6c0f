package deploy_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/tools/deploy"
)

var update = flag.Bool("update", false, "rewrite the golden renderings under testdata/")

// TestGeneratedFilesAreCurrent: the chart's mesh table, CRD copy, schema and README, dashboards and
// PrometheusRule, and the Dockerfile, are what make generate writes from the declarations as they are.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := repoRoot(t)
	files, err := deploy.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate", p)
		}
	}
	for _, p := range deploy.Stale(root, files) {
		rel, _ := filepath.Rel(root, p)
		t.Errorf("%s is no longer generated (a CRD the operator dropped, a dashboard tools/monitoring dropped): run make generate", rel)
	}
}

func TestLint(t *testing.T) {
	for name, args := range map[string][]string{
		"default":    nil,
		"production": {"-f", filepath.Join(chartDir(t), "ci", "production-values.yaml")},
	} {
		t.Run(name, func(t *testing.T) {
			if out, err := helm(t, append([]string{"lint", "--strict", chartDir(t)}, args...)...); err != nil {
				t.Errorf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

// generatedKey is the page key the chart makes when none is given: random, so masked in the goldens.
var generatedKey = regexp.MustCompile(`(?m)^(  page-key: )"[A-Za-z0-9+/=]+"$`)

// TestGolden: the renderings of the default and the production values, as reviewed. Run with
// -update after a change to the chart, and read the diff.
func TestGolden(t *testing.T) {
	for name, args := range map[string][]string{
		"default":    nil,
		"production": productionValues(t),
	} {
		t.Run(name, func(t *testing.T) {
			got := generatedKey.ReplaceAllString(render(t, args...), `$1"<generated>"`)
			path := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./tools/deploy -run TestGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("rendering differs from %s (run with -update and review the diff):\n%s", path, firstDiff(string(want), got))
			}
		})
	}
}

func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return ""
}

// TestSchemaRefusals: a typo or a wrong value fails the install, naming what was wrong.
func TestSchemaRefusals(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown key of a deployable", []string{"--set", "market.replica=3"}, "replica"},
		{"unknown key of defaults", []string{"--set", "defaults.resource.requests.cpu=1"}, "resource"},
		{"unknown top-level key", []string{"--set", "markets.enabled=true"}, "markets"},
		{"a variable the deployable does not read", []string{"--set", "operator.config.INGEST_WRITERS=2"}, "INGEST_WRITERS"},
		{"a misspelt variable", []string{"--set", "market.config.INGEST_WRITER=2"}, "INGEST_WRITER"},
		{"a variable the chart sets", []string{"--set", "user.config.PG_URL=postgres://x"}, "PG_URL"},
		{"a log level", []string{"--set", "global.logLevel=verbose"}, "logLevel"},
		{"a short page key", []string{"--set", "global.pageKey.value=short"}, "pageKey"},
		{"a broker without a port", []string{"--set", "global.kafka.brokers={kafka}"}, "brokers"},
		{"an endpoint with a scheme", []string{"--set", "global.s3.endpoint=https://s3.example.com"}, "endpoint"},
		{"a digest", []string{"--set", "user.image.digest=sha256:abc"}, "digest"},
		{"no replicas to autoscale from", []string{"--set", "market.autoscaling.minReplicas=0"}, "minReplicas"},
		{"a port", []string{"--set", "market.ports.internal=70000"}, "internal"},
		{"a replica count as text", []string{"--set-string", "user.replicas=two"}, "replicas"},
		{"a SASL mechanism Kafka clients lack", []string{"--set", "global.kafka.sasl.mechanism=GSSAPI"}, "mechanism"},
		{"a topic prefix Kafka refuses", []string{"--set", "global.kafka.topicPrefix=prod/"}, "topicPrefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"template", release, chartDir(t)}, tc.args...)...)
			if err == nil {
				t.Fatalf("rendered:\n%.300s", out)
			}
			if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refused with %v, want a schema error naming %s", err, tc.want)
			}
		})
	}
	// Without the schema, the templates still refuse what they cannot honour.
	_, err := helm(t, "template", release, chartDir(t), "--skip-schema-validation", "--set", "market.config.PG_URL=postgres://x")
	if err == nil || !strings.Contains(err.Error(), "TIDEMARK_PG_URL is set from") {
		t.Errorf("a managed variable in config without the schema: %v", err)
	}
	_, err = helm(t, "template", release, chartDir(t), "--skip-schema-validation", "--set", "operator.config.INGEST_WRITERS=2")
	if err == nil || !strings.Contains(err.Error(), "operator does not read TIDEMARK_INGEST_WRITERS") {
		t.Errorf("a variable the operator does not read, without the schema: %v", err)
	}
	// Kafka credentials and client certificates come from a Secret of the platform team's.
	for args, want := range map[string]string{
		"global.kafka.sasl.mechanism=SCRAM-SHA-512":                             "global.kafka.sasl.existingSecret",
		"global.kafka.tls.enabled=true,global.kafka.tls.clientCertificate=true": "global.kafka.tls.existingSecret",
	} {
		_, err = helm(t, "template", release, chartDir(t), "--set", args)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", args, err, want)
		}
	}
}

// TestEveryVariableIsReachable: each TIDEMARK_* variable a deployable reads (kit.Variables, the
// operator's settings.Variables) reaches its container, from the values the chart manages it by or
// from its block's config.
func TestEveryVariableIsReachable(t *testing.T) {
	comps, err := deploy.Mesh()
	if err != nil {
		t.Fatal(err)
	}
	full := append(productionValues(t), "--set", "global.otlpEndpoint=http://collector:4318", "--set", "global.s3.publicURL=https://downloads.example.com",
		"--set", "global.s3.stsEndpoint=https://sts.example.com,global.s3.sessionDuration=9h",
		"--set", "global.kafka.tls.clientCertificate=true,global.kafka.tls.serverName=kafka.internal",
		"--set", "global.kafka.topicPrefix=prod.,global.kafka.groupPrefix=prod-")
	for _, c := range comps {
		t.Run(c.Name, func(t *testing.T) {
			args := slices.Clone(full)
			want := map[string]string{}
			for _, v := range c.Configurable() {
				val := "7"
				if v.Default != "" && v.Default != "0" {
					val = v.Default
				}
				// --set splits at commas: a value holding one (a list) escapes them.
				args = append(args, "--set-string", fmt.Sprintf("%s.config.%s=%s", c.Name, deploy.ConfigKey(v), strings.ReplaceAll(val, ",", `\,`)))
				want[v.Name] = val
			}
			env := envOf(deployment(t, objects(t, render(t, args...)), c.Name).Spec.Template.Spec.Containers[0])
			// Variables of a setting that excludes the full rendering's: MSK's IAM instead of SCRAM.
			alternative := map[string][]string{
				"TIDEMARK_KAFKA_AWS_REGION": {"--set", "global.kafka.sasl.mechanism=AWS_MSK_IAM,global.kafka.sasl.awsRegion=eu-west-1"},
			}
			for _, v := range c.Vars {
				e, ok := env[v.Name]
				if alt, isAlt := alternative[v.Name]; isAlt {
					e, ok = envOf(deployment(t, objects(t, render(t, append(slices.Clone(args), alt...)...)), c.Name).Spec.Template.Spec.Containers[0])[v.Name]
				}
				target, internalURL := deploy.InternalURLs()[v.Name]
				switch {
				case !ok && internalURL && !slices.ContainsFunc(comps, func(o deploy.Component) bool { return o.Name == target }):
					// It names a deployable the mesh does not have: there is nothing to point it at.
				case !ok:
					t.Errorf("%s reads %s, which its container does not get", c.Name, v.Name)
				case want[v.Name] != "" && e.Value != want[v.Name]:
					t.Errorf("%s = %q, want %q from %s.config", v.Name, e.Value, want[v.Name], c.Name)
				}
			}
			for name := range env {
				if strings.HasPrefix(name, "TIDEMARK_") && !slices.ContainsFunc(c.Vars, func(v app.Var) bool { return v.Name == name }) {
					t.Errorf("%s's container gets %s, which it does not read", c.Name, name)
				}
			}
		})
	}
}
