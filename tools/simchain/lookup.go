package simchain

import (
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// The protocol keeps its markets' addresses in two address lookup tables, which its SDK compiles
// every transaction against (sdk/src/config.ts). The chain serves two such tables at the mainnet
// tables' addresses, so that a client configured for mainnet finds them here too: the first holds
// what every transaction names (State, the signer) and the perp markets with their oracles, the
// second the spot markets with their oracles, mints and vaults, and the token program.

// mainnetLookupTables are the protocol's mainnet lookup tables.
var mainnetLookupTables = [2]solana.PublicKey{
	solana.MustPublicKey("Fpys8GRa5RBWfyeN7AaDUwFGD1zkDCA4z3t4CJLV8dfL"),
	solana.MustPublicKey("EiWSskK5HXnBTptiS5DH6gpAJRVNQ3cAhTKBGaiaysAb"),
}

// initLookupTables makes the two tables' accounts.
func (c *Chain) initLookupTables() error {
	// Markets of one asset share an oracle: each address is in one table only.
	var perp, spot []solana.PublicKey
	seen := map[solana.PublicKey]bool{}
	add := func(to *[]solana.PublicKey, keys ...solana.PublicKey) {
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				*to = append(*to, k)
			}
		}
	}
	add(&perp, drift.StateAddress(), drift.SignerAddress())
	add(&spot, solana.TokenProgramID)
	for _, m := range c.markets {
		if m.Type == events.MarketTypePerp {
			add(&perp, m.Address, m.Oracle)
		}
	}
	for _, m := range c.markets {
		if m.Type == events.MarketTypeSpot {
			add(&spot, m.Address, m.Oracle, m.Mint, m.Vault)
		}
	}
	authority := derivedKey("lookup_table_authority", "drift")
	meta := solana.LookupTableMeta{DeactivationSlot: solana.LookupTableActive, Authority: &authority}
	for i, addrs := range [][]solana.PublicKey{perp, spot} {
		data, err := solana.EncodeLookupTable(meta, addrs)
		if err != nil {
			return fmt.Errorf("simchain: lookup table %s: %w", mainnetLookupTables[i], err)
		}
		c.tables = append(c.tables, solana.LookupTable{Key: mainnetLookupTables[i], Addresses: addrs})
		c.setAccount(mainnetLookupTables[i], data, solana.AddressLookupTableProgramID)
	}
	return nil
}

// LookupTables are the addresses of the chain's lookup tables.
func (c *Chain) LookupTables() []solana.PublicKey {
	out := make([]solana.PublicKey, len(c.tables))
	for i, t := range c.tables {
		out[i] = t.Key
	}
	return out
}
