// Package http serves the Market tag's routes over a market.Store.
package http

import (
	"encoding/json"
	nethttp "net/http"
	"time"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/services/market"
)

// CandleMinTs is the earliest startTs/endTs the candles route accepts (the spec's minimum).
const CandleMinTs = 1668470400

// Routes registers every Market route on api.
func Routes(api *httpapi.API, store market.Store, now func() time.Time) {
	h := &handlers{api: api, store: store, now: now, layouts: csvLayouts()}
	type list struct {
		series   market.Series
		def, max int64 // limit query parameter; max 0: fixed page of 20, no limit parameter
		allowed  func(events.Market) error
	}
	lists := []list{
		{market.Trades, 20, 50, anyMarket},
		{market.Predictions, 20, 0, predictionMarket},
		{market.FundingRates, 20, 750, perpMarket},
		{market.InsuranceFund, 20, 0, spotMarket},
		{market.InsuranceFundStake, 20, 0, spotMarket},
		{market.Swaps, 20, 0, spotMarket},
		{market.Deposits, 20, 0, spotMarket},
		{market.Rewards, 20, 0, spotMarket},
	}
	rolling := httpapi.CacheControl("public, max-age=2")
	// Bots poll the same newest pages: concurrent identical requests share one read, each answered
	// by a read begun after it arrived, so the crowd costs the database one query at a time.
	for _, l := range lists {
		base := "/market/{symbol}/" + string(l.series)
		api.Handle(nethttp.MethodGet, base, h.rolling(l.series, l.def, l.max, l.allowed), rolling, httpapi.Coalesce())
		api.Handle(nethttp.MethodGet, base+"/{year}/{month}/{day}", h.dated(l.series, l.allowed),
			httpapi.CacheControl("public, max-age=30"), httpapi.Coalesce())
	}
	// Every chart of a market polls the same newest candles: one computation per second serves them
	// all, within the max-age the route already gives clients and CDNs. 64 MB holds the newest
	// 1000 candles of every market at every resolution a few times over.
	api.Handle(nethttp.MethodGet, "/market/{symbol}/candles/{resolution}", h.candles, rolling,
		httpapi.SharedCache(time.Second, 64<<20))
}

type handlers struct {
	api     *httpapi.API
	store   market.Store
	now     func() time.Time
	layouts map[market.Series]*csvLayout
}

func anyMarket(events.Market) error { return nil }

func predictionMarket(m events.Market) error {
	if m.Filter() != events.FilterPrediction {
		return fault.Errorf(fault.NotFound, "%s is not a prediction market", m.Symbol)
	}
	return nil
}

func perpMarket(m events.Market) error {
	if m.Type != events.MarketTypePerp {
		return fault.Errorf(fault.NotFound, "%s is not a perp market", m.Symbol)
	}
	return nil
}

func spotMarket(m events.Market) error {
	if m.Type != events.MarketTypeSpot {
		return fault.Errorf(fault.NotFound, "%s is not a spot market", m.Symbol)
	}
	return nil
}

func (h *handlers) market(r *nethttp.Request, allowed func(events.Market) error) (events.Market, error) {
	m, err := h.store.Market(r.Context(), httpapi.PathVar(r, "symbol"))
	if err != nil {
		return events.Market{}, err
	}
	return m, allowed(m)
}

func (h *handlers) rolling(s market.Series, def, max int64, allowed func(events.Market) error) httpapi.Func {
	return func(r *nethttp.Request) (any, error) {
		limit := def
		if max > 0 {
			var err error
			if limit, err = httpapi.QueryInt(r, "limit", def, 1, max); err != nil {
				return nil, err
			}
		}
		m, err := h.market(r, allowed)
		if err != nil {
			return nil, err
		}
		scope := "market/" + m.Symbol + "/" + string(s)
		now := h.now()
		q := market.RollingQuery{
			Series: s, Symbol: m.Symbol, Limit: int(limit) + 1,
			Since: now.Add(-httpapi.RollingWindow).Unix(),
			// The ingest accepts events up to a day ahead of its clock (events.MaxClockSkew).
			Until: now.Add(events.MaxClockSkew).Unix(),
		}
		if tok := r.URL.Query().Get("page"); tok != "" {
			var c market.Cursor
			if err := h.api.DecodeCursor(scope, tok, &c); err != nil {
				return nil, err
			}
			q.After = &c
		}
		rows, err := h.store.Rolling(r.Context(), q)
		if err != nil {
			return nil, err
		}
		var next *string
		if len(rows) > int(limit) {
			rows = rows[:limit]
			tok := h.api.EncodeCursor(scope, rows[len(rows)-1].Cursor)
			next = &tok
		}
		return httpapi.RawList{Records: records(rows), Meta: httpapi.RollingMeta{NextPage: next}}, nil
	}
}

func (h *handlers) dated(s market.Series, allowed func(events.Market) error) httpapi.Func {
	return func(r *nethttp.Request) (any, error) {
		now := h.now()
		start, end, label, err := httpapi.ParseDatedPath(r, now, true)
		if err != nil {
			return nil, err
		}
		page, err := httpapi.DatedPage(r)
		if err != nil {
			return nil, err
		}
		format, err := httpapi.Format(r)
		if err != nil {
			return nil, err
		}
		m, err := h.market(r, allowed)
		if err != nil {
			return nil, err
		}
		rows, total, err := h.store.Dated(r.Context(), market.DatedQuery{
			Series: s, Symbol: m.Symbol, Start: start, End: end,
			Offset: (page - 1) * httpapi.DatedPageSize, Limit: httpapi.DatedPageSize,
		})
		if err != nil {
			return nil, err
		}
		if format == "csv" {
			return &csvPage{filename: httpapi.CSVFilename("market", m.Symbol, string(s), label), layout: h.layouts[s], rows: rows}, nil
		}
		return httpapi.RawList{Records: records(rows), Meta: httpapi.NewDatedMeta(total, page, len(rows), end > now.Unix())}, nil
	}
}

func (h *handlers) candles(r *nethttp.Request) (any, error) {
	res, err := market.ParseResolution(httpapi.PathVar(r, "resolution"))
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "%s", err.Error())
	}
	now := h.now()
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
	m, err := h.market(r, anyMarket)
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

func records(rows []market.Row) []json.RawMessage {
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = r.Record
	}
	return out
}

// candleList is the candles envelope, {"success":true,"records":[...]} without meta as the spec has it.
// It is written with strconv rather than encoding/json: a 1000-candle answer holds 11000 floats, and
// reflection per field doubled the handler's cost. The ~250 KB it is assembled in are borrowed for the
// request (httpapi.Scratch) rather than left to the GC, once per computed answer.
type candleList []market.Candle

func (l candleList) Respond(w nethttp.ResponseWriter, r *nethttp.Request) error {
	b := httpapi.Scratch(r.Context(), 32+len(l)*260)
	b = append(b, `{"success":true,"records":[`...)
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = l[i].AppendJSON(b)
	}
	b = append(b, "]}"...)
	return httpapi.RawJSON(b).Respond(w, r)
}
