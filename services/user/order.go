package user

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/tidemark/tidemark/platform/events"
)

// OrderEvent is an event that moved an order: one of the account's actions on it (place, trigger,
// cancel, expire) or one of its fills.
type OrderEvent struct {
	Pos
	Action      string // events.ActionPlace, ActionFill, ...
	Explanation string
	// Of fills: the order's cumulative filled amounts after the fill, and the account's fee on it.
	FilledBase, FilledQuote events.Amount
	Fee                     events.Amount
}

// OrderBase is what an order is known as before its actions and fills are folded in: its newest
// record, or its place action until a record arrives.
type OrderBase struct {
	// Record is the order's newest record; nil when only its place action is known.
	Record *events.Order
	// Place is the place action, used when there is no record.
	Place *events.OrderAction
	// Account and OrderID name the order.
	Account, OrderID string
}

// Fold is the order's state: base with every event folded in. It depends on the set of events alone,
// not on the order they arrive in, and an event no newer than the record changes nothing the record
// already tells, so a replayed or late action never moves an order backwards:
//   - filled amounts are the largest any record or fill reports, the cumulative fee the larger of
//     the record's and the sum of the fills' fees (each fill is one event, however often it is read);
//   - status, lastActionStatus, lastActionExplanation and lastUpdatedTs are those of the newest
//     event, in slot order; the record counts as of its lastUpdatedTs, after every event of that
//     second (it was written after them);
//   - but a record of the order's placement (lastUpdatedTs is its own ts: the OrderRecord the
//     program emits when the order is placed, which is what the chain gives) counts at its own
//     transaction: the actions and fills after it, even those of its second (a placeAndTake, a JIT
//     maker's fill), are newer, and its fee is the fills' sum, which is negative for a maker paid
//     rebates.
func Fold(base OrderBase, evs []OrderEvent) (*events.Order, error) {
	o, err := start(base)
	if err != nil {
		return nil, err
	}
	filledBase, err := amount(o.BaseAssetAmountFilled)
	if err != nil {
		return nil, err
	}
	filledQuote, err := amount(o.QuoteAssetAmountFilled)
	if err != nil {
		return nil, err
	}
	feeOfRecord, err := amount(o.CumulativeFee)
	if err != nil {
		return nil, err
	}
	feeOfFills := new(big.Int)
	placement := base.Record == nil || base.Record.LastUpdatedTs <= base.Record.Ts
	latest := OrderEvent{Pos: Pos{Ts: o.LastUpdatedTs, Slot: math.MaxInt64, TxSig: "\xff", Index: math.MaxInt}}
	if placement {
		latest = OrderEvent{Pos: Pos{Ts: o.Ts, Slot: o.Slot, TxSig: o.TxSig, Index: o.TxSigIndex}, Action: events.ActionPlace}
	}
	var last *OrderEvent
	evs = slices.Clone(evs)
	slices.SortFunc(evs, func(a, b OrderEvent) int { return a.Pos.Compare(b.Pos) })
	for i := range evs {
		e := &evs[i]
		if i > 0 && e.Pos == evs[i-1].Pos {
			continue // the same event read twice
		}
		if e.Action == events.ActionFill {
			for _, v := range []struct {
				dst *big.Int
				a   events.Amount
			}{{filledBase, e.FilledBase}, {filledQuote, e.FilledQuote}} {
				x, err := amount(v.a)
				if err != nil {
					return nil, err
				}
				if x.Cmp(v.dst) > 0 {
					v.dst.Set(x)
				}
			}
			fee, err := amount(e.Fee)
			if err != nil {
				return nil, err
			}
			feeOfFills.Add(feeOfFills, fee)
		}
		if e.after(latest) {
			latest, last = *e, e
		}
	}
	o.BaseAssetAmountFilled = events.Amount(filledBase.String())
	o.QuoteAssetAmountFilled = events.Amount(filledQuote.String())
	if placement || feeOfFills.Cmp(feeOfRecord) > 0 {
		o.CumulativeFee = events.Amount(feeOfFills.String())
	}
	if last == nil {
		return o, nil
	}
	size, err := amount(o.BaseAssetAmount)
	if err != nil {
		return nil, err
	}
	o.LastUpdatedTs, o.LastActionExplanation = last.Ts, last.Explanation
	switch last.Action {
	case events.ActionPlace:
		o.Status, o.LastActionStatus = events.OrderStatusOpen, events.LastActionOpen
	case events.ActionTrigger:
		o.Status, o.LastActionStatus = events.OrderStatusOpen, events.LastActionTrigger
	case events.ActionFill:
		if size.Sign() > 0 && filledBase.Cmp(size) >= 0 {
			o.Status, o.LastActionStatus = events.OrderStatusFilled, events.LastActionFilled
		} else {
			o.Status, o.LastActionStatus = events.OrderStatusOpen, events.LastActionPartialFill
		}
	case events.ActionCancel:
		o.Status, o.LastActionStatus = events.OrderStatusCanceled, events.LastActionCancelled
		if filledBase.Sign() > 0 {
			o.LastActionStatus = events.LastActionPartialFillCancelled
		}
	case events.ActionExpire:
		o.Status, o.LastActionStatus = events.OrderStatusCanceled, events.LastActionExpired
	}
	return o, nil
}

// after reports whether e happened after f. A record names its transaction and slot but not the
// transaction's place in its block, so two transactions of one slot are told apart by what an order
// goes through: placed, triggered, filled, then cancelled or expired; within a transaction, its log
// says.
func (e *OrderEvent) after(f OrderEvent) bool {
	if e.TxSig == f.TxSig || e.Ts != f.Ts || e.Slot != f.Slot {
		return e.Pos.Compare(f.Pos) > 0
	}
	if c := cmp.Compare(stage(e.Action), stage(f.Action)); c != 0 {
		return c > 0
	}
	return e.Pos.Compare(f.Pos) > 0
}

// stage is where an action comes in an order's life.
func stage(action string) int {
	switch action {
	case events.ActionPlace:
		return 0
	case events.ActionTrigger:
		return 1
	case events.ActionFill:
		return 2
	}
	return 3 // cancel, expire
}

// start is the order as its base tells it.
func start(base OrderBase) (*events.Order, error) {
	if base.Record != nil {
		o := *base.Record
		return &o, nil
	}
	a := base.Place
	if a == nil {
		return nil, fmt.Errorf("order %s of %s has neither a record nor a place action", base.OrderID, base.Account)
	}
	o := &events.Order{
		Tx: a.Tx, User: base.Account,
		Status: events.OrderStatusOpen, MarketType: a.MarketType, MarketFilter: a.MarketFilter, OrderID: base.OrderID,
		MarketIndex: a.MarketIndex, Symbol: a.Symbol, BaseAssetAmountFilled: "0", QuoteAssetAmountFilled: "0",
		LastUpdatedTs: a.Ts, LastActionStatus: events.LastActionOpen, LastActionExplanation: a.ActionExplanation,
		CumulativeFee: "0",
	}
	if o.MarketFilter == "" {
		o.MarketFilter = events.MarketFilter(a.MarketType, a.Symbol)
	}
	if a.Taker == base.Account && a.TakerOrderID == base.OrderID {
		o.Direction, o.BaseAssetAmount = a.TakerOrderDirection, a.TakerOrderBaseAssetAmount
	} else {
		o.Direction, o.BaseAssetAmount = a.MakerOrderDirection, a.MakerOrderBaseAssetAmount
	}
	if o.BaseAssetAmount == "" {
		o.BaseAssetAmount = "0"
	}
	return o, nil
}

func amount(a events.Amount) (*big.Int, error) {
	if a == "" {
		return new(big.Int), nil
	}
	return a.Big()
}

// placeOnly is the order as a place action tells it: the fields the API always has, without those
// only the order's record holds.
type placeOnly struct {
	Ts                     int64             `json:"ts"`
	TxSig                  string            `json:"txSig"`
	TxSigIndex             int               `json:"txSigIndex"`
	Slot                   int64             `json:"slot"`
	User                   string            `json:"user"`
	Status                 string            `json:"status"`
	MarketType             events.MarketType `json:"marketType"`
	MarketFilter           string            `json:"marketFilter"`
	OrderID                string            `json:"orderId"`
	MarketIndex            int               `json:"marketIndex"`
	BaseAssetAmount        events.Amount     `json:"baseAssetAmount"`
	BaseAssetAmountFilled  events.Amount     `json:"baseAssetAmountFilled"`
	QuoteAssetAmountFilled events.Amount     `json:"quoteAssetAmountFilled"`
	Direction              string            `json:"direction"`
	Symbol                 string            `json:"symbol"`
	LastUpdatedTs          int64             `json:"lastUpdatedTs"`
	LastActionStatus       string            `json:"lastActionStatus"`
	LastActionExplanation  string            `json:"lastActionExplanation"`
	CumulativeFee          events.Amount     `json:"cumulativeFee"`
}

// OrderJSON is the API's JSON of a folded order: every field of the record when the order's record was
// seen, the fields a place action tells otherwise.
func OrderJSON(o *events.Order, fromRecord bool) ([]byte, error) {
	if fromRecord {
		return json.Marshal(o)
	}
	return json.Marshal(placeOnly{
		Ts: o.Ts, TxSig: o.TxSig, TxSigIndex: o.TxSigIndex, Slot: o.Slot, User: o.User, Status: o.Status,
		MarketType: o.MarketType, MarketFilter: o.MarketFilter, OrderID: o.OrderID, MarketIndex: o.MarketIndex,
		BaseAssetAmount: o.BaseAssetAmount, BaseAssetAmountFilled: o.BaseAssetAmountFilled,
		QuoteAssetAmountFilled: o.QuoteAssetAmountFilled, Direction: o.Direction, Symbol: o.Symbol,
		LastUpdatedTs: o.LastUpdatedTs, LastActionStatus: o.LastActionStatus,
		LastActionExplanation: o.LastActionExplanation, CumulativeFee: o.CumulativeFee,
	})
}
