package events_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

func TestFillCSVColumnOrder(t *testing.T) {
	want := strings.Split("ts,txSig,txSigIndex,slot,fillerReward,baseAssetAmountFilled,quoteAssetAmountFilled,"+
		"takerFee,makerRebate,referrerReward,quoteAssetAmountSurplus,takerOrderBaseAssetAmount,"+
		"takerOrderCumulativeBaseAssetAmountFilled,takerOrderCumulativeQuoteAssetAmountFilled,"+
		"makerOrderBaseAssetAmount,makerOrderCumulativeBaseAssetAmountFilled,"+
		"makerOrderCumulativeQuoteAssetAmountFilled,oraclePrice,makerFee,action,actionExplanation,marketIndex,"+
		"marketType,filler,fillRecordId,taker,takerOrderId,takerOrderDirection,maker,makerOrderId,"+
		"makerOrderDirection,spotFulfillmentMethodFee,takerExistingQuoteEntryAmount,takerExistingBaseAssetAmount,"+
		"makerExistingQuoteEntryAmount,makerExistingBaseAssetAmount,marketFilter,user,symbol", ",")
	got := (*events.Fill)(nil).CSVHeader()
	if !slices.Equal(got, want) {
		t.Errorf("fill CSV header\n got  %v\n want %v", got, want)
	}
	row := newFill().CSVRow()
	if row[0] != "1735689600" || row[1] != testSig || row[len(row)-1] != "SOL-PERP" || row[len(row)-3] != "perp" {
		t.Errorf("fill row %v", row)
	}
}

func TestCSVHeadersStartWithTheTransaction(t *testing.T) {
	for name, h := range map[string][]string{
		"fundingRate":   (*events.FundingRate)(nil).CSVHeader(),
		"deposit":       (*events.Deposit)(nil).CSVHeader(),
		"swap":          (*events.Swap)(nil).CSVHeader(),
		"ifStake":       (*events.IFStake)(nil).CSVHeader(),
		"insuranceFund": (*events.InsuranceFund)(nil).CSVHeader(),
	} {
		if !slices.Equal(h[:4], []string{"ts", "txSig", "txSigIndex", "slot"}) {
			t.Errorf("%s header starts %v", name, h[:4])
		}
	}
}

func TestCSVRowsAlignWithHeaders(t *testing.T) {
	records := []events.CSVRecord{
		newFill(), newFundingRate(), newFundingPayment(), newDeposit(), newSwap(), newSettlePnl(), newLiquidation(),
		newInsuranceFund(), newIFStake(), newLPMintRedeem(), newPerpLP(),
	}
	for _, r := range records {
		name := r.(events.Record).EventType()
		t.Run(name, func(t *testing.T) {
			h, row := r.CSVHeader(), r.CSVRow()
			if len(h) != len(row) {
				t.Fatalf("header has %d columns, row %d", len(h), len(row))
			}
			seen := map[string]bool{}
			for _, c := range h {
				if seen[c] {
					t.Errorf("column %s twice", c)
				}
				seen[c] = true
				// The reference's fill CSVs have no bitFlags; its liquidation records do.
				if c == "bitFlags" && name != "liquidation" {
					t.Error("bitFlags exported")
				}
			}
			h[0] = "mutated"
			if r.CSVHeader()[0] != "ts" {
				t.Error("CSVHeader shares its slice between calls")
			}
		})
	}
}
