package mesh_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/mesh"
)

func TestRegistryIsConsistent(t *testing.T) {
	if err := mesh.Check(); err != nil {
		t.Fatal(err)
	}
	ws, ok := mesh.Lookup("ws")
	if !ok || !slices.Equal(ws.Upstreams(), []string{"market", "notify", "stats"}) {
		t.Errorf("ws reads the internal routes of %v, want market, notify, stats", ws.Upstreams())
	}
	// The variables the chart and the edge agree on, named once by the registry.
	for upstream, want := range map[string]string{"market": "WS_MARKET_URL", "notify": "WS_NOTIFY_URL", "stats": "WS_STATS_URL"} {
		if got := ws.UpstreamVariable(upstream); got != want {
			t.Errorf("ws's variable for %s is %s, want %s", upstream, got, want)
		}
	}
	if s, ok := mesh.Server(mesh.EdgePricing); !ok || s.Name != "stats" {
		t.Errorf("%s is served by %q", mesh.EdgePricing, s.Name)
	}
	// Every topic of events is read or written by some deployable: a topic nothing uses is a
	// registry line missing.
	for _, tp := range events.Topics() {
		if !slices.Contains(mesh.Topics(), tp.Name) {
			t.Errorf("topic %s: no deployable consumes or publishes it", tp.Name)
		}
	}
}

// TestRoutesAreDocumented: every public route the registry declares is documented in
// api/openapi.yaml, and every documented path is routed to a deployable by the registry. (The
// kit's contract walk proves each documented operation is served.)
func TestRoutesAreDocumented(t *testing.T) {
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	paths := doc.Paths.InMatchingOrder()
	routes := mesh.Routes()
	for _, r := range routes {
		n := 0
		for _, p := range paths {
			if matches(r, p) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s routes %s, which api/openapi.yaml documents no path of", r.Deployable, r.Prefix)
		}
	}
	for _, p := range paths {
		var to []string
		for _, r := range routes {
			if matches(r, p) {
				to = append(to, r.Deployable)
			}
		}
		if len(to) != 1 {
			t.Errorf("documented path %s is routed to %v, want exactly one deployable", p, to)
		}
	}
}

func matches(r mesh.Route, path string) bool {
	if r.Exact {
		return path == r.Prefix
	}
	return strings.HasPrefix(path, r.Prefix)
}

// TestACLs: a deployable's Kafka user is given what its registry row says it does, and nothing for
// what it does not: the edge reads without a group, the operator touches no topic.
func TestACLs(t *testing.T) {
	has := func(acls []kafka.ACL, resource, name, op string) bool {
		return slices.ContainsFunc(acls, func(a kafka.ACL) bool {
			return a.Resource == resource && a.Name == name && slices.Contains(a.Operations, op)
		})
	}
	market, _ := mesh.Lookup("market")
	for _, want := range []struct{ resource, name, op string }{
		{"topic", events.TopicFills, "Read"}, {"group", "market", "Read"},
		{"topic", events.DLQTopic(events.TopicFills), "Write"}, {"topic", events.TopicEdgeCandles, "Write"},
	} {
		if !has(market.ACLs(), want.resource, want.name, want.op) {
			t.Errorf("market lacks %s on %s %s", want.op, want.resource, want.name)
		}
	}
	if has(market.ACLs(), "topic", events.TopicOrders, "Read") || has(market.ACLs(), "topic", events.TopicFills, "Write") {
		t.Error("market may read orders or write fills")
	}
	ws, _ := mesh.Lookup("ws")
	if !has(ws.ACLs(), "topic", events.TopicEdgeCandles, "Read") || slices.ContainsFunc(ws.ACLs(), func(a kafka.ACL) bool { return a.Resource == "group" }) {
		t.Errorf("ws: %+v", ws.ACLs())
	}
	if op, _ := mesh.Lookup("operator"); len(op.ACLs()) != 0 {
		t.Errorf("the operator: %+v", op.ACLs())
	}
}
