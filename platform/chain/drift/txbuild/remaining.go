package txbuild

import (
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// The program reads the remaining accounts of a user instruction as the oracles, then the spot
// markets, then the perp markets the user's margin is computed over (optional_accounts.rs). The
// SDK (DriftClient.getRemainingAccounts) collects each kind in a JavaScript Map, and the order of
// a Map is the order keys were first set in while a later set replaces the value: a market named
// read-only and later writable stays where it was first named, and takes the last flag. That
// order is what a transaction must reproduce byte for byte, so it is kept here as it is there.

// orderedMetas is a JavaScript Map of account metas: insertion-ordered, last value wins.
type orderedMetas[K comparable] struct {
	keys  []K
	metas map[K]solana.AccountMeta
}

func (o *orderedMetas[K]) set(k K, m solana.AccountMeta) {
	if o.metas == nil {
		o.metas = map[K]solana.AccountMeta{}
	}
	if _, ok := o.metas[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.metas[k] = m
}

func (o *orderedMetas[K]) appendTo(out []solana.AccountMeta) []solana.AccountMeta {
	for _, k := range o.keys {
		out = append(out, o.metas[k])
	}
	return out
}

// remaining collects an instruction's remaining accounts from the State.
type remaining struct {
	state   State
	oracles orderedMetas[solana.PublicKey]
	spots   orderedMetas[uint16]
	perps   orderedMetas[uint16]
}

// markets are what an instruction adds to the user's own markets, in the order the SDK adds them.
type markets struct {
	readablePerp, readableSpot, writablePerp, writableSpot []uint16
}

// remainingAccounts is getRemainingAccounts for one user (nil for none) and the markets m.
func remainingAccounts(st State, user *drift.User, m markets) ([]solana.AccountMeta, error) {
	r := &remaining{state: st}
	if user != nil {
		if err := r.addUser(user); err != nil {
			return nil, err
		}
	}
	for _, step := range []struct {
		indexes  []uint16
		perp     bool
		writable bool
	}{
		{m.readablePerp, true, false},
		{m.readableSpot, false, false},
		{m.writablePerp, true, true},
		{m.writableSpot, false, true},
	} {
		for _, i := range step.indexes {
			add := r.addSpot
			if step.perp {
				add = r.addPerp
			}
			if err := add(i, step.writable); err != nil {
				return nil, err
			}
		}
	}
	out := make([]solana.AccountMeta, 0, len(r.oracles.keys)+len(r.spots.keys)+len(r.perps.keys))
	out = r.oracles.appendTo(out)
	out = r.spots.appendTo(out)
	return r.perps.appendTo(out), nil
}

// addUser adds the markets of the user's open positions, all read-only: the margin check needs
// every market the user holds something in.
func (r *remaining) addUser(u *drift.User) error {
	for _, p := range u.SpotPositions {
		if spotPositionAvailable(p) {
			continue
		}
		if err := r.addSpot(p.MarketIndex, false); err != nil {
			return fmt.Errorf("the user's spot position: %w", err)
		}
		// Open spot orders are margined in the quote market as well.
		if p.OpenAsks != 0 || p.OpenBids != 0 {
			if err := r.addSpot(quoteSpotMarketIndex, false); err != nil {
				return fmt.Errorf("the quote of the user's spot orders: %w", err)
			}
		}
	}
	for _, p := range u.PerpPositions {
		if perpPositionAvailable(p) {
			continue
		}
		if err := r.addPerp(p.MarketIndex, false); err != nil {
			return fmt.Errorf("the user's perp position: %w", err)
		}
	}
	return nil
}

// addPerp adds a perp market, its oracle and its quote spot market. A prelaunch oracle is the
// program's own account, which a writable market's instruction updates.
func (r *remaining) addPerp(i uint16, writable bool) error {
	m, err := r.state.perp(i)
	if err != nil {
		return err
	}
	r.perps.set(i, solana.AccountMeta{PublicKey: m.Pubkey, IsWritable: writable})
	oracleWritable := writable && m.Amm.OracleSource == drift.OracleSourcePrelaunch
	r.oracles.set(m.Amm.Oracle, solana.AccountMeta{PublicKey: m.Amm.Oracle, IsWritable: oracleWritable})
	return r.addSpot(m.QuoteSpotMarketIndex, false)
}

// addSpot adds a spot market and its oracle; the quote market has none (the default key).
func (r *remaining) addSpot(i uint16, writable bool) error {
	m, err := r.state.spot(i)
	if err != nil {
		return err
	}
	// Keyed by the account's own index, as the SDK keys it.
	r.spots.set(m.MarketIndex, solana.AccountMeta{PublicKey: m.Pubkey, IsWritable: writable})
	if !m.Oracle.IsZero() {
		r.oracles.set(m.Oracle, solana.AccountMeta{PublicKey: m.Oracle})
	}
	return nil
}

// The position flags that keep an empty perp position in the margin accounts.
const (
	positionFlagBeingLiquidated = 2
	positionFlagBankruptcy      = 4
)

// perpPositionAvailable is the SDK's positionIsAvailable: a slot holding nothing at all.
func perpPositionAvailable(p drift.PerpPosition) bool {
	return p.BaseAssetAmount == 0 && p.OpenOrders == 0 && p.QuoteAssetAmount == 0 &&
		p.LpShares == 0 && p.IsolatedPositionScaledBalance == 0 &&
		p.PositionFlag&(positionFlagBeingLiquidated|positionFlagBankruptcy) == 0
}

// spotPositionAvailable is the SDK's isSpotPositionAvailable.
func spotPositionAvailable(p drift.SpotPosition) bool {
	return p.ScaledBalance == 0 && p.OpenOrders == 0
}
