package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

// Rates of the minute flows relative to fills.
const (
	cancelsPerFill      = 1.0 / 8
	depositsPerFill     = 1.0 / 25
	rewardsPerFill      = 1.0 / 150
	swapsPerFill        = 1.0 / 60
	settlesPerFill      = 1.0 / 20
	perpLPPerFill       = 1.0 / 300
	ifStakesPerFill     = 1.0 / 400
	lpMintPerFill       = 1.0 / 400
	liquidationsPerFill = 1.0 / 500

	// messagesPerFill is the mean number of messages the minute flows emit per fill: a fill with its
	// share of orders and order actions (tradeMessagesPerFill), a placed-then-cancelled order (3), an
	// expired order (3), and one per other event.
	messagesPerFill = tradeMessagesPerFill + 3*cancelsPerFill + 3*expiresPerFill + depositsPerFill + rewardsPerFill +
		swapsPerFill + settlesPerFill + perpLPPerFill + ifStakesPerFill + lpMintPerFill + liquidationsPerFill
)

// Record ids that are the program's u64s (deposits, LP mints, the first fill of a run) are
// minute*idsPerMinute + a count in the minute, so they grow with time across runs. Order ids are
// u32s of their account's: see orderIDsPerMinute.
const idsPerMinute = 100000

// minuteGen builds the events of one minute.
type minuteGen struct {
	s     *Simulator
	m     int64 // minutes since the epoch
	start int64 // unix seconds
	items []item

	oracles [][60]events.Amount // oraclePrice's, per market and second
}

// oraclePrice is the oracle price of a market at ts in the minute, as records carry it.
func (g *minuteGen) oraclePrice(spec *marketSpec, ts int64) events.Amount {
	sec := ts - g.start
	if sec < 0 || sec >= 60 {
		return amt(priceInt(g.s.oracle(spec, ts)))
	}
	if g.oracles == nil {
		g.oracles = make([][60]events.Amount, len(g.s.markets))
	}
	p := &g.oracles[spec.pos][sec]
	if *p == "" {
		*p = amt(priceInt(g.s.oracle(spec, ts)))
	}
	return *p
}

func (g *minuteGen) add(ts int64, topic string, rec events.Record) {
	g.items = append(g.items, item{ts: ts, topic: topic, rec: rec})
}

func (g *minuteGen) rng(stream uint64) *rand.Rand { return newRand(g.s.seed, stream, g.m) }

// count draws how many events of a flow happen this minute.
func (g *minuteGen) count(rng *rand.Rand, perFill float64) int {
	return poisson(rng, g.s.cfg.FillsPerMinute*perFill)
}

// seconds draws n sorted event times within the minute.
func (g *minuteGen) seconds(rng *rand.Rand, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = g.start + rng.Int64N(60)
	}
	slices.Sort(out)
	return out
}

func (g *minuteGen) id(offset int) string {
	return strconv.FormatInt(g.m*idsPerMinute+int64(offset), 10)
}

// pickTraded draws a traded market by its share of fills and returns its index in s.markets.
func (s *Simulator) pickTraded(rng *rand.Rand) int {
	return pickWeighted(rng, s.markets, func(m *marketSpec) float64 { return m.weight })
}

// pickPerp draws a perp market by its share of fills.
func (s *Simulator) pickPerp(rng *rand.Rand) *marketSpec {
	return &s.markets[pickWeighted(rng, s.markets, func(m *marketSpec) float64 {
		if m.Type != events.MarketTypePerp {
			return 0
		}
		return m.weight
	})]
}

func pickWeighted(rng *rand.Rand, ms []marketSpec, weight func(*marketSpec) float64) int {
	total := 0.0
	for i := range ms {
		total += weight(&ms[i])
	}
	x := rng.Float64() * total
	last := 0
	for i := range ms {
		if w := weight(&ms[i]); w > 0 {
			if x < w {
				return i
			}
			x -= w
			last = i
		}
	}
	return last
}

func direction(long bool) (dir, opposite string, sign float64) {
	if long {
		return events.DirectionLong, events.DirectionShort, 1
	}
	return events.DirectionShort, events.DirectionLong, -1
}

// tradePrice keeps prices of prediction markets inside (0, 1).
func tradePrice(spec *marketSpec, p float64) float64 {
	if spec.Filter() == events.FilterPrediction {
		return math.Max(0.001, math.Min(0.999, p))
	}
	return p
}

// tradeSize draws a base amount (1e9 or token precision) around the market's median notional.
func tradeSize(rng *rand.Rand, spec *marketSpec, price float64) int64 {
	notional := math.Max(5, math.Min(40*spec.notional, spec.notional*math.Exp(1.1*rng.NormFloat64())))
	return roundStep(notional/price*events.BasePrecision, spec.step)
}

func amt(v int64) events.Amount { return events.NewAmount(v) }

// cancels emits post-only limit orders that are placed and cancelled within the minute.
func (g *minuteGen) cancels() {
	s := g.s
	rng := g.rng(streamCancels)
	for range g.count(rng, cancelsPerFill) {
		placedAt := g.start + rng.Int64N(50)
		cancelledAt := placedAt + 1 + rng.Int64N(9)
		spec := &s.markets[s.pickTraded(rng)]
		user, id, ok := g.placeOrder(rng, func() *actor { return s.pop.pick(rng) }, nil)
		if !ok {
			return
		}
		long := rng.IntN(2) == 0
		dir, _, sign := direction(long)
		oracle := s.oracle(spec, placedAt)
		px := tradePrice(spec, oracle*(1-sign*(0.01+0.02*rng.Float64())))
		base := tradeSize(rng, spec, px)
		ref := &orderRef{spec: spec, user: user.User, id: id, long: long, postOnly: true, size: amt(base)}
		placeSig, cancelSig := signature(rng), signature(rng)
		placeSlot := slotAt(placedAt) + rng.Int64N(2)
		cancelSlot := slotAt(cancelledAt) + rng.Int64N(2)
		g.add(placedAt, events.TopicOrders, &events.Order{
			Tx: events.Tx{Ts: placedAt, TxSig: placeSig, Slot: placeSlot}, User: user.User, Status: events.OrderStatusCanceled,
			OrderType: events.OrderTypeLimit, MarketType: spec.Type, MarketFilter: spec.Filter(), OrderID: ref.id,
			MarketIndex: spec.Index, Price: amt(priceInt(px)), BaseAssetAmount: ref.size, QuoteAssetAmount: "0",
			BaseAssetAmountFilled: "0", QuoteAssetAmountFilled: "0", Direction: dir, TriggerPrice: "0",
			TriggerCondition: events.TriggerAbove, ExistingPositionDirection: dir, PostOnly: true,
			OraclePriceOffset: "0", AuctionStartPrice: "0", AuctionEndPrice: "0", Symbol: spec.Symbol,
			LastUpdatedTs: cancelledAt, LastActionStatus: events.LastActionCancelled,
			LastActionExplanation: events.ExplanationNone, CumulativeFee: "0",
		})
		g.add(placedAt, events.TopicOrderActions, g.action(ref, placedAt, placeSig, 1, placeSlot, events.ActionPlace,
			events.ExplanationNone, "0", "0"))
		g.add(cancelledAt, events.TopicOrderActions, g.action(ref, cancelledAt, cancelSig, 0, cancelSlot,
			events.ActionCancel, events.ExplanationNone, "0", "0"))
	}
}

// deposits emits deposits, withdrawals and rewards; depositRecordId grows per spot market.
func (g *minuteGen) deposits() {
	s := g.s
	rng := g.rng(streamDeposits)
	type dep struct {
		ts     int64
		reward bool
	}
	var all []dep
	for _, ts := range g.seconds(rng, g.count(rng, depositsPerFill)) {
		all = append(all, dep{ts, false})
	}
	for _, ts := range g.seconds(rng, g.count(rng, rewardsPerFill)) {
		all = append(all, dep{ts, true})
	}
	slices.SortStableFunc(all, func(a, b dep) int { return cmp.Compare(a.ts, b.ts) })
	seq := map[int]int{}
	for _, d := range all {
		a := s.pop.pick(rng)
		spec := s.spot(0)
		if rng.Float64() < 0.25 {
			spec = s.spot(1)
		}
		price := s.oracle(spec, d.ts)
		var tokens float64
		direction, explanation := events.DepositDirectionDeposit, events.DepositExplanationNone
		switch {
		case d.reward:
			tokens = (0.1 + 20*rng.Float64()) / price
			explanation = events.DepositExplanationReward
		default:
			tokens = math.Max(1, math.Min(2e6, 800*math.Exp(1.3*rng.NormFloat64()))) / price
			r := rng.Float64()
			switch {
			case r < 0.56:
			case r < 0.59:
				explanation = events.DepositExplanationRepayBorrow
			case r < 0.62:
				explanation = events.DepositExplanationTransfer
			case r < 0.9:
				direction = events.DepositDirectionWithdraw
			case r < 0.97:
				direction, explanation = events.DepositDirectionWithdraw, events.DepositExplanationBorrow
			default:
				direction, explanation = events.DepositDirectionWithdraw, events.DepositExplanationTransfer
			}
		}
		seq[spec.Index]++
		st := s.spotState(spec, d.ts)
		// The account's lifetime totals grow with its activity; this record's amount is part of them.
		value := tokens * price
		totalDeposits := a.weight * 400 * days(d.ts)
		totalWithdraws := totalDeposits * 0.6
		if direction == events.DepositDirectionDeposit {
			totalDeposits += value
		} else {
			totalWithdraws += value
		}
		g.add(d.ts, events.TopicDeposits, &events.Deposit{
			Tx:     events.Tx{Ts: d.ts, TxSig: signature(rng), Slot: slotAt(d.ts) + rng.Int64N(2)},
			Amount: units(tokens, tokenScale(spec)), OraclePrice: amt(priceInt(price)),
			MarketDepositBalance: amt(st.deposits), MarketWithdrawBalance: amt(st.borrows),
			MarketCumulativeDepositInterest: amt(st.depositInterest),
			MarketCumulativeBorrowInterest:  amt(st.borrowInterest),
			TotalDepositsAfter:              units(totalDeposits, events.QuotePrecision),
			TotalWithdrawsAfter:             units(totalWithdraws, events.QuotePrecision),
			DepositRecordID:                 g.id(seq[spec.Index]), UserAuthority: a.Authority, User: a.User,
			Direction: direction, Explanation: explanation, MarketIndex: spec.Index, Symbol: spec.Symbol,
		})
	}
}

// swaps emits USDC<->SOL swaps.
func (g *minuteGen) swaps() {
	s := g.s
	rng := g.rng(streamSwaps)
	usdc, sol := s.spot(0), s.spot(1)
	for _, ts := range g.seconds(rng, g.count(rng, swapsPerFill)) {
		a := s.pop.pick(rng)
		value := math.Max(1, math.Min(5e5, 500*math.Exp(1.2*rng.NormFloat64())))
		in, out := usdc, sol
		if rng.Float64() >= 0.55 {
			in, out = sol, usdc
		}
		inPx, outPx := s.oracle(in, ts), s.oracle(out, ts)
		outTokens := value * (1 - 0.0008) / outPx
		g.add(ts, events.TopicSwaps, &events.Swap{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, User: a.User,
			OutMarketIndex: out.Index, InMarketIndex: in.Index,
			AmountOut: units(outTokens, tokenScale(out)), AmountIn: units(value/inPx, tokenScale(in)),
			OutOraclePrice: amt(priceInt(outPx)), InOraclePrice: amt(priceInt(inPx)),
			Fee: units(outTokens*0.0005, tokenScale(out)), InSymbol: in.Symbol, OutSymbol: out.Symbol,
		})
	}
}

// settlements emits perp P&L settlements.
func (g *minuteGen) settlements() {
	s := g.s
	rng := g.rng(streamSettle)
	for _, ts := range g.seconds(rng, g.count(rng, settlesPerFill)) {
		a := s.pop.pick(rng)
		spec := s.pickPerp(rng)
		base := s.position(a, spec, (ts-epoch)/secondsPerDay)
		oracle := s.oracle(spec, ts)
		entry := tradePrice(spec, oracle*(1+0.03*rng.NormFloat64()))
		quoteEntry := -float64(base) / events.BasePrecision * entry
		pnl := rng.NormFloat64() * math.Max(20, math.Abs(quoteEntry)*0.02)
		g.add(ts, events.TopicSettlePnl, &events.SettlePnl{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, User: a.User, MarketIndex: spec.Index,
			Pnl: units(pnl, events.QuotePrecision), BaseAssetAmount: amt(base),
			QuoteAssetAmountAfter: units(quoteEntry+pnl, events.QuotePrecision),
			QuoteEntryAmount:      units(quoteEntry, events.QuotePrecision),
			SettlePrice:           amt(priceInt(oracle)), Explanation: events.SettlePnlExplanationNone,
		})
	}
}

// perpLP emits AMM liquidity adds, removals and settlements.
func (g *minuteGen) perpLP() {
	s := g.s
	rng := g.rng(streamPerpLP)
	for _, ts := range g.seconds(rng, g.count(rng, perpLPPerFill)) {
		a := s.pop.pick(rng)
		for range 20 { // prefer the accounts that provide liquidity
			if a.lpShares {
				break
			}
			a = s.pop.pick(rng)
		}
		spec := s.pickPerp(rng)
		oracle := s.oracle(spec, ts)
		shares := roundStep(10000*math.Exp(rng.NormFloat64())/oracle*events.BasePrecision, spec.step*10)
		rec := &events.PerpLP{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, User: a.User,
			Action: events.LPActionAddLiquidity, MarketIndex: spec.Index, NShares: amt(shares),
			DeltaBaseAssetAmount: "0", DeltaQuoteAssetAmount: "0", Pnl: "0",
		}
		if r := rng.Float64(); r >= 0.4 {
			rec.Action = events.LPActionSettleLiquidity
			switch {
			case r >= 0.95:
				rec.Action = events.LPActionRemoveLiquidityDerisk
			case r >= 0.65:
				rec.Action = events.LPActionRemoveLiquidity
			}
			deltaBase := int64(float64(shares)*0.01*rng.NormFloat64()) / spec.step * spec.step
			rec.DeltaBaseAssetAmount = amt(deltaBase)
			rec.DeltaQuoteAssetAmount = units(-float64(deltaBase)/events.BasePrecision*oracle, events.QuotePrecision)
			rec.Pnl = units(5*rng.NormFloat64(), events.QuotePrecision)
		}
		g.add(ts, events.TopicLP, rec)
	}
}

// ifStakes emits insurance fund stakes and unstakes of authorities.
func (g *minuteGen) ifStakes() {
	s := g.s
	rng := g.rng(streamIFStakes)
	for _, ts := range g.seconds(rng, g.count(rng, ifStakesPerFill)) {
		a := s.pop.pick(rng)
		spec := s.spot(0)
		if rng.Float64() < 0.2 {
			spec = s.spot(1)
		}
		total, users, sharePrice := s.ifTotals(spec, ts)
		mine := s.ifShares(a.Authority, spec, (ts-epoch)/secondsPerDay)
		amount := int64(2000 * math.Exp(rng.NormFloat64()) / s.oracle(spec, ts) * tokenScale(spec))
		action := events.IFStakeActionStake
		switch r := rng.Float64(); {
		case mine == 0 || r < 0.5:
		case r < 0.75:
			action = events.IFStakeActionUnstakeRequest
		case r < 0.95:
			action = events.IFStakeActionUnstake
		default:
			action = events.IFStakeActionUnstakeCancelRequest
		}
		var delta int64 // shares
		switch action {
		case events.IFStakeActionStake:
			delta = int64(float64(amount) / sharePrice)
		case events.IFStakeActionUnstake:
			delta = -min(mine, int64(float64(amount)/sharePrice))
			amount = int64(float64(-delta) * sharePrice)
		default:
			amount = min(amount, int64(float64(mine)*sharePrice))
		}
		g.add(ts, events.TopicIFStakes, &events.IFStake{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, MarketIndex: spec.Index,
			Amount: amt(amount), UserAuthority: a.Authority, Action: action,
			IfSharesBefore: amt(mine), UserIfSharesBefore: amt(users), TotalIfSharesBefore: amt(total),
			IfSharesAfter: amt(mine + delta), UserIfSharesAfter: amt(users + delta), TotalIfSharesAfter: amt(total + delta),
			InsuranceVaultAmountBefore: amt(int64(float64(total) * sharePrice)), Symbol: spec.Symbol,
		})
	}
}

// lpMintRedeem emits LP pool token mints and redemptions against the USDC and SOL constituents.
func (g *minuteGen) lpMintRedeem() {
	s := g.s
	rng := g.rng(streamLPMint)
	mints := []string{"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "So11111111111111111111111111111111111111112"}
	targets := []float64{0.6, 0.4}
	for k, ts := range g.seconds(rng, g.count(rng, lpMintPerFill)) {
		a := s.pop.pick(rng)
		spec := s.spot(rng.IntN(2))
		price := s.oracle(spec, ts)
		value := math.Max(10, 3000*math.Exp(rng.NormFloat64()))
		lpPrice := 1 + 0.12*years(ts) + 0.01*wave(ts, 3, 0)
		description := events.LPDescriptionMint
		if rng.Float64() < 0.4 {
			description = events.LPDescriptionRedeem
		}
		tokens := value / price
		slot := slotAt(ts) + rng.Int64N(2)
		g.add(ts, events.TopicLPMintRedeem, &events.LPMintRedeem{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slot}, SpotMarketIndex: spec.Index, ConstituentIndex: spec.Index,
			LastAumSlot: slot - 1 - rng.Int64N(60), Description: description, Authority: a.Authority,
			Amount: units(tokens, tokenScale(spec)), Fee: units(tokens*0.0005, tokenScale(spec)),
			OraclePrice: amt(priceInt(price)), Mint: mints[spec.Index],
			LpAmount: units(value/lpPrice, events.QuotePrecision), LpFee: "0", LpPrice: amt(priceInt(lpPrice)),
			MintRedeemID: g.id(k + 1), LastAum: units(2.5e7*(1+0.2*wave(ts, 17, 1)), events.QuotePrecision),
			InMarketCurrentWeight: units(targets[spec.Index]+0.02*rng.NormFloat64(), events.PercentagePrecision),
			InMarketTargetWeight:  units(targets[spec.Index], events.PercentagePrecision),
			LpPool:                s.pop.lpPool,
		})
	}
}

// liquidations emits the occasional liquidation of every kind, mostly perp.
func (g *minuteGen) liquidations() {
	s := g.s
	rng := g.rng(streamLiquidations)
	usdc, sol := s.spot(0), s.spot(1)
	for _, ts := range g.seconds(rng, g.count(rng, liquidationsPerFill)) {
		a := s.pop.pick(rng)
		spec := s.pickPerp(rng)
		oracle := s.oracle(spec, ts)
		solPx := s.oracle(sol, ts)
		notional := math.Max(50, 4000*math.Exp(rng.NormFloat64()))
		margin := notional * 0.05
		l := &events.Liquidation{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, User: a.User,
			Liquidator:        s.pop.liquidators[rng.IntN(len(s.pop.liquidators))],
			MarginRequirement: units(margin, events.QuotePrecision),
			TotalCollateral:   units(margin*(0.5+0.45*rng.Float64()), events.QuotePrecision),
			MarginFreed:       units(margin*0.5*rng.Float64(), events.QuotePrecision),
			LiquidationID:     1 + rng.IntN(500), CanceledOrderIDs: []string{},
		}
		// An open order of the account's the liquidation cancels: the stream has no record of it (it
		// was placed before, say), so it takes an id of its own, which names no other order.
		if rng.Float64() < 0.3 {
			if id, ok := g.orderID(a); ok {
				l.CanceledOrderIDs = append(l.CanceledOrderIDs, id)
			}
		}
		base := roundStep(notional/oracle*events.BasePrecision, spec.step)
		if rng.IntN(2) == 0 {
			base = -base
		}
		quote := units(notional, events.QuotePrecision)
		switch r := rng.Float64(); {
		case r < 0.7:
			l.LiquidationType = events.LiquidationTypePerp
			l.LiquidatePerpMarketIndex = new(spec.Index)
			l.LiquidatePerpOraclePrice = amt(priceInt(oracle))
			l.LiquidatePerpBaseAssetAmount = amt(base)
			l.LiquidatePerpQuoteAssetAmount = quote
			l.LiquidatePerpLpShares = "0"
			l.LiquidatePerpUserOrderID, l.LiquidatePerpLiquidatorOrderID = "0", "0"
			l.LiquidatePerpLiquidatorFee = units(notional*0.01, events.QuotePrecision)
			l.LiquidatePerpIfFee = units(notional*0.005, events.QuotePrecision)
			if rng.IntN(5) == 0 {
				l.BitFlags = 1 // LiquidationBitFlag IsolatedPosition: the position had margin of its own
			}
		case r < 0.8:
			l.LiquidationType = events.LiquidationTypeSpot
			l.LiquidateSpotAssetMarketIndex, l.LiquidateSpotLiabilityMarketIndex = new(sol.Index), new(usdc.Index)
			l.LiquidateSpotAssetPrice, l.LiquidateSpotLiabilityPrice = amt(priceInt(solPx)), amt(priceInt(1))
			l.LiquidateSpotAssetTransfer = units(notional/solPx, tokenScale(sol))
			l.LiquidateSpotLiabilityTransfer = units(notional*0.99, tokenScale(usdc))
			l.LiquidateSpotIfFee = units(notional*0.002, tokenScale(usdc))
		case r < 0.87:
			l.LiquidationType = events.LiquidationTypeBorrowForPerpPnl
			l.LiquidateBorrowForPerpPnlPerpMarketIndex = new(spec.Index)
			l.LiquidateBorrowForPerpPnlMarketOraclePrice = amt(priceInt(oracle))
			l.LiquidateBorrowForPerpPnlPnlTransfer = units(notional*0.1, events.QuotePrecision)
			l.LiquidateBorrowForPerpPnlLiabilityMarketIndex = new(sol.Index)
			l.LiquidateBorrowForPerpPnlLiabilityPrice = amt(priceInt(solPx))
			l.LiquidateBorrowForPerpPnlLiabilityTransfer = units(notional*0.1/solPx, tokenScale(sol))
		case r < 0.94:
			l.LiquidationType = events.LiquidationTypePerpPnlForDeposit
			l.LiquidatePerpPnlForDepositPerpMarketIndex = new(spec.Index)
			l.LiquidatePerpPnlForDepositMarketOraclePrice = amt(priceInt(oracle))
			l.LiquidatePerpPnlForDepositPnlTransfer = units(notional*0.1, events.QuotePrecision)
			l.LiquidatePerpPnlForDepositAssetMarketIndex = new(usdc.Index)
			l.LiquidatePerpPnlForDepositAssetPrice = amt(priceInt(1))
			l.LiquidatePerpPnlForDepositAssetTransfer = units(notional*0.1, tokenScale(usdc))
		case r < 0.98:
			l.LiquidationType, l.Bankrupt = events.LiquidationTypePerpBankruptcy, true
			l.PerpBankruptcyMarketIndex = new(spec.Index)
			l.PerpBankruptcyPnl = units(-notional*0.02, events.QuotePrecision)
			l.PerpBankruptcyIfPayment = units(notional*0.02, events.QuotePrecision)
			l.PerpBankruptcyClawbackUserPayment = "0"
			l.PerpBankruptcyCumulativeFundingRateDelta = "0"
		default:
			l.LiquidationType, l.Bankrupt = events.LiquidationTypeSpotBankruptcy, true
			l.SpotBankruptcyMarketIndex = new(usdc.Index)
			l.SpotBankruptcyBorrowAmount = units(notional*0.02, tokenScale(usdc))
			l.SpotBankruptcyIfPayment = units(notional*0.02, tokenScale(usdc))
			l.SpotBankruptcyCumulativeDepositInterestDelta = "0"
		}
		g.add(ts, events.TopicLiquidations, l)
	}
}

// marketStates samples every market each MarketStateInterval, aligned to the epoch, or at every slot
// of the minute when the interval is below a second.
func (g *minuteGen) marketStates() {
	s := g.s
	if s.cfg.MarketStateInterval < time.Second {
		for slot := slotAt(g.start); slot < slotAt(g.start+60); slot++ {
			for i := range s.markets {
				g.add(slotTime(slot), events.TopicMarketStates, s.marketState(&s.markets[i], slotTime(slot), slot))
			}
		}
		return
	}
	interval := int64(s.cfg.MarketStateInterval / time.Second)
	first := epoch + (g.start-epoch+interval-1)/interval*interval
	for ts := first; ts < g.start+60; ts += interval {
		for i := range s.markets {
			g.add(ts, events.TopicMarketStates, s.marketState(&s.markets[i], ts, slotAt(ts)))
		}
	}
}

func (s *Simulator) marketState(spec *marketSpec, ts, slot int64) *events.MarketState {
	oracle := s.oracle(spec, ts)
	ms := &events.MarketState{
		Ts: ts, Slot: slot, MarketIndex: spec.Index, MarketType: spec.Type, Symbol: spec.Symbol,
		OraclePrice: amt(priceInt(oracle)),
	}
	if spec.Type == events.MarketTypeSpot {
		st := s.spotState(spec, ts)
		ms.Decimals = new(spec.decimals)
		ms.DepositBalance, ms.BorrowBalance = amt(st.deposits), amt(st.borrows)
		ms.DepositRate, ms.BorrowRate = amt(st.depositRate), amt(st.borrowRate)
		return ms
	}
	h, sec := (ts-epoch)/3600, (ts-epoch)%3600
	p := s.paths[spec.path]
	cur, next := p.point(h), p.point(h+1)
	premium := cur.premium + (next.premium-cur.premium)*float64(sec)/3600
	mark := tradePrice(spec, oracle*(1+premium))
	// The AMM widens the side the crowd leans on.
	longSpread := 250 + math.Max(0, premium)*1e6
	shortSpread := 250 + math.Max(0, -premium)*1e6
	// The AMM's position moves from one hour's to the next as traders lean on it, not in steps.
	ammBase := cur.ammBase + int64(float64(next.ammBase-cur.ammBase)*float64(sec)/3600)
	long := spec.oi * (1 + 0.2*wave(ts, 5, float64(spec.Index))) / s.level(spec) * events.BasePrecision
	short := -float64(ammBase) - long
	ms.MarkPrice = amt(priceInt(mark))
	ms.BidPrice = amt(priceInt(tradePrice(spec, mark*(1-shortSpread/events.PercentagePrecision))))
	ms.AskPrice = amt(priceInt(tradePrice(spec, mark*(1+longSpread/events.PercentagePrecision))))
	ms.LongSpread, ms.ShortSpread = amt(int64(longSpread)), amt(int64(shortSpread))
	ms.BaseAssetAmountWithAmm = amt(ammBase)
	ms.BaseAssetAmountLong, ms.BaseAssetAmountShort = amt(int64(long)), amt(int64(short))
	ms.OpenInterest = amt(int64(long) + int64(-short))
	ms.FundingRateLong, ms.FundingRateShort = amt(cur.rateLong), amt(cur.rateShort)
	return ms
}
