package kittest

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

// Market is a market of the builders.
type Market struct {
	Symbol string
	Index  int
	Type   events.MarketType
}

// The markets tests use.
var (
	SOLPerp = Market{"SOL-PERP", 0, events.MarketTypePerp}
	BTCPerp = Market{"BTC-PERP", 1, events.MarketTypePerp}
	BetMkt  = Market{"TRUMP-WIN-2028-BET", 3, events.MarketTypePerp}
	USDC    = Market{"USDC", 0, events.MarketTypeSpot}
	SOLSpot = Market{"SOL", 1, events.MarketTypeSpot}
)

// Sig is a transaction signature, distinct per prefix (its first five characters) and n.
func Sig(prefix string, n int) string { return fmt.Sprintf("%s%083d", prefix[:5], n) }

// Key is the public key of test account i: base58 of 32 bytes, readable ("Acct1111...12"), distinct
// per i.
func Key(i int) string {
	return "Acct" + strings.Map(func(r rune) rune { return rune("123456789A"[r-'0']) }, fmt.Sprintf("%040d", i))
}

// At is the unix time of an RFC 3339 timestamp.
func At(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

// Fill is a fill of base (1e9) for quote (1e6) at ts with fill record id id: taker Key(2) long, maker
// Key(3) short, filler Key(1).
func Fill(m Market, ts int64, id int, quote, base, oracle int64) *events.Fill {
	return &events.Fill{
		Tx:           events.Tx{Ts: ts, TxSig: Sig("fills", id), TxSigIndex: id % 3, Slot: 300_000_000 + ts},
		FillerReward: "0", BaseAssetAmountFilled: events.NewAmount(base), QuoteAssetAmountFilled: events.NewAmount(quote),
		TakerFee: events.NewAmount(quote * 35 / 100_000), MakerRebate: events.NewAmount(quote / 100_000), ReferrerReward: "0",
		QuoteAssetAmountSurplus: "0", TakerOrderBaseAssetAmount: events.NewAmount(base),
		TakerOrderCumulativeBaseAssetAmountFilled: events.NewAmount(base), TakerOrderCumulativeQuoteAssetAmountFilled: events.NewAmount(quote),
		MakerOrderBaseAssetAmount: events.NewAmount(base), MakerOrderCumulativeBaseAssetAmountFilled: events.NewAmount(base),
		MakerOrderCumulativeQuoteAssetAmountFilled: events.NewAmount(quote), OraclePrice: events.NewAmount(oracle),
		MakerFee: events.NewAmount(-quote / 100_000), Action: events.ActionFill, ActionExplanation: events.ExplanationOrderFilledWithMatch,
		MarketIndex: m.Index, MarketType: m.Type, Filler: Key(1), FillRecordID: strconv.Itoa(id),
		Taker: Key(2), TakerOrderID: strconv.Itoa(10_000 + id), TakerOrderDirection: events.DirectionLong,
		Maker: Key(3), MakerOrderID: strconv.Itoa(20_000 + id), MakerOrderDirection: events.DirectionShort,
		SpotFulfillmentMethodFee: "0", MarketFilter: events.MarketFilter(m.Type, m.Symbol), Symbol: m.Symbol,
	}
}

// FundingRate is market m's funding rate record id at ts.
func FundingRate(m Market, ts int64, id int) *events.FundingRate {
	return &events.FundingRate{
		Tx: events.Tx{Ts: ts, TxSig: Sig("fundr", id), TxSigIndex: 0, Slot: 300_000_000 + ts}, MarketIndex: m.Index, RecordID: strconv.Itoa(id),
		Symbol: m.Symbol, FundingRate: "1250", FundingRateLong: "1250", FundingRateShort: "-1250",
		CumulativeFundingRateLong: events.NewAmount(int64(id) * 1250), CumulativeFundingRateShort: events.NewAmount(-int64(id) * 1250),
		OraclePriceTwap: "150000000", MarkPriceTwap: "150100000", PeriodRevenue: "1000", BaseAssetAmountWithAmm: "5000000000",
		BaseAssetAmountWithUnsettledLp: "0",
	}
}

// InsuranceFund is a movement of spot market m's insurance fund at ts.
func InsuranceFund(m Market, ts int64, id int) *events.InsuranceFund {
	return &events.InsuranceFund{
		Tx: events.Tx{Ts: ts, TxSig: Sig("insfd", id), Slot: 300_000_000 + ts}, SpotMarketIndex: m.Index, PerpMarketIndex: 0,
		UserIfFactor: 0.5, TotalIfFactor: 1, Symbol: m.Symbol, VaultAmountBefore: "1000000", InsuranceVaultAmountBefore: "2000000",
		TotalIfSharesBefore: "100", TotalIfSharesAfter: "100", Amount: "500",
	}
}

// IFStake is a stake of wallet Key(9) in spot market m's insurance fund; withSymbol names the market.
func IFStake(m Market, ts int64, id int, withSymbol bool) *events.IFStake {
	r := &events.IFStake{
		Tx: events.Tx{Ts: ts, TxSig: Sig("ifstk", id), Slot: 300_000_000 + ts}, MarketIndex: m.Index, Amount: "1000000",
		UserAuthority: Key(9), Action: events.IFStakeActionStake, IfSharesBefore: "0", UserIfSharesBefore: "0",
		TotalIfSharesBefore: "100", IfSharesAfter: "10", UserIfSharesAfter: "10", TotalIfSharesAfter: "110",
		InsuranceVaultAmountBefore: "2000000",
	}
	if withSymbol {
		r.Symbol = m.Symbol
	}
	return r
}

// Swap is account Key(4) swapping out for in at ts.
func Swap(in, out Market, ts int64, id int) *events.Swap {
	return &events.Swap{
		Tx: events.Tx{Ts: ts, TxSig: Sig("swaps", id), Slot: 300_000_000 + ts}, User: Key(4), OutMarketIndex: out.Index, InMarketIndex: in.Index,
		AmountOut: "1000000000", AmountIn: "150000000", OutOraclePrice: "150000000", InOraclePrice: "1000000", Fee: "1000",
		InSymbol: in.Symbol, OutSymbol: out.Symbol,
	}
}

// Deposit is account Key(6) (wallet Key(5)) depositing into spot market m at ts, a reward when reward.
func Deposit(m Market, ts int64, id int, reward bool) *events.Deposit {
	expl := events.DepositExplanationNone
	if reward {
		expl = events.DepositExplanationReward
	}
	return &events.Deposit{
		Tx: events.Tx{Ts: ts, TxSig: Sig("depos", id), Slot: 300_000_000 + ts}, Amount: "5000000", OraclePrice: "1000000",
		MarketDepositBalance: "1000000000", MarketWithdrawBalance: "0", MarketCumulativeDepositInterest: "10000000000",
		MarketCumulativeBorrowInterest: "10000000000", TotalDepositsAfter: "5000000", TotalWithdrawsAfter: "0",
		DepositRecordID: strconv.Itoa(id), UserAuthority: Key(5), User: Key(6), Direction: events.DepositDirectionDeposit,
		Explanation: expl, MarketIndex: m.Index, Symbol: m.Symbol,
	}
}

// Encode encodes recs for topic, failing the test on an invalid record.
func Encode(t testing.TB, topic string, recs ...events.Record) []events.Message {
	t.Helper()
	out := make([]events.Message, 0, len(recs))
	for _, r := range recs {
		m, err := events.Encode(topic, r)
		if err != nil {
			t.Fatalf("encode %T: %v", r, err)
		}
		out = append(out, m)
	}
	return out
}

// Order is account's order orderID in m, placed at ts: a limit order of base (1e9) at price (1e6),
// with its state as filled (base and quote filled, fee) and its last action.
func Order(m Market, account string, orderID int, ts int64, direction string, base, price int64, filledBase, filledQuote, fee int64,
	lastUpdated int64, lastAction string) *events.Order {
	status := events.OrderStatusOpen
	switch lastAction {
	case events.LastActionFilled:
		status = events.OrderStatusFilled
	case events.LastActionCancelled, events.LastActionPartialFillCancelled, events.LastActionExpired:
		status = events.OrderStatusCanceled
	}
	return &events.Order{
		Tx: events.Tx{Ts: ts, TxSig: Sig("order", orderID), Slot: 300_000_000 + ts}, User: account, Status: status,
		OrderType: events.OrderTypeLimit, MarketType: m.Type, MarketFilter: events.MarketFilter(m.Type, m.Symbol),
		OrderID: strconv.Itoa(orderID), MarketIndex: m.Index, Price: events.NewAmount(price), BaseAssetAmount: events.NewAmount(base),
		QuoteAssetAmount: "0", BaseAssetAmountFilled: events.NewAmount(filledBase), QuoteAssetAmountFilled: events.NewAmount(filledQuote),
		Direction: direction, TriggerPrice: "0", TriggerCondition: events.TriggerAbove, ExistingPositionDirection: direction,
		OraclePriceOffset: "0", AuctionStartPrice: "0", AuctionEndPrice: "0", Symbol: m.Symbol,
		LastUpdatedTs: lastUpdated, LastActionStatus: lastAction, LastActionExplanation: events.ExplanationNone,
		CumulativeFee: events.NewAmount(fee),
	}
}

// OrderAction is action (place, cancel, trigger, expire) of account on its order orderID in m at ts,
// as its taker side.
func OrderAction(m Market, account string, orderID int, ts int64, action string, direction string, base int64) *events.OrderAction {
	return &events.OrderAction{
		Tx: events.Tx{Ts: ts, TxSig: Sig("actio", orderID*10+len(action)), TxSigIndex: 1, Slot: 300_000_000 + ts}, Action: action,
		ActionExplanation: events.ExplanationNone, MarketIndex: m.Index, MarketType: m.Type, Taker: account,
		TakerOrderID: strconv.Itoa(orderID), TakerOrderDirection: direction, TakerOrderBaseAssetAmount: events.NewAmount(base),
		TakerOrderCumulativeBaseAssetAmountFilled: "0", TakerOrderCumulativeQuoteAssetAmountFilled: "0",
		MarketFilter: events.MarketFilter(m.Type, m.Symbol), User: account, Symbol: m.Symbol,
	}
}

// FundingPayment is account's funding payment in perp market m at ts.
func FundingPayment(m Market, account string, ts int64, id int, payment int64) *events.FundingPayment {
	return &events.FundingPayment{
		Tx: events.Tx{Ts: ts, TxSig: Sig("fundp", id), Slot: 300_000_000 + ts}, UserAuthority: Key(90), User: account, MarketIndex: m.Index,
		FundingPayment: events.NewAmount(payment), BaseAssetAmount: "1000000000", UserLastCumulativeFunding: "100",
		AmmCumulativeFundingLong: "120", AmmCumulativeFundingShort: "-120",
	}
}

// SettlePnl is account's settlement in perp market m at ts.
func SettlePnl(m Market, account string, ts int64, id int) *events.SettlePnl {
	return &events.SettlePnl{
		Tx: events.Tx{Ts: ts, TxSig: Sig("settl", id), Slot: 300_000_000 + ts}, User: account, MarketIndex: m.Index, Pnl: "1500000",
		BaseAssetAmount: "0", QuoteAssetAmountAfter: "0", QuoteEntryAmount: "0", SettlePrice: "150000000",
		Explanation: events.SettlePnlExplanationNone,
	}
}

// PerpLP is account's liquidity added to perp market m at ts.
func PerpLP(m Market, account string, ts int64, id int) *events.PerpLP {
	return &events.PerpLP{
		Tx: events.Tx{Ts: ts, TxSig: Sig("perlp", id), Slot: 300_000_000 + ts}, User: account, Action: events.LPActionAddLiquidity,
		MarketIndex: m.Index, NShares: "1000000000", DeltaBaseAssetAmount: "-1000000000", DeltaQuoteAssetAmount: "150000000", Pnl: "0",
	}
}

// Liquidation is account's perp liquidation in m at ts.
func Liquidation(m Market, account string, ts int64, id int) *events.Liquidation {
	idx := m.Index
	return &events.Liquidation{
		Tx: events.Tx{Ts: ts, TxSig: Sig("liqui", id), Slot: 300_000_000 + ts}, LiquidationType: events.LiquidationTypePerp, User: account,
		Liquidator: Key(91), MarginRequirement: "1000000", TotalCollateral: "900000", MarginFreed: "100000", LiquidationID: id,
		LiquidatePerpMarketIndex: &idx, LiquidatePerpOraclePrice: "150000000", LiquidatePerpBaseAssetAmount: "1000000000",
		LiquidatePerpQuoteAssetAmount: "150000000", LiquidatePerpLpShares: "0", LiquidatePerpFillRecordID: "1",
		LiquidatePerpUserOrderID: "1", LiquidatePerpLiquidatorOrderID: "2", LiquidatePerpLiquidatorFee: "1000",
		LiquidatePerpIfFee: "500",
	}
}

// LiquidationOf is account's liquidation of kind (an events.LiquidationType*) at ts, in perp and spot
// as the type concerns them (a P&L or borrow liquidation both, a spot one spot and USDC), with
// bitFlags 1 and only its own sub-record set, as a producer may leave the others out.
func LiquidationOf(kind string, perp, spot Market, account string, ts int64, id int) *events.Liquidation {
	l := Liquidation(perp, account, ts, id)
	l.BitFlags = 1
	if kind == events.LiquidationTypePerp {
		return l
	}
	*l = events.Liquidation{Tx: events.Tx{Ts: l.Ts, TxSig: l.TxSig, Slot: l.Slot}, LiquidationType: kind, User: l.User,
		Liquidator: l.Liquidator, MarginRequirement: l.MarginRequirement, TotalCollateral: l.TotalCollateral,
		MarginFreed: l.MarginFreed, LiquidationID: l.LiquidationID, CanceledOrderIDs: []string{"7"}, BitFlags: 1}
	p, s, q := perp.Index, spot.Index, USDC.Index
	switch kind {
	case events.LiquidationTypeSpot:
		l.LiquidateSpotAssetMarketIndex, l.LiquidateSpotLiabilityMarketIndex = &s, &q
		l.LiquidateSpotAssetPrice, l.LiquidateSpotAssetTransfer = "150000000", "3000000000"
		l.LiquidateSpotLiabilityPrice, l.LiquidateSpotLiabilityTransfer, l.LiquidateSpotIfFee = "1000000", "450000000", "2000"
	case events.LiquidationTypeBorrowForPerpPnl:
		l.LiquidateBorrowForPerpPnlPerpMarketIndex, l.LiquidateBorrowForPerpPnlLiabilityMarketIndex = &p, &s
		l.LiquidateBorrowForPerpPnlMarketOraclePrice, l.LiquidateBorrowForPerpPnlPnlTransfer = "150000000", "30000000"
		l.LiquidateBorrowForPerpPnlLiabilityPrice, l.LiquidateBorrowForPerpPnlLiabilityTransfer = "150000000", "200000000"
	case events.LiquidationTypePerpPnlForDeposit:
		l.LiquidatePerpPnlForDepositPerpMarketIndex, l.LiquidatePerpPnlForDepositAssetMarketIndex = &p, &s
		l.LiquidatePerpPnlForDepositMarketOraclePrice, l.LiquidatePerpPnlForDepositPnlTransfer = "150000000", "-30000000"
		l.LiquidatePerpPnlForDepositAssetPrice, l.LiquidatePerpPnlForDepositAssetTransfer = "150000000", "200000000"
	case events.LiquidationTypePerpBankruptcy:
		clawback := Key(93)
		l.Bankrupt, l.PerpBankruptcyMarketIndex, l.PerpBankruptcyClawbackUser = true, &p, &clawback
		l.PerpBankruptcyPnl, l.PerpBankruptcyIfPayment = "-20000000", "15000000"
		l.PerpBankruptcyClawbackUserPayment, l.PerpBankruptcyCumulativeFundingRateDelta = "5000000", "-1200"
	case events.LiquidationTypeSpotBankruptcy:
		l.Bankrupt, l.SpotBankruptcyMarketIndex = true, &s
		l.SpotBankruptcyBorrowAmount, l.SpotBankruptcyIfPayment = "2000000000", "2000000000"
		l.SpotBankruptcyCumulativeDepositInterestDelta = "31"
	}
	return l
}

// CheckLiquidation fails t unless got, a liquidation record an answer carried, has every field of
// the API's liquidation record (those of all six sub-records and bitFlags) with want's values.
func CheckLiquidation(t testing.TB, got []byte, want *events.Liquidation) {
	t.Helper()
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var gm, wm map[string]any
	if err := json.Unmarshal(got, &gm); err != nil {
		t.Fatalf("liquidation %s: %v", got, err)
	}
	if err := json.Unmarshal(w, &wm); err != nil {
		t.Fatal(err)
	}
	fields := (*events.Liquidation)(nil).CSVHeader() // the JSON's fields, in order
	if keys := slices.Sorted(maps.Keys(gm)); !slices.Equal(keys, slices.Sorted(slices.Values(fields))) {
		t.Errorf("%s liquidation %d has the fields\n %v\nwant\n %v", want.LiquidationType, want.LiquidationID, keys, fields)
	}
	for _, f := range fields {
		if !reflect.DeepEqual(gm[f], wm[f]) {
			t.Errorf("%s liquidation %d: %s = %#v, want %#v", want.LiquidationType, want.LiquidationID, f, gm[f], wm[f])
		}
	}
}

// LiquidationTypes are the six liquidation types, in the protocol's order.
var LiquidationTypes = []string{events.LiquidationTypePerp, events.LiquidationTypeSpot,
	events.LiquidationTypeBorrowForPerpPnl, events.LiquidationTypePerpPnlForDeposit,
	events.LiquidationTypePerpBankruptcy, events.LiquidationTypeSpotBankruptcy}

// TradingSnapshot, EarnSnapshot and VaultSnapshot are account's snapshots (of wallet Key(90)) at ts.
func TradingSnapshot(account string, ts int64, balance int64) *events.AccountSnapshot {
	return &events.AccountSnapshot{Kind: events.SnapshotTrading, Authority: Key(90), AccountID: account, Ts: ts,
		Trading: &events.TradingSnapshot{AccountBalance: events.NewAmount(balance), UnrealizedPnl: "0", CumulativeRealizedPnl: "5",
			UnsettledPnl: "0", CumulativeSettledPnl: "5", CumulativeFunding: "-1", CumulativeFeePaid: "3", CumulativeFeeRebate: "1",
			CumulativeTakerVolume: "1000", CumulativeMakerVolume: "2000"}}
}

func EarnSnapshot(account string, ts int64) *events.AccountSnapshot {
	return &events.AccountSnapshot{Kind: events.SnapshotEarn, Authority: Key(90), AccountID: account, Ts: ts,
		Earn: &events.EarnSnapshot{Assets: []events.EarnAsset{{MarketIndex: 0, Balance: "5000000", Deposits: "6000000",
			Withdrawals: "1000000", Pnl: "10", InterestBaseValue: "1", InterestQuoteValue: "1", OraclePrice: "1000000"}}}}
}

func VaultSnapshot(account string, ts int64) *events.AccountSnapshot {
	return &events.AccountSnapshot{Kind: events.SnapshotVault, Authority: Key(90), AccountID: account, Ts: ts,
		Vault: &events.VaultSnapshot{Vault: Key(92), TotalAccountValue: "3000000000", TotalAccountBaseValue: "3000000000",
			MarketIndex: 0, NetDeposits: "2700000000"}}
}
