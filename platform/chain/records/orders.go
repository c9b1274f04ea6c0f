package records

import (
	"errors"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// Fill maps an OrderActionRecord of any action: a fill record when the action is fill, an order
// action otherwise (the same type, events.OrderAction).
//
// A fill needs every amount, so the values a fill event leaves out (an AMM fill has no maker, so
// no maker fee or maker order amounts) are "0"; for other actions they stay "" where the API has
// null. makerRebate is makerFee, as the Data API writes it. user is set on order actions, which
// name one account (the taker side, or the maker side for post-only orders), and left empty on
// fills, which are about two.
func (m *Mapper) Fill(ev *drift.OrderActionRecord, c Context) (*events.Fill, error) {
	r, err := m.fill(ev, c)
	return r, wrap("OrderActionRecord", err)
}

func (m *Mapper) fill(ev *drift.OrderActionRecord, c Context) (*events.Fill, error) {
	action, err := enumName(actionNames[:], ev.Action)
	if err != nil {
		return nil, err
	}
	explanation, err := enumName(explanationNames[:], ev.ActionExplanation)
	if err != nil {
		return nil, err
	}
	mt, err := marketType(ev.MarketType)
	if err != nil {
		return nil, err
	}
	market, err := m.cat.Market(mt, int(ev.MarketIndex))
	if err != nil {
		return nil, err
	}
	takerDir, err := optDirection(ev.TakerOrderDirection)
	if err != nil {
		return nil, err
	}
	makerDir, err := optDirection(ev.MakerOrderDirection)
	if err != nil {
		return nil, err
	}
	none := events.Amount("")
	if ev.Action == drift.OrderActionFill {
		none = "0"
	}
	r := &events.Fill{
		Tx:                       tx(ev.TS, c),
		FillerReward:             optU(ev.FillerReward, none),
		BaseAssetAmountFilled:    optU(ev.BaseAssetAmountFilled, none),
		QuoteAssetAmountFilled:   optU(ev.QuoteAssetAmountFilled, none),
		TakerFee:                 optU(ev.TakerFee, none),
		MakerRebate:              optS(ev.MakerFee, none),
		ReferrerReward:           optU(ev.ReferrerReward, none),
		QuoteAssetAmountSurplus:  optS(ev.QuoteAssetAmountSurplus, none),
		OraclePrice:              samt(ev.OraclePrice),
		MakerFee:                 optS(ev.MakerFee, none),
		SpotFulfillmentMethodFee: optU(ev.SpotFulfillmentMethodFee, none),
		Action:                   action,
		ActionExplanation:        explanation,
		MarketIndex:              int(ev.MarketIndex),
		MarketType:               mt,
		Filler:                   optKey(ev.Filler),
		FillRecordID:             optID(ev.FillRecordID),

		Taker:                     optKey(ev.Taker),
		TakerOrderID:              optID(ev.TakerOrderID),
		TakerOrderDirection:       takerDir,
		TakerOrderBaseAssetAmount: optU(ev.TakerOrderBaseAssetAmount, none),
		TakerOrderCumulativeBaseAssetAmountFilled:  optU(ev.TakerOrderCumulativeBaseAssetAmountFilled, none),
		TakerOrderCumulativeQuoteAssetAmountFilled: optU(ev.TakerOrderCumulativeQuoteAssetAmountFilled, none),

		Maker:                     optKey(ev.Maker),
		MakerOrderID:              optID(ev.MakerOrderID),
		MakerOrderDirection:       makerDir,
		MakerOrderBaseAssetAmount: optU(ev.MakerOrderBaseAssetAmount, none),
		MakerOrderCumulativeBaseAssetAmountFilled:  optU(ev.MakerOrderCumulativeBaseAssetAmountFilled, none),
		MakerOrderCumulativeQuoteAssetAmountFilled: optU(ev.MakerOrderCumulativeQuoteAssetAmountFilled, none),

		TakerExistingQuoteEntryAmount: optU(ev.TakerExistingQuoteEntryAmount, ""),
		TakerExistingBaseAssetAmount:  optU(ev.TakerExistingBaseAssetAmount, ""),
		MakerExistingQuoteEntryAmount: optU(ev.MakerExistingQuoteEntryAmount, ""),
		MakerExistingBaseAssetAmount:  optU(ev.MakerExistingBaseAssetAmount, ""),
		BitFlags:                      int(ev.BitFlags),
		MarketFilter:                  market.Filter(),
		Symbol:                        market.Symbol,
	}
	if ev.Action != drift.OrderActionFill && (r.Taker == "") != (r.Maker == "") {
		r.User = r.Taker + r.Maker
	}
	return r, nil
}

// OrderActionEvent is the OrderActionRecord of a fill or order action record. A fill's side with no
// account (an AMM fill's maker) has None in all its fields, as the program writes it, whatever "0"s
// the record holds; otherwise "" is None and a value is Some. The record's makerRebate, user,
// symbol and marketFilter are not in the event (makerRebate is makerFee on the way back), and the
// event's triggerPrice, builderIdx and builderFee are not in the record: they are None.
func OrderActionEvent(r *events.Fill) (*drift.OrderActionRecord, error) {
	e := &enc{}
	mt, err := driftMarketType(r.MarketType)
	if err != nil {
		e.fail("marketType", err)
	}
	fill := r.Action == events.ActionFill
	// side blanks a fill's fields of a side that has no account.
	side := func(account, v string) string {
		if fill && account == "" {
			return ""
		}
		return v
	}
	t, k := func(v events.Amount) string { return side(r.Taker, string(v)) }, func(v events.Amount) string { return side(r.Maker, string(v)) }
	ev := &drift.OrderActionRecord{
		TS:                       r.Ts,
		Action:                   enumOf[drift.OrderAction](e, "action", actionNames[:], r.Action),
		ActionExplanation:        enumOf[drift.OrderActionExplanation](e, "actionExplanation", explanationNames[:], r.ActionExplanation),
		MarketIndex:              small[uint16](e, "marketIndex", r.MarketIndex),
		MarketType:               mt,
		Filler:                   e.optKey("filler", r.Filler),
		FillerReward:             optUint[uint64](e, "fillerReward", string(r.FillerReward)),
		FillRecordID:             optUint[uint64](e, "fillRecordId", r.FillRecordID),
		BaseAssetAmountFilled:    optUint[uint64](e, "baseAssetAmountFilled", string(r.BaseAssetAmountFilled)),
		QuoteAssetAmountFilled:   optUint[uint64](e, "quoteAssetAmountFilled", string(r.QuoteAssetAmountFilled)),
		TakerFee:                 optUint[uint64](e, "takerFee", string(r.TakerFee)),
		MakerFee:                 optInt[int64](e, "makerFee", k(r.MakerFee)),
		ReferrerReward:           optUint[uint32](e, "referrerReward", string(r.ReferrerReward)),
		QuoteAssetAmountSurplus:  optInt[int64](e, "quoteAssetAmountSurplus", string(r.QuoteAssetAmountSurplus)),
		SpotFulfillmentMethodFee: optUint[uint64](e, "spotFulfillmentMethodFee", string(r.SpotFulfillmentMethodFee)),

		Taker:                     e.optKey("taker", r.Taker),
		TakerOrderID:              optUint[uint32](e, "takerOrderId", side(r.Taker, r.TakerOrderID)),
		TakerOrderDirection:       optEnum[drift.PositionDirection](e, "takerOrderDirection", directionNames[:], side(r.Taker, r.TakerOrderDirection)),
		TakerOrderBaseAssetAmount: optUint[uint64](e, "takerOrderBaseAssetAmount", t(r.TakerOrderBaseAssetAmount)),
		TakerOrderCumulativeBaseAssetAmountFilled:  optUint[uint64](e, "takerOrderCumulativeBaseAssetAmountFilled", t(r.TakerOrderCumulativeBaseAssetAmountFilled)),
		TakerOrderCumulativeQuoteAssetAmountFilled: optUint[uint64](e, "takerOrderCumulativeQuoteAssetAmountFilled", t(r.TakerOrderCumulativeQuoteAssetAmountFilled)),

		Maker:                     e.optKey("maker", r.Maker),
		MakerOrderID:              optUint[uint32](e, "makerOrderId", side(r.Maker, r.MakerOrderID)),
		MakerOrderDirection:       optEnum[drift.PositionDirection](e, "makerOrderDirection", directionNames[:], side(r.Maker, r.MakerOrderDirection)),
		MakerOrderBaseAssetAmount: optUint[uint64](e, "makerOrderBaseAssetAmount", k(r.MakerOrderBaseAssetAmount)),
		MakerOrderCumulativeBaseAssetAmountFilled:  optUint[uint64](e, "makerOrderCumulativeBaseAssetAmountFilled", k(r.MakerOrderCumulativeBaseAssetAmountFilled)),
		MakerOrderCumulativeQuoteAssetAmountFilled: optUint[uint64](e, "makerOrderCumulativeQuoteAssetAmountFilled", k(r.MakerOrderCumulativeQuoteAssetAmountFilled)),

		OraclePrice:                   intOf[int64](e, "oraclePrice", string(r.OraclePrice)),
		BitFlags:                      small[uint8](e, "bitFlags", r.BitFlags),
		TakerExistingQuoteEntryAmount: optUint[uint64](e, "takerExistingQuoteEntryAmount", string(r.TakerExistingQuoteEntryAmount)),
		TakerExistingBaseAssetAmount:  optUint[uint64](e, "takerExistingBaseAssetAmount", string(r.TakerExistingBaseAssetAmount)),
		MakerExistingQuoteEntryAmount: optUint[uint64](e, "makerExistingQuoteEntryAmount", string(r.MakerExistingQuoteEntryAmount)),
		MakerExistingBaseAssetAmount:  optUint[uint64](e, "makerExistingBaseAssetAmount", string(r.MakerExistingBaseAssetAmount)),
	}
	if e.err != nil {
		return nil, wrap("OrderActionRecord of "+r.EventType(), e.err)
	}
	return ev, nil
}

// Order maps an OrderRecord, which the program emits when an order is placed, to the order as
// placed: status and amounts from the event's order, lastUpdatedTs its ts, lastActionStatus what
// its status says ("open" for an open order), lastActionExplanation none, cumulativeFee 0 (no fee
// before a fill), and quoteAssetAmount the order's quoteAssetAmountFilled, as the Data API writes
// it. Later actions change an order's state; the events do not say it, so a consumer merges the
// order with its actions (protocol.orders keeps the newest lastUpdatedTs).
func (m *Mapper) Order(ev *drift.OrderRecord, c Context) (*events.Order, error) {
	r, err := m.order(ev, c)
	return r, wrap("OrderRecord", err)
}

func (m *Mapper) order(ev *drift.OrderRecord, c Context) (*events.Order, error) {
	o := &ev.Order
	mt, err := marketType(o.MarketType)
	if err != nil {
		return nil, err
	}
	market, err := m.cat.Market(mt, int(o.MarketIndex))
	if err != nil {
		return nil, err
	}
	var errs []error
	name := func(s string, err error) string {
		errs = append(errs, err)
		return s
	}
	r := &events.Order{
		Tx:                        tx(ev.TS, c),
		User:                      ev.User.String(),
		Status:                    name(enumName(orderStatusNames[:], o.Status)),
		OrderType:                 name(enumName(orderTypeNames[:], o.OrderType)),
		MarketType:                mt,
		MarketFilter:              market.Filter(),
		OrderID:                   id(o.OrderID),
		UserOrderID:               int(o.UserOrderID),
		MarketIndex:               int(o.MarketIndex),
		Price:                     uamt(o.Price),
		BaseAssetAmount:           uamt(o.BaseAssetAmount),
		QuoteAssetAmount:          uamt(o.QuoteAssetAmountFilled),
		BaseAssetAmountFilled:     uamt(o.BaseAssetAmountFilled),
		QuoteAssetAmountFilled:    uamt(o.QuoteAssetAmountFilled),
		Direction:                 name(enumName(directionNames[:], o.Direction)),
		ReduceOnly:                o.ReduceOnly,
		TriggerPrice:              uamt(o.TriggerPrice),
		TriggerCondition:          name(enumName(triggerConditionNames[:], o.TriggerCondition)),
		ExistingPositionDirection: name(enumName(directionNames[:], o.ExistingPositionDirection)),
		PostOnly:                  o.PostOnly,
		ImmediateOrCancel:         o.ImmediateOrCancel,
		OraclePriceOffset:         samt(o.OraclePriceOffset),
		AuctionDuration:           int(o.AuctionDuration),
		AuctionStartPrice:         samt(o.AuctionStartPrice),
		AuctionEndPrice:           samt(o.AuctionEndPrice),
		MaxTs:                     o.MaxTS,
		Symbol:                    market.Symbol,
		LastUpdatedTs:             ev.TS,
		LastActionStatus:          lastActionStatus(o.Status),
		LastActionExplanation:     events.ExplanationNone,
		CumulativeFee:             "0",
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// lastActionStatus is the last action an order's status implies when nothing else is known.
func lastActionStatus(s drift.OrderStatus) string {
	switch s {
	case drift.OrderStatusFilled:
		return events.LastActionFilled
	case drift.OrderStatusCanceled:
		return events.LastActionCancelled
	}
	return events.LastActionOpen
}

// OrderEvent is the OrderRecord of an order record: its placement, with the order's state as the
// record has it. The order's slot is the record's slot (the placement's). Not in the event:
// quoteAssetAmount, symbol, marketFilter, lastUpdatedTs, lastActionStatus, lastActionExplanation,
// cumulativeFee. Not in the record: postedSlotTail, bitFlags (0).
func OrderEvent(r *events.Order) (*drift.OrderRecord, error) {
	e := &enc{}
	mt, err := driftMarketType(r.MarketType)
	if err != nil {
		e.fail("marketType", err)
	}
	if r.Slot < 0 {
		e.fail("slot", errors.New("negative"))
	}
	ev := &drift.OrderRecord{
		TS:   r.Ts,
		User: e.key("user", r.User),
		Order: drift.Order{
			Slot:                      uint64(r.Slot),
			Price:                     uintOf[uint64](e, "price", string(r.Price)),
			BaseAssetAmount:           uintOf[uint64](e, "baseAssetAmount", string(r.BaseAssetAmount)),
			BaseAssetAmountFilled:     uintOf[uint64](e, "baseAssetAmountFilled", string(r.BaseAssetAmountFilled)),
			QuoteAssetAmountFilled:    uintOf[uint64](e, "quoteAssetAmountFilled", string(r.QuoteAssetAmountFilled)),
			TriggerPrice:              uintOf[uint64](e, "triggerPrice", string(r.TriggerPrice)),
			AuctionStartPrice:         intOf[int64](e, "auctionStartPrice", string(r.AuctionStartPrice)),
			AuctionEndPrice:           intOf[int64](e, "auctionEndPrice", string(r.AuctionEndPrice)),
			MaxTS:                     r.MaxTs,
			OraclePriceOffset:         intOf[int32](e, "oraclePriceOffset", string(r.OraclePriceOffset)),
			OrderID:                   uintOf[uint32](e, "orderId", r.OrderID),
			MarketIndex:               small[uint16](e, "marketIndex", r.MarketIndex),
			Status:                    enumOf[drift.OrderStatus](e, "status", orderStatusNames[:], r.Status),
			OrderType:                 enumOf[drift.OrderType](e, "orderType", orderTypeNames[:], r.OrderType),
			MarketType:                mt,
			UserOrderID:               small[uint8](e, "userOrderId", r.UserOrderID),
			ExistingPositionDirection: enumOf[drift.PositionDirection](e, "existingPositionDirection", directionNames[:], r.ExistingPositionDirection),
			Direction:                 enumOf[drift.PositionDirection](e, "direction", directionNames[:], r.Direction),
			ReduceOnly:                r.ReduceOnly,
			PostOnly:                  r.PostOnly,
			ImmediateOrCancel:         r.ImmediateOrCancel,
			TriggerCondition:          enumOf[drift.OrderTriggerCondition](e, "triggerCondition", triggerConditionNames[:], r.TriggerCondition),
			AuctionDuration:           small[uint8](e, "auctionDuration", r.AuctionDuration),
		},
	}
	if e.err != nil {
		return nil, wrap("OrderRecord", e.err)
	}
	return ev, nil
}
