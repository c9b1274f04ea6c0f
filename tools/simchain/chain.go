package simchain

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
)

// Config sets up a Chain. Zero values take the defaults.
type Config struct {
	// Seed drives everything the chain adds to the records: blockhashes, fee payers, which
	// transactions call through a jit-proxy, the other programs' and the failed transactions and
	// the harmlessly truncated logs. The same seed and messages give the same blocks.
	Seed int64
	// Markets are the markets whose accounts the chain serves from the start (their states arrive
	// with the market-state messages); default sim.Markets().
	Markets []events.Market
	// Oddities: one in N of the blocks gets a failed Drift transaction (FailedEvery) and one in N
	// another program's transaction (OtherEvery); one in N of the Drift transactions calls through
	// a jit-proxy (ProxyEvery) and one in N has a log truncated after its last event
	// (TruncatedEvery). 0 takes the default; a negative value turns the oddity off.
	FailedEvery, OtherEvery, ProxyEvery, TruncatedEvery int
	// RetainBlocks is how many of the newest blocks the chain keeps; older ones are pruned, as a
	// node without long-term storage prunes its ledger (getBlock answers -32001 below the first
	// available block). 0 keeps every block: three days of the default dev flow take a few tens
	// of megabytes.
	RetainBlocks int
}

// Default oddity rates: frequent enough that a few minutes of blocks have every kind.
const (
	defaultFailedEvery    = 25
	defaultOtherEvery     = 4
	defaultProxyEvery     = 5
	defaultTruncatedEvery = 60
)

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.FailedEvery, defaultFailedEvery)
	def(&c.OtherEvery, defaultOtherEvery)
	def(&c.ProxyEvery, defaultProxyEvery)
	def(&c.TruncatedEvery, defaultTruncatedEvery)
	if c.Markets == nil {
		c.Markets = sim.Markets()
	}
	return c
}

// Chain holds the blocks and accounts made from the simulator's messages and serves them over
// JSON-RPC (Handler). Its methods are safe for concurrent use.
type Chain struct {
	cfg  Config
	seed [8]byte

	mu       sync.RWMutex
	blocks   []*block // sealed, by slot
	pruned   int      // blocks pruned before blocks[0]
	pending  map[int64]*block
	hiTs     int64 // the newest ts of the messages so far
	hiMin    int64 // the lowest slot among the messages of second hiTs
	accounts map[solana.PublicKey]*account
	skip     map[int64]bool // slots to leave out when they are sealed

	faults faultState
}

// block is one slot's block: its transactions in order, each with its Drift events as bytes.
type block struct {
	slot, parent int64 // parent: the slot of the block before, slot-1 for the first
	time         int64 // blockTime: the events' ts
	height       uint64
	txs          []*tx
}

// tx is one transaction of the records: its signature and its Drift events' bytes, in txSigIndex
// order. first is the txSigIndex of the first event: above 0, the vault program logged that many
// events before it. cut marks a log the Truncate fault cut after the events left.
type tx struct {
	sig    string
	first  int
	events [][]byte
	cut    bool
}

type account struct {
	data  []byte
	owner solana.PublicKey
}

// New returns an empty chain with the markets' accounts.
func New(cfg Config) *Chain {
	cfg = cfg.withDefaults()
	c := &Chain{cfg: cfg, pending: map[int64]*block{}, accounts: map[solana.PublicKey]*account{}, skip: map[int64]bool{}}
	binary.LittleEndian.PutUint64(c.seed[:], uint64(cfg.Seed))
	for _, m := range cfg.Markets {
		if err := c.initMarket(m); err != nil {
			panic(err) // the configured markets are the program's, a bad one is a bug of the caller
		}
	}
	return c
}

// eventTopics are the topics whose records are the program's events.
var eventTopics = map[string]bool{
	events.TopicFills: true, events.TopicOrderActions: true, events.TopicOrders: true,
	events.TopicFundingRates: true, events.TopicFundingPayments: true, events.TopicLiquidations: true,
	events.TopicDeposits: true, events.TopicSwaps: true, events.TopicSettlePnl: true, events.TopicLP: true,
	events.TopicInsuranceFund: true, events.TopicIFStakes: true, events.TopicLPMintRedeem: true,
	events.TopicNewUsers: true,
}

// EventTopic reports whether records of topic are the program's events, which the chain carries
// in its blocks.
func EventTopic(topic string) bool { return eventTopics[topic] }

// ErrLate is the refusal of a record for a slot whose block is sealed: a block, once served, never
// changes. The simulator never sends one, as its messages come in time order and a second's slots
// follow the earlier seconds'.
var ErrLate = errors.New("simchain: a record for a sealed slot")

// Writer returns a sim.Writer that puts the event topics on the chain, applies the market states
// to the market accounts and passes the other topics (account snapshots, vaults, params) to
// direct. Its Write returns once the blocks of the seconds before the batch's last are sealed and
// served; the last second's blocks wait for the next Write, or Seal, since its records may
// continue in the next batch.
func (c *Chain) Writer(direct sim.Writer) sim.Writer { return &writer{c: c, direct: direct} }

type writer struct {
	c      *Chain
	direct sim.Writer
}

func (w *writer) Write(ctx context.Context, msgs ...events.Message) error {
	var rest []events.Message
	c := w.c
	c.mu.Lock()
	for _, m := range msgs {
		switch {
		case eventTopics[m.Topic]:
			if err := c.addRecord(m); err != nil {
				c.mu.Unlock()
				return err
			}
		case m.Topic == events.TopicMarketStates:
			if err := c.applyMarketState(m); err != nil {
				c.mu.Unlock()
				return err
			}
		default:
			rest = append(rest, m)
		}
	}
	c.sealBefore(c.hiMin)
	c.mu.Unlock()
	if len(rest) == 0 || w.direct == nil {
		return nil
	}
	return w.direct.Write(ctx, rest...)
}

// Seal seals every pending block: call it when no record of the seconds written so far is still
// to come, such as at the end of a backfill.
func (c *Chain) Seal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealBefore(1<<63 - 1)
}

// advance moves the watermark of the stream: records come in time order, and the slots of one
// second come after those of the seconds before, so every slot below the lowest slot of the newest
// second is complete.
func (c *Chain) advance(ts, slot int64) {
	switch {
	case ts > c.hiTs:
		c.hiTs, c.hiMin = ts, slot
	case ts == c.hiTs:
		c.hiMin = min(c.hiMin, slot)
	}
}

func (c *Chain) addRecord(m events.Message) error {
	rec, err := events.Decode(m.Topic, m.Value)
	if err != nil {
		return fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	t, ok := txOf(rec)
	if !ok {
		return fmt.Errorf("simchain: %s record %T names no transaction", m.Topic, rec)
	}
	ev, err := records.Event(rec)
	if err != nil {
		return fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	data, err := ev.MarshalBinary()
	if err != nil {
		return fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	if nu, ok := rec.(*events.NewUser); ok {
		if err := c.applyNewUser(nu); err != nil {
			return err
		}
	}
	if n := len(c.blocks); n > 0 && t.Slot <= c.blocks[n-1].slot {
		return fmt.Errorf("%w: %s %s in slot %d, sealed up to %d", ErrLate, m.Topic, t.TxSig, t.Slot, c.blocks[n-1].slot)
	}
	c.advance(t.Ts, t.Slot)
	b := c.pending[t.Slot]
	if b == nil {
		b = &block{slot: t.Slot, time: t.Ts}
		c.pending[t.Slot] = b
	}
	b.time = min(b.time, t.Ts)
	b.add(t, data)
	return nil
}

// add puts an event at its index in its transaction: transactions keep the order their first
// record came in, events the order of their txSigIndex.
func (b *block) add(t events.Tx, data []byte) {
	var x *tx
	for _, y := range b.txs {
		if y.sig == t.TxSig {
			x = y
			break
		}
	}
	if x == nil {
		x = &tx{sig: t.TxSig, first: t.TxSigIndex}
		b.txs = append(b.txs, x)
	}
	// Events are few per transaction and mostly come in order: an insertion keeps them sorted.
	// The indexes ride along until sealing, in the first bytes of a scratch prefix.
	at := len(x.events)
	for at > 0 && index(x.events[at-1]) > t.TxSigIndex {
		at--
	}
	e := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(data)), uint32(t.TxSigIndex))
	x.events = slices.Insert(x.events, at, append(e, data...))
}

func index(e []byte) int { return int(binary.LittleEndian.Uint32(e)) }

// sealBefore seals the pending blocks below slot, in slot order.
func (c *Chain) sealBefore(slot int64) {
	var ready []int64
	for s := range c.pending {
		if s < slot {
			ready = append(ready, s)
		}
	}
	slices.Sort(ready)
	for _, s := range ready {
		b := c.pending[s]
		delete(c.pending, s)
		if c.skip[s] {
			delete(c.skip, s)
			c.faults.count(&c.faults.counts.SkippedSlots, 1)
			continue
		}
		for _, x := range b.txs {
			x.seal()
		}
		b.parent, b.height = s-1, 1
		if n := len(c.blocks); n > 0 {
			b.parent, b.height = c.blocks[n-1].slot, c.blocks[n-1].height+1
		} else if c.pruned > 0 {
			b.height = uint64(c.pruned) + 1
		}
		c.blocks = append(c.blocks, b)
	}
	c.prune()
}

// seal drops the indexes from the events, keeping the lowest as the transaction's first. Indexes
// with holes (a record stream that numbers events the chain does not have) keep their order.
func (x *tx) seal() {
	if len(x.events) == 0 {
		return
	}
	x.first = index(x.events[0])
	for i, e := range x.events {
		// A copy of the exact size: the events are what the chain keeps.
		x.events[i] = append([]byte(nil), e[4:]...)
	}
}

// prune drops the oldest blocks beyond RetainBlocks.
func (c *Chain) prune() {
	n := len(c.blocks) - c.cfg.RetainBlocks
	if c.cfg.RetainBlocks <= 0 || n <= 0 {
		return
	}
	clear(c.blocks[:n])
	c.blocks = c.blocks[n:]
	c.pruned += n
}

// txOf is where a record was emitted.
func txOf(r events.Record) (events.Tx, bool) {
	switch r := r.(type) {
	case *events.Fill:
		return r.Tx, true
	case *events.Order:
		return r.Tx, true
	case *events.FundingRate:
		return r.Tx, true
	case *events.FundingPayment:
		return r.Tx, true
	case *events.Liquidation:
		return r.Tx, true
	case *events.Deposit:
		return r.Tx, true
	case *events.Swap:
		return r.Tx, true
	case *events.SettlePnl:
		return r.Tx, true
	case *events.PerpLP:
		return r.Tx, true
	case *events.InsuranceFund:
		return r.Tx, true
	case *events.IFStake:
		return r.Tx, true
	case *events.LPMintRedeem:
		return r.Tx, true
	case *events.NewUser:
		return r.Tx, true
	}
	return events.Tx{}, false
}

// Tip is the finalized tip: the newest sealed slot, 0 before the first block.
func (c *Chain) Tip() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tip()
}

func (c *Chain) tip() int64 {
	if len(c.blocks) == 0 {
		return 0
	}
	return c.blocks[len(c.blocks)-1].slot
}

// Slots lists the slots that have a block, oldest first.
func (c *Chain) Slots() []int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]int64, len(c.blocks))
	for i, b := range c.blocks {
		out[i] = b.slot
	}
	return out
}

// find is the index of slot's block, or where it would be and false.
func (c *Chain) find(slot int64) (int, bool) {
	return slices.BinarySearchFunc(c.blocks, slot, func(b *block, s int64) int {
		switch {
		case b.slot < s:
			return -1
		case b.slot > s:
			return 1
		}
		return 0
	})
}

// Stats are the chain's sizes.
type Stats struct {
	Blocks, Transactions, Events int
	EventBytes                   int // the events' encoded bytes, what the chain keeps of them
}

// Stats counts the sealed blocks, their transactions and events.
func (c *Chain) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := Stats{Blocks: len(c.blocks)}
	for _, b := range c.blocks {
		s.Transactions += len(b.txs)
		for _, x := range b.txs {
			s.Events += len(x.events)
			for _, e := range x.events {
				s.EventBytes += len(e)
			}
		}
	}
	return s
}

// isFill reports whether an event's bytes are an OrderActionRecord with action fill: the
// discriminator, then ts (8 bytes) and the action.
func isFill(e []byte) bool {
	d := (*drift.OrderActionRecord)(nil).Discriminator()
	return len(e) > 16 && [8]byte(e[:8]) == d && drift.OrderAction(e[16]) == drift.OrderActionFill
}
