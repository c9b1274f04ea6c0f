package service_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/stats/service"
)

func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }

func start(t *testing.T) *kittest.Stack {
	t.Helper()
	return kittest.Up(t, kittest.Options{}, service.Service())
}

var encode = kittest.Encode

// raw serves GET path without the contract's check, for what the document does not describe.
func raw(t *testing.T, s *kittest.Stack, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// feed produces msgs and waits until the service has stored them and folded the wallets' deltas
// they made.
func feed(t *testing.T, s *kittest.Stack, msgs ...events.Message) {
	t.Helper()
	s.Ingest(t, msgs...)
	// Folded: no delta left, and no pending row of an account whose wallet is known.
	kittest.Eventually(t, 30*time.Second, "the fold of the wallets' deltas", func() bool {
		return s.Count(t, "stats.volume_deltas")+s.Count(t, "stats.pnl_deltas")+
			s.Count(t, "stats.pending_volumes JOIN stats.accounts USING (account)")+
			s.Count(t, "stats.pending_pnl JOIN stats.accounts USING (account)") == 0
	})
}
