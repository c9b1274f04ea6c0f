package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/tidemark/tidemark/platform/telemetry"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		level     slog.Level
		wantLines int
	}{
		{slog.LevelDebug, 3},
		{slog.LevelInfo, 2},
		{slog.LevelError, 1},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			var buf bytes.Buffer
			l := telemetry.NewLogger(&buf, tt.level).With("service", "market")
			l.Debug("d")
			l.Info("i", "k", 1)
			l.Error("e")
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != tt.wantLines {
				t.Fatalf("%d lines, want %d: %q", len(lines), tt.wantLines, buf.String())
			}
			for _, line := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("not JSON: %q", line)
				}
				if n := strings.Count(line, `"service":`); n != 1 {
					t.Errorf("the key service appears %d times in %s", n, line)
				}
				if m["service"] != "market" || m["msg"] == nil || m["level"] == nil || m["time"] == nil {
					t.Errorf("record = %v", m)
				}
			}
		})
	}
}

func TestNewTracingDisabled(t *testing.T) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	tr, err := telemetry.NewTracing(context.Background(), "market", "")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider.Tracer("t").Start(context.Background(), "op")
	if span.SpanContext().IsValid() {
		t.Error("disabled tracing produced a real span")
	}
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	fields := otel.GetTextMapPropagator().Fields()
	slices.Sort(fields)
	if strings.Join(fields, ",") != "baggage,traceparent,tracestate" {
		t.Errorf("global propagator fields = %v, want W3C trace context and baggage", fields)
	}
}

// collector is a minimal OTLP/HTTP receiver recording the paths it was sent to.
type collector struct {
	mu    sync.Mutex
	paths []string
	bytes int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.bytes += len(b)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func TestNewTracingExportsOverOTLPHTTP(t *testing.T) {
	var c collector
	srv := httptest.NewServer(&c)
	defer srv.Close()

	tr, err := telemetry.NewTracing(context.Background(), "market", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider.Tracer("t").Start(context.Background(), "GET /market/{symbol}/trades")
	if !span.SpanContext().IsValid() {
		t.Fatal("span is not recording")
	}
	span.End()
	// Shutdown flushes the batcher synchronously, so the export has happened when it returns.
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.paths) == 0 || c.paths[0] != "/v1/traces" || c.bytes == 0 {
		t.Errorf("collector got paths %v (%d bytes), want a POST to /v1/traces", c.paths, c.bytes)
	}
}

func TestNewTracingRejectsBadEndpoint(t *testing.T) {
	for _, ep := range []string{"collector:4318", "ftp://collector", "http://"} {
		if _, err := telemetry.NewTracing(context.Background(), "market", ep); err == nil {
			t.Errorf("NewTracing(%q) succeeded", ep)
		}
	}
}

func TestRegistryAndMetricsHandler(t *testing.T) {
	reg := telemetry.NewRegistry()
	srv := httptest.NewServer(telemetry.MetricsHandler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "go_gc_gomemlimit_bytes"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// The live heap is what a replica needs: after a collection it is a positive number of bytes.
	runtime.GC()
	live, err := telemetry.Sum(reg, "go_gc_heap_live_bytes", nil)
	if err != nil || live <= 0 {
		t.Errorf("go_gc_heap_live_bytes = %v, %v; want a positive live heap", live, err)
	}
}
