package deploy_test

import (
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	authority "github.com/tidemark/tidemark/services/authority/service"
	txhttp "github.com/tidemark/tidemark/services/tx/http"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	wsservice "github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/tools/devstack"
)

// TestIngressRoutesEveryDocumentedPath: every operation of api/openapi.yaml, as a request, is routed
// by the rendered Ingress (Kubernetes' path matching) to the Service of a deployable that serves it,
// the services started through the kit as the dev stack runs them.
func TestIngressRoutesEveryDocumentedPath(t *testing.T) {
	stack := kittest.Start(t, pgSrv, kittest.Options{}, routedServices()...)
	objs := objects(t, render(t, "--set", "ingress.enabled=true"))
	var paths []ingressPath
	for _, o := range kinds(objs, "Ingress") {
		ing := typed[networkingv1.Ingress](t, o)
		for _, r := range ing.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				svc := find(objs, "Service", p.Backend.Service.Name)
				if svc == nil {
					t.Fatalf("Ingress %s routes %s to Service %s, which is not rendered", ing.Name, p.Path, p.Backend.Service.Name)
				}
				paths = append(paths, ingressPath{path: p.Path, exact: *p.PathType == networkingv1.PathTypeExact,
					component: svc.GetLabels()["app.kubernetes.io/component"]})
			}
		}
	}
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	// The tx service is no kit service either: its routes as it registers them (registering builds
	// nothing, so no builder is needed).
	txRoutes := httpapi.New(httpapi.Options{})
	txhttp.Routes(txRoutes, nil)
	n := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		for method := range doc.Paths.Value(path).Operations() {
			req := httptest.NewRequest(method, samplePath(path), nil)
			p, ok := route(paths, req.URL.Path)
			if !ok {
				t.Errorf("%s %s: no Ingress path routes %s", method, path, req.URL.Path)
				continue
			}
			if p.component == wsservice.Name { // the edge is no kit service: it serves exactly its prefixes
				if !slices.Contains(wsservice.Prefixes(), req.URL.Path) {
					t.Errorf("%s %s: routed to the WebSocket edge (Ingress path %s), which does not serve it", method, path, p.path)
				}
			} else if p.component == txservice.Name {
				if !txRoutes.Serves(req) {
					t.Errorf("%s %s: routed to the tx service (Ingress path %s), which does not serve it", method, path, p.path)
				}
			} else if !stack.Instance(t, p.component).Serves(req) {
				t.Errorf("%s %s: routed to %s (Ingress path %s), which does not serve it", method, path, p.component, p.path)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("the document has no operation")
	}
	t.Logf("%d operations routed", n)
}

type ingressPath struct {
	path      string
	exact     bool
	component string
}

// route is the Ingress path that takes urlPath, as Kubernetes matches them: an Exact path only
// itself, a Prefix path the paths whose elements start with its elements; the longest wins, and
// Exact over Prefix.
func route(paths []ingressPath, urlPath string) (ingressPath, bool) {
	best, found := ingressPath{}, false
	elems := strings.Split(strings.Trim(urlPath, "/"), "/")
	for _, p := range paths {
		var match bool
		if p.exact {
			match = urlPath == p.path
		} else {
			pe := strings.Split(strings.Trim(p.path, "/"), "/")
			match = len(pe) <= len(elems)
			for i := 0; match && i < len(pe); i++ {
				match = pe[i] == elems[i] || pe[i] == ""
			}
		}
		if match && (!found || len(p.path) > len(best.path) || (len(p.path) == len(best.path) && p.exact)) {
			best, found = p, true
		}
	}
	return best, found
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// samples are values of the document's path parameters that the services' routes accept.
var samples = map[string]string{
	"symbol": "SOL-PERP", "accountId": kittest.Key(2), "authorityId": kittest.Key(2), "authority": kittest.Key(2),
	"year": "2026", "month": "11", "day": "19", "resolution": "60", "marketFilter": "perp", "orderId": "1",
	"days": "7",
}

func samplePath(path string) string {
	return pathParam.ReplaceAllStringFunc(path, func(m string) string {
		v, ok := samples[m[1:len(m)-1]]
		if !ok {
			v = "x"
		}
		return url.PathEscape(v)
	})
}

// routedServices are the dev stack's services, the authority service configured as in a cluster:
// the kit validates its configuration, and its namespace and bucket are only reached by an export
// request, which routing never makes.
func routedServices() []kit.Service {
	var out []kit.Service
	for _, svc := range devstack.Services() {
		switch {
		case len(svc.Prefixes) == 0:
			continue // the indexer: nothing of the API is routed to it
		case svc.Name == "authority":
			svc = authority.Service(authority.Config{Namespace: "tidemark", S3: objstore.S3Config{
				Endpoint: "127.0.0.1:9", Bucket: "exports", AccessKey: "routes-test", SecretKey: "routes-test"}})
		}
		out = append(out, svc)
	}
	return out
}
