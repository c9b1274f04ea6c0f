package records

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// Precisions of the SDK's spot lending math (constants/numericConstants, math/spotBalance).
const (
	utilizationPrecision = 1_000_000 // SPOT_MARKET_UTILIZATION_PRECISION
	percentagePrecision  = 1_000_000 // PERCENTAGE_PRECISION, also the rates' SPOT_RATE_PRECISION
	// A balance (1e9) times a cumulative interest (1e10) is 10^19 times a token amount.
	balanceInterestExp = 19
)

// rateSegments are calculateInterestRate's utilization breakpoints above the optimal one, each
// with its weight in thousandths of the rate between optimal and max.
var rateSegments = [...]struct{ end, weight int64 }{
	{850_000, 50}, {900_000, 100}, {950_000, 150}, {990_000, 200}, {995_000, 250}, {utilizationPrecision, 250},
}

// SpotMarketState is a spot market's lending state as its account holds it, sampled at ts and
// slot, for protocol.market-states, with the SDK's math (math/spotBalance): the balances are
// getTokenAmount of the scaled deposit and borrow balances (the borrow rounded up, as the SDK
// and the program do), the rates calculateDepositRate and calculateBorrowRate at the current
// utilization, yearly in PERCENTAGE_PRECISION. The oracle price is the last one the program took.
func (m *Mapper) SpotMarketState(a *drift.SpotMarket, ts, slot int64) (*events.MarketState, error) {
	market, err := m.cat.Market(events.MarketTypeSpot, int(a.MarketIndex))
	if err != nil {
		return nil, wrap("SpotMarket", err)
	}
	if a.Decimals > events.MaxDecimals {
		return nil, fmt.Errorf("records: SpotMarket %s: decimals %d beyond %d", market.Symbol, a.Decimals, events.MaxDecimals)
	}
	decimals := int(a.Decimals)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(balanceInterestExp-decimals)), nil)
	deposits := new(big.Int).Mul(bigU128(a.DepositBalance), bigU128(a.CumulativeDepositInterest))
	deposits.Quo(deposits, scale)
	borrows := new(big.Int).Mul(bigU128(a.BorrowBalance), bigU128(a.CumulativeBorrowInterest))
	if q, r := new(big.Int).QuoRem(borrows, scale, new(big.Int)); r.Sign() > 0 {
		borrows = q.Add(q, big.NewInt(1))
	} else {
		borrows = q
	}
	util := utilization(deposits, borrows)
	borrowRate, err := borrowRate(a, util)
	if err != nil {
		return nil, fmt.Errorf("records: SpotMarket %s: %w", market.Symbol, err)
	}
	depositRate := new(big.Int).Mul(borrowRate, big.NewInt(percentagePrecision-int64(a.InsuranceFund.TotalFactor)))
	depositRate.Mul(depositRate, util).Quo(depositRate, big.NewInt(utilizationPrecision)).Quo(depositRate, big.NewInt(percentagePrecision))
	return &events.MarketState{
		Ts:             ts,
		Slot:           slot,
		MarketIndex:    market.Index,
		MarketType:     events.MarketTypeSpot,
		Symbol:         market.Symbol,
		OraclePrice:    samt(a.HistoricalOracleData.LastOraclePrice),
		Decimals:       &decimals,
		DepositBalance: bigAmt(deposits),
		BorrowBalance:  bigAmt(borrows),
		DepositRate:    bigAmt(depositRate),
		BorrowRate:     bigAmt(borrowRate),
	}, nil
}

// utilization is the SDK's calculateUtilization: borrows over deposits, full when there are
// borrows and no deposits.
func utilization(deposits, borrows *big.Int) *big.Int {
	switch {
	case deposits.Sign() == 0 && borrows.Sign() == 0:
		return new(big.Int)
	case deposits.Sign() == 0:
		return big.NewInt(utilizationPrecision)
	}
	u := new(big.Int).Mul(borrows, big.NewInt(utilizationPrecision))
	return u.Quo(u, deposits)
}

// borrowRate is the SDK's calculateInterestRate, quirks kept: a segment that ends below the
// optimal utilization still adds its whole share once utilization is past optimal, and beyond
// full utilization every segment adds its share. Divisions truncate toward zero, as bn.js does.
func borrowRate(a *drift.SpotMarket, util *big.Int) (*big.Int, error) {
	optimalUtil := big.NewInt(int64(a.OptimalUtilization))
	optimalRate := big.NewInt(int64(a.OptimalBorrowRate))
	minRate := big.NewInt(int64(a.MinBorrowRate) * (percentagePrecision / 200))
	var rate *big.Int
	if util.Cmp(optimalUtil) <= 0 {
		if optimalUtil.Sign() == 0 {
			// The SDK throws here (bn.js division by zero): no rate to copy.
			return nil, errors.New("optimal utilization is zero")
		}
		slope := new(big.Int).Mul(optimalRate, big.NewInt(utilizationPrecision))
		slope.Quo(slope, optimalUtil)
		rate = new(big.Int).Mul(util, slope)
		rate.Quo(rate, big.NewInt(utilizationPrecision))
	} else {
		extra := big.NewInt(int64(a.MaxBorrowRate) - int64(a.OptimalBorrowRate))
		rate = new(big.Int).Set(optimalRate)
		prev := new(big.Int).Set(optimalUtil)
		for _, s := range rateSegments {
			end := big.NewInt(s.end)
			share := new(big.Int).Mul(extra, big.NewInt(s.weight))
			share.Quo(share, big.NewInt(1000))
			if util.Cmp(end) <= 0 {
				part := new(big.Int).Sub(util, prev)
				part.Mul(share, part).Quo(part, new(big.Int).Sub(end, prev))
				rate.Add(rate, part)
				break
			}
			rate.Add(rate, share)
			prev = end
		}
	}
	if rate.Cmp(minRate) < 0 {
		return minRate, nil
	}
	return rate, nil
}
