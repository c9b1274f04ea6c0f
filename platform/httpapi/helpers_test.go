package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

func newLogger(buf *kittest.Logs) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// mustServe serves a's Handler on a real loopback server closed at cleanup.
func mustServe(tb testing.TB, a *httpapi.API) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(a.Handler())
	tb.Cleanup(srv.Close)
	return srv
}

type response struct {
	status int
	header http.Header
	body   string
}

func mustDo(tb testing.TB, method, url string) response {
	tb.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func mustGet(tb testing.TB, url string) response {
	tb.Helper()
	return mustDo(tb, http.MethodGet, url)
}

// errorEnvelope decodes an error answer strictly: exactly success and message, and error on a 401.
func errorEnvelope(tb testing.TB, r response) (success bool, message string) {
	tb.Helper()
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.DisallowUnknownFields()
	var e struct {
		Success *bool   `json:"success"`
		Error   *string `json:"error"`
		Message *string `json:"message"`
	}
	if err := dec.Decode(&e); err != nil {
		tb.Fatalf("error body %q: %v", r.body, err)
	}
	if e.Success == nil || e.Message == nil {
		tb.Fatalf("error body %q lacks success or message", r.body)
	}
	if unauthorized := r.status == http.StatusUnauthorized; unauthorized != (e.Error != nil) ||
		(unauthorized && *e.Error != "Unauthorized") {
		tb.Fatalf("error body %q of a %d: error must be \"Unauthorized\" on 401s and absent otherwise", r.body, r.status)
	}
	return *e.Success, *e.Message
}
