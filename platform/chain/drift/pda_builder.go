package drift

import (
	"sync"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

// The PDAs of the builder codes (the program's state/revenue_share.rs seeds) and of the
// high-leverage mode, which order placement names when it asks to switch that mode.

// RevenueShareAddress is the RevenueShare account of a builder, where its fees accrue.
func RevenueShareAddress(authority solana.PublicKey) solana.PublicKey {
	return address([]byte("REV_SHARE"), authority[:])
}

// RevenueShareEscrowAddress is the RevenueShareEscrow account of a user's authority, which lists the
// builders it approved and their orders awaiting settlement.
func RevenueShareEscrowAddress(authority solana.PublicKey) solana.PublicKey {
	return address([]byte("REV_ESCROW"), authority[:])
}

// HighLeverageModeConfigAddress is the account that counts the users in high-leverage mode.
func HighLeverageModeConfigAddress() solana.PublicKey {
	return highLeverageModeConfig()
}

// highLeverageModeConfig is found once: its seed is fixed (see stateAddress).
var highLeverageModeConfig = sync.OnceValue(func() solana.PublicKey { return address([]byte("high_leverage_mode_config")) })
