package records_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
)

// A sample instant: the records' validation wants a plausible ts, and a market state's slot is the
// account's, which the dumps do not carry.
const (
	stateTs   int64 = 1_750_000_000
	stateSlot int64 = 345_000_000
)

// TestPerpMarketState pins the arithmetic on hand-made accounts, without node.
func TestPerpMarketState(t *testing.T) {
	cat, err := records.CatalogueOf(events.Market{Index: 0, Symbol: "SOL-PERP", Type: events.MarketTypePerp})
	if err != nil {
		t.Fatal(err)
	}
	m := records.New(cat)
	const tok = 1_000_000_000 // AMM_RESERVE_PRECISION, BASE_PRECISION
	tests := []struct {
		name            string
		amm             drift.AMM
		mark, bid, ask  events.Amount
		long, short, oi events.Amount
	}{
		{
			name: "balanced pool at peg 150",
			amm: drift.AMM{
				BaseAssetReserve: borsh.U128(100 * tok), QuoteAssetReserve: borsh.U128(100 * tok),
				BidBaseAssetReserve: borsh.U128(101 * tok), BidQuoteAssetReserve: borsh.U128(99 * tok),
				AskBaseAssetReserve: borsh.U128(99 * tok), AskQuoteAssetReserve: borsh.U128(101 * tok),
				PegMultiplier:       borsh.U128(150_000_000),
				BaseAssetAmountLong: borsh.I128(3 * tok), BaseAssetAmountShort: borsh.I128(-2 * tok),
			},
			// 150 * 99/101 and 150 * 101/99, truncated at the last division as the SDK does.
			mark: "150000000", bid: "147029702", ask: "153030303",
			long: "3000000000", short: "-2000000000", oi: "5000000000",
		},
		{
			name: "empty reserves price at zero",
			amm: drift.AMM{
				QuoteAssetReserve: borsh.U128(tok), PegMultiplier: borsh.U128(1_000_000),
			},
			mark: "0", bid: "0", ask: "0", long: "0", short: "0", oi: "0",
		},
		{
			name: "positions beyond 64 bits",
			amm: drift.AMM{
				BaseAssetReserve: borsh.U128(tok), QuoteAssetReserve: borsh.Uint128{Hi: 1},
				BidBaseAssetReserve: borsh.U128(tok), BidQuoteAssetReserve: borsh.U128(tok),
				AskBaseAssetReserve: borsh.U128(tok), AskQuoteAssetReserve: borsh.U128(tok),
				PegMultiplier:       borsh.U128(1_000_000),
				BaseAssetAmountLong: borsh.Int128{Hi: 1}, BaseAssetAmountShort: borsh.Int128{Hi: 1}.Neg(),
			},
			// 2^64 * 1e6 / 1e9 and twice 2^64.
			mark: "18446744073709551", bid: "1000000", ask: "1000000",
			long: "18446744073709551616", short: "-18446744073709551616", oi: "36893488147419103232",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &drift.PerpMarket{Amm: tt.amm}
			a.Amm.HistoricalOracleData.LastOraclePrice = 150_120_000
			a.Amm.LongSpread, a.Amm.ShortSpread = 250, 300
			a.Amm.LastFundingRateLong, a.Amm.LastFundingRateShort = 1_234, -987
			st, err := m.PerpMarketState(a, stateTs, stateSlot)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.ValidateAt(time.Unix(stateTs, 0)); err != nil {
				t.Fatal(err)
			}
			want := &events.MarketState{
				Ts: stateTs, Slot: stateSlot, MarketType: events.MarketTypePerp, Symbol: "SOL-PERP",
				OraclePrice: "150120000", MarkPrice: tt.mark, BidPrice: tt.bid, AskPrice: tt.ask,
				LongSpread: "250", ShortSpread: "300", BaseAssetAmountWithAmm: "0",
				BaseAssetAmountLong: tt.long, BaseAssetAmountShort: tt.short, OpenInterest: tt.oi,
				FundingRateLong: "1234", FundingRateShort: "-987",
			}
			if !reflect.DeepEqual(st, want) {
				t.Errorf("got  %s\nwant %s", mustJSON(t, st), mustJSON(t, want))
			}
		})
	}
}

// TestSampleMarketStates: every real PerpMarket dump becomes a valid state that survives the
// topic's JSON, and the AMM quotes its bid at or below its ask.
func TestSampleMarketStates(t *testing.T) {
	perps, _ := mustSampleMarkets(t)
	m := records.New(mustSampleCatalogue(t))
	for i := range perps {
		st, err := m.PerpMarketState(&perps[i], stateTs, stateSlot)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.ValidateAt(time.Unix(stateTs, 0)); err != nil {
			t.Errorf("%s: %v", st.Symbol, err)
		}
		var back events.MarketState
		if err := json.Unmarshal([]byte(mustJSON(t, st)), &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, st) {
			t.Errorf("%s: JSON round trip gave %+v, want %+v", st.Symbol, back, *st)
		}
		bid, err1 := st.BidPrice.Int64()
		ask, err2 := st.AskPrice.Int64()
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", st.Symbol, err1, err2)
		}
		if bid > ask {
			t.Errorf("%s: bid %d above ask %d", st.Symbol, bid, ask)
		}
	}
}

// TestMarketStateRefusals: an account whose market the catalogue lacks is refused with an error
// naming the market, since its record would have no symbol; so is a spot market whose token
// amounts cannot be scaled or whose rate curve the SDK cannot price.
func TestMarketStateRefusals(t *testing.T) {
	m := records.New(mustSampleCatalogue(t))
	perp := func(index uint16) func() error {
		return func() error {
			_, err := m.PerpMarketState(&drift.PerpMarket{MarketIndex: index}, stateTs, stateSlot)
			return err
		}
	}
	spot := func(a drift.SpotMarket) func() error {
		return func() error {
			_, err := m.SpotMarketState(&a, stateTs, stateSlot)
			return err
		}
	}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"unknown perp market", perp(999), "perp market 999 is not in the catalogue"},
		{"last perp index", perp(65535), "perp market 65535 is not in the catalogue"},
		{"unknown spot market", spot(drift.SpotMarket{MarketIndex: 999}), "spot market 999 is not in the catalogue"},
		{"decimals beyond int64", spot(drift.SpotMarket{Decimals: 19, OptimalUtilization: 800_000}), "USDC: decimals 19 beyond 18"},
		{"zero optimal utilization", spot(drift.SpotMarket{Decimals: 6}), "USDC: optimal utilization is zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestSpotMarketState pins the lending arithmetic on hand-made accounts, without node.
func TestSpotMarketState(t *testing.T) {
	cat, err := records.CatalogueOf(events.Market{Index: 1, Symbol: "SOL", Type: events.MarketTypeSpot})
	if err != nil {
		t.Fatal(err)
	}
	m := records.New(cat)
	const (
		bal = 1_000_000_000  // SPOT_BALANCE_PRECISION
		cum = 10_000_000_000 // SPOT_CUMULATIVE_INTEREST_PRECISION
		tok = 1_000_000_000  // SOL's 9 decimals
		pct = 1_000_000      // PERCENTAGE_PRECISION
	)
	tests := []struct {
		name                        string
		deposits, borrows           uint64 // scaled balances
		borrowInterest              uint64
		depositRate, borrowRate     events.Amount
		depositAmount, borrowAmount events.Amount
	}{
		{
			// Half used, under the optimal 80%: the borrow rate is 50/80 of the optimal 10%, and
			// depositors get it on half the pool less the insurance fund's 10%.
			name: "below optimal", deposits: 100 * bal, borrows: 50 * bal, borrowInterest: cum,
			depositAmount: "100000000000", borrowAmount: "50000000000", borrowRate: "62500", depositRate: "28125",
		},
		{
			// A borrow interest that does not divide rounds the borrowed amount up.
			name: "borrows round up", deposits: 100 * bal, borrows: 1, borrowInterest: cum + 1,
			depositAmount: "100000000000", borrowAmount: "2", borrowRate: "5000", depositRate: "0",
		},
		{
			// 90% used: the optimal 10% plus the first two segments' 5% and 10% of the extra 100%;
			// depositors get it on 90% of the pool less the insurance fund's 10%.
			name: "above optimal", deposits: 100 * bal, borrows: 90 * bal, borrowInterest: cum,
			depositAmount: "100000000000", borrowAmount: "90000000000", borrowRate: "250000", depositRate: "202500",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &drift.SpotMarket{
				MarketIndex: 1, Decimals: 9,
				DepositBalance: borsh.U128(tt.deposits), BorrowBalance: borsh.U128(tt.borrows),
				CumulativeDepositInterest: borsh.U128(cum), CumulativeBorrowInterest: borsh.U128(tt.borrowInterest),
				OptimalUtilization: 800_000, OptimalBorrowRate: 100_000, MaxBorrowRate: 1_100_000,
				MinBorrowRate: 1, // half a percent
			}
			a.InsuranceFund.TotalFactor = pct / 10
			a.HistoricalOracleData.LastOraclePrice = 150 * pct
			st, err := m.SpotMarketState(a, stateTs, stateSlot)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.ValidateAt(time.Unix(stateTs, 0)); err != nil {
				t.Fatal(err)
			}
			nine := 9
			want := &events.MarketState{
				Ts: stateTs, Slot: stateSlot, MarketIndex: 1, MarketType: events.MarketTypeSpot, Symbol: "SOL",
				OraclePrice: "150000000", Decimals: &nine,
				DepositBalance: tt.depositAmount, BorrowBalance: tt.borrowAmount,
				DepositRate: tt.depositRate, BorrowRate: tt.borrowRate,
			}
			if !reflect.DeepEqual(st, want) {
				t.Errorf("got  %s\nwant %s", mustJSON(t, st), mustJSON(t, want))
			}
		})
	}
}
