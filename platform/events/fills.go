package events

import "time"

// Order actions.
const (
	ActionFill    = "fill"
	ActionPlace   = "place"
	ActionCancel  = "cancel"
	ActionTrigger = "trigger"
	ActionExpire  = "expire"
)

// Order action explanations (protocol-v2 OrderActionExplanation, lowerCamel as the API emits them).
const (
	ExplanationNone                             = "none"
	ExplanationInsufficientFreeCollateral       = "insufficientFreeCollateral"
	ExplanationOraclePriceBreachedLimitPrice    = "oraclePriceBreachedLimitPrice"
	ExplanationMarketOrderFilledToLimitPrice    = "marketOrderFilledToLimitPrice"
	ExplanationOrderExpired                     = "orderExpired"
	ExplanationLiquidation                      = "liquidation"
	ExplanationOrderFilledWithAmm               = "orderFilledWithAmm"
	ExplanationOrderFilledWithAmmJit            = "orderFilledWithAmmJit"
	ExplanationOrderFilledWithMatch             = "orderFilledWithMatch"
	ExplanationOrderFilledWithMatchJit          = "orderFilledWithMatchJit"
	ExplanationMarketExpired                    = "marketExpired"
	ExplanationRiskingIncreasingOrder           = "riskingIncreasingOrder"
	ExplanationReduceOnlyOrderIncreasedPosition = "reduceOnlyOrderIncreasedPosition"
	ExplanationOrderFillWithSerum               = "orderFillWithSerum"
	ExplanationNoBorrowLiquidity                = "noBorrowLiquidity"
	ExplanationOrderFillWithPhoenix             = "orderFillWithPhoenix"
	ExplanationOrderFilledWithAmmJitLpSplit     = "orderFilledWithAmmJitLpSplit"
	ExplanationOrderFilledWithLpJit             = "orderFilledWithLpJit"
	ExplanationDeriskLp                         = "deriskLp"
	ExplanationOrderFilledWithOpenbookV2        = "orderFilledWithOpenbookV2"
	ExplanationTransferPerpPosition             = "transferPerpPosition"
)

// Position directions.
const (
	DirectionLong  = "long"
	DirectionShort = "short"
)

func actionExplanations() []string {
	return []string{
		ExplanationNone, ExplanationInsufficientFreeCollateral, ExplanationOraclePriceBreachedLimitPrice,
		ExplanationMarketOrderFilledToLimitPrice, ExplanationOrderExpired, ExplanationLiquidation,
		ExplanationOrderFilledWithAmm, ExplanationOrderFilledWithAmmJit, ExplanationOrderFilledWithMatch,
		ExplanationOrderFilledWithMatchJit, ExplanationMarketExpired, ExplanationRiskingIncreasingOrder,
		ExplanationReduceOnlyOrderIncreasedPosition, ExplanationOrderFillWithSerum, ExplanationNoBorrowLiquidity,
		ExplanationOrderFillWithPhoenix, ExplanationOrderFilledWithAmmJitLpSplit, ExplanationOrderFilledWithLpJit,
		ExplanationDeriskLp, ExplanationOrderFilledWithOpenbookV2, ExplanationTransferPerpPosition,
	}
}

// Fill is the protocol's order action record; with Action "fill" it is a trade (protocol.fills), with
// any other action an order action (protocol.order-actions, see OrderAction). Field names and types
// follow the API's fill record: ids are unsigned integer strings, amounts are Amounts (base 1e9 for perp
// markets and the spot market's token precision for spot markets, quote and fees 1e6, prices 1e6).
//
// For actions other than fill the fill-only fields (amounts filled, fees, maker side, fillRecordId) are
// empty, where the API has null. An AMM fill has no maker: maker, makerOrderId and makerOrderDirection
// are empty and the maker order amounts are "0".
type Fill struct {
	Tx
	FillerReward                               Amount     `json:"fillerReward"`
	BaseAssetAmountFilled                      Amount     `json:"baseAssetAmountFilled"`
	QuoteAssetAmountFilled                     Amount     `json:"quoteAssetAmountFilled"`
	TakerFee                                   Amount     `json:"takerFee"`
	MakerRebate                                Amount     `json:"makerRebate"`
	ReferrerReward                             Amount     `json:"referrerReward"`
	QuoteAssetAmountSurplus                    Amount     `json:"quoteAssetAmountSurplus"`
	TakerOrderBaseAssetAmount                  Amount     `json:"takerOrderBaseAssetAmount"`
	TakerOrderCumulativeBaseAssetAmountFilled  Amount     `json:"takerOrderCumulativeBaseAssetAmountFilled"`
	TakerOrderCumulativeQuoteAssetAmountFilled Amount     `json:"takerOrderCumulativeQuoteAssetAmountFilled"`
	MakerOrderBaseAssetAmount                  Amount     `json:"makerOrderBaseAssetAmount"`
	MakerOrderCumulativeBaseAssetAmountFilled  Amount     `json:"makerOrderCumulativeBaseAssetAmountFilled"`
	MakerOrderCumulativeQuoteAssetAmountFilled Amount     `json:"makerOrderCumulativeQuoteAssetAmountFilled"`
	OraclePrice                                Amount     `json:"oraclePrice"`
	MakerFee                                   Amount     `json:"makerFee"` // negative when the maker earns a rebate
	Action                                     string     `json:"action"`
	ActionExplanation                          string     `json:"actionExplanation"`
	MarketIndex                                int        `json:"marketIndex"`
	MarketType                                 MarketType `json:"marketType"`
	Filler                                     string     `json:"filler"`
	FillRecordID                               string     `json:"fillRecordId"`
	Taker                                      string     `json:"taker"`
	TakerOrderID                               string     `json:"takerOrderId"`
	TakerOrderDirection                        string     `json:"takerOrderDirection"`
	Maker                                      string     `json:"maker"`
	MakerOrderID                               string     `json:"makerOrderId"`
	MakerOrderDirection                        string     `json:"makerOrderDirection"`
	SpotFulfillmentMethodFee                   Amount     `json:"spotFulfillmentMethodFee"`

	// Optional in the API record.
	TakerExistingQuoteEntryAmount Amount `json:"takerExistingQuoteEntryAmount,omitempty"`
	TakerExistingBaseAssetAmount  Amount `json:"takerExistingBaseAssetAmount,omitempty"`
	MakerExistingQuoteEntryAmount Amount `json:"makerExistingQuoteEntryAmount,omitempty"`
	MakerExistingBaseAssetAmount  Amount `json:"makerExistingBaseAssetAmount,omitempty"`
	BitFlags                      int    `json:"bitFlags,omitempty"`
	MarketFilter                  string `json:"marketFilter,omitempty"` // perp|spot|prediction
	User                          string `json:"user,omitempty"`         // the account a user-scoped view is about
	Symbol                        string `json:"symbol,omitempty"`
}

// OrderAction is an order action record of any action. It is the same type as Fill, so a consumer of
// both protocol.fills and protocol.order-actions handles one type.
type OrderAction = Fill

// EventType is "fill" for fills and "orderAction" for every other action.
func (r *Fill) EventType() string {
	if r.Action == ActionFill {
		return "fill"
	}
	return "orderAction"
}

func (r *Fill) Validate() error { return r.ValidateAt(time.Now()) }

// ValidateAt checks the record against the clock now. Fills must carry every field the API marks
// required; other actions only the order side they act on.
func (r *Fill) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.enum("action", r.Action, ActionFill, ActionPlace, ActionCancel, ActionTrigger, ActionExpire)
	c.enum("actionExplanation", r.ActionExplanation, actionExplanations()...)
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.market(r.MarketType, r.Symbol, r.MarketFilter)
	c.optEnum("takerOrderDirection", r.TakerOrderDirection, DirectionLong, DirectionShort)
	c.optEnum("makerOrderDirection", r.MakerOrderDirection, DirectionLong, DirectionShort)
	if r.Taker == "" && r.Maker == "" {
		c.fail("taker or maker is required")
	}
	if r.Taker != "" {
		c.id("takerOrderId", r.TakerOrderID)
		c.str("takerOrderDirection", r.TakerOrderDirection)
	} else {
		c.optID("takerOrderId", r.TakerOrderID)
	}
	if r.Maker != "" {
		c.id("makerOrderId", r.MakerOrderID)
		c.str("makerOrderDirection", r.MakerOrderDirection)
	} else {
		c.optID("makerOrderId", r.MakerOrderID)
	}
	amounts := []struct {
		name string
		v    Amount
	}{
		{"fillerReward", r.FillerReward}, {"baseAssetAmountFilled", r.BaseAssetAmountFilled},
		{"quoteAssetAmountFilled", r.QuoteAssetAmountFilled}, {"takerFee", r.TakerFee},
		{"makerRebate", r.MakerRebate}, {"referrerReward", r.ReferrerReward},
		{"quoteAssetAmountSurplus", r.QuoteAssetAmountSurplus}, {"oraclePrice", r.OraclePrice},
		{"makerFee", r.MakerFee}, {"spotFulfillmentMethodFee", r.SpotFulfillmentMethodFee},
		{"takerOrderBaseAssetAmount", r.TakerOrderBaseAssetAmount},
		{"takerOrderCumulativeBaseAssetAmountFilled", r.TakerOrderCumulativeBaseAssetAmountFilled},
		{"takerOrderCumulativeQuoteAssetAmountFilled", r.TakerOrderCumulativeQuoteAssetAmountFilled},
		{"makerOrderBaseAssetAmount", r.MakerOrderBaseAssetAmount},
		{"makerOrderCumulativeBaseAssetAmountFilled", r.MakerOrderCumulativeBaseAssetAmountFilled},
		{"makerOrderCumulativeQuoteAssetAmountFilled", r.MakerOrderCumulativeQuoteAssetAmountFilled},
	}
	fill := r.Action == ActionFill
	for _, a := range amounts {
		if fill {
			c.amount(a.name, a.v)
		} else {
			c.optAmount(a.name, a.v)
		}
	}
	if fill {
		c.id("fillRecordId", r.FillRecordID)
	} else {
		c.optID("fillRecordId", r.FillRecordID)
	}
	c.optAmount("takerExistingQuoteEntryAmount", r.TakerExistingQuoteEntryAmount)
	c.optAmount("takerExistingBaseAssetAmount", r.TakerExistingBaseAssetAmount)
	c.optAmount("makerExistingQuoteEntryAmount", r.MakerExistingQuoteEntryAmount)
	c.optAmount("makerExistingBaseAssetAmount", r.MakerExistingBaseAssetAmount)
	return c.err(r.EventType())
}

// Order statuses (protocol OrderStatus).
const (
	OrderStatusInit     = "init"
	OrderStatusOpen     = "open"
	OrderStatusFilled   = "filled"
	OrderStatusCanceled = "canceled"
)

// Order types.
const (
	OrderTypeMarket        = "market"
	OrderTypeLimit         = "limit"
	OrderTypeTriggerMarket = "triggerMarket"
	OrderTypeTriggerLimit  = "triggerLimit"
	OrderTypeOracle        = "oracle"
)

// Trigger conditions.
const (
	TriggerAbove          = "above"
	TriggerBelow          = "below"
	TriggerTriggeredAbove = "triggeredAbove"
	TriggerTriggeredBelow = "triggeredBelow"
)

// Last action statuses of an order as the API reports them (snake case there, kept as is).
const (
	LastActionOpen                 = "open"
	LastActionFilled               = "filled"
	LastActionPartialFill          = "partial_fill"
	LastActionPartialFillCancelled = "partial_fill_cancelled"
	LastActionCancelled            = "cancelled"
	LastActionExpired              = "expired"
	LastActionTrigger              = "trigger"
)

// Order is an order with its latest state (protocol.orders); ts/txSig/slot are those of the placement,
// lastUpdatedTs the time of the last action. A consumer keeps the record with the newest lastUpdatedTs
// per (user, orderId).
type Order struct {
	Tx
	User                      string     `json:"user"`
	Status                    string     `json:"status"`
	OrderType                 string     `json:"orderType"`
	MarketType                MarketType `json:"marketType"`
	MarketFilter              string     `json:"marketFilter"`
	OrderID                   string     `json:"orderId"`
	UserOrderID               int        `json:"userOrderId"`
	MarketIndex               int        `json:"marketIndex"`
	Price                     Amount     `json:"price"`
	BaseAssetAmount           Amount     `json:"baseAssetAmount"`
	QuoteAssetAmount          Amount     `json:"quoteAssetAmount"`
	BaseAssetAmountFilled     Amount     `json:"baseAssetAmountFilled"`
	QuoteAssetAmountFilled    Amount     `json:"quoteAssetAmountFilled"`
	Direction                 string     `json:"direction"`
	ReduceOnly                bool       `json:"reduceOnly"`
	TriggerPrice              Amount     `json:"triggerPrice"`
	TriggerCondition          string     `json:"triggerCondition"`
	ExistingPositionDirection string     `json:"existingPositionDirection"`
	PostOnly                  bool       `json:"postOnly"`
	ImmediateOrCancel         bool       `json:"immediateOrCancel"`
	OraclePriceOffset         Amount     `json:"oraclePriceOffset"`
	AuctionDuration           int        `json:"auctionDuration"`
	AuctionStartPrice         Amount     `json:"auctionStartPrice"`
	AuctionEndPrice           Amount     `json:"auctionEndPrice"`
	MaxTs                     int64      `json:"maxTs"`
	Symbol                    string     `json:"symbol"`
	LastUpdatedTs             int64      `json:"lastUpdatedTs"`
	LastActionStatus          string     `json:"lastActionStatus"`
	LastActionExplanation     string     `json:"lastActionExplanation"`
	CumulativeFee             Amount     `json:"cumulativeFee"`
}

func (*Order) EventType() string { return "order" }
func (r *Order) Validate() error { return r.ValidateAt(time.Now()) }
func (r *Order) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.str("user", r.User)
	c.enum("status", r.Status, OrderStatusInit, OrderStatusOpen, OrderStatusFilled, OrderStatusCanceled)
	c.enum("orderType", r.OrderType, OrderTypeMarket, OrderTypeLimit, OrderTypeTriggerMarket, OrderTypeTriggerLimit, OrderTypeOracle)
	c.market(r.MarketType, r.Symbol, r.MarketFilter)
	c.str("marketFilter", r.MarketFilter)
	c.str("symbol", r.Symbol)
	c.id("orderId", r.OrderID)
	c.nonNeg("userOrderId", int64(r.UserOrderID))
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.amount("price", r.Price)
	c.amount("baseAssetAmount", r.BaseAssetAmount)
	c.amount("quoteAssetAmount", r.QuoteAssetAmount)
	c.amount("baseAssetAmountFilled", r.BaseAssetAmountFilled)
	c.amount("quoteAssetAmountFilled", r.QuoteAssetAmountFilled)
	c.enum("direction", r.Direction, DirectionLong, DirectionShort)
	c.amount("triggerPrice", r.TriggerPrice)
	c.enum("triggerCondition", r.TriggerCondition, TriggerAbove, TriggerBelow, TriggerTriggeredAbove, TriggerTriggeredBelow)
	c.enum("existingPositionDirection", r.ExistingPositionDirection, DirectionLong, DirectionShort)
	c.amount("oraclePriceOffset", r.OraclePriceOffset)
	c.nonNeg("auctionDuration", int64(r.AuctionDuration))
	c.amount("auctionStartPrice", r.AuctionStartPrice)
	c.amount("auctionEndPrice", r.AuctionEndPrice)
	c.nonNeg("maxTs", r.MaxTs)
	if r.LastUpdatedTs < r.Ts {
		c.fail("lastUpdatedTs %d before ts %d", r.LastUpdatedTs, r.Ts)
	}
	c.enum("lastActionStatus", r.LastActionStatus, LastActionOpen, LastActionFilled, LastActionPartialFill,
		LastActionPartialFillCancelled, LastActionCancelled, LastActionExpired, LastActionTrigger)
	c.enum("lastActionExplanation", r.LastActionExplanation, actionExplanations()...)
	c.amount("cumulativeFee", r.CumulativeFee)
	return c.err(r.EventType())
}
