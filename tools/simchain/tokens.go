package simchain

import (
	"encoding/binary"

	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// The wallets' token accounts: for each simulated wallet, an SPL token account at the associated
// token address of each spot market's mint, holding a balance drawn from the chain's seed, except
// for a few wallets that have none for some mint (a withdrawal to them must create it first).
// Accounts are laid out as SPL Token's state.rs lays them out: little-endian integers, a COption as
// a u32 tag and its value.

// Sizes of SPL Token's accounts.
const (
	mintSize         = 82
	tokenAccountSize = 165
)

// tokenAccountInitialized is AccountState::Initialized.
const tokenAccountInitialized = 1

// missingATAEvery: one wallet in this many has no token account for a given mint.
const missingATAEvery = 5

// appendCOptionKey appends a COption<Pubkey>: the zero key is None.
func appendCOptionKey(b []byte, k solana.PublicKey) []byte {
	if k.IsZero() {
		b = binary.LittleEndian.AppendUint32(b, 0)
		return append(b, make([]byte, solana.PublicKeySize)...)
	}
	b = binary.LittleEndian.AppendUint32(b, 1)
	return append(b, k[:]...)
}

// mintAccount is a Mint of decimals with a mint authority and no freeze authority. The supply is
// left at zero: nothing of the chain reads it.
func mintAccount(decimals int) []byte {
	b := make([]byte, 0, mintSize)
	b = appendCOptionKey(b, derivedKey("mint_authority", "simchain"))
	b = binary.LittleEndian.AppendUint64(b, 0) // supply
	b = append(b, byte(decimals), 1)           // decimals, is_initialized
	return appendCOptionKey(b, solana.PublicKey{})
}

// tokenAccount is an initialized token account of owner for mint holding amount, without delegate
// or close authority. A wrapped SOL account is native: it holds its tokens as lamports above the
// rent reserve, which isNative gives.
func tokenAccount(mint, owner solana.PublicKey, amount uint64) []byte {
	b := make([]byte, 0, tokenAccountSize)
	b = append(b, mint[:]...)
	b = append(b, owner[:]...)
	b = binary.LittleEndian.AppendUint64(b, amount)
	b = appendCOptionKey(b, solana.PublicKey{}) // delegate
	b = append(b, tokenAccountInitialized)
	if mint == wrappedSOL {
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint64(b, lamports(tokenAccountSize))
	} else {
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = binary.LittleEndian.AppendUint64(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, 0)     // delegated amount
	return appendCOptionKey(b, solana.PublicKey{}) // close authority
}

// tokenLamports is the balance of a token account: its rent reserve, and for wrapped SOL the
// tokens it holds.
func tokenLamports(mint solana.PublicKey, amount uint64) uint64 {
	if mint == wrappedSOL {
		return lamports(tokenAccountSize) + amount
	}
	return lamports(tokenAccountSize)
}

// hasATA reports whether the wallet authority has a token account for mint.
func (c *Chain) hasATA(authority, mint solana.PublicKey) bool {
	return !c.chance("no-ata", append(authority[:], mint[:]...), missingATAEvery)
}

// walletTokenAmount is what the wallet's token account of m holds: between 1 and 500 whole tokens.
func (c *Chain) walletTokenAmount(authority solana.PublicKey, m Market) uint64 {
	h := c.hash("ata-amount", authority[:], m.Mint[:])
	v := 1 + binary.LittleEndian.Uint64(h[:8])%500
	for range m.Decimals {
		v *= 10
	}
	return v
}

// walletLamports is the SOL of the wallet authority: between 0.05 and 5 SOL, enough to pay the
// fees of the transactions a test sends.
func (c *Chain) walletLamports(authority solana.PublicKey) uint64 {
	h := c.hash("wallet-lamports", authority[:])
	return 50_000_000 + binary.LittleEndian.Uint64(h[:8])%4_950_000_000
}

// walletTokenAccounts are the token accounts of the wallet authority, keyed by mint, and the
// accounts to serve: the wallet's own (a system account holding its SOL, which pays the fees of
// its transactions) and its token accounts.
func (c *Chain) walletTokenAccounts(authority solana.PublicKey) (map[solana.PublicKey]solana.PublicKey, []keyedAccount) {
	atas := map[solana.PublicKey]solana.PublicKey{}
	out := []keyedAccount{{addr: authority, account: account{
		data: []byte{}, owner: solana.SystemProgramID, lamports: c.walletLamports(authority),
	}}}
	for _, m := range c.markets {
		if m.Type != events.MarketTypeSpot || !c.hasATA(authority, m.Mint) {
			continue
		}
		addr := solana.AssociatedTokenAddress(authority, m.Mint, solana.TokenProgramID)
		amount := c.walletTokenAmount(authority, m)
		atas[m.Mint] = addr
		out = append(out, keyedAccount{addr: addr, account: account{
			data: tokenAccount(m.Mint, authority, amount), owner: solana.TokenProgramID, lamports: tokenLamports(m.Mint, amount),
		}})
	}
	return atas, out
}
