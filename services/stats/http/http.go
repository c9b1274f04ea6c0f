// Package http serves the Stats tag, /params, /vaults, the aggregator's contract list and, on the
// internal port, the edge snapshots.
package http

import (
	"encoding/json"
	"math/big"
	nethttp "net/http"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/platform/series"
	"github.com/tidemark/tidemark/services/stats"
)

// pageSize is how many records a page of liquidations, bankruptcies or swaps holds.
const pageSize = 20

// Routes registers the public routes on api.
func Routes(api *httpapi.API, store stats.Store) {
	h := &handlers{api: api, store: store}
	// Summaries move every second; concurrent identical reads share one.
	live := []httpapi.RouteOption{httpapi.CacheControl("public, max-age=1"), httpapi.Coalesce()}
	api.Handle(nethttp.MethodGet, "/stats/markets", h.markets, live...)
	api.Handle(nethttp.MethodGet, "/stats/markets/prices", h.prices, live...)
	api.Handle(nethttp.MethodGet, "/stats/markets/volume", h.volumeRange, live...)
	api.Handle(nethttp.MethodGet, "/stats/markets/volume/{window}", h.volume, live...)
	api.Handle(nethttp.MethodGet, "/stats/liquidations", h.liquidations(false), live...)
	api.Handle(nethttp.MethodGet, "/stats/bankruptcies", h.liquidations(true), live...)
	api.Handle(nethttp.MethodGet, "/stats/insuranceFundSwaps", h.swaps, live...)
	api.Handle(nethttp.MethodGet, "/stats/leaderboard", h.leaderboard, live...)
	api.Handle(nethttp.MethodGet, "/stats/leaderboard/{authority}", h.standing, live...)
	slow := []httpapi.RouteOption{httpapi.CacheControl("public, max-age=30"), httpapi.Coalesce()}
	api.Handle(nethttp.MethodGet, "/stats/fundingRates", h.fundingRates, slow...)
	api.Handle(nethttp.MethodGet, "/stats/vaults", h.vaults, slow...)
	api.Handle(nethttp.MethodGet, "/stats/insuranceFund", h.insuranceFund, slow...)
	api.Handle(nethttp.MethodGet, "/stats/{symbol}/rateHistory/{kind}", h.rateHistory, slow...)
	// The public reads sit behind a one-minute CDN cache.
	cdn := []httpapi.RouteOption{httpapi.CacheControl("public, max-age=60"), httpapi.Coalesce()}
	api.Handle(nethttp.MethodGet, "/params", h.params, cdn...)
	api.Handle(nethttp.MethodGet, "/vaults", h.vaultConfigs, cdn...)
	api.Handle(nethttp.MethodGet, "/external/aggregator/contracts", h.contracts, live...)
}

// Internal registers the edge snapshots on the internal port's api: the last publication of every
// market to edge.markets and edge.pricing, which a WebSocket edge replica warms its init messages
// from: {"success":true,"data":[...],"seqs":{<channel>:<seq>}}.
func Internal(api *httpapi.API, store stats.Store) {
	channels := map[string]string{events.TopicEdgeMarkets: events.MarketsChannel, events.TopicEdgePricing: events.PricingChannel}
	snapshot := func(topic string) httpapi.Func {
		return func(r *nethttp.Request) (any, error) {
			data, seq, err := store.Published(r.Context(), topic)
			if err != nil {
				return nil, err
			}
			// seqs gives the channel's seq the list is current to, as the market service's candle
			// snapshot does: the edge's init carries it, and the channel's next message is one more.
			return struct {
				Success bool              `json:"success"`
				Data    []json.RawMessage `json:"data"`
				Seqs    map[string]int64  `json:"seqs"`
			}{true, data, map[string]int64{channels[topic]: seq}}, nil
		}
	}
	api.Handle(nethttp.MethodGet, mesh.EdgeMarkets, snapshot(events.TopicEdgeMarkets))
	api.Handle(nethttp.MethodGet, mesh.EdgePricing, snapshot(events.TopicEdgePricing))
}

type handlers struct {
	api   *httpapi.API
	store stats.Store
}

// list is the envelope of the lists that are not paged.
type list[T any] struct {
	Success bool                `json:"success"`
	Records []T                 `json:"records"`
	Meta    httpapi.RollingMeta `json:"meta"`
}

func newList[T any](records []T) list[T] {
	if records == nil {
		records = []T{}
	}
	return list[T]{Success: true, Records: records}
}

func (h *handlers) marketData(r *nethttp.Request) ([]stats.MarketData, error) {
	return h.store.Markets(r.Context(), stats.Rolling(h.api.Now(), 24*time.Hour))
}

func (h *handlers) markets(r *nethttp.Request) (any, error) {
	data, err := h.marketData(r)
	if err != nil {
		return nil, err
	}
	out := make([]stats.MarketSummary, len(data))
	for i, d := range data {
		out[i] = d.Summary()
	}
	return newList(out), nil
}

func (h *handlers) prices(r *nethttp.Request) (any, error) {
	data, err := h.marketData(r)
	if err != nil {
		return nil, err
	}
	out := make([]stats.PriceChange, len(data))
	for i, d := range data {
		out[i] = d.PriceChange()
	}
	return newList(out), nil
}

func (h *handlers) contracts(r *nethttp.Request) (any, error) {
	data, err := h.marketData(r)
	if err != nil {
		return nil, err
	}
	now := h.api.Now().Unix()
	out := []stats.Contract{}
	for _, d := range data {
		if c, ok := d.Contract(now); ok {
			out = append(out, c)
		}
	}
	return struct {
		Contracts []stats.Contract `json:"contracts"`
	}{out}, nil
}

// volumes is the answer of both volume routes: each market's trading over [startTs, endTs) and the
// total quote volume.
type volumes struct {
	Success bool                 `json:"success"`
	StartTs int64                `json:"startTs"`
	EndTs   int64                `json:"endTs"`
	Total   events.Amount        `json:"total"`
	Records []stats.MarketVolume `json:"records"`
	Meta    httpapi.RollingMeta  `json:"meta"`
}

func (h *handlers) volumesOver(r *nethttp.Request, w stats.Window) (any, error) {
	vols, err := h.store.Volumes(r.Context(), w)
	if err != nil {
		return nil, err
	}
	var total stats.Sum
	for _, v := range vols {
		q, ok := stats.ParseSum(string(v.QuoteVolume))
		if !ok {
			return nil, fault.Errorf(fault.Internal, "stored volume %q of %s is no integer", v.QuoteVolume, v.Symbol)
		}
		total.Add(q)
	}
	if vols == nil {
		vols = []stats.MarketVolume{}
	}
	return volumes{Success: true, StartTs: w.From, EndTs: w.To, Total: events.Amount(total.String()), Records: vols}, nil
}

func (h *handlers) volume(r *nethttp.Request) (any, error) {
	name := httpapi.PathVar(r, "window")
	d, ok := stats.VolumeWindows[name]
	if !ok {
		return nil, fault.Errorf(fault.Invalid, "window must be one of 1h, 24h, 30d")
	}
	return h.volumesOver(r, stats.Rolling(h.api.Now(), d))
}

func (h *handlers) volumeRange(r *nethttp.Request) (any, error) {
	q := r.URL.Query()
	start, end := q.Get("startTs"), q.Get("endTs")
	if start == "" && end == "" {
		// Neither: the 24 whole hours before the current one.
		to := stats.HourOf(h.api.Now().Unix())
		start, end = strconv.FormatInt(to-24*stats.Hour, 10), strconv.FormatInt(to, 10)
	}
	w, err := stats.VolumeRange(start, end)
	if err != nil {
		return nil, err
	}
	return h.volumesOver(r, w)
}

// fundingRates is one perp market of /stats/fundingRates: its average hourly funding rate over each
// window, in percent of the oracle price (null for a window without updates).
type fundingRates struct {
	Symbol       string             `json:"symbol"`
	MarketIndex  int                `json:"marketIndex"`
	FundingRates map[string]*string `json:"fundingRates"`
}

func (h *handlers) fundingRates(r *nethttp.Request) (any, error) {
	avgs, err := h.store.FundingAverages(r.Context(), h.api.Now().Unix())
	if err != nil {
		return nil, err
	}
	out := make([]fundingRates, len(avgs))
	for i, a := range avgs {
		f := fundingRates{Symbol: a.Symbol, MarketIndex: a.MarketIndex, FundingRates: map[string]*string{}}
		for j, w := range stats.FundingWindows {
			var v *string
			if a.Averages[j] != nil {
				s := strconv.FormatFloat(*a.Averages[j], 'f', 9, 64)
				v = &s
			}
			f.FundingRates[w.Name] = v
		}
		out[i] = f
	}
	return newList(out), nil
}

// rollingPage reads a newest-first page of the last 31 days, paged by token.
func (h *handlers) rollingPage(r *nethttp.Request, scope string, read func(since, until int64, after *series.Cursor, limit int) ([]series.Row, error)) ([]json.RawMessage, *string, error) {
	after, err := httpapi.PageAfter[series.Cursor](h.api, r, scope)
	if err != nil {
		return nil, nil, err
	}
	now := h.api.Now()
	rows, err := read(now.Add(-httpapi.RollingWindow).Unix(), now.Add(events.MaxClockSkew).Unix(), after, pageSize+1)
	if err != nil {
		return nil, nil, err
	}
	rows, next := httpapi.NextPage(h.api, scope, rows, pageSize, func(r series.Row) any { return r.Cursor })
	records := make([]json.RawMessage, len(rows))
	for i, row := range rows {
		records[i] = row.Record
	}
	return records, next, nil
}

// liquidationPage is /stats/liquidations and /stats/bankruptcies: a page of records and the stats.
type liquidationPage[S any] struct {
	Success bool                `json:"success"`
	Stats   S                   `json:"stats"`
	Records []json.RawMessage   `json:"records"`
	Meta    httpapi.RollingMeta `json:"meta"`
}

func (h *handlers) liquidations(bankruptcies bool) httpapi.Func {
	scope := "stats/liquidations"
	if bankruptcies {
		scope = "stats/bankruptcies"
	}
	return func(r *nethttp.Request) (any, error) {
		records, next, err := h.rollingPage(r, scope, func(since, until int64, after *series.Cursor, limit int) ([]series.Row, error) {
			return h.store.Liquidations(r.Context(), bankruptcies, since, until, after, limit)
		})
		if err != nil {
			return nil, err
		}
		meta := httpapi.RollingMeta{NextPage: next}
		if bankruptcies {
			st, err := h.store.BankruptcyStats(r.Context())
			if err != nil {
				return nil, err
			}
			return liquidationPage[stats.BankruptcyStats]{true, st, records, meta}, nil
		}
		now := h.api.Now().Unix()
		counts, err := h.store.LiquidationStats(r.Context(), now-24*3600, now-30*24*3600)
		if err != nil {
			return nil, err
		}
		st := map[string]stats.CountAmount{"24h": counts[0], "30d": counts[1]}
		return liquidationPage[map[string]stats.CountAmount]{true, st, records, meta}, nil
	}
}

func (h *handlers) swaps(r *nethttp.Request) (any, error) {
	records, next, err := h.rollingPage(r, "stats/insuranceFundSwaps", func(since, until int64, after *series.Cursor, limit int) ([]series.Row, error) {
		return h.store.Swaps(r.Context(), since, until, after, limit)
	})
	if err != nil {
		return nil, err
	}
	return httpapi.RawList{Records: records, Meta: httpapi.RollingMeta{NextPage: next}}, nil
}

// leaderboardMeta pages a leaderboard by number.
type leaderboardMeta struct {
	Month        string `json:"month"`
	Sort         string `json:"sort"`
	Records      int    `json:"records"`
	TotalRecords int64  `json:"totalRecords"`
	CurrentPage  int    `json:"currentPage"`
	TotalPages   int64  `json:"totalPages"`
	NextPage     *int   `json:"nextPage"`
}

func (h *handlers) leaderboard(r *nethttp.Request) (any, error) {
	sort, err := httpapi.QueryEnum(r, "sort", string(stats.BoardPnl), "pnl", "volume", "maker", "taker")
	if err != nil {
		return nil, err
	}
	page, err := httpapi.QueryInt(r, "page", 1, 1, stats.MaxPage)
	if err != nil {
		return nil, err
	}
	limit, err := httpapi.QueryInt(r, "limit", stats.DefaultLimit, 1, stats.MaxLimit)
	if err != nil {
		return nil, err
	}
	month, err := stats.ParseMonth(r.URL.Query().Get("month"), h.api.Now())
	if err != nil {
		return nil, err
	}
	q := stats.LeaderboardQuery{Month: month, Board: stats.Board(sort), Page: int(page), Limit: int(limit)}
	res, err := h.store.Leaderboard(r.Context(), q)
	if err != nil {
		return nil, err
	}
	leaders := res.Leaders
	if leaders == nil {
		leaders = []stats.Leader{}
	}
	pages := (res.Total + limit - 1) / limit
	meta := leaderboardMeta{Month: stats.MonthLabel(month), Sort: sort, Records: len(leaders), TotalRecords: res.Total,
		CurrentPage: q.Page, TotalPages: pages}
	if int64(q.Page) < pages {
		next := q.Page + 1
		meta.NextPage = &next
	}
	return struct {
		Success bool            `json:"success"`
		Records []stats.Leader  `json:"records"`
		Meta    leaderboardMeta `json:"meta"`
	}{true, leaders, meta}, nil
}

func (h *handlers) standing(r *nethttp.Request) (any, error) {
	authority := httpapi.PathVar(r, "authority")
	if err := stats.CheckAuthority(authority); err != nil {
		return nil, err
	}
	month, err := stats.ParseMonth(r.URL.Query().Get("month"), h.api.Now())
	if err != nil {
		return nil, err
	}
	st, err := h.store.Standing(r.Context(), month, authority)
	if err != nil {
		return nil, err
	}
	return struct {
		Success bool           `json:"success"`
		Data    stats.Standing `json:"data"`
	}{true, st}, nil
}

// maxRateDays bounds the rate history.
const maxRateDays = 365

func (h *handlers) rateHistory(r *nethttp.Request) (any, error) {
	kind := stats.RateKind(httpapi.PathVar(r, "kind"))
	known := false
	for _, k := range stats.RateKinds {
		known = known || k == kind
	}
	if !known {
		return nil, fault.Errorf(fault.Invalid, "the rate history must be one of deposit, borrow, deposit_balance, borrow_balance")
	}
	days, err := httpapi.QueryInt(r, "days", 30, 1, maxRateDays)
	if err != nil {
		return nil, err
	}
	m, err := h.store.Market(r.Context(), httpapi.PathVar(r, "symbol"))
	if err != nil {
		return nil, err
	}
	if err := stats.CheckSpot(m); err != nil {
		return nil, err
	}
	since := stats.HourOf(h.api.Now().Unix()) - (days*24-1)*stats.Hour
	points, err := h.store.RateHistory(r.Context(), m.Symbol, kind, since)
	if err != nil {
		return nil, err
	}
	rates := make([][2]any, len(points))
	for i, p := range points {
		rates[i] = [2]any{p.Ts, p.Value}
	}
	return struct {
		Success bool     `json:"success"`
		Rates   [][2]any `json:"rates"`
	}{true, rates}, nil
}

// vaultStats is a vault of /stats/vaults: its newest record and its P&L (account value less net
// deposits), token amounts in the deposit token's precision.
type vaultStats struct {
	events.Vault
	Pnl events.Amount `json:"pnl"`
}

func (h *handlers) vaults(r *nethttp.Request) (any, error) {
	vs, err := h.store.Vaults(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]vaultStats, len(vs))
	for i, v := range vs {
		value, ok1 := new(big.Int).SetString(string(v.TotalAccountValue), 10)
		net, ok2 := new(big.Int).SetString(string(v.NetDeposits), 10)
		if !ok1 || !ok2 {
			return nil, fault.Errorf(fault.Internal, "stored vault %s has no integer amounts", v.Vault)
		}
		out[i] = vaultStats{v, events.Amount(value.Sub(value, net).String())}
	}
	return newList(out), nil
}

// vaultConfig is a vault of GET /vaults: what it is and how it charges.
type vaultConfig struct {
	Vault           string        `json:"vault"`
	Name            string        `json:"name"`
	Manager         string        `json:"manager"`
	SpotMarketIndex int           `json:"spotMarketIndex"`
	Symbol          string        `json:"symbol"`
	ManagementFee   events.Amount `json:"managementFee"`
	ProfitShare     events.Amount `json:"profitShare"`
	Permissioned    bool          `json:"permissioned"`
}

func (h *handlers) vaultConfigs(r *nethttp.Request) (any, error) {
	vs, err := h.store.Vaults(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]vaultConfig, len(vs))
	for i, v := range vs {
		out[i] = vaultConfig{Vault: v.Vault, Name: v.Name, Manager: v.Manager, SpotMarketIndex: v.SpotMarketIndex, Symbol: v.Symbol,
			ManagementFee: v.ManagementFee, ProfitShare: v.ProfitShare, Permissioned: v.Permissioned}
	}
	return newList(out), nil
}

func (h *handlers) insuranceFund(r *nethttp.Request) (any, error) {
	funds, err := h.store.InsuranceFunds(r.Context(), h.api.Now().Unix())
	if err != nil {
		return nil, err
	}
	return newList(funds), nil
}

func (h *handlers) params(r *nethttp.Request) (any, error) {
	ts, params, err := h.store.Params(r.Context())
	if err != nil {
		return nil, err
	}
	return struct {
		Success bool            `json:"success"`
		Ts      int64           `json:"ts"`
		Params  json.RawMessage `json:"params"`
	}{true, ts, params}, nil
}
