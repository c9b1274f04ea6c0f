package http_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	nethttp "net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/services/market"
	markethttp "github.com/tidemark/tidemark/services/market/http"
)

// memoryOnly is a store that knows one market and holds no candles: every answer must come from Hot.
type memoryOnly struct{ symbol string }

func (s memoryOnly) Market(_ context.Context, symbol string) (events.Market, error) {
	if symbol != s.symbol {
		return events.Market{}, errors.New("unknown market")
	}
	return events.Market{Symbol: symbol, Type: events.MarketTypePerp}, nil
}

func (memoryOnly) Candles(context.Context, string, market.Resolution, int64, int64) ([]market.Bucket, *market.Bucket, error) {
	return nil, nil, errors.New("read from the store")
}

// discard is a ResponseWriter that keeps nothing but the status, so that only the route's own work is
// measured.
type discard struct {
	header nethttp.Header
	status int
	n      int
}

func (d *discard) Header() nethttp.Header { return d.header }
func (d *discard) WriteHeader(code int)   { d.status = code }
func (d *discard) Write(p []byte) (int, error) {
	d.n += len(p)
	return len(p), nil
}

// BenchmarkCandlesHot serves 1000 one-minute candles from memory through the whole API (routing,
// coalescing, access log, metrics), every window different, as tools/bench's BenchmarkCandlesHot
// asks for them: newest first from a startTs within the hot range. Its market trades every minute at
// prices of whole millionths around 150, as the ingest stores them.
func BenchmarkCandlesHot(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	hot := market.NewHot(market.DefaultHotDays, func() time.Time { return now })
	start, _ := hot.Start("1")
	var h []market.Bucket
	for ts := start; ts <= now.Unix(); ts += 60 {
		p := func() float64 { return float64(150_000_000+rng.IntN(10_000_000)) / 1e6 }
		base := int64(1+rng.IntN(50)) * 100_000_000
		h = append(h, market.Bucket{Ts: ts, FillFirst: p(), FillHigh: p() + 1, FillLow: p() - 1, FillClose: p(),
			OracleFirst: p(), OracleHigh: p() + 1, OracleLow: p() - 1, OracleClose: p(),
			QuoteVolume: float64(base*150/1000) / 1e6, BaseVolume: float64(base) / 1e9})
	}
	hot.Load("SOL-PERP", "1", start, h, nil)
	hot.SetReady(true)

	api := httpapi.New(httpapi.Options{Now: func() time.Time { return now }})
	markethttp.Routes(api, memoryOnly{"SOL-PERP"}, hot, nil)
	handler := api.Handler()
	reqs := make([]*nethttp.Request, 3300)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(nethttp.MethodGet,
			fmt.Sprintf("/market/SOL-PERP/candles/1?limit=1000&startTs=%d", start+999*60+int64(i)*60), nil)
	}
	w := &discard{header: nethttp.Header{}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		clear(w.header)
		w.status, w.n = 0, 0
		handler.ServeHTTP(w, reqs[i%len(reqs)])
		if w.status != nethttp.StatusOK || w.n < 200_000 {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
		i++
	}
}
