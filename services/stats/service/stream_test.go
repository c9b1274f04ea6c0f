package service_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// The known stream: five wallets, six accounts, nine fills in two perp markets, settlements, state
// samples, funding updates, liquidations, insurance-fund movements, vaults and parameters, each
// figure of which the tests work out by hand. now is kittest.DefaultNow, 2026-11-19T15:30:00Z: the
// 24-hour window is the 1,440 minutes from 2026-11-18T15:31:00Z to 2026-11-19T15:30:59Z.
var (
	w1, w2, w3, w4, w5 = kittest.Key(101), kittest.Key(102), kittest.Key(103), kittest.Key(104), kittest.Key(105)
	a1, a2, a3, a4, a5 = kittest.Key(201), kittest.Key(202), kittest.Key(203), kittest.Key(204), kittest.Key(205)
	a6                 = kittest.Key(206)
)

// wallets maps every account of the stream to its wallet; a5's record arrives late (lateUser).
var wallets = map[string]string{a1: w1, a2: w1, a3: w2, a4: w3, a5: w4, a6: w5}

func newUser(account string, id int) *events.NewUser {
	return &events.NewUser{
		Tx:            events.Tx{Ts: kittest.At("2026-11-01T00:00:00Z") + int64(id), TxSig: kittest.Sig("nuser", id), Slot: 290_000_000 + int64(id)},
		UserAuthority: wallets[account], User: account, SubAccountID: id % 2, Name: "Main Account",
	}
}

// fill is a fill of base (1e9) at price (1e6) with the oracle at oracle (1e6); maker "" is the AMM.
func fill(m kittest.Market, ts int64, id int, taker, maker string, base, price, oracle int64) *events.Fill {
	f := kittest.Fill(m, ts, id, base*price/1_000_000_000, base, oracle)
	f.Taker = taker
	f.Maker = maker
	if maker == "" {
		f.MakerOrderID, f.MakerOrderDirection = "", ""
	}
	return f
}

const usd = 1_000_000 // quote and price precision

// streamFills are the fills; fills[4] and fills[8] name a5, whose wallet is learnt late.
func streamFills() []*events.Fill {
	sol, btc := kittest.SOLPerp, kittest.BTCPerp
	return []*events.Fill{
		fill(sol, kittest.At("2026-11-18T14:00:00Z"), 1, a1, a3, 1_000_000_000, 140*usd, 140*usd),     // before the window
		fill(sol, kittest.At("2026-11-18T15:30:30Z"), 2, a2, a3, 2_000_000_000, 145*usd, 145*usd),     // before: the price 24 h ago
		fill(sol, kittest.At("2026-11-18T15:31:00Z"), 3, a2, a3, 1_000_000_000, 150*usd, 150_500_000), // the window's first minute
		fill(sol, kittest.At("2026-11-19T09:00:00Z"), 4, a3, a1, 3_000_000_000, 160*usd, 159*usd),     // the high
		fill(sol, kittest.At("2026-11-19T15:30:59Z"), 5, a5, a4, 1_000_000_000, 155*usd, 155_500_000), // the last
		fill(sol, kittest.At("2026-11-19T15:00:00Z"), 6, a4, "", 2_000_000_000, 130*usd, 131*usd),     // the low, with the AMM
		fill(btc, kittest.At("2026-11-19T12:00:00Z"), 7, a1, a4, 100_000_000, 60_000*usd, 60_010*usd), // 6,000 USDC
		fill(sol, kittest.At("2026-11-10T00:00:00Z"), 8, a6, a1, 3_000_000_000, 160*usd, 160*usd),     // 480 USDC
		fill(btc, kittest.At("2026-11-12T00:00:00Z"), 9, a4, a5, 10_000_000, 58_000*usd, 58_000*usd),  // 580 USDC
	}
}

// settlement is account's settled P&L (quote 1e6) at ts.
func settlement(account string, ts int64, id int, pnl int64) *events.SettlePnl {
	s := kittest.SettlePnl(kittest.SOLPerp, account, ts, id)
	s.Pnl = events.NewAmount(pnl)
	return s
}

func streamSettlements() []*events.SettlePnl {
	return []*events.SettlePnl{
		settlement(a1, kittest.At("2026-11-15T00:00:00Z"), 1, 100*usd),
		settlement(a3, kittest.At("2026-11-16T00:00:00Z"), 2, -50*usd),
		settlement(a4, kittest.At("2026-11-17T00:00:00Z"), 3, 100*usd),
		settlement(a5, kittest.At("2026-11-18T00:00:00Z"), 4, 20*usd), // a5: before its wallet is known
	}
}

// perpState is a state sample of perp market m.
func perpState(m kittest.Market, ts, slot, oracle, mark int64) *events.MarketState {
	return &events.MarketState{
		Ts: ts, Slot: slot, MarketIndex: m.Index, MarketType: m.Type, Symbol: m.Symbol, OraclePrice: events.NewAmount(oracle),
		MarkPrice: events.NewAmount(mark), BidPrice: events.NewAmount(mark - 10_000), AskPrice: events.NewAmount(mark + 10_000),
		LongSpread: "250", ShortSpread: "250", BaseAssetAmountWithAmm: "-1000000000",
		BaseAssetAmountLong: "500000000000", BaseAssetAmountShort: "-499000000000", OpenInterest: "999000000000",
		FundingRateLong: "12500", FundingRateShort: "-12500",
	}
}

// spotState is a state sample of spot market m with its decimals; lending fields only when rates.
func spotState(m kittest.Market, ts, slot, oracle int64, decimals int, rates bool, depositRate int64) *events.MarketState {
	s := &events.MarketState{
		Ts: ts, Slot: slot, MarketIndex: m.Index, MarketType: m.Type, Symbol: m.Symbol, OraclePrice: events.NewAmount(oracle),
		Decimals: &decimals,
	}
	if rates {
		s.DepositRate, s.BorrowRate = events.NewAmount(depositRate), events.NewAmount(depositRate+30_000)
		s.DepositBalance, s.BorrowBalance = events.NewAmount(depositRate*1000), events.NewAmount(depositRate*400)
	}
	return s
}

var (
	hour = int64(time.Hour / time.Second)
	day  = 24 * hour
	nowS = kittest.DefaultNow.Unix()
)

func streamStates() []*events.MarketState {
	return []*events.MarketState{
		// The slots follow kittest.Fill's (300,000,000 + ts): this sample is later than the last fill.
		perpState(kittest.SOLPerp, nowS, 300_000_000+nowS+100, 155_400_000, 155_600_000),
		perpState(kittest.SOLPerp, nowS-20, 300_000_000+nowS-20, 150*usd, 150*usd), // older: changes nothing
		spotState(kittest.USDC, nowS-2*hour, 400_000_100, 1*usd, 6, true, 50_000),
		spotState(kittest.USDC, nowS-2*hour+60, 400_000_150, 1*usd, 6, true, 51_000), // the hour's last sample
		spotState(kittest.USDC, nowS-10, 400_000_200, 1*usd, 6, true, 52_000),
		spotState(kittest.SOLSpot, nowS-10, 400_000_200, 155*usd, 9, false, 0),
	}
}

// funding is m's funding update of rate (1e9) at ts, its oracle TWAP at 1.0: rate r is r/1e7 % .
func funding(m kittest.Market, ts int64, id int, rate int64) *events.FundingRate {
	f := kittest.FundingRate(m, ts, id)
	f.FundingRate, f.FundingRateLong, f.FundingRateShort = events.NewAmount(rate), events.NewAmount(rate), events.NewAmount(-rate)
	f.OraclePriceTwap = "1000000"
	return f
}

func streamFunding() []*events.FundingRate {
	return []*events.FundingRate{
		funding(kittest.SOLPerp, nowS-2*hour, 1, 30_000),   // 0.003 %
		funding(kittest.SOLPerp, nowS-10*hour, 2, 10_000),  // 0.001 %
		funding(kittest.SOLPerp, nowS-3*day, 3, 50_000),    // 0.005 %
		funding(kittest.SOLPerp, nowS-20*day, 4, -20_000),  // -0.002 %
		funding(kittest.SOLPerp, nowS-200*day, 5, 100_000), // 0.01 %
		funding(kittest.SOLPerp, nowS-400*day, 6, 900_000), // beyond a year
	}
}

func streamLiquidations() []*events.Liquidation {
	perp := func(ts int64, id int, quote int64) *events.Liquidation {
		l := kittest.Liquidation(kittest.SOLPerp, a2, ts, id)
		l.CanceledOrderIDs = []string{}
		l.LiquidatePerpQuoteAssetAmount = events.NewAmount(quote)
		return l
	}
	spot := func(ts int64, id int) *events.Liquidation {
		l := kittest.Liquidation(kittest.SOLPerp, a2, ts, id)
		l.CanceledOrderIDs = []string{"7", "8"}
		l.LiquidationType = events.LiquidationTypeSpot
		l.LiquidatePerpMarketIndex, l.LiquidatePerpOraclePrice, l.LiquidatePerpBaseAssetAmount = nil, "", ""
		l.LiquidatePerpQuoteAssetAmount, l.LiquidatePerpLpShares, l.LiquidatePerpFillRecordID = "", "", ""
		l.LiquidatePerpUserOrderID, l.LiquidatePerpLiquidatorOrderID, l.LiquidatePerpLiquidatorFee, l.LiquidatePerpIfFee = "", "", "", ""
		l.LiquidateSpotAssetMarketIndex, l.LiquidateSpotLiabilityMarketIndex = new(kittest.SOLSpot.Index), new(kittest.USDC.Index)
		l.LiquidateSpotAssetPrice, l.LiquidateSpotAssetTransfer = "155000000", "3300000000"
		l.LiquidateSpotLiabilityPrice, l.LiquidateSpotLiabilityTransfer = "1000000", events.NewAmount(500*usd) // 500 USDC
		l.LiquidateSpotIfFee = "0"
		return l
	}
	pnl := func(ts int64, id int) *events.Liquidation {
		l := spot(ts, id)
		l.LiquidationType = events.LiquidationTypeBorrowForPerpPnl
		l.LiquidateSpotAssetMarketIndex, l.LiquidateSpotLiabilityMarketIndex = nil, nil
		l.LiquidateSpotAssetPrice, l.LiquidateSpotAssetTransfer, l.LiquidateSpotLiabilityPrice = "", "", ""
		l.LiquidateSpotLiabilityTransfer, l.LiquidateSpotIfFee = "", ""
		l.LiquidateBorrowForPerpPnlPerpMarketIndex, l.LiquidateBorrowForPerpPnlLiabilityMarketIndex = new(0), new(1)
		l.LiquidateBorrowForPerpPnlMarketOraclePrice, l.LiquidateBorrowForPerpPnlPnlTransfer = "155000000", events.NewAmount(300*usd)
		l.LiquidateBorrowForPerpPnlLiabilityPrice, l.LiquidateBorrowForPerpPnlLiabilityTransfer = "155000000", "1935483870"
		return l
	}
	perpBankrupt := func(ts int64, id int) *events.Liquidation {
		l := spot(ts, id)
		l.LiquidationType, l.Bankrupt = events.LiquidationTypePerpBankruptcy, true
		l.LiquidateSpotAssetMarketIndex, l.LiquidateSpotLiabilityMarketIndex = nil, nil
		l.LiquidateSpotAssetPrice, l.LiquidateSpotAssetTransfer, l.LiquidateSpotLiabilityPrice = "", "", ""
		l.LiquidateSpotLiabilityTransfer, l.LiquidateSpotIfFee = "", ""
		l.PerpBankruptcyMarketIndex = new(0)
		l.PerpBankruptcyPnl, l.PerpBankruptcyIfPayment = events.NewAmount(-200*usd), events.NewAmount(150*usd)
		l.PerpBankruptcyClawbackUserPayment, l.PerpBankruptcyCumulativeFundingRateDelta = "0", "0"
		return l
	}
	spotBankrupt := func(ts int64, id int) *events.Liquidation {
		l := perpBankrupt(ts, id)
		l.LiquidationType = events.LiquidationTypeSpotBankruptcy
		l.PerpBankruptcyMarketIndex, l.PerpBankruptcyPnl, l.PerpBankruptcyIfPayment = nil, "", ""
		l.PerpBankruptcyClawbackUserPayment, l.PerpBankruptcyCumulativeFundingRateDelta = "", ""
		l.SpotBankruptcyMarketIndex = new(kittest.SOLSpot.Index)
		l.SpotBankruptcyBorrowAmount, l.SpotBankruptcyIfPayment = "2000000000", "1000000000" // 2 and 1 SOL
		l.SpotBankruptcyCumulativeDepositInterestDelta = "0"
		return l
	}
	return []*events.Liquidation{
		perp(nowS-hour, 1, 1000*usd),
		spot(nowS-2*hour, 2),
		pnl(nowS-10*day, 3),
		perp(nowS-40*day, 4, 9999*usd), // beyond 30 days and the list's 31
		perpBankrupt(nowS-3*hour, 5),
		spotBankrupt(nowS-4*hour, 6),
	}
}

// ifFlow is a movement of amount into USDC's insurance fund at ts, its vault then before.
func ifFlow(ts int64, id int, before, amount int64) *events.InsuranceFund {
	r := kittest.InsuranceFund(kittest.USDC, ts, id)
	r.InsuranceVaultAmountBefore, r.Amount = events.NewAmount(before), events.NewAmount(amount)
	return r
}

func streamInsurance() ([]*events.InsuranceFund, []*events.IFStake) {
	flows := []*events.InsuranceFund{
		ifFlow(nowS-40*day, 1, 1_998_800, 700),
		ifFlow(nowS-3*day, 2, 1_999_500, 500),
		ifFlow(nowS-2*hour, 3, 2_000_000, 1000),
	}
	stake := kittest.IFStake(kittest.USDC, nowS-hour, 1, false)
	stake.Amount, stake.InsuranceVaultAmountBefore = "10000", "2001000"
	stake.UserIfSharesAfter, stake.TotalIfSharesAfter = "10", "110"
	return flows, []*events.IFStake{stake}
}

func streamVaults() []*events.Vault {
	v := func(ts, slot, value int64) *events.Vault {
		return &events.Vault{
			Ts: ts, Slot: slot, Vault: kittest.Key(301), Name: "Supercharger", Manager: kittest.Key(302), SpotMarketIndex: 0, Symbol: "USDC",
			TotalShares: "1000000000", TotalDeposits: "1200000000", TotalWithdraws: "200000000", NetDeposits: "1000000000",
			TotalAccountValue: events.NewAmount(value), ManagementFee: "20000", ProfitShare: "200000",
		}
	}
	return []*events.Vault{v(nowS-hour, 400_000_300, 1_100_000_000), v(nowS-2*hour, 400_000_100, 900_000_000)}
}

func streamParams() []*events.Params {
	return []*events.Params{
		{Ts: nowS - hour, Params: []byte(`{"maintenance":false,"fundingPeriod":3600}`)},
		{Ts: nowS - 2*hour, Params: []byte(`{"maintenance":true}`)},
	}
}

// streamMessages is the whole stream but the late new-user record of a5.
func streamMessages(t *testing.T) []events.Message {
	t.Helper()
	var out []events.Message
	for i, a := range []string{a1, a2, a3, a4, a6} {
		out = append(out, encode(t, events.TopicNewUsers, newUser(a, i+1))...)
	}
	for _, f := range streamFills() {
		out = append(out, encode(t, events.TopicFills, f)...)
	}
	for _, r := range streamSettlements() {
		out = append(out, encode(t, events.TopicSettlePnl, r)...)
	}
	for _, r := range streamStates() {
		out = append(out, encode(t, events.TopicMarketStates, r)...)
	}
	for _, r := range streamFunding() {
		out = append(out, encode(t, events.TopicFundingRates, r)...)
	}
	for _, r := range streamLiquidations() {
		out = append(out, encode(t, events.TopicLiquidations, r)...)
	}
	flows, stakes := streamInsurance()
	for _, r := range flows {
		out = append(out, encode(t, events.TopicInsuranceFund, r)...)
	}
	for _, r := range stakes {
		out = append(out, encode(t, events.TopicIFStakes, r)...)
	}
	for _, r := range streamVaults() {
		out = append(out, encode(t, events.TopicVaults, r)...)
	}
	for _, r := range streamParams() {
		out = append(out, encode(t, events.TopicParams, r)...)
	}
	// SOL's balances come from its deposits: its state samples carry no lending.
	dep := kittest.Deposit(kittest.SOLSpot, nowS-hour, 1, false)
	dep.MarketDepositBalance, dep.MarketWithdrawBalance = "7000000000000", "2000000000000"
	out = append(out, encode(t, events.TopicDeposits, dep)...)
	for i := range 25 {
		out = append(out, encode(t, events.TopicSwaps, kittest.Swap(kittest.USDC, kittest.SOLSpot, nowS-int64(i)*hour, i+1))...)
	}
	return out
}

// lateUser is a5's new-user record.
func lateUser(t *testing.T) []events.Message {
	t.Helper()
	return encode(t, events.TopicNewUsers, newUser(a5, 9))
}
