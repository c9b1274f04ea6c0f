package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// Order ids are per account on the program: each subaccount numbers its orders with a u32 counter
// (User.nextOrderId, from 1). The simulator cannot count an account's orders since the launch, as
// a window is generated without the minutes before it, so it derives the counter from time: the
// n-th id an account takes in minute m (since the epoch) is m*orderIDsPerMinute + n. So an id
// names one order of its account, ids rise with time (a later run never reuses an earlier run's),
// and a minute's ids are the same however a window is split into calls.
//
// Its limits:
//   - An account takes at most orderIDsPerMinute ids a minute. The busiest account of the default
//     300 wallets places about two thirds of that in its busiest minute at 8000 fills a minute
//     (tools/bench's highest rate): a heavy trader that is a market maker too, as market makers
//     take most maker orders (population.counterparty). At higher rates or with few wallets the
//     busiest use theirs up, and the flows then give the order to another account (placeOrder).
//     When every account has used its ids (a handful of wallets at tens of thousands of fills a
//     minute), a taker order is dropped with its fills, a maker's fill goes to the AMM or
//     OpenBook, and no more orders are cancelled or expire in that minute.
//   - Ids fit the u32 for windows ending by orderIDsEnd (2032-03-01T14:47Z); generate refuses
//     later ones rather than emit ids the program cannot hold.
//   - Ids rise from minute to minute, not with the placements inside a minute: the flows number
//     their orders as they plan them (taker orders, maker orders, cancelled ones, expired ones).
//     A liquidation's cancelled order takes one too, so that it names no other order.
//   - Live at a changed rate plans the current minute again; its orders then take ids above the
//     earlier plan's (begin). That minute's ids are thus not those a Generate of it gives, as its
//     other messages are not either: its flow changed.
const orderIDsPerMinute = 1000

// orderIDsEnd is the end (unix seconds) of the last minute whose every order id fits a u32.
const orderIDsEnd = epoch + (math.MaxUint32/orderIDsPerMinute)*60

// orderIDs counts the order ids each account took in the minute being generated.
type orderIDs struct {
	minute int64   // the minute counted
	rate   float64 // the fill rate it was generated at
	taken  []int32 // per actor index
}

// begin readies the count for generating minute m at fill rate rate. A minute generated again at
// another rate (Live changed the flow, part of the minute may be emitted already) continues from
// the ids its earlier generation gave, so that its new orders cannot take an id an emitted order
// has; otherwise the count starts at zero, so that a minute generated again gives the same ids.
func (o *orderIDs) begin(m int64, rate float64, accounts int) {
	switch {
	case len(o.taken) != accounts:
		o.taken = make([]int32, accounts)
	case m != o.minute || rate == o.rate:
		clear(o.taken)
	}
	o.minute, o.rate = m, rate
}

// orderID gives account a its next order id of the minute; ok is false when it has taken them all.
func (g *minuteGen) orderID(a *actor) (id string, ok bool) {
	n := &g.s.orderIDs.taken[a.index]
	if *n >= orderIDsPerMinute {
		return "", false
	}
	*n++
	return strconv.FormatInt(g.m*orderIDsPerMinute+int64(*n), 10), true
}

// placeOrder finds the account of a new order and gives it its id: draw's account (never except),
// drawn again a few times while the drawn one has used its ids of the minute, then the next
// account that has some left from a random start. ok is false when none has. As long as no
// account is full, it draws exactly once, so the flows draw as they would without the limit.
func (g *minuteGen) placeOrder(rng *rand.Rand, draw func() *actor, except *actor) (a *actor, id string, ok bool) {
	for range 8 {
		if a = draw(); a != except {
			if id, ok = g.orderID(a); ok {
				return a, id, true
			}
		}
	}
	actors := g.s.pop.actors
	start := rng.IntN(len(actors))
	for i := range actors {
		if a = &actors[(start+i)%len(actors)]; a != except {
			if id, ok = g.orderID(a); ok {
				return a, id, true
			}
		}
	}
	return nil, "", false
}
