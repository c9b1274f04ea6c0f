// Package http serves the Market tag's candles; the event series are declared in service/.
package http

import (
	"context"
	nethttp "net/http"
	"time"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/market"
)

// CandleMinTs is the earliest startTs/endTs the candles route accepts (the spec's minimum).
const CandleMinTs = 1668470400

// Routes registers the candles route on api.
func Routes(api *httpapi.API, store market.Store) {
	h := &handlers{api: api, store: store}
	// Every chart of a market polls the same newest candles: one computation per second serves them
	// all, within the max-age the route already gives clients and CDNs. 64 MB holds the newest
	// 1000 candles of every market at every resolution a few times over.
	api.Handle(nethttp.MethodGet, "/market/{symbol}/candles/{resolution}", h.candles,
		httpapi.CacheControl("public, max-age=2"), httpapi.SharedCache(time.Second, 64<<20))
}

// EdgeStore reads what the WebSocket edge warms from.
type EdgeStore interface {
	// LatestCandles returns the newest candle of every market and resolution (of symbol alone when
	// it is not empty) and the number of the last edge.candles message of each of their channels
	// that has one, read together.
	LatestCandles(ctx context.Context, symbol string) ([]market.EdgeCandle, map[string]int64, error)
}

// Internal registers the routes of the internal port (the WebSocket edge reads them at start and for a
// market it has no candle of): GET mesh.EdgeCandles[?symbol=] answers
// {"success":true,"data":[<EdgeCandle>...],"seqs":{<channel>:<seq>...}}, the newest candle of every
// market (or of symbol) and resolution, and the seq of the last message of each candle channel
// (a channel not named has none yet: 0), so that the edge's init is current to a known seq.
func Internal(api *httpapi.API, store EdgeStore) {
	api.Handle(nethttp.MethodGet, mesh.EdgeCandles, func(r *nethttp.Request) (any, error) {
		candles, seqs, err := store.LatestCandles(r.Context(), r.URL.Query().Get("symbol"))
		if err != nil {
			return nil, err
		}
		return edgeSnapshot{Success: true, Data: candles, Seqs: seqs}, nil
	}, httpapi.CacheControl("no-store"))
}

type edgeSnapshot struct {
	Success bool                `json:"success"`
	Data    []market.EdgeCandle `json:"data"`
	Seqs    map[string]int64    `json:"seqs"`
}

type handlers struct {
	api   *httpapi.API
	store market.Store
}

func (h *handlers) candles(r *nethttp.Request) (any, error) {
	res, err := market.ParseResolution(httpapi.PathVar(r, "resolution"))
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "%s", err.Error())
	}
	now := h.api.Now()
	// Without a range the newest candles are returned, newest first, as the protocol's API does.
	startTs, err := httpapi.QueryInt(r, "startTs", now.Unix(), CandleMinTs, 1<<40)
	if err != nil {
		return nil, err
	}
	endTs, err := httpapi.QueryInt(r, "endTs", CandleMinTs, CandleMinTs, 1<<40)
	if err != nil {
		return nil, err
	}
	limit, err := httpapi.QueryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return nil, err
	}
	m, err := market.AnyMarket.Check(r.Context(), h.store, httpapi.PathVar(r, "symbol"))
	if err != nil {
		return nil, err
	}
	w := market.Window(res, startTs, endTs, int(limit), now)
	if w.Hi < w.Lo {
		return candleList(nil), nil
	}
	stored, before, err := h.store.Candles(r.Context(), m.Symbol, res, w.Lo, w.Hi)
	if err != nil {
		return nil, err
	}
	return candleList(market.Assemble(res, w, stored, before)), nil
}

// candleList is the candles envelope, {"success":true,"records":[...]} without meta as the spec has it.
// It is written with strconv rather than encoding/json: a 1000-candle answer holds 11000 floats, and
// encoding/json would resolve each one's field through reflection.
func candleList(l []market.Candle) httpapi.Responder {
	return httpapi.AppendJSON(32+len(l)*260, func(b []byte) []byte {
		b = append(b, `{"success":true,"records":[`...)
		for i := range l {
			if i > 0 {
				b = append(b, ',')
			}
			b = l[i].AppendJSON(b)
		}
		return append(b, "]}"...)
	})
}
