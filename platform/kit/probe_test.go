package kit_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/platform/kit"
)

func TestProbe(t *testing.T) {
	var readyAfter atomic.Int32 // /late answers 503 this many times first
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			w.Write([]byte("ready"))
		case "/late":
			if readyAfter.Add(-1) >= 0 {
				http.Error(w, "postgres: not reachable", http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte("ready"))
		case "/openapi.json":
			w.Write([]byte(`{"openapi":"3.1.0","paths":{"/market/{symbol}/trades":{}}}`))
		case "/v2/openapi.json":
			w.Write([]byte(`{"swagger":"2.0","paths":{"/a":{}}}`))
		case "/html/openapi.json":
			w.Write([]byte(`<html>`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	for _, tt := range []struct {
		name     string
		late     int32
		args     []string
		code     int
		contains []string
	}{
		{"every URL passes", 0, []string{srv.URL + "/readyz", srv.URL + "/openapi.json"}, 0,
			[]string{"ok    " + srv.URL + "/readyz", "ok    " + srv.URL + "/openapi.json"}},
		{"a deployable that becomes ready", 2, []string{"-interval", "10ms", srv.URL + "/late"}, 0, []string{"ok    " + srv.URL + "/late"}},
		{"one that never does", 1000, []string{"-timeout", "200ms", "-interval", "10ms", srv.URL + "/readyz", srv.URL + "/late"}, 1,
			[]string{"ok    " + srv.URL + "/readyz", "FAIL  " + srv.URL + "/late: 503 Service Unavailable: postgres: not reachable"}},
		{"a Swagger 2 document", 0, []string{"-timeout", "100ms", srv.URL + "/v2/openapi.json"}, 1, []string{"not an OpenAPI 3 document"}},
		{"a page that is not JSON", 0, []string{"-timeout", "100ms", srv.URL + "/html/openapi.json"}, 1, []string{"not a JSON document"}},
		{"a missing route", 0, []string{"-timeout", "100ms", srv.URL + "/nope"}, 1, []string{"404 Not Found"}},
		{"nothing listening", 0, []string{"-timeout", "100ms", closed.URL + "/readyz"}, 1, []string{"FAIL  " + closed.URL + "/readyz", "refused"}},
		{"no URL", 0, nil, 2, []string{"at least one URL"}},
		{"not http", 0, []string{"ftp://example.com/readyz"}, 2, []string{"not an http(s) URL"}},
		{"a bad flag", 0, []string{"-timeout", "soon", srv.URL}, 2, []string{"invalid value"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			readyAfter.Store(tt.late)
			var out, errOut bytes.Buffer
			code := kit.Probe(context.Background(), tt.args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, all)
			}
			for _, s := range tt.contains {
				if !strings.Contains(all, s) {
					t.Errorf("output lacks %q:\n%s", s, all)
				}
			}
		})
	}
}
