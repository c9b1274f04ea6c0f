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
// naming the market, since its record would have no symbol.
func TestMarketStateRefusals(t *testing.T) {
	m := records.New(mustSampleCatalogue(t))
	tests := []struct {
		name  string
		index uint16
		want  string
	}{
		{"unknown perp market", 999, "perp market 999 is not in the catalogue"},
		{"last index", 65535, "perp market 65535 is not in the catalogue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.PerpMarketState(&drift.PerpMarket{MarketIndex: tt.index}, stateTs, stateSlot)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
