package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

func TestAmountValid(t *testing.T) {
	tests := []struct {
		in   events.Amount
		want bool
	}{
		{"0", true}, {"1", true}, {"1500000", true}, {"-1", true}, {"-1500000", true},
		{"123456789012345678901234567890", true},
		{"", false}, {"-", false}, {"-0", false}, {"01", false}, {"-01", false}, {"1.5", false},
		{"1e6", false}, {"+1", false}, {" 1", false}, {"1 ", false}, {"0x10", false}, {"١", false},
	}
	for _, tt := range tests {
		if got := tt.in.Valid(); got != tt.want {
			t.Errorf("Amount(%q).Valid() = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestAmountParse(t *testing.T) {
	if v, err := events.NewAmount(-42).Int64(); err != nil || v != -42 {
		t.Errorf("Int64 = %d, %v", v, err)
	}
	if _, err := events.Amount("99999999999999999999").Int64(); err == nil {
		t.Error("Int64 of a value beyond int64: no error")
	}
	b, err := events.Amount("99999999999999999999").Big()
	if err != nil || b.String() != "99999999999999999999" {
		t.Errorf("Big = %v, %v", b, err)
	}
	if _, err := events.Amount("1.5").Big(); err == nil {
		t.Error("Big of 1.5: no error")
	}
}

func TestMarketFilter(t *testing.T) {
	tests := []struct {
		typ    events.MarketType
		symbol string
		want   string
	}{
		{events.MarketTypePerp, "SOL-PERP", "perp"},
		{events.MarketTypePerp, "TRUMP-WIN-2028-BET", "prediction"},
		{events.MarketTypeSpot, "SOL", "spot"},
		{events.MarketTypeSpot, "ODD-BET", "spot"},
	}
	for _, tt := range tests {
		if got := events.MarketFilter(tt.typ, tt.symbol); got != tt.want {
			t.Errorf("MarketFilter(%s, %s) = %s, want %s", tt.typ, tt.symbol, got, tt.want)
		}
		if got := (events.Market{Symbol: tt.symbol, Type: tt.typ}).Filter(); got != tt.want {
			t.Errorf("Market.Filter(%s) = %s, want %s", tt.symbol, got, tt.want)
		}
	}
}

// validatorAt is implemented by every record type.
type validatorAt interface {
	ValidateAt(now time.Time) error
}

func TestValidateRejects(t *testing.T) {
	now := time.Unix(testTs, 0).Add(time.Hour)
	tests := []struct {
		name string
		rec  func() events.Record
		want string // in the error text
	}{
		{"fill amount with decimals", func() events.Record { f := newFill(); f.TakerFee = "1.5"; return f }, "takerFee"},
		{"fill missing amount", func() events.Record { f := newFill(); f.OraclePrice = ""; return f }, "oraclePrice is required"},
		{"fill leading zero", func() events.Record { f := newFill(); f.BaseAssetAmountFilled = "0100"; return f }, "baseAssetAmountFilled"},
		{"fill bad action", func() events.Record { f := newFill(); f.Action = "Fill"; return f }, "action"},
		{"fill bad explanation", func() events.Record {
			f := newFill()
			f.ActionExplanation = "OrderFilledWithMatch"
			return f
		}, "actionExplanation"},
		{"fill bad direction", func() events.Record { f := newFill(); f.TakerOrderDirection = "buy"; return f }, "takerOrderDirection"},
		{"fill bad market type", func() events.Record { f := newFill(); f.MarketType = "future"; return f }, "marketType"},
		{"fill filter disagrees with symbol", func() events.Record { f := newFill(); f.MarketFilter = "prediction"; return f }, "marketFilter"},
		{"fill missing record id", func() events.Record { f := newFill(); f.FillRecordID = ""; return f }, "fillRecordId"},
		{"fill negative record id", func() events.Record { f := newFill(); f.FillRecordID = "-1"; return f }, "fillRecordId"},
		{"fill missing txSig", func() events.Record { f := newFill(); f.TxSig = ""; return f }, "txSig"},
		{"fill without taker and maker", func() events.Record { f := newFill(); f.Taker, f.Maker = "", ""; return f }, "taker or maker"},
		{"fill ts before 2021", func() events.Record { f := newFill(); f.Ts = events.MinTs - 1; return f }, "ts"},
		{"fill ts in the future", func() events.Record { f := newFill(); f.Ts = now.Add(25 * time.Hour).Unix(); return f }, "ts"},
		{"fill ts in milliseconds", func() events.Record { f := newFill(); f.Ts = testTs * 1000; return f }, "ts"},
		{"fill zero slot", func() events.Record { f := newFill(); f.Slot = 0; return f }, "slot"},
		{"place without order id", func() events.Record { p := newPlace(); p.TakerOrderID = ""; return p }, "takerOrderId"},
		{"order bad status", func() events.Record { o := newOrder(); o.Status = "done"; return o }, "status"},
		{"order updated before placed", func() events.Record { o := newOrder(); o.LastUpdatedTs = o.Ts - 1; return o }, "lastUpdatedTs"},
		{"funding rate missing symbol", func() events.Record { r := newFundingRate(); r.Symbol = ""; return r }, "symbol"},
		{"funding rate bad cumulative", func() events.Record {
			r := newFundingRate()
			r.CumulativeFundingRateLong = "1e9"
			return r
		}, "cumulativeFundingRateLong"},
		{"funding payment missing user", func() events.Record { r := newFundingPayment(); r.User = ""; return r }, "user"},
		{"deposit bad direction", func() events.Record { r := newDeposit(); r.Direction = "in"; return r }, "direction"},
		{"deposit bad explanation", func() events.Record { r := newDeposit(); r.Explanation = "gift"; return r }, "explanation"},
		{"swap same markets", func() events.Record { r := newSwap(); r.OutMarketIndex = 0; return r }, "inMarketIndex"},
		{"settle pnl bad explanation", func() events.Record { r := newSettlePnl(); r.Explanation = "expired"; return r }, "explanation"},
		{"liquidation bad type", func() events.Record { r := newLiquidation(); r.LiquidationType = "liquidate"; return r }, "liquidationType"},
		{"liquidation missing sub-record", func() events.Record {
			r := newLiquidation()
			r.LiquidatePerpMarketIndex = nil
			return r
		}, "liquidatePerp_marketIndex is required"},
		{"liquidation wrong sub-record", func() events.Record {
			r := newLiquidation()
			r.LiquidationType = events.LiquidationTypeSpot
			return r
		}, "liquidateSpot_assetMarketIndex is required"},
		{"IF stake bad action", func() events.Record { r := newIFStake(); r.Action = "Stake"; return r }, "action"},
		{"IF record negative factor", func() events.Record { r := newInsuranceFund(); r.UserIfFactor = -1; return r }, "factor"},
		{"LP bad action", func() events.Record { r := newPerpLP(); r.Action = "add"; return r }, "action"},
		{"LP mint missing pool", func() events.Record { r := newLPMintRedeem(); r.LpPool = ""; return r }, "lpPool"},
		{"new user name too long", func() events.Record {
			r := newNewUser()
			r.Name = strings.Repeat("x", 33)
			return r
		}, "name"},
		{"new user builder account without rewards", func() events.Record {
			r := newNewUser()
			r.BuilderRevenueShareAccount.TotalBuilderRewards = ""
			return r
		}, "builderRevenueShareAccount.totalBuilderRewards is required"},
		{"new user escrow without builders", func() events.Record {
			r := newNewUser()
			r.RevenueShareEscrow.ApprovedBuilders = nil
			return r
		}, "revenueShareEscrow.approvedBuilders is required"},
		{"new user builder fee out of range", func() events.Record {
			r := newNewUser()
			r.RevenueShareEscrow.ApprovedBuilders[0].MaxFeeTenthBps = 70000
			return r
		}, "maxFeeTenthBps 70000"},
		{"market state perp without mark", func() events.Record { r := newMarketState(); r.MarkPrice = ""; return r }, "markPrice"},
		{"market state decimals out of range", func() events.Record { r := newMarketState(); r.Decimals = new(19); return r }, "decimals 19"},
		{"snapshot kind mismatch", func() events.Record { r := newTradingSnapshot(); r.Kind = events.SnapshotEarn; return r }, "earn is required"},
		{"vault missing name", func() events.Record { r := newVault(); r.Name = ""; return r }, "name"},
		{"params not an object", func() events.Record { r := newParams(); r.Params = json.RawMessage(`[1]`); return r }, "params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rec().(validatorAt).ValidateAt(now)
			var verr *events.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("ValidateAt = %v, want a *ValidationError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestValidateAcceptsSamples(t *testing.T) {
	now := time.Unix(testTs, 0)
	for _, s := range samples() {
		if err := s.rec.(validatorAt).ValidateAt(now); err != nil {
			t.Errorf("%s: %v", s.topic, err)
		}
	}
	amm := newFill()
	amm.ActionExplanation = events.ExplanationOrderFilledWithAmm
	amm.Maker, amm.MakerOrderID, amm.MakerOrderDirection = "", "", ""
	if err := amm.ValidateAt(now); err != nil {
		t.Errorf("AMM fill without maker: %v", err)
	}
}

func TestValidationErrorListsEveryProblem(t *testing.T) {
	f := newFill()
	f.TakerFee, f.MakerFee, f.Action = "x", "y", "z"
	err := f.ValidateAt(time.Unix(testTs, 0))
	var verr *events.ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 3 {
		t.Fatalf("got %v, want three problems", err)
	}
}
