package service_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark/api/apitest"
	"github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// TestHTTPAnswers: what is not a WebSocket handshake is answered in the API's envelope, as
// api/openapi.yaml documents GET /ws; other paths are 404.
func TestHTTPAnswers(t *testing.T) {
	kc := wstest.Broker(t, 1)
	e := wstest.Start(t, kc, service.Config{}, true)
	v := apitest.New(t)
	plain := httptest.NewRequest(http.MethodGet, service.Path, nil)
	if rec := v.Serve(t, e.Handler(), plain); rec.Code != http.StatusUpgradeRequired {
		t.Errorf("plain GET /ws: %d %s", rec.Code, rec.Body)
	}
	// An upgrade without a key is a malformed handshake.
	bad := httptest.NewRequest(http.MethodGet, service.Path, nil)
	bad.Header.Set("Connection", "Upgrade")
	bad.Header.Set("Upgrade", "websocket")
	bad.Header.Set("Sec-WebSocket-Version", "13")
	if rec := v.Serve(t, e.Handler(), bad); rec.Code != http.StatusBadRequest {
		t.Errorf("handshake without a key: %d %s", rec.Code, rec.Body)
	}
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/market/SOL-PERP/trades", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("another path: %d", rec.Code)
	}
}
