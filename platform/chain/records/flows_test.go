package records_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// TestLiquidationKinds: each of the six kinds maps to a valid record whose own sub-record holds
// the event's values and whose other sub-records are zeros, and maps back to the same event.
func TestLiquidationKinds(t *testing.T) {
	base := func(typ drift.LiquidationType) *drift.LiquidationRecord {
		return &drift.LiquidationRecord{
			TS: 1751442612, LiquidationType: typ, User: solana.MustPublicKey(keyA), Liquidator: solana.MustPublicKey(keyB),
			MarginRequirement: borsh.U128(50_000_000), TotalCollateral: borsh.I128(-1_000_000), MarginFreed: 20_000_000,
			LiquidationID: 7, CanceledOrderIds: []uint32{}, BitFlags: 0,
		}
	}
	clawback := keyC
	tests := []struct {
		name  string
		ev    func() *drift.LiquidationRecord
		check func(*events.Liquidation) bool
	}{
		{"liquidatePerp", func() *drift.LiquidationRecord {
			ev := base(drift.LiquidationTypeLiquidatePerp)
			ev.CanceledOrderIds, ev.BitFlags = []uint32{11, 12}, 1
			ev.LiquidatePerp = drift.LiquidatePerpRecord{MarketIndex: 2, OraclePrice: 3_000_000_000, BaseAssetAmount: -1_500_000_000,
				QuoteAssetAmount: 4_500_000_000, FillRecordID: 99, LiquidatorFee: 45_000_000, IfFee: 22_500_000}
			return ev
		}, func(r *events.Liquidation) bool {
			return r.LiquidationType == "liquidatePerp" && *r.LiquidatePerpMarketIndex == 2 && r.LiquidatePerpBaseAssetAmount == "-1500000000" &&
				r.LiquidatePerpFillRecordID == "99" && r.BitFlags == 1 && reflect.DeepEqual(r.CanceledOrderIDs, []string{"11", "12"}) &&
				*r.SpotBankruptcyMarketIndex == 0 && r.SpotBankruptcyBorrowAmount == "0" && r.TotalCollateral == "-1000000"
		}},
		{"liquidateSpot", func() *drift.LiquidationRecord {
			ev := base(drift.LiquidationTypeLiquidateSpot)
			ev.LiquidateSpot = drift.LiquidateSpotRecord{AssetMarketIndex: 1, AssetPrice: 150_000_000, AssetTransfer: borsh.U128(2_000_000_000),
				LiabilityMarketIndex: 0, LiabilityPrice: 1_000_000, LiabilityTransfer: borsh.U128(297_000_000), IfFee: 600_000}
			return ev
		}, func(r *events.Liquidation) bool {
			return r.LiquidationType == "liquidateSpot" && *r.LiquidateSpotAssetMarketIndex == 1 && r.LiquidateSpotAssetTransfer == "2000000000" &&
				r.LiquidateSpotLiabilityTransfer == "297000000" && r.LiquidateSpotIfFee == "600000" && *r.LiquidatePerpMarketIndex == 0
		}},
		{"liquidateBorrowForPerpPnl", func() *drift.LiquidationRecord {
			ev := base(drift.LiquidationTypeLiquidateBorrowForPerpPnl)
			ev.LiquidateBorrowForPerpPnl = drift.LiquidateBorrowForPerpPnlRecord{PerpMarketIndex: 0, MarketOraclePrice: 150_000_000,
				PnlTransfer: borsh.U128(10_000_000), LiabilityMarketIndex: 1, LiabilityPrice: 150_000_000, LiabilityTransfer: borsh.U128(66_666_666)}
			return ev
		}, func(r *events.Liquidation) bool {
			return r.LiquidationType == "liquidateBorrowForPerpPnl" && *r.LiquidateBorrowForPerpPnlLiabilityMarketIndex == 1 &&
				r.LiquidateBorrowForPerpPnlPnlTransfer == "10000000" && r.LiquidateBorrowForPerpPnlLiabilityTransfer == "66666666"
		}},
		{"liquidatePerpPnlForDeposit", func() *drift.LiquidationRecord {
			ev := base(drift.LiquidationTypeLiquidatePerpPnlForDeposit)
			ev.LiquidatePerpPnlForDeposit = drift.LiquidatePerpPnlForDepositRecord{PerpMarketIndex: 1, MarketOraclePrice: 60_000_000_000,
				PnlTransfer: borsh.U128(8_000_000), AssetMarketIndex: 0, AssetPrice: 1_000_000, AssetTransfer: borsh.U128(8_000_000)}
			return ev
		}, func(r *events.Liquidation) bool {
			return r.LiquidationType == "liquidatePerpPnlForDeposit" && *r.LiquidatePerpPnlForDepositPerpMarketIndex == 1 &&
				r.LiquidatePerpPnlForDepositMarketOraclePrice == "60000000000" && r.LiquidatePerpPnlForDepositAssetTransfer == "8000000"
		}},
		{"perpBankruptcy without clawback", func() *drift.LiquidationRecord {
			ev := base(drift.LiquidationTypePerpBankruptcy)
			ev.Bankrupt = true
			ev.PerpBankruptcy = drift.PerpBankruptcyRecord{MarketIndex: 0, Pnl: borsh.I128(-5_000_000), IfPayment: borsh.U128(5_000_000),
				CumulativeFundingRateDelta: borsh.I128(-12)}
			return ev
		}, func(r *events.Liquidation) bool {
			return r.LiquidationType == "perpBankruptcy" && r.Bankrupt && r.PerpBankruptcyPnl == "-5000000" && r.PerpBankruptcyClawbackUser == nil &&
				r.PerpBankruptcyClawbackUserPayment == "0" && r.PerpBankruptcyCumulativeFundingRateDelta == "-12"
		}},
		{"perpBankruptcy with clawback", func() *drift.LiquidationRecord {
			ev := base(drift.LiquidationTypePerpBankruptcy)
			ev.Bankrupt = true
			ev.PerpBankruptcy = drift.PerpBankruptcyRecord{MarketIndex: 2, Pnl: borsh.I128(-5_000_000),
				ClawbackUser: borsh.Some(solana.MustPublicKey(clawback)), ClawbackUserPayment: borsh.Some(borsh.U128(1_000_000))}
			return ev
		}, func(r *events.Liquidation) bool {
			return r.PerpBankruptcyClawbackUser != nil && *r.PerpBankruptcyClawbackUser == clawback && r.PerpBankruptcyClawbackUserPayment == "1000000"
		}},
		{"spotBankruptcy", func() *drift.LiquidationRecord {
			ev := base(drift.LiquidationTypeSpotBankruptcy)
			ev.Bankrupt = true
			ev.SpotBankruptcy = drift.SpotBankruptcyRecord{MarketIndex: 1, BorrowAmount: borsh.U128(3_000_000_000),
				IfPayment: borsh.U128(3_000_000_000), CumulativeDepositInterestDelta: borsh.U128(1_000)}
			return ev
		}, func(r *events.Liquidation) bool {
			return r.LiquidationType == "spotBankruptcy" && *r.SpotBankruptcyMarketIndex == 1 && r.SpotBankruptcyBorrowAmount == "3000000000" &&
				r.SpotBankruptcyCumulativeDepositInterestDelta == "1000"
		}},
	}
	m := records.New(testCatalogue(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev()
			got, ok, err := m.Map(ev, testCtx)
			if err != nil || !ok || got.Topic != events.TopicLiquidations {
				t.Fatalf("Map: %v %v %v", got.Topic, ok, err)
			}
			r := got.Record.(*events.Liquidation)
			if err := r.Validate(); err != nil {
				t.Error(err)
			}
			if !tt.check(r) || r.User != keyA || r.Liquidator != keyB || r.MarginRequirement != "50000000" || r.LiquidationID != 7 {
				t.Errorf("record %s", mustJSON(t, r))
			}
			back, err := records.LiquidationEvent(r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, ev) {
				t.Errorf("back %+v\nwant %+v", back, ev)
			}
		})
	}
}

// TestDeposits: rewards and deposits are the same record on one topic, told apart by explanation;
// the symbol is the spot market's, and a spot market the catalogue lacks is named.
func TestDeposits(t *testing.T) {
	m := records.New(testCatalogue(t))
	dep := func(dir drift.DepositDirection, expl drift.DepositExplanation, market uint16) *drift.DepositRecord {
		return &drift.DepositRecord{
			TS: 1751442612, UserAuthority: solana.MustPublicKey(keyA), User: solana.MustPublicKey(keyB), Direction: dir,
			DepositRecordID: 5, Amount: 2_500_000_000, MarketIndex: market, OraclePrice: 150_000_000,
			MarketDepositBalance: borsh.U128(9), MarketWithdrawBalance: borsh.U128(8), MarketCumulativeDepositInterest: borsh.U128(10_500_000_000),
			MarketCumulativeBorrowInterest: borsh.U128(11_000_000_000), TotalDepositsAfter: 400_000_000, TotalWithdrawsAfter: 0, Explanation: expl,
		}
	}
	tests := []struct {
		name                           string
		ev                             *drift.DepositRecord
		direction, explanation, symbol string
		wantErr                        string
	}{
		{"deposit", dep(drift.DepositDirectionDeposit, drift.DepositExplanationNone, 1), "deposit", "none", "SOL", ""},
		{"reward", dep(drift.DepositDirectionDeposit, drift.DepositExplanationReward, 0), "deposit", "reward", "USDC", ""},
		{"borrow", dep(drift.DepositDirectionWithdraw, drift.DepositExplanationBorrow, 1), "withdraw", "borrow", "SOL", ""},
		{"repay", dep(drift.DepositDirectionDeposit, drift.DepositExplanationRepayBorrow, 1), "deposit", "repayBorrow", "SOL", ""},
		{"transfer out", dep(drift.DepositDirectionWithdraw, drift.DepositExplanationTransfer, 0), "withdraw", "transfer", "USDC", ""},
		{"missing market", dep(drift.DepositDirectionDeposit, drift.DepositExplanationNone, 6), "", "", "", "DepositRecord: spot market 6 is not in the catalogue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := m.Map(tt.ev, testCtx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !ok || got.Topic != events.TopicDeposits {
				t.Fatalf("Map: %v %v %v", got.Topic, ok, err)
			}
			r := got.Record.(*events.Deposit)
			want := &events.Deposit{
				Tx: events.Tx{Ts: 1751442612, TxSig: sampleSig, TxSigIndex: 3, Slot: 350_000_000}, Amount: "2500000000", OraclePrice: "150000000",
				MarketDepositBalance: "9", MarketWithdrawBalance: "8", MarketCumulativeDepositInterest: "10500000000",
				MarketCumulativeBorrowInterest: "11000000000", TotalDepositsAfter: "400000000", TotalWithdrawsAfter: "0",
				DepositRecordID: "5", UserAuthority: keyA, User: keyB, Direction: tt.direction, Explanation: tt.explanation,
				MarketIndex: int(tt.ev.MarketIndex), Symbol: tt.symbol,
			}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("got  %s\nwant %s", mustJSON(t, r), mustJSON(t, want))
			}
			if err := r.Validate(); err != nil {
				t.Error(err)
			}
			if back, err := records.DepositEvent(r); err != nil || !reflect.DeepEqual(back, tt.ev) {
				t.Errorf("back %+v, %v\nwant %+v", back, err, tt.ev)
			}
		})
	}
}

// TestSampleFlows: the real SwapRecord and FundingRateRecord samples, with values read off their
// decoded JSON; the funding sample's market (perp 30) has no account among the samples, so without
// it in the catalogue the mapping names it.
func TestSampleFlows(t *testing.T) {
	_, evs := mustSampleEvents(t)
	m := records.New(mustSampleCatalogue(t, events.Market{Index: 30, Symbol: "DRIFT-PERP", Type: events.MarketTypePerp}))
	tests := []struct {
		sample int
		topic  string
		want   events.Record
	}{
		{16, events.TopicSwaps, &events.Swap{
			Tx: sampleTx(16, 1746413978), User: keyC, OutMarketIndex: 1, InMarketIndex: 0, AmountOut: "13814365",
			AmountIn: "2000000", OutOraclePrice: "144760000", InOraclePrice: "1000000", Fee: "0", InSymbol: "USDC", OutSymbol: "SOL",
		}},
		{18, events.TopicFundingRates, &events.FundingRate{
			Tx: sampleTx(18, 1756580515), MarketIndex: 30, RecordID: "11021", Symbol: "DRIFT-PERP", FundingRate: "94833",
			FundingRateLong: "94833", FundingRateShort: "94833", CumulativeFundingRateLong: "26745701",
			CumulativeFundingRateShort: "26742163", OraclePriceTwap: "620724", MarkPriceTwap: "622876", PeriodRevenue: "-487635367",
			BaseAssetAmountWithAmm: "58670000000000", BaseAssetAmountWithUnsettledLp: "0",
		}},
		{21, events.TopicSwaps, &events.Swap{
			Tx: sampleTx(21, 1760124859), User: "Barx6zkSuMaMTc8zQTN6NXn1XFa1EiEb4oV4u9S5wFBB", OutMarketIndex: 1, InMarketIndex: 0,
			AmountOut: "488642181991", AmountIn: "100000000000", OutOraclePrice: "204567561", InOraclePrice: "999889", Fee: "0",
			InSymbol: "USDC", OutSymbol: "SOL",
		}},
	}
	for _, tt := range tests {
		got, ok, err := m.Map(evs[tt.sample], sampleContext(tt.sample))
		if err != nil || !ok || got.Topic != tt.topic {
			t.Fatalf("sample %d: %v %v %v", tt.sample, got.Topic, ok, err)
		}
		if err := got.Record.Validate(); err != nil {
			t.Errorf("sample %d: %v", tt.sample, err)
		}
		if !reflect.DeepEqual(got.Record, tt.want) {
			t.Errorf("sample %d\ngot  %s\nwant %s", tt.sample, mustJSON(t, got.Record), mustJSON(t, tt.want))
		}
	}
	bare := records.New(mustSampleCatalogue(t))
	if _, _, err := bare.Map(evs[18], sampleContext(18)); err == nil || !strings.Contains(err.Error(), "FundingRateRecord: perp market 30 is not in the catalogue") {
		t.Errorf("error %v, want one naming perp market 30", err)
	}
}
