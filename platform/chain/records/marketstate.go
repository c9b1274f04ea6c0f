package records

import (
	"math/big"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// Precisions of the SDK's AMM price math (constants/numericConstants): a price is
// quote reserve * PRICE_PRECISION * peg / PEG_PRECISION / base reserve.
const (
	pricePrecision = 1_000_000
	pegPrecision   = 1_000_000
)

// PerpMarketState is a perp market's state as its account holds it, sampled at ts and slot (the
// account's slot, not the AMM's last update), for protocol.market-states.
//
// Every field is the account's own, in the record's units, or the SDK's arithmetic on them:
//   - oraclePrice is amm.historicalOracleData.lastOraclePrice, the last price the program took
//     from the oracle (a market state read from the account alone cannot see the oracle account);
//   - markPrice is the SDK's calculateReservePrice without oracle data, that is calculatePrice of
//     the AMM's reserves and peg (with oracle data the SDK would first project a repeg toward it);
//   - bidPrice and askPrice are calculatePrice of the bid and ask reserves the program stored at
//     its last AMM update, the quotes those spreads give; the SDK's calculateBidAskPrice instead
//     recomputes the spreads for the wall clock and a live oracle, which an account does not fix;
//   - longSpread and shortSpread are the spreads of that same update, in BID_ASK_SPREAD_PRECISION,
//     which is the record's percentage 1e6;
//   - openInterest is longs plus shorts, both as positive base amounts, as the API documents it.
func (m *Mapper) PerpMarketState(a *drift.PerpMarket, ts, slot int64) (*events.MarketState, error) {
	market, err := m.cat.Market(events.MarketTypePerp, int(a.MarketIndex))
	if err != nil {
		return nil, wrap("PerpMarket", err)
	}
	amm := &a.Amm
	// The program keeps longs non-negative and shorts non-positive; sizes add either way.
	long, short := big128(amm.BaseAssetAmountLong), big128(amm.BaseAssetAmountShort)
	oi := new(big.Int).Add(long.Abs(long), short.Abs(short))
	return &events.MarketState{
		Ts:                     ts,
		Slot:                   slot,
		MarketIndex:            market.Index,
		MarketType:             events.MarketTypePerp,
		Symbol:                 market.Symbol,
		OraclePrice:            samt(amm.HistoricalOracleData.LastOraclePrice),
		MarkPrice:              bigAmt(ammPrice(amm.BaseAssetReserve, amm.QuoteAssetReserve, amm.PegMultiplier)),
		BidPrice:               bigAmt(ammPrice(amm.BidBaseAssetReserve, amm.BidQuoteAssetReserve, amm.PegMultiplier)),
		AskPrice:               bigAmt(ammPrice(amm.AskBaseAssetReserve, amm.AskQuoteAssetReserve, amm.PegMultiplier)),
		LongSpread:             uamt(amm.LongSpread),
		ShortSpread:            uamt(amm.ShortSpread),
		BaseAssetAmountWithAmm: events.Amount(amm.BaseAssetAmountWithAmm.String()),
		BaseAssetAmountLong:    events.Amount(amm.BaseAssetAmountLong.String()),
		BaseAssetAmountShort:   events.Amount(amm.BaseAssetAmountShort.String()),
		OpenInterest:           bigAmt(oi),
		FundingRateLong:        samt(amm.LastFundingRateLong),
		FundingRateShort:       samt(amm.LastFundingRateShort),
	}, nil
}

// ammPrice is the SDK's calculatePrice (math/amm): zero for an empty base reserve, and the
// divisions truncate in its order, which matters to the last digit.
func ammPrice(base, quote, peg borsh.Uint128) *big.Int {
	b := bigU128(base)
	if b.Sign() == 0 {
		return b
	}
	p := bigU128(quote)
	p.Mul(p, big.NewInt(pricePrecision)).Mul(p, bigU128(peg))
	p.Quo(p, big.NewInt(pegPrecision))
	return p.Quo(p, b)
}

func bigU128(u borsh.Uint128) *big.Int {
	v := new(big.Int).SetUint64(u.Hi)
	return v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(u.Lo))
}

// big128 reads the two's complement of an i128.
func big128(i borsh.Int128) *big.Int {
	v := bigU128(borsh.Uint128(i))
	if i.Negative() {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return v
}

func bigAmt(v *big.Int) events.Amount { return events.Amount(v.String()) }
