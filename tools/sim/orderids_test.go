package sim_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// orderIDsEnd is when the simulator's order ids would outgrow the program's u32: the end of the
// last minute m whose ids, m*orderIDsPerMinute + 1 up to + orderIDsPerMinute, all fit.
var orderIDsEnd = sim.Epoch().Add(time.Duration(math.MaxUint32/orderIDsPerMinute) * time.Minute)

// idKey is an order id of an account, the account interned.
type idKey struct {
	user int32
	id   uint64
}

// orderIDCheck follows the order ids of a stream as a consumer of the chain sees them: every record
// of an event topic must map to the program's event (whose order ids are u32s), an order id must
// name one order of its account (one order record and one place action, at its placement), and an
// id must lie in its account's block of the minute it is given in, so ids rise with time.
type orderIDCheck struct {
	tb testing.TB
	// fillsNamePlaced requires every fill's orders to be placed before it in the stream. Not so
	// for a window starting inside a minute, whose orders placed before the start are filled
	// after it, nor after Live changes the rate: the minute planned again has fills of orders
	// placed before the backfill ended, whose records the backfill's plan of the minute did not
	// have.
	fillsNamePlaced bool

	users     map[string]int32
	placed    map[idKey]int64 // the order record's ts
	places    map[idKey]int64 // the place action's ts
	cancelled map[idKey]bool  // named by a liquidation
	perMinute map[[2]int64]int
	orders    int
}

func newOrderIDCheck(tb testing.TB, fillsNamePlaced bool) *orderIDCheck {
	return &orderIDCheck{tb: tb, fillsNamePlaced: fillsNamePlaced, users: map[string]int32{},
		placed: map[idKey]int64{}, places: map[idKey]int64{}, cancelled: map[idKey]bool{}, perMinute: map[[2]int64]int{}}
}

// key interns the account and checks that id is an id the account may take at ts.
func (c *orderIDCheck) key(what, user, id string, ts int64) idKey {
	c.tb.Helper()
	u, ok := c.users[user]
	if !ok {
		u = int32(len(c.users))
		c.users[strings.Clone(user)] = u
	}
	v, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		c.tb.Fatalf("%s: order id %q of %s: %v", what, id, user, err)
	}
	if minute := (ts - sim.Epoch().Unix()) / 60; v == 0 || int64(v-1)/orderIDsPerMinute != minute {
		c.tb.Fatalf("%s at %d: order id %d of %s is not one of minute %d's", what, ts, v, user, minute)
	}
	return idKey{u, v}
}

func (c *orderIDCheck) add(m events.Message) {
	c.tb.Helper()
	if !simchain.EventTopic(m.Topic) {
		return // no order ids, and not on the chain
	}
	rec := decode(c.tb, m)
	if _, err := records.Event(rec); err != nil {
		c.tb.Fatalf("%s record does not map to its event: %v", m.Topic, err)
	}
	switch r := rec.(type) {
	case *events.Order:
		k := c.key("order record", r.User, r.OrderID, r.Ts)
		if _, ok := c.placed[k]; ok || c.cancelled[k] {
			c.tb.Fatalf("order id %s of %s names two orders: a second record placed at %d", r.OrderID, r.User, r.Ts)
		}
		c.placed[k] = r.Ts
		c.orders++
		c.perMinute[[2]int64{int64(k.user), r.Ts / 60}]++
	case *events.Fill:
		for _, side := range []struct{ user, id string }{{r.Taker, r.TakerOrderID}, {r.Maker, r.MakerOrderID}} {
			if side.user == "" {
				continue
			}
			k := c.key(r.Action, side.user, side.id, r.Ts)
			placedAt, ok := c.placed[k]
			switch {
			case r.Action == events.ActionPlace:
				if _, twice := c.places[k]; twice || (ok && placedAt != r.Ts) {
					c.tb.Fatalf("order id %s of %s names two orders: a second placement at %d", side.id, side.user, r.Ts)
				}
				c.places[k] = r.Ts
			case c.fillsNamePlaced && !ok:
				c.tb.Fatalf("%s at %d names order %s of %s, which was not placed", r.Action, r.Ts, side.id, side.user)
			}
		}
	case *events.Liquidation:
		for _, id := range r.CanceledOrderIDs {
			k := c.key("liquidation", r.User, id, r.Ts)
			if _, ok := c.placed[k]; ok || c.cancelled[k] {
				c.tb.Fatalf("liquidation at %d cancels order %s of %s, an id another order has", r.Ts, id, r.User)
			}
			c.cancelled[k] = true
		}
	}
}

// TestOrderIDsFitTheProgramAtTheBenchRate: an hour at the present time at tools/bench's highest
// fill rate, with its 300 wallets. Ids after 2024 outgrew the u32 when they were the minute's
// offsets in the whole exchange; per account, every one maps to the program's events.
func TestOrderIDsFitTheProgramAtTheBenchRate(t *testing.T) {
	if testing.Short() {
		t.Skip("an hour at 8000 fills a minute")
	}
	s := sim.New(sim.Config{Seed: 7, Authorities: 300, FillsPerMinute: 8000})
	from := time.Now().Truncate(time.Minute) // so that the window has every order it fills
	c := newOrderIDCheck(t, true)
	if err := s.Generate(from, from.Add(time.Hour), func(m events.Message) error {
		c.add(m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c.orders < 60*8000 {
		t.Fatalf("%d orders in an hour at 8000 fills a minute", c.orders)
	}
	t.Logf("%d orders of %d accounts", c.orders, len(c.users))
}

// TestOrderIDsWhenAccountsRunOut: two wallets at the highest rate take every id of their minutes;
// the rest of the minute's orders are not made rather than numbered twice or out of the block.
func TestOrderIDsWhenAccountsRunOut(t *testing.T) {
	s := sim.New(sim.Config{Seed: 3, Authorities: 2, FillsPerMinute: 40000})
	c := newOrderIDCheck(t, true)
	fills := 0
	for _, m := range generate(t, s, windowStart, windowStart.Add(2*time.Minute)) {
		c.add(m)
		if m.Topic == events.TopicFills {
			fills++
		}
	}
	full := 0
	for _, n := range c.perMinute {
		if n > orderIDsPerMinute {
			t.Fatalf("an account placed %d orders in a minute", n)
		}
		if n == orderIDsPerMinute {
			full++
		}
	}
	if full == 0 || fills < c.orders/2 {
		t.Fatalf("%d accounts used all their ids of a minute, %d fills of %d orders: want some, and the fills going on",
			full, fills, c.orders)
	}
}

// TestWindowsPastTheOrderIDsEndAreRefused: a window ending after the last minute whose ids fit the
// u32 is refused rather than given ids the program cannot hold (that the minute's ids fit is
// TestLastMinuteOrderIDsFit's: records so far ahead of the clock do not pass events.Encode).
func TestWindowsPastTheOrderIDsEndAreRefused(t *testing.T) {
	s := sim.New(sim.Config{Seed: 4, Authorities: 20})
	err := s.Generate(orderIDsEnd.Add(-time.Minute), orderIDsEnd.Add(time.Second), func(events.Message) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "u32") {
		t.Fatalf("Generate past the order ids' end = %v, want a refusal", err)
	}
}

// TestOrderIDsStayUniqueWhenLiveChangesTheRate: Live at a new rate plans the last minute generated
// before again; its orders take ids above those the earlier plan gave in that minute, so that no id
// of an account names two orders. A slower flow shows it: the earlier plan's busy first half-minute
// took the ids the slow plan gives its accounts' orders of the second half.
func TestOrderIDsStayUniqueWhenLiveChangesTheRate(t *testing.T) {
	clk := newClock(windowStart.Add(3 * time.Minute))
	s := sim.New(sim.Config{Seed: 8, Authorities: 10, FillsPerMinute: 300, Now: clk.now})
	back := generate(t, s, windowStart, windowStart.Add(30*time.Second))
	var live collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Live(ctx, &live, 2) }()
	kittest.Eventually(t, 10*time.Second, "the catch-up write", func() bool { return len(live.snapshot()) > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Live = %v", err)
	}
	c := newOrderIDCheck(t, false)
	for _, m := range back {
		c.add(m)
	}
	before := c.orders
	for _, m := range live.snapshot() {
		c.add(m)
	}
	if c.orders == before {
		t.Fatal("no live order")
	}
}
