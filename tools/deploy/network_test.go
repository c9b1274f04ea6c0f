package deploy_test

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/tools/deploy"
)

// TestNetworkPoliciesReachOnlyPeers: in the production-like rendering, each deployable's
// NetworkPolicy lets it reach the internal port of exactly the deployables whose internal routes it
// reads (the registry's upstreams) and, for one that reads the export streams, of those that serve
// them; with meshEgress, of every deployable. Pods are matched by their rendered labels, as the
// cluster's network plugin matches them.
func TestNetworkPoliciesReachOnlyPeers(t *testing.T) {
	comps, err := deploy.Mesh()
	if err != nil {
		t.Fatal(err)
	}
	var exporters, all []string
	for _, c := range comps {
		all = append(all, c.Name)
		if len(c.Exports) > 0 {
			exporters = append(exporters, c.Name)
		}
	}
	for _, tc := range []struct {
		name  string
		extra []string
		want  func(deploy.Component) []string
	}{
		{"peers", nil, func(c deploy.Component) []string {
			want := c.Upstreams()
			if slices.ContainsFunc(c.Vars, func(v app.Var) bool { return v.Name == "TIDEMARK_EXPORT_SOURCES" }) {
				want = append(want, exporters...)
			}
			return want
		}},
		{"meshEgress", meshEgressEverywhere(comps), func(deploy.Component) []string { return all }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(t, render(t, append(productionValues(t), tc.extra...)...))
			pods := map[string]labels.Set{} // deployable -> its pods' labels
			for _, c := range comps {
				pods[c.Name] = labels.Set(deployment(t, objs, c.Name).Spec.Template.Labels)
			}
			for _, c := range comps {
				o := find(objs, "NetworkPolicy", release+"-"+c.Name)
				if o == nil {
					t.Fatalf("no NetworkPolicy of %s", c.Name)
				}
				np := typed[networkingv1.NetworkPolicy](t, o)
				var got []string
				for _, peer := range comps {
					if peer.Name != c.Name && reachesInternal(t, np, pods[peer.Name]) {
						got = append(got, peer.Name)
					}
				}
				want := slices.DeleteFunc(slices.Clone(tc.want(c)), func(n string) bool { return n == c.Name })
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(slices.Compact(want), got) {
					t.Errorf("%s reaches the internal ports of %v, want %v", c.Name, got, want)
				}
			}
		})
	}
}

// meshEgressEverywhere sets networkPolicy.meshEgress in every deployable's block.
func meshEgressEverywhere(comps []deploy.Component) []string {
	var out []string
	for _, c := range comps {
		out = append(out, "--set", c.Name+".networkPolicy.meshEgress=true")
	}
	return out
}

// reachesInternal reports whether an egress rule of np admits pods with labels pod on the internal
// port (by its name, as the chart writes it), pods of the policy's own namespace.
func reachesInternal(t *testing.T, np *networkingv1.NetworkPolicy, pod labels.Set) bool {
	t.Helper()
	for _, rule := range np.Spec.Egress {
		if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Port != nil && p.Port.String() == "http-internal"
		}) {
			continue
		}
		for _, peer := range rule.To {
			if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err != nil {
				t.Fatalf("%s: %v", np.Name, err)
			}
			if sel.Matches(pod) {
				return true
			}
		}
	}
	return false
}
