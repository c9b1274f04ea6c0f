package user

import (
	"context"
	"encoding/json"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/snapshots"
)

// Store reads what the ingest wrote beside the event series. Implementations are safe for concurrent
// use.
type Store interface {
	// Market returns the catalogue entry of symbol, learnt from the events ingested, or a
	// fault.NotFound error.
	Market(ctx context.Context, symbol string) (events.Market, error)
	// Orders returns a page of an account's orders, newest placement first.
	Orders(ctx context.Context, q OrdersQuery) ([]StoredOrder, error)
	// Order returns one order of account, or a fault.NotFound error.
	Order(ctx context.Context, account, orderID string) (StoredOrder, error)
	// OrderEvents returns the actions and fills of orders (all of account), by order id.
	OrderEvents(ctx context.Context, account string, orders []StoredOrder) (map[string][]OrderEvent, error)
	// OrderActions returns up to limit of the actions on account's order orderID, fills included,
	// newest first, strictly before after when set.
	OrderActions(ctx context.Context, account, orderID string, after *ActionCursor, limit int) ([]Action, error)
	// Snapshots returns account's snapshot series of kind over points: the latest snapshot of each
	// point's bucket as the API's entry, nil where there is none.
	Snapshots(ctx context.Context, account, kind string, p snapshots.Points) ([]json.RawMessage, error)
	// LatestSnapshot returns account's newest snapshot of kind before until, nil when there is none.
	LatestSnapshot(ctx context.Context, account, kind string, until int64) (json.RawMessage, error)
}

// OrderCursor is the keyset position of an order in a list: newest placement first.
type OrderCursor struct {
	Ts      int64  `json:"t"`
	OrderID string `json:"o"`
}

// OrdersQuery selects a page of an account's orders.
type OrdersQuery struct {
	Account string
	Filter  string // marketFilter: perp, spot or prediction
	Symbol  string // "" for every market of the filter
	// From and To bound the placement time, both inclusive.
	From, To int64
	HasFill  *bool // nil: every order
	After    *OrderCursor
	Limit    int
}

// StoredOrder is an order as stored: its base, before its actions and fills are folded in.
type StoredOrder struct {
	OrderBase
	PlacedTs int64
}

// ActionCursor is the keyset position of an order action: newest first.
type ActionCursor struct {
	Ts         int64  `json:"t"`
	TxSig      string `json:"s"`
	TxSigIndex int    `json:"i"`
}

// Action is one stored order action record, fills included, as the API serves it.
type Action struct {
	ActionCursor
	Record json.RawMessage
}
