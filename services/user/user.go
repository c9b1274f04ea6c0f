// Package user is the User tag: per-subaccount history keyed by accountId (trades, orders and their
// actions, closed positions, funding payments, liquidations, settlements, swaps, deposits, rewards, LP
// records and account snapshots).
//
// This package holds the domain: how an order's state is folded from its record, its actions and its
// fills; how closed positions follow from an account's fills; which instants a snapshot series
// samples. postgres/ stores the schema and writes the ingest sinks, http/ serves the orders and the
// snapshots, service/ declares the service to the kit (its series among it).
package user

import (
	"cmp"
	"strings"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
)

// Pos is an event's place in an account's history: slot order, the transaction and the event's index
// in it. Events are compared by ts, then slot (slots only grow with time), then signature and index,
// so that any two events of the same history have one order, wherever they were read.
type Pos struct {
	Ts    int64
	Slot  int64
	TxSig string
	Index int
}

// Compare orders p against q: -1, 0 or +1.
func (p Pos) Compare(q Pos) int {
	return cmp.Or(cmp.Compare(p.Ts, q.Ts), cmp.Compare(p.Slot, q.Slot), strings.Compare(p.TxSig, q.TxSig), cmp.Compare(p.Index, q.Index))
}

// FillOrder is a fill's place in its market's history, the order in which fills move positions:
// ts, then the market's fill record id. The protocol numbers a market's fills in the order they
// happen; signatures order the transactions of one slot arbitrarily, so positions derived in
// signature order would close the wrong fills of a busy slot. ts comes first so that the order
// follows the fills' partitions and index; block times never run backwards, so it is the id's order.
type FillOrder struct {
	Ts int64
	ID int64 // fillRecordId
}

// Compare orders p against q: -1, 0 or +1.
func (p FillOrder) Compare(q FillOrder) int {
	return cmp.Or(cmp.Compare(p.Ts, q.Ts), cmp.Compare(p.ID, q.ID))
}

// CheckAccount validates an accountId path value.
func CheckAccount(account string) error {
	if !events.ValidPublicKey(account) {
		return fault.Errorf(fault.Invalid, "accountId must be a subaccount's public key (base58, 32 bytes)")
	}
	return nil
}

// Side is the part a fill's account played in it, and what the fill says of that account's order.
type Side struct {
	Account     string
	OrderID     string
	Direction   string // long or short
	Fee         events.Amount
	OrderBase   events.Amount // the order's base amount
	FilledBase  events.Amount // the order's cumulative filled amounts after the fill
	FilledQuote events.Amount
}

// Sides are the accounts a fill belongs to: its taker's and its maker's (one side when the AMM or an
// external venue was the other; one when an account traded with itself).
func Sides(f *events.Fill) []Side {
	var out []Side
	if f.Taker != "" {
		out = append(out, Side{Account: f.Taker, OrderID: f.TakerOrderID, Direction: f.TakerOrderDirection, Fee: f.TakerFee,
			OrderBase: f.TakerOrderBaseAssetAmount, FilledBase: f.TakerOrderCumulativeBaseAssetAmountFilled,
			FilledQuote: f.TakerOrderCumulativeQuoteAssetAmountFilled})
	}
	if f.Maker != "" && f.Maker != f.Taker {
		out = append(out, Side{Account: f.Maker, OrderID: f.MakerOrderID, Direction: f.MakerOrderDirection, Fee: f.MakerFee,
			OrderBase: f.MakerOrderBaseAssetAmount, FilledBase: f.MakerOrderCumulativeBaseAssetAmountFilled,
			FilledQuote: f.MakerOrderCumulativeQuoteAssetAmountFilled})
	}
	return out
}

// ActingSide is the account an order action (other than a fill) is of, and the order it acts on: the
// record's user when set, else the side whose order id it carries.
func ActingSide(a *events.OrderAction) (account, orderID string, ok bool) {
	switch {
	case a.Taker != "" && a.TakerOrderID != "" && (a.User == "" || a.User == a.Taker):
		return a.Taker, a.TakerOrderID, true
	case a.Maker != "" && a.MakerOrderID != "" && (a.User == "" || a.User == a.Maker):
		return a.Maker, a.MakerOrderID, true
	}
	return "", "", false
}
