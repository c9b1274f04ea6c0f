package simchain

import (
	"crypto/sha256"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// A market account made from a market state record knows only what the record says; a builder of
// transactions needs what the program keeps beside it: a spot market's mint, vault and oracle, a
// perp market's oracle and quote market. The chain fixes those per market when it is made and
// writes them into every version of the market's account, and serves the accounts they name: the
// State, the mints and the vaults (SPL token accounts the program's signer owns).

// Market is a market of the chain with the addresses a transaction names for it.
type Market struct {
	Type   events.MarketType
	Index  uint16
	Symbol string
	// Address is the PerpMarket or SpotMarket account, the PDA of the market index.
	Address solana.PublicKey
	// Oracle is the market's price feed: markets of one asset share it (SOL-PERP and SOL).
	Oracle       solana.PublicKey
	OracleSource drift.OracleSource
	// Spot markets only: the token mint, the vault holding the deposits (the PDA of the index, an
	// SPL token account of the program's signer), the token's decimals and the market's insurance
	// fund vault.
	Mint, Vault, InsuranceVault solana.PublicKey
	Decimals                    int
}

// knownTokens are the mainnet mints and decimals of the simulator's spot markets, so that a client
// configured for mainnet recognises them; any other spot market gets a mint derived from its
// symbol and 6 decimals.
var knownTokens = map[string]struct {
	mint     solana.PublicKey
	decimals int
}{
	"USDC": {solana.MustPublicKey("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"), 6},
	"SOL":  {solana.MustPublicKey("So11111111111111111111111111111111111111112"), 9},
}

// wrappedSOL is the native mint: its token accounts hold lamports, and their isNative field says
// how many of them are the rent reserve.
var wrappedSOL = knownTokens["SOL"].mint

// derivedKey is a fixed, real-looking address for what label and name describe: the same on every
// chain, whatever its seed, as mints and oracles are in a client's configuration.
func derivedKey(label, name string) solana.PublicKey {
	return solana.PublicKey(sha256.Sum256([]byte("simchain/" + label + "/" + name)))
}

// asset is the asset a market trades, which its oracle prices: the symbol without "-PERP".
func asset(symbol string) string { return strings.TrimSuffix(symbol, "-PERP") }

// newMarket is the market m with its addresses.
func newMarket(m events.Market) Market {
	out := Market{Type: m.Type, Index: uint16(m.Index), Symbol: m.Symbol}
	a := asset(m.Symbol)
	out.Oracle, out.OracleSource = derivedKey("oracle", a), drift.OracleSourcePythPull
	if a == "USDC" {
		out.OracleSource = drift.OracleSourcePythStableCoinPull
	}
	switch m.Type {
	case events.MarketTypePerp:
		out.Address = drift.PerpMarketAddress(out.Index)
	case events.MarketTypeSpot:
		out.Address = drift.SpotMarketAddress(out.Index)
		out.Vault = drift.SpotMarketVaultAddress(out.Index)
		out.InsuranceVault = derivedKey("insurance_fund_vault", m.Symbol)
		out.Mint, out.Decimals = derivedKey("mint", m.Symbol), 6
		if t, ok := knownTokens[m.Symbol]; ok {
			out.Mint, out.Decimals = t.mint, t.decimals
		}
	}
	return out
}

// Markets lists the chain's markets, perp and spot, in the order of its configuration.
func (c *Chain) Markets() []Market { return slices.Clone(c.markets) }

// market is the chain's market of type t and index i.
func (c *Chain) market(t events.MarketType, i uint16) (Market, bool) {
	for _, m := range c.markets {
		if m.Type == t && m.Index == i {
			return m, true
		}
	}
	return Market{}, false
}

// dressPerp writes the market's fixed addresses into a PerpMarket account; its quote market is
// spot market 0, as every market of the simulator settles in USDC.
func (c *Chain) dressPerp(a *drift.PerpMarket) {
	m, ok := c.market(events.MarketTypePerp, a.MarketIndex)
	if !ok {
		return
	}
	a.Amm.Oracle, a.Amm.OracleSource = m.Oracle, m.OracleSource
	a.QuoteSpotMarketIndex = 0
}

// dressSpot writes the market's fixed addresses into a SpotMarket account, with its decimals and
// the cumulative interests records.SpotMarketAccount sets for them (so that a scaled balance is a
// token amount), for the accounts made before the market's first state.
func (c *Chain) dressSpot(a *drift.SpotMarket) {
	m, ok := c.market(events.MarketTypeSpot, a.MarketIndex)
	if !ok {
		return
	}
	a.Oracle, a.OracleSource, a.Mint, a.Vault = m.Oracle, m.OracleSource, m.Mint, m.Vault
	a.InsuranceFund.Vault = m.InsuranceVault
	a.TokenProgramFlag = 0 // SPL Token, not Token-2022
	if a.Decimals == 0 {
		a.Decimals = uint32(m.Decimals)
		interest := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(19-m.Decimals)), nil)
		a.CumulativeDepositInterest = borsh.U128(interest.Uint64())
		a.CumulativeBorrowInterest = a.CumulativeDepositInterest
	}
}

// initAccounts makes the accounts that exist before any record: the State, every market's account,
// and the spot markets' mints, vaults and insurance fund vaults.
func (c *Chain) initAccounts() error {
	perps, spots := 0, 0
	for _, m := range c.markets {
		if err := c.initMarket(m); err != nil {
			return err
		}
		if m.Type == events.MarketTypePerp {
			perps++
			continue
		}
		spots++
		c.setAccount(m.Mint, mintAccount(m.Decimals), solana.TokenProgramID)
		c.setAccount(m.Vault, tokenAccount(m.Mint, drift.SignerAddress(), vaultBalance(m)), solana.TokenProgramID)
		c.setAccount(m.InsuranceVault, tokenAccount(m.Mint, drift.SignerAddress(), 0), solana.TokenProgramID)
	}
	_, bump, err := solana.FindProgramAddress([][]byte{[]byte("drift_signer")}, drift.Program())
	if err != nil {
		return fmt.Errorf("simchain: the program's signer: %w", err)
	}
	st := &drift.State{
		Admin:               derivedKey("admin", "drift"),
		Signer:              drift.SignerAddress(),
		SignerNonce:         bump,
		NumberOfMarkets:     uint16(perps),
		NumberOfSpotMarkets: uint16(spots),
		// The mainnet values a builder of orders reads: auction lengths and the subaccount limit.
		MinPerpAuctionDuration:        10,
		DefaultMarketOrderTimeInForce: 60,
		DefaultSpotAuctionDuration:    10,
		MaxNumberOfSubAccounts:        20_000,
	}
	return c.put(drift.StateAddress(), st)
}

// vaultBalance is a spot vault's token amount: what a market of the simulator holds, so that
// withdrawals of simulated sizes find tokens in it.
func vaultBalance(m Market) uint64 {
	v := uint64(1_000_000_000)
	for range m.Decimals {
		v *= 10
	}
	return v
}

// setAccount puts data at addr, owned by owner.
func (c *Chain) setAccount(addr solana.PublicKey, data []byte, owner solana.PublicKey) {
	c.accounts[addr] = &account{data: data, owner: owner}
}
