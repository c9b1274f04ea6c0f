package user

import (
	"encoding/json"
	"fmt"
	"strings"

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

// nullFillOnly rewrites the empty fillOnly fields of an action as json.Marshal writes it ("name":"")
// to null. The pattern cannot occur inside a string value, whose quotes are escaped.
var nullFillOnly = func() *strings.Replacer {
	var pairs []string
	for _, k := range fillOnly {
		pairs = append(pairs, `"`+k+`":""`, `"`+k+`":null`)
	}
	return strings.NewReplacer(pairs...)
}()

// ActionJSON is the API's JSON of an order action other than a fill: its empty fill-only and
// other-side fields are null.
func ActionJSON(a *events.OrderAction) ([]byte, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode order action: %w", err)
	}
	return []byte(nullFillOnly.Replace(string(b))), nil
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
