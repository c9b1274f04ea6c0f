package httpapi

import (
	"net/http"
	"net/http/httptest"
)

// CacheWaiting is how many requests wait for the computation of path (with its query) under way on
// its SharedCache route; 0 when none is under way.
func CacheWaiting(a *API, path string) int {
	cfg, ok := a.routeFor(httptest.NewRequest(http.MethodGet, path, nil), http.MethodGet)
	if !ok || cfg.cache == nil {
		return 0
	}
	c := cfg.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.inflight[path]; ok {
		return m.waiting
	}
	return 0
}
