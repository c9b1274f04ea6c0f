package notify

import (
	"math"

	"github.com/tidemark/tidemark/platform/events"
)

// Sources: the kinds of protocol event a notification is made of.
const (
	SourceFill           = "fill"
	SourceLiquidation    = "liquidation"
	SourceDeposit        = "deposit"
	SourceSettlePnl      = "settlePnl"
	SourceFundingPayment = "fundingPayment"
)

// Occurrence is what one protocol event says of one account: the facts a notification to the
// account's wallet is made of. It is kept (as JSON) while the account's wallet is not known yet, so
// it carries everything rendering needs, and its key is the event's: (Source, TxSig, TxSigIndex).
type Occurrence struct {
	Source     string `json:"source"`
	Account    string `json:"account"`
	Ts         int64  `json:"ts"`
	TxSig      string `json:"txSig"`
	TxSigIndex int    `json:"txSigIndex"`

	MarketType  events.MarketType `json:"marketType,omitempty"` // perp or spot; "" when the event names none
	MarketIndex *int              `json:"marketIndex,omitempty"`
	Symbol      string            `json:"symbol,omitempty"` // when the event names it

	Fill        *FillFacts        `json:"fill,omitempty"`
	Liquidation *LiquidationFacts `json:"liquidation,omitempty"`
	Deposit     *DepositFacts     `json:"deposit,omitempty"`
	Pnl         events.Amount     `json:"pnl,omitempty"`     // settled P&L, quote 1e6
	Funding     events.Amount     `json:"funding,omitempty"` // funding payment, quote 1e6, negative when paid
}

// FillFacts are the account's side of a fill.
type FillFacts struct {
	Role         string        `json:"role"`      // taker or maker
	Direction    string        `json:"direction"` // long or short
	OrderID      string        `json:"orderId"`
	FillRecordID string        `json:"fillRecordId"`
	Base         events.Amount `json:"base"`  // filled by this fill: base (perp 1e9, spot the token's)
	Quote        events.Amount `json:"quote"` // quote 1e6
	OrderBase    events.Amount `json:"orderBase"`
	FilledBase   events.Amount `json:"filledBase"` // the order's cumulative filled base after the fill
}

// LiquidationFacts are a liquidation's facts.
type LiquidationFacts struct {
	Type          string        `json:"type"`
	ID            int           `json:"id"`
	Bankrupt      bool          `json:"bankrupt"`
	MarginFreed   events.Amount `json:"marginFreed"`
	SpotMarket    *int          `json:"spotMarket,omitempty"`    // the spot market of a spot liquidation or bankruptcy
	LiabilitySpot *int          `json:"liabilitySpot,omitempty"` // the borrow's market, for borrow liquidations
}

// DepositFacts are a deposit's or a withdrawal's.
type DepositFacts struct {
	Direction   string        `json:"direction"`
	Explanation string        `json:"explanation"`
	Amount      events.Amount `json:"amount"` // the token's precision
	RecordID    string        `json:"recordId"`
}

// Roles of an account in a fill.
const (
	RoleTaker = "taker"
	RoleMaker = "maker"
)

// FillOccurrences are a fill's occurrences: its taker's and its maker's (one when the AMM or an
// external venue was the other side, one when an account traded with itself).
func FillOccurrences(f *events.Fill) []Occurrence {
	var out []Occurrence
	side := func(role, account, direction, orderID string, orderBase, filled events.Amount) {
		idx := f.MarketIndex
		out = append(out, Occurrence{
			Source: SourceFill, Account: account, Ts: f.Ts, TxSig: f.TxSig, TxSigIndex: f.TxSigIndex,
			MarketType: f.MarketType, MarketIndex: &idx, Symbol: f.Symbol,
			Fill: &FillFacts{Role: role, Direction: direction, OrderID: orderID, FillRecordID: f.FillRecordID,
				Base: f.BaseAssetAmountFilled, Quote: f.QuoteAssetAmountFilled, OrderBase: orderBase, FilledBase: filled},
		})
	}
	if f.Taker != "" {
		side(RoleTaker, f.Taker, f.TakerOrderDirection, f.TakerOrderID, f.TakerOrderBaseAssetAmount, f.TakerOrderCumulativeBaseAssetAmountFilled)
	}
	if f.Maker != "" && f.Maker != f.Taker {
		side(RoleMaker, f.Maker, f.MakerOrderDirection, f.MakerOrderID, f.MakerOrderBaseAssetAmount, f.MakerOrderCumulativeBaseAssetAmountFilled)
	}
	return out
}

// LiquidationOccurrence is the liquidated account's occurrence of l.
func LiquidationOccurrence(l *events.Liquidation) Occurrence {
	o := Occurrence{Source: SourceLiquidation, Account: l.User, Ts: l.Ts, TxSig: l.TxSig, TxSigIndex: l.TxSigIndex,
		Liquidation: &LiquidationFacts{Type: l.LiquidationType, ID: l.LiquidationID, Bankrupt: l.Bankrupt, MarginFreed: l.MarginFreed}}
	perp := func(i *int) {
		if i != nil {
			o.MarketType, o.MarketIndex = events.MarketTypePerp, i
		}
	}
	switch l.LiquidationType {
	case events.LiquidationTypePerp:
		perp(l.LiquidatePerpMarketIndex)
	case events.LiquidationTypeBorrowForPerpPnl:
		perp(l.LiquidateBorrowForPerpPnlPerpMarketIndex)
		o.Liquidation.LiabilitySpot = l.LiquidateBorrowForPerpPnlLiabilityMarketIndex
	case events.LiquidationTypePerpPnlForDeposit:
		perp(l.LiquidatePerpPnlForDepositPerpMarketIndex)
		o.Liquidation.SpotMarket = l.LiquidatePerpPnlForDepositAssetMarketIndex
	case events.LiquidationTypePerpBankruptcy:
		perp(l.PerpBankruptcyMarketIndex)
	case events.LiquidationTypeSpot:
		o.Liquidation.SpotMarket = l.LiquidateSpotAssetMarketIndex
		o.Liquidation.LiabilitySpot = l.LiquidateSpotLiabilityMarketIndex
	case events.LiquidationTypeSpotBankruptcy:
		o.Liquidation.LiabilitySpot = l.SpotBankruptcyMarketIndex
	}
	return o
}

// DepositOccurrence is the account's occurrence of a deposit, a withdrawal or a reward.
func DepositOccurrence(d *events.Deposit) Occurrence {
	idx := d.MarketIndex
	return Occurrence{Source: SourceDeposit, Account: d.User, Ts: d.Ts, TxSig: d.TxSig, TxSigIndex: d.TxSigIndex,
		MarketType: events.MarketTypeSpot, MarketIndex: &idx, Symbol: d.Symbol,
		Deposit: &DepositFacts{Direction: d.Direction, Explanation: d.Explanation, Amount: d.Amount, RecordID: d.DepositRecordID}}
}

// SettlePnlOccurrence is the account's occurrence of a settlement; ok is false when it settled
// nothing, which is no news.
func SettlePnlOccurrence(s *events.SettlePnl) (o Occurrence, ok bool) {
	if s.Pnl == "0" {
		return Occurrence{}, false
	}
	idx := s.MarketIndex
	return Occurrence{Source: SourceSettlePnl, Account: s.User, Ts: s.Ts, TxSig: s.TxSig, TxSigIndex: s.TxSigIndex,
		MarketType: events.MarketTypePerp, MarketIndex: &idx, Pnl: s.Pnl}, true
}

// FundingOccurrence is the account's occurrence of a funding payment; ok is false when the payment
// is smaller than minimum (quote 1e6) either way.
func FundingOccurrence(p *events.FundingPayment, minimum int64) (o Occurrence, ok bool) {
	v, err := p.FundingPayment.Int64()
	if err != nil {
		// Beyond int64 (over nine trillion dollars): large by any measure.
		v = minimum
	}
	switch {
	case v == math.MinInt64:
		v = math.MaxInt64
	case v < 0:
		v = -v
	}
	if v < minimum || v == 0 {
		return Occurrence{}, false
	}
	idx := p.MarketIndex
	return Occurrence{Source: SourceFundingPayment, Account: p.User, Ts: p.Ts, TxSig: p.TxSig, TxSigIndex: p.TxSigIndex,
		MarketType: events.MarketTypePerp, MarketIndex: &idx, Funding: p.FundingPayment}, true
}
