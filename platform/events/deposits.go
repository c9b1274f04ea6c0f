package events

import "time"

// Deposit directions.
const (
	DepositDirectionDeposit  = "deposit"
	DepositDirectionWithdraw = "withdraw"
)

// Deposit explanations; a reward is a deposit with explanation "reward".
const (
	DepositExplanationNone        = "none"
	DepositExplanationTransfer    = "transfer"
	DepositExplanationBorrow      = "borrow"
	DepositExplanationRepayBorrow = "repayBorrow"
	DepositExplanationReward      = "reward"
)

// Deposit is a deposit into or withdrawal from a spot market, rewards included (protocol.deposits).
// amount and the market balances are in the spot market's token precision (USDC 1e6, SOL 1e9),
// oraclePrice 1e6, cumulative interest 1e10, the user's totals quote 1e6.
type Deposit struct {
	Tx
	Amount                          Amount `json:"amount"`
	OraclePrice                     Amount `json:"oraclePrice"`
	MarketDepositBalance            Amount `json:"marketDepositBalance"`
	MarketWithdrawBalance           Amount `json:"marketWithdrawBalance"`
	MarketCumulativeDepositInterest Amount `json:"marketCumulativeDepositInterest"`
	MarketCumulativeBorrowInterest  Amount `json:"marketCumulativeBorrowInterest"`
	TotalDepositsAfter              Amount `json:"totalDepositsAfter"`
	TotalWithdrawsAfter             Amount `json:"totalWithdrawsAfter"`
	DepositRecordID                 string `json:"depositRecordId"`
	UserAuthority                   string `json:"userAuthority"`
	User                            string `json:"user"`
	Direction                       string `json:"direction"`
	Explanation                     string `json:"explanation"`
	MarketIndex                     int    `json:"marketIndex"`
	Symbol                          string `json:"symbol"`
}

func (*Deposit) EventType() string { return "deposit" }
func (r *Deposit) Validate() error { return r.ValidateAt(time.Now()) }
func (r *Deposit) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.amount("amount", r.Amount)
	c.amount("oraclePrice", r.OraclePrice)
	c.amount("marketDepositBalance", r.MarketDepositBalance)
	c.amount("marketWithdrawBalance", r.MarketWithdrawBalance)
	c.amount("marketCumulativeDepositInterest", r.MarketCumulativeDepositInterest)
	c.amount("marketCumulativeBorrowInterest", r.MarketCumulativeBorrowInterest)
	c.amount("totalDepositsAfter", r.TotalDepositsAfter)
	c.amount("totalWithdrawsAfter", r.TotalWithdrawsAfter)
	c.id("depositRecordId", r.DepositRecordID)
	c.str("userAuthority", r.UserAuthority)
	c.str("user", r.User)
	c.enum("direction", r.Direction, DepositDirectionDeposit, DepositDirectionWithdraw)
	c.enum("explanation", r.Explanation, DepositExplanationNone, DepositExplanationTransfer,
		DepositExplanationBorrow, DepositExplanationRepayBorrow, DepositExplanationReward)
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.str("symbol", r.Symbol)
	return c.err(r.EventType())
}

// Swap is a spot-to-spot swap of one account (protocol.swaps). amountIn/amountOut are in their
// markets' token precisions, fee in the out market's, oracle prices 1e6.
type Swap struct {
	Tx
	User           string `json:"user"`
	OutMarketIndex int    `json:"outMarketIndex"`
	InMarketIndex  int    `json:"inMarketIndex"`
	AmountOut      Amount `json:"amountOut"`
	AmountIn       Amount `json:"amountIn"`
	OutOraclePrice Amount `json:"outOraclePrice"`
	InOraclePrice  Amount `json:"inOraclePrice"`
	Fee            Amount `json:"fee"`
	InSymbol       string `json:"inSymbol"`
	OutSymbol      string `json:"outSymbol"`
}

func (*Swap) EventType() string { return "swap" }
func (r *Swap) Validate() error { return r.ValidateAt(time.Now()) }
func (r *Swap) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.str("user", r.User)
	c.nonNeg("outMarketIndex", int64(r.OutMarketIndex))
	c.nonNeg("inMarketIndex", int64(r.InMarketIndex))
	if r.InMarketIndex == r.OutMarketIndex {
		c.fail("inMarketIndex and outMarketIndex are both %d", r.InMarketIndex)
	}
	c.amount("amountOut", r.AmountOut)
	c.amount("amountIn", r.AmountIn)
	c.amount("outOraclePrice", r.OutOraclePrice)
	c.amount("inOraclePrice", r.InOraclePrice)
	c.amount("fee", r.Fee)
	c.str("inSymbol", r.InSymbol)
	c.str("outSymbol", r.OutSymbol)
	return c.err(r.EventType())
}

// Settle P&L explanations.
const (
	SettlePnlExplanationNone            = "none"
	SettlePnlExplanationExpiredPosition = "expiredPosition"
)

// SettlePnl is a settlement of an account's perp P&L into its quote balance (protocol.settle-pnl).
// pnl and quote amounts 1e6, baseAssetAmount 1e9, settlePrice 1e6.
type SettlePnl struct {
	Tx
	User                  string `json:"user"`
	MarketIndex           int    `json:"marketIndex"`
	Pnl                   Amount `json:"pnl"`
	BaseAssetAmount       Amount `json:"baseAssetAmount"`
	QuoteAssetAmountAfter Amount `json:"quoteAssetAmountAfter"`
	QuoteEntryAmount      Amount `json:"quoteEntryAmount"`
	SettlePrice           Amount `json:"settlePrice"`
	Explanation           string `json:"explanation"`
}

func (*SettlePnl) EventType() string { return "settlePnl" }
func (r *SettlePnl) Validate() error { return r.ValidateAt(time.Now()) }
func (r *SettlePnl) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.str("user", r.User)
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.amount("pnl", r.Pnl)
	c.amount("baseAssetAmount", r.BaseAssetAmount)
	c.amount("quoteAssetAmountAfter", r.QuoteAssetAmountAfter)
	c.amount("quoteEntryAmount", r.QuoteEntryAmount)
	c.amount("settlePrice", r.SettlePrice)
	c.enum("explanation", r.Explanation, SettlePnlExplanationNone, SettlePnlExplanationExpiredPosition)
	return c.err(r.EventType())
}
