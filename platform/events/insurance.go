package events

import "time"

// InsuranceFund is a movement of a spot market's insurance fund vault, e.g. revenue settled into it
// (protocol.insurance-fund). Amounts are in the spot market's token precision; the IF factors are the
// protocol's plain numbers.
type InsuranceFund struct {
	Tx
	SpotMarketIndex            int     `json:"spotMarketIndex"`
	PerpMarketIndex            int     `json:"perpMarketIndex"`
	UserIfFactor               float64 `json:"userIfFactor"`
	TotalIfFactor              float64 `json:"totalIfFactor"`
	Symbol                     string  `json:"symbol"`
	VaultAmountBefore          Amount  `json:"vaultAmountBefore"`
	InsuranceVaultAmountBefore Amount  `json:"insuranceVaultAmountBefore"`
	TotalIfSharesBefore        Amount  `json:"totalIfSharesBefore"`
	TotalIfSharesAfter         Amount  `json:"totalIfSharesAfter"`
	Amount                     Amount  `json:"amount"`
}

func (*InsuranceFund) EventType() string { return "insuranceFund" }
func (r *InsuranceFund) Validate() error { return r.ValidateAt(time.Now()) }
func (r *InsuranceFund) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.nonNeg("spotMarketIndex", int64(r.SpotMarketIndex))
	c.nonNeg("perpMarketIndex", int64(r.PerpMarketIndex))
	if r.UserIfFactor < 0 || r.TotalIfFactor < 0 {
		c.fail("IF factors must not be negative")
	}
	c.str("symbol", r.Symbol)
	c.amount("vaultAmountBefore", r.VaultAmountBefore)
	c.amount("insuranceVaultAmountBefore", r.InsuranceVaultAmountBefore)
	c.amount("totalIfSharesBefore", r.TotalIfSharesBefore)
	c.amount("totalIfSharesAfter", r.TotalIfSharesAfter)
	c.amount("amount", r.Amount)
	return c.err(r.EventType())
}

// Insurance fund stake actions.
const (
	IFStakeActionStake                = "stake"
	IFStakeActionUnstakeRequest       = "unstakeRequest"
	IFStakeActionUnstakeCancelRequest = "unstakeCancelRequest"
	IFStakeActionUnstake              = "unstake"
	IFStakeActionUnstakeTransfer      = "unstakeTransfer"
	IFStakeActionStakeTransfer        = "stakeTransfer"
	IFStakeActionAdminDeposit         = "adminDeposit"
)

// IFStake is an authority's insurance fund stake change (protocol.if-stakes). ifShares* are the
// authority's shares, userIfShares* all users' shares of the market, totalIfShares* every share
// including the protocol's; amounts in the spot market's token precision.
type IFStake struct {
	Tx
	MarketIndex                int    `json:"marketIndex"`
	Amount                     Amount `json:"amount"`
	UserAuthority              string `json:"userAuthority"`
	Action                     string `json:"action"`
	IfSharesBefore             Amount `json:"ifSharesBefore"`
	UserIfSharesBefore         Amount `json:"userIfSharesBefore"`
	TotalIfSharesBefore        Amount `json:"totalIfSharesBefore"`
	IfSharesAfter              Amount `json:"ifSharesAfter"`
	UserIfSharesAfter          Amount `json:"userIfSharesAfter"`
	TotalIfSharesAfter         Amount `json:"totalIfSharesAfter"`
	InsuranceVaultAmountBefore Amount `json:"insuranceVaultAmountBefore"`
	Symbol                     string `json:"symbol,omitempty"`
}

func (*IFStake) EventType() string { return "ifStake" }
func (r *IFStake) Validate() error { return r.ValidateAt(time.Now()) }
func (r *IFStake) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.amount("amount", r.Amount)
	c.str("userAuthority", r.UserAuthority)
	c.enum("action", r.Action, IFStakeActionStake, IFStakeActionUnstakeRequest, IFStakeActionUnstakeCancelRequest,
		IFStakeActionUnstake, IFStakeActionUnstakeTransfer, IFStakeActionStakeTransfer, IFStakeActionAdminDeposit)
	c.amount("ifSharesBefore", r.IfSharesBefore)
	c.amount("userIfSharesBefore", r.UserIfSharesBefore)
	c.amount("totalIfSharesBefore", r.TotalIfSharesBefore)
	c.amount("ifSharesAfter", r.IfSharesAfter)
	c.amount("userIfSharesAfter", r.UserIfSharesAfter)
	c.amount("totalIfSharesAfter", r.TotalIfSharesAfter)
	c.amount("insuranceVaultAmountBefore", r.InsuranceVaultAmountBefore)
	return c.err(r.EventType())
}
