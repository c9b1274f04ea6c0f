package records

import (
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// The records' names of the event enums' variants, indexed by the variant. Most are the IDL name
// in lowerCamel, but the API spells a few its own way ("orderFilledWithAmm" for
// OrderFilledWithAMM), so each is written out rather than derived.

var directionNames = [...]string{
	drift.PositionDirectionLong:  events.DirectionLong,
	drift.PositionDirectionShort: events.DirectionShort,
}

var actionNames = [...]string{
	drift.OrderActionPlace:   events.ActionPlace,
	drift.OrderActionCancel:  events.ActionCancel,
	drift.OrderActionFill:    events.ActionFill,
	drift.OrderActionTrigger: events.ActionTrigger,
	drift.OrderActionExpire:  events.ActionExpire,
}

var explanationNames = [...]string{
	drift.OrderActionExplanationNone:                             events.ExplanationNone,
	drift.OrderActionExplanationInsufficientFreeCollateral:       events.ExplanationInsufficientFreeCollateral,
	drift.OrderActionExplanationOraclePriceBreachedLimitPrice:    events.ExplanationOraclePriceBreachedLimitPrice,
	drift.OrderActionExplanationMarketOrderFilledToLimitPrice:    events.ExplanationMarketOrderFilledToLimitPrice,
	drift.OrderActionExplanationOrderExpired:                     events.ExplanationOrderExpired,
	drift.OrderActionExplanationLiquidation:                      events.ExplanationLiquidation,
	drift.OrderActionExplanationOrderFilledWithAMM:               events.ExplanationOrderFilledWithAmm,
	drift.OrderActionExplanationOrderFilledWithAMMJit:            events.ExplanationOrderFilledWithAmmJit,
	drift.OrderActionExplanationOrderFilledWithMatch:             events.ExplanationOrderFilledWithMatch,
	drift.OrderActionExplanationOrderFilledWithMatchJit:          events.ExplanationOrderFilledWithMatchJit,
	drift.OrderActionExplanationMarketExpired:                    events.ExplanationMarketExpired,
	drift.OrderActionExplanationRiskingIncreasingOrder:           events.ExplanationRiskingIncreasingOrder,
	drift.OrderActionExplanationReduceOnlyOrderIncreasedPosition: events.ExplanationReduceOnlyOrderIncreasedPosition,
	drift.OrderActionExplanationOrderFillWithSerum:               events.ExplanationOrderFillWithSerum,
	drift.OrderActionExplanationNoBorrowLiquidity:                events.ExplanationNoBorrowLiquidity,
	drift.OrderActionExplanationOrderFillWithPhoenix:             events.ExplanationOrderFillWithPhoenix,
	drift.OrderActionExplanationOrderFilledWithAMMJitLPSplit:     events.ExplanationOrderFilledWithAmmJitLpSplit,
	drift.OrderActionExplanationOrderFilledWithLPJit:             events.ExplanationOrderFilledWithLpJit,
	drift.OrderActionExplanationDeriskLp:                         events.ExplanationDeriskLp,
	drift.OrderActionExplanationOrderFilledWithOpenbookV2:        events.ExplanationOrderFilledWithOpenbookV2,
	drift.OrderActionExplanationTransferPerpPosition:             events.ExplanationTransferPerpPosition,
}

var orderStatusNames = [...]string{
	drift.OrderStatusInit:     events.OrderStatusInit,
	drift.OrderStatusOpen:     events.OrderStatusOpen,
	drift.OrderStatusFilled:   events.OrderStatusFilled,
	drift.OrderStatusCanceled: events.OrderStatusCanceled,
}

var orderTypeNames = [...]string{
	drift.OrderTypeMarket:        events.OrderTypeMarket,
	drift.OrderTypeLimit:         events.OrderTypeLimit,
	drift.OrderTypeTriggerMarket: events.OrderTypeTriggerMarket,
	drift.OrderTypeTriggerLimit:  events.OrderTypeTriggerLimit,
	drift.OrderTypeOracle:        events.OrderTypeOracle,
}

var triggerConditionNames = [...]string{
	drift.OrderTriggerConditionAbove:          events.TriggerAbove,
	drift.OrderTriggerConditionBelow:          events.TriggerBelow,
	drift.OrderTriggerConditionTriggeredAbove: events.TriggerTriggeredAbove,
	drift.OrderTriggerConditionTriggeredBelow: events.TriggerTriggeredBelow,
}

var liquidationTypeNames = [...]string{
	drift.LiquidationTypeLiquidatePerp:              events.LiquidationTypePerp,
	drift.LiquidationTypeLiquidateSpot:              events.LiquidationTypeSpot,
	drift.LiquidationTypeLiquidateBorrowForPerpPnl:  events.LiquidationTypeBorrowForPerpPnl,
	drift.LiquidationTypeLiquidatePerpPnlForDeposit: events.LiquidationTypePerpPnlForDeposit,
	drift.LiquidationTypePerpBankruptcy:             events.LiquidationTypePerpBankruptcy,
	drift.LiquidationTypeSpotBankruptcy:             events.LiquidationTypeSpotBankruptcy,
}

var depositDirectionNames = [...]string{
	drift.DepositDirectionDeposit:  events.DepositDirectionDeposit,
	drift.DepositDirectionWithdraw: events.DepositDirectionWithdraw,
}

var depositExplanationNames = [...]string{
	drift.DepositExplanationNone:        events.DepositExplanationNone,
	drift.DepositExplanationTransfer:    events.DepositExplanationTransfer,
	drift.DepositExplanationBorrow:      events.DepositExplanationBorrow,
	drift.DepositExplanationRepayBorrow: events.DepositExplanationRepayBorrow,
	drift.DepositExplanationReward:      events.DepositExplanationReward,
}

var settlePnlExplanationNames = [...]string{
	drift.SettlePnlExplanationNone:            events.SettlePnlExplanationNone,
	drift.SettlePnlExplanationExpiredPosition: events.SettlePnlExplanationExpiredPosition,
}

var stakeActionNames = [...]string{
	drift.StakeActionStake:                events.IFStakeActionStake,
	drift.StakeActionUnstakeRequest:       events.IFStakeActionUnstakeRequest,
	drift.StakeActionUnstakeCancelRequest: events.IFStakeActionUnstakeCancelRequest,
	drift.StakeActionUnstake:              events.IFStakeActionUnstake,
	drift.StakeActionUnstakeTransfer:      events.IFStakeActionUnstakeTransfer,
	drift.StakeActionStakeTransfer:        events.IFStakeActionStakeTransfer,
	drift.StakeActionAdminDeposit:         events.IFStakeActionAdminDeposit,
}

var lpActionNames = [...]string{
	drift.LPActionAddLiquidity:          events.LPActionAddLiquidity,
	drift.LPActionRemoveLiquidity:       events.LPActionRemoveLiquidity,
	drift.LPActionSettleLiquidity:       events.LPActionSettleLiquidity,
	drift.LPActionRemoveLiquidityDerisk: events.LPActionRemoveLiquidityDerisk,
}
