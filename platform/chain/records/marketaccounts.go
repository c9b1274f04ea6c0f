package records

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// The reverse of PerpMarketState and SpotMarketState: a market account built from a market state
// record, for a chain that must serve the accounts a record stream implies (the simulator's chain).
// A record fixes far less than an account holds, so the accounts are synthetic where the record is
// silent; what they do fix is exactly what the forward mappings read, so that
//
//	Mapper.PerpMarketState(PerpMarketAccount(r), r.Ts, r.Slot) == r
//
// for every record the forward mapping could have produced, and likewise for spot markets. A record
// no account can give back (an open interest that is not the sum of the sides, rates no curve
// gives at its utilization) is refused with ErrNotRepresentable rather than served wrong.

// ErrNotRepresentable is the refusal of a record that no account maps back to.
var ErrNotRepresentable = errors.New("no account maps to the record")

// syntheticBaseReserve is the base reserve of every synthetic AMM (and of its bid and ask
// reserves): with the peg at PEG_PRECISION, calculatePrice is then quote reserve / 1e6 exactly, so
// the quote reserve of a price p is p * 1e6 and the price math gives p back to the last digit.
const syntheticBaseReserve = 1_000_000_000_000

// PerpMarketAccount is a PerpMarket account whose PerpMarketState is r (its ts and slot aside,
// which are the sample's, not the account's). Synthetic: the peg is PEG_PRECISION, every base
// reserve 1e12 and each quote reserve the price times 1e6 (mark from the AMM's reserves, bid and
// ask from its bid and ask reserves); the market is active, its pubkey its PDA, its name the symbol
// padded with spaces as the program pads names. Everything else is zero.
func PerpMarketAccount(r *events.MarketState) (*drift.PerpMarket, error) {
	if r.MarketType != events.MarketTypePerp {
		return nil, fmt.Errorf("records: PerpMarket from a %s market state", r.MarketType)
	}
	e := &enc{}
	a := &drift.PerpMarket{
		Pubkey:      drift.PerpMarketAddress(small[uint16](e, "marketIndex", r.MarketIndex)),
		Name:        e.name("symbol", r.Symbol),
		MarketIndex: small[uint16](e, "marketIndex", r.MarketIndex),
		Status:      drift.MarketStatusActive,
	}
	amm := &a.Amm
	amm.PegMultiplier = borsh.U128(pegPrecision)
	amm.BaseAssetReserve, amm.QuoteAssetReserve = e.reserves("markPrice", string(r.MarkPrice))
	amm.BidBaseAssetReserve, amm.BidQuoteAssetReserve = e.reserves("bidPrice", string(r.BidPrice))
	amm.AskBaseAssetReserve, amm.AskQuoteAssetReserve = e.reserves("askPrice", string(r.AskPrice))
	amm.HistoricalOracleData.LastOraclePrice = intOf[int64](e, "oraclePrice", string(r.OraclePrice))
	amm.LongSpread = uintOf[uint32](e, "longSpread", string(r.LongSpread))
	amm.ShortSpread = uintOf[uint32](e, "shortSpread", string(r.ShortSpread))
	amm.BaseAssetAmountWithAmm = e.i128("baseAssetAmountWithAmm", string(r.BaseAssetAmountWithAmm))
	amm.BaseAssetAmountLong = e.i128("baseAssetAmountLong", string(r.BaseAssetAmountLong))
	amm.BaseAssetAmountShort = e.i128("baseAssetAmountShort", string(r.BaseAssetAmountShort))
	amm.LastFundingRateLong = intOf[int64](e, "fundingRateLong", string(r.FundingRateLong))
	amm.LastFundingRateShort = intOf[int64](e, "fundingRateShort", string(r.FundingRateShort))
	if e.err == nil {
		// The open interest is derived, never stored: it must be what the sides add up to.
		long, short := big128(amm.BaseAssetAmountLong), big128(amm.BaseAssetAmountShort)
		oi := new(big.Int).Add(long.Abs(long), short.Abs(short))
		if string(r.OpenInterest) != oi.String() {
			e.fail("openInterest", fmt.Errorf("%w: %s is not |long| + |short| = %s", ErrNotRepresentable, r.OpenInterest, oi))
		}
	}
	if e.err != nil {
		return nil, wrap("PerpMarket", e.err)
	}
	return a, nil
}

// reserves are the base and quote reserves whose price (peg at PEG_PRECISION) is price.
func (e *enc) reserves(name, price string) (base, quote borsh.Uint128) {
	p := uintOf[uint64](e, name, price)
	q := new(big.Int).Mul(new(big.Int).SetUint64(p), big.NewInt(pricePrecision))
	return borsh.U128(syntheticBaseReserve), borsh.Uint128{Lo: q.Uint64(), Hi: new(big.Int).Rsh(q, 64).Uint64()}
}

// name is a symbol as a 32-byte account name, padded with spaces.
func (e *enc) name(field, s string) [32]byte {
	var b [32]byte
	if len(s) > len(b) {
		e.fail(field, fmt.Errorf("%d bytes, more than %d", len(s), len(b)))
		return b
	}
	for i := copy(b[:], s); i < len(b); i++ {
		b[i] = ' '
	}
	return b
}

// SpotMarketAccount is a SpotMarket account whose SpotMarketState is r (ts and slot aside).
// Synthetic: the cumulative interests are 10^(19-decimals), so that a scaled balance is the token
// amount itself and the balances need no rounding; the rate curve is a line to the optimal
// utilization placed at 100% (optimalUtilization 1e6, min rate 0) with the optimal borrow rate
// chosen so that the truncating SDK math gives the record's borrow rate at the record's
// utilization, and the insurance fund's total factor chosen so that the deposit rate comes out as
// the record's. The market is active, its pubkey its PDA, its name the padded symbol. A record
// with borrows above deposits, or rates the line cannot give, is ErrNotRepresentable.
func SpotMarketAccount(r *events.MarketState) (*drift.SpotMarket, error) {
	if r.MarketType != events.MarketTypeSpot {
		return nil, fmt.Errorf("records: SpotMarket from a %s market state", r.MarketType)
	}
	e := &enc{}
	if r.Decimals == nil || *r.Decimals < 0 || *r.Decimals > events.MaxDecimals {
		e.fail("decimals", fmt.Errorf("%w: decimals %v", ErrNotRepresentable, r.Decimals))
	}
	a := &drift.SpotMarket{
		Pubkey:      drift.SpotMarketAddress(small[uint16](e, "marketIndex", r.MarketIndex)),
		Name:        e.name("symbol", r.Symbol),
		MarketIndex: small[uint16](e, "marketIndex", r.MarketIndex),
		Status:      drift.MarketStatusActive,
	}
	a.HistoricalOracleData.LastOraclePrice = intOf[int64](e, "oraclePrice", string(r.OraclePrice))
	deposits := e.u128("depositBalance", string(r.DepositBalance))
	borrows := e.u128("borrowBalance", string(r.BorrowBalance))
	borrowRate := uintOf[uint64](e, "borrowRate", string(r.BorrowRate))
	depositRate := uintOf[uint64](e, "depositRate", string(r.DepositRate))
	if e.err != nil {
		return nil, wrap("SpotMarket", e.err)
	}
	decimals := *r.Decimals
	a.Decimals = uint32(decimals)
	interest := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(balanceInterestExp-decimals)), nil)
	a.CumulativeDepositInterest = u128Of(interest)
	a.CumulativeBorrowInterest = a.CumulativeDepositInterest
	a.DepositBalance, a.BorrowBalance = deposits, borrows
	a.OptimalUtilization = utilizationPrecision

	util := utilization(bigU128(deposits), bigU128(borrows))
	rate, factor, err := spotRates(util, borrowRate, depositRate)
	if err != nil {
		return nil, fmt.Errorf("records: SpotMarket %s: %w", r.Symbol, err)
	}
	a.OptimalBorrowRate, a.InsuranceFund.TotalFactor = rate, factor
	return a, nil
}

// spotRates solves the synthetic curve for the record's rates at utilization u (1e6): the
// optimal borrow rate R with floor(u*R/1e6) = borrow, and the total factor F with
// floor(borrow*(1e6-F)*u/1e12) = deposit. Each step of R or F moves the result by less than one
// when u and borrow*u are below their precisions, so the least R and F that reach the targets hit
// them exactly.
func spotRates(u *big.Int, borrow, deposit uint64) (rate, factor uint32, err error) {
	bad := func(why string) (uint32, uint32, error) {
		return 0, 0, fmt.Errorf("%w: borrow rate %d, deposit rate %d at utilization %s: %s",
			ErrNotRepresentable, borrow, deposit, u, why)
	}
	if u.Cmp(big.NewInt(utilizationPrecision)) > 0 {
		return bad("borrows above deposits")
	}
	if u.Sign() == 0 || borrow == 0 {
		if borrow != 0 || deposit != 0 {
			return bad("no utilization, no rate")
		}
		return 0, 0, nil
	}
	b := new(big.Int).SetUint64(borrow)
	// R = ceil(borrow * 1e6 / u)
	r := new(big.Int).Mul(b, big.NewInt(utilizationPrecision))
	r.Add(r, new(big.Int).Sub(u, big.NewInt(1))).Quo(r, u)
	if !r.IsUint64() || r.Uint64() > 1<<32-1 {
		return bad("optimal borrow rate beyond u32")
	}
	// k = 1e6 - F = ceil(deposit * 1e12 / (borrow * u))
	bu := new(big.Int).Mul(b, u)
	k := new(big.Int).Mul(new(big.Int).SetUint64(deposit), big.NewInt(percentagePrecision*utilizationPrecision))
	k.Add(k, new(big.Int).Sub(bu, big.NewInt(1))).Quo(k, bu)
	if k.Cmp(big.NewInt(percentagePrecision)) > 0 {
		return bad("deposit rate above what the borrow rate pays")
	}
	got := new(big.Int).Mul(bu, k)
	got.Quo(got, big.NewInt(percentagePrecision*utilizationPrecision))
	if got.Uint64() != deposit || new(big.Int).Quo(new(big.Int).Mul(u, r), big.NewInt(utilizationPrecision)).Uint64() != borrow {
		return bad("the rates fall between two steps of the curve")
	}
	return uint32(r.Uint64()), uint32(percentagePrecision - k.Int64()), nil
}

func u128Of(v *big.Int) borsh.Uint128 {
	return borsh.Uint128{Lo: v.Uint64(), Hi: new(big.Int).Rsh(v, 64).Uint64()}
}
