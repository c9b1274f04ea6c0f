package kit_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// TestDatabaseOutage stops the service's Postgres under it: reads answer 503 with Retry-After, the
// outage is logged once rather than once per request, and reads succeed again once it is back.
func TestDatabaseOutage(t *testing.T) {
	ctx := context.Background()
	srv, pool := kittest.OwnPostgres(t, ctx, "outage", "&connect_timeout=2")
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	var logs kittest.Logs
	inst, err := kit.Start(ctx, toy("toy"), kit.Runtime{
		Pool: pool, Kafka: kafka.Config{Brokers: broker.Brokers()}, PageKey: kittest.PageKey,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}, kit.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	get := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		inst.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/toy/"+kittest.Key(6)+"/deposits", nil))
		return rec
	}
	if rec := get(); rec.Code != http.StatusOK {
		t.Fatalf("before the outage: %d %s", rec.Code, rec.Body)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		rec := get()
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" ||
			!strings.Contains(rec.Body.String(), `"success":false`) {
			t.Fatalf("during the outage: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	if n := strings.Count(logs.String(), `"level":"ERROR"`); n != 1 {
		t.Errorf("%d ERROR lines for one outage of 10 requests, want 1:\n%s", n, logs.String())
	}
	if err := srv.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	kittest.Eventually(t, 30*time.Second, "a read to succeed again", func() bool { return get().Code == http.StatusOK })
	if !strings.Contains(logs.String(), "dependency available again") {
		t.Errorf("the end of the outage was not logged:\n%s", logs.String())
	}
}
