package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/services/ws/edge"
)

// TestWarmerRefreshTakesSnapshotsAgain: a snapshot that failed keeps the edge not ready until Run
// takes it; once warm, Refresh takes every snapshot again, so what a service learned after the edge
// started (a market that has not traded since) reaches the edge too.
func TestWarmerRefreshTakesSnapshotsAgain(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n == 1 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"success":true,"data":[{"symbol":"M%d"}]}`, n)
	}))
	defer srv.Close()

	var seen []string
	w := edge.NewWarmer([]edge.Source{
		{Name: "items", URL: srv.URL, Apply: func(items []json.RawMessage, _ map[string]int64) error {
			for _, raw := range items {
				var it struct{ Symbol string }
				if err := json.Unmarshal(raw, &it); err != nil {
					return err
				}
				seen = append(seen, it.Symbol)
			}
			return nil
		}},
		{Name: "absent", URL: ""}, // a service that is not deployed: nothing to warm from
	}, srv.Client(), slog.New(slog.DiscardHandler))

	if w.Ready() == nil {
		t.Fatal("ready before any snapshot was taken")
	}
	if err := w.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(); err != nil {
		t.Fatalf("not ready after Run: %v", err)
	}
	if err := w.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != "M2" || seen[1] != "M3" {
		t.Fatalf("applied %v, want M2 from Run (after one failure) and M3 from Refresh", seen)
	}
}
