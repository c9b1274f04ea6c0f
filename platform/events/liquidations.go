package events

import (
	"encoding/json"
	"strconv"
	"time"
)

// Liquidation types.
const (
	LiquidationTypePerp              = "liquidatePerp"
	LiquidationTypeSpot              = "liquidateSpot"
	LiquidationTypeBorrowForPerpPnl  = "liquidateBorrowForPerpPnl"
	LiquidationTypePerpPnlForDeposit = "liquidatePerpPnlForDeposit"
	LiquidationTypePerpBankruptcy    = "perpBankruptcy"
	LiquidationTypeSpotBankruptcy    = "spotBankruptcy"
)

// Liquidation is a liquidation record (protocol.liquidations), flat as the API emits it: each
// sub-record's fields carry its name as a prefix ("liquidatePerp_marketIndex"), and every record
// carries the fields of all six sub-records and bitFlags. The protocol's LiquidationRecord event
// holds all six sub-records whatever its type (those of other types zeroed), and the protocol's
// Data API flattens them all, so the sub-records other than liquidationType's are zeros here too
// (0, "0"), and perpBankruptcy_clawbackUser is null when there is none.
//
// Decoding accepts records that leave fields out (messages of producers that wrote only the type's
// own sub-record, or no bitFlags): what is missing reads as zero, and encoding (MarshalJSON, the CSV
// row) writes every field. Margin figures quote 1e6, prices 1e6, perp base 1e9, spot transfers in
// the token precision, lpShares 1e9. Market indexes are pointers because 0 is a market: decoding
// tells a type's own index that is missing (invalid) from market 0.
type Liquidation struct {
	Tx
	LiquidationType   string   `json:"liquidationType"`
	User              string   `json:"user"`
	Liquidator        string   `json:"liquidator"`
	MarginRequirement Amount   `json:"marginRequirement"`
	TotalCollateral   Amount   `json:"totalCollateral"`
	MarginFreed       Amount   `json:"marginFreed"`
	LiquidationID     int      `json:"liquidationId"`
	Bankrupt          bool     `json:"bankrupt"`
	CanceledOrderIDs  []string `json:"canceledOrderIds"`
	// BitFlags are the event's LiquidationBitFlag bits (a u8; 1 = isolated position).
	BitFlags int `json:"bitFlags"`

	LiquidatePerpMarketIndex       *int   `json:"liquidatePerp_marketIndex"`
	LiquidatePerpOraclePrice       Amount `json:"liquidatePerp_oraclePrice"`
	LiquidatePerpBaseAssetAmount   Amount `json:"liquidatePerp_baseAssetAmount"`
	LiquidatePerpQuoteAssetAmount  Amount `json:"liquidatePerp_quoteAssetAmount"`
	LiquidatePerpLpShares          Amount `json:"liquidatePerp_lpShares"`
	LiquidatePerpFillRecordID      string `json:"liquidatePerp_fillRecordId"`
	LiquidatePerpUserOrderID       string `json:"liquidatePerp_userOrderId"`
	LiquidatePerpLiquidatorOrderID string `json:"liquidatePerp_liquidatorOrderId"`
	LiquidatePerpLiquidatorFee     Amount `json:"liquidatePerp_liquidatorFee"`
	LiquidatePerpIfFee             Amount `json:"liquidatePerp_ifFee"`

	LiquidateSpotAssetMarketIndex     *int   `json:"liquidateSpot_assetMarketIndex"`
	LiquidateSpotAssetPrice           Amount `json:"liquidateSpot_assetPrice"`
	LiquidateSpotAssetTransfer        Amount `json:"liquidateSpot_assetTransfer"`
	LiquidateSpotLiabilityMarketIndex *int   `json:"liquidateSpot_liabilityMarketIndex"`
	LiquidateSpotLiabilityPrice       Amount `json:"liquidateSpot_liabilityPrice"`
	LiquidateSpotLiabilityTransfer    Amount `json:"liquidateSpot_liabilityTransfer"`
	LiquidateSpotIfFee                Amount `json:"liquidateSpot_ifFee"`

	LiquidateBorrowForPerpPnlPerpMarketIndex      *int   `json:"liquidateBorrowForPerpPnl_perpMarketIndex"`
	LiquidateBorrowForPerpPnlMarketOraclePrice    Amount `json:"liquidateBorrowForPerpPnl_marketOraclePrice"`
	LiquidateBorrowForPerpPnlPnlTransfer          Amount `json:"liquidateBorrowForPerpPnl_pnlTransfer"`
	LiquidateBorrowForPerpPnlLiabilityMarketIndex *int   `json:"liquidateBorrowForPerpPnl_liabilityMarketIndex"`
	LiquidateBorrowForPerpPnlLiabilityPrice       Amount `json:"liquidateBorrowForPerpPnl_liabilityPrice"`
	LiquidateBorrowForPerpPnlLiabilityTransfer    Amount `json:"liquidateBorrowForPerpPnl_liabilityTransfer"`

	LiquidatePerpPnlForDepositPerpMarketIndex   *int   `json:"liquidatePerpPnlForDeposit_perpMarketIndex"`
	LiquidatePerpPnlForDepositMarketOraclePrice Amount `json:"liquidatePerpPnlForDeposit_marketOraclePrice"`
	LiquidatePerpPnlForDepositPnlTransfer       Amount `json:"liquidatePerpPnlForDeposit_pnlTransfer"`
	LiquidatePerpPnlForDepositAssetMarketIndex  *int   `json:"liquidatePerpPnlForDeposit_assetMarketIndex"`
	LiquidatePerpPnlForDepositAssetPrice        Amount `json:"liquidatePerpPnlForDeposit_assetPrice"`
	LiquidatePerpPnlForDepositAssetTransfer     Amount `json:"liquidatePerpPnlForDeposit_assetTransfer"`

	PerpBankruptcyMarketIndex *int   `json:"perpBankruptcy_marketIndex"`
	PerpBankruptcyPnl         Amount `json:"perpBankruptcy_pnl"`
	PerpBankruptcyIfPayment   Amount `json:"perpBankruptcy_ifPayment"`
	// PerpBankruptcyClawbackUser is an Option<Pubkey> in the event: nil (null) when none.
	PerpBankruptcyClawbackUser               *string `json:"perpBankruptcy_clawbackUser"`
	PerpBankruptcyClawbackUserPayment        Amount  `json:"perpBankruptcy_clawbackUserPayment"`
	PerpBankruptcyCumulativeFundingRateDelta Amount  `json:"perpBankruptcy_cumulativeFundingRateDelta"`

	SpotBankruptcyMarketIndex                    *int   `json:"spotBankruptcy_marketIndex"`
	SpotBankruptcyBorrowAmount                   Amount `json:"spotBankruptcy_borrowAmount"`
	SpotBankruptcyIfPayment                      Amount `json:"spotBankruptcy_ifPayment"`
	SpotBankruptcyCumulativeDepositInterestDelta Amount `json:"spotBankruptcy_cumulativeDepositInterestDelta"`
}

func (*Liquidation) EventType() string { return "liquidation" }
func (r *Liquidation) Validate() error { return r.ValidateAt(time.Now()) }

// MarshalJSON writes the record in the API's shape: every field of every sub-record, those left out
// as zeros (see Liquidation), whatever the record was decoded from. Topic messages, stored records
// and API answers are all written through it.
func (r Liquidation) MarshalJSON() ([]byte, error) {
	r.complete()
	type plain Liquidation // the same fields without this method
	return json.Marshal((*plain)(&r))
}

// complete sets every field left out to its zero: canceledOrderIds [], market indexes 0, amounts and
// ids "0". It assigns r's fields only, never through them, so that completing a copy leaves the
// original as it was.
func (r *Liquidation) complete() {
	if r.CanceledOrderIDs == nil {
		r.CanceledOrderIDs = []string{}
	}
	for _, sub := range r.subRecords() {
		for _, f := range sub.fields {
			switch {
			case f.index != nil && *f.index == nil:
				*f.index = new(int)
			case f.amount != nil && *f.amount == "":
				*f.amount = "0"
			case f.id != nil && *f.id == "":
				*f.id = "0"
			}
		}
	}
}

// ValidateAt requires the fields of the sub-record named by liquidationType (its ids excepted:
// producers may leave them out, as 0) and checks the format of every other field present.
func (r *Liquidation) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
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
	if r.BitFlags < 0 || r.BitFlags > 255 {
		c.fail("bitFlags %d is not a u8", r.BitFlags)
	}
	for _, sub := range r.subRecords() {
		required := sub.kind == r.LiquidationType
		for _, f := range sub.fields {
			switch {
			case f.index != nil && *f.index != nil:
				c.nonNeg(f.name, int64(**f.index))
			case f.index != nil && required:
				c.fail("%s is required", f.name)
			case f.amount != nil && required:
				c.amount(f.name, *f.amount)
			case f.amount != nil:
				c.optAmount(f.name, *f.amount)
			case f.id != nil:
				c.optID(f.name, *f.id)
			}
		}
	}
	return c.err(r.EventType())
}

// liquidationField is one prefixed field of a sub-record: exactly one of index, amount, id and key
// points at it.
type liquidationField struct {
	name   string
	index  **int    // a market index
	amount *Amount  // an integer amount
	id     *string  // an unsigned id
	key    **string // a public key, nil when none
}

type liquidationSub struct {
	kind   string
	fields []liquidationField
}

// subRecords lists the prefixed fields of every sub-record in the API's order, so that validation,
// completion and the CSV columns share one table.
func (r *Liquidation) subRecords() []liquidationSub {
	idx := func(name string, v **int) liquidationField { return liquidationField{name: name, index: v} }
	amt := func(name string, v *Amount) liquidationField { return liquidationField{name: name, amount: v} }
	id := func(name string, v *string) liquidationField { return liquidationField{name: name, id: v} }
	return []liquidationSub{
		{LiquidationTypePerp, []liquidationField{
			idx("liquidatePerp_marketIndex", &r.LiquidatePerpMarketIndex),
			amt("liquidatePerp_oraclePrice", &r.LiquidatePerpOraclePrice),
			amt("liquidatePerp_baseAssetAmount", &r.LiquidatePerpBaseAssetAmount),
			amt("liquidatePerp_quoteAssetAmount", &r.LiquidatePerpQuoteAssetAmount),
			amt("liquidatePerp_lpShares", &r.LiquidatePerpLpShares),
			id("liquidatePerp_fillRecordId", &r.LiquidatePerpFillRecordID),
			id("liquidatePerp_userOrderId", &r.LiquidatePerpUserOrderID),
			id("liquidatePerp_liquidatorOrderId", &r.LiquidatePerpLiquidatorOrderID),
			amt("liquidatePerp_liquidatorFee", &r.LiquidatePerpLiquidatorFee),
			amt("liquidatePerp_ifFee", &r.LiquidatePerpIfFee)}},
		{LiquidationTypeSpot, []liquidationField{
			idx("liquidateSpot_assetMarketIndex", &r.LiquidateSpotAssetMarketIndex),
			amt("liquidateSpot_assetPrice", &r.LiquidateSpotAssetPrice),
			amt("liquidateSpot_assetTransfer", &r.LiquidateSpotAssetTransfer),
			idx("liquidateSpot_liabilityMarketIndex", &r.LiquidateSpotLiabilityMarketIndex),
			amt("liquidateSpot_liabilityPrice", &r.LiquidateSpotLiabilityPrice),
			amt("liquidateSpot_liabilityTransfer", &r.LiquidateSpotLiabilityTransfer),
			amt("liquidateSpot_ifFee", &r.LiquidateSpotIfFee)}},
		{LiquidationTypeBorrowForPerpPnl, []liquidationField{
			idx("liquidateBorrowForPerpPnl_perpMarketIndex", &r.LiquidateBorrowForPerpPnlPerpMarketIndex),
			amt("liquidateBorrowForPerpPnl_marketOraclePrice", &r.LiquidateBorrowForPerpPnlMarketOraclePrice),
			amt("liquidateBorrowForPerpPnl_pnlTransfer", &r.LiquidateBorrowForPerpPnlPnlTransfer),
			idx("liquidateBorrowForPerpPnl_liabilityMarketIndex", &r.LiquidateBorrowForPerpPnlLiabilityMarketIndex),
			amt("liquidateBorrowForPerpPnl_liabilityPrice", &r.LiquidateBorrowForPerpPnlLiabilityPrice),
			amt("liquidateBorrowForPerpPnl_liabilityTransfer", &r.LiquidateBorrowForPerpPnlLiabilityTransfer)}},
		{LiquidationTypePerpPnlForDeposit, []liquidationField{
			idx("liquidatePerpPnlForDeposit_perpMarketIndex", &r.LiquidatePerpPnlForDepositPerpMarketIndex),
			amt("liquidatePerpPnlForDeposit_marketOraclePrice", &r.LiquidatePerpPnlForDepositMarketOraclePrice),
			amt("liquidatePerpPnlForDeposit_pnlTransfer", &r.LiquidatePerpPnlForDepositPnlTransfer),
			idx("liquidatePerpPnlForDeposit_assetMarketIndex", &r.LiquidatePerpPnlForDepositAssetMarketIndex),
			amt("liquidatePerpPnlForDeposit_assetPrice", &r.LiquidatePerpPnlForDepositAssetPrice),
			amt("liquidatePerpPnlForDeposit_assetTransfer", &r.LiquidatePerpPnlForDepositAssetTransfer)}},
		{LiquidationTypePerpBankruptcy, []liquidationField{
			idx("perpBankruptcy_marketIndex", &r.PerpBankruptcyMarketIndex),
			amt("perpBankruptcy_pnl", &r.PerpBankruptcyPnl),
			amt("perpBankruptcy_ifPayment", &r.PerpBankruptcyIfPayment),
			{name: "perpBankruptcy_clawbackUser", key: &r.PerpBankruptcyClawbackUser},
			amt("perpBankruptcy_clawbackUserPayment", &r.PerpBankruptcyClawbackUserPayment),
			amt("perpBankruptcy_cumulativeFundingRateDelta", &r.PerpBankruptcyCumulativeFundingRateDelta)}},
		{LiquidationTypeSpotBankruptcy, []liquidationField{
			idx("spotBankruptcy_marketIndex", &r.SpotBankruptcyMarketIndex),
			amt("spotBankruptcy_borrowAmount", &r.SpotBankruptcyBorrowAmount),
			amt("spotBankruptcy_ifPayment", &r.SpotBankruptcyIfPayment),
			amt("spotBankruptcy_cumulativeDepositInterestDelta", &r.SpotBankruptcyCumulativeDepositInterestDelta)}},
	}
}

// cell is the field's CSV cell: its value, or "" for a key that is none.
func (f liquidationField) cell() string {
	switch {
	case f.index != nil && *f.index != nil:
		return strconv.Itoa(**f.index)
	case f.amount != nil:
		return string(*f.amount)
	case f.id != nil:
		return *f.id
	case f.key != nil && *f.key != nil:
		return **f.key
	}
	return ""
}
