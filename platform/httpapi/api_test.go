package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

func TestStatusOf(t *testing.T) {
	tests := []struct {
		code fault.Code
		want int
	}{
		{fault.Invalid, http.StatusBadRequest},
		{fault.Unauthorized, http.StatusUnauthorized},
		{fault.NotFound, http.StatusNotFound},
		{fault.Conflict, http.StatusConflict},
		{httpapi.MethodNotAllowed, http.StatusMethodNotAllowed},
		{fault.Internal, http.StatusInternalServerError},
		{fault.Code("bogus"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		if got := httpapi.StatusOf(tt.code); got != tt.want {
			t.Errorf("StatusOf(%q) = %d, want %d", tt.code, got, tt.want)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantMsg    string
		wantLogged bool // logged at ERROR as an internal error
	}{
		{"invalid", fault.Errorf(fault.Invalid, "limit must be an integer between %d and %d", 1, 50), 400, "limit must be an integer between 1 and 50", false},
		{"not found", fault.Errorf(fault.NotFound, "market %s not found", "XYZ-PERP"), 404, "market XYZ-PERP not found", false},
		{"unauthorized", fault.Errorf(fault.Unauthorized, "Unauthorized"), 401, "Unauthorized", false},
		{"conflict", fault.Errorf(fault.Conflict, "export already exists"), 409, "export already exists", false},
		{"wrapped invalid", fmt.Errorf("parse query: %w", fault.Errorf(fault.Invalid, "bad startTs")), 400, "bad startTs", false},
		{"internal code hides message", fault.Errorf(fault.Internal, "pg: password authentication failed"), 500, "internal error", true},
		{"plain error is internal", errors.New("connection refused"), 500, "internal error", true},
		{"wrapped plain error", fmt.Errorf("query trades: %w", errors.New("boom")), 500, "internal error", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs kittest.Logs
			a := httpapi.New(httpapi.Options{Logger: newLogger(&logs)})
			a.Handle(http.MethodGet, "/things/{id}", func(*http.Request) (any, error) { return nil, tt.err },
				httpapi.CacheControl("public, max-age=60"))
			srv := mustServe(t, a)

			r := mustGet(t, srv.URL+"/things/1")
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", r.status, tt.wantStatus, r.body)
			}
			success, msg := errorEnvelope(t, r)
			if success || msg != tt.wantMsg {
				t.Errorf("body = success %v message %q, want false %q", success, msg, tt.wantMsg)
			}
			if got := r.header.Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store (route option applies to successes only)", got)
			}
			kittest.Eventually(t, 5*time.Second, "access log", func() bool { return logs.Count(t, map[string]any{"msg": "http request"}) == 1 })
			errLines := logs.Count(t, map[string]any{"level": "ERROR"})
			if tt.wantLogged {
				if errLines != 1 {
					t.Errorf("%d ERROR lines, want exactly 1", errLines)
				}
				if n := logs.Count(t, map[string]any{"level": "ERROR", "route": "/things/{id}", "error": tt.err.Error()}); n != 1 {
					t.Errorf("internal error not logged with route and cause: %v", logs.Lines(t))
				}
			} else if errLines != 0 {
				t.Errorf("client error logged at ERROR: %v", logs.Lines(t))
			}
		})
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	a := httpapi.New(httpapi.Options{})
	ok := func(*http.Request) (any, error) { return map[string]bool{"ok": true}, nil }
	a.Handle(http.MethodGet, "/market/{symbol}/trades", ok)
	a.Handle(http.MethodPost, "/market/{symbol}/trades", ok)
	srv := mustServe(t, a)

	tests := []struct {
		name, method, path string
		wantStatus         int
		wantMsg            string
		wantAllow          []string
	}{
		{"unknown path", http.MethodGet, "/nope", 404, "not found", nil},
		{"unknown nested path", http.MethodGet, "/market/SOL-PERP/trades/extra/bits", 404, "not found", nil},
		{"wrong method", http.MethodDelete, "/market/SOL-PERP/trades", 405, "method not allowed", []string{"GET", "POST"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustDo(t, tt.method, srv.URL+tt.path)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d", r.status, tt.wantStatus)
			}
			success, msg := errorEnvelope(t, r)
			if success || msg != tt.wantMsg {
				t.Errorf("body = %s", r.body)
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q", got)
			}
			if tt.wantAllow != nil {
				got := r.header.Values("Allow")
				if fmt.Sprint(got) != fmt.Sprint(tt.wantAllow) {
					t.Errorf("Allow = %v, want %v", got, tt.wantAllow)
				}
			}
		})
	}
}

func TestPanicRecovery(t *testing.T) {
	var logs kittest.Logs
	a := httpapi.New(httpapi.Options{Logger: newLogger(&logs)})
	a.Handle(http.MethodGet, "/boom", func(*http.Request) (any, error) { panic("kaboom") })
	a.Handle(http.MethodGet, "/fine", func(*http.Request) (any, error) { return map[string]string{"status": "fine"}, nil })
	srv := mustServe(t, a)

	r := mustGet(t, srv.URL+"/boom")
	if r.status != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", r.status)
	}
	if success, msg := errorEnvelope(t, r); success || msg != "internal error" {
		t.Errorf("body = %s", r.body)
	}
	// The same server keeps serving after the panic.
	for range 3 {
		if r := mustGet(t, srv.URL+"/fine"); r.status != http.StatusOK || r.body != `{"status":"fine"}`+"\n" {
			t.Fatalf("after panic: %d %s", r.status, r.body)
		}
	}
	kittest.Eventually(t, 5*time.Second, "access log of the panic", func() bool {
		return logs.Count(t, map[string]any{"msg": "http request", "route": "/boom", "status": float64(500)}) == 1
	})
	panics := 0
	for _, l := range logs.Lines(t) {
		if l["msg"] == "panic serving request" {
			panics++
			if l["panic"] != "kaboom" || l["route"] != "/boom" {
				t.Errorf("panic log = %v", l)
			}
			if s, _ := l["stack"].(string); s == "" {
				t.Errorf("panic log lacks stack")
			}
		}
	}
	if panics != 1 {
		t.Errorf("panic logged %d times, want 1", panics)
	}
}

func TestSuccessResponses(t *testing.T) {
	type rec struct {
		Ts int64 `json:"ts"`
	}
	a := httpapi.New(httpapi.Options{})
	a.Handle(http.MethodGet, "/empty", func(*http.Request) (any, error) {
		return httpapi.NewList[rec](nil, httpapi.RollingMeta{}), nil
	})
	a.Handle(http.MethodGet, "/candles", func(*http.Request) (any, error) {
		return httpapi.NewList([]rec{{Ts: 1}, {Ts: 2}}, nil), nil
	}, httpapi.CacheControl("public, max-age=60"))
	a.Handle(http.MethodPost, "/nothing", func(*http.Request) (any, error) { return nil, nil })
	a.Handle(http.MethodGet, "/openapi.json", httpapi.ServeOpenAPI([]byte(`{"openapi":"3.0.3"}`)))
	srv := mustServe(t, a)

	tests := []struct {
		name, method, path  string
		wantStatus          int
		wantBody, wantCache string
	}{
		{"nil records are an array, nil next page is null", http.MethodGet, "/empty", 200, `{"success":true,"records":[],"meta":{"nextPage":null}}` + "\n", "no-cache"},
		{"no meta omitted, cache option", http.MethodGet, "/candles", 200, `{"success":true,"records":[{"ts":1},{"ts":2}]}` + "\n", "public, max-age=60"},
		{"nil result", http.MethodPost, "/nothing", 204, "", "no-cache"},
		{"openapi", http.MethodGet, "/openapi.json", 200, `{"openapi":"3.0.3"}`, "no-cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustDo(t, tt.method, srv.URL+tt.path)
			if r.status != tt.wantStatus || r.body != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", r.status, r.body, tt.wantStatus, tt.wantBody)
			}
			if got := r.header.Get("Cache-Control"); got != tt.wantCache {
				t.Errorf("Cache-Control = %q, want %q", got, tt.wantCache)
			}
			if tt.wantStatus == 200 && r.header.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", r.header.Get("Content-Type"))
			}
		})
	}
}

func TestAccessLogMetricsAndSpans(t *testing.T) {
	var logs kittest.Logs
	reg := prometheus.NewRegistry()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	a := httpapi.New(httpapi.Options{Logger: newLogger(&logs), Registerer: reg, TracerProvider: tp})
	a.Handle(http.MethodGet, "/market/{symbol}/trades", func(r *http.Request) (any, error) {
		return map[string]string{"symbol": httpapi.PathVar(r, "symbol")}, nil
	})
	srv := mustServe(t, a)

	for _, sym := range []string{"SOL-PERP", "BTC-PERP", "ETH-PERP"} {
		if r := mustGet(t, srv.URL+"/market/"+sym+"/trades"); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
	}
	mustGet(t, srv.URL+"/random/path/1")

	// Access log: one line per request, with the template and the raw path.
	kittest.Eventually(t, 5*time.Second, "access logs", func() bool { return logs.Count(t, map[string]any{"msg": "http request"}) == 4 })
	for _, l := range logs.Lines(t) {
		if l["msg"] != "http request" || l["path"] != "/market/SOL-PERP/trades" {
			continue
		}
		if l["level"] != "INFO" || l["method"] != "GET" || l["route"] != "/market/{symbol}/trades" || l["status"] != float64(200) {
			t.Errorf("access log = %v", l)
		}
		if b, _ := l["bytes"].(float64); b != float64(len(`{"symbol":"SOL-PERP"}`+"\n")) {
			t.Errorf("bytes = %v", l["bytes"])
		}
		if _, ok := l["duration_ms"].(float64); !ok {
			t.Errorf("duration_ms missing: %v", l)
		}
	}
	if n := logs.Count(t, map[string]any{"msg": "http request", "route": "unmatched", "status": float64(404)}); n != 1 {
		t.Errorf("404 access log lines = %d", n)
	}

	// Metrics: labelled by template, so three symbols make one series.
	kittest.Eventually(t, 5*time.Second, "histogram samples", func() bool {
		return histogramCount(t, reg, map[string]string{"route": "/market/{symbol}/trades", "method": "GET", "code": "200"}) == 3
	})
	if n := histogramCount(t, reg, map[string]string{"route": "unmatched", "method": "GET", "code": "404"}); n != 1 {
		t.Errorf("unmatched count = %d", n)
	}
	if n := seriesCount(t, reg); n != 2 {
		t.Errorf("%d series, want 2 (route label must be the template)", n)
	}

	// Spans: one server span per request named by its route template.
	kittest.Eventually(t, 5*time.Second, "spans", func() bool { return len(spans.Ended()) == 4 })
	names := map[string]int{}
	for _, s := range spans.Ended() {
		names[s.Name()]++
	}
	if names["GET /market/{symbol}/trades"] != 3 || names["GET"] != 1 {
		t.Errorf("span names = %v", names)
	}
}

func TestSharedRegistry(t *testing.T) {
	// The dev stack runs every service in one process with one registry: a second API on it must
	// not panic, and its requests must land in the one histogram the registry exports, not in a
	// collector nobody gathers.
	reg := prometheus.NewRegistry()
	for _, path := range []string{"/a", "/b"} {
		a := httpapi.New(httpapi.Options{Registerer: reg})
		a.Handle(http.MethodGet, path, func(*http.Request) (any, error) { return "ok", nil })
		srv := mustServe(t, a)
		if r := mustGet(t, srv.URL+path); r.status != http.StatusOK {
			t.Fatalf("GET %s = %d", path, r.status)
		}
	}
	for _, route := range []string{"/a", "/b"} {
		kittest.Eventually(t, 5*time.Second, "a sample of "+route, func() bool {
			return histogramCount(t, reg, map[string]string{"route": route, "method": "GET", "code": "200"}) == 1
		})
	}
	if n := seriesCount(t, reg); n != 2 {
		t.Errorf("%d series, want 2 (one per API's route)", n)
	}
}

func histogramCount(tb testing.TB, reg *prometheus.Registry, labels map[string]string) uint64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tidemark_http_request_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if fmt.Sprint(got) == fmt.Sprint(labels) {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

func seriesCount(tb testing.TB, reg *prometheus.Registry) int {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tidemark_http_request_seconds" {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// streamThenPanic starts a response and then panics, as a CSV export failing halfway would.
type streamThenPanic struct{}

func (streamThenPanic) Respond(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("\"ts\"\n"))
	http.NewResponseController(w).Flush()
	panic("halfway")
}

func TestPanicAfterResponseStarted(t *testing.T) {
	var logs kittest.Logs
	a := httpapi.New(httpapi.Options{Logger: newLogger(&logs)})
	a.Handle(http.MethodGet, "/export", func(*http.Request) (any, error) { return streamThenPanic{}, nil })
	a.Handle(http.MethodGet, "/fine", func(*http.Request) (any, error) { return "fine", nil })
	srv := mustServe(t, a)

	resp, err := http.Get(srv.URL + "/export")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Error("a response cut by a panic read as complete")
	}
	if r := mustGet(t, srv.URL+"/fine"); r.status != http.StatusOK {
		t.Fatalf("after panic: %d", r.status)
	}
	kittest.Eventually(t, 5*time.Second, "access log of the aborted export", func() bool {
		return logs.Count(t, map[string]any{"msg": "http request", "route": "/export", "status": float64(500)}) == 1
	})
	if n := logs.Count(t, map[string]any{"msg": "panic serving request"}); n != 1 {
		t.Errorf("panic logged %d times", n)
	}
}

func TestDecodeJSON(t *testing.T) {
	type inner struct {
		BuilderIdx *int `json:"builderIdx"`
	}
	type Embedded struct {
		Memo string `json:"memo"`
	}
	type body struct {
		Embedded
		UserPublicKeys []string          `json:"userPublicKeys"`
		Params         *inner            `json:"params"`
		Orders         []inner           `json:"orders"`
		Labels         map[string]string `json:"labels"`
		When           *time.Time        `json:"when"` // decodes itself
		Count          int               // no tag: its Go name
	}
	a := httpapi.New(httpapi.Options{})
	a.Handle(http.MethodPost, "/exports", func(r *http.Request) (any, error) {
		var b body
		if err := httpapi.DecodeJSON(r, 256, &b); err != nil {
			return nil, err
		}
		return b, nil
	})
	srv := mustServe(t, a)

	tests := []struct {
		name, body string
		wantStatus int
		wantMsg    string
	}{
		{"valid", `{"userPublicKeys":["a"]}`, 200, ""},
		{"empty", ``, 400, "request body is empty"},
		{"unknown field", `{"nope":1}`, 400, `invalid JSON body: json: unknown field "nope"`},
		{"trailing data", `{"userPublicKeys":[]} {}`, 400, "invalid JSON body: unexpected data after the JSON value"},
		{"too large", `{"userPublicKeys":["` + strings.Repeat("x", 300) + `"]}`, 400, "request body exceeds 256 bytes"},
		{"every kind of property", `{"memo":"m","userPublicKeys":["a"],"params":{"builderIdx":1},"orders":[{"builderIdx":2}],"labels":{"Any":"x","ANY":"y"},"when":"2026-01-02T03:04:05Z","Count":3}`, 200, ""},
		{"another case", `{"UserPublicKeys":["a"]}`, 400, `invalid JSON body: unknown property "UserPublicKeys" (property names are case-sensitive: "userPublicKeys")`},
		{"another case, nested", `{"params":{"BuilderIdx":1}}`, 400, `invalid JSON body: unknown property "params.BuilderIdx" (property names are case-sensitive: "params.builderIdx")`},
		{"another case, in an array", `{"orders":[{},{"builderidx":1}]}`, 400, `invalid JSON body: unknown property "orders[1].builderidx" (property names are case-sensitive: "orders[1].builderIdx")`},
		{"another case, embedded", `{"MEMO":"m"}`, 400, `invalid JSON body: unknown property "MEMO" (property names are case-sensitive: "memo")`},
		{"another case, untagged", `{"count":3}`, 400, `invalid JSON body: unknown property "count" (property names are case-sensitive: "Count")`},
		{"twice", `{"userPublicKeys":["a"],"userPublicKeys":["b"]}`, 400, `invalid JSON body: property "userPublicKeys" appears twice`},
		{"twice, nested", `{"params":{"builderIdx":1,"builderIdx":2}}`, 400, `invalid JSON body: property "params.builderIdx" appears twice`},
		{"twice in a map", `{"labels":{"a":"x","a":"y"}}`, 400, `invalid JSON body: property "labels.a" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/exports", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tt.wantStatus, raw)
			}
			if tt.wantMsg != "" {
				if _, msg := errorEnvelope(t, response{body: string(raw)}); msg != tt.wantMsg {
					t.Errorf("message = %q, want %q", msg, tt.wantMsg)
				}
			}
		})
	}
}

// ErrorMessage reads back what WriteError writes, and nothing else.
func TestErrorMessage(t *testing.T) {
	rec := httptest.NewRecorder()
	httpapi.WriteError(rec, httptest.NewRequest(http.MethodGet, "/x", nil), fault.Errorf(fault.Invalid, `bad "from"`), nil)
	if msg, ok := httpapi.ErrorMessage(rec.Body.Bytes()); !ok || msg != `bad "from"` {
		t.Errorf("ErrorMessage(WriteError) = %q, %v", msg, ok)
	}
	for _, body := range []string{``, `oops`, `{"success":true,"message":"x"}`, `{"success":false}`, `{"records":[]}`} {
		if msg, ok := httpapi.ErrorMessage([]byte(body)); ok {
			t.Errorf("ErrorMessage(%s) = %q, true", body, msg)
		}
	}
}

// TestBareServerFailures: a route with BareServerFailures answers every server failure 500
// {"success":false} (an unreachable database and a panic included), still logs internal errors, and
// answers client errors as every route does.
func TestBareServerFailures(t *testing.T) {
	unreachable := errors.New("dial tcp: connection refused")
	tests := []struct {
		name       string
		f          httpapi.Func
		wantStatus int
		wantBody   string
		wantLogged bool
	}{
		{"internal", func(*http.Request) (any, error) { return nil, errors.New("boom") }, 500, `{"success":false}` + "\n", true},
		{"internal code", func(*http.Request) (any, error) { return nil, fault.Errorf(fault.Internal, "secret") }, 500, `{"success":false}` + "\n", true},
		{"database unreachable", func(*http.Request) (any, error) { return nil, unreachable }, 500, `{"success":false}` + "\n", false},
		{"panic", func(*http.Request) (any, error) { panic("kaboom") }, 500, `{"success":false}` + "\n", true},
		{"invalid", func(*http.Request) (any, error) {
			return nil, fault.Errorf(fault.Invalid, "start must be less than end")
		},
			400, `{"success":false,"message":"start must be less than end"}` + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs kittest.Logs
			a := httpapi.New(httpapi.Options{Logger: newLogger(&logs), Unavailable: func(err error) bool { return errors.Is(err, unreachable) }})
			a.Handle(http.MethodGet, "/amm/{name}", tt.f, httpapi.BareServerFailures())
			a.Handle(http.MethodGet, "/other", func(*http.Request) (any, error) { return nil, unreachable })
			srv := mustServe(t, a)
			r := mustGet(t, srv.URL+"/amm/position")
			if r.status != tt.wantStatus || r.body != tt.wantBody {
				t.Errorf("got %d %s, want %d %s", r.status, r.body, tt.wantStatus, tt.wantBody)
			}
			if got := r.header.Get("Retry-After"); got != "" {
				t.Errorf("Retry-After = %q, want none", got)
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q", got)
			}
			kittest.Eventually(t, 5*time.Second, "access log", func() bool { return logs.Count(t, map[string]any{"msg": "http request"}) == 1 })
			if n := logs.Count(t, map[string]any{"level": "ERROR"}); (n > 0) != (tt.wantLogged || tt.name == "database unreachable") {
				t.Errorf("%d ERROR lines: %v", n, logs.Lines(t))
			}
			// The other routes keep their answers.
			if r := mustGet(t, srv.URL+"/other"); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
				t.Errorf("a route without the option answered %d %s", r.status, r.body)
			}
		})
	}
}

// TestAppendJSONFrom: the answer is appended when written, with the request's context; a failure
// before anything is written is answered as the handler's error, with the route's error rules.
func TestAppendJSONFrom(t *testing.T) {
	a := httpapi.New(httpapi.Options{})
	type key struct{}
	a.Handle(http.MethodGet, "/ok", func(r *http.Request) (any, error) {
		return httpapi.AppendJSONFrom(8, func(ctx context.Context, dst []byte) ([]byte, error) {
			if ctx.Value(key{}) != nil {
				return nil, errors.New("not the request's context")
			}
			return append(dst, `{"success":true,"data":[1,2,3]}`...), nil
		}), nil
	}, httpapi.CacheControl("public, max-age=10"))
	a.Handle(http.MethodGet, "/invalid", func(r *http.Request) (any, error) {
		return httpapi.AppendJSONFrom(8, func(context.Context, []byte) ([]byte, error) {
			return nil, fault.Errorf(fault.Invalid, "no such thing")
		}), nil
	})
	a.Handle(http.MethodGet, "/failed", func(r *http.Request) (any, error) {
		return httpapi.AppendJSONFrom(8, func(context.Context, []byte) ([]byte, error) {
			return nil, errors.New("read failed")
		}), nil
	}, httpapi.BareServerFailures())
	srv := mustServe(t, a)
	cases := []struct {
		path, body, cacheControl string
		status                   int
	}{
		{"/ok", `{"success":true,"data":[1,2,3]}`, "public, max-age=10", 200},
		{"/invalid", `{"success":false,"message":"no such thing"}` + "\n", "no-store", 400},
		{"/failed", `{"success":false}` + "\n", "no-store", 500},
	}
	for _, c := range cases {
		r := mustGet(t, srv.URL+c.path)
		if r.status != c.status || r.body != c.body || r.header.Get("Cache-Control") != c.cacheControl {
			t.Errorf("%s: %d %q (Cache-Control %q)", c.path, r.status, r.body, r.header.Get("Cache-Control"))
		}
	}
}

// fieldsError is a client error that adds properties to its answer.
type fieldsError struct {
	err    *fault.Error
	fields map[string]any
}

func (e fieldsError) Error() string               { return e.err.Error() }
func (e fieldsError) Unwrap() error               { return e.err }
func (e fieldsError) ErrorFields() map[string]any { return e.fields }

func TestErrorFields(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"added beside success and message",
			fieldsError{fault.Errorf(fault.Invalid, "Insufficient collateral"), map[string]any{"code": 6003, "name": "InsufficientCollateral"}},
			`{"code":6003,"message":"Insufficient collateral","name":"InsufficientCollateral","success":false}`},
		{"cannot replace success or message",
			fieldsError{fault.Errorf(fault.Invalid, "bad"), map[string]any{"success": true, "message": "fine"}},
			`{"message":"bad","success":false}`},
		{"wrapped", fmt.Errorf("build: %w", fieldsError{fault.Errorf(fault.Invalid, "bad"), map[string]any{"error": "bad"}}),
			`{"error":"bad","message":"bad","success":false}`},
		{"an internal error tells nothing", fieldsError{fault.Errorf(fault.Internal, "secret"), map[string]any{"detail": "secret"}},
			`{"success":false,"message":"internal error"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := httpapi.New(httpapi.Options{})
			a.Handle(http.MethodGet, "/x", func(*http.Request) (any, error) { return nil, tt.err })
			r := mustGet(t, mustServe(t, a).URL+"/x")
			if got := strings.TrimSpace(string(r.body)); got != tt.want {
				t.Errorf("body %s, want %s", got, tt.want)
			}
		})
	}
}
