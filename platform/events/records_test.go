package events_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

const (
	testTs    = 1735689600 // 2025-01-01T00:00:00Z
	testSig   = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"
	testUser  = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
	testAuth  = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
	testMaker = "HN7cABqLq46Es1jh92dQQisAq662SmxELLLsHHe4YWrH"
)

func ptr(i int) *int { return &i }

// sample is a valid record of every protocol record type with every field set, and the JSON field names
// the API uses for it (the golden list).
type sample struct {
	topic  string
	rec    events.Record
	golden string
}

func samples() []sample {
	return []sample{
		{events.TopicFills, newFill(), "ts txSig txSigIndex slot fillerReward baseAssetAmountFilled quoteAssetAmountFilled " +
			"takerFee makerRebate referrerReward quoteAssetAmountSurplus takerOrderBaseAssetAmount " +
			"takerOrderCumulativeBaseAssetAmountFilled takerOrderCumulativeQuoteAssetAmountFilled makerOrderBaseAssetAmount " +
			"makerOrderCumulativeBaseAssetAmountFilled makerOrderCumulativeQuoteAssetAmountFilled oraclePrice makerFee " +
			"action actionExplanation marketIndex marketType filler fillRecordId taker takerOrderId takerOrderDirection " +
			"maker makerOrderId makerOrderDirection spotFulfillmentMethodFee takerExistingQuoteEntryAmount " +
			"takerExistingBaseAssetAmount makerExistingQuoteEntryAmount makerExistingBaseAssetAmount bitFlags " +
			"marketFilter user symbol"},
		{events.TopicOrderActions, newPlace(), "ts txSig txSigIndex slot fillerReward baseAssetAmountFilled quoteAssetAmountFilled " +
			"takerFee makerRebate referrerReward quoteAssetAmountSurplus takerOrderBaseAssetAmount " +
			"takerOrderCumulativeBaseAssetAmountFilled takerOrderCumulativeQuoteAssetAmountFilled makerOrderBaseAssetAmount " +
			"makerOrderCumulativeBaseAssetAmountFilled makerOrderCumulativeQuoteAssetAmountFilled oraclePrice makerFee " +
			"action actionExplanation marketIndex marketType filler fillRecordId taker takerOrderId takerOrderDirection " +
			"maker makerOrderId makerOrderDirection spotFulfillmentMethodFee marketFilter user symbol"},
		{events.TopicOrders, newOrder(), "ts txSig txSigIndex slot user status orderType marketType marketFilter orderId " +
			"userOrderId marketIndex price baseAssetAmount quoteAssetAmount baseAssetAmountFilled quoteAssetAmountFilled " +
			"direction reduceOnly triggerPrice triggerCondition existingPositionDirection postOnly immediateOrCancel " +
			"oraclePriceOffset auctionDuration auctionStartPrice auctionEndPrice maxTs symbol lastUpdatedTs " +
			"lastActionStatus lastActionExplanation cumulativeFee"},
		{events.TopicFundingRates, newFundingRate(), "ts txSig txSigIndex slot marketIndex recordId symbol fundingRate " +
			"fundingRateLong fundingRateShort cumulativeFundingRateLong cumulativeFundingRateShort oraclePriceTwap " +
			"markPriceTwap periodRevenue baseAssetAmountWithAmm baseAssetAmountWithUnsettledLp"},
		{events.TopicFundingPayments, newFundingPayment(), "ts txSig txSigIndex slot userAuthority user marketIndex " +
			"fundingPayment baseAssetAmount userLastCumulativeFunding ammCumulativeFundingLong ammCumulativeFundingShort"},
		{events.TopicLiquidations, newLiquidation(), strings.Join(liquidationFields, " ")},
		{events.TopicDeposits, newDeposit(), "ts txSig txSigIndex slot amount oraclePrice marketDepositBalance " +
			"marketWithdrawBalance marketCumulativeDepositInterest marketCumulativeBorrowInterest totalDepositsAfter " +
			"totalWithdrawsAfter depositRecordId userAuthority user direction explanation marketIndex symbol"},
		{events.TopicSwaps, newSwap(), "ts txSig txSigIndex slot user outMarketIndex inMarketIndex amountOut amountIn " +
			"outOraclePrice inOraclePrice fee inSymbol outSymbol"},
		{events.TopicSettlePnl, newSettlePnl(), "ts txSig txSigIndex slot user marketIndex pnl baseAssetAmount " +
			"quoteAssetAmountAfter quoteEntryAmount settlePrice explanation"},
		{events.TopicLP, newPerpLP(), "ts txSig txSigIndex slot user action marketIndex nShares deltaBaseAssetAmount " +
			"deltaQuoteAssetAmount pnl"},
		{events.TopicInsuranceFund, newInsuranceFund(), "ts txSig txSigIndex slot spotMarketIndex perpMarketIndex " +
			"userIfFactor totalIfFactor symbol vaultAmountBefore insuranceVaultAmountBefore totalIfSharesBefore " +
			"totalIfSharesAfter amount"},
		{events.TopicIFStakes, newIFStake(), "ts txSig txSigIndex slot marketIndex amount userAuthority action " +
			"ifSharesBefore userIfSharesBefore totalIfSharesBefore ifSharesAfter userIfSharesAfter totalIfSharesAfter " +
			"insuranceVaultAmountBefore symbol"},
		{events.TopicLPMintRedeem, newLPMintRedeem(), "ts txSig txSigIndex slot spotMarketIndex constituentIndex " +
			"lastAumSlot description authority amount fee oraclePrice mint lpAmount lpFee lpPrice mintRedeemId lastAum " +
			"inMarketCurrentWeight inMarketTargetWeight lpPool"},
		{events.TopicNewUsers, newNewUser(), "ts txSig txSigIndex slot userAuthority user subAccountId name referrer delegate " +
			"builderRevenueShareAccount revenueShareEscrow"},
		{events.TopicMarketStates, newMarketState(), "ts slot marketIndex marketType symbol oraclePrice markPrice bidPrice " +
			"askPrice longSpread shortSpread baseAssetAmountWithAmm baseAssetAmountLong baseAssetAmountShort openInterest " +
			"fundingRateLong fundingRateShort"},
		{events.TopicAccountSnapshots, newTradingSnapshot(), "kind authority accountId ts trading"},
		{events.TopicVaults, newVault(), "ts slot vault name manager spotMarketIndex symbol totalShares totalDeposits " +
			"totalWithdraws netDeposits totalAccountValue managementFee profitShare permissioned"},
		{events.TopicParams, newParams(), "ts params"},
	}
}

func newFill() *events.Fill {
	return &events.Fill{
		Tx:           events.Tx{Ts: testTs, TxSig: testSig, TxSigIndex: 2, Slot: 310_000_000},
		FillerReward: "0", BaseAssetAmountFilled: "1000000000", QuoteAssetAmountFilled: "150250000",
		TakerFee: "52587", MakerRebate: "3005", ReferrerReward: "0", QuoteAssetAmountSurplus: "0",
		TakerOrderBaseAssetAmount: "1000000000", TakerOrderCumulativeBaseAssetAmountFilled: "1000000000",
		TakerOrderCumulativeQuoteAssetAmountFilled: "150250000", MakerOrderBaseAssetAmount: "5000000000",
		MakerOrderCumulativeBaseAssetAmountFilled: "1000000000", MakerOrderCumulativeQuoteAssetAmountFilled: "150250000",
		OraclePrice: "150200000", MakerFee: "-3005", Action: events.ActionFill,
		ActionExplanation: events.ExplanationOrderFilledWithMatch, MarketIndex: 0, MarketType: events.MarketTypePerp,
		Filler: testAuth, FillRecordID: "123456", Taker: testUser, TakerOrderID: "77", TakerOrderDirection: "long",
		Maker: testMaker, MakerOrderID: "9001", MakerOrderDirection: "short", SpotFulfillmentMethodFee: "0",
		TakerExistingQuoteEntryAmount: "-100000000", TakerExistingBaseAssetAmount: "-1000000000",
		MakerExistingQuoteEntryAmount: "0", MakerExistingBaseAssetAmount: "0", BitFlags: 1,
		MarketFilter: "perp", User: testUser, Symbol: "SOL-PERP",
	}
}

func newPlace() *events.OrderAction {
	return &events.OrderAction{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, TxSigIndex: 1, Slot: 310_000_000}, Action: events.ActionPlace,
		ActionExplanation: events.ExplanationNone, MarketIndex: 3, MarketType: events.MarketTypePerp,
		Taker: testUser, TakerOrderID: "78", TakerOrderDirection: "short", TakerOrderBaseAssetAmount: "2000000000",
		TakerOrderCumulativeBaseAssetAmountFilled: "0", TakerOrderCumulativeQuoteAssetAmountFilled: "0",
		OraclePrice: "420000", MarketFilter: "prediction", User: testUser, Symbol: "TRUMP-WIN-2028-BET",
	}
}

func newOrder() *events.Order {
	return &events.Order{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, User: testUser, Status: events.OrderStatusFilled,
		OrderType: events.OrderTypeMarket, MarketType: events.MarketTypePerp, MarketFilter: "perp", OrderID: "77",
		UserOrderID: 3, MarketIndex: 1, Price: "0", BaseAssetAmount: "10000000", QuoteAssetAmount: "0",
		BaseAssetAmountFilled: "10000000", QuoteAssetAmountFilled: "600000000", Direction: "long",
		TriggerPrice: "0", TriggerCondition: events.TriggerAbove, ExistingPositionDirection: "long",
		OraclePriceOffset: "-5000", AuctionDuration: 10, AuctionStartPrice: "59900000000",
		AuctionEndPrice: "60100000000", MaxTs: testTs + 30, Symbol: "BTC-PERP", LastUpdatedTs: testTs + 1,
		LastActionStatus: events.LastActionFilled, LastActionExplanation: events.ExplanationOrderFilledWithAmm,
		CumulativeFee: "210000",
	}
}

func newFundingRate() *events.FundingRate {
	return &events.FundingRate{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, MarketIndex: 2, RecordID: "42", Symbol: "ETH-PERP",
		FundingRate: "125000", FundingRateLong: "125000", FundingRateShort: "120000",
		CumulativeFundingRateLong: "98765432100", CumulativeFundingRateShort: "-98765432100",
		OraclePriceTwap: "3000000000", MarkPriceTwap: "3003000000", PeriodRevenue: "-1500000",
		BaseAssetAmountWithAmm: "-12000000000", BaseAssetAmountWithUnsettledLp: "0",
	}
}

func newFundingPayment() *events.FundingPayment {
	return &events.FundingPayment{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, UserAuthority: testAuth, User: testUser, MarketIndex: 0,
		FundingPayment: "-625", BaseAssetAmount: "1000000000", UserLastCumulativeFunding: "1000",
		AmmCumulativeFundingLong: "626000", AmmCumulativeFundingShort: "626000",
	}
}

func newLiquidation() *events.Liquidation {
	return &events.Liquidation{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, LiquidationType: events.LiquidationTypePerp, User: testUser,
		Liquidator: testMaker, MarginRequirement: "1000000000", TotalCollateral: "900000000", MarginFreed: "100000000",
		LiquidationID: 7, Bankrupt: false, CanceledOrderIDs: []string{"12", "13"},
		LiquidatePerpMarketIndex: ptr(0), LiquidatePerpOraclePrice: "150000000",
		LiquidatePerpBaseAssetAmount: "-15740000000", LiquidatePerpQuoteAssetAmount: "1803723301",
		LiquidatePerpLpShares: "0", LiquidatePerpFillRecordID: "123457", LiquidatePerpUserOrderID: "12",
		LiquidatePerpLiquidatorOrderID: "0", LiquidatePerpLiquidatorFee: "9000000", LiquidatePerpIfFee: "900000",
	}
}

func newDeposit() *events.Deposit {
	return &events.Deposit{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, Amount: "500000000", OraclePrice: "1000000",
		MarketDepositBalance: "1000000000000000", MarketWithdrawBalance: "400000000000000",
		MarketCumulativeDepositInterest: "11000000000", MarketCumulativeBorrowInterest: "12000000000",
		TotalDepositsAfter: "1500000000", TotalWithdrawsAfter: "0", DepositRecordID: "5", UserAuthority: testAuth,
		User: testUser, Direction: events.DepositDirectionDeposit, Explanation: events.DepositExplanationNone,
		MarketIndex: 0, Symbol: "USDC",
	}
}

func newSwap() *events.Swap {
	return &events.Swap{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, User: testUser, OutMarketIndex: 1, InMarketIndex: 0,
		AmountOut: "1000000000", AmountIn: "150300000", OutOraclePrice: "150000000", InOraclePrice: "1000000",
		Fee: "100000", InSymbol: "USDC", OutSymbol: "SOL",
	}
}

func newSettlePnl() *events.SettlePnl {
	return &events.SettlePnl{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, User: testUser, MarketIndex: 0, Pnl: "-12345678",
		BaseAssetAmount: "1000000000", QuoteAssetAmountAfter: "-150000000", QuoteEntryAmount: "-150000000",
		SettlePrice: "149000000", Explanation: events.SettlePnlExplanationNone,
	}
}

func newPerpLP() *events.PerpLP {
	return &events.PerpLP{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, User: testUser, Action: events.LPActionAddLiquidity,
		MarketIndex: 0, NShares: "100000000000", DeltaBaseAssetAmount: "0", DeltaQuoteAssetAmount: "0", Pnl: "0",
	}
}

func newInsuranceFund() *events.InsuranceFund {
	return &events.InsuranceFund{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, SpotMarketIndex: 0, PerpMarketIndex: 0, UserIfFactor: 10000,
		TotalIfFactor: 100000, Symbol: "USDC", VaultAmountBefore: "5000000000000",
		InsuranceVaultAmountBefore: "20000000000000", TotalIfSharesBefore: "19000000000000",
		TotalIfSharesAfter: "19000000000000", Amount: "1200000000",
	}
}

func newIFStake() *events.IFStake {
	return &events.IFStake{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, MarketIndex: 0, Amount: "100000000", UserAuthority: testAuth,
		Action: events.IFStakeActionStake, IfSharesBefore: "0", UserIfSharesBefore: "1000000000",
		TotalIfSharesBefore: "2000000000", IfSharesAfter: "95000000", UserIfSharesAfter: "1095000000",
		TotalIfSharesAfter: "2095000000", InsuranceVaultAmountBefore: "2100000000", Symbol: "USDC",
	}
}

func newLPMintRedeem() *events.LPMintRedeem {
	return &events.LPMintRedeem{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, SpotMarketIndex: 1, ConstituentIndex: 1,
		LastAumSlot: 309_999_990, Description: events.LPDescriptionMint, Authority: testAuth, Amount: "1000000000",
		Fee: "-10000", OraclePrice: "150000000", Mint: "So11111111111111111111111111111111111111112",
		LpAmount: "148000000", LpFee: "0", LpPrice: "1013000", MintRedeemID: "33", LastAum: "25000000000000",
		InMarketCurrentWeight: "410000", InMarketTargetWeight: "400000", LpPool: testMaker,
	}
}

func newNewUser() *events.NewUser {
	return &events.NewUser{
		Tx: events.Tx{Ts: testTs, TxSig: testSig, Slot: 310_000_000}, UserAuthority: testAuth, User: testUser, SubAccountID: 1,
		Name: "Subaccount 1", Referrer: testMaker, Delegate: testMaker,
		BuilderRevenueShareAccount: &events.BuilderAccount{AccountID: testMaker, TotalBuilderRewards: "1250000"},
		RevenueShareEscrow: &events.RevenueShareEscrow{AccountID: testUser,
			ApprovedBuilders: []events.ApprovedBuilder{{Authority: testMaker, MaxFeeTenthBps: 50}}},
	}
}

func newMarketState() *events.MarketState {
	return &events.MarketState{
		Ts: testTs, Slot: 310_000_000, MarketIndex: 0, MarketType: events.MarketTypePerp, Symbol: "SOL-PERP",
		OraclePrice: "150000000", MarkPrice: "150015000", BidPrice: "149990000", AskPrice: "150040000",
		LongSpread: "250", ShortSpread: "300", BaseAssetAmountWithAmm: "-1200000000000",
		BaseAssetAmountLong: "500000000000000", BaseAssetAmountShort: "-498800000000000",
		OpenInterest: "998800000000000", FundingRateLong: "625000", FundingRateShort: "625000",
	}
}

func newTradingSnapshot() *events.AccountSnapshot {
	return &events.AccountSnapshot{
		Kind: events.SnapshotTrading, Authority: testAuth, AccountID: testUser, Ts: testTs,
		Trading: &events.TradingSnapshot{
			AccountBalance: "1000000000", UnrealizedPnl: "-5000000", CumulativeRealizedPnl: "12000000",
			UnsettledPnl: "0", CumulativeSettledPnl: "12000000", CumulativeFunding: "-300000",
			CumulativeFeePaid: "1500000", CumulativeFeeRebate: "0", CumulativeTakerVolume: "4000000000",
			CumulativeMakerVolume: "0",
		},
	}
}

func newVault() *events.Vault {
	return &events.Vault{
		Ts: testTs, Slot: 310_000_000, Vault: testMaker, Name: "Supercharger", Manager: testAuth,
		SpotMarketIndex: 0, Symbol: "USDC", TotalShares: "1000000000000", TotalDeposits: "1200000000000",
		TotalWithdraws: "200000000000", NetDeposits: "1000000000000", TotalAccountValue: "1100000000000",
		ManagementFee: "20000", ProfitShare: "200000", Permissioned: false,
	}
}

func newParams() *events.Params {
	return &events.Params{Ts: testTs, Params: json.RawMessage(`{"maintenance":false}`)}
}

func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestJSONRoundTripUsesAPIFieldNames(t *testing.T) {
	for _, s := range samples() {
		t.Run(s.topic, func(t *testing.T) {
			msg, err := events.Encode(s.topic, s.rec)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			want := strings.Fields(s.golden)
			slices.Sort(want)
			if got := jsonKeys(t, msg.Value); !slices.Equal(got, want) {
				t.Errorf("JSON fields\n got  %v\n want %v", got, want)
			}
			back, err := events.Decode(s.topic, msg.Value)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(msg.Value) {
				t.Errorf("round trip changed the record\n got  %s\n want %s", again, msg.Value)
			}
		})
	}
}

func TestEveryProtocolTopicHasASample(t *testing.T) {
	have := map[string]bool{}
	for _, s := range samples() {
		have[s.topic] = true
	}
	for _, name := range events.ProtocolTopics() {
		if !have[name] {
			t.Errorf("no sample for %s", name)
		}
	}
}

func TestSnapshotKindsRoundTrip(t *testing.T) {
	snaps := map[string]*events.AccountSnapshot{
		"earn": {Kind: events.SnapshotEarn, Authority: testAuth, AccountID: testUser, Ts: testTs,
			Earn: &events.EarnSnapshot{Assets: []events.EarnAsset{{MarketIndex: 1, Balance: "1", Deposits: "2",
				Withdrawals: "0", Pnl: "0", InterestBaseValue: "0", InterestQuoteValue: "0", OraclePrice: "150000000",
				Rewards: "5"}}}},
		"vault": {Kind: events.SnapshotVault, Authority: testAuth, AccountID: testUser, Ts: testTs,
			Vault: &events.VaultSnapshot{Vault: testMaker, TotalAccountValue: "10", TotalAccountBaseValue: "10",
				MarketIndex: 0, NetDeposits: "9"}},
		"referral": {Kind: events.SnapshotReferral, Authority: testAuth, Ts: testTs,
			Referral: &events.ReferralSnapshot{ReferralRewards: "100", ReferralCount: "2",
				ReferredUsers: []string{testUser}, ReferredVolume30D: "100000000"}},
	}
	wantKeys := map[string]string{
		"earn":     "marketIndex balance deposits withdrawals pnl interestBaseValue interestQuoteValue oraclePrice rewards",
		"vault":    "vault totalAccountValue totalAccountBaseValue marketIndex netDeposits",
		"referral": "referralRewards referralCount referredUsers referredVolume30D",
	}
	for kind, snap := range snaps {
		t.Run(kind, func(t *testing.T) {
			msg, err := events.Encode(events.TopicAccountSnapshots, snap)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(msg.Key) != testAuth {
				t.Errorf("key %q, want the authority", msg.Key)
			}
			var outer map[string]json.RawMessage
			if err := json.Unmarshal(msg.Value, &outer); err != nil {
				t.Fatal(err)
			}
			inner := outer[kind]
			if kind == "earn" {
				var e struct{ Assets []json.RawMessage }
				if err := json.Unmarshal(inner, &e); err != nil || len(e.Assets) != 1 {
					t.Fatalf("assets: %v %s", err, inner)
				}
				inner = e.Assets[0]
			}
			want := strings.Fields(wantKeys[kind])
			slices.Sort(want)
			if got := jsonKeys(t, inner); !slices.Equal(got, want) {
				t.Errorf("fields %v, want %v", got, want)
			}
			if _, err := events.Decode(events.TopicAccountSnapshots, msg.Value); err != nil {
				t.Errorf("Decode: %v", err)
			}
		})
	}
}
