package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestChartDefectsOfARealInstall: what a platform team ran into on a real install, each rendered
// as the cluster would get it.
func TestChartDefectsOfARealInstall(t *testing.T) {
	t.Run("a percentage budget stays a percentage", func(t *testing.T) {
		objs := objects(t, render(t, "--set", "market.replicas=4", "--set-string", "market.pdb.maxUnavailable=50%"))
		pdb := typed[policyv1.PodDisruptionBudget](t, find(objs, "PodDisruptionBudget", release+"-market"))
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "50%" {
			t.Errorf("maxUnavailable %v, want 50%%", pdb.Spec.MaxUnavailable)
		}
		if _, err := helm(t, "template", release, chartDir(t), "--set", "market.pdb.maxUnavailable=0"); err == nil {
			t.Error("a budget of 0, which blocks every drain, rendered")
		}
	})
	t.Run("the edge scales on what it has", func(t *testing.T) {
		objs := objects(t, render(t, append(productionValues(t), "--set", "ws.autoscaling.connections.enabled=true",
			"--set", "market.autoscaling.consumerLag.enabled=true", "--set", "ws.autoscaling.consumerLag.enabled=true")...))
		names := func(component string) []string {
			h := typed[autoscalingv2.HorizontalPodAutoscaler](t, find(objs, "HorizontalPodAutoscaler", release+"-"+component))
			var out []string
			for _, m := range h.Spec.Metrics {
				switch {
				case m.External != nil:
					out = append(out, "external "+m.External.Metric.Name)
				case m.Pods != nil:
					out = append(out, "pods "+m.Pods.Metric.Name)
				case m.Resource != nil:
					out = append(out, "resource "+string(m.Resource.Name))
				}
			}
			return out
		}
		if got := names("ws"); !slices.Equal(got, []string{"resource cpu", "pods ws_connections"}) {
			t.Errorf("ws scales on %v, want CPU and its connections (it emits no ingest lag)", got)
		}
		if got := names("market"); !slices.Contains(got, "external tidemark_ingest_lag") {
			t.Errorf("market scales on %v, want its consumer lag too", got)
		}
	})
	t.Run("more minimum than maximum replicas fails the render", func(t *testing.T) {
		_, err := helm(t, "template", release, chartDir(t), "--set",
			"market.autoscaling.enabled=true,market.autoscaling.minReplicas=5,market.autoscaling.maxReplicas=2")
		if err == nil || !strings.Contains(err.Error(), "minReplicas 5 is more than maxReplicas 2") {
			t.Errorf("minReplicas 5 over maxReplicas 2: %v", err)
		}
	})
	t.Run("traces reach the collector through the NetworkPolicies", func(t *testing.T) {
		objs := objects(t, render(t, productionValues(t)...))
		np := typed[networkingv1.NetworkPolicy](t, find(objs, "NetworkPolicy", release+"-market"))
		if !slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.IntValue() == 4318 })
		}) {
			t.Error("market's NetworkPolicy has no egress to the OTLP collector's port, with global.otlpEndpoint set")
		}
	})
	t.Run("no Ingress unless asked for", func(t *testing.T) {
		if ing := kinds(objects(t, render(t)), "Ingress"); len(ing) != 0 {
			t.Errorf("the defaults render %d Ingress, catching the API's paths on every host", len(ing))
		}
	})
	t.Run("the default image is the one make images tags", func(t *testing.T) {
		var chart struct {
			AppVersion  string `json:"appVersion"`
			KubeVersion string `json:"kubeVersion"`
		}
		b, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
		if err != nil || yaml.Unmarshal(b, &chart) != nil {
			t.Fatalf("Chart.yaml: %v", err)
		}
		image := deployment(t, objects(t, render(t)), "market").Spec.Template.Spec.Containers[0].Image
		if image != "tidemark/market:"+chart.AppVersion {
			t.Errorf("default image %s, want tidemark/market:%s", image, chart.AppVersion)
		}
		// make images stamps git's tags (v0.1.0), and the README builds and pushes that tag.
		readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
		if err != nil || !strings.HasPrefix(chart.AppVersion, "v") || !strings.Contains(string(readme), "make images VERSION="+chart.AppVersion) {
			t.Errorf("appVersion %s is not the tag the README's make images writes", chart.AppVersion)
		}
	})
	t.Run("names and the team's own objects, as charts let them be set", func(t *testing.T) {
		objs := objects(t, render(t, "--set", "fullnameOverride=api", "--set", "nameOverride=trades",
			"--set-json", `extraObjects=[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"{{ .Release.Name }}-extra"},"data":{"k":"v"}}]`))
		d := deploymentNamed(t, objs, "api-market")
		if d == nil || d.Labels["app.kubernetes.io/name"] != "trades" {
			t.Errorf("with fullnameOverride=api and nameOverride=trades: no Deployment api-market named trades")
		}
		if find(objs, "ConfigMap", release+"-extra") == nil {
			t.Error("extraObjects: no ConfigMap tidemark-extra (its name templated)")
		}
		d = deployment(t, objects(t, render(t, "--set", "user.strategy.rollingUpdate.maxSurge=2,user.strategy.rollingUpdate.maxUnavailable=0")), "user")
		if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxSurge.IntValue() != 2 || ru.MaxUnavailable.IntValue() != 0 || ru.MaxUnavailable.String() != "0" {
			t.Errorf("user's strategy %+v, want a rolling update of surge 2, none unavailable", d.Spec.Strategy)
		}
	})
	t.Run("GitOps renders the same objects twice with the team's page key", func(t *testing.T) {
		// Without a Secret of the team's, two renders differ (a new random key each time), which is
		// why the README sends GitOps users to existingSecret; with one, they are the same.
		if render(t) == render(t) {
			t.Error("two renders with a chart-made page key are the same: the README's GitOps advice is stale")
		}
		args := []string{"--set", "global.pageKey.existingSecret=tidemark-page-key"}
		first, second := render(t, args...), render(t, args...)
		if first != second {
			t.Errorf("two renders with global.pageKey.existingSecret differ at: %s", firstDiff(first, second))
		}
		if find(objects(t, first), "Secret", release+"-page-key") != nil {
			t.Error("a page key Secret rendered beside the team's")
		}
	})
	t.Run("init containers, sidecars and scrape relabelings", func(t *testing.T) {
		objs := objects(t, render(t, append(productionValues(t),
			"--set-json", `market.initContainers=[{"name":"wait","image":"busybox:1.37"}]`,
			"--set-json", `market.sidecars=[{"name":"proxy","image":"envoy:v1"}]`,
			"--set-json", `serviceMonitor.relabelings=[{"targetLabel":"cluster","replacement":"eu-1"}]`,
			"--set-json", `serviceMonitor.metricRelabelings=[{"sourceLabels":["__name__"],"regex":"go_gc_.*","action":"drop"}]`)...))
		pod := deployment(t, objs, "market").Spec.Template.Spec
		if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "wait" || len(pod.Containers) != 2 ||
			pod.Containers[0].Name != "market" || pod.Containers[1].Name != "proxy" {
			t.Errorf("market's pod: init %v, containers %v", pod.InitContainers, pod.Containers)
		}
		sm := find(objs, "ServiceMonitor", release+"-market")
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		ep, _ := eps[0].(map[string]any)
		if ep["relabelings"] == nil || ep["metricRelabelings"] == nil {
			t.Errorf("the ServiceMonitor's endpoint %v lacks the relabelings", ep)
		}
	})
	t.Run("helm test checks each deployable, through the NetworkPolicies", func(t *testing.T) {
		objs := objects(t, render(t, productionValues(t)...))
		pod := find(objs, "Pod", release+"-test")
		if pod == nil || pod.GetAnnotations()["helm.sh/hook"] != "test" {
			t.Fatalf("no helm test pod: %v", pod)
		}
		args := typed[corev1.Pod](t, pod).Spec.Containers[0].Args
		for _, want := range []string{"http://" + release + "-operator:9090/readyz", "http://" + release + "-stats:8080/openapi.json"} {
			if !slices.Contains(args, want) {
				t.Errorf("the test pod does not ask %s: %v", want, args)
			}
		}
		np := typed[networkingv1.NetworkPolicy](t, find(objs, "NetworkPolicy", release+"-stats"))
		if !slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
			return len(r.From) == 1 && r.From[0].PodSelector != nil && r.From[0].PodSelector.MatchLabels["app.kubernetes.io/component"] == "test" &&
				len(r.Ports) == 1 && r.Ports[0].Port.String() == "http"
		}) {
			t.Error("the test pod may not reach stats' public port")
		}
		if find(objects(t, render(t, "--set", "tests.enabled=false")), "Pod", release+"-test") != nil {
			t.Error("tests.enabled=false renders the test pod")
		}
	})
	t.Run("a CRD that goes with its release is drained first", func(t *testing.T) {
		if find(objects(t, render(t)), "Job", release+"-operator-drain") != nil {
			t.Error("a drain hook with crds.keep, which keeps the CRD and the jobs")
		}
		o := find(objects(t, render(t, "--set", "crds.keep=false")), "Job", release+"-operator-drain")
		if o == nil || o.GetAnnotations()["helm.sh/hook"] != "pre-delete" {
			t.Fatalf("crds.keep=false: no pre-delete drain hook: %v", o)
		}
		pod := typed[batchv1.Job](t, o).Spec.Template.Spec
		if pod.ServiceAccountName != release+"-operator" || !slices.Equal(pod.Containers[0].Args, []string{"drain", "-wait", "1m"}) {
			t.Errorf("the drain runs as %s with %v, want the operator's account and drain", pod.ServiceAccountName, pod.Containers[0].Args)
		}
	})
	t.Run("the cluster versions that honour preStop sleep", func(t *testing.T) {
		if _, err := helm(t, "template", release, chartDir(t), "--kube-version", "1.29.9"); err == nil {
			t.Error("rendered for Kubernetes 1.29, which drops the preStop sleep the pods rely on to drain")
		}
		if _, err := helm(t, "template", release, chartDir(t), "--kube-version", "1.30.0"); err != nil {
			t.Errorf("Kubernetes 1.30: %v", err)
		}
	})
}

// deploymentNamed is the Deployment named name, nil if none.
func deploymentNamed(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	o := find(objs, "Deployment", name)
	if o == nil {
		return nil
	}
	return typed[appsv1.Deployment](t, o)
}

// TestChartAsASubchart: an umbrella chart that depends on tidemark renders it with the umbrella's
// global values (keys tidemark does not know among them) and its own block of values, and the
// umbrella's global image settings reach tidemark's images.
func TestChartAsASubchart(t *testing.T) {
	dir := t.TempDir()
	umbrella := `apiVersion: v2
name: platform
version: 1.0.0
dependencies:
  - name: tidemark
    version: "*"
    repository: file://` + chartDir(t) + `
`
	values := `global:
  imageRegistry: registry.example.com
  storageClass: gp3
  image:
    registry: registry.example.com
  kafka:
    brokers: [kafka:9092]
tidemark:
  market:
    replicas: 3
`
	for name, body := range map[string]string{"Chart.yaml": umbrella, "values.yaml": values} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := helm(t, "dependency", "build", dir); err != nil {
		t.Fatalf("helm dependency build: %v\n%s", err, out)
	}
	out, err := helm(t, "template", "platform", dir, "--namespace", namespace)
	if err != nil {
		t.Fatalf("the umbrella chart: %v", err)
	}
	d := deploymentNamed(t, objects(t, out), "platform-tidemark-market")
	if d == nil || *d.Spec.Replicas != 3 || !strings.HasPrefix(d.Spec.Template.Spec.Containers[0].Image, "registry.example.com/") {
		t.Fatalf("the subchart's market: %+v", d)
	}
	// What tidemark does know stays checked, umbrella or not.
	if _, err := helm(t, "template", "platform", dir, "--set", "global.kafka.broker=kafka:9092"); err == nil ||
		!strings.Contains(err.Error(), "broker") {
		t.Errorf("a misspelt key of global.kafka: %v, want refused", err)
	}
}

// TestChartMSKIAM: with Amazon MSK's IAM access control the pods get the mechanism and the region,
// and no user Secret is asked for or referenced.
func TestChartMSKIAM(t *testing.T) {
	objs := objects(t, render(t, "--set", "global.kafka.tls.enabled=true,global.kafka.sasl.mechanism=AWS_MSK_IAM,global.kafka.sasl.awsRegion=eu-west-1"))
	env := envOf(deployment(t, objs, "market").Spec.Template.Spec.Containers[0])
	if env["TIDEMARK_KAFKA_SASL_MECHANISM"].Value != "AWS_MSK_IAM" || env["TIDEMARK_KAFKA_AWS_REGION"].Value != "eu-west-1" {
		t.Errorf("market's Kafka variables: %v", env)
	}
	if _, ok := env["TIDEMARK_KAFKA_SASL_USERNAME"]; ok {
		t.Error("a username from a Secret beside AWS_MSK_IAM")
	}
}
