package events

import "time"

// Liquidation types.
const (
	LiquidationTypePerp              = "liquidatePerp"
	LiquidationTypeSpot              = "liquidateSpot"
	LiquidationTypeBorrowForPerpPnl  = "liquidateBorrowForPerpPnl"
	LiquidationTypePerpPnlForDeposit = "liquidatePerpPnlForDeposit"
	LiquidationTypePerpBankruptcy    = "perpBankruptcy"
	LiquidationTypeSpotBankruptcy    = "spotBankruptcy"
)

// Liquidation is a liquidation record (protocol.liquidations), flat as the API emits it: the fields of
// the sub-record that matches liquidationType carry its name as a prefix ("liquidatePerp_marketIndex"),
// the other sub-records' fields are absent. Margin figures quote 1e6, prices 1e6, perp base 1e9, spot
// transfers in the token precision, lpShares 1e9. Market indexes are pointers because 0 is a market.
type Liquidation struct {
	Ts                int64    `json:"ts"`
	TxSig             string   `json:"txSig"`
	TxSigIndex        int      `json:"txSigIndex"`
	Slot              int64    `json:"slot"`
	LiquidationType   string   `json:"liquidationType"`
	User              string   `json:"user"`
	Liquidator        string   `json:"liquidator"`
	MarginRequirement Amount   `json:"marginRequirement"`
	TotalCollateral   Amount   `json:"totalCollateral"`
	MarginFreed       Amount   `json:"marginFreed"`
	LiquidationID     int      `json:"liquidationId"`
	Bankrupt          bool     `json:"bankrupt"`
	CanceledOrderIDs  []string `json:"canceledOrderIds"`
	BitFlags          int      `json:"bitFlags,omitempty"`

	LiquidatePerpMarketIndex       *int   `json:"liquidatePerp_marketIndex,omitempty"`
	LiquidatePerpOraclePrice       Amount `json:"liquidatePerp_oraclePrice,omitempty"`
	LiquidatePerpBaseAssetAmount   Amount `json:"liquidatePerp_baseAssetAmount,omitempty"`
	LiquidatePerpQuoteAssetAmount  Amount `json:"liquidatePerp_quoteAssetAmount,omitempty"`
	LiquidatePerpLpShares          Amount `json:"liquidatePerp_lpShares,omitempty"`
	LiquidatePerpFillRecordID      string `json:"liquidatePerp_fillRecordId,omitempty"`
	LiquidatePerpUserOrderID       string `json:"liquidatePerp_userOrderId,omitempty"`
	LiquidatePerpLiquidatorOrderID string `json:"liquidatePerp_liquidatorOrderId,omitempty"`
	LiquidatePerpLiquidatorFee     Amount `json:"liquidatePerp_liquidatorFee,omitempty"`
	LiquidatePerpIfFee             Amount `json:"liquidatePerp_ifFee,omitempty"`

	LiquidateSpotAssetMarketIndex     *int   `json:"liquidateSpot_assetMarketIndex,omitempty"`
	LiquidateSpotAssetPrice           Amount `json:"liquidateSpot_assetPrice,omitempty"`
	LiquidateSpotAssetTransfer        Amount `json:"liquidateSpot_assetTransfer,omitempty"`
	LiquidateSpotLiabilityMarketIndex *int   `json:"liquidateSpot_liabilityMarketIndex,omitempty"`
	LiquidateSpotLiabilityPrice       Amount `json:"liquidateSpot_liabilityPrice,omitempty"`
	LiquidateSpotLiabilityTransfer    Amount `json:"liquidateSpot_liabilityTransfer,omitempty"`
	LiquidateSpotIfFee                Amount `json:"liquidateSpot_ifFee,omitempty"`

	LiquidateBorrowForPerpPnlPerpMarketIndex      *int   `json:"liquidateBorrowForPerpPnl_perpMarketIndex,omitempty"`
	LiquidateBorrowForPerpPnlMarketOraclePrice    Amount `json:"liquidateBorrowForPerpPnl_marketOraclePrice,omitempty"`
	LiquidateBorrowForPerpPnlPnlTransfer          Amount `json:"liquidateBorrowForPerpPnl_pnlTransfer,omitempty"`
	LiquidateBorrowForPerpPnlLiabilityMarketIndex *int   `json:"liquidateBorrowForPerpPnl_liabilityMarketIndex,omitempty"`
	LiquidateBorrowForPerpPnlLiabilityPrice       Amount `json:"liquidateBorrowForPerpPnl_liabilityPrice,omitempty"`
	LiquidateBorrowForPerpPnlLiabilityTransfer    Amount `json:"liquidateBorrowForPerpPnl_liabilityTransfer,omitempty"`

	LiquidatePerpPnlForDepositPerpMarketIndex   *int   `json:"liquidatePerpPnlForDeposit_perpMarketIndex,omitempty"`
	LiquidatePerpPnlForDepositMarketOraclePrice Amount `json:"liquidatePerpPnlForDeposit_marketOraclePrice,omitempty"`
	LiquidatePerpPnlForDepositPnlTransfer       Amount `json:"liquidatePerpPnlForDeposit_pnlTransfer,omitempty"`
	LiquidatePerpPnlForDepositAssetMarketIndex  *int   `json:"liquidatePerpPnlForDeposit_assetMarketIndex,omitempty"`
	LiquidatePerpPnlForDepositAssetPrice        Amount `json:"liquidatePerpPnlForDeposit_assetPrice,omitempty"`
	LiquidatePerpPnlForDepositAssetTransfer     Amount `json:"liquidatePerpPnlForDeposit_assetTransfer,omitempty"`

	PerpBankruptcyMarketIndex                *int   `json:"perpBankruptcy_marketIndex,omitempty"`
	PerpBankruptcyPnl                        Amount `json:"perpBankruptcy_pnl,omitempty"`
	PerpBankruptcyIfPayment                  Amount `json:"perpBankruptcy_ifPayment,omitempty"`
	PerpBankruptcyClawbackUser               string `json:"perpBankruptcy_clawbackUser,omitempty"`
	PerpBankruptcyClawbackUserPayment        Amount `json:"perpBankruptcy_clawbackUserPayment,omitempty"`
	PerpBankruptcyCumulativeFundingRateDelta Amount `json:"perpBankruptcy_cumulativeFundingRateDelta,omitempty"`

	SpotBankruptcyMarketIndex                    *int   `json:"spotBankruptcy_marketIndex,omitempty"`
	SpotBankruptcyBorrowAmount                   Amount `json:"spotBankruptcy_borrowAmount,omitempty"`
	SpotBankruptcyIfPayment                      Amount `json:"spotBankruptcy_ifPayment,omitempty"`
	SpotBankruptcyCumulativeDepositInterestDelta Amount `json:"spotBankruptcy_cumulativeDepositInterestDelta,omitempty"`
}

func (*Liquidation) EventType() string { return "liquidation" }
func (r *Liquidation) Validate() error { return r.ValidateAt(time.Now()) }

// ValidateAt requires the fields of the sub-record named by liquidationType and checks the format of
// any other sub-record field present.
func (r *Liquidation) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Ts, r.TxSig, r.TxSigIndex, r.Slot)
	c.enum("liquidationType", r.LiquidationType, LiquidationTypePerp, LiquidationTypeSpot,
		LiquidationTypeBorrowForPerpPnl, LiquidationTypePerpPnlForDeposit, LiquidationTypePerpBankruptcy,
		LiquidationTypeSpotBankruptcy)
	c.str("user", r.User)
	c.str("liquidator", r.Liquidator)
	c.amount("marginRequirement", r.MarginRequirement)
	c.amount("totalCollateral", r.TotalCollateral)
	c.amount("marginFreed", r.MarginFreed)
	c.nonNeg("liquidationId", int64(r.LiquidationID))
	for _, id := range r.CanceledOrderIDs {
		c.id("canceledOrderIds[]", id)
	}
	for _, sub := range r.subRecords() {
		required := sub.kind == r.LiquidationType
		for _, f := range sub.indexes {
			switch {
			case f.v != nil:
				c.nonNeg(f.name, int64(*f.v))
			case required:
				c.fail("%s is required", f.name)
			}
		}
		for _, f := range sub.amounts {
			if required {
				c.amount(f.name, f.v)
			} else {
				c.optAmount(f.name, f.v)
			}
		}
	}
	c.optID("liquidatePerp_fillRecordId", r.LiquidatePerpFillRecordID)
	c.optID("liquidatePerp_userOrderId", r.LiquidatePerpUserOrderID)
	c.optID("liquidatePerp_liquidatorOrderId", r.LiquidatePerpLiquidatorOrderID)
	return c.err(r.EventType())
}

type liquidationSub struct {
	kind    string
	indexes []struct {
		name string
		v    *int
	}
	amounts []struct {
		name string
		v    Amount
	}
}

// subRecords lists the prefixed fields per liquidation type, so validation and CSV share one table.
func (r *Liquidation) subRecords() []liquidationSub {
	type idx = struct {
		name string
		v    *int
	}
	type amt = struct {
		name string
		v    Amount
	}
	return []liquidationSub{
		{LiquidationTypePerp,
			[]idx{{"liquidatePerp_marketIndex", r.LiquidatePerpMarketIndex}},
			[]amt{{"liquidatePerp_oraclePrice", r.LiquidatePerpOraclePrice},
				{"liquidatePerp_baseAssetAmount", r.LiquidatePerpBaseAssetAmount},
				{"liquidatePerp_quoteAssetAmount", r.LiquidatePerpQuoteAssetAmount},
				{"liquidatePerp_lpShares", r.LiquidatePerpLpShares},
				{"liquidatePerp_liquidatorFee", r.LiquidatePerpLiquidatorFee},
				{"liquidatePerp_ifFee", r.LiquidatePerpIfFee}}},
		{LiquidationTypeSpot,
			[]idx{{"liquidateSpot_assetMarketIndex", r.LiquidateSpotAssetMarketIndex},
				{"liquidateSpot_liabilityMarketIndex", r.LiquidateSpotLiabilityMarketIndex}},
			[]amt{{"liquidateSpot_assetPrice", r.LiquidateSpotAssetPrice},
				{"liquidateSpot_assetTransfer", r.LiquidateSpotAssetTransfer},
				{"liquidateSpot_liabilityPrice", r.LiquidateSpotLiabilityPrice},
				{"liquidateSpot_liabilityTransfer", r.LiquidateSpotLiabilityTransfer},
				{"liquidateSpot_ifFee", r.LiquidateSpotIfFee}}},
		{LiquidationTypeBorrowForPerpPnl,
			[]idx{{"liquidateBorrowForPerpPnl_perpMarketIndex", r.LiquidateBorrowForPerpPnlPerpMarketIndex},
				{"liquidateBorrowForPerpPnl_liabilityMarketIndex", r.LiquidateBorrowForPerpPnlLiabilityMarketIndex}},
			[]amt{{"liquidateBorrowForPerpPnl_marketOraclePrice", r.LiquidateBorrowForPerpPnlMarketOraclePrice},
				{"liquidateBorrowForPerpPnl_pnlTransfer", r.LiquidateBorrowForPerpPnlPnlTransfer},
				{"liquidateBorrowForPerpPnl_liabilityPrice", r.LiquidateBorrowForPerpPnlLiabilityPrice},
				{"liquidateBorrowForPerpPnl_liabilityTransfer", r.LiquidateBorrowForPerpPnlLiabilityTransfer}}},
		{LiquidationTypePerpPnlForDeposit,
			[]idx{{"liquidatePerpPnlForDeposit_perpMarketIndex", r.LiquidatePerpPnlForDepositPerpMarketIndex},
				{"liquidatePerpPnlForDeposit_assetMarketIndex", r.LiquidatePerpPnlForDepositAssetMarketIndex}},
			[]amt{{"liquidatePerpPnlForDeposit_marketOraclePrice", r.LiquidatePerpPnlForDepositMarketOraclePrice},
				{"liquidatePerpPnlForDeposit_pnlTransfer", r.LiquidatePerpPnlForDepositPnlTransfer},
				{"liquidatePerpPnlForDeposit_assetPrice", r.LiquidatePerpPnlForDepositAssetPrice},
				{"liquidatePerpPnlForDeposit_assetTransfer", r.LiquidatePerpPnlForDepositAssetTransfer}}},
		{LiquidationTypePerpBankruptcy,
			[]idx{{"perpBankruptcy_marketIndex", r.PerpBankruptcyMarketIndex}},
			[]amt{{"perpBankruptcy_pnl", r.PerpBankruptcyPnl},
				{"perpBankruptcy_ifPayment", r.PerpBankruptcyIfPayment},
				{"perpBankruptcy_clawbackUserPayment", r.PerpBankruptcyClawbackUserPayment},
				{"perpBankruptcy_cumulativeFundingRateDelta", r.PerpBankruptcyCumulativeFundingRateDelta}}},
		{LiquidationTypeSpotBankruptcy,
			[]idx{{"spotBankruptcy_marketIndex", r.SpotBankruptcyMarketIndex}},
			[]amt{{"spotBankruptcy_borrowAmount", r.SpotBankruptcyBorrowAmount},
				{"spotBankruptcy_ifPayment", r.SpotBankruptcyIfPayment},
				{"spotBankruptcy_cumulativeDepositInterestDelta", r.SpotBankruptcyCumulativeDepositInterestDelta}}},
	}
}
