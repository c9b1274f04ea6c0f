package sim

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

// hourGen builds the events planned per hour; minute picks those that fall into it.
type hourGen struct {
	s     *Simulator
	h     int64 // hours since the epoch
	start int64 // unix seconds
	items []item
}

func (g *hourGen) add(ts int64, topic string, rec events.Record) {
	g.items = append(g.items, item{ts: ts, topic: topic, rec: rec})
}

func (g *hourGen) rng(stream uint64) *rand.Rand { return newRand(g.s.seed, stream, g.h) }

func (s *Simulator) perps() []*marketSpec {
	var out []*marketSpec
	for i := range s.markets {
		if s.markets[i].Type == events.MarketTypePerp {
			out = append(out, &s.markets[i])
		}
	}
	return out
}

// fundingRates emits each perp market's hourly funding update within the hour's first 41 seconds.
func (g *hourGen) fundingRates() {
	if g.h == 0 {
		return // no hour before the epoch to take a TWAP over
	}
	s := g.s
	rng := g.rng(streamFunding)
	for _, spec := range s.perps() {
		pt := s.paths[spec.path].point(g.h)
		ts := g.start + 1 + rng.Int64N(40)
		revenue := -float64(pt.ammBase) * float64(pt.rateLong) / 1e12 // quote 1e6 the AMM receives
		g.add(ts, events.TopicFundingRates, &events.FundingRate{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, MarketIndex: spec.Index,
			RecordID: strconv.FormatInt(g.h, 10), Symbol: spec.Symbol,
			FundingRate: amt(pt.rateLong), FundingRateLong: amt(pt.rateLong), FundingRateShort: amt(pt.rateShort),
			CumulativeFundingRateLong: amt(pt.cumLong), CumulativeFundingRateShort: amt(pt.cumShort),
			OraclePriceTwap: amt(priceInt(pt.twap)), MarkPriceTwap: amt(priceInt(pt.twap * (1 + pt.premium))),
			PeriodRevenue: amt(int64(math.Round(revenue))), BaseAssetAmountWithAmm: amt(pt.ammBase),
			BaseAssetAmountWithUnsettledLp: amt(pt.ammBase / 50),
		})
	}
}

// fundingPayments settles funding into a fifth of the open positions each hour, after the update.
func (g *hourGen) fundingPayments() {
	if g.h < 2 {
		return
	}
	s := g.s
	rng := g.rng(streamPayments)
	day := (g.start - epoch) / secondsPerDay
	for _, spec := range s.perps() {
		p := s.paths[spec.path]
		now := p.point(g.h)
		for i := range s.pop.actors {
			a := &s.pop.actors[i]
			base := s.position(a, spec, day)
			if base == 0 || rng.Float64() >= 0.2 {
				continue
			}
			ts := g.start + 60 + rng.Int64N(3540)
			last := p.point(max(0, g.h-1-rng.Int64N(8)))
			cum, lastCum := now.cumLong, last.cumLong
			if base < 0 {
				cum, lastCum = now.cumShort, last.cumShort
			}
			// payment (quote 1e6) = -base (1e9) * funding delta (1e9) / 1e12
			payment := -float64(base) * float64(cum-lastCum) / 1e12
			g.add(ts, events.TopicFundingPayments, &events.FundingPayment{
				Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, UserAuthority: a.Authority,
				User: a.User, MarketIndex: spec.Index, FundingPayment: amt(int64(math.Round(payment))),
				BaseAssetAmount: amt(base), UserLastCumulativeFunding: amt(lastCum),
				AmmCumulativeFundingLong: amt(now.cumLong), AmmCumulativeFundingShort: amt(now.cumShort),
			})
		}
	}
}

// insuranceFund settles an hour of revenue into each spot market's insurance fund.
func (g *hourGen) insuranceFund() {
	s := g.s
	rng := g.rng(streamInsurance)
	for _, spec := range []*marketSpec{s.spot(0), s.spot(1)} {
		ts := g.start + 120 + rng.Int64N(600)
		total, _, sharePrice := s.ifTotals(spec, ts)
		st := s.spotState(spec, ts)
		revenue := (50 + 450*rng.Float64()) / s.oracle(spec, ts)
		g.add(ts, events.TopicInsuranceFund, &events.InsuranceFund{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts) + rng.Int64N(2)}, SpotMarketIndex: spec.Index,
			UserIfFactor: 500000, TotalIfFactor: 1000000, Symbol: spec.Symbol,
			VaultAmountBefore:          amt(st.deposits - st.borrows),
			InsuranceVaultAmountBefore: amt(int64(float64(total) * sharePrice)),
			TotalIfSharesBefore:        amt(total), TotalIfSharesAfter: amt(total),
			Amount: units(revenue, tokenScale(spec)),
		})
	}
}

// vaults publishes each vault's state a few seconds into the hour.
func (g *hourGen) vaults() {
	s := g.s
	ts := g.start + 5
	for i, v := range s.pop.vaults {
		spec := s.spot(v.spotMarket)
		tokens := func(dollars float64) events.Amount {
			return units(dollars/s.oracle(spec, ts), tokenScale(spec))
		}
		net := v.size * (1 + 0.08*wave(ts, 23, float64(i)))
		deposits := v.size * (1 + days(ts)/60)
		value := net * (1 + 0.1*wave(ts, 20, float64(i)) + 0.05*days(ts)/30)
		g.add(ts, events.TopicVaults, &events.Vault{
			Ts: ts, Slot: slotAt(ts), Vault: v.key, Name: v.name, Manager: v.manager, SpotMarketIndex: spec.Index,
			Symbol: spec.Symbol, TotalShares: tokens(v.size), TotalDeposits: tokens(deposits),
			TotalWithdraws: tokens(deposits - net), NetDeposits: tokens(net), TotalAccountValue: tokens(value),
			ManagementFee: units(0.02, events.PercentagePrecision), ProfitShare: units(0.2, events.PercentagePrecision),
			Permissioned: i == 2,
		})
	}
}

// params publishes the dashboard blob at the top of the hour.
func (g *hourGen) params() {
	s := g.s
	rng := g.rng(streamParams)
	prices := map[string]string{}
	for i := range s.markets {
		spec := &s.markets[i]
		prices[spec.Symbol] = strconv.FormatInt(priceInt(s.oracle(spec, g.start)), 10)
	}
	blob, err := json.Marshal(map[string]any{
		"maintenance":   false,
		"priorityFee":   map[string]int{"low": 1000 + rng.IntN(1000), "medium": 5000 + rng.IntN(5000), "high": 50000 + rng.IntN(50000)},
		"oraclePrices":  prices,
		"fundingPeriod": int(time.Hour / time.Second),
	})
	if err != nil {
		panic(err) // maps of strings and ints always encode
	}
	g.add(g.start, events.TopicParams, &events.Params{Ts: g.start, Params: blob})
}

// snapshots emits every account's trading and earn snapshot each SnapshotInterval, vault snapshots for
// vault depositors, and once a day the referral snapshot of every referrer.
func (g *hourGen) snapshots() {
	s := g.s
	if (g.start-epoch)%int64(s.cfg.SnapshotInterval/time.Second) != 0 {
		return
	}
	rng := g.rng(streamSnapshots)
	ts := g.start
	d := days(ts)
	usdc, sol := s.spot(0), s.spot(1)
	solPx := s.oracle(sol, ts)
	q := func(v float64) events.Amount { return units(v, events.QuotePrecision) }
	for i := range s.pop.actors {
		a := &s.pop.actors[i]
		w, ph := a.weight, float64(a.index)*0.7
		taker := w * 8000 * d
		maker := w * 1500 * d
		if a.maker {
			maker = w * 40000 * d
		}
		realized := w * (2000*wave(ts, 9, ph) + 10*d*math.Sin(ph))
		settled := realized * 0.92
		fees := taker * 0.00035
		balance := math.Max(0, w*10000*(1.2+0.3*wave(ts, 13, ph))+realized-fees)
		g.add(ts, events.TopicAccountSnapshots, &events.AccountSnapshot{
			Kind: events.SnapshotTrading, Authority: a.Authority, AccountID: a.User, Ts: ts,
			Trading: &events.TradingSnapshot{
				AccountBalance: q(balance), UnrealizedPnl: q(w * 400 * rng.NormFloat64()),
				CumulativeRealizedPnl: q(realized), UnsettledPnl: q(realized - settled),
				CumulativeSettledPnl: q(settled), CumulativeFunding: q(-w * 15 * d),
				CumulativeFeePaid: q(fees), CumulativeFeeRebate: q(maker * 0.00002),
				CumulativeTakerVolume: q(taker), CumulativeMakerVolume: q(maker),
			},
		})
		usdcBal := w * 5000 * (1 + 0.2*wave(ts, 17, ph))
		assets := []events.EarnAsset{{
			MarketIndex: usdc.Index, Balance: q(usdcBal), Deposits: q(usdcBal * 1.4), Withdrawals: q(usdcBal * 0.4),
			Pnl: q(w * d * 0.6), InterestBaseValue: q(w * d * 0.5), InterestQuoteValue: q(w * d * 0.5),
			OraclePrice: amt(priceInt(1)),
		}}
		if a.Referrer != "" {
			assets[0].Rewards = q(w * d * 0.05)
		}
		if a.index%3 == 0 {
			solBal := w * 20 * (1 + 0.2*wave(ts, 19, ph))
			scale := tokenScale(sol)
			assets = append(assets, events.EarnAsset{
				MarketIndex: sol.Index, Balance: units(solBal, scale), Deposits: units(solBal*1.2, scale),
				Withdrawals: units(solBal*0.2, scale), Pnl: q(w * d * 0.3 * solPx / 150),
				InterestBaseValue: units(w*d*0.002, scale), InterestQuoteValue: q(w * d * 0.002 * solPx),
				OraclePrice: amt(priceInt(solPx)),
			})
		}
		g.add(ts, events.TopicAccountSnapshots, &events.AccountSnapshot{
			Kind: events.SnapshotEarn, Authority: a.Authority, AccountID: a.User, Ts: ts,
			Earn: &events.EarnSnapshot{Assets: assets},
		})
		if a.inVault >= 0 {
			v := s.pop.vaults[a.inVault]
			spec := s.spot(v.spotMarket)
			value := w * 3000 * (1 + 0.1*wave(ts, 20, float64(a.inVault)))
			g.add(ts, events.TopicAccountSnapshots, &events.AccountSnapshot{
				Kind: events.SnapshotVault, Authority: a.Authority, AccountID: a.User, Ts: ts,
				Vault: &events.VaultSnapshot{
					Vault: v.key, TotalAccountValue: q(value),
					TotalAccountBaseValue: units(value/s.oracle(spec, ts), tokenScale(spec)),
					MarketIndex:           spec.Index, NetDeposits: q(value * 0.9),
				},
			})
		}
	}
	if (ts-epoch)%secondsPerDay != 0 {
		return
	}
	for _, auth := range s.pop.authorities {
		referred := s.pop.referees[auth]
		if len(referred) == 0 {
			continue
		}
		n := float64(len(referred))
		g.add(ts, events.TopicAccountSnapshots, &events.AccountSnapshot{
			Kind: events.SnapshotReferral, Authority: auth, Ts: ts,
			Referral: &events.ReferralSnapshot{
				ReferralRewards: q(n * 5 * d), ReferralCount: amt(int64(len(referred))),
				ReferredUsers: referred, ReferredVolume30D: q(n * 250000 * (1 + 0.3*wave(ts, 30, n))),
			},
		})
	}
}
