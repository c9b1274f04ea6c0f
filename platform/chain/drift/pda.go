package drift

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

// The program's accounts live at PDAs of fixed seeds (protocol-v2 sdk/src/addresses/pda.ts); market
// indexes and subaccount ids are seeded as little-endian u16.

// Program is the program's address.
func Program() solana.PublicKey { return program }

// program is ProgramID decoded once: transactions and logs compare keys with it all the time.
var program = solana.MustPublicKey(ProgramID)

// address is the PDA of the program for seeds. The seeds here are few and short, so the runtime's
// limits cannot refuse them, and no bump giving an address off the curve has odds of 2^-256: a
// failure is a bug, hence the panic rather than an error every caller would carry.
func address(seeds ...[]byte) solana.PublicKey {
	k, _, err := solana.FindProgramAddress(seeds, Program())
	if err != nil {
		panic(fmt.Sprintf("drift: PDA of %q: %v", seeds, err))
	}
	return k
}

func u16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

// Finding a PDA checks candidate addresses against the curve, which costs far more than the rest of
// building a transaction: the addresses of fixed seeds are found once, and the markets' ones once
// per market.
var (
	stateAddress  = sync.OnceValue(func() solana.PublicKey { return address([]byte("drift_state")) })
	signerAddress = sync.OnceValue(func() solana.PublicKey { return address([]byte("drift_signer")) })
	marketPDAs    sync.Map // marketPDA -> solana.PublicKey
)

// marketPDA names a market's account by its seed and index.
type marketPDA struct {
	seed  string
	index uint16
}

// marketAddress is the PDA of seed and marketIndex, found once.
func marketAddress(seed string, marketIndex uint16) solana.PublicKey {
	k := marketPDA{seed, marketIndex}
	if v, ok := marketPDAs.Load(k); ok {
		return v.(solana.PublicKey)
	}
	a := address([]byte(seed), u16(marketIndex))
	marketPDAs.Store(k, a)
	return a
}

// StateAddress is the address of the State account.
func StateAddress() solana.PublicKey { return stateAddress() }

// SignerAddress is the program's signer, the authority of the market vaults.
func SignerAddress() solana.PublicKey { return signerAddress() }

// UserAddress is the address of authority's User account (its subaccount) subAccountID.
func UserAddress(authority solana.PublicKey, subAccountID uint16) solana.PublicKey {
	return address([]byte("user"), authority[:], u16(subAccountID))
}

// UserStatsAddress is the address of authority's UserStats account.
func UserStatsAddress(authority solana.PublicKey) solana.PublicKey {
	return address([]byte("user_stats"), authority[:])
}

// PerpMarketAddress is the address of the PerpMarket account of marketIndex.
func PerpMarketAddress(marketIndex uint16) solana.PublicKey {
	return marketAddress("perp_market", marketIndex)
}

// SpotMarketAddress is the address of the SpotMarket account of marketIndex.
func SpotMarketAddress(marketIndex uint16) solana.PublicKey {
	return marketAddress("spot_market", marketIndex)
}

// SpotMarketVaultAddress is the token account holding the deposits of spot market marketIndex.
func SpotMarketVaultAddress(marketIndex uint16) solana.PublicKey {
	return marketAddress("spot_market_vault", marketIndex)
}
