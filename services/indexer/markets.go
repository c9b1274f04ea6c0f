package indexer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// marketAccounts reads the PerpMarket and SpotMarket accounts: all of them to make the catalogue,
// and on a timer to write each market's state.
type marketAccounts struct {
	idx *Indexer

	mu    sync.Mutex
	perps []solana.PublicKey // by market index
	spots []solana.PublicKey

	last map[solana.PublicKey]written // what was last written of each account
}

type written struct {
	data []byte
	at   time.Time
}

func newMarketAccounts(idx *Indexer) *marketAccounts {
	return &marketAccounts{idx: idx, last: map[solana.PublicKey]written{}}
}

// refresh reads every market account and makes the catalogue the mapping names markets from.
func (a *marketAccounts) refresh(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	perpKeys, perpAccounts, err := a.idx.rpc.Numbered(ctx, drift.PerpMarketAddress, drift.Program(), rpc.Finalized)
	if err != nil {
		return err
	}
	spotKeys, spotAccounts, err := a.idx.rpc.Numbered(ctx, drift.SpotMarketAddress, drift.Program(), rpc.Finalized)
	if err != nil {
		return err
	}
	perps := make([]drift.PerpMarket, len(perpAccounts))
	for i, acc := range perpAccounts {
		if err := perps[i].UnmarshalBinary(acc.Data); err != nil {
			a.idx.m.decodeFailures.WithLabelValues("PerpMarket").Inc()
			return fmt.Errorf("perp market %d: %w", i, err)
		}
	}
	spots := make([]drift.SpotMarket, len(spotAccounts))
	for i, acc := range spotAccounts {
		if err := spots[i].UnmarshalBinary(acc.Data); err != nil {
			a.idx.m.decodeFailures.WithLabelValues("SpotMarket").Inc()
			return fmt.Errorf("spot market %d: %w", i, err)
		}
	}
	cat, err := records.NewCatalogue(perps, spots)
	if err != nil {
		return err
	}
	a.perps, a.spots = perpKeys, spotKeys
	a.idx.mapper.Store(records.New(cat))
	// Every market's gap counters exist from the start at 0, so that an alert's increase() sees the
	// first gap and a dashboard lists the markets watched.
	for i := range perps {
		m := Market{Type: drift.MarketTypePerp, Index: perps[i].MarketIndex}.String()
		a.idx.m.fillGaps.WithLabelValues(m)
		a.idx.m.fillGapIDs.WithLabelValues(m)
	}
	for i := range spots {
		m := Market{Type: drift.MarketTypeSpot, Index: spots[i].MarketIndex}.String()
		a.idx.m.fillGaps.WithLabelValues(m)
		a.idx.m.fillGapIDs.WithLabelValues(m)
	}
	a.idx.log.Info("read the market accounts", "perp", len(perps), "spot", len(spots))
	return nil
}

// follow writes the markets' states every Config.Accounts until ctx ends, and reads the catalogue
// again every Config.StateEvery to see new markets.
func (a *marketAccounts) follow(ctx context.Context) {
	lastRefresh := time.Now()
	_ = app.Every(ctx, a.idx.cfg.Accounts, func(ctx context.Context) {
		if time.Since(lastRefresh) >= a.idx.cfg.StateEvery {
			if err := a.refresh(ctx); err != nil && ctx.Err() == nil {
				a.idx.log.Warn("read the market accounts", "err", err)
			}
			lastRefresh = time.Now()
		}
		if err := a.states(ctx); err != nil && ctx.Err() == nil {
			a.idx.log.Warn("write the market states", "err", err)
		}
	})
}

// states reads the market accounts once and writes the state of each that changed or was last
// written StateEvery ago.
func (a *marketAccounts) states(ctx context.Context) error {
	a.mu.Lock()
	keys := append(append([]solana.PublicKey(nil), a.perps...), a.spots...)
	nPerps := len(a.perps)
	a.mu.Unlock()
	accounts, slot, err := a.idx.rpc.Accounts(ctx, keys, rpc.Confirmed)
	if err != nil {
		return err
	}
	if slot == 0 {
		return nil // a chain with no block yet: no state has a slot to be of
	}
	now := a.idx.now()
	mapper := a.idx.mapper.Load()
	var msgs []events.Message
	var errs []error
	for i, acc := range accounts {
		if acc == nil {
			continue
		}
		if w, ok := a.last[keys[i]]; ok && bytes.Equal(w.data, acc.Data) && now.Sub(w.at) < a.idx.cfg.StateEvery {
			continue
		}
		var st *events.MarketState
		if i < nPerps {
			var m drift.PerpMarket
			if err = m.UnmarshalBinary(acc.Data); err == nil {
				st, err = mapper.PerpMarketState(&m, now.Unix(), int64(slot))
			}
		} else {
			var m drift.SpotMarket
			if err = m.UnmarshalBinary(acc.Data); err == nil {
				st, err = mapper.SpotMarketState(&m, now.Unix(), int64(slot))
			}
		}
		if err == nil {
			var msg events.Message
			if msg, err = events.Encode(events.TopicMarketStates, st); err == nil {
				msgs = append(msgs, msg)
				a.last[keys[i]] = written{data: acc.Data, at: now}
				continue
			}
		}
		name := "PerpMarket"
		if i >= nPerps {
			name = "SpotMarket"
		}
		a.idx.m.decodeFailures.WithLabelValues(name).Inc()
		errs = append(errs, fmt.Errorf("%s %s: %w", name, keys[i], err))
	}
	if len(msgs) > 0 {
		if err := a.idx.out.Write(ctx, msgs...); err != nil {
			return err
		}
		a.idx.m.marketStates.Add(float64(len(msgs)))
		a.idx.m.events.WithLabelValues(events.TopicMarketStates).Add(float64(len(msgs)))
	}
	return errors.Join(errs...)
}

// completeUsers fills in what a NewUserRecord does not carry from the new users' accounts: the
// delegate from the User account, the builder accounts from the wallet's RevenueShare and
// RevenueShareEscrow. The accounts are read as they are now, which is what the protocol's own API
// shows for an account too.
func (idx *Indexer) completeUsers(ctx context.Context, b *batch) error {
	keys := make([]solana.PublicKey, 0, 3*len(b.users))
	for _, u := range b.users {
		user, share, escrow, err := records.NewUserAccountAddresses(u.rec)
		if err != nil {
			return err
		}
		keys = append(keys, user, share, escrow)
	}
	var got []*rpc.Account
	err := retry(ctx, idx.log, "read the new users' accounts", retryFirst, retryMost, func() error {
		var err error
		got, _, err = idx.rpc.Accounts(ctx, keys, rpc.Finalized)
		return err
	})
	if err != nil {
		return err
	}
	for i, u := range b.users {
		var acc records.NewUserAccounts
		var undecoded [3]bool
		for k, decode := range []struct {
			name string
			into func([]byte) error
		}{
			{"User", func(d []byte) error { acc.User = new(drift.User); return acc.User.UnmarshalBinary(d) }},
			{"RevenueShare", func(d []byte) error {
				acc.RevenueShare = new(records.RevenueShare)
				return acc.RevenueShare.UnmarshalBinary(d)
			}},
			{"RevenueShareEscrow", func(d []byte) error {
				acc.RevenueShareEscrow = new(records.RevenueShareEscrow)
				return acc.RevenueShareEscrow.UnmarshalBinary(d)
			}},
		} {
			a := got[3*i+k]
			if a == nil {
				continue // none, or closed since: nothing to add
			}
			if err := decode.into(a.Data); err != nil {
				// The record goes out without what this account would add: an account layout
				// the indexer does not know must not stop the events.
				idx.m.decodeFailures.WithLabelValues(decode.name).Inc()
				idx.log.Warn("a new user's account does not decode: its record goes without it", "user", u.rec.User,
					"account", decode.name, "err", err)
				undecoded[k] = true
			}
		}
		if undecoded[0] {
			acc.User = nil
		}
		if undecoded[1] {
			acc.RevenueShare = nil
		}
		if undecoded[2] {
			acc.RevenueShareEscrow = nil
		}
		if err := acc.Apply(u.rec); err != nil {
			return err
		}
		msg, err := events.Encode(events.TopicNewUsers, u.rec)
		if err != nil {
			return fmt.Errorf("encode new user %s: %w", u.rec.User, err)
		}
		b.msgs[u.at] = msg
	}
	return nil
}
