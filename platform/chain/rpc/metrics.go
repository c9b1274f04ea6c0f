package rpc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/telemetry"
)

// Metrics counts every attempt of a client, retries included, in
// tidemark_rpc_requests_total{method,code} on reg (whose service label says which deployable
// asks): an Options.Observe. code is "ok" or how the attempt failed (Code).
func Metrics(reg prometheus.Registerer) func(method, code string) {
	requests := telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_rpc_requests_total",
		Help: "Solana JSON-RPC attempts, retries included, by method and how they ended: ok, http_<status>, a JSON-RPC code (-32004), timeout, decode or network.",
	}, []string{"method", "code"}))
	return func(method, code string) { requests.WithLabelValues(method, code).Inc() }
}
