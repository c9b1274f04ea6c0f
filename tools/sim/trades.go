package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/tidemark/tidemark/platform/events"
)

// The fills flow: each minute's trades with the taker and maker orders they fill, and everything
// that happens to those orders. A minute's orders live and die inside it (placed at or after its
// start, last action before its end), so every record stays a function of the seed and the minute.
//
// Taker orders are planned first: how many fills each gets (one, or two or three a few seconds
// apart) and when, then their market, side, kind and fill sizes. Their fills, in time order, are then
// matched with the AMM, OpenBook or a maker's order: a JIT maker places its order in the fill's
// transaction; any other maker fill goes to the oldest order resting on that side of the market that
// is not the taker's own, or else opens a new one, which rests for its planned number of fills (up
// to six for a market maker's). Last, every order's record is folded from its fills (amounts,
// fees, status, last action) and some partly filled orders are cancelled.

// Shapes of the order flow.
const (
	multiFillShare     = 0.15  // taker orders filled by two or three fills (a third of them three)
	partialShare       = 0.2   // non-trigger taker orders larger than what they get filled
	partialCancelShare = 0.4   // partly filled taker orders their user then cancels
	triggerShare       = 0.035 // perp taker orders that are trigger (stop / take-profit) orders
	triggerLimitShare  = 0.3   // trigger orders that are triggerLimit rather than triggerMarket
	leftoverShare      = 0.35  // resting maker orders with size left after their planned fills: cancelled
	makerCancelShare   = 0.5   // maker orders still resting at the minute's end that are cancelled
	expiresPerFill     = 1.0 / 100

	// tradeMessagesPerFill is the mean number of messages of the fills flow per fill, measured at a
	// few hundred fills a minute and more: the fill; its share of taker orders (1/1.2) and of maker
	// orders (0.37: JIT orders take one fill, resting ones three on average), each an order record and
	// a place action; cancels of partly filled orders (0.13) and triggers (0.025). A slower flow shares
	// resting maker orders less: 3.67 at 100 fills a minute, 3.95 at 30.
	tradeMessagesPerFill = 3.56
)

// Kinds of taker orders.
const (
	kindMarket = iota
	kindLimit
	kindTriggerMarket
	kindTriggerLimit
)

// orderPlan is when a taker order's fills happen: the first at first, each next one gap later.
type orderPlan struct {
	first  int64
	gaps   [2]int8
	nFills int8
}

// takerOrder is a taker order of the minute: what it is, then its state folded from its fills.
type takerOrder struct {
	id          string
	spec        *marketSpec
	taker       *actor
	long        bool
	kind        int
	reduceOnly  bool
	existingDir string
	orderBase   int64
	orderAmt    events.Amount // orderBase, formatted once

	placedAt, placeSlot int64
	placeSig            string
	inFillTx            bool // placed in its first fill's transaction (placeAndTake)
	trigAt, trigSlot    int64
	trigSig             string
	triggerPrice        int64
	triggerAbove        bool

	fills             int
	base, quote, fee  int64
	baseAmt, quoteAmt events.Amount // base and quote, formatted
	worst             int64         // the worst of its fill prices for the taker
	lastTs            int64
	lastExpl          string
}

func (t *takerOrder) trigger() bool { return t.kind == kindTriggerMarket || t.kind == kindTriggerLimit }

// tradeFill is one fill: drawn with its taker order, then matched and recorded in time order.
type tradeFill struct {
	ts          int64
	order       int32 // index of its taker order
	next        int32 // index of the next fill of the same maker order, -1 if none
	base        int64
	px          float64 // the price drawn for it, unless a resting maker order sets it
	explanation string
	f           *events.Fill
}

// makerOrder is an order maker fills are made against.
type makerOrder struct {
	id                  string
	spec                *marketSpec
	actor               *actor
	long                bool
	jit                 bool // placed in the transaction of its only fill (placeAndMake)
	postOnly            bool
	existingDir         string
	price               int64
	planned             int // fills it rests for
	placedAt, placeSlot int64
	placeSig            string

	fills               int
	base, quote, fee    int64
	baseAmt, quoteAmt   events.Amount
	firstFill, lastFill int32
	lastTs              int64
	lastExpl            string
}

// tradeScratch keeps the fills flow's buffers from minute to minute.
type tradeScratch struct {
	plans  []orderPlan
	takers []takerOrder
	fills  []tradeFill
	makers []makerOrder
	book   [][]int32 // per market side (2*pos, +1 for asks): its resting maker orders, oldest first
}

func hasMaker(explanation string) bool {
	return explanation != events.ExplanationOrderFilledWithAmm &&
		explanation != events.ExplanationOrderFilledWithOpenbookV2
}

// poolFill is the explanation of a fill without a maker in the market: the AMM's (perps) or
// OpenBook's (spot).
func poolFill(spec *marketSpec) string {
	if spec.Type == events.MarketTypeSpot {
		return events.ExplanationOrderFilledWithOpenbookV2
	}
	return events.ExplanationOrderFilledWithAmm
}

func isJit(explanation string) bool {
	return explanation == events.ExplanationOrderFilledWithAmmJit ||
		explanation == events.ExplanationOrderFilledWithMatchJit
}

// fillExplanation draws what a fill is matched with: a maker's order, the AMM (perps) or OpenBook
// (spot).
func fillExplanation(rng *rand.Rand, spec *marketSpec) string {
	switch r := rng.Float64(); {
	case spec.Type == events.MarketTypeSpot && r >= 0.75:
		return events.ExplanationOrderFilledWithOpenbookV2
	case spec.Type == events.MarketTypeSpot:
		return events.ExplanationOrderFilledWithMatch
	case r >= 0.92:
		return events.ExplanationOrderFilledWithMatchJit
	case r >= 0.8:
		return events.ExplanationOrderFilledWithAmmJit
	case r >= 0.6:
		return events.ExplanationOrderFilledWithAmm
	}
	return events.ExplanationOrderFilledWithMatch
}

// fills emits the minute's trades with their orders and order actions.
func (g *minuteGen) fills() {
	sc := &g.s.trades
	rng := g.rng(streamFills)
	n := min(g.count(rng, 1), maxFillsPerMinute)
	sc.plans = g.planOrders(rng, sc.plans[:0], n)
	sc.takers = slices.Grow(sc.takers[:0], len(sc.plans))[:len(sc.plans)]
	sc.fills = slices.Grow(sc.fills[:0], n)
	k := 0
	for i := range sc.plans {
		var ok bool
		if sc.fills, ok = g.takerOrder(rng, &sc.takers[k], &sc.plans[i], k, sc.fills); ok {
			k++
		}
	}
	sc.takers = sc.takers[:k]
	slices.SortStableFunc(sc.fills, func(a, b tradeFill) int { return cmp.Compare(a.ts, b.ts) })
	g.match(rng, sc)
	g.emitTrades(rng, sc)
}

// planOrders appends the plans of the taker orders n fills come from, in the order of their first
// fills (and ids).
func (g *minuteGen) planOrders(rng *rand.Rand, plans []orderPlan, n int) []orderPlan {
	for left := n; left > 0; {
		p := orderPlan{nFills: 1}
		if r := rng.Float64(); r < multiFillShare/3 {
			p.nFills = 3
		} else if r < multiFillShare {
			p.nFills = 2
		}
		p.nFills = int8(min(int(p.nFills), left))
		left -= int(p.nFills)
		span := int64(0)
		for i := range p.nFills - 1 {
			p.gaps[i] = int8(1 + rng.IntN(4))
			span += int64(p.gaps[i])
		}
		p.first = g.start + rng.Int64N(60-span)
		plans = append(plans, p)
	}
	slices.SortStableFunc(plans, func(a, b orderPlan) int { return cmp.Compare(a.first, b.first) })
	return plans
}

// match takes the fills in time order: it finds each one's maker order, if any, and builds its
// record, folding it into both orders.
func (g *minuteGen) match(rng *rand.Rand, sc *tradeScratch) {
	s := g.s
	if len(sc.book) != 2*len(s.markets) {
		sc.book = make([][]int32, 2*len(s.markets))
	}
	for i := range sc.book {
		sc.book[i] = sc.book[i][:0]
	}
	fills, takers, makers := sc.fills, sc.takers, sc.makers[:0]
	for i := range fills {
		tf := &fills[i]
		t := &takers[tf.order]
		spec := t.spec
		dir, opp, _ := direction(t.long)
		pxInt := priceInt(tf.px)
		slot := max(slotAt(tf.ts)+rng.Int64N(2), t.placeSlot, t.trigSlot)
		sig, sigIndex := "", 0
		if t.inFillTx && t.fills == 0 {
			sig, slot, sigIndex = t.placeSig, t.placeSlot, 2
		}
		var mo *makerOrder
		if hasMaker(tf.explanation) {
			jit := isJit(tf.explanation)
			side := 2 * spec.pos
			if t.long {
				side++ // a long taker takes asks: short maker orders
			}
			book := sc.book[side]
			at, j := -1, int32(-1)
			if !jit {
				at = slices.IndexFunc(book, func(mj int32) bool { return makers[mj].actor != t.taker })
				if at >= 0 {
					j = book[at]
				}
			}
			if j < 0 {
				maker, id, ok := g.placeOrder(rng, func() *actor { return s.pop.counterparty(rng, t.taker) }, t.taker)
				if ok {
					j = int32(len(makers))
					makers = append(makers, g.makerOrder(rng, maker, id, t, tf.ts, pxInt, jit))
					if !jit {
						at, book = len(book), append(book, j)
					}
				} else {
					// No account can place another order this minute: the pool fills it.
					tf.explanation = poolFill(spec)
				}
			}
			if j >= 0 {
				mo = &makers[j]
				if !jit && mo.fills+1 == mo.planned {
					book = slices.Delete(book, at, at+1)
				}
				sc.book[side] = book
				pxInt = mo.price
				if jit {
					sig, sigIndex, mo.placeSlot = mo.placeSig, 2, slot
				} else {
					slot = max(slot, mo.placeSlot)
				}
			}
		}
		if sig == "" {
			sig = signature(rng)
		}
		base := tf.base
		quote := max(1, mulDiv(base, pxInt, events.BasePrecision))
		takerFee := quote * 35 / 100000
		baseAmt, quoteAmt := amt(base), amt(quote)

		t.fills++
		t.base, t.quote, t.fee = t.base+base, t.quote+quote, t.fee+takerFee
		t.lastTs, t.lastExpl = tf.ts, tf.explanation
		if t.fills == 1 {
			t.baseAmt, t.quoteAmt, t.worst = baseAmt, quoteAmt, pxInt
		} else {
			t.baseAmt, t.quoteAmt = amt(t.base), amt(t.quote)
			if (t.long && pxInt > t.worst) || (!t.long && pxInt < t.worst) {
				t.worst = pxInt
			}
		}
		f := &events.Fill{
			Tx: events.Tx{Ts: tf.ts, TxSig: sig, TxSigIndex: sigIndex, Slot: slot}, FillerReward: "0",
			BaseAssetAmountFilled: baseAmt, QuoteAssetAmountFilled: quoteAmt, TakerFee: amt(takerFee),
			MakerRebate: "0", ReferrerReward: "0", QuoteAssetAmountSurplus: "0",
			TakerOrderBaseAssetAmount: t.orderAmt, TakerOrderCumulativeBaseAssetAmountFilled: t.baseAmt,
			TakerOrderCumulativeQuoteAssetAmountFilled: t.quoteAmt, MakerOrderBaseAssetAmount: "0",
			MakerOrderCumulativeBaseAssetAmountFilled: "0", MakerOrderCumulativeQuoteAssetAmountFilled: "0",
			OraclePrice: g.oraclePrice(spec, tf.ts), MakerFee: "0", Action: events.ActionFill,
			ActionExplanation: tf.explanation, MarketIndex: spec.Index, MarketType: spec.Type,
			Filler: t.taker.User, Taker: t.taker.User, TakerOrderID: t.id,
			TakerOrderDirection: dir, SpotFulfillmentMethodFee: "0", MarketFilter: spec.Filter(), Symbol: spec.Symbol,
		}
		switch {
		case mo != nil && mo.jit:
			f.Filler = mo.actor.User // placeAndMake: the maker fills, without a filler reward
		case sigIndex != 2: // a keeper's transaction
			f.Filler = s.pop.fillers[rng.IntN(len(s.pop.fillers))]
			f.FillerReward = amt(takerFee / 10)
		}
		if mo != nil {
			rebate := quote * 2 / 100000
			mo.fills++
			mo.base, mo.quote, mo.fee = mo.base+base, mo.quote+quote, mo.fee-rebate
			mo.lastTs, mo.lastExpl = tf.ts, tf.explanation
			if mo.fills == 1 {
				mo.baseAmt, mo.quoteAmt, mo.firstFill = baseAmt, quoteAmt, int32(i)
			} else {
				mo.baseAmt, mo.quoteAmt = amt(mo.base), amt(mo.quote)
				fills[mo.lastFill].next = int32(i)
			}
			mo.lastFill = int32(i)
			f.Maker, f.MakerOrderID, f.MakerOrderDirection = mo.actor.User, mo.id, opp
			// makerRebate is makerFee, negative for a rebate: the event has only the fee, and the
			// Data API (and so the chain's mapping) copies it into makerRebate.
			f.MakerRebate, f.MakerFee = amt(-rebate), amt(-rebate)
			f.MakerOrderCumulativeBaseAssetAmountFilled = mo.baseAmt
			f.MakerOrderCumulativeQuoteAssetAmountFilled = mo.quoteAmt
		}
		if t.taker.Referrer != "" {
			f.ReferrerReward = amt(takerFee / 20)
		}
		switch tf.explanation {
		case events.ExplanationOrderFilledWithAmm:
			f.QuoteAssetAmountSurplus = amt(quote / 20000)
		case events.ExplanationOrderFilledWithOpenbookV2:
			f.SpotFulfillmentMethodFee = amt(max(1, quote/10000))
		}
		tf.f = f
	}
	sc.makers = makers
}

// emitTrades adds the orders in their final state and their place and trigger actions, then the
// fills (so that an order placed in the second of its fill comes first), then the cancels.
func (g *minuteGen) emitTrades(rng *rand.Rand, sc *tradeScratch) {
	s := g.s
	type cancel struct {
		ts  int64
		ref *orderRef
		rec *events.Order
	}
	var cancels []cancel
	cancelAfter := func(last int64, ref *orderRef, rec *events.Order) {
		if ts := last + 1 + rng.Int64N(8); ts < g.start+60 {
			cancels = append(cancels, cancel{ts, ref, rec})
		}
	}
	for k := range sc.takers {
		t := &sc.takers[k]
		o, place := g.takerRecords(t)
		g.add(t.placedAt, events.TopicOrders, o)
		g.add(t.placedAt, events.TopicOrderActions, place)
		if t.trigger() {
			trig := g.action(t.ref(), t.trigAt, t.trigSig, 0, t.trigSlot, events.ActionTrigger,
				events.ExplanationNone, "0", "0")
			trig.Filler = s.pop.fillers[rng.IntN(len(s.pop.fillers))]
			g.add(t.trigAt, events.TopicOrderActions, trig)
		}
		if t.base < t.orderBase && rng.Float64() < partialCancelShare {
			cancelAfter(t.lastTs, t.ref(), o)
		}
	}
	for j := range sc.makers {
		mo := &sc.makers[j]
		size, cancelled := mo.base, false
		withRest := func() int64 { return mo.base + roundStep(float64(mo.base)*(0.2+1.3*rng.Float64()), mo.spec.step) }
		switch {
		case mo.jit: // sized to its fill
		case mo.fills == mo.planned: // used up, or requoted: cancelled with some left
			if rng.Float64() < leftoverShare {
				size, cancelled = withRest(), true
			}
		default: // still resting at the minute's end, maybe cancelled then
			size, cancelled = withRest(), rng.Float64() < makerCancelShare
		}
		sizeAmt := amt(size)
		for i := mo.firstFill; i >= 0; i = sc.fills[i].next {
			sc.fills[i].f.MakerOrderBaseAssetAmount = sizeAmt
		}
		o, place := g.makerRecords(mo, size, sizeAmt)
		g.add(mo.placedAt, events.TopicOrders, o)
		g.add(mo.placedAt, events.TopicOrderActions, place)
		if cancelled {
			cancelAfter(mo.lastTs, &orderRef{spec: mo.spec, user: mo.actor.User, id: mo.id, long: mo.long,
				postOnly: mo.postOnly, size: sizeAmt, base: mo.baseAmt, quote: mo.quoteAmt}, o)
		}
	}
	for i := range sc.fills {
		g.add(sc.fills[i].ts, events.TopicFills, sc.fills[i].f)
	}
	for _, c := range cancels {
		c.rec.Status, c.rec.LastActionStatus = events.OrderStatusCanceled, events.LastActionPartialFillCancelled
		c.rec.LastUpdatedTs, c.rec.LastActionExplanation = c.ts, events.ExplanationNone
		g.add(c.ts, events.TopicOrderActions, g.action(c.ref, c.ts, signature(rng), 0, slotAt(c.ts)+rng.Int64N(2),
			events.ActionCancel, events.ExplanationNone, c.ref.base, c.ref.quote))
	}
}

// takerOrder draws taker order k's market, account, side, kind and fills (appended to fills) and
// when and in which transaction it is placed. ok is false, and nothing is appended, when no account
// can place another order this minute.
func (g *minuteGen) takerOrder(rng *rand.Rand, t *takerOrder, p *orderPlan, k int, fills []tradeFill) (_ []tradeFill, ok bool) {
	s := g.s
	spec := &s.markets[s.pickTraded(rng)]
	taker, id, ok := g.placeOrder(rng, func() *actor { return s.pop.pick(rng) }, nil)
	if !ok {
		return fills, false
	}
	*t = takerOrder{id: id, spec: spec, taker: taker, long: rng.IntN(2) == 0}
	dir, opp, sign := direction(t.long)
	switch {
	case spec.Type == events.MarketTypePerp && rng.Float64() < triggerShare:
		t.kind = kindTriggerMarket
		if rng.Float64() < triggerLimitShare {
			t.kind = kindTriggerLimit
		}
	case rng.Float64() < 0.85:
		t.kind = kindMarket
	default:
		t.kind = kindLimit
	}
	first := len(fills)
	ts := p.first
	for j := range int(p.nFills) {
		if j > 0 {
			ts += int64(p.gaps[j-1])
		}
		px := tradePrice(spec, s.oracle(spec, ts)*(1+sign*0.0002+0.0003*rng.NormFloat64()))
		base := tradeSize(rng, spec, px)
		fills = append(fills, tradeFill{ts: ts, order: int32(k), next: -1, base: base, px: px,
			explanation: fillExplanation(rng, spec)})
		t.orderBase += base
	}
	if !t.trigger() && rng.Float64() < partialShare {
		t.orderBase = roundStep(float64(t.orderBase)*(1.2+2*rng.Float64()), spec.step)
	}
	t.orderAmt = amt(t.orderBase)
	t.reduceOnly = rng.Float64() < 0.05
	t.existingDir = []string{dir, opp}[rng.IntN(2)]

	t.placeSig = signature(rng)
	switch {
	case t.trigger():
		// A stop or take-profit placed earlier in the minute, triggered by a keeper once the oracle
		// crossed its trigger price, then filled.
		t.reduceOnly = rng.Float64() < 0.7
		t.trigAt = max(g.start, p.first-rng.Int64N(3))
		t.placedAt = max(g.start, t.trigAt-rng.Int64N(20))
		t.placeSlot = slotAt(t.placedAt) + rng.Int64N(2)
		t.trigSig = signature(rng)
		t.trigSlot = max(t.placeSlot, slotAt(t.trigAt)+rng.Int64N(2))
		t.triggerAbove = rng.IntN(2) == 0
		crossed := 0.0005 + 0.002*rng.Float64()
		if t.triggerAbove {
			crossed = -crossed
		}
		t.triggerPrice = moved(tradePrice(spec, s.oracle(spec, t.trigAt)), crossed)
	case !hasMaker(fills[first].explanation):
		// placeAndTake: placed and filled against the AMM or OpenBook in one transaction.
		t.inFillTx, t.placedAt = true, p.first
		t.placeSlot = slotAt(p.first) + rng.Int64N(2)
	default:
		t.placedAt = max(g.start, p.first-rng.Int64N(4))
		t.placeSlot = slotAt(t.placedAt) + rng.Int64N(2)
	}
	return fills, true
}

// makerOrder opens maker's order id for a fill at ts of t: a JIT order placed in the fill's
// transaction, or a limit order resting since up to ten seconds before.
func (g *minuteGen) makerOrder(rng *rand.Rand, maker *actor, id string, t *takerOrder, ts int64, price int64, jit bool) makerOrder {
	dir, opp, _ := direction(!t.long)
	mo := makerOrder{
		id: id, spec: t.spec, actor: maker, long: !t.long, jit: jit, postOnly: true,
		existingDir: []string{dir, opp}[rng.IntN(2)], price: price, planned: 1, placeSig: signature(rng),
		firstFill: -1, lastFill: -1,
	}
	if jit {
		mo.placedAt = ts // in the slot of the fill, set by the caller
		return mo
	}
	if maker.maker {
		mo.planned = 1 + rng.IntN(6)
	} else {
		if r := rng.Float64(); r < 0.3 {
			mo.planned = 2 + int(r/0.2) // 2 or 3
		}
		mo.postOnly = rng.Float64() < 0.8
	}
	mo.placedAt = max(g.start, ts-rng.Int64N(10))
	mo.placeSlot = slotAt(mo.placedAt) + rng.Int64N(2)
	return mo
}

// orderRef is what an order action says of the order it acts on.
type orderRef struct {
	spec              *marketSpec
	user, id          string
	long, postOnly    bool
	size, base, quote events.Amount // the order's base amount and what is filled of it
}

func (t *takerOrder) ref() *orderRef {
	return &orderRef{spec: t.spec, user: t.taker.User, id: t.id, long: t.long, size: t.orderAmt,
		base: t.baseAmt, quote: t.quoteAmt}
}

// action is an order action on r with the order's cumulative filled amounts base and quote. As on the
// protocol, a post-only order is named in the maker fields, any other in the taker fields.
func (g *minuteGen) action(r *orderRef, ts int64, sig string, sigIndex int, slot int64, action, explanation string,
	base, quote events.Amount) *events.OrderAction {
	dir, _, _ := direction(r.long)
	spec := r.spec
	a := &events.OrderAction{
		Tx: events.Tx{Ts: ts, TxSig: sig, TxSigIndex: sigIndex, Slot: slot}, Action: action, ActionExplanation: explanation,
		MarketIndex: spec.Index, MarketType: spec.Type, OraclePrice: g.oraclePrice(spec, ts),
		MarketFilter: spec.Filter(), User: r.user, Symbol: spec.Symbol,
	}
	if r.postOnly {
		a.Maker, a.MakerOrderID, a.MakerOrderDirection = r.user, r.id, dir
		a.MakerOrderBaseAssetAmount = r.size
		a.MakerOrderCumulativeBaseAssetAmountFilled, a.MakerOrderCumulativeQuoteAssetAmountFilled = base, quote
	} else {
		a.Taker, a.TakerOrderID, a.TakerOrderDirection = r.user, r.id, dir
		a.TakerOrderBaseAssetAmount = r.size
		a.TakerOrderCumulativeBaseAssetAmountFilled, a.TakerOrderCumulativeQuoteAssetAmountFilled = base, quote
	}
	return a
}

// takerRecords returns a taker order's record, in its state after its last fill, and its place action.
// An order record's quoteAssetAmount is its quoteAssetAmountFilled, as the Data API writes it (the
// event has no other).
func (g *minuteGen) takerRecords(t *takerOrder) (*events.Order, *events.OrderAction) {
	s := g.s
	spec := t.spec
	dir, _, sign := direction(t.long)
	o := &events.Order{
		Tx: events.Tx{Ts: t.placedAt, TxSig: t.placeSig, TxSigIndex: 0, Slot: t.placeSlot}, User: t.taker.User,
		Status: events.OrderStatusFilled, OrderType: events.OrderTypeLimit, MarketType: spec.Type,
		MarketFilter: spec.Filter(), OrderID: t.id, MarketIndex: spec.Index, Price: amt(t.worst),
		BaseAssetAmount: t.orderAmt, QuoteAssetAmount: t.quoteAmt, BaseAssetAmountFilled: t.baseAmt,
		QuoteAssetAmountFilled: t.quoteAmt, Direction: dir, ReduceOnly: t.reduceOnly, TriggerPrice: "0",
		TriggerCondition: events.TriggerAbove, ExistingPositionDirection: t.existingDir, OraclePriceOffset: "0",
		AuctionStartPrice: "0", AuctionEndPrice: "0", Symbol: spec.Symbol, LastUpdatedTs: t.lastTs,
		LastActionStatus: events.LastActionFilled, LastActionExplanation: t.lastExpl, CumulativeFee: amt(t.fee),
	}
	// auction sets the auction of a market order placed, or a trigger order triggered, at ts.
	auction := func(ts int64) {
		oracle := tradePrice(spec, s.oracle(spec, ts))
		o.AuctionDuration = 10
		o.AuctionStartPrice = amt(moved(oracle, -sign*0.001))
		o.AuctionEndPrice = amt(moved(oracle, sign*0.005))
	}
	switch t.kind {
	case kindMarket:
		o.OrderType, o.MaxTs = events.OrderTypeMarket, t.placedAt+30
		auction(t.placedAt)
		o.Price = o.AuctionEndPrice
	case kindTriggerMarket, kindTriggerLimit:
		auction(t.trigAt)
		o.OrderType, o.Price = events.OrderTypeTriggerMarket, o.AuctionEndPrice
		if t.kind == kindTriggerLimit {
			o.OrderType, o.Price = events.OrderTypeTriggerLimit, amt(t.worst)
		}
		o.TriggerPrice, o.TriggerCondition = amt(t.triggerPrice), events.TriggerTriggeredBelow
		if t.triggerAbove {
			o.TriggerCondition = events.TriggerTriggeredAbove
		}
	}
	if t.base < t.orderBase {
		o.Status, o.LastActionStatus = events.OrderStatusOpen, events.LastActionPartialFill
	}
	place := g.action(t.ref(), t.placedAt, t.placeSig, 1, t.placeSlot, events.ActionPlace, events.ExplanationNone, "0", "0")
	return o, place
}

// makerRecords returns a maker order's record, in its state after its last fill, and its place action.
func (g *minuteGen) makerRecords(mo *makerOrder, size int64, sizeAmt events.Amount) (*events.Order, *events.OrderAction) {
	spec := mo.spec
	dir, _, _ := direction(mo.long)
	o := &events.Order{
		Tx: events.Tx{Ts: mo.placedAt, TxSig: mo.placeSig, TxSigIndex: 0, Slot: mo.placeSlot}, User: mo.actor.User,
		Status: events.OrderStatusFilled, OrderType: events.OrderTypeLimit, MarketType: spec.Type,
		MarketFilter: spec.Filter(), OrderID: mo.id, MarketIndex: spec.Index, Price: amt(mo.price),
		BaseAssetAmount: sizeAmt, QuoteAssetAmount: mo.quoteAmt, BaseAssetAmountFilled: mo.baseAmt,
		QuoteAssetAmountFilled: mo.quoteAmt, Direction: dir, TriggerPrice: "0", TriggerCondition: events.TriggerAbove,
		ExistingPositionDirection: mo.existingDir, PostOnly: mo.postOnly, OraclePriceOffset: "0",
		AuctionStartPrice: "0", AuctionEndPrice: "0", Symbol: spec.Symbol, LastUpdatedTs: mo.lastTs,
		LastActionStatus: events.LastActionFilled, LastActionExplanation: mo.lastExpl, CumulativeFee: amt(mo.fee),
	}
	if size > mo.base {
		o.Status, o.LastActionStatus = events.OrderStatusOpen, events.LastActionPartialFill
	}
	ref := &orderRef{spec: spec, user: mo.actor.User, id: mo.id, long: mo.long, postOnly: mo.postOnly, size: sizeAmt}
	place := g.action(ref, mo.placedAt, mo.placeSig, 1, mo.placeSlot, events.ActionPlace, events.ExplanationNone, "0", "0")
	return o, place
}

// expires emits market orders whose auction never reached the book before their short maxTs: placed,
// then expired by a keeper, without a fill.
func (g *minuteGen) expires() {
	s := g.s
	rng := g.rng(streamExpires)
	for range g.count(rng, expiresPerFill) {
		placedAt := g.start + rng.Int64N(40)
		maxTs := placedAt + 5 + rng.Int64N(10)
		expiredAt := maxTs + 1 + rng.Int64N(5)
		spec := &s.markets[s.pickTraded(rng)]
		user, id, ok := g.placeOrder(rng, func() *actor { return s.pop.pick(rng) }, nil)
		if !ok {
			return
		}
		long := rng.IntN(2) == 0
		dir, opp, sign := direction(long)
		oracle := tradePrice(spec, s.oracle(spec, placedAt))
		// The auction ends short of the other side of the book.
		start, end := moved(oracle, -sign*0.006), moved(oracle, -sign*(0.001+0.003*rng.Float64()))
		base := tradeSize(rng, spec, oracle)
		ref := &orderRef{spec: spec, user: user.User, id: id, long: long, size: amt(base)}
		placeSig, expireSig := signature(rng), signature(rng)
		placeSlot, expireSlot := slotAt(placedAt)+rng.Int64N(2), slotAt(expiredAt)+rng.Int64N(2)
		g.add(placedAt, events.TopicOrders, &events.Order{
			Tx: events.Tx{Ts: placedAt, TxSig: placeSig, Slot: placeSlot}, User: user.User, Status: events.OrderStatusCanceled,
			OrderType: events.OrderTypeMarket, MarketType: spec.Type, MarketFilter: spec.Filter(), OrderID: ref.id,
			MarketIndex: spec.Index, Price: amt(end), BaseAssetAmount: ref.size, QuoteAssetAmount: "0",
			BaseAssetAmountFilled: "0", QuoteAssetAmountFilled: "0", Direction: dir, ReduceOnly: rng.Float64() < 0.05,
			TriggerPrice: "0", TriggerCondition: events.TriggerAbove, ExistingPositionDirection: []string{dir, opp}[rng.IntN(2)],
			OraclePriceOffset: "0", AuctionDuration: 10, AuctionStartPrice: amt(start), AuctionEndPrice: amt(end),
			MaxTs: maxTs, Symbol: spec.Symbol, LastUpdatedTs: expiredAt, LastActionStatus: events.LastActionExpired,
			LastActionExplanation: events.ExplanationOrderExpired, CumulativeFee: "0",
		})
		g.add(placedAt, events.TopicOrderActions, g.action(ref, placedAt, placeSig, 1, placeSlot, events.ActionPlace,
			events.ExplanationNone, "0", "0"))
		expire := g.action(ref, expiredAt, expireSig, 0, expireSlot, events.ActionExpire,
			events.ExplanationOrderExpired, "0", "0")
		expire.Filler = s.pop.fillers[rng.IntN(len(s.pop.fillers))]
		g.add(expiredAt, events.TopicOrderActions, expire)
	}
}
