package events

import "time"

// NewUser is the creation of a subaccount (protocol.new-users): it maps an account to its authority.
// A record may also carry the wallet's builder accounts as they stand at Ts: absent, it says nothing
// of them (not that the wallet has none), so the newest record carrying one tells its state.
type NewUser struct {
	Tx
	UserAuthority string `json:"userAuthority"`
	User          string `json:"user"`
	SubAccountID  int    `json:"subAccountId"`
	Name          string `json:"name"`
	Referrer      string `json:"referrer,omitempty"` // referrer's authority
	Delegate      string `json:"delegate,omitempty"`
	// BuilderRevenueShareAccount is the wallet's revenue share account as a builder: where the fees
	// of the orders it routes accrue.
	BuilderRevenueShareAccount *BuilderAccount `json:"builderRevenueShareAccount,omitempty"`
	// RevenueShareEscrow is the wallet's escrow of builder fees, with the builders it approved.
	RevenueShareEscrow *RevenueShareEscrow `json:"revenueShareEscrow,omitempty"`
}

// BuilderAccount is a builder's revenue share account; totalBuilderRewards quote 1e6.
type BuilderAccount struct {
	AccountID           string `json:"accountId"`
	TotalBuilderRewards Amount `json:"totalBuilderRewards"`
}

// RevenueShareEscrow is a wallet's escrow paying the builders of its orders.
type RevenueShareEscrow struct {
	AccountID        string            `json:"accountId"`
	ApprovedBuilders []ApprovedBuilder `json:"approvedBuilders"`
}

// ApprovedBuilder is a builder a wallet lets charge its orders, up to MaxFeeTenthBps tenths of a basis
// point of their notional.
type ApprovedBuilder struct {
	Authority      string `json:"authority"`
	MaxFeeTenthBps int    `json:"maxFeeTenthBps"`
}

// MaxBuilderFeeTenthBps is the largest fee a builder can be approved for (the protocol keeps it in 16 bits).
const MaxBuilderFeeTenthBps = 65535

func (*NewUser) EventType() string { return "newUser" }
func (r *NewUser) Validate() error { return r.ValidateAt(time.Now()) }
func (r *NewUser) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.str("userAuthority", r.UserAuthority)
	c.str("user", r.User)
	c.nonNeg("subAccountId", int64(r.SubAccountID))
	if len(r.Name) > 32 {
		c.fail("name longer than 32 bytes")
	}
	if b := r.BuilderRevenueShareAccount; b != nil {
		c.str("builderRevenueShareAccount.accountId", b.AccountID)
		c.amount("builderRevenueShareAccount.totalBuilderRewards", b.TotalBuilderRewards)
	}
	if e := r.RevenueShareEscrow; e != nil {
		c.str("revenueShareEscrow.accountId", e.AccountID)
		if e.ApprovedBuilders == nil {
			c.fail("revenueShareEscrow.approvedBuilders is required")
		}
		for _, a := range e.ApprovedBuilders {
			c.str("revenueShareEscrow.approvedBuilders[].authority", a.Authority)
			if a.MaxFeeTenthBps < 0 || a.MaxFeeTenthBps > MaxBuilderFeeTenthBps {
				c.fail("revenueShareEscrow.approvedBuilders[].maxFeeTenthBps %d outside [0, %d]", a.MaxFeeTenthBps, MaxBuilderFeeTenthBps)
			}
		}
	}
	return c.err(r.EventType())
}

// Account snapshot kinds.
const (
	SnapshotTrading  = "trading"
	SnapshotEarn     = "earn"
	SnapshotVault    = "vault"
	SnapshotReferral = "referral"
)

// AccountSnapshot is a periodic snapshot of one account (protocol.account-snapshots); exactly the
// sub-record named by Kind is set. Ts is the snapshot time, the entries' "ts" in the API. Referral
// snapshots are per authority and have no AccountID.
type AccountSnapshot struct {
	Kind      string            `json:"kind"`
	Authority string            `json:"authority"`
	AccountID string            `json:"accountId,omitempty"`
	Ts        int64             `json:"ts"`
	Trading   *TradingSnapshot  `json:"trading,omitempty"`
	Earn      *EarnSnapshot     `json:"earn,omitempty"`
	Vault     *VaultSnapshot    `json:"vault,omitempty"`
	Referral  *ReferralSnapshot `json:"referral,omitempty"`
}

// TradingSnapshot holds an account's trading totals, quote 1e6.
type TradingSnapshot struct {
	AccountBalance        Amount `json:"accountBalance"`
	UnrealizedPnl         Amount `json:"unrealizedPnl"`
	CumulativeRealizedPnl Amount `json:"cumulativeRealizedPnl"`
	UnsettledPnl          Amount `json:"unsettledPnl"`
	CumulativeSettledPnl  Amount `json:"cumulativeSettledPnl"`
	CumulativeFunding     Amount `json:"cumulativeFunding"`
	CumulativeFeePaid     Amount `json:"cumulativeFeePaid"`
	CumulativeFeeRebate   Amount `json:"cumulativeFeeRebate"`
	CumulativeTakerVolume Amount `json:"cumulativeTakerVolume"`
	CumulativeMakerVolume Amount `json:"cumulativeMakerVolume"`
}

// EarnSnapshot holds an account's spot balances.
type EarnSnapshot struct {
	Assets []EarnAsset `json:"assets"`
}

// EarnAsset is one spot position: token amounts in the market's precision, values quote 1e6.
type EarnAsset struct {
	MarketIndex        int    `json:"marketIndex"`
	Balance            Amount `json:"balance"`
	Deposits           Amount `json:"deposits"`
	Withdrawals        Amount `json:"withdrawals"`
	Pnl                Amount `json:"pnl"`
	InterestBaseValue  Amount `json:"interestBaseValue"`
	InterestQuoteValue Amount `json:"interestQuoteValue"`
	OraclePrice        Amount `json:"oraclePrice"`
	Rewards            Amount `json:"rewards,omitempty"`
}

// VaultSnapshot holds an account's position in one vault.
type VaultSnapshot struct {
	Vault                 string `json:"vault"`
	TotalAccountValue     Amount `json:"totalAccountValue"`
	TotalAccountBaseValue Amount `json:"totalAccountBaseValue"`
	MarketIndex           int    `json:"marketIndex"`
	NetDeposits           Amount `json:"netDeposits,omitempty"`
}

// ReferralSnapshot holds an authority's referral totals, quote 1e6.
type ReferralSnapshot struct {
	ReferralRewards   Amount   `json:"referralRewards"`
	ReferralCount     Amount   `json:"referralCount"`
	ReferredUsers     []string `json:"referredUsers"`
	ReferredVolume30D Amount   `json:"referredVolume30D"`
}

func (*AccountSnapshot) EventType() string { return "accountSnapshot" }
func (r *AccountSnapshot) Validate() error { return r.ValidateAt(time.Now()) }
func (r *AccountSnapshot) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.ts("ts", r.Ts)
	c.enum("kind", r.Kind, SnapshotTrading, SnapshotEarn, SnapshotVault, SnapshotReferral)
	c.str("authority", r.Authority)
	if r.Kind != SnapshotReferral {
		c.str("accountId", r.AccountID)
	}
	subs := []struct {
		kind    string
		present bool
	}{
		{SnapshotTrading, r.Trading != nil}, {SnapshotEarn, r.Earn != nil},
		{SnapshotVault, r.Vault != nil}, {SnapshotReferral, r.Referral != nil},
	}
	for _, s := range subs {
		switch {
		case s.present && s.kind != r.Kind:
			c.fail("%s must not be set on a %s snapshot", s.kind, r.Kind)
		case !s.present && s.kind == r.Kind:
			c.fail("%s is required", s.kind)
		}
	}
	if t := r.Trading; t != nil {
		c.amount("trading.accountBalance", t.AccountBalance)
		c.amount("trading.unrealizedPnl", t.UnrealizedPnl)
		c.amount("trading.cumulativeRealizedPnl", t.CumulativeRealizedPnl)
		c.amount("trading.unsettledPnl", t.UnsettledPnl)
		c.amount("trading.cumulativeSettledPnl", t.CumulativeSettledPnl)
		c.amount("trading.cumulativeFunding", t.CumulativeFunding)
		c.amount("trading.cumulativeFeePaid", t.CumulativeFeePaid)
		c.amount("trading.cumulativeFeeRebate", t.CumulativeFeeRebate)
		c.amount("trading.cumulativeTakerVolume", t.CumulativeTakerVolume)
		c.amount("trading.cumulativeMakerVolume", t.CumulativeMakerVolume)
	}
	if e := r.Earn; e != nil {
		if e.Assets == nil {
			c.fail("earn.assets is required")
		}
		for _, a := range e.Assets {
			c.nonNeg("earn.assets[].marketIndex", int64(a.MarketIndex))
			c.amount("earn.assets[].balance", a.Balance)
			c.amount("earn.assets[].deposits", a.Deposits)
			c.amount("earn.assets[].withdrawals", a.Withdrawals)
			c.amount("earn.assets[].pnl", a.Pnl)
			c.amount("earn.assets[].interestBaseValue", a.InterestBaseValue)
			c.amount("earn.assets[].interestQuoteValue", a.InterestQuoteValue)
			c.amount("earn.assets[].oraclePrice", a.OraclePrice)
			c.optAmount("earn.assets[].rewards", a.Rewards)
		}
	}
	if v := r.Vault; v != nil {
		c.str("vault.vault", v.Vault)
		c.amount("vault.totalAccountValue", v.TotalAccountValue)
		c.amount("vault.totalAccountBaseValue", v.TotalAccountBaseValue)
		c.nonNeg("vault.marketIndex", int64(v.MarketIndex))
		c.optAmount("vault.netDeposits", v.NetDeposits)
	}
	if f := r.Referral; f != nil {
		c.amount("referral.referralRewards", f.ReferralRewards)
		c.amount("referral.referralCount", f.ReferralCount)
		c.amount("referral.referredVolume30D", f.ReferredVolume30D)
		if f.ReferredUsers == nil {
			c.fail("referral.referredUsers is required")
		}
	}
	return c.err(r.EventType())
}
