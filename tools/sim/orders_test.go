package sim_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/user"
	"github.com/tidemark/tidemark/tools/sim"
)

// orderKey names an order: order ids are per account on the protocol.
type orderKey struct{ user, id string }

// orderIDsPerMinute is the block of ids every account has in a minute: the n-th order an account
// places in minute m (since the epoch) is m*orderIDsPerMinute + n.
const orderIDsPerMinute = 1000

// orderHistory is what a consumer folding orders sees: each order's record, its actions and the fills
// naming it, each with its position in the stream.
type orderHistory struct {
	key    orderKey
	rec    *events.Order
	recAt  int
	acts   []*events.OrderAction
	actsAt []int
	fills  []*events.Fill // fills naming it as taker or maker order, in stream order
	fillAt []int
	taker  []bool // per fill: the order was the fill's taker order
}

type hourOfOrders struct {
	fills  int
	orders map[orderKey]*orderHistory
	byKind map[string]int // "taker", "maker", "other"
}

var (
	ordersOnce  sync.Once
	ordersHour  *hourOfOrders
	ordersStart = windowStart.Add(3 * time.Hour)
)

// generateOrders generates an hour of a busy exchange and indexes its orders; shared by the tests.
func generateOrders(t *testing.T) *hourOfOrders {
	t.Helper()
	ordersOnce.Do(func() {
		s := sim.New(sim.Config{Seed: 21, Authorities: 120, FillsPerMinute: 250})
		h := &hourOfOrders{orders: map[orderKey]*orderHistory{}}
		get := func(k orderKey) *orderHistory {
			o := h.orders[k]
			if o == nil {
				o = &orderHistory{key: k}
				h.orders[k] = o
			}
			return o
		}
		for i, m := range generate(t, s, ordersStart, ordersStart.Add(time.Hour)) {
			switch r := decode(t, m).(type) {
			case *events.Order:
				o := get(orderKey{r.User, r.OrderID})
				if o.rec != nil {
					t.Fatalf("two records of order %v", o.key)
				}
				o.rec, o.recAt = r, i
			case *events.Fill:
				if r.Action != events.ActionFill {
					k := orderKey{r.Taker, r.TakerOrderID}
					if r.Taker == "" {
						k = orderKey{r.Maker, r.MakerOrderID}
					}
					if r.Taker != "" && r.Maker != "" {
						t.Fatalf("%s action names a taker and a maker order", r.Action)
					}
					o := get(k)
					o.acts, o.actsAt = append(o.acts, r), append(o.actsAt, i)
					continue
				}
				h.fills++
				for _, side := range []struct {
					user, id string
					taker    bool
				}{{r.Taker, r.TakerOrderID, true}, {r.Maker, r.MakerOrderID, false}} {
					if side.user == "" {
						continue
					}
					o := get(orderKey{side.user, side.id})
					o.fills, o.fillAt, o.taker = append(o.fills, r), append(o.fillAt, i), append(o.taker, side.taker)
				}
			}
		}
		// A record is the order's placement, as the chain gives it: the state the tests check is
		// what a consumer folds from it, its actions and its fills.
		for _, o := range h.orders {
			if o.rec == nil {
				continue
			}
			var evs []user.OrderEvent
			for _, a := range o.acts {
				evs = append(evs, user.OrderEvent{Pos: user.Pos{Ts: a.Ts, Slot: a.Slot, TxSig: a.TxSig, Index: a.TxSigIndex},
					Action: a.Action, Explanation: a.ActionExplanation})
			}
			for _, f := range o.fills {
				for _, side := range user.Sides(f) {
					if side.Account == o.key.user && side.OrderID == o.key.id {
						evs = append(evs, user.OrderEvent{Pos: user.Pos{Ts: f.Ts, Slot: f.Slot, TxSig: f.TxSig, Index: f.TxSigIndex},
							Action: events.ActionFill, Explanation: f.ActionExplanation,
							FilledBase: side.FilledBase, FilledQuote: side.FilledQuote, Fee: side.Fee})
					}
				}
			}
			folded, err := user.Fold(user.OrderBase{Record: o.rec, Account: o.key.user, OrderID: o.key.id}, evs)
			if err != nil {
				t.Fatalf("fold order %v: %v", o.key, err)
			}
			o.rec = folded
		}
		ordersHour = h
	})
	if ordersHour == nil {
		t.Fatal("generating the hour failed")
	}
	return ordersHour
}

func i64(t *testing.T, a events.Amount) int64 {
	t.Helper()
	v, err := a.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// side returns whether o was the taker order of its fills (all fills agree), and false with no fills.
func (o *orderHistory) side(t *testing.T) bool {
	t.Helper()
	for _, tk := range o.taker {
		if tk != o.taker[0] {
			t.Fatalf("order %v is the taker order of some fills and the maker order of others", o.key)
		}
	}
	return len(o.taker) > 0 && o.taker[0]
}

// actions returns o's actions of one kind with their stream positions.
func (o *orderHistory) actions(kind string) (acts []*events.OrderAction, at []int) {
	for i, a := range o.acts {
		if a.Action == kind {
			acts, at = append(acts, a), append(at, o.actsAt[i])
		}
	}
	return acts, at
}

// sideOf returns the order side an order action fills in: the taker fields, or the maker fields.
func sideOf(a *events.OrderAction) (dir string, size, base, quote events.Amount) {
	if a.Taker != "" {
		return a.TakerOrderDirection, a.TakerOrderBaseAssetAmount, a.TakerOrderCumulativeBaseAssetAmountFilled,
			a.TakerOrderCumulativeQuoteAssetAmountFilled
	}
	return a.MakerOrderDirection, a.MakerOrderBaseAssetAmount, a.MakerOrderCumulativeBaseAssetAmountFilled,
		a.MakerOrderCumulativeQuoteAssetAmountFilled
}

func TestEveryOrderHasARecordAndOnePlaceActionFirst(t *testing.T) {
	h := generateOrders(t)
	postOnlyMakers, makers := 0, 0
	for _, o := range h.orders {
		if o.rec == nil {
			t.Fatalf("order %v has %d actions and %d fills but no order record", o.key, len(o.acts), len(o.fills))
		}
		places, placeAt := o.actions(events.ActionPlace)
		if len(places) != 1 {
			t.Fatalf("order %v has %d place actions", o.key, len(places))
		}
		p, r := places[0], o.rec
		dir, size, base, quote := sideOf(p)
		if p.Ts != r.Ts || p.TxSig != r.TxSig || p.Slot != r.Slot || dir != r.Direction || size != r.BaseAssetAmount ||
			base != "0" || quote != "0" || p.MarketIndex != r.MarketIndex || p.MarketType != r.MarketType || p.User != r.User {
			t.Fatalf("order %v: place action %+v does not match its record %+v", o.key, p, r)
		}
		if (p.Maker != "") != r.PostOnly {
			t.Fatalf("order %v: post-only %v but the place action names it as maker %v", o.key, r.PostOnly, p.Maker != "")
		}
		// The order exists before anything happens to it, inside the minute of its id.
		first := max(o.recAt, placeAt[0])
		for i, a := range o.acts {
			if a.Action != events.ActionPlace && (o.actsAt[i] < first || a.Ts < r.Ts || a.Slot < r.Slot) {
				t.Fatalf("order %v: %s action at %d before its placement at %d", o.key, a.Action, a.Ts, r.Ts)
			}
		}
		for i, f := range o.fills {
			if o.fillAt[i] < first || f.Ts < r.Ts || f.Slot < r.Slot {
				t.Fatalf("order %v: fill %s at %d (slot %d, message %d) before its placement at %d (slot %d, message %d)",
					o.key, f.FillRecordID, f.Ts, f.Slot, o.fillAt[i], r.Ts, r.Slot, first)
			}
			if f.MarketIndex != r.MarketIndex || f.MarketType != r.MarketType {
				t.Fatalf("order %v in market %d fills in market %d", o.key, r.MarketIndex, f.MarketIndex)
			}
			if f.Ts/60 != r.Ts/60 {
				t.Fatalf("order %v placed at %d is filled at %d, another minute", o.key, r.Ts, f.Ts)
			}
		}
		if r.LastUpdatedTs/60 != r.Ts/60 {
			t.Fatalf("order %v placed at %d last updated at %d, another minute", o.key, r.Ts, r.LastUpdatedTs)
		}
		id, err := strconv.ParseInt(r.OrderID, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if minute := (r.Ts - sim.Epoch().Unix()) / 60; (id-1)/orderIDsPerMinute != minute {
			t.Fatalf("order %v placed in minute %d has an id of minute %d", o.key, minute, (id-1)/orderIDsPerMinute)
		}
		if len(o.fills) > 0 && !o.side(t) {
			makers++
			if r.PostOnly && r.OrderType == events.OrderTypeLimit {
				postOnlyMakers++
			}
		}
	}
	if makers == 0 || float64(postOnlyMakers) < 0.9*float64(makers) {
		t.Errorf("%d of %d maker orders are post-only limit orders, want most", postOnlyMakers, makers)
	}
}

func TestEveryFillNamesItsOrders(t *testing.T) {
	h := generateOrders(t)
	withMaker := 0
	for _, o := range h.orders {
		for i, f := range o.fills {
			r := o.rec
			dir, size := f.TakerOrderDirection, f.TakerOrderBaseAssetAmount
			if !o.taker[i] {
				dir, size = f.MakerOrderDirection, f.MakerOrderBaseAssetAmount
				withMaker++
			}
			if dir != r.Direction || size != r.BaseAssetAmount {
				t.Fatalf("fill %s: order %v as %s of %s, its record says %s of %s", f.FillRecordID, o.key,
					dir, size, r.Direction, r.BaseAssetAmount)
			}
		}
	}
	// Every fill with a maker was indexed under its maker order, which has a record (checked above).
	if withMaker == 0 || withMaker > h.fills {
		t.Fatalf("%d maker sides of %d fills", withMaker, h.fills)
	}
	jit := 0
	for _, o := range h.orders {
		for i, f := range o.fills {
			if !o.taker[i] || f.Maker == "" {
				continue
			}
			m := h.orders[orderKey{f.Maker, f.MakerOrderID}]
			if m == nil {
				t.Fatalf("fill %s: no maker order %s of %s", f.FillRecordID, f.MakerOrderID, f.Maker)
			}
			// A JIT maker places its order in the fill's transaction, for that fill alone.
			if f.ActionExplanation == events.ExplanationOrderFilledWithAmmJit || f.ActionExplanation == events.ExplanationOrderFilledWithMatchJit {
				jit++
				if m.rec.TxSig != f.TxSig || len(m.fills) != 1 || m.rec.Status != events.OrderStatusFilled || f.Filler != f.Maker {
					t.Fatalf("JIT fill %s (filler %s): maker order %+v with %d fills", f.FillRecordID, f.Filler, m.rec, len(m.fills))
				}
			}
		}
	}
	if jit == 0 {
		t.Error("no JIT fills")
	}
}

func TestOrdersFoldFromTheirFills(t *testing.T) {
	h := generateOrders(t)
	takerOrders, multiTaker, multiMaker, bigMaker := 0, 0, 0, 0
	for _, o := range h.orders {
		if len(o.fills) == 0 {
			continue
		}
		r := o.rec
		isTaker := o.side(t)
		var base, quote, fee, lastTs int64
		lastExpl := ""
		for i, f := range o.fills {
			b, q := i64(t, f.BaseAssetAmountFilled), i64(t, f.QuoteAssetAmountFilled)
			cumBase, cumQuote, feeOf := f.TakerOrderCumulativeBaseAssetAmountFilled, f.TakerOrderCumulativeQuoteAssetAmountFilled, f.TakerFee
			if !isTaker {
				cumBase, cumQuote, feeOf = f.MakerOrderCumulativeBaseAssetAmountFilled, f.MakerOrderCumulativeQuoteAssetAmountFilled, f.MakerFee
			}
			if f.Ts < lastTs {
				t.Fatalf("order %v: fill at %d after one at %d", o.key, f.Ts, lastTs)
			}
			base, quote, fee, lastTs, lastExpl = base+b, quote+q, fee+i64(t, feeOf), f.Ts, f.ActionExplanation
			if i64(t, cumBase) != base || i64(t, cumQuote) != quote {
				t.Fatalf("order %v fill %d: cumulative %s/%s, want the sums %d/%d", o.key, i, cumBase, cumQuote, base, quote)
			}
		}
		size := i64(t, r.BaseAssetAmount)
		if i64(t, r.BaseAssetAmountFilled) != base || i64(t, r.QuoteAssetAmountFilled) != quote || i64(t, r.CumulativeFee) != fee {
			t.Fatalf("order %v: record filled %s/%s fee %s, fills sum to %d/%d fee %d", o.key,
				r.BaseAssetAmountFilled, r.QuoteAssetAmountFilled, r.CumulativeFee, base, quote, fee)
		}
		if base > size {
			t.Fatalf("order %v: %d filled of %d", o.key, base, size)
		}
		cancels, _ := o.actions(events.ActionCancel)
		switch {
		case base == size:
			if r.Status != events.OrderStatusFilled || r.LastActionStatus != events.LastActionFilled || len(cancels) != 0 {
				t.Fatalf("order %v filled whole: status %s, last action %s, %d cancels", o.key, r.Status, r.LastActionStatus, len(cancels))
			}
		case len(cancels) == 0:
			if r.Status != events.OrderStatusOpen || r.LastActionStatus != events.LastActionPartialFill {
				t.Fatalf("order %v partly filled: status %s, last action %s", o.key, r.Status, r.LastActionStatus)
			}
		}
		if len(cancels) == 0 && (r.LastUpdatedTs != lastTs || r.LastActionExplanation != lastExpl) {
			t.Fatalf("order %v: last updated %d (%s), its last fill at %d (%s)", o.key, r.LastUpdatedTs,
				r.LastActionExplanation, lastTs, lastExpl)
		}
		switch {
		case isTaker:
			takerOrders++
			if len(o.fills) > 1 {
				multiTaker++
				if len(o.fills) > 3 {
					t.Fatalf("taker order %v has %d fills", o.key, len(o.fills))
				}
				if span := lastTs - o.fills[0].Ts; span < 1 || span > 8 {
					t.Fatalf("taker order %v: fills over %d seconds", o.key, span)
				}
			}
		case len(o.fills) > 1:
			multiMaker++
			if len(o.fills) >= 4 {
				bigMaker++
			}
		}
	}
	if share := float64(multiTaker) / float64(takerOrders); share < 0.12 || share > 0.18 {
		t.Errorf("%d of %d taker orders (%.3f) have several fills, want about 15%%", multiTaker, takerOrders, share)
	}
	if multiMaker == 0 || bigMaker == 0 {
		t.Errorf("%d maker orders with several fills, %d with four or more", multiMaker, bigMaker)
	}
}

func TestPartlyFilledOrdersAreCancelledAfterTheirLastFill(t *testing.T) {
	h := generateOrders(t)
	byTaker := map[bool]int{}
	for _, o := range h.orders {
		cancels, at := o.actions(events.ActionCancel)
		if len(cancels) == 0 {
			continue
		}
		r, c := o.rec, cancels[0]
		if len(cancels) > 1 {
			t.Fatalf("order %v cancelled %d times", o.key, len(cancels))
		}
		_, size, base, quote := sideOf(c)
		if size != r.BaseAssetAmount || base != r.BaseAssetAmountFilled || quote != r.QuoteAssetAmountFilled {
			t.Fatalf("order %v: cancel says %s/%s of %s filled, record %s/%s of %s", o.key, base, quote, size,
				r.BaseAssetAmountFilled, r.QuoteAssetAmountFilled, r.BaseAssetAmount)
		}
		if r.Status != events.OrderStatusCanceled || r.LastUpdatedTs != c.Ts || r.LastActionExplanation != events.ExplanationNone {
			t.Fatalf("order %v cancelled at %d: status %s, last updated %d (%s)", o.key, c.Ts, r.Status, r.LastUpdatedTs, r.LastActionExplanation)
		}
		if len(o.fills) == 0 {
			if r.LastActionStatus != events.LastActionCancelled {
				t.Fatalf("unfilled order %v cancelled: last action %s", o.key, r.LastActionStatus)
			}
			continue
		}
		if r.LastActionStatus != events.LastActionPartialFillCancelled || base == size {
			t.Fatalf("order %v with fills cancelled: last action %s, %s of %s filled", o.key, r.LastActionStatus, base, size)
		}
		last := len(o.fills) - 1
		if c.Ts <= o.fills[last].Ts || at[0] < o.fillAt[last] || c.Slot <= o.fills[last].Slot {
			t.Fatalf("order %v cancelled at %d, not after its last fill at %d", o.key, c.Ts, o.fills[last].Ts)
		}
		byTaker[o.side(t)]++
	}
	if byTaker[true] == 0 || byTaker[false] == 0 {
		t.Errorf("partly filled orders cancelled: %d taker orders, %d maker orders; want both", byTaker[true], byTaker[false])
	}
}

func TestTriggerOrdersAreTriggeredBeforeTheirFills(t *testing.T) {
	h := generateOrders(t)
	kinds := map[string]int{}
	for _, o := range h.orders {
		r := o.rec
		triggers, at := o.actions(events.ActionTrigger)
		if r.OrderType != events.OrderTypeTriggerMarket && r.OrderType != events.OrderTypeTriggerLimit {
			if len(triggers) != 0 || r.TriggerPrice != "0" {
				t.Fatalf("%s order %v: trigger price %s, %d trigger actions", r.OrderType, o.key, r.TriggerPrice, len(triggers))
			}
			continue
		}
		kinds[r.OrderType+" "+r.TriggerCondition]++
		if len(triggers) != 1 || len(o.fills) == 0 || r.MarketType != events.MarketTypePerp {
			t.Fatalf("trigger order %v in a %s market: %d trigger actions, %d fills", o.key, r.MarketType, len(triggers), len(o.fills))
		}
		tr := triggers[0]
		if tr.Ts < r.Ts || tr.Ts > o.fills[0].Ts || at[0] > o.fillAt[0] || tr.Slot > o.fills[0].Slot ||
			tr.Filler == "" || tr.ActionExplanation != events.ExplanationNone {
			t.Fatalf("order %v placed at %d, triggered at %d (slot %d, by %q), first filled at %d (slot %d)", o.key,
				r.Ts, tr.Ts, tr.Slot, tr.Filler, o.fills[0].Ts, o.fills[0].Slot)
		}
		trigger, oracle := i64(t, r.TriggerPrice), i64(t, tr.OraclePrice)
		switch r.TriggerCondition {
		case events.TriggerTriggeredAbove:
			if oracle < trigger {
				t.Fatalf("order %v triggered above %d at oracle %d", o.key, trigger, oracle)
			}
		case events.TriggerTriggeredBelow:
			if oracle > trigger {
				t.Fatalf("order %v triggered below %d at oracle %d", o.key, trigger, oracle)
			}
		default:
			t.Fatalf("triggered order %v: condition %s", o.key, r.TriggerCondition)
		}
		if r.Status != events.OrderStatusFilled || r.LastActionStatus != events.LastActionFilled {
			t.Fatalf("trigger order %v: status %s, last action %s", o.key, r.Status, r.LastActionStatus)
		}
	}
	for _, k := range []string{"triggerMarket triggeredAbove", "triggerMarket triggeredBelow", "triggerLimit triggeredAbove", "triggerLimit triggeredBelow"} {
		if kinds[k] == 0 {
			t.Errorf("no %s orders in %v", k, kinds)
		}
	}
}

func TestExpiredOrdersHaveNoFill(t *testing.T) {
	h := generateOrders(t)
	n := 0
	for _, o := range h.orders {
		r := o.rec
		expires, _ := o.actions(events.ActionExpire)
		if r.LastActionStatus != events.LastActionExpired {
			if len(expires) != 0 {
				t.Fatalf("order %v expired, last action %s", o.key, r.LastActionStatus)
			}
			continue
		}
		n++
		if len(expires) != 1 || len(o.fills) != 0 || len(o.acts) != 2 {
			t.Fatalf("expired order %v: %d expire actions, %d fills, %d actions", o.key, len(expires), len(o.fills), len(o.acts))
		}
		e := expires[0]
		if r.OrderType != events.OrderTypeMarket || r.Status != events.OrderStatusCanceled ||
			r.LastActionExplanation != events.ExplanationOrderExpired || e.ActionExplanation != events.ExplanationOrderExpired ||
			r.BaseAssetAmountFilled != "0" || r.CumulativeFee != "0" {
			t.Fatalf("expired order %+v, expire action %+v", r, e)
		}
		if r.MaxTs <= r.Ts || r.MaxTs-r.Ts > 30 || e.Ts <= r.MaxTs || r.LastUpdatedTs != e.Ts || e.Filler == "" {
			t.Fatalf("order %v placed at %d with maxTs %d expired at %d (last updated %d)", o.key, r.Ts, r.MaxTs, e.Ts, r.LastUpdatedTs)
		}
	}
	if n == 0 {
		t.Error("no expired orders in an hour")
	}
}
