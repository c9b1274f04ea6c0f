package events

import "time"

// Perp LP actions.
const (
	LPActionAddLiquidity          = "addLiquidity"
	LPActionRemoveLiquidity       = "removeLiquidity"
	LPActionSettleLiquidity       = "settleLiquidity"
	LPActionRemoveLiquidityDerisk = "removeLiquidityDerisk"
)

// PerpLP is an account's perp AMM liquidity change (protocol.lp): nShares and the base delta 1e9, the
// quote delta and pnl 1e6.
type PerpLP struct {
	Tx
	User                  string `json:"user"`
	Action                string `json:"action"`
	MarketIndex           int    `json:"marketIndex"`
	NShares               Amount `json:"nShares"`
	DeltaBaseAssetAmount  Amount `json:"deltaBaseAssetAmount"`
	DeltaQuoteAssetAmount Amount `json:"deltaQuoteAssetAmount"`
	Pnl                   Amount `json:"pnl"`
}

func (*PerpLP) EventType() string { return "perpLp" }
func (r *PerpLP) Validate() error { return r.ValidateAt(time.Now()) }
func (r *PerpLP) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.str("user", r.User)
	c.enum("action", r.Action, LPActionAddLiquidity, LPActionRemoveLiquidity, LPActionSettleLiquidity,
		LPActionRemoveLiquidityDerisk)
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.amount("nShares", r.NShares)
	c.amount("deltaBaseAssetAmount", r.DeltaBaseAssetAmount)
	c.amount("deltaQuoteAssetAmount", r.DeltaQuoteAssetAmount)
	c.amount("pnl", r.Pnl)
	return c.err(r.EventType())
}

// LP mint/redeem descriptions (the record's integer description field).
const (
	LPDescriptionMint   = 0
	LPDescriptionRedeem = 1
)

// LPMintRedeem is an authority's mint or redemption of LP pool tokens (protocol.lp-mint-redeem).
// amount and fee are in the constituent's token precision, lpAmount/lpFee in LP token precision,
// prices 1e6, weights percentage 1e6, lastAum quote 1e6.
type LPMintRedeem struct {
	Tx
	SpotMarketIndex       int    `json:"spotMarketIndex"`
	ConstituentIndex      int    `json:"constituentIndex"`
	LastAumSlot           int64  `json:"lastAumSlot"`
	Description           int    `json:"description"`
	Authority             string `json:"authority"`
	Amount                Amount `json:"amount"`
	Fee                   Amount `json:"fee"`
	OraclePrice           Amount `json:"oraclePrice"`
	Mint                  string `json:"mint"`
	LpAmount              Amount `json:"lpAmount"`
	LpFee                 Amount `json:"lpFee"`
	LpPrice               Amount `json:"lpPrice"`
	MintRedeemID          string `json:"mintRedeemId"`
	LastAum               Amount `json:"lastAum"`
	InMarketCurrentWeight Amount `json:"inMarketCurrentWeight"`
	InMarketTargetWeight  Amount `json:"inMarketTargetWeight"`
	LpPool                string `json:"lpPool"`
}

func (*LPMintRedeem) EventType() string { return "lpMintRedeem" }
func (r *LPMintRedeem) Validate() error { return r.ValidateAt(time.Now()) }
func (r *LPMintRedeem) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.nonNeg("spotMarketIndex", int64(r.SpotMarketIndex))
	c.nonNeg("constituentIndex", int64(r.ConstituentIndex))
	c.nonNeg("lastAumSlot", r.LastAumSlot)
	c.nonNeg("description", int64(r.Description))
	c.str("authority", r.Authority)
	c.amount("amount", r.Amount)
	c.amount("fee", r.Fee)
	c.amount("oraclePrice", r.OraclePrice)
	c.str("mint", r.Mint)
	c.amount("lpAmount", r.LpAmount)
	c.amount("lpFee", r.LpFee)
	c.amount("lpPrice", r.LpPrice)
	c.id("mintRedeemId", r.MintRedeemID)
	c.amount("lastAum", r.LastAum)
	c.amount("inMarketCurrentWeight", r.InMarketCurrentWeight)
	c.amount("inMarketTargetWeight", r.InMarketTargetWeight)
	c.str("lpPool", r.LpPool)
	return c.err(r.EventType())
}
