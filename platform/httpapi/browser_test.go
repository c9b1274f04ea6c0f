package httpapi_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

func TestCORS(t *testing.T) {
	api := httpapi.New(httpapi.Options{})
	ok := func(*http.Request) (any, error) { return map[string]bool{"ok": true}, nil }
	api.Handle(http.MethodGet, "/market/{symbol}/trades", ok)
	api.Handle(http.MethodGet, "/notifications", ok, httpapi.AllowHeaders("x-wallet-address", "x-signature", "x-signed-message"))
	api.Handle(http.MethodPut, "/notifications", ok, httpapi.AllowHeaders("x-wallet-address", "x-signature", "x-signed-message"))
	h := api.Handler()
	do := func(method, path string, header map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	origin := map[string]string{"Origin": "https://app.example"}

	// A simple cross-origin GET, and an error answer, are readable from any origin.
	for _, path := range []string{"/market/SOL-PERP/trades", "/nowhere"} {
		rec := do(http.MethodGet, path, origin)
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("GET %s: Access-Control-Allow-Origin %q", path, got)
		}
		if got := rec.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(got, "Content-Disposition") {
			t.Errorf("GET %s: Access-Control-Expose-Headers %q", path, got)
		}
	}

	tests := []struct {
		name        string
		path        string
		header      map[string]string
		status      int
		wantMethods string
		wantHeaders string
	}{
		{"preflight of a public GET", "/market/SOL-PERP/trades",
			map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
			http.StatusNoContent, "GET, OPTIONS", ""},
		{"preflight of the notifications group names its headers", "/notifications",
			map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "PUT",
				"Access-Control-Request-Headers": "x-wallet-address, x-signature, x-signed-message"},
			http.StatusNoContent, "GET, PUT, OPTIONS", "Content-Type, x-wallet-address, x-signature, x-signed-message"},
		{"preflight of a method the path lacks", "/market/SOL-PERP/trades",
			map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "DELETE"},
			http.StatusMethodNotAllowed, "", ""},
		{"preflight of an unknown path", "/nowhere",
			map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
			http.StatusNotFound, "", ""},
		{"plain OPTIONS lists the methods", "/notifications", nil, http.StatusNoContent, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(http.MethodOptions, tt.path, tt.header)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if got := rec.Header().Get("Access-Control-Allow-Methods"); got != tt.wantMethods {
				t.Errorf("Allow-Methods %q, want %q", got, tt.wantMethods)
			}
			if got := rec.Header().Get("Access-Control-Allow-Headers"); got != tt.wantHeaders {
				t.Errorf("Allow-Headers %q, want %q", got, tt.wantHeaders)
			}
			if rec.Code == http.StatusNoContent && rec.Header().Get("Allow") == "" {
				t.Error("no Allow header")
			}
		})
	}
}

// TestHostileInputIsRefused: values Postgres would refuse in a text parameter never reach a handler.
func TestHostileInputIsRefused(t *testing.T) {
	api := httpapi.New(httpapi.Options{})
	reached := 0
	api.Handle(http.MethodGet, "/market/{symbol}/trades", func(*http.Request) (any, error) {
		reached++
		return nil, nil
	})
	tests := []struct {
		path   string
		status int
	}{
		{"/market/%F6c%C4%9F/trades", 400}, // invalid UTF-8
		{"/market/%00/trades", 400},        // NUL
		{"/market/SOL%0APERP/trades", 400}, // a control character
		{"/market/SOL-PERP/trades?page=%00", 400},
		{"/market/SOL-PERP/trades?%FF=1", 400},
		{"/market/" + strings.Repeat("A", 300) + "/trades", 400},
		{"/market/S%C3%B6L/trades", 204}, // printable UTF-8 reaches the handler (which may answer 404)
		{"/market/SOL-PERP/trades?page=abc", 204},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		api.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
		if rec.Code != tt.status {
			t.Errorf("GET %s: %d %s, want %d", tt.path, rec.Code, rec.Body, tt.status)
		}
	}
	if reached != 2 {
		t.Errorf("the handler ran %d times, want 2", reached)
	}
}

// TestUnavailableDependency: while the database is down a read answers 503 with Retry-After, and the
// outage is logged once, not once per request; the first success after it is logged too.
func TestUnavailableDependency(t *testing.T) {
	var logs kittest.Logs
	errDown := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	down := true
	api := httpapi.New(httpapi.Options{
		Logger:      newLogger(&logs),
		Unavailable: func(err error) bool { return errors.Is(err, errDown) },
	})
	api.Handle(http.MethodGet, "/x", func(*http.Request) (any, error) {
		if down {
			return nil, errDown
		}
		return map[string]bool{"ok": true}, nil
	})
	api.Handle(http.MethodGet, "/busy", func(*http.Request) (any, error) {
		return nil, fault.Errorf(fault.Unavailable, "the export slots are busy")
	})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		api.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	for range 5 {
		rec := get("/x")
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" {
			t.Fatalf("status %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
		}
		if strings.Contains(rec.Body.String(), "connection refused") {
			t.Fatalf("the cause leaked: %s", rec.Body)
		}
	}
	if n := logs.Count(t, map[string]any{"level": "ERROR"}); n != 1 {
		t.Errorf("%d ERROR lines for one outage, want 1", n)
	}
	down = false
	if rec := get("/x"); rec.Code != 200 {
		t.Fatalf("after the outage: %d", rec.Code)
	}
	if n := logs.Count(t, map[string]any{"msg": "dependency available again"}); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
	if rec := get("/busy"); rec.Code != 503 || !strings.Contains(rec.Body.String(), "the export slots are busy") {
		t.Errorf("explicit Unavailable: %d %s", rec.Code, rec.Body)
	}
}
