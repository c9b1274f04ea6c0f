package txbuild

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// tokenAccounts are what a deposit or a withdrawal moves tokens through.
type tokenAccounts struct {
	market       *drift.SpotMarket
	tokenProgram solana.PublicKey
	userToken    solana.PublicKey
	// extra is appended after the remaining accounts: the mint of a Token-2022 market, which the
	// program needs for transfer_checked.
	extra []solana.AccountMeta
}

func tokens(st State, authority solana.PublicKey, marketIndex uint16) (tokenAccounts, error) {
	m, err := st.spot(marketIndex)
	if err != nil {
		return tokenAccounts{}, err
	}
	if m.TokenProgramFlag&tokenProgramFlagTransferHook != 0 {
		return tokenAccounts{}, fmt.Errorf("spot market %d: %w", marketIndex, ErrTransferHook)
	}
	t := tokenAccounts{market: m, tokenProgram: TokenProgram(m), userToken: UserTokenAccount(authority, m)}
	if m.TokenProgramFlag&tokenProgramFlagToken2022 != 0 {
		t.extra = []solana.AccountMeta{{PublicKey: m.Mint}}
	}
	return t, nil
}

// TokenProgram is the token program of the spot market's mint: SPL Token, or Token-2022 when the
// market says so.
func TokenProgram(m *drift.SpotMarket) solana.PublicKey {
	if m.TokenProgramFlag&tokenProgramFlagToken2022 != 0 {
		return solana.Token2022ProgramID
	}
	return solana.TokenProgramID
}

// UserTokenAccount is the token account a deposit draws from and a withdrawal pays into: the
// authority's associated token account for the market's mint under its token program.
func UserTokenAccount(authority solana.PublicKey, m *drift.SpotMarket) solana.PublicKey {
	return solana.AssociatedTokenAddress(authority, m.Mint, TokenProgram(m))
}

// CreateUserTokenAccount is the associated token program's create of the authority's token
// account for the market's mint, paid by the authority, as the SDK's withdrawal adds it when the
// account is missing (spl-token's non-idempotent create, whose data is empty).
func CreateUserTokenAccount(authority solana.PublicKey, m *drift.SpotMarket) solana.Instruction {
	return solana.Instruction{
		ProgramID: solana.AssociatedTokenProgramID,
		Accounts: []solana.AccountMeta{
			{PublicKey: authority, IsSigner: true, IsWritable: true},
			{PublicKey: UserTokenAccount(authority, m), IsWritable: true},
			{PublicKey: authority},
			{PublicKey: m.Mint},
			{PublicKey: solana.SystemProgramID},
			{PublicKey: TokenProgram(m)},
		},
		Data: []byte{},
	}
}

// Deposit is the deposit of amount (the mint's base units) into spot market marketIndex from the
// authority's token account (getDepositInstruction of an initialised user, not reduce-only).
func Deposit(st State, acct Account, marketIndex uint16, amount uint64) ([]solana.Instruction, error) {
	if err := acct.check(); err != nil {
		return nil, err
	}
	authority := acct.User.Authority
	t, err := tokens(st, authority, marketIndex)
	if err != nil {
		return nil, fmt.Errorf("txbuild: deposit: %w", err)
	}
	rem, err := remainingAccounts(st, acct.User, markets{writableSpot: []uint16{marketIndex}})
	if err != nil {
		return nil, fmt.Errorf("txbuild: deposit into spot market %d: %w", marketIndex, err)
	}
	ix := drift.NewDepositInstruction(
		drift.DepositArgs{MarketIndex: marketIndex, Amount: amount},
		drift.DepositAccounts{
			State:            drift.StateAddress(),
			User:             acct.Address,
			UserStats:        drift.UserStatsAddress(authority),
			Authority:        authority,
			SpotMarketVault:  t.market.Vault,
			UserTokenAccount: t.userToken,
			TokenProgram:     t.tokenProgram,
		},
		append(rem, t.extra...)...)
	return []solana.Instruction{ix}, nil
}

// Withdraw is the withdrawal of amount from spot market marketIndex to the authority's token
// account. It is reduce-only, as the route asks (no borrow): it takes at most the deposit.
func Withdraw(st State, acct Account, marketIndex uint16, amount uint64) ([]solana.Instruction, error) {
	if err := acct.check(); err != nil {
		return nil, err
	}
	authority := acct.User.Authority
	t, err := tokens(st, authority, marketIndex)
	if err != nil {
		return nil, fmt.Errorf("txbuild: withdraw: %w", err)
	}
	rem, err := remainingAccounts(st, acct.User, markets{
		writableSpot: []uint16{marketIndex},
		readableSpot: []uint16{quoteSpotMarketIndex},
	})
	if err != nil {
		return nil, fmt.Errorf("txbuild: withdraw from spot market %d: %w", marketIndex, err)
	}
	ix := drift.NewWithdrawInstruction(
		drift.WithdrawArgs{MarketIndex: marketIndex, Amount: amount, ReduceOnly: true},
		drift.WithdrawAccounts{
			State:            drift.StateAddress(),
			User:             acct.Address,
			UserStats:        drift.UserStatsAddress(authority),
			Authority:        authority,
			SpotMarketVault:  t.market.Vault,
			DriftSigner:      drift.SignerAddress(),
			UserTokenAccount: t.userToken,
			TokenProgram:     t.tokenProgram,
		},
		append(rem, t.extra...)...)
	return []solana.Instruction{ix}, nil
}

// Order is a perp order of the /tx/order/place route.
type Order struct {
	MarketIndex uint16
	Direction   drift.PositionDirection
	// Type is drift.OrderTypeMarket or drift.OrderTypeLimit.
	Type drift.OrderType
	// BaseAssetAmount is in BASE_PRECISION (1e9).
	BaseAssetAmount uint64
	// Price is the limit price in PRICE_PRECISION (1e6); a market order may leave it 0.
	Price      uint64
	ReduceOnly bool
	// PostOnly asks for MustPostOnly; otherwise None.
	PostOnly bool
	// MaxLeverage, when above 0, sets the position's maximum leverage first: an
	// updateUserPerpPositionCustomMarginRatio of round(1e4 / MaxLeverage) before the order.
	MaxLeverage float64
	// HighLeverageMode sets the order's UpdateHighLeverageMode flag, which names the program's
	// high-leverage mode config account after the remaining accounts.
	HighLeverageMode bool
	// Auction is a market order's auction (the DLOB server's auctionParams); nil leaves the SDK's
	// defaults, no auction fields.
	Auction *Auction
}

// Auction is the auction of a market order, as the DLOB server prices it.
type Auction struct {
	Duration          uint8
	StartPrice        int64
	EndPrice          int64
	OraclePriceOffset borsh.Option[int32]
	MaxTS             borsh.Option[int64]
}

// The order params bit flags (the SDK's OrderParamsBitFlag).
const (
	orderParamsBitFlagUpdateHighLeverageMode = 2
)

// marginPrecision is the program's MARGIN_PRECISION: a margin ratio of 1e4 is 1x.
const marginPrecision = 1e4

// MarginRatio is the custom margin ratio of a maximum leverage: round(1e4 / leverage), refused
// when it does not fit the program's u16 or is zero.
func MarginRatio(leverage float64) (uint16, error) {
	if !(leverage > 0) || math.IsInf(leverage, 0) {
		return 0, fmt.Errorf("txbuild: leverage %v is not a positive number", leverage)
	}
	r := math.Round(marginPrecision / leverage)
	if r < 1 || r > math.MaxUint16 {
		return 0, fmt.Errorf("txbuild: leverage %v gives margin ratio %v, out of 1..%d", leverage, r, math.MaxUint16)
	}
	return uint16(r), nil
}

// OrderParams is the order's params as the SDK's getMarketOrderParams or getLimitOrderParams
// fills them: its DefaultOrderParams with the order's fields over them.
func OrderParams(o Order) (drift.OrderParams, error) {
	if o.Type != drift.OrderTypeMarket && o.Type != drift.OrderTypeLimit {
		return drift.OrderParams{}, fmt.Errorf("txbuild: order type %v: only market and limit orders are built", o.Type)
	}
	if o.Auction != nil && o.Type != drift.OrderTypeMarket {
		return drift.OrderParams{}, errors.New("txbuild: an auction is for market orders")
	}
	p := drift.OrderParams{
		OrderType:        o.Type,
		MarketType:       drift.MarketTypePerp,
		Direction:        o.Direction,
		BaseAssetAmount:  o.BaseAssetAmount,
		Price:            o.Price,
		MarketIndex:      o.MarketIndex,
		ReduceOnly:       o.ReduceOnly,
		PostOnly:         drift.PostOnlyParamNone,
		TriggerCondition: drift.OrderTriggerConditionAbove,
	}
	if o.PostOnly {
		p.PostOnly = drift.PostOnlyParamMustPostOnly
	}
	if o.HighLeverageMode {
		p.BitFlags |= orderParamsBitFlagUpdateHighLeverageMode
	}
	if a := o.Auction; a != nil {
		p.AuctionDuration = borsh.Option[uint8]{Some: true, Value: a.Duration}
		p.AuctionStartPrice = borsh.Option[int64]{Some: true, Value: a.StartPrice}
		p.AuctionEndPrice = borsh.Option[int64]{Some: true, Value: a.EndPrice}
		p.OraclePriceOffset = a.OraclePriceOffset
		p.MaxTS = a.MaxTS
	}
	return p, nil
}

// PlaceOrder is a perp order: the leverage instruction when MaxLeverage is set, then one
// placeOrders (getPlaceOrdersIx).
func PlaceOrder(st State, acct Account, o Order) ([]solana.Instruction, error) {
	if err := acct.check(); err != nil {
		return nil, err
	}
	p, err := OrderParams(o)
	if err != nil {
		return nil, err
	}
	var ixs []solana.Instruction
	if o.MaxLeverage != 0 {
		ratio, err := MarginRatio(o.MaxLeverage)
		if err != nil {
			return nil, err
		}
		ixs = append(ixs, SetMaxLeverage(acct, o.MarketIndex, ratio))
	}
	rem, err := remainingAccounts(st, acct.User, markets{readablePerp: []uint16{o.MarketIndex}})
	if err != nil {
		return nil, fmt.Errorf("txbuild: order in perp market %d: %w", o.MarketIndex, err)
	}
	if p.BitFlags&orderParamsBitFlagUpdateHighLeverageMode != 0 {
		rem = append(rem, solana.AccountMeta{PublicKey: drift.HighLeverageModeConfigAddress(), IsWritable: true})
	}
	ixs = append(ixs, drift.NewPlaceOrdersInstruction(
		drift.PlaceOrdersArgs{Params: []drift.OrderParams{p}},
		drift.PlaceOrdersAccounts{State: drift.StateAddress(), User: acct.Address, Authority: acct.User.Authority},
		rem...))
	return ixs, nil
}

// SetMaxLeverage is the updateUserPerpPositionCustomMarginRatio of the user's position in perp
// market marketIndex (getUpdateUserPerpPositionCustomMarginRatioIx).
func SetMaxLeverage(acct Account, marketIndex, marginRatio uint16) solana.Instruction {
	return drift.NewUpdateUserPerpPositionCustomMarginRatioInstruction(
		drift.UpdateUserPerpPositionCustomMarginRatioArgs{
			SubAccountID:    acct.User.SubAccountID,
			PerpMarketIndex: marketIndex,
			MarginRatio:     marginRatio,
		},
		drift.UpdateUserPerpPositionCustomMarginRatioAccounts{User: acct.Address, Authority: acct.User.Authority})
}

// CancelOrders cancels the user's orders of orderIDs (getCancelOrdersByIdsIx), or every open order
// when there are none (getCancelOrdersIx with no filter).
func CancelOrders(st State, acct Account, orderIDs []uint32) ([]solana.Instruction, error) {
	if err := acct.check(); err != nil {
		return nil, err
	}
	rem, err := remainingAccounts(st, acct.User, markets{})
	if err != nil {
		return nil, fmt.Errorf("txbuild: cancel orders: %w", err)
	}
	if len(orderIDs) > 0 {
		return []solana.Instruction{drift.NewCancelOrdersByIdsInstruction(
			drift.CancelOrdersByIdsArgs{OrderIds: slices.Clone(orderIDs)},
			drift.CancelOrdersByIdsAccounts{State: drift.StateAddress(), User: acct.Address, Authority: acct.User.Authority},
			rem...)}, nil
	}
	return []solana.Instruction{drift.NewCancelOrdersInstruction(
		drift.CancelOrdersArgs{},
		drift.CancelOrdersAccounts{State: drift.StateAddress(), User: acct.Address, Authority: acct.User.Authority},
		rem...)}, nil
}

// SettlePnl settles the user's PnL in the perp markets marketIndexes into its quote balance,
// skipping the markets that cannot settle now (settleMultiplePNLsIx, TrySettle). The authority
// signs, though the program lets anyone settle.
func SettlePnl(st State, acct Account, marketIndexes []uint16) ([]solana.Instruction, error) {
	if err := acct.check(); err != nil {
		return nil, err
	}
	if len(marketIndexes) == 0 {
		return nil, errors.New("txbuild: settle PnL: no market")
	}
	quote, err := st.spot(quoteSpotMarketIndex)
	if err != nil {
		return nil, fmt.Errorf("txbuild: settle PnL: %w", err)
	}
	rem, err := remainingAccounts(st, acct.User, markets{
		writablePerp: marketIndexes,
		writableSpot: []uint16{quoteSpotMarketIndex},
	})
	if err != nil {
		return nil, fmt.Errorf("txbuild: settle PnL: %w", err)
	}
	return []solana.Instruction{drift.NewSettleMultiplePnlsInstruction(
		drift.SettleMultiplePnlsArgs{MarketIndexes: slices.Clone(marketIndexes), Mode: drift.SettlePnlModeTrySettle},
		drift.SettleMultiplePnlsAccounts{
			State:           drift.StateAddress(),
			User:            acct.Address,
			Authority:       acct.User.Authority,
			SpotMarketVault: quote.Vault,
		},
		rem...)}, nil
}

// BuilderInit creates a builder's RevenueShare account, the builder paying for it
// (getInitializeRevenueShareIx).
func BuilderInit(builder solana.PublicKey) []solana.Instruction {
	return []solana.Instruction{drift.NewInitializeRevenueShareInstruction(drift.InitializeRevenueShareAccounts{
		RevenueShare:  drift.RevenueShareAddress(builder),
		Authority:     builder,
		Payer:         builder,
		Rent:          solana.SysvarRentID,
		SystemProgram: solana.SystemProgramID,
	})}
}

// BuilderApprove approves builder to charge authority's orders up to maxFeeTenthBps
// (changeApprovedBuilder; a fee of 0 revokes it). Without an escrow yet, the escrow of numOrders
// order slots is created first in the same transaction, as drift-common's
// createRevenueShareEscrowTxn does with a builder. The authority pays.
func BuilderApprove(authority, builder solana.PublicKey, maxFeeTenthBps uint16, escrowExists bool, numOrders uint16) []solana.Instruction {
	escrow := drift.RevenueShareEscrowAddress(authority)
	var ixs []solana.Instruction
	if !escrowExists {
		ixs = append(ixs, drift.NewInitializeRevenueShareEscrowInstruction(
			drift.InitializeRevenueShareEscrowArgs{NumOrders: numOrders},
			drift.InitializeRevenueShareEscrowAccounts{
				Escrow:        escrow,
				Authority:     authority,
				UserStats:     drift.UserStatsAddress(authority),
				State:         drift.StateAddress(),
				Payer:         authority,
				Rent:          solana.SysvarRentID,
				SystemProgram: solana.SystemProgramID,
			}))
	}
	return append(ixs, drift.NewChangeApprovedBuilderInstruction(
		drift.ChangeApprovedBuilderArgs{Builder: builder, MaxFeeBps: maxFeeTenthBps, Add: maxFeeTenthBps != 0},
		drift.ChangeApprovedBuilderAccounts{
			Escrow:        escrow,
			Authority:     authority,
			Payer:         authority,
			SystemProgram: solana.SystemProgramID,
		}))
}
