// Package http serves the Market tag's candles; the event series are declared in service/.
package http

import (
	"context"
	nethttp "net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/market"
)

// CandleMinTs is the earliest startTs/endTs the candles route accepts (the spec's minimum).
const CandleMinTs = 1668470400

// HotCandles answers the windows it holds from memory (market.Hot).
type HotCandles interface {
	// AppendCandles appends the candles of w for symbol at res to dst as a JSON list's items, byte for
	// byte as the store's path writes them, or returns dst and false when the store must answer.
	AppendCandles(dst []byte, symbol string, res market.Resolution, w market.CandleWindow) ([]byte, bool)
}

// Routes registers the candles route on api. hot, when not nil, answers the recent windows; answered,
// when not nil, counts the answers by source ("memory" or "store").
func Routes(api *httpapi.API, store market.Store, hot HotCandles, answered *prometheus.CounterVec) {
	h := &handlers{api: api, store: store, hot: hot}
	if answered != nil {
		h.fromMemory, h.fromStore = answered.WithLabelValues("memory"), answered.WithLabelValues("store")
	}
	// Every chart of a market polls the same newest candles. Concurrent requests share one answer
	// (Coalesce) begun after each arrived, rather than a cached one up to a second old: an answer from
	// memory costs little, and a candle change must reach REST no later than the WebSocket edge.
	api.Handle(nethttp.MethodGet, "/market/{symbol}/candles/{resolution}", h.candles,
		httpapi.CacheControl("public, max-age=2"), httpapi.Coalesce())
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
	api                   *httpapi.API
	store                 market.Store
	hot                   HotCandles
	fromMemory, fromStore prometheus.Counter
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
	// The answer is made as it is written: from memory when the window is held there, straight into
	// the response's buffer, and otherwise from the store.
	return httpapi.AppendJSONFrom(listSize(res, w), func(ctx context.Context, dst []byte) ([]byte, error) {
		dst = append(dst, listOpen...)
		if h.hot != nil {
			if out, ok := h.hot.AppendCandles(dst, m.Symbol, res, w); ok {
				count(h.fromMemory)
				return append(out, listClose...), nil
			}
		}
		stored, before, err := h.store.Candles(ctx, m.Symbol, res, w.Lo, w.Hi)
		if err != nil {
			return nil, err
		}
		count(h.fromStore)
		return append(AppendCandles(dst, market.Assemble(res, w, stored, before)), listClose...), nil
	}), nil
}

func count(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

// The candles envelope, {"success":true,"records":[...]} without meta as the spec has it.
const (
	listOpen  = `{"success":true,"records":[`
	listClose = "]}"
)

// candleSize bounds one encoded candle, to size an answer's buffer once.
const candleSize = 260

// listSize is room for the answer of w: at most one candle per bucket of the window, and never more
// than the route's limit.
func listSize(res market.Resolution, w market.CandleWindow) int {
	n := 1000
	if s := res.Step(w.Lo, 1) - w.Lo; s > 0 {
		n = min(n, int((w.Hi-w.Lo)/s)+1)
	}
	return len(listOpen) + len(listClose) + n*candleSize
}

// AppendCandles appends l to dst as a JSON list's items, comma-separated. It is written with strconv
// rather than encoding/json: a 1000-candle answer holds 11000 floats, and encoding/json would resolve
// each one's field through reflection.
func AppendCandles(dst []byte, l []market.Candle) []byte {
	for i := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = l[i].AppendJSON(dst)
	}
	return dst
}

// candleList is the candles envelope around l.
func candleList(l []market.Candle) httpapi.Responder {
	return httpapi.AppendJSON(len(listOpen)+len(listClose)+len(l)*candleSize, func(b []byte) []byte {
		return append(AppendCandles(append(b, listOpen...), l), listClose...)
	})
}
