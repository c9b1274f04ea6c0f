package user_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/user"
)

func ev(ts, slot int64, action string, filledBase, filledQuote, fee events.Amount) user.OrderEvent {
	return user.OrderEvent{Pos: user.Pos{Ts: ts, Slot: slot, TxSig: "sig", Index: int(slot % 3)}, Action: action,
		Explanation: events.ExplanationNone, FilledBase: filledBase, FilledQuote: filledQuote, Fee: fee}
}

func place(ts int64) *events.OrderAction {
	return &events.OrderAction{Tx: events.Tx{Ts: ts, TxSig: "placesig", Slot: ts * 2},
		Action: events.ActionPlace, ActionExplanation: events.ExplanationNone,
		MarketIndex: 0, MarketType: events.MarketTypePerp, Taker: "acct", TakerOrderID: "7", TakerOrderDirection: events.DirectionLong,
		TakerOrderBaseAssetAmount: "3000", MarketFilter: events.FilterPerp, Symbol: "SOL-PERP"}
}

// TestFoldInAnyOrder folds an order's events delivered in every order, some twice: the state is that
// of the newest event in slot order, the filled amounts the largest reported and the fee the sum of
// its fills, whatever the order of arrival.
func TestFoldInAnyOrder(t *testing.T) {
	evs := []user.OrderEvent{
		ev(101, 202, events.ActionFill, "1000", "100", "10"),
		ev(102, 204, events.ActionFill, "2000", "210", "11"),
		ev(104, 208, events.ActionCancel, "", "", ""),
		ev(103, 206, events.ActionTrigger, "", "", ""),
	}
	base := user.OrderBase{Place: place(100), Account: "acct", OrderID: "7"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		shuffled := append([]user.OrderEvent(nil), evs...)
		shuffled = append(shuffled, evs[rng.IntN(len(evs))]) // a replay
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		o, err := user.Fold(base, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if o.Status != events.OrderStatusCanceled || o.LastActionStatus != events.LastActionPartialFillCancelled ||
			o.LastUpdatedTs != 104 || o.BaseAssetAmountFilled != "2000" || o.QuoteAssetAmountFilled != "210" || o.CumulativeFee != "21" {
			t.Fatalf("folded %+v", o)
		}
	}
}

func TestFold(t *testing.T) {
	record := &events.Order{Tx: events.Tx{Ts: 100, TxSig: "placesig", Slot: 200},
		User: "acct", Status: events.OrderStatusOpen, OrderType: events.OrderTypeLimit,
		MarketType: events.MarketTypePerp, MarketFilter: events.FilterPerp, OrderID: "7", BaseAssetAmount: "3000",
		BaseAssetAmountFilled: "1000", QuoteAssetAmountFilled: "100", Direction: events.DirectionLong, Symbol: "SOL-PERP",
		LastUpdatedTs: 101, LastActionStatus: events.LastActionPartialFill, LastActionExplanation: events.ExplanationOrderFilledWithMatch,
		CumulativeFee: "10"}
	placement := &events.Order{Tx: events.Tx{Ts: 100, TxSig: "placesig", Slot: 200},
		User: "acct", Status: events.OrderStatusOpen, OrderType: events.OrderTypeLimit,
		MarketType: events.MarketTypePerp, MarketFilter: events.FilterPerp, OrderID: "7", BaseAssetAmount: "3000",
		BaseAssetAmountFilled: "0", QuoteAssetAmountFilled: "0", Direction: events.DirectionLong, Symbol: "SOL-PERP",
		LastUpdatedTs: 100, LastActionStatus: events.LastActionOpen, LastActionExplanation: events.ExplanationNone,
		CumulativeFee: "0"}
	tests := []struct {
		name                 string
		base                 user.OrderBase
		evs                  []user.OrderEvent
		status, last, filled string
		fee                  string
		updated              int64
	}{
		{"place action alone", user.OrderBase{Place: place(100)}, nil, events.OrderStatusOpen, events.LastActionOpen, "0", "0", 100},
		{"fully filled", user.OrderBase{Place: place(100)}, []user.OrderEvent{
			ev(101, 202, events.ActionFill, "1000", "100", "10"), ev(102, 204, events.ActionFill, "3000", "300", "20")},
			events.OrderStatusFilled, events.LastActionFilled, "3000", "30", 102},
		{"partly filled", user.OrderBase{Place: place(100)}, []user.OrderEvent{ev(101, 202, events.ActionFill, "1000", "100", "10")},
			events.OrderStatusOpen, events.LastActionPartialFill, "1000", "10", 101},
		{"cancelled unfilled", user.OrderBase{Place: place(100)}, []user.OrderEvent{ev(101, 202, events.ActionCancel, "", "", "")},
			events.OrderStatusCanceled, events.LastActionCancelled, "0", "0", 101},
		{"expired", user.OrderBase{Place: place(100)}, []user.OrderEvent{ev(110, 220, events.ActionExpire, "", "", "")},
			events.OrderStatusCanceled, events.LastActionExpired, "0", "0", 110},
		// The record tells the state as of its lastUpdatedTs: the fill of that second, read late,
		// changes nothing, and an older cancel never moves the order backwards.
		{"record, then a late fill of its second", user.OrderBase{Record: record}, []user.OrderEvent{
			ev(101, 202, events.ActionFill, "1000", "100", "10"), ev(100, 201, events.ActionCancel, "", "", "")},
			events.OrderStatusOpen, events.LastActionPartialFill, "1000", "10", 101},
		{"record, then a newer fill", user.OrderBase{Record: record}, []user.OrderEvent{
			ev(101, 202, events.ActionFill, "1000", "100", "10"), ev(105, 210, events.ActionFill, "3000", "320", "12")},
			events.OrderStatusFilled, events.LastActionFilled, "3000", "22", 105},
		// The chain's OrderRecord is the placement: what follows it, in its own second too, is newer.
		{"placement record, filled in its second", user.OrderBase{Record: placement}, []user.OrderEvent{
			{Pos: user.Pos{Ts: 100, Slot: 200, TxSig: "placesig", Index: 1}, Action: events.ActionPlace, Explanation: events.ExplanationNone},
			{Pos: user.Pos{Ts: 100, Slot: 200, TxSig: "placesig", Index: 2}, Action: events.ActionFill,
				Explanation: events.ExplanationOrderFilledWithMatch, FilledBase: "3000", FilledQuote: "300", Fee: "-3"}},
			events.OrderStatusFilled, events.LastActionFilled, "3000", "-3", 100},
		{"placement record, rebates later", user.OrderBase{Record: placement}, []user.OrderEvent{
			ev(101, 202, events.ActionFill, "1000", "100", "-1"), ev(102, 204, events.ActionFill, "2000", "200", "-1")},
			events.OrderStatusOpen, events.LastActionPartialFill, "2000", "-2", 102},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.base.Account, tt.base.OrderID = "acct", "7"
			o, err := user.Fold(tt.base, tt.evs)
			if err != nil {
				t.Fatal(err)
			}
			if o.Status != tt.status || o.LastActionStatus != tt.last || string(o.BaseAssetAmountFilled) != tt.filled ||
				string(o.CumulativeFee) != tt.fee || o.LastUpdatedTs != tt.updated {
				t.Fatalf("folded %s/%s filled %s fee %s at %d", o.Status, o.LastActionStatus, o.BaseAssetAmountFilled, o.CumulativeFee, o.LastUpdatedTs)
			}
		})
	}
}
