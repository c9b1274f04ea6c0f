package tx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark/platform/chain/base58"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/txbuild"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/fault"
)

// ChainConfig says how the service reads chain state.
type ChainConfig struct {
	// Markets is how often the market accounts and the lookup tables are read again: the SDK's
	// DriftClient polls them the same way, and an order's remaining accounts need every market's
	// oracle, not the newest price.
	Markets time.Duration
	// Blockhash is how long a recent blockhash is reused. A blockhash stays valid for about 150
	// blocks (a minute); reusing it for a second saves a call per request and costs nothing.
	Blockhash time.Duration
	// Accounts is how long a User account read is reused (0: read per request, as the reference's
	// one-shot subscriber does). Its positions choose the remaining accounts.
	Accounts time.Duration
	// LookupTables are the address lookup tables the messages compress their keys with (the
	// protocol's market tables).
	LookupTables []solana.PublicKey
}

// markets is one reading of the market accounts.
type markets struct {
	state  txbuild.State
	perps  map[string]uint16 // by upper-case symbol
	spots  map[string]uint16
	names  map[uint16]string // perp symbols by index
	tables []solana.LookupTable
	at     time.Time
}

// Chain reads the chain state the builders need over JSON-RPC, with the caches ChainConfig allows.
type Chain struct {
	rpc *rpc.Client
	cfg ChainConfig
	now func() time.Time

	mu        sync.Mutex
	markets   *markets
	blockhash [32]byte
	hashAt    time.Time
	users     map[solana.PublicKey]cachedUser
	inflight  map[string]*flight
}

// flight is a read other requests wait for rather than make again: when a cached value expires,
// the requests in flight share one read instead of each asking the endpoint.
type flight struct {
	done chan struct{}
	val  any
	err  error
}

// shared runs read once for every caller of key that comes while it runs. It reads with ctx's
// values but not its end: one client going away must not fail the others.
func (c *Chain) shared(ctx context.Context, key string, read func(context.Context) (any, error)) (any, error) {
	c.mu.Lock()
	if f, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.val, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	c.inflight[key] = f
	c.mu.Unlock()
	f.val, f.err = read(context.WithoutCancel(ctx))
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
	close(f.done)
	return f.val, f.err
}

type cachedUser struct {
	user *drift.User
	at   time.Time
}

// NewChain reads chain state from c.
func NewChain(c *rpc.Client, cfg ChainConfig) *Chain {
	return &Chain{rpc: c, cfg: cfg, now: time.Now, users: map[solana.PublicKey]cachedUser{}, inflight: map[string]*flight{}}
}

// rpcError is how a failed read answers: the endpoint is unreachable or refuses (503, Retry-After),
// or it answered something the service cannot read (500).
func rpcError(what string, err error) error {
	var re *rpc.Error
	if errors.As(err, &re) && re.Code == rpc.CodeInvalidParams {
		return fmt.Errorf("%s: %w", what, err)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fault.Wrap(fault.Unavailable, fmt.Errorf("%s: %w", what, err), "the Solana RPC endpoint is unavailable, retry later")
}

// Refresh reads the market accounts and the lookup tables again.
func (c *Chain) Refresh(ctx context.Context) error {
	perpKeys, perpAccounts, err := c.rpc.Numbered(ctx, drift.PerpMarketAddress, drift.Program(), rpc.Confirmed)
	if err != nil {
		return fmt.Errorf("read the perp markets: %w", err)
	}
	_, spotAccounts, err := c.rpc.Numbered(ctx, drift.SpotMarketAddress, drift.Program(), rpc.Confirmed)
	if err != nil {
		return fmt.Errorf("read the spot markets: %w", err)
	}
	m := &markets{
		state: txbuild.State{Perp: map[uint16]*drift.PerpMarket{}, Spot: map[uint16]*drift.SpotMarket{}},
		perps: map[string]uint16{}, spots: map[string]uint16{}, names: map[uint16]string{}, at: c.now(),
	}
	for i, a := range perpAccounts {
		var p drift.PerpMarket
		if err := p.UnmarshalBinary(a.Data); err != nil {
			return fmt.Errorf("perp market account %s: %w", perpKeys[i], err)
		}
		m.state.Perp[p.MarketIndex] = &p
		m.perps[strings.ToUpper(drift.Name(p.Name))] = p.MarketIndex
		m.names[p.MarketIndex] = drift.Name(p.Name)
	}
	for _, a := range spotAccounts {
		var s drift.SpotMarket
		if err := s.UnmarshalBinary(a.Data); err != nil {
			return fmt.Errorf("spot market account %d: %w", len(m.state.Spot), err)
		}
		m.state.Spot[s.MarketIndex] = &s
		m.spots[strings.ToUpper(drift.Name(s.Name))] = s.MarketIndex
	}
	if len(c.cfg.LookupTables) > 0 {
		accounts, _, err := c.rpc.Accounts(ctx, c.cfg.LookupTables, rpc.Confirmed)
		if err != nil {
			return fmt.Errorf("read the lookup tables: %w", err)
		}
		for i, a := range accounts {
			if a == nil || a.Owner != solana.AddressLookupTableProgramID {
				return fmt.Errorf("lookup table %s: no such table on chain", c.cfg.LookupTables[i])
			}
			t, err := solana.DecodeLookupTable(c.cfg.LookupTables[i], a.Data)
			if err != nil {
				return fmt.Errorf("lookup table %s: %w", c.cfg.LookupTables[i], err)
			}
			m.tables = append(m.tables, t)
		}
	}
	c.mu.Lock()
	c.markets = m
	c.mu.Unlock()
	return nil
}

// Ready is nil once the markets have been read.
func (c *Chain) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.markets == nil {
		return errors.New("the market accounts have not been read yet")
	}
	return nil
}

func (c *Chain) current() (*markets, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.markets == nil {
		return nil, fault.Errorf(fault.Unavailable, "the market accounts have not been read yet, retry later")
	}
	return c.markets, nil
}

// Blockhash is a recent blockhash, at most cfg.Blockhash old.
func (c *Chain) Blockhash(ctx context.Context) ([32]byte, error) {
	c.mu.Lock()
	if !c.hashAt.IsZero() && c.now().Sub(c.hashAt) < c.cfg.Blockhash {
		h := c.blockhash
		c.mu.Unlock()
		return h, nil
	}
	c.mu.Unlock()
	v, err := c.shared(ctx, "blockhash", func(ctx context.Context) (any, error) {
		text, _, err := c.rpc.LatestBlockhash(ctx, rpc.Confirmed)
		if err != nil {
			return nil, rpcError("read a recent blockhash", err)
		}
		b, err := base58.Decode(text)
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("the RPC's blockhash %q is no 32-byte hash", text)
		}
		h := [32]byte(b)
		c.mu.Lock()
		c.blockhash, c.hashAt = h, c.now()
		c.mu.Unlock()
		return h, nil
	})
	if err != nil {
		return [32]byte{}, err
	}
	return v.([32]byte), nil
}

// maxCachedUsers bounds the User accounts kept: the cache is for a client placing orders in
// quick succession, not a copy of the chain.
const maxCachedUsers = 10000

// Account is the subaccount at addr, or a 400 naming it when it holds no User account.
func (c *Chain) Account(ctx context.Context, addr solana.PublicKey) (txbuild.Account, error) {
	if c.cfg.Accounts > 0 {
		c.mu.Lock()
		u, ok := c.users[addr]
		c.mu.Unlock()
		if ok && c.now().Sub(u.at) < c.cfg.Accounts {
			return txbuild.Account{Address: addr, User: u.user}, nil
		}
	}
	v, err := c.shared(ctx, "user "+addr.String(), func(ctx context.Context) (any, error) {
		accounts, _, err := c.rpc.Accounts(ctx, []solana.PublicKey{addr}, rpc.Confirmed)
		if err != nil {
			return nil, rpcError("read the User account", err)
		}
		a := accounts[0]
		if a == nil || a.Owner != drift.Program() {
			return nil, invalid("Unknown account: %s is no User account of the protocol", addr)
		}
		var u drift.User
		if err := u.UnmarshalBinary(a.Data); err != nil {
			return nil, invalid("Unknown account: %s is no User account of the protocol (%v)", addr, err)
		}
		if c.cfg.Accounts > 0 {
			c.mu.Lock()
			if len(c.users) >= maxCachedUsers {
				clear(c.users)
			}
			c.users[addr] = cachedUser{&u, c.now()}
			c.mu.Unlock()
		}
		return &u, nil
	})
	if err != nil {
		return txbuild.Account{}, err
	}
	return txbuild.Account{Address: addr, User: v.(*drift.User)}, nil
}

// Exists reports whether an account exists at addr.
func (c *Chain) Exists(ctx context.Context, addr solana.PublicKey) (bool, error) {
	accounts, _, err := c.rpc.Accounts(ctx, []solana.PublicKey{addr}, rpc.Confirmed)
	if err != nil {
		return false, rpcError("read account "+addr.String(), err)
	}
	return accounts[0] != nil, nil
}
