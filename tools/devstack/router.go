package devstack

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/mesh"
)

// Route sends every request whose path starts with Prefix to Service. It is the same table as the
// chart's Ingress: one row per service path prefix.
type Route struct {
	Prefix  string
	Service string
	// Exact: only the path Prefix itself, not the paths under it.
	Exact bool
}

// Table is the routing table of the public edge: the registry's routes (platform/mesh), the same
// table make generate writes for the chart's Ingress (charts/tidemark/files/mesh.yaml).
func Table() []Route {
	var out []Route
	for _, r := range mesh.Routes() {
		out = append(out, Route{Prefix: r.Prefix, Service: r.Deployable, Exact: r.Exact})
	}
	return out
}

// Router is the edge: a reverse proxy choosing the upstream by path prefix.
type Router struct {
	routes  []Route
	proxies map[string]*httputil.ReverseProxy
	logger  *slog.Logger
}

// NewRouter proxies routes to the services' base URLs.
func NewRouter(routes []Route, services map[string]string, logger *slog.Logger) (*Router, error) {
	r := &Router{routes: routes, proxies: map[string]*httputil.ReverseProxy{}, logger: logger}
	for _, rt := range routes {
		if _, ok := r.proxies[rt.Service]; ok {
			continue
		}
		base, ok := services[rt.Service]
		if !ok {
			return nil, fmt.Errorf("route %s: service %s is not running", rt.Prefix, rt.Service)
		}
		u, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("service %s address %q: %w", rt.Service, base, err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.ErrorHandler = func(w http.ResponseWriter, req *http.Request, err error) {
			logger.Warn("upstream failed", "service", rt.Service, "path", req.URL.Path, "err", err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"success":false,"message":"upstream unavailable"}`))
		}
		r.proxies[rt.Service] = p
	}
	return r, nil
}

func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	best := -1
	for i, rt := range r.routes {
		match := strings.HasPrefix(req.URL.Path, rt.Prefix)
		if rt.Exact {
			match = req.URL.Path == rt.Prefix
		}
		if match && (best < 0 || len(rt.Prefix) > len(r.routes[best].Prefix)) {
			best = i
		}
	}
	if best < 0 {
		httpapi.WriteError(w, req, fault.Errorf(fault.NotFound, "not found"), r.logger)
		return
	}
	r.proxies[r.routes[best].Service].ServeHTTP(w, req)
}
