package simchain

import (
	"fmt"
	"slices"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// The simulated users' accounts follow their records: an order placed takes a slot of the User's
// orders and counts in its market's position; a fill moves the taker's and the maker's perp
// position (base, quote, the fee taken from the quote) or, in a spot market, their spot balances
// of the base token and of USDC; a fill that completes an order, a cancel and an expiry free its
// slot; a deposit or withdrawal moves the spot balance; a settlement sets the perp position's
// quote and moves the USDC balance by the pnl. It is an approximation (no margin, funding or
// liquidation), but every User holds what the program would encode for such positions, so that
// users differ in the markets a transaction must name for them.
//
// The simulator draws its users' addresses at random, where the program keeps a User at the PDA of
// its wallet and subaccount id. A transaction built by the SDK names the PDA; the records, and so
// the indexer and the API, name the drawn address. The chain serves the same User account at both.

// User is a simulated subaccount, as tests pick one to build transactions for.
type User struct {
	Authority    solana.PublicKey
	SubAccountID uint16
	// Address is the account the records name; PDA is drift.UserAddress(Authority, SubAccountID).
	// Both hold the User account.
	Address, PDA solana.PublicKey
	// TokenAccounts are the wallet's associated token accounts by mint: a spot market's mint not
	// among them is one the wallet has no token account for.
	TokenAccounts map[solana.PublicKey]solana.PublicKey
}

// simUser is a simulated subaccount and its User account as the records moved it.
type simUser struct {
	User
	acct drift.User
}

// newUser is what a new-user record makes: the User account, and the wallet's token accounts.
type newUser struct {
	user   User
	acct   *drift.User
	refers solana.PublicKey // the wallet's referrer, zero for none
}

// Users lists the simulated subaccounts in the order the chain made them.
func (c *Chain) Users() []User {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]User, len(c.userList))
	for i, u := range c.userList {
		out[i] = u.User
	}
	return out
}

// UserAccount is the User account of the subaccount at address (the records' or the PDA) as the
// chain serves it.
func (c *Chain) UserAccount(address solana.PublicKey) (drift.User, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.users[address]
	if !ok {
		return drift.User{}, false
	}
	return u.acct, true
}

// addUser registers a new user; a user the chain has already is left as it is.
func (c *Chain) addUser(n *newUser) {
	if _, ok := c.users[n.user.Address]; ok {
		return
	}
	u := &simUser{User: n.user, acct: *n.acct}
	c.users[u.Address], c.users[u.PDA] = u, u
	c.userList = append(c.userList, u)
	st, ok := c.stats[n.user.Authority]
	if !ok {
		st = &drift.UserStats{Authority: n.user.Authority, Referrer: n.refers}
		c.stats[n.user.Authority] = st
	}
	st.NumberOfSubAccounts++
	st.NumberOfSubAccountsCreated++
	c.dirtyStats[n.user.Authority] = true
	c.dirty[u] = true
}

// move applies a Drift event to the users it names.
func (c *Chain) move(ev any) {
	switch ev := ev.(type) {
	case *drift.OrderRecord:
		if u := c.users[ev.User]; u != nil && ev.Order.Status == drift.OrderStatusOpen {
			u.place(ev.Order)
			c.dirty[u] = true
		}
	case *drift.OrderActionRecord:
		c.orderAction(ev)
	case *drift.DepositRecord:
		u := c.users[ev.User]
		if u == nil {
			return
		}
		amount := int64(ev.Amount)
		if ev.Direction == drift.DepositDirectionWithdraw {
			amount = -amount
		}
		if p := u.spot(ev.MarketIndex); p != nil {
			addSpot(p, amount)
			p.CumulativeDeposits += amount
		}
		u.acct.TotalDeposits, u.acct.TotalWithdraws = ev.TotalDepositsAfter, ev.TotalWithdrawsAfter
		c.dirty[u] = true
	case *drift.SettlePnlRecord:
		u := c.users[ev.User]
		if u == nil {
			return
		}
		pnl, _ := ev.Pnl.Int64()
		if p := u.perp(ev.MarketIndex); p != nil {
			p.BaseAssetAmount, p.QuoteAssetAmount = ev.BaseAssetAmount, ev.QuoteAssetAmountAfter
			p.QuoteEntryAmount = ev.QuoteEntryAmount
			p.SettledPnl += pnl
		}
		if p := u.spot(0); p != nil {
			addSpot(p, pnl)
		}
		u.acct.SettledPerpPnl += pnl
		c.dirty[u] = true
	}
}

// orderSide is one side of an order action: its user and order, and what the action says of them.
type orderSide struct {
	user                   solana.PublicKey
	orderID                uint32
	direction              drift.PositionDirection
	orderBase, cumFilled   uint64
	fee                    int64
	hasUser, hasOrder, has bool
}

func (c *Chain) orderAction(ev *drift.OrderActionRecord) {
	sides := [2]orderSide{}
	sides[0].user, sides[0].hasUser = ev.Taker.Get()
	sides[0].orderID, sides[0].hasOrder = ev.TakerOrderID.Get()
	sides[0].direction, _ = ev.TakerOrderDirection.Get()
	sides[0].orderBase, _ = ev.TakerOrderBaseAssetAmount.Get()
	sides[0].cumFilled, _ = ev.TakerOrderCumulativeBaseAssetAmountFilled.Get()
	takerFee, _ := ev.TakerFee.Get()
	sides[0].fee = int64(takerFee)
	sides[1].user, sides[1].hasUser = ev.Maker.Get()
	sides[1].orderID, sides[1].hasOrder = ev.MakerOrderID.Get()
	sides[1].direction, _ = ev.MakerOrderDirection.Get()
	sides[1].orderBase, _ = ev.MakerOrderBaseAssetAmount.Get()
	sides[1].cumFilled, _ = ev.MakerOrderCumulativeBaseAssetAmountFilled.Get()
	sides[1].fee, _ = ev.MakerFee.Get()
	base, _ := ev.BaseAssetAmountFilled.Get()
	quote, _ := ev.QuoteAssetAmountFilled.Get()
	for _, s := range sides {
		u := c.users[s.user]
		if !s.hasUser || u == nil {
			continue
		}
		switch ev.Action {
		case drift.OrderActionFill:
			u.fill(ev.MarketType, ev.MarketIndex, s.direction, int64(base), int64(quote), s.fee)
			if s.hasOrder && s.orderBase > 0 && s.cumFilled >= s.orderBase {
				u.close(s.orderID)
			}
		case drift.OrderActionCancel, drift.OrderActionExpire:
			if s.hasOrder {
				u.close(s.orderID)
			}
		default:
			continue
		}
		c.dirty[u] = true
	}
}

// fill moves the user's positions by a fill of base for quote in direction, paying fee (negative: a
// rebate) in quote.
func (u *simUser) fill(t drift.MarketType, market uint16, d drift.PositionDirection, base, quote, fee int64) {
	if d == drift.PositionDirectionShort {
		base, quote = -base, -quote
	}
	if t == drift.MarketTypePerp {
		p := u.perp(market)
		if p == nil {
			return
		}
		p.BaseAssetAmount += base
		p.QuoteAssetAmount -= quote + fee
		p.QuoteEntryAmount -= quote
		p.QuoteBreakEvenAmount -= quote + fee
		return
	}
	if p := u.spot(market); p != nil {
		addSpot(p, base)
	}
	if p := u.spot(0); p != nil {
		addSpot(p, -quote-fee)
	}
}

// perpAvailable is the program's PerpPosition::is_available: nothing held, nothing open.
func perpAvailable(p *drift.PerpPosition) bool {
	return p.BaseAssetAmount == 0 && p.QuoteAssetAmount == 0 && p.OpenOrders == 0 && p.LpShares == 0 &&
		p.IsolatedPositionScaledBalance == 0
}

// spotAvailable is SpotPosition::is_available.
func spotAvailable(p *drift.SpotPosition) bool { return p.ScaledBalance == 0 && p.OpenOrders == 0 }

// perp is the user's position in perp market i, taking a free slot when it has none; nil when all
// eight are taken by other markets (the program would refuse the order: the simulator's record is
// then dropped from the account).
func (u *simUser) perp(i uint16) *drift.PerpPosition {
	ps := &u.acct.PerpPositions
	for k := range ps {
		if ps[k].MarketIndex == i && !perpAvailable(&ps[k]) {
			return &ps[k]
		}
	}
	for k := range ps {
		if perpAvailable(&ps[k]) {
			ps[k] = drift.PerpPosition{MarketIndex: i}
			return &ps[k]
		}
	}
	return nil
}

// spot is the user's position in spot market i, as perp is.
func (u *simUser) spot(i uint16) *drift.SpotPosition {
	ps := &u.acct.SpotPositions
	for k := range ps {
		if ps[k].MarketIndex == i && !spotAvailable(&ps[k]) {
			return &ps[k]
		}
	}
	for k := range ps {
		if spotAvailable(&ps[k]) {
			ps[k] = drift.SpotPosition{MarketIndex: i}
			return &ps[k]
		}
	}
	return nil
}

// addSpot moves a spot balance by delta tokens: a deposit below zero becomes a borrow. The
// market's synthetic interest makes a scaled balance the token amount itself.
func addSpot(p *drift.SpotPosition, delta int64) {
	v := int64(p.ScaledBalance)
	if p.BalanceType == drift.SpotBalanceTypeBorrow {
		v = -v
	}
	v += delta
	p.BalanceType = drift.SpotBalanceTypeDeposit
	if v < 0 {
		p.BalanceType, v = drift.SpotBalanceTypeBorrow, -v
	}
	p.ScaledBalance = uint64(v)
}

// place puts an open order in a free slot of the user's orders, or in the oldest one's when all
// are taken (the simulator's makers leave partly filled orders open that the program would have
// refused beyond 32).
func (u *simUser) place(o drift.Order) {
	os := &u.acct.Orders
	at := slices.IndexFunc(os[:], func(x drift.Order) bool { return x.Status != drift.OrderStatusOpen })
	if at < 0 {
		at = 0
		for k := range os {
			if os[k].Slot < os[at].Slot {
				at = k
			}
		}
	}
	os[at] = o
	u.acct.NextOrderID = max(u.acct.NextOrderID, o.OrderID+1)
	u.recount()
}

// close frees the slot of the open order id.
func (u *simUser) close(id uint32) {
	for k := range u.acct.Orders {
		if o := &u.acct.Orders[k]; o.Status == drift.OrderStatusOpen && o.OrderID == id {
			*o = drift.Order{}
			u.recount()
			return
		}
	}
}

// recount sets what the program counts of the open orders: per position the orders and their open
// bids and asks, and the user's totals.
func (u *simUser) recount() {
	for k := range u.acct.PerpPositions {
		p := &u.acct.PerpPositions[k]
		p.OpenOrders, p.OpenBids, p.OpenAsks = 0, 0, 0
	}
	for k := range u.acct.SpotPositions {
		p := &u.acct.SpotPositions[k]
		p.OpenOrders, p.OpenBids, p.OpenAsks = 0, 0, 0
	}
	open, auctions := 0, 0
	for _, o := range u.acct.Orders {
		if o.Status != drift.OrderStatusOpen {
			continue
		}
		open++
		if o.AuctionDuration > 0 {
			auctions++
		}
		left := int64(o.BaseAssetAmount - o.BaseAssetAmountFilled)
		bids, asks := left, int64(0)
		if o.Direction == drift.PositionDirectionShort {
			bids, asks = 0, -left
		}
		if o.MarketType == drift.MarketTypePerp {
			if p := u.perp(o.MarketIndex); p != nil {
				p.OpenOrders++
				p.OpenBids += bids
				p.OpenAsks += asks
			}
		} else if p := u.spot(o.MarketIndex); p != nil {
			p.OpenOrders++
			p.OpenBids += bids
			p.OpenAsks += asks
		}
	}
	u.acct.OpenOrders, u.acct.HasOpenOrder = uint8(open), open > 0
	u.acct.OpenAuctions, u.acct.HasOpenAuction = uint8(auctions), auctions > 0
}

// flushUsers encodes the accounts of the users and wallets the batch moved.
func (c *Chain) flushUsers() error {
	for u := range c.dirty {
		k, err := encodeAccount(u.Address, &u.acct)
		if err != nil {
			return fmt.Errorf("simchain: user %s: %w", u.Address, err)
		}
		c.accounts[u.Address] = &k.account
		c.accounts[u.PDA] = &k.account
	}
	clear(c.dirty)
	for auth := range c.dirtyStats {
		addr := drift.UserStatsAddress(auth)
		if err := c.put(addr, c.stats[auth]); err != nil {
			return fmt.Errorf("simchain: user stats of %s: %w", auth, err)
		}
	}
	clear(c.dirtyStats)
	return nil
}
