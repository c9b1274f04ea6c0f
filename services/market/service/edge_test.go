package service_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/market"
)

// snapshot is the answer of the internal candle snapshot.
type snapshot struct {
	Success bool                `json:"success"`
	Data    []market.EdgeCandle `json:"data"`
	Seqs    map[string]int64    `json:"seqs"`
}

// edgeSnapshot is GET /internal/edge/candles<query> of the internal port.
func edgeSnapshot(t *testing.T, s *stack, query string) snapshot {
	t.Helper()
	a := kittest.Fetch(t, http.MethodGet, s.InternalServer(t, "market").URL+mesh.EdgeCandles+query)
	var body snapshot
	if err := json.Unmarshal(a.Body, &body); err != nil || a.Status != http.StatusOK || !body.Success || body.Data == nil {
		t.Fatalf("snapshot: %d %+v %v", a.Status, body, err)
	}
	return body
}

// TestEdgeCandlesSnapshot: the internal snapshot the WebSocket edge warms from holds, for every
// market and resolution, the same newest candle the candles route serves, with the last fill that
// moved it; it is on the internal port only.
func TestEdgeCandlesSnapshot(t *testing.T) {
	s := startStack(t)
	get := func() []market.EdgeCandle {
		t.Helper()
		return edgeSnapshot(t, s, "").Data
	}
	if got := get(); len(got) != 0 {
		t.Fatalf("empty market schema: %d candles", len(got))
	}

	t0 := at("2026-11-19T14:58:10Z")
	s.ingest(t, encode(t, events.TopicFills,
		fill(solPerp, t0, 1, 150_000_000, 1_000_000_000, 149_500_000),
		fill(solPerp, t0+20, 2, 303_000_000, 2_000_000_000, 151_000_000),
		fill(solPerp, t0+130, 3, 152_000_000, 1_000_000_000, 152_000_000), // 15:00:20, a new hour
		fill(btcPerp, t0+5, 4, 60_000_000_000, 1_000_000_000, 60_100_000_000),
	)...)
	got := get()
	if len(got) != 2*len(market.Resolutions()) {
		t.Fatalf("%d candles, want one per market and resolution (%d)", len(got), 2*len(market.Resolutions()))
	}
	for i, c := range got {
		// Markets in symbol order, resolutions in ascending width.
		wantSym := []string{"BTC-PERP", "SOL-PERP"}[i/len(market.Resolutions())]
		wantRes := string(market.Resolutions()[i%len(market.Resolutions())])
		if c.Symbol != wantSym || c.Resolution != wantRes {
			t.Fatalf("candle %d is %s %s, want %s %s", i, c.Symbol, c.Resolution, wantSym, wantRes)
		}
		// The newest traded bucket, as the candles route computes it (its open from the bucket before).
		rest := candles(t, s, fmt.Sprintf("/market/%s/candles/%s?limit=1&startTs=%d", c.Symbol, c.Resolution, c.Ts))
		if len(rest) != 1 {
			t.Fatalf("%s %s: REST gave %d candles", c.Symbol, c.Resolution, len(rest))
		}
		if c.Candle != rest[0] {
			t.Errorf("%s %s: snapshot %+v, candles route %+v", c.Symbol, c.Resolution, c.Candle, rest[0])
		}
		wantLast, wantTs := "3", t0+130
		if c.Symbol == "BTC-PERP" {
			wantLast, wantTs = "4", t0+5
		}
		if c.LastFillRecordID == nil || *c.LastFillRecordID != wantLast || c.LastTradeTs == nil || *c.LastTradeTs != wantTs {
			t.Errorf("%s %s: last fill %v at %v, want %s at %d", c.Symbol, c.Resolution, c.LastFillRecordID, c.LastTradeTs, wantLast, wantTs)
		}
	}
	// The 1-minute SOL candle of 15:00 opens at the 14:58 close (151.5), as the candles route has it.
	if sol1 := got[len(market.Resolutions())]; sol1.Ts != at("2026-11-19T15:00:00Z") || sol1.FillOpen != 151.5 || sol1.FillClose != 152 {
		t.Errorf("SOL-PERP 1: %+v", sol1.Candle)
	}
	if rec := httpRecorder(s, http.MethodGet, kit.InternalPrefix+"edge/candles"); rec.Code != http.StatusNotFound {
		t.Errorf("the snapshot on the public port: %d", rec.Code)
	}
}
