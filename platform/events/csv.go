package events

import (
	"strconv"
	"strings"
)

// CSVRecord is a record with a fixed CSV layout. CSVHeader returns a fresh slice on every call; CSVRow
// returns the values in the same order. Both work on a nil receiver's zero value, so
// (*Fill)(nil).CSVHeader() gives the header without a record at hand.
//
// Column order: ts, txSig, txSigIndex, slot, then the record's fields in the order the reference
// (fills, deposits, swaps, ...) or the spec (funding rates, IF stakes, IF records, LP mint/redeem)
// lists them. Fills: ts,txSig,txSigIndex,slot,fillerReward,baseAssetAmountFilled,
// quoteAssetAmountFilled,takerFee,makerRebate,referrerReward,quoteAssetAmountSurplus,
// takerOrderBaseAssetAmount,takerOrderCumulativeBaseAssetAmountFilled,
// takerOrderCumulativeQuoteAssetAmountFilled,makerOrderBaseAssetAmount,
// makerOrderCumulativeBaseAssetAmountFilled,makerOrderCumulativeQuoteAssetAmountFilled,oraclePrice,
// makerFee,action,actionExplanation,marketIndex,marketType,filler,fillRecordId,taker,takerOrderId,
// takerOrderDirection,maker,makerOrderId,makerOrderDirection,spotFulfillmentMethodFee,
// takerExistingQuoteEntryAmount,takerExistingBaseAssetAmount,makerExistingQuoteEntryAmount,
// makerExistingBaseAssetAmount,marketFilter,user,symbol (bitFlags is internal and never exported).
// Absent optional values are empty cells.
type CSVRecord interface {
	CSVHeader() []string
	CSVRow() []string
}

type column struct{ name, value string }

func csvHeader(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

func csvRow(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.value
	}
	return out
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }
func itoa(v int) string  { return strconv.Itoa(v) }

// txColumns are the first four columns of every transaction-borne record.
func txColumns(t Tx) []column {
	return []column{{"ts", i64(t.Ts)}, {"txSig", t.TxSig}, {"txSigIndex", itoa(t.TxSigIndex)}, {"slot", i64(t.Slot)}}
}

func (r *Fill) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *Fill) CSVRow() []string    { return csvRow(r.columns()) }
func (r *Fill) columns() []column {
	if r == nil {
		r = &Fill{}
	}
	return append(txColumns(r.Tx),
		column{"fillerReward", string(r.FillerReward)},
		column{"baseAssetAmountFilled", string(r.BaseAssetAmountFilled)},
		column{"quoteAssetAmountFilled", string(r.QuoteAssetAmountFilled)},
		column{"takerFee", string(r.TakerFee)},
		column{"makerRebate", string(r.MakerRebate)},
		column{"referrerReward", string(r.ReferrerReward)},
		column{"quoteAssetAmountSurplus", string(r.QuoteAssetAmountSurplus)},
		column{"takerOrderBaseAssetAmount", string(r.TakerOrderBaseAssetAmount)},
		column{"takerOrderCumulativeBaseAssetAmountFilled", string(r.TakerOrderCumulativeBaseAssetAmountFilled)},
		column{"takerOrderCumulativeQuoteAssetAmountFilled", string(r.TakerOrderCumulativeQuoteAssetAmountFilled)},
		column{"makerOrderBaseAssetAmount", string(r.MakerOrderBaseAssetAmount)},
		column{"makerOrderCumulativeBaseAssetAmountFilled", string(r.MakerOrderCumulativeBaseAssetAmountFilled)},
		column{"makerOrderCumulativeQuoteAssetAmountFilled", string(r.MakerOrderCumulativeQuoteAssetAmountFilled)},
		column{"oraclePrice", string(r.OraclePrice)},
		column{"makerFee", string(r.MakerFee)},
		column{"action", r.Action},
		column{"actionExplanation", r.ActionExplanation},
		column{"marketIndex", itoa(r.MarketIndex)},
		column{"marketType", string(r.MarketType)},
		column{"filler", r.Filler},
		column{"fillRecordId", r.FillRecordID},
		column{"taker", r.Taker},
		column{"takerOrderId", r.TakerOrderID},
		column{"takerOrderDirection", r.TakerOrderDirection},
		column{"maker", r.Maker},
		column{"makerOrderId", r.MakerOrderID},
		column{"makerOrderDirection", r.MakerOrderDirection},
		column{"spotFulfillmentMethodFee", string(r.SpotFulfillmentMethodFee)},
		column{"takerExistingQuoteEntryAmount", string(r.TakerExistingQuoteEntryAmount)},
		column{"takerExistingBaseAssetAmount", string(r.TakerExistingBaseAssetAmount)},
		column{"makerExistingQuoteEntryAmount", string(r.MakerExistingQuoteEntryAmount)},
		column{"makerExistingBaseAssetAmount", string(r.MakerExistingBaseAssetAmount)},
		column{"marketFilter", r.MarketFilter},
		column{"user", r.User},
		column{"symbol", r.Symbol},
	)
}

func (r *FundingRate) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *FundingRate) CSVRow() []string    { return csvRow(r.columns()) }
func (r *FundingRate) columns() []column {
	if r == nil {
		r = &FundingRate{}
	}
	return append(txColumns(r.Tx),
		column{"marketIndex", itoa(r.MarketIndex)},
		column{"recordId", r.RecordID},
		column{"symbol", r.Symbol},
		column{"fundingRate", string(r.FundingRate)},
		column{"fundingRateLong", string(r.FundingRateLong)},
		column{"fundingRateShort", string(r.FundingRateShort)},
		column{"cumulativeFundingRateLong", string(r.CumulativeFundingRateLong)},
		column{"cumulativeFundingRateShort", string(r.CumulativeFundingRateShort)},
		column{"oraclePriceTwap", string(r.OraclePriceTwap)},
		column{"markPriceTwap", string(r.MarkPriceTwap)},
		column{"periodRevenue", string(r.PeriodRevenue)},
		column{"baseAssetAmountWithAmm", string(r.BaseAssetAmountWithAmm)},
		column{"baseAssetAmountWithUnsettledLp", string(r.BaseAssetAmountWithUnsettledLp)},
	)
}

func (r *FundingPayment) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *FundingPayment) CSVRow() []string    { return csvRow(r.columns()) }
func (r *FundingPayment) columns() []column {
	if r == nil {
		r = &FundingPayment{}
	}
	return append(txColumns(r.Tx),
		column{"userAuthority", r.UserAuthority},
		column{"user", r.User},
		column{"marketIndex", itoa(r.MarketIndex)},
		column{"fundingPayment", string(r.FundingPayment)},
		column{"baseAssetAmount", string(r.BaseAssetAmount)},
		column{"userLastCumulativeFunding", string(r.UserLastCumulativeFunding)},
		column{"ammCumulativeFundingLong", string(r.AmmCumulativeFundingLong)},
		column{"ammCumulativeFundingShort", string(r.AmmCumulativeFundingShort)},
	)
}

func (r *Deposit) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *Deposit) CSVRow() []string    { return csvRow(r.columns()) }
func (r *Deposit) columns() []column {
	if r == nil {
		r = &Deposit{}
	}
	return append(txColumns(r.Tx),
		column{"amount", string(r.Amount)},
		column{"oraclePrice", string(r.OraclePrice)},
		column{"marketDepositBalance", string(r.MarketDepositBalance)},
		column{"marketWithdrawBalance", string(r.MarketWithdrawBalance)},
		column{"marketCumulativeDepositInterest", string(r.MarketCumulativeDepositInterest)},
		column{"marketCumulativeBorrowInterest", string(r.MarketCumulativeBorrowInterest)},
		column{"totalDepositsAfter", string(r.TotalDepositsAfter)},
		column{"totalWithdrawsAfter", string(r.TotalWithdrawsAfter)},
		column{"depositRecordId", r.DepositRecordID},
		column{"userAuthority", r.UserAuthority},
		column{"user", r.User},
		column{"direction", r.Direction},
		column{"explanation", r.Explanation},
		column{"marketIndex", itoa(r.MarketIndex)},
		column{"symbol", r.Symbol},
	)
}

func (r *Swap) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *Swap) CSVRow() []string    { return csvRow(r.columns()) }
func (r *Swap) columns() []column {
	if r == nil {
		r = &Swap{}
	}
	return append(txColumns(r.Tx),
		column{"user", r.User},
		column{"outMarketIndex", itoa(r.OutMarketIndex)},
		column{"inMarketIndex", itoa(r.InMarketIndex)},
		column{"amountOut", string(r.AmountOut)},
		column{"amountIn", string(r.AmountIn)},
		column{"outOraclePrice", string(r.OutOraclePrice)},
		column{"inOraclePrice", string(r.InOraclePrice)},
		column{"fee", string(r.Fee)},
		column{"inSymbol", r.InSymbol},
		column{"outSymbol", r.OutSymbol},
	)
}

func (r *SettlePnl) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *SettlePnl) CSVRow() []string    { return csvRow(r.columns()) }
func (r *SettlePnl) columns() []column {
	if r == nil {
		r = &SettlePnl{}
	}
	return append(txColumns(r.Tx),
		column{"pnl", string(r.Pnl)},
		column{"user", r.User},
		column{"baseAssetAmount", string(r.BaseAssetAmount)},
		column{"quoteAssetAmountAfter", string(r.QuoteAssetAmountAfter)},
		column{"quoteEntryAmount", string(r.QuoteEntryAmount)},
		column{"settlePrice", string(r.SettlePrice)},
		column{"marketIndex", itoa(r.MarketIndex)},
		column{"explanation", r.Explanation},
	)
}

func (r *Liquidation) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *Liquidation) CSVRow() []string    { return csvRow(r.columns()) }

// columns lists canceledOrderIds as one cell of comma-separated ids, then bitFlags, then every field
// of every sub-record as the JSON carries them (zeros for the sub-records of other types, an empty
// cell for a clawback user that is none).
func (r *Liquidation) columns() []column {
	var c Liquidation
	if r != nil {
		c = *r
	}
	c.complete()
	cols := append(txColumns(c.Tx),
		column{"liquidationType", c.LiquidationType},
		column{"user", c.User},
		column{"liquidator", c.Liquidator},
		column{"marginRequirement", string(c.MarginRequirement)},
		column{"totalCollateral", string(c.TotalCollateral)},
		column{"marginFreed", string(c.MarginFreed)},
		column{"liquidationId", itoa(c.LiquidationID)},
		column{"bankrupt", strconv.FormatBool(c.Bankrupt)},
		column{"canceledOrderIds", strings.Join(c.CanceledOrderIDs, ",")},
		column{"bitFlags", itoa(c.BitFlags)},
	)
	for _, sub := range c.subRecords() {
		for _, f := range sub.fields {
			cols = append(cols, column{f.name, f.cell()})
		}
	}
	return cols
}

func (r *InsuranceFund) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *InsuranceFund) CSVRow() []string    { return csvRow(r.columns()) }
func (r *InsuranceFund) columns() []column {
	if r == nil {
		r = &InsuranceFund{}
	}
	return append(txColumns(r.Tx),
		column{"spotMarketIndex", itoa(r.SpotMarketIndex)},
		column{"perpMarketIndex", itoa(r.PerpMarketIndex)},
		column{"userIfFactor", strconv.FormatFloat(r.UserIfFactor, 'f', -1, 64)},
		column{"totalIfFactor", strconv.FormatFloat(r.TotalIfFactor, 'f', -1, 64)},
		column{"symbol", r.Symbol},
		column{"vaultAmountBefore", string(r.VaultAmountBefore)},
		column{"insuranceVaultAmountBefore", string(r.InsuranceVaultAmountBefore)},
		column{"totalIfSharesBefore", string(r.TotalIfSharesBefore)},
		column{"totalIfSharesAfter", string(r.TotalIfSharesAfter)},
		column{"amount", string(r.Amount)},
	)
}

func (r *IFStake) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *IFStake) CSVRow() []string    { return csvRow(r.columns()) }
func (r *IFStake) columns() []column {
	if r == nil {
		r = &IFStake{}
	}
	return append(txColumns(r.Tx),
		column{"marketIndex", itoa(r.MarketIndex)},
		column{"amount", string(r.Amount)},
		column{"userAuthority", r.UserAuthority},
		column{"action", r.Action},
		column{"ifSharesBefore", string(r.IfSharesBefore)},
		column{"userIfSharesBefore", string(r.UserIfSharesBefore)},
		column{"totalIfSharesBefore", string(r.TotalIfSharesBefore)},
		column{"ifSharesAfter", string(r.IfSharesAfter)},
		column{"userIfSharesAfter", string(r.UserIfSharesAfter)},
		column{"totalIfSharesAfter", string(r.TotalIfSharesAfter)},
		column{"insuranceVaultAmountBefore", string(r.InsuranceVaultAmountBefore)},
		column{"symbol", r.Symbol},
	)
}

func (r *LPMintRedeem) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *LPMintRedeem) CSVRow() []string    { return csvRow(r.columns()) }
func (r *LPMintRedeem) columns() []column {
	if r == nil {
		r = &LPMintRedeem{}
	}
	return append(txColumns(r.Tx),
		column{"spotMarketIndex", itoa(r.SpotMarketIndex)},
		column{"constituentIndex", itoa(r.ConstituentIndex)},
		column{"lastAumSlot", i64(r.LastAumSlot)},
		column{"description", itoa(r.Description)},
		column{"authority", r.Authority},
		column{"amount", string(r.Amount)},
		column{"fee", string(r.Fee)},
		column{"oraclePrice", string(r.OraclePrice)},
		column{"mint", r.Mint},
		column{"lpAmount", string(r.LpAmount)},
		column{"lpFee", string(r.LpFee)},
		column{"lpPrice", string(r.LpPrice)},
		column{"mintRedeemId", r.MintRedeemID},
		column{"lastAum", string(r.LastAum)},
		column{"inMarketCurrentWeight", string(r.InMarketCurrentWeight)},
		column{"inMarketTargetWeight", string(r.InMarketTargetWeight)},
		column{"lpPool", r.LpPool},
	)
}

func (r *PerpLP) CSVHeader() []string { return csvHeader(r.columns()) }
func (r *PerpLP) CSVRow() []string    { return csvRow(r.columns()) }
func (r *PerpLP) columns() []column {
	if r == nil {
		r = &PerpLP{}
	}
	return append(txColumns(r.Tx),
		column{"user", r.User},
		column{"action", r.Action},
		column{"marketIndex", itoa(r.MarketIndex)},
		column{"nShares", string(r.NShares)},
		column{"deltaBaseAssetAmount", string(r.DeltaBaseAssetAmount)},
		column{"deltaQuoteAssetAmount", string(r.DeltaQuoteAssetAmount)},
		column{"pnl", string(r.Pnl)},
	)
}
