package records

import (
	"strconv"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// Liquidation maps a LiquidationRecord of any of its six types. The event holds all six
// sub-records whatever its type (the others zeroed) and the record, like the Data API, carries
// them all. A perp bankruptcy's clawback user is null when the event has none, and its payment
// "0" then. No market is looked up: the record names markets by index only.
func Liquidation(ev *drift.LiquidationRecord, c Context) (*events.Liquidation, error) {
	typ, err := enumName(liquidationTypeNames[:], ev.LiquidationType)
	if err != nil {
		return nil, wrap("LiquidationRecord", err)
	}
	ids := make([]string, len(ev.CanceledOrderIds))
	for i, v := range ev.CanceledOrderIds {
		ids[i] = id(v)
	}
	idx := func(v uint16) *int { return new(int(v)) }
	p, s, b, d := &ev.LiquidatePerp, &ev.LiquidateSpot, &ev.LiquidateBorrowForPerpPnl, &ev.LiquidatePerpPnlForDeposit
	pb, sb := &ev.PerpBankruptcy, &ev.SpotBankruptcy
	var clawback *string
	if pb.ClawbackUser.Some {
		clawback = new(pb.ClawbackUser.Value.String())
	}
	clawbackPayment := events.Amount("0")
	if pb.ClawbackUserPayment.Some {
		clawbackPayment = events.Amount(pb.ClawbackUserPayment.Value.String())
	}
	return &events.Liquidation{
		Tx:                tx(ev.TS, c),
		LiquidationType:   typ,
		User:              ev.User.String(),
		Liquidator:        ev.Liquidator.String(),
		MarginRequirement: events.Amount(ev.MarginRequirement.String()),
		TotalCollateral:   events.Amount(ev.TotalCollateral.String()),
		MarginFreed:       uamt(ev.MarginFreed),
		LiquidationID:     int(ev.LiquidationID),
		Bankrupt:          ev.Bankrupt,
		CanceledOrderIDs:  ids,
		BitFlags:          int(ev.BitFlags),

		LiquidatePerpMarketIndex:       idx(p.MarketIndex),
		LiquidatePerpOraclePrice:       samt(p.OraclePrice),
		LiquidatePerpBaseAssetAmount:   samt(p.BaseAssetAmount),
		LiquidatePerpQuoteAssetAmount:  samt(p.QuoteAssetAmount),
		LiquidatePerpLpShares:          uamt(p.LpShares),
		LiquidatePerpFillRecordID:      id(p.FillRecordID),
		LiquidatePerpUserOrderID:       id(p.UserOrderID),
		LiquidatePerpLiquidatorOrderID: id(p.LiquidatorOrderID),
		LiquidatePerpLiquidatorFee:     uamt(p.LiquidatorFee),
		LiquidatePerpIfFee:             uamt(p.IfFee),

		LiquidateSpotAssetMarketIndex:     idx(s.AssetMarketIndex),
		LiquidateSpotAssetPrice:           samt(s.AssetPrice),
		LiquidateSpotAssetTransfer:        events.Amount(s.AssetTransfer.String()),
		LiquidateSpotLiabilityMarketIndex: idx(s.LiabilityMarketIndex),
		LiquidateSpotLiabilityPrice:       samt(s.LiabilityPrice),
		LiquidateSpotLiabilityTransfer:    events.Amount(s.LiabilityTransfer.String()),
		LiquidateSpotIfFee:                uamt(s.IfFee),

		LiquidateBorrowForPerpPnlPerpMarketIndex:      idx(b.PerpMarketIndex),
		LiquidateBorrowForPerpPnlMarketOraclePrice:    samt(b.MarketOraclePrice),
		LiquidateBorrowForPerpPnlPnlTransfer:          events.Amount(b.PnlTransfer.String()),
		LiquidateBorrowForPerpPnlLiabilityMarketIndex: idx(b.LiabilityMarketIndex),
		LiquidateBorrowForPerpPnlLiabilityPrice:       samt(b.LiabilityPrice),
		LiquidateBorrowForPerpPnlLiabilityTransfer:    events.Amount(b.LiabilityTransfer.String()),

		LiquidatePerpPnlForDepositPerpMarketIndex:   idx(d.PerpMarketIndex),
		LiquidatePerpPnlForDepositMarketOraclePrice: samt(d.MarketOraclePrice),
		LiquidatePerpPnlForDepositPnlTransfer:       events.Amount(d.PnlTransfer.String()),
		LiquidatePerpPnlForDepositAssetMarketIndex:  idx(d.AssetMarketIndex),
		LiquidatePerpPnlForDepositAssetPrice:        samt(d.AssetPrice),
		LiquidatePerpPnlForDepositAssetTransfer:     events.Amount(d.AssetTransfer.String()),

		PerpBankruptcyMarketIndex:                idx(pb.MarketIndex),
		PerpBankruptcyPnl:                        events.Amount(pb.Pnl.String()),
		PerpBankruptcyIfPayment:                  events.Amount(pb.IfPayment.String()),
		PerpBankruptcyClawbackUser:               clawback,
		PerpBankruptcyClawbackUserPayment:        clawbackPayment,
		PerpBankruptcyCumulativeFundingRateDelta: events.Amount(pb.CumulativeFundingRateDelta.String()),

		SpotBankruptcyMarketIndex:                    idx(sb.MarketIndex),
		SpotBankruptcyBorrowAmount:                   events.Amount(sb.BorrowAmount.String()),
		SpotBankruptcyIfPayment:                      events.Amount(sb.IfPayment.String()),
		SpotBankruptcyCumulativeDepositInterestDelta: events.Amount(sb.CumulativeDepositInterestDelta.String()),
	}, nil
}

// LiquidationEvent is the LiquidationRecord of a liquidation record. Fields the record leaves
// out (nil market indexes, "" amounts: producers that wrote only the type's own sub-record) are
// zero, as the record type documents. The clawback payment is Some when there is a clawback user
// or a payment, None otherwise, which is how the program writes a bankruptcy without one.
func LiquidationEvent(r *events.Liquidation) (*drift.LiquidationRecord, error) {
	e := &enc{zeroEmpty: true}
	idx := func(name string, v *int) uint16 {
		if v == nil {
			return 0
		}
		return small[uint16](e, name, *v)
	}
	ids := make([]uint32, len(r.CanceledOrderIDs))
	for i, v := range r.CanceledOrderIDs {
		ids[i] = uintOf[uint32](e, "canceledOrderIds["+strconv.Itoa(i)+"]", v)
	}
	pb := drift.PerpBankruptcyRecord{
		MarketIndex:                idx("perpBankruptcy_marketIndex", r.PerpBankruptcyMarketIndex),
		Pnl:                        e.i128("perpBankruptcy_pnl", string(r.PerpBankruptcyPnl)),
		IfPayment:                  e.u128("perpBankruptcy_ifPayment", string(r.PerpBankruptcyIfPayment)),
		CumulativeFundingRateDelta: e.i128("perpBankruptcy_cumulativeFundingRateDelta", string(r.PerpBankruptcyCumulativeFundingRateDelta)),
	}
	if r.PerpBankruptcyClawbackUser != nil {
		pb.ClawbackUser = borsh.Some(e.key("perpBankruptcy_clawbackUser", *r.PerpBankruptcyClawbackUser))
	}
	if pay := r.PerpBankruptcyClawbackUserPayment; pb.ClawbackUser.Some || (pay != "" && pay != "0") {
		pb.ClawbackUserPayment = borsh.Some(e.u128("perpBankruptcy_clawbackUserPayment", string(pay)))
	}
	ev := &drift.LiquidationRecord{
		TS:                r.Ts,
		LiquidationType:   enumOf[drift.LiquidationType](e, "liquidationType", liquidationTypeNames[:], r.LiquidationType),
		User:              e.key("user", r.User),
		Liquidator:        e.key("liquidator", r.Liquidator),
		MarginRequirement: e.u128("marginRequirement", string(r.MarginRequirement)),
		TotalCollateral:   e.i128("totalCollateral", string(r.TotalCollateral)),
		MarginFreed:       uintOf[uint64](e, "marginFreed", string(r.MarginFreed)),
		LiquidationID:     small[uint16](e, "liquidationId", r.LiquidationID),
		Bankrupt:          r.Bankrupt,
		CanceledOrderIds:  ids,
		LiquidatePerp: drift.LiquidatePerpRecord{
			MarketIndex:       idx("liquidatePerp_marketIndex", r.LiquidatePerpMarketIndex),
			OraclePrice:       intOf[int64](e, "liquidatePerp_oraclePrice", string(r.LiquidatePerpOraclePrice)),
			BaseAssetAmount:   intOf[int64](e, "liquidatePerp_baseAssetAmount", string(r.LiquidatePerpBaseAssetAmount)),
			QuoteAssetAmount:  intOf[int64](e, "liquidatePerp_quoteAssetAmount", string(r.LiquidatePerpQuoteAssetAmount)),
			LpShares:          uintOf[uint64](e, "liquidatePerp_lpShares", string(r.LiquidatePerpLpShares)),
			FillRecordID:      uintOf[uint64](e, "liquidatePerp_fillRecordId", r.LiquidatePerpFillRecordID),
			UserOrderID:       uintOf[uint32](e, "liquidatePerp_userOrderId", r.LiquidatePerpUserOrderID),
			LiquidatorOrderID: uintOf[uint32](e, "liquidatePerp_liquidatorOrderId", r.LiquidatePerpLiquidatorOrderID),
			LiquidatorFee:     uintOf[uint64](e, "liquidatePerp_liquidatorFee", string(r.LiquidatePerpLiquidatorFee)),
			IfFee:             uintOf[uint64](e, "liquidatePerp_ifFee", string(r.LiquidatePerpIfFee)),
		},
		LiquidateSpot: drift.LiquidateSpotRecord{
			AssetMarketIndex:     idx("liquidateSpot_assetMarketIndex", r.LiquidateSpotAssetMarketIndex),
			AssetPrice:           intOf[int64](e, "liquidateSpot_assetPrice", string(r.LiquidateSpotAssetPrice)),
			AssetTransfer:        e.u128("liquidateSpot_assetTransfer", string(r.LiquidateSpotAssetTransfer)),
			LiabilityMarketIndex: idx("liquidateSpot_liabilityMarketIndex", r.LiquidateSpotLiabilityMarketIndex),
			LiabilityPrice:       intOf[int64](e, "liquidateSpot_liabilityPrice", string(r.LiquidateSpotLiabilityPrice)),
			LiabilityTransfer:    e.u128("liquidateSpot_liabilityTransfer", string(r.LiquidateSpotLiabilityTransfer)),
			IfFee:                uintOf[uint64](e, "liquidateSpot_ifFee", string(r.LiquidateSpotIfFee)),
		},
		LiquidateBorrowForPerpPnl: drift.LiquidateBorrowForPerpPnlRecord{
			PerpMarketIndex:      idx("liquidateBorrowForPerpPnl_perpMarketIndex", r.LiquidateBorrowForPerpPnlPerpMarketIndex),
			MarketOraclePrice:    intOf[int64](e, "liquidateBorrowForPerpPnl_marketOraclePrice", string(r.LiquidateBorrowForPerpPnlMarketOraclePrice)),
			PnlTransfer:          e.u128("liquidateBorrowForPerpPnl_pnlTransfer", string(r.LiquidateBorrowForPerpPnlPnlTransfer)),
			LiabilityMarketIndex: idx("liquidateBorrowForPerpPnl_liabilityMarketIndex", r.LiquidateBorrowForPerpPnlLiabilityMarketIndex),
			LiabilityPrice:       intOf[int64](e, "liquidateBorrowForPerpPnl_liabilityPrice", string(r.LiquidateBorrowForPerpPnlLiabilityPrice)),
			LiabilityTransfer:    e.u128("liquidateBorrowForPerpPnl_liabilityTransfer", string(r.LiquidateBorrowForPerpPnlLiabilityTransfer)),
		},
		LiquidatePerpPnlForDeposit: drift.LiquidatePerpPnlForDepositRecord{
			PerpMarketIndex:   idx("liquidatePerpPnlForDeposit_perpMarketIndex", r.LiquidatePerpPnlForDepositPerpMarketIndex),
			MarketOraclePrice: intOf[int64](e, "liquidatePerpPnlForDeposit_marketOraclePrice", string(r.LiquidatePerpPnlForDepositMarketOraclePrice)),
			PnlTransfer:       e.u128("liquidatePerpPnlForDeposit_pnlTransfer", string(r.LiquidatePerpPnlForDepositPnlTransfer)),
			AssetMarketIndex:  idx("liquidatePerpPnlForDeposit_assetMarketIndex", r.LiquidatePerpPnlForDepositAssetMarketIndex),
			AssetPrice:        intOf[int64](e, "liquidatePerpPnlForDeposit_assetPrice", string(r.LiquidatePerpPnlForDepositAssetPrice)),
			AssetTransfer:     e.u128("liquidatePerpPnlForDeposit_assetTransfer", string(r.LiquidatePerpPnlForDepositAssetTransfer)),
		},
		PerpBankruptcy: pb,
		SpotBankruptcy: drift.SpotBankruptcyRecord{
			MarketIndex:                    idx("spotBankruptcy_marketIndex", r.SpotBankruptcyMarketIndex),
			BorrowAmount:                   e.u128("spotBankruptcy_borrowAmount", string(r.SpotBankruptcyBorrowAmount)),
			IfPayment:                      e.u128("spotBankruptcy_ifPayment", string(r.SpotBankruptcyIfPayment)),
			CumulativeDepositInterestDelta: e.u128("spotBankruptcy_cumulativeDepositInterestDelta", string(r.SpotBankruptcyCumulativeDepositInterestDelta)),
		},
		BitFlags: small[uint8](e, "bitFlags", r.BitFlags),
	}
	if e.err != nil {
		return nil, wrap("LiquidationRecord", e.err)
	}
	return ev, nil
}
