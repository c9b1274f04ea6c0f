// Package http serves the User tag's orders, order actions and snapshot series; the event series are
// declared in service/.
package http

import (
	"encoding/json"
	nethttp "net/http"
	"strings"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/snapshots"
	"github.com/tidemark/tidemark/services/user"
)

// pageSize is how many orders or actions a page holds.
const pageSize = 20

// Routes registers the orders, order actions and snapshot routes on api.
func Routes(api *httpapi.API, store user.Store) {
	h := &handlers{api: api, store: store}
	fresh := []httpapi.RouteOption{httpapi.CacheControl("public, max-age=2"), httpapi.Coalesce()}
	// Literal segments first: /orders/id/7 is the order, not the orders of a market kind "id".
	api.Handle(nethttp.MethodGet, "/user/{accountId}/orders/id/{orderId}", h.order, fresh...)
	api.Handle(nethttp.MethodGet, "/user/{accountId}/orders/{orderId}/actions", h.actions, fresh...)
	api.Handle(nethttp.MethodGet, "/user/{accountId}/orders/{marketFilter}", h.orders, fresh...)
	api.Handle(nethttp.MethodGet, "/user/{accountId}/orders/{marketFilter}/{symbol}", h.orders, fresh...)
	hourly := []httpapi.RouteOption{httpapi.CacheControl("public, max-age=60"), httpapi.Coalesce()}
	api.Handle(nethttp.MethodGet, "/user/{accountId}/snapshots/trading", h.snapshots(user.SnapshotTrading), hourly...)
	api.Handle(nethttp.MethodGet, "/user/{accountId}/snapshots/earn", h.snapshots(user.SnapshotEarn), hourly...)
	api.Handle(nethttp.MethodGet, "/user/{accountId}/snapshots/vaults", h.snapshots(user.SnapshotVault), hourly...)
}

type handlers struct {
	api   *httpapi.API
	store user.Store
}

// account reads and checks the accountId path variable.
func account(r *nethttp.Request) (string, error) {
	a := httpapi.PathVar(r, "accountId")
	return a, user.CheckAccount(a)
}

// orderID reads and checks the orderId path variable: the protocol's order ids are unsigned integers.
func orderID(r *nethttp.Request) (string, error) {
	id := httpapi.PathVar(r, "orderId")
	if id == "" || len(id) > 20 || strings.Trim(id, "0123456789") != "" {
		return "", fault.Errorf(fault.Invalid, "orderId must be an unsigned integer of at most 20 digits")
	}
	return id, nil
}

func (h *handlers) orders(r *nethttp.Request) (any, error) {
	acct, err := account(r)
	if err != nil {
		return nil, err
	}
	filter, err := marketFilter(r)
	if err != nil {
		return nil, err
	}
	now := h.api.Now()
	from, err := httpapi.QueryInt(r, "startTs", now.Add(-httpapi.RollingWindow).Unix(), 0, 1<<40)
	if err != nil {
		return nil, err
	}
	to, err := httpapi.QueryInt(r, "endTs", now.Unix(), 0, 1<<40)
	if err != nil {
		return nil, err
	}
	if from > to {
		return nil, fault.Errorf(fault.Invalid, "startTs must not be after endTs")
	}
	hasFill, err := queryBool(r, "hasFill")
	if err != nil {
		return nil, err
	}
	q := user.OrdersQuery{Account: acct, Filter: filter, From: from, To: to, HasFill: hasFill, Limit: pageSize + 1}
	scope := "user/" + acct + "/orders/" + filter
	if sym := httpapi.PathVar(r, "symbol"); sym != "" {
		m, err := h.store.Market(r.Context(), sym)
		if err != nil {
			return nil, err
		}
		if err := markets.CheckFilter(m, filter); err != nil {
			return nil, err
		}
		q.Symbol, scope = sym, scope+"/"+sym
	}
	if q.After, err = httpapi.PageAfter[user.OrderCursor](h.api, r, scope); err != nil {
		return nil, err
	}
	orders, err := h.store.Orders(r.Context(), q)
	if err != nil {
		return nil, err
	}
	orders, next := httpapi.NextPage(h.api, scope, orders, pageSize, func(o user.StoredOrder) any {
		return user.OrderCursor{Ts: o.PlacedTs, OrderID: o.OrderID}
	})
	records, err := h.fold(r, acct, orders)
	if err != nil {
		return nil, err
	}
	return httpapi.RawList{Records: records, Meta: httpapi.RollingMeta{NextPage: next}}, nil
}

// fold is the API's JSON of orders, each folded with its actions and fills.
func (h *handlers) fold(r *nethttp.Request, acct string, orders []user.StoredOrder) ([]json.RawMessage, error) {
	evs, err := h.store.OrderEvents(r.Context(), acct, orders)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(orders))
	for i, o := range orders {
		folded, err := user.Fold(o.OrderBase, evs[o.OrderID])
		if err != nil {
			return nil, err
		}
		if out[i], err = user.OrderJSON(folded, o.Record != nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (h *handlers) order(r *nethttp.Request) (any, error) {
	acct, err := account(r)
	if err != nil {
		return nil, err
	}
	id, err := orderID(r)
	if err != nil {
		return nil, err
	}
	o, err := h.store.Order(r.Context(), acct, id)
	if err != nil {
		return nil, err
	}
	records, err := h.fold(r, acct, []user.StoredOrder{o})
	if err != nil {
		return nil, err
	}
	return struct {
		Success bool            `json:"success"`
		Record  json.RawMessage `json:"record"`
	}{true, records[0]}, nil
}

func (h *handlers) actions(r *nethttp.Request) (any, error) {
	acct, err := account(r)
	if err != nil {
		return nil, err
	}
	id, err := orderID(r)
	if err != nil {
		return nil, err
	}
	scope := "user/" + acct + "/orders/" + id + "/actions"
	after, err := httpapi.PageAfter[user.ActionCursor](h.api, r, scope)
	if err != nil {
		return nil, err
	}
	acts, err := h.store.OrderActions(r.Context(), acct, id, after, pageSize+1)
	if err != nil {
		return nil, err
	}
	acts, next := httpapi.NextPage(h.api, scope, acts, pageSize, func(a user.Action) any { return a.ActionCursor })
	records := make([]json.RawMessage, len(acts))
	for i, a := range acts {
		records[i] = a.Record
	}
	return httpapi.RawList{Records: records, Meta: httpapi.RollingMeta{NextPage: next}}, nil
}

func (h *handlers) snapshots(kind string) httpapi.Func {
	return func(r *nethttp.Request) (any, error) {
		acct, err := account(r)
		if err != nil {
			return nil, err
		}
		days, err := snapshots.Days(r)
		if err != nil {
			return nil, err
		}
		points := snapshots.PointsOf(h.api.Now(), days)
		snaps, err := h.store.Snapshots(r.Context(), acct, kind, points)
		if err != nil {
			return nil, err
		}
		if kind != user.SnapshotTrading {
			return struct {
				Success   bool              `json:"success"`
				Snapshots []json.RawMessage `json:"snapshots"`
			}{true, snaps}, nil
		}
		latest, err := h.store.LatestSnapshot(r.Context(), acct, kind, points.End())
		if err != nil {
			return nil, err
		}
		var metrics *snapshots.TradingMetrics
		if latest != nil {
			metrics = new(snapshots.TradingMetrics)
			if err := json.Unmarshal(latest, metrics); err != nil {
				return nil, err
			}
		}
		return struct {
			Success   bool                      `json:"success"`
			Snapshots []json.RawMessage         `json:"snapshots"`
			Metrics   *snapshots.TradingMetrics `json:"metrics"`
		}{true, snaps, metrics}, nil
	}
}

func marketFilter(r *nethttp.Request) (string, error) {
	f := httpapi.PathVar(r, "marketFilter")
	switch f {
	case events.FilterPerp, events.FilterSpot, events.FilterPrediction:
		return f, nil
	}
	return "", fault.Errorf(fault.Invalid, "marketFilter must be one of perp, spot, prediction")
}

func queryBool(r *nethttp.Request, name string) (*bool, error) {
	switch r.URL.Query().Get(name) {
	case "":
		return nil, nil
	case "true":
		t := true
		return &t, nil
	case "false":
		f := false
		return &f, nil
	}
	return nil, fault.Errorf(fault.Invalid, "%s must be true or false", name)
}
