// Package txbuild builds the Drift program's instructions for the /tx routes exactly as the
// protocol's TypeScript SDK (DriftClient, 2.156) builds them: the same instruction data and the
// same account metas in the same order, remaining accounts included. The functions are pure: they
// read decoded chain state handed to them and make no RPC call, and they leave out the compute
// budget instructions, which the caller prepends once it has simulated.
//
// Amounts are in program units (token base units for deposits, BASE_PRECISION and PRICE_PRECISION
// for orders); the route converts the human text.
//
// What differs from the SDK, on purpose:
//   - SOL has no wrap path: the SDK deposits SOL from a temporary wSOL account made with a random
//     seed and closed after. Here SOL is an SPL mint like any other, moved through the
//     authority's wSOL associated token account, which must exist and hold the wrapped SOL.
//   - Withdraw names the associated token account and does not create it; the SDK adds a create
//     instruction when an RPC read finds it missing, which is the caller's read to make.
//   - Spot markets with a transfer hook are refused (ErrTransferHook): their extra accounts come
//     from RPC reads of the mint and of the hook's meta list.
package txbuild

import (
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// State is the decoded market accounts an instruction's remaining accounts are chosen from, by
// market index. The builders only read it.
type State struct {
	Perp map[uint16]*drift.PerpMarket
	Spot map[uint16]*drift.SpotMarket
}

// Account is a user's subaccount: the address of its User account (the routes' accountId) and
// the account decoded. The authority that signs is the User's.
type Account struct {
	Address solana.PublicKey
	User    *drift.User
}

// MarketKind names the two kinds of markets in errors.
type MarketKind string

// The kinds of markets.
const (
	Perp MarketKind = "perp"
	Spot MarketKind = "spot"
)

// UnknownMarketError is the refusal of an instruction that names a market the State lacks, the
// user's own positions' markets included.
type UnknownMarketError struct {
	Kind  MarketKind
	Index uint16
}

func (e *UnknownMarketError) Error() string {
	return fmt.Sprintf("txbuild: unknown %s market %d", e.Kind, e.Index)
}

// ErrTransferHook refuses a spot market whose mint has a transfer hook (see the package comment).
var ErrTransferHook = errors.New("txbuild: spot markets with a transfer hook are not supported")

// The SDK's token program flags of a spot market (types.ts TokenProgramFlag).
const (
	tokenProgramFlagToken2022    = 1
	tokenProgramFlagTransferHook = 2
)

// quoteSpotMarketIndex is USDC's spot market, the quote of every perp market and the collateral
// that PnL settles into.
const quoteSpotMarketIndex = 0

func (s State) perp(i uint16) (*drift.PerpMarket, error) {
	if m := s.Perp[i]; m != nil {
		return m, nil
	}
	return nil, &UnknownMarketError{Kind: Perp, Index: i}
}

func (s State) spot(i uint16) (*drift.SpotMarket, error) {
	if m := s.Spot[i]; m != nil {
		return m, nil
	}
	return nil, &UnknownMarketError{Kind: Spot, Index: i}
}

func (a Account) check() error {
	if a.User == nil {
		return errors.New("txbuild: no User account")
	}
	return nil
}
