package simchain

import (
	"encoding"
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// The chain's accounts are the program's: a PerpMarket or SpotMarket per market at its PDA, kept
// to the newest market state written; a User per new user at the record's account; the wallet's
// RevenueShare and RevenueShareEscrow at their PDAs when its new-user record has them. All are
// owned by the program and hold the bytes the program would (drift's and records' encoders).

// initMarket makes a market's account before its first state: its index, name and kind, which is
// what the indexer's catalogue reads, and a rate curve that maps (spot lending math divides by the
// optimal utilization).
func (c *Chain) initMarket(m events.Market) error {
	switch m.Type {
	case events.MarketTypePerp:
		a := &drift.PerpMarket{Pubkey: drift.PerpMarketAddress(uint16(m.Index)), MarketIndex: uint16(m.Index), Status: drift.MarketStatusActive}
		a.Name = paddedName(m.Symbol)
		a.Amm.PegMultiplier = borsh.U128(1_000_000)
		return c.put(a.Pubkey, a)
	case events.MarketTypeSpot:
		a := &drift.SpotMarket{Pubkey: drift.SpotMarketAddress(uint16(m.Index)), MarketIndex: uint16(m.Index), Status: drift.MarketStatusActive}
		a.Name = paddedName(m.Symbol)
		a.OptimalUtilization = 1_000_000
		return c.put(a.Pubkey, a)
	}
	return fmt.Errorf("simchain: market %s of type %q", m.Symbol, m.Type)
}

func paddedName(s string) [32]byte {
	var b [32]byte
	for i := copy(b[:], s); i < len(b); i++ {
		b[i] = ' '
	}
	return b
}

// applyMarketState replaces a market's account with the one its state maps back to.
func (c *Chain) applyMarketState(m events.Message) error {
	rec, err := events.Decode(m.Topic, m.Value)
	if err != nil {
		return fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	ms, ok := rec.(*events.MarketState)
	if !ok {
		return fmt.Errorf("simchain: %s record %T", m.Topic, rec)
	}
	c.advance(ms.Ts, ms.Slot)
	switch ms.MarketType {
	case events.MarketTypePerp:
		a, err := records.PerpMarketAccount(ms)
		if err != nil {
			return fmt.Errorf("simchain: %w", err)
		}
		return c.put(a.Pubkey, a)
	default:
		a, err := records.SpotMarketAccount(ms)
		if err != nil {
			return fmt.Errorf("simchain: %w", err)
		}
		return c.put(a.Pubkey, a)
	}
}

// applyNewUser makes the accounts behind a new-user record.
func (c *Chain) applyNewUser(r *events.NewUser) error {
	u, err := records.UserAccount(r)
	if err != nil {
		return fmt.Errorf("simchain: %w", err)
	}
	addr, share, escrow, err := records.NewUserAccountAddresses(r)
	if err != nil {
		return fmt.Errorf("simchain: %w", err)
	}
	if err := c.put(addr, u); err != nil {
		return err
	}
	if b := r.BuilderRevenueShareAccount; b != nil {
		a, err := records.RevenueShareAccount(r.UserAuthority, b)
		if err != nil {
			return fmt.Errorf("simchain: %w", err)
		}
		if err := c.put(share, a); err != nil {
			return err
		}
	}
	if x := r.RevenueShareEscrow; x != nil {
		a, err := records.RevenueShareEscrowAccount(r.UserAuthority, x)
		if err != nil {
			return fmt.Errorf("simchain: %w", err)
		}
		if err := c.put(escrow, a); err != nil {
			return err
		}
	}
	return nil
}

func (c *Chain) put(addr solana.PublicKey, a encoding.BinaryMarshaler) error {
	data, err := a.MarshalBinary()
	if err != nil {
		return fmt.Errorf("simchain: account %s: %w", addr, err)
	}
	c.accounts[addr] = &account{data: data, owner: drift.Program()}
	return nil
}

// lamports is the rent-exempt balance of an account of n bytes: two years of rent at the
// cluster's default of 3480 lamports per byte-year, counting the account's 128 bytes of metadata.
func lamports(n int) uint64 { return uint64(128+n) * 3480 * 2 }
