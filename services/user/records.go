package user

import (
	"encoding/json"
	"fmt"

	"github.com/tidemark/tidemark/platform/events"
)

// fillOnly are the order action fields that only fills and the side an action concerns carry: the
// API has null for them on other actions, where the record type has empty strings.
var fillOnly = []string{
	"fillerReward", "baseAssetAmountFilled", "quoteAssetAmountFilled", "takerFee", "makerRebate", "referrerReward",
	"quoteAssetAmountSurplus", "oraclePrice", "makerFee", "spotFulfillmentMethodFee", "takerOrderBaseAssetAmount",
	"takerOrderCumulativeBaseAssetAmountFilled", "takerOrderCumulativeQuoteAssetAmountFilled", "makerOrderBaseAssetAmount",
	"makerOrderCumulativeBaseAssetAmountFilled", "makerOrderCumulativeQuoteAssetAmountFilled", "filler", "fillRecordId",
	"taker", "takerOrderId", "takerOrderDirection", "maker", "makerOrderId", "makerOrderDirection",
}

// ActionJSON is the API's JSON of an order action other than a fill: its empty fill-only and
// other-side fields are null.
func ActionJSON(a *events.OrderAction) ([]byte, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode order action: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("encode order action: %w", err)
	}
	for _, k := range fillOnly {
		if v, ok := fields[k]; ok && string(v) == `""` {
			fields[k] = json.RawMessage("null")
		}
	}
	return json.Marshal(fields)
}

// LiquidationMarkets are the perp and the spot market a liquidation concerns, nil where it concerns
// none: an export of one market's liquidations selects by them.
func LiquidationMarkets(r *events.Liquidation) (perp, spot *int) {
	switch r.LiquidationType {
	case events.LiquidationTypePerp:
		return r.LiquidatePerpMarketIndex, nil
	case events.LiquidationTypeSpot:
		return nil, r.LiquidateSpotLiabilityMarketIndex
	case events.LiquidationTypeBorrowForPerpPnl:
		return r.LiquidateBorrowForPerpPnlPerpMarketIndex, r.LiquidateBorrowForPerpPnlLiabilityMarketIndex
	case events.LiquidationTypePerpPnlForDeposit:
		return r.LiquidatePerpPnlForDepositPerpMarketIndex, r.LiquidatePerpPnlForDepositAssetMarketIndex
	case events.LiquidationTypePerpBankruptcy:
		return r.PerpBankruptcyMarketIndex, nil
	case events.LiquidationTypeSpotBankruptcy:
		return nil, r.SpotBankruptcyMarketIndex
	}
	return nil, nil
}
