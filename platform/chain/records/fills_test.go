package records_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

const (
	keyA = "5iqawn52cdBmsjC4hDegyFnX1iNRTNDV5mRsGzgqbuyD"
	keyB = "GgZkrSFgTAXZn1rNtZ533wpZi6nxx8whJC9bxRESB22c"
	keyC = "7q6FkeUEvTDS6DaM2WTHw6s1gTzbBasGTPATLzMZW41S"
)

func testCatalogue(tb testing.TB) *records.Catalogue {
	tb.Helper()
	c, err := records.CatalogueOf(
		events.Market{Index: 0, Symbol: "SOL-PERP", Type: events.MarketTypePerp},
		events.Market{Index: 3, Symbol: "TRUMP-WIN-2028-BET", Type: events.MarketTypePerp},
		events.Market{Index: 0, Symbol: "USDC", Type: events.MarketTypeSpot},
		events.Market{Index: 1, Symbol: "SOL", Type: events.MarketTypeSpot},
	)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

var testCtx = records.Context{TxSig: sampleSig, TxSigIndex: 3, Slot: 350_000_000}

// matchFill is a perp fill between two accounts at a 2025 time.
func matchFill() *drift.OrderActionRecord {
	return &drift.OrderActionRecord{
		TS: 1751442612, Action: drift.OrderActionFill, ActionExplanation: drift.OrderActionExplanationOrderFilledWithMatch,
		MarketIndex: 0, MarketType: drift.MarketTypePerp, Filler: borsh.Some(solana.MustPublicKey(keyC)),
		FillerReward: borsh.Some[uint64](10), FillRecordID: borsh.Some[uint64](42),
		BaseAssetAmountFilled: borsh.Some[uint64](1_000_000_000), QuoteAssetAmountFilled: borsh.Some[uint64](150_000_000),
		TakerFee: borsh.Some[uint64](52_500), MakerFee: borsh.Some[int64](-3_000),
		Taker: borsh.Some(solana.MustPublicKey(keyA)), TakerOrderID: borsh.Some[uint32](7),
		TakerOrderDirection:                        borsh.Some(drift.PositionDirectionLong),
		TakerOrderBaseAssetAmount:                  borsh.Some[uint64](1_000_000_000),
		TakerOrderCumulativeBaseAssetAmountFilled:  borsh.Some[uint64](1_000_000_000),
		TakerOrderCumulativeQuoteAssetAmountFilled: borsh.Some[uint64](150_000_000),
		Maker: borsh.Some(solana.MustPublicKey(keyB)), MakerOrderID: borsh.Some[uint32](9),
		MakerOrderDirection:                        borsh.Some(drift.PositionDirectionShort),
		MakerOrderBaseAssetAmount:                  borsh.Some[uint64](2_000_000_000),
		MakerOrderCumulativeBaseAssetAmountFilled:  borsh.Some[uint64](1_000_000_000),
		MakerOrderCumulativeQuoteAssetAmountFilled: borsh.Some[uint64](150_000_000),
		OraclePrice: 150_100_000,
	}
}

// TestFillMarkets: a fill's market type, symbol and filter come from the event's market and the
// catalogue; a market the catalogue lacks is an error naming it.
func TestFillMarkets(t *testing.T) {
	m := records.New(testCatalogue(t))
	tests := []struct {
		name                string
		typ                 drift.MarketType
		index               uint16
		wantType            events.MarketType
		wantSymbol, wantErr string
		wantFilter          string
	}{
		{"perp", drift.MarketTypePerp, 0, events.MarketTypePerp, "SOL-PERP", "", events.FilterPerp},
		{"spot", drift.MarketTypeSpot, 1, events.MarketTypeSpot, "SOL", "", events.FilterSpot},
		{"spot index 0 is not perp 0", drift.MarketTypeSpot, 0, events.MarketTypeSpot, "USDC", "", events.FilterSpot},
		{"prediction", drift.MarketTypePerp, 3, events.MarketTypePerp, "TRUMP-WIN-2028-BET", "", events.FilterPrediction},
		{"missing perp", drift.MarketTypePerp, 1, "", "", "perp market 1 is not in the catalogue", ""},
		{"missing spot", drift.MarketTypeSpot, 3, "", "", "spot market 3 is not in the catalogue", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := matchFill()
			ev.MarketType, ev.MarketIndex = tt.typ, tt.index
			got, ok, err := m.Map(ev, testCtx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "OrderActionRecord") {
					t.Fatalf("error %v, want one naming the event and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !ok || got.Topic != events.TopicFills {
				t.Fatalf("Map: %v %v %v", got.Topic, ok, err)
			}
			f := got.Record.(*events.Fill)
			if f.MarketType != tt.wantType || f.Symbol != tt.wantSymbol || f.MarketFilter != tt.wantFilter || f.MarketIndex != int(tt.index) {
				t.Errorf("market %s %d %q %q, want %s %q %q", f.MarketType, f.MarketIndex, f.Symbol, f.MarketFilter,
					tt.wantType, tt.wantSymbol, tt.wantFilter)
			}
			if err := f.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFillSides: which side an action names decides user, and a fill's missing side reads "0".
func TestFillSides(t *testing.T) {
	m := records.New(testCatalogue(t))
	tests := []struct {
		name      string
		edit      func(*drift.OrderActionRecord)
		topic     string
		user      string
		makerFee  events.Amount
		makerBase events.Amount
	}{
		{"match fill names two accounts", func(*drift.OrderActionRecord) {}, events.TopicFills, "", "-3000", "2000000000"},
		{"amm fill has no maker", func(ev *drift.OrderActionRecord) {
			ev.ActionExplanation = drift.OrderActionExplanationOrderFilledWithAMM
			ev.Maker, ev.MakerOrderID, ev.MakerOrderDirection = borsh.Option[solana.PublicKey]{}, borsh.Option[uint32]{}, borsh.Option[drift.PositionDirection]{}
			ev.MakerFee, ev.MakerOrderBaseAssetAmount = borsh.Option[int64]{}, borsh.Option[uint64]{}
			ev.MakerOrderCumulativeBaseAssetAmountFilled, ev.MakerOrderCumulativeQuoteAssetAmountFilled = borsh.Option[uint64]{}, borsh.Option[uint64]{}
		}, events.TopicFills, "", "0", "0"},
		{"taker place", func(ev *drift.OrderActionRecord) {
			*ev = drift.OrderActionRecord{TS: ev.TS, Action: drift.OrderActionPlace, MarketType: drift.MarketTypePerp,
				Taker: ev.Taker, TakerOrderID: ev.TakerOrderID, TakerOrderDirection: ev.TakerOrderDirection,
				TakerOrderBaseAssetAmount: ev.TakerOrderBaseAssetAmount, OraclePrice: ev.OraclePrice}
		}, events.TopicOrderActions, keyA, "", ""},
		{"maker cancel", func(ev *drift.OrderActionRecord) {
			*ev = drift.OrderActionRecord{TS: ev.TS, Action: drift.OrderActionCancel, MarketType: drift.MarketTypePerp,
				Maker: ev.Maker, MakerOrderID: ev.MakerOrderID, MakerOrderDirection: ev.MakerOrderDirection,
				MakerOrderBaseAssetAmount: ev.MakerOrderBaseAssetAmount, OraclePrice: ev.OraclePrice}
		}, events.TopicOrderActions, keyB, "", "2000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := matchFill()
			tt.edit(ev)
			got, _, err := m.Map(ev, testCtx)
			if err != nil {
				t.Fatal(err)
			}
			f := got.Record.(*events.Fill)
			if got.Topic != tt.topic || f.User != tt.user || f.MakerFee != tt.makerFee || f.MakerRebate != tt.makerFee ||
				f.MakerOrderBaseAssetAmount != tt.makerBase {
				t.Errorf("topic %s user %q makerFee %q makerRebate %q makerOrderBase %q, want %s %q %q %q %q",
					got.Topic, f.User, f.MakerFee, f.MakerRebate, f.MakerOrderBaseAssetAmount,
					tt.topic, tt.user, tt.makerFee, tt.makerFee, tt.makerBase)
			}
			if err := f.Validate(); err != nil {
				t.Error(err)
			}
			// Back to the event: a fill's missing side stays None, not Some(0).
			back, err := records.OrderActionEvent(f)
			if err != nil {
				t.Fatal(err)
			}
			if back.Maker.Some != ev.Maker.Some || back.MakerFee != ev.MakerFee || back.MakerOrderBaseAssetAmount != ev.MakerOrderBaseAssetAmount {
				t.Errorf("maker side back as %+v %+v %+v, want %+v %+v %+v", back.Maker, back.MakerFee, back.MakerOrderBaseAssetAmount,
					ev.Maker, ev.MakerFee, ev.MakerOrderBaseAssetAmount)
			}
		})
	}
}

// TestUnknownVariant: a variant the records have no name for (a newer program's) is refused.
func TestUnknownVariant(t *testing.T) {
	m := records.New(testCatalogue(t))
	ev := matchFill()
	ev.ActionExplanation = 99
	if _, _, err := m.Map(ev, testCtx); err == nil || !strings.Contains(err.Error(), "OrderActionExplanation(99)") {
		t.Errorf("error %v, want one naming the variant", err)
	}
}

// TestCatalogue: markets by type and index, conflicting names refused.
func TestCatalogue(t *testing.T) {
	c := testCatalogue(t)
	if got := c.Markets(); len(got) != 4 || got[0].Symbol != "SOL-PERP" || got[3].Symbol != "SOL" {
		t.Errorf("Markets() = %v", got)
	}
	_, err := records.CatalogueOf(
		events.Market{Index: 1, Symbol: "BTC-PERP", Type: events.MarketTypePerp},
		events.Market{Index: 1, Symbol: "ETH-PERP", Type: events.MarketTypePerp},
	)
	if err == nil || !strings.Contains(err.Error(), `perp market 1 is named both "BTC-PERP" and "ETH-PERP"`) {
		t.Errorf("conflict: %v", err)
	}
	perps, spots := mustSampleMarkets(t)
	sc, err := records.NewCatalogue(perps, spots)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []events.Market{
		{Index: 24, Symbol: "JUP-PERP", Type: events.MarketTypePerp},
		{Index: 37, Symbol: "KAMALA-POPULAR-VOTE-2024-BET", Type: events.MarketTypePerp},
		{Index: 40, Symbol: "JitoSOL-3", Type: events.MarketTypeSpot},
	} {
		if got, err := sc.Market(want.Type, want.Index); err != nil || got != want {
			t.Errorf("%s %d: %v, %v, want %v", want.Type, want.Index, got, err, want)
		}
	}
}
