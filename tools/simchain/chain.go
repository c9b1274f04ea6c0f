package simchain

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tidemark/tidemark/platform/chain/base58"
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
	// available block). 0 keeps every block until PruneBefore drops them: TestMemoryPerEvent
	// measures what a block costs per event.
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
	pending  map[int64]*pendingBlock
	hiTs     int64 // the newest ts of the messages so far
	hiMin    int64 // the lowest slot among the messages of second hiTs
	accounts map[solana.PublicKey]*account
	skip     map[int64]bool // slots to leave out when they are sealed

	faults faultState

	markets    []Market                      // fixed at New
	users      map[solana.PublicKey]*simUser // by the records' address and by the PDA
	userList   []*simUser                    // in the order they came
	stats      map[solana.PublicKey]*drift.UserStats
	dirty      map[*simUser]bool // users a batch moved, encoded at its end
	dirtyStats map[solana.PublicKey]bool
	tables     []solana.LookupTable // fixed at New

	sentMu sync.Mutex
	sent   []Sent

	walletsOnce sync.Once
	wallets     []string // see wallet
}

// block is one slot's block: its transactions in order, each with its Drift events as bytes.
type block struct {
	slot, parent int64 // parent: the slot of the block before, slot-1 for the first
	time         int64 // blockTime: the events' ts
	height       uint64
	txs          []tx
}

// tx is one transaction of the records, kept compact: its signature and its Drift events' bytes
// in txSigIndex order, each after its length (a uvarint), in one buffer. The signature stays in
// base58, as encoding it again for every getBlock would cost more than the rest of rendering.
// first is the txSigIndex of the first event: above 0, the vault program logged that many events
// before it. cut marks a log the Truncate fault cut after the events left.
type tx struct {
	sig   string
	first int32
	cut   bool
	data  []byte
}

// events are the transaction's events, sharing its buffer.
func (x *tx) events() [][]byte {
	var out [][]byte
	for b := x.data; len(b) > 0; {
		n, k := binary.Uvarint(b)
		out = append(out, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return out
}

// setEvents replaces the transaction's events.
func (x *tx) setEvents(evs [][]byte) {
	size := 0
	for _, e := range evs {
		size += uvarintLen(len(e)) + len(e)
	}
	data := make([]byte, 0, size)
	for _, e := range evs {
		data = binary.AppendUvarint(data, uint64(len(e)))
		data = append(data, e...)
	}
	x.data = data
}

func uvarintLen(n int) int {
	size := 1
	for ; n >= 0x80; n >>= 7 {
		size++
	}
	return size
}

// pendingBlock is a block still open to records: its transactions in the order their first record
// came, each with its events and their txSigIndexes.
type pendingBlock struct {
	time int64
	txs  []*pendingTx
}

type pendingTx struct {
	sig    string
	events []pendingEvent
}

type pendingEvent struct {
	index int
	data  []byte
}

// account is an account's data and owner; lamports 0 stands for the rent-exempt balance of its
// size, what every account but a wrapped SOL one holds.
type account struct {
	data     []byte
	owner    solana.PublicKey
	lamports uint64
}

// New returns an empty chain with the markets' accounts.
func New(cfg Config) *Chain {
	cfg = cfg.withDefaults()
	c := &Chain{
		cfg: cfg, pending: map[int64]*pendingBlock{}, accounts: map[solana.PublicKey]*account{}, skip: map[int64]bool{},
		users: map[solana.PublicKey]*simUser{}, stats: map[solana.PublicKey]*drift.UserStats{},
		dirty: map[*simUser]bool{}, dirtyStats: map[solana.PublicKey]bool{},
	}
	binary.LittleEndian.PutUint64(c.seed[:], uint64(cfg.Seed))
	for _, m := range cfg.Markets {
		c.markets = append(c.markets, newMarket(m))
	}
	// The configured markets are the program's: a bad one is a bug of the caller.
	if err := c.initAccounts(); err != nil {
		panic(err)
	}
	if err := c.initLookupTables(); err != nil {
		panic(err)
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
// direct (nil drops them). Its Write returns once the blocks of the seconds before the batch's
// last are sealed and served; the last second's blocks wait for the next Write, or Seal, since its
// records may continue in the next batch. Messages must come in time order, as the simulator
// writes them.
func (c *Chain) Writer(direct sim.Writer) sim.Writer { return &writer{c: c, direct: direct} }

type writer struct {
	c      *Chain
	direct sim.Writer
}

func (w *writer) Write(ctx context.Context, msgs ...events.Message) error {
	c := w.c
	// Decoding and encoding take the time; the lock is held only to change the chain.
	var rest []events.Message
	entries := make([]entry, 0, len(msgs))
	for _, m := range msgs {
		var e entry
		var err error
		switch {
		case eventTopics[m.Topic]:
			e, err = c.eventEntry(m)
		case m.Topic == events.TopicMarketStates:
			e, err = c.marketStateEntry(m)
		default:
			rest = append(rest, m)
			continue
		}
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	if err := c.apply(entries); err != nil {
		return err
	}
	if len(rest) == 0 || w.direct == nil {
		return nil
	}
	return w.direct.Write(ctx, rest...)
}

// entry is one message made ready for the chain: an event for a transaction (event set) and the
// accounts it sets.
type entry struct {
	topic    string
	tx       events.Tx
	event    []byte
	accounts []keyedAccount
	newUser  *newUser // a new user's subaccount
	move     any      // the Drift event, when it moves a user's positions or orders
}

type keyedAccount struct {
	addr solana.PublicKey
	account
}

func (c *Chain) eventEntry(m events.Message) (entry, error) {
	rec, err := events.Decode(m.Topic, m.Value)
	if err != nil {
		return entry{}, fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	t, ok := txOf(rec)
	if !ok {
		return entry{}, fmt.Errorf("simchain: %s record %T names no transaction", m.Topic, rec)
	}
	if sig, err := base58.Decode(t.TxSig); err != nil || len(sig) != 64 {
		return entry{}, fmt.Errorf("simchain: %s: txSig %q is no transaction signature", m.Topic, t.TxSig)
	}
	ev, err := records.Event(rec)
	if err != nil {
		return entry{}, fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	data, err := ev.MarshalBinary()
	if err != nil {
		return entry{}, fmt.Errorf("simchain: %s: %w", m.Topic, err)
	}
	// A clone: a decoded record's strings may share the message's buffer, which the chain must not
	// keep.
	t.TxSig = strings.Clone(t.TxSig)
	e := entry{topic: m.Topic, tx: t, event: data}
	switch ev.(type) {
	case *drift.OrderRecord, *drift.OrderActionRecord, *drift.DepositRecord, *drift.SettlePnlRecord:
		e.move = ev
	}
	if nu, ok := rec.(*events.NewUser); ok {
		if e.accounts, e.newUser, err = c.newUserAccounts(nu); err != nil {
			return entry{}, err
		}
	}
	return e, nil
}

// apply puts the entries on the chain and seals what they complete. A record for a sealed slot
// refuses the whole batch, before any of it is applied.
func (c *Chain) apply(entries []entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.blocks); n > 0 {
		last := c.blocks[n-1].slot
		for _, e := range entries {
			if e.event != nil && e.tx.Slot <= last {
				return fmt.Errorf("%w: %s %s in slot %d, sealed up to %d", ErrLate, e.topic, e.tx.TxSig, e.tx.Slot, last)
			}
		}
	}
	for _, e := range entries {
		for _, a := range e.accounts {
			c.accounts[a.addr] = &a.account
		}
		if e.newUser != nil {
			c.addUser(e.newUser)
		}
		if e.move != nil {
			c.move(e.move)
		}
		c.advance(e.tx.Ts, e.tx.Slot)
		if e.event == nil {
			continue
		}
		b := c.pending[e.tx.Slot]
		if b == nil {
			b = &pendingBlock{time: e.tx.Ts}
			c.pending[e.tx.Slot] = b
		}
		b.time = min(b.time, e.tx.Ts)
		b.add(e.tx.TxSig, e.tx.TxSigIndex, e.event)
	}
	c.sealBefore(c.hiMin)
	return c.flushUsers()
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

// add puts an event at its index in its transaction.
func (b *pendingBlock) add(sig string, index int, data []byte) {
	var x *pendingTx
	for _, y := range b.txs {
		if y.sig == sig {
			x = y
			break
		}
	}
	if x == nil {
		x = &pendingTx{sig: sig}
		b.txs = append(b.txs, x)
	}
	// Events are few per transaction and mostly come in order: an insertion keeps them sorted.
	at := len(x.events)
	for at > 0 && x.events[at-1].index > index {
		at--
	}
	x.events = slices.Insert(x.events, at, pendingEvent{index, data})
}

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
		p := c.pending[s]
		delete(c.pending, s)
		if c.skip[s] {
			delete(c.skip, s)
			c.faults.count(&c.faults.counts.SkippedSlots, 1)
			continue
		}
		b := &block{slot: s, time: p.time, txs: make([]tx, len(p.txs))}
		for i, x := range p.txs {
			b.txs[i] = x.seal()
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

// seal is the transaction as the chain keeps it. Indexes with holes (a record stream that numbers
// events the chain does not have) keep their order.
func (x *pendingTx) seal() tx {
	t := tx{sig: x.sig}
	evs := make([][]byte, len(x.events))
	for i, e := range x.events {
		evs[i] = e.data
	}
	t.first = int32(x.events[0].index)
	t.setEvents(evs)
	return t
}

// prune drops the oldest blocks beyond RetainBlocks.
func (c *Chain) prune() {
	if n := len(c.blocks) - c.cfg.RetainBlocks; c.cfg.RetainBlocks > 0 && n > 0 {
		c.dropOldest(n)
	}
}

// PruneBefore drops the blocks below slot, as a node cleans up its ledger: getBlock answers
// -32001 for them and getFirstAvailableBlock moves on. It returns how many went. A chain that
// lives long (the dev stack's) prunes what its readers have read, since every block it keeps
// stays in memory.
func (c *Chain) PruneBefore(slot int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, _ := c.find(slot)
	c.dropOldest(n)
	return n
}

// dropOldest drops the n oldest blocks; heights go on counting them.
func (c *Chain) dropOldest(n int) {
	if n <= 0 {
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

// Kept is how many blocks the chain holds and the slot of the oldest (0 when none).
func (c *Chain) Kept() (blocks int, first int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.blocks) == 0 {
		return 0, 0
	}
	return len(c.blocks), c.blocks[0].slot
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
		for i := range b.txs {
			for _, e := range b.txs[i].events() {
				s.Events++
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
