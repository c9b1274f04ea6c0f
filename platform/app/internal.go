package app

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/telemetry"
)

// readiness is the /readyz body.
type readiness struct {
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons,omitempty"`
}

// InternalMux serves the internal port: /healthz answers 200 "ok" while the process runs; /readyz
// answers 200 {"ready":true} when every ready func returns nil, else 503 {"ready":false,"reasons":[...]}
// with each failing func's message; /metrics exposes reg. Services add their internal endpoints
// (export streaming) to the returned mux.
func InternalMux(reg *prometheus.Registry, ready ...func() error) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		body := readiness{Ready: true}
		for _, f := range ready {
			if err := f(); err != nil {
				body.Ready = false
				body.Reasons = append(body.Reasons, err.Error())
			}
		}
		status := http.StatusOK
		if !body.Ready {
			status = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	})
	mux.Handle("GET /metrics", telemetry.MetricsHandler(reg))
	return mux
}
