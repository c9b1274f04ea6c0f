package simchain

import (
	"encoding"
	"fmt"
	"slices"

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
func (c *Chain) initMarket(m Market) error {
	switch m.Type {
	case events.MarketTypePerp:
		a := &drift.PerpMarket{Pubkey: m.Address, MarketIndex: m.Index, Status: drift.MarketStatusActive}
		a.Name = paddedName(m.Symbol)
		a.Amm.PegMultiplier = borsh.U128(1_000_000)
		c.dressPerp(a)
		return c.put(a.Pubkey, a)
	case events.MarketTypeSpot:
		a := &drift.SpotMarket{Pubkey: m.Address, MarketIndex: m.Index, Status: drift.MarketStatusActive}
		a.Name = paddedName(m.Symbol)
		a.OptimalUtilization = 1_000_000
		c.dressSpot(a)
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

// marketStateEntry is a market state as the account it maps back to, at the time of the state,
// with the market's fixed addresses.
func (c *Chain) marketStateEntry(m events.Message) (entry, error) {
	rec, err := events.Decode(m.Topic, m.Value)
	if err != nil {
		return entry{}, fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	ms, ok := rec.(*events.MarketState)
	if !ok {
		return entry{}, fmt.Errorf("simchain: %s record %T", m.Topic, rec)
	}
	e := entry{topic: m.Topic, tx: events.Tx{Ts: ms.Ts, Slot: ms.Slot}}
	var a keyedAccount
	switch ms.MarketType {
	case events.MarketTypePerp:
		p, err := records.PerpMarketAccount(ms)
		if err != nil {
			return entry{}, fmt.Errorf("simchain: %w", err)
		}
		c.dressPerp(p)
		a, err = encodeAccount(p.Pubkey, p)
		if err != nil {
			return entry{}, err
		}
	default:
		s, err := records.SpotMarketAccount(ms)
		if err != nil {
			return entry{}, fmt.Errorf("simchain: %w", err)
		}
		c.dressSpot(s)
		a, err = encodeAccount(s.Pubkey, s)
		if err != nil {
			return entry{}, err
		}
	}
	e.accounts = []keyedAccount{a}
	return e, nil
}

// newUserAccounts are the accounts behind a new-user record: the wallet's builder accounts when
// it has them and its token accounts, and the subaccount, whose User account the chain keeps with
// its users (addUser).
func (c *Chain) newUserAccounts(r *events.NewUser) ([]keyedAccount, *newUser, error) {
	u, err := records.UserAccount(r)
	if err != nil {
		return nil, nil, fmt.Errorf("simchain: %w", err)
	}
	addr, share, escrow, err := records.NewUserAccountAddresses(r)
	if err != nil {
		return nil, nil, fmt.Errorf("simchain: %w", err)
	}
	nu := &newUser{
		user: User{Authority: u.Authority, SubAccountID: u.SubAccountID, Address: addr, PDA: drift.UserAddress(u.Authority, u.SubAccountID)},
		acct: u,
	}
	if r.Referrer != "" {
		if nu.refers, err = solana.ParsePublicKey(r.Referrer); err != nil {
			return nil, nil, fmt.Errorf("simchain: new user %s: referrer: %w", r.User, err)
		}
	}
	var out []keyedAccount
	nu.user.TokenAccounts, out = c.walletTokenAccounts(u.Authority)
	if b := r.BuilderRevenueShareAccount; b != nil {
		s, err := records.RevenueShareAccount(r.UserAuthority, b)
		if err != nil {
			return nil, nil, fmt.Errorf("simchain: %w", err)
		}
		a, err := encodeAccount(share, s)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
	}
	if x := r.RevenueShareEscrow; x != nil {
		e, err := records.RevenueShareEscrowAccount(r.UserAuthority, x)
		if err != nil {
			return nil, nil, fmt.Errorf("simchain: %w", err)
		}
		a, err := encodeAccount(escrow, e)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
	}
	return out, nu, nil
}

func encodeAccount(addr solana.PublicKey, a encoding.BinaryMarshaler) (keyedAccount, error) {
	data, err := a.MarshalBinary()
	if err != nil {
		return keyedAccount{}, fmt.Errorf("simchain: account %s: %w", addr, err)
	}
	// An encoder's buffer grows by doubling: the chain keeps the exact bytes.
	return keyedAccount{addr: addr, account: account{data: slices.Clone(data), owner: drift.Program()}}, nil
}

func (c *Chain) put(addr solana.PublicKey, a encoding.BinaryMarshaler) error {
	k, err := encodeAccount(addr, a)
	if err != nil {
		return err
	}
	c.accounts[addr] = &k.account
	return nil
}

// lamports is the rent-exempt balance of an account of n bytes: two years of rent at the
// cluster's default of 3480 lamports per byte-year, counting the account's 128 bytes of metadata.
func lamports(n int) uint64 { return uint64(128+n) * 3480 * 2 }
