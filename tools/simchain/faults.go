package simchain

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
)

// Faults are the HTTP-level faults of the RPC endpoint, as public endpoints and loaded nodes show
// them. The zero value has none. Set them with SetFaults at any time; they apply from the next
// request.
type Faults struct {
	// RateLimit is the requests per second the endpoint takes, each call of a batch counting as
	// one, with a burst of one second's worth; beyond it a request is answered HTTP 429 with
	// Retry-After. 0: no limit.
	RateLimit float64
	// TimeoutEvery holds every Nth request for TimeoutDelay before answering it (or until the
	// client gives up): set the delay above the client's timeout. 0: none.
	TimeoutEvery int
	TimeoutDelay time.Duration
	// ServerErrorEvery answers every Nth request with HTTP 500 and 503 in turn, without running
	// it. 0: none.
	ServerErrorEvery int
}

// Counts are what the faults did, since the chain was made.
type Counts struct {
	Requests     int64 // HTTP requests
	Calls        int64 // JSON-RPC calls answered, a batch counting each of its calls
	RateLimited  int64 // requests answered 429
	TimedOut     int64 // requests held for the timeout delay
	ServerErrors int64 // requests answered 500 or 503
	SkippedSlots int64 // blocks left out by Skip
	TruncatedTxs int64 // transactions cut by Truncate
	DroppedFills int64 // fills removed by DropFill
}

type faultState struct {
	mu     sync.Mutex
	f      Faults
	n      int64 // requests since the faults were set, for the every-Nth faults
	tokens float64
	last   time.Time
	counts Counts
}

// SetFaults replaces the chain's HTTP faults.
func (c *Chain) SetFaults(f Faults) {
	s := &c.faults
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f, s.n, s.tokens, s.last = f, 0, f.RateLimit, time.Time{}
}

// Counts returns the fault counters.
func (c *Chain) Counts() Counts {
	s := &c.faults
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// count adds n to the counter p points into, under the lock Counts reads with.
func (s *faultState) count(p *int64, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*p += n
}

// verdict is what the faults make of one request of calls JSON-RPC calls.
type verdict struct {
	status int           // an HTTP error status to answer with, 0 to run the request
	hold   time.Duration // how long to hold the answer
}

func (s *faultState) judge(calls int) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Requests++
	now := time.Now()
	if r := s.f.RateLimit; r > 0 {
		if !s.last.IsZero() {
			s.tokens = min(r, s.tokens+now.Sub(s.last).Seconds()*r)
		}
		s.last = now
		if s.tokens < float64(calls) {
			s.counts.RateLimited++
			return verdict{status: 429}
		}
		s.tokens -= float64(calls)
	}
	s.n++
	if e := s.f.ServerErrorEvery; e > 0 && s.n%int64(e) == 0 {
		s.counts.ServerErrors++
		if s.counts.ServerErrors%2 == 0 {
			return verdict{status: 503}
		}
		return verdict{status: 500}
	}
	if e := s.f.TimeoutEvery; e > 0 && s.n%int64(e) == 0 {
		s.counts.TimedOut++
		return verdict{hold: s.f.TimeoutDelay}
	}
	s.counts.Calls += int64(calls)
	return verdict{}
}

// Dropped is an event a fault took off the chain, with where it was: what a test expects to be
// missing from the indexer's output.
type Dropped struct {
	records.Context
	Event drift.Event
}

// Skip makes slots skipped: a sealed block is taken off the chain as if it had never been produced
// (getBlocks no longer lists it, getBlock answers -32007, the next block's parent is the one
// before and the heights after it count one less), a slot not sealed yet gets
// no block when it is. It returns the events of the sealed blocks it removed.
func (c *Chain) Skip(slots ...int64) ([]Dropped, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Dropped
	for _, s := range slots {
		i, ok := c.find(s)
		if !ok {
			if n := len(c.blocks); n > 0 && s <= c.blocks[n-1].slot {
				continue // already without a block
			}
			c.skip[s] = true
			continue
		}
		b := c.blocks[i]
		for j := range b.txs {
			d, err := b.txs[j].dropped(b.slot, 0)
			if err != nil {
				return out, err
			}
			out = append(out, d...)
		}
		c.blocks = append(c.blocks[:i], c.blocks[i+1:]...)
		if i < len(c.blocks) {
			c.blocks[i].parent = s - 1
			if i > 0 {
				c.blocks[i].parent = c.blocks[i-1].slot
			}
		}
		// The block was never produced: the heights after it count one block less.
		for _, later := range c.blocks[i:] {
			later.height--
		}
		c.faults.count(&c.faults.counts.SkippedSlots, 1)
	}
	return out, nil
}

// dropped are the transaction's events from the kth on.
func (x *tx) dropped(slot int64, k int) ([]Dropped, error) {
	var out []Dropped
	sig := x.sig
	for i, e := range x.events()[k:] {
		ev, err := drift.DecodeEvent(e)
		if err != nil {
			return nil, fmt.Errorf("simchain: %s event %d: %w", sig, k+i, err)
		}
		out = append(out, Dropped{Context: records.Context{TxSig: sig, TxSigIndex: int(x.first) + k + i, Slot: slot}, Event: ev})
	}
	return out, nil
}

// ErrNoSuchTx is the refusal of a fault aimed at a transaction the sealed blocks do not have.
var ErrNoSuchTx = errors.New("simchain: no such transaction")

// Truncate cuts the log of transaction sig as the runtime cuts a log past its limit: the events
// after the first keep are gone and the log ends with "Log truncated". It returns the events it
// dropped.
func (c *Chain) Truncate(sig string, keep int) ([]Dropped, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.blocks {
		for j := range b.txs {
			x := &b.txs[j]
			if x.sig != sig {
				continue
			}
			evs := x.events()
			if keep < 0 || keep >= len(evs) {
				return nil, fmt.Errorf("simchain: truncate %s after %d of its %d events: nothing to cut", sig, keep, len(evs))
			}
			out, err := x.dropped(b.slot, keep)
			if err != nil {
				return nil, err
			}
			x.setEvents(evs[:keep])
			x.cut = true
			c.faults.count(&c.faults.counts.TruncatedTxs, 1)
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoSuchTx, sig)
}

// DropFill removes one fill of the market from the chain, making a fillRecordId gap: the fill in
// the middle of the market's sealed fills, among those that end their transaction (so that no
// other event's txSigIndex moves). It returns the fill.
func (c *Chain) DropFill(t events.MarketType, marketIndex int) (Dropped, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	type at struct {
		b *block
		i int
	}
	var found []at
	for _, b := range c.blocks {
		for j := range b.txs {
			x := &b.txs[j]
			evs := x.events()
			if n := len(evs); n > 0 && !x.cut && isFill(evs[n-1]) {
				ev, err := drift.DecodeEvent(evs[n-1])
				if err != nil {
					return Dropped{}, err
				}
				f := ev.(*drift.OrderActionRecord)
				if marketTypeOf(f.MarketType) == t && int(f.MarketIndex) == marketIndex {
					found = append(found, at{b, j})
				}
			}
		}
	}
	if len(found) < 3 {
		return Dropped{}, fmt.Errorf("simchain: %d fills of %s market %d, too few to leave a gap between two", len(found), t, marketIndex)
	}
	p := found[len(found)/2]
	x := &p.b.txs[p.i]
	evs := x.events()
	d, err := x.dropped(p.b.slot, len(evs)-1)
	if err != nil {
		return Dropped{}, err
	}
	if len(evs) == 1 {
		p.b.txs = slices.Delete(p.b.txs, p.i, p.i+1)
	} else {
		x.setEvents(evs[:len(evs)-1])
	}
	c.faults.count(&c.faults.counts.DroppedFills, 1)
	return d[0], nil
}

func marketTypeOf(t drift.MarketType) events.MarketType {
	switch t {
	case drift.MarketTypeSpot:
		return events.MarketTypeSpot
	case drift.MarketTypePerp:
		return events.MarketTypePerp
	}
	return ""
}
