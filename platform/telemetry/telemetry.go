// Package telemetry builds the three signals every tidemark process emits: JSON logs through log/slog,
// traces through OpenTelemetry (exported over OTLP/HTTP only when an endpoint is configured) and
// Prometheus metrics from a registry the process owns.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// NewLogger returns a JSON logger writing to w at level and above. It names no service: each service
// the process runs adds its own "service" attribute (see kit), so that a line carries the key once
// even when several services share one process and one logger.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// Tracing is the process' tracer provider and the function that flushes and stops it.
type Tracing struct {
	Provider trace.TracerProvider
	Shutdown func(context.Context) error
}

// NewTracing returns a provider exporting spans over OTLP/HTTP to otlpEndpoint, or a no-op provider when
// otlpEndpoint is empty. otlpEndpoint is a URL ("http://collector:4318"; https means TLS); without a
// path, spans go to the standard /v1/traces. Either way it installs the W3C trace-context and baggage
// propagator as otel's global propagator, which the HTTP and Kafka code use to carry trace context.
// The provider is not made global: callers pass it to what they build.
func NewTracing(ctx context.Context, service, otlpEndpoint string) (*Tracing, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if otlpEndpoint == "" {
		return &Tracing{Provider: noop.NewTracerProvider(), Shutdown: func(context.Context) error { return nil }}, nil
	}
	endpoint, err := traceEndpoint(otlpEndpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("create otlp trace exporter for %s: %w", endpoint, err)
	}
	res, err := resource.New(ctx,
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service)),
	)
	if err != nil {
		return nil, fmt.Errorf("build trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Shutdown: tp.Shutdown}, nil
}

// traceEndpoint validates an OTLP base URL and points it at the traces path, the way the standard
// OTEL_EXPORTER_OTLP_ENDPOINT variable is read.
func traceEndpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("otlp endpoint %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("otlp endpoint %q: want an http or https URL such as http://collector:4318", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// NewRegistry returns a registry holding the Go runtime (GoCollector) and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(GoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// GoCollector is the Go runtime's collector of every deployable: the client's defaults and the
// runtime's live heap (go_gc_heap_live_bytes, what the last collection kept). A process's resident
// memory under GOGC=400 grows towards its soft limit whatever it needs, so the live heap is what
// says how much memory a replica needs.
func GoCollector() prometheus.Collector {
	return collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}))
}

// Register registers c on reg and returns it, or returns the identical collector reg already holds
// (two listeners of one service register the same request metrics). A collector that clashes with a
// different one is a wiring bug and panics, as prometheus.MustRegister does. A nil reg registers
// nothing.
//
// It is the one way tidemark code registers metrics. Several services share one registry in the dev
// stack: each registers through its own prometheus.WrapRegistererWith(service=<name>), so their
// collectors differ by that label and never collide.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("telemetry: register metrics: %v", err))
}

// ServiceRegisterer is reg with every metric registered through it labelled service=name.
func ServiceRegisterer(reg prometheus.Registerer, name string) prometheus.Registerer {
	if reg == nil {
		return nil
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"service": name}, reg)
}

// MetricsHandler serves reg in the Prometheus exposition formats, counting its own scrapes in reg.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
}
