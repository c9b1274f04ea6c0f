// Package indexer reads the protocol's history from a Solana JSON-RPC endpoint and writes its
// events to the protocol topics, as the protocol's own Data API ingests it: finalized blocks, slot
// by slot, in order.
//
// It lists the slots that have a block with getBlocks (the slots it leaves out are the ones the
// cluster skipped), reads their blocks with getBlock, several in flight, and hands them on in slot
// order: each successful transaction's log through txlog (Drift's events, vault events numbered
// first) and records (one topic record an event). Records go to Kafka in batches, and once the
// brokers acknowledged a batch (every in-sync replica) its last slot becomes the checkpoint in
// Postgres. After a crash it starts after the checkpoint: what it wrote past it is written again,
// and every consumer drops it by its natural key (txSig, txSigIndex).
//
// A block that fails to read is read again, never passed over. A fillRecordId that jumps, a log the
// runtime truncated, an event that does not decode are counted and logged with where they were.
// The market accounts give the catalogue (symbols) and protocol.market-states, read on a timer.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/txlog"
	"github.com/tidemark/tidemark/platform/events"
)

// Config tunes the indexer; zero values take the defaults of SetDefaults.
type Config struct {
	// Start is the first slot to index when there is no checkpoint; 0 starts at the finalized tip.
	Start uint64
	// InFlight is how many getBlock calls run at once.
	InFlight int
	// Span is how many slots one getBlocks lists, and so the most slots between checkpoints while
	// backfilling.
	Span uint64
	// BatchEvents is how many records are written to Kafka before the checkpoint moves; while
	// following the tip a batch is also written when the slots at hand are done.
	BatchEvents int
	// Poll is how often the tip is read once caught up.
	Poll time.Duration
	// ReadyLag is how many slots behind the tip the checkpoint may be for the indexer to be ready.
	ReadyLag uint64
	// Accounts is how often the market accounts are read for market states.
	Accounts time.Duration
	// StateEvery writes a market's state at least this often even when its account did not change.
	StateEvery time.Duration
}

// SetDefaults sets every zero field to its default.
func (c *Config) SetDefaults() {
	if c.InFlight <= 0 {
		c.InFlight = 8
	}
	if c.Span == 0 {
		c.Span = 2000
	}
	if c.BatchEvents <= 0 {
		c.BatchEvents = 10000
	}
	if c.Poll <= 0 {
		c.Poll = 400 * time.Millisecond
	}
	if c.ReadyLag == 0 {
		c.ReadyLag = 150
	}
	if c.Accounts <= 0 {
		c.Accounts = 2 * time.Second
	}
	if c.StateEvery <= 0 {
		c.StateEvery = time.Minute
	}
}

// Checkpoint is the indexer's progress: the last slot whose every event Kafka acknowledged, and
// each market's last fillRecordId at that slot.
type Checkpoint struct {
	Slot    uint64
	FillIDs map[Market]uint64
}

// Store keeps the checkpoint and the lock that lets one replica index at a time.
type Store interface {
	Load(ctx context.Context) (Checkpoint, bool, error)
	Save(ctx context.Context, c Checkpoint) error
	// Lead blocks until the lock is held; the context it returns ends when it may be lost.
	Lead(ctx context.Context, check time.Duration) (context.Context, func(), error)
}

// Writer delivers records to their topics and returns once they are acknowledged.
type Writer interface {
	Write(ctx context.Context, msgs ...events.Message) error
}

// Indexer is one replica's indexer.
type Indexer struct {
	cfg   Config
	rpc   *rpc.Client
	store Store
	out   Writer
	log   *slog.Logger
	m     *metrics
	now   func() time.Time

	mapper  atomic.Pointer[records.Mapper]
	markets *marketAccounts

	// Readiness: the last tip read and when, and the checkpoint.
	tip        atomic.Uint64
	tipAt      atomic.Int64
	checkpoint atomic.Uint64
	leading    atomic.Bool
}

// Options are what an Indexer is made of besides its Config.
type Options struct {
	RPC        rpc.Options
	Store      Store
	Out        Writer
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time // the clock of market states' ts; default time.Now
}

// New returns an indexer of o.RPC's endpoint.
func New(cfg Config, o Options) (*Indexer, error) {
	cfg.SetDefaults()
	if o.Store == nil || o.Out == nil {
		return nil, errors.New("indexer: a Store and a Writer are needed")
	}
	idx := &Indexer{cfg: cfg, store: o.Store, out: o.Out, log: o.Logger, m: newMetrics(o.Registerer), now: o.Now}
	if idx.log == nil {
		idx.log = slog.New(slog.DiscardHandler)
	}
	if idx.now == nil {
		idx.now = time.Now
	}
	observe := o.RPC.Observe
	o.RPC.Observe = func(method, code string) {
		idx.m.rpc(method, code)
		if observe != nil {
			observe(method, code)
		}
	}
	c, err := rpc.New(o.RPC)
	if err != nil {
		return nil, fmt.Errorf("indexer: %w", err)
	}
	idx.rpc = c
	idx.markets = newMarketAccounts(idx)
	return idx, nil
}

// Ready reports whether the index is current: this replica stands by, or its checkpoint is within
// ReadyLag slots of a tip read in the last minute.
func (idx *Indexer) Ready() error {
	if !idx.leading.Load() {
		return nil
	}
	at := idx.tipAt.Load()
	if at == 0 {
		return errors.New("indexer: the chain's tip was not read yet")
	}
	if age := time.Since(time.Unix(0, at)); age > time.Minute {
		return fmt.Errorf("indexer: the chain's tip was last read %s ago", age.Round(time.Second))
	}
	tip, cp := idx.tip.Load(), idx.checkpoint.Load()
	if tip > cp+idx.cfg.ReadyLag {
		return fmt.Errorf("indexer: checkpoint at slot %d, %d slots behind the tip %d (ready within %d)", cp, tip-cp, tip, idx.cfg.ReadyLag)
	}
	return nil
}

// Run indexes until ctx ends: once it holds the indexing lock, it reads the markets, then follows
// the chain from the checkpoint (or Config.Start) while the market states are read beside it.
func (idx *Indexer) Run(ctx context.Context) error {
	idx.log.Info("waiting for the indexing lock")
	held, release, err := idx.store.Lead(ctx, 5*time.Second)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer release()
	idx.leading.Store(true)
	idx.m.leader.Set(1)
	defer func() { idx.leading.Store(false); idx.m.leader.Set(0) }()

	cp, ok, err := idx.store.Load(held)
	if err != nil {
		return stopped(ctx, err)
	}
	if err := idx.markets.refresh(held); err != nil {
		return stopped(ctx, fmt.Errorf("read the market accounts: %w", err))
	}
	next := cp.Slot + 1
	if !ok {
		next = idx.cfg.Start
		if next == 0 {
			tip, err := idx.rpc.Slot(held, rpc.Finalized)
			if err != nil {
				return stopped(ctx, err)
			}
			next = tip
		}
		cp = Checkpoint{Slot: next - 1}
	}
	idx.checkpoint.Store(cp.Slot)
	idx.m.checkpoint.Set(float64(cp.Slot))
	idx.log.Info("indexing", "from", next, "checkpoint", ok, "endpoint", idx.rpc.URL())

	var wg sync.WaitGroup
	defer wg.Wait()
	run, cancel := context.WithCancel(held)
	defer cancel()
	wg.Go(func() { idx.markets.follow(run) })
	err = idx.follow(run, next, newFillIDs(cp.FillIDs))
	if ctx.Err() != nil {
		return nil
	}
	if err == nil && held.Err() != nil {
		err = errors.New("the indexing lock's connection failed: another replica may index now")
	}
	return err
}

// stopped is err unless ctx ended, which is a clean stop.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// follow indexes from slot next on, span by span, until ctx ends.
func (idx *Indexer) follow(ctx context.Context, next uint64, fills *fillIDs) error {
	for ctx.Err() == nil {
		tip, err := idx.rpc.Slot(ctx, rpc.Finalized)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Slot retries what passes; what is left (bad params, a broken answer) is the
			// endpoint's to fix: say so and keep asking rather than stop the indexer.
			idx.log.Error("read the tip", "err", err)
			sleep(ctx, idx.cfg.Poll*10)
			continue
		}
		idx.tip.Store(tip)
		idx.tipAt.Store(time.Now().UnixNano())
		idx.m.tip.Set(float64(tip))
		idx.m.lag.Set(float64(tip - min(tip, idx.checkpoint.Load())))
		if next > tip {
			sleep(ctx, idx.cfg.Poll)
			continue
		}
		end := min(tip, next+idx.cfg.Span-1)
		slots, err := idx.rpc.Blocks(ctx, next, end, rpc.Finalized)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			idx.log.Error("list the blocks", "from", next, "to", end, "err", err)
			sleep(ctx, idx.cfg.Poll*10)
			continue
		}
		if err := idx.span(ctx, slots, end, fills); err != nil {
			return stopped(ctx, err)
		}
		next = end + 1
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// batch is the records of the blocks read since the last checkpoint.
type batch struct {
	msgs  []events.Message
	users []newUser // the new users among msgs, to complete from their accounts
	slot  uint64    // the last slot whose records are in msgs
}

// newUser is a new user's record and where its message is in the batch.
type newUser struct {
	at  int
	rec *events.NewUser
}

// span indexes the listed slots, which are every block up to end, and checkpoints end.
func (idx *Indexer) span(ctx context.Context, slots []uint64, end uint64, fills *fillIDs) error {
	blocks := idx.fetch(ctx, slots)
	var b batch
	for _, slot := range slots {
		f, ok := <-blocks
		if !ok {
			return ctx.Err()
		}
		if f.slot != slot {
			return fmt.Errorf("indexer: block of slot %d came for slot %d", f.slot, slot)
		}
		idx.block(ctx, &b, slot, f.block, fills)
		b.slot = slot
		if len(b.msgs) >= idx.cfg.BatchEvents {
			if err := idx.flush(ctx, &b, fills); err != nil {
				return err
			}
		}
	}
	b.slot = end
	return idx.flush(ctx, &b, fills)
}

// block adds the records of one block to b.
func (idx *Indexer) block(ctx context.Context, b *batch, slot uint64, blk *rpc.Block, fills *fillIDs) {
	idx.m.blocks.Inc()
	for i := range blk.Transactions {
		tx := &blk.Transactions[i]
		if tx.Meta == nil || tx.Meta.Failed() {
			continue // its events were rolled back
		}
		res, err := txlog.Parse(tx.Meta.LogMessages, false)
		if err != nil {
			name := "log"
			var de *drift.DecodeError
			if errors.As(err, &de) && de.Type != "" {
				name = de.Type
			}
			idx.m.decodeFailures.WithLabelValues(name).Inc()
			idx.log.Error("a transaction's log does not decode: its events are not indexed", "slot", slot, "tx", tx.Signature(), "err", err)
			continue
		}
		if res.Truncated {
			idx.m.truncated.Inc()
			idx.log.Warn("the runtime truncated a transaction's log: events past the cut are lost",
				"slot", slot, "tx", tx.Signature(), "eventsKept", len(res.Events))
		}
		for _, ev := range res.Events {
			idx.event(ctx, b, slot, tx.Signature(), ev, fills)
		}
	}
}

// event adds the record of one event to b.
func (idx *Indexer) event(ctx context.Context, b *batch, slot uint64, sig string, ev txlog.Event, fills *fillIDs) {
	c := records.Context{TxSig: sig, TxSigIndex: ev.TxSigIndex, Slot: int64(slot)}
	rec, ok, err := idx.mapper.Load().Map(ev.Event, c)
	if errors.Is(err, records.ErrUnknownMarket) {
		// A market listed after the catalogue was read: read the accounts again, once.
		if rerr := idx.markets.refresh(ctx); rerr != nil {
			idx.log.Warn("read the market accounts again", "err", rerr)
		}
		rec, ok, err = idx.mapper.Load().Map(ev.Event, c)
	}
	if err != nil {
		idx.m.decodeFailures.WithLabelValues(ev.EventName()).Inc()
		idx.log.Error("an event maps to no valid record: it is not indexed", "slot", slot, "tx", sig, "txSigIndex", ev.TxSigIndex,
			"event", ev.EventName(), "err", err)
		return
	}
	if !ok {
		return
	}
	if oa, isFill := ev.Event.(*drift.OrderActionRecord); isFill && oa.Action == drift.OrderActionFill && oa.FillRecordID.Some {
		m := Market{Type: oa.MarketType, Index: oa.MarketIndex}
		if gap, found := fills.observe(m, oa.FillRecordID.Value, int64(slot), sig); found {
			idx.m.fillGaps.WithLabelValues(m.String()).Inc()
			idx.m.fillGapIDs.WithLabelValues(m.String()).Add(float64(gap.To - gap.From + 1))
			idx.log.Warn("fillRecordId gap: fills never seen", "market", m.String(), "from", gap.From, "to", gap.To,
				"slot", slot, "tx", sig)
		}
	}
	msg, err := events.Encode(rec.Topic, rec.Record)
	if err != nil {
		idx.m.decodeFailures.WithLabelValues(ev.EventName()).Inc()
		idx.log.Error("a record does not encode: it is not indexed", "slot", slot, "tx", sig, "event", ev.EventName(), "err", err)
		return
	}
	if u, isUser := rec.Record.(*events.NewUser); isUser {
		b.users = append(b.users, newUser{at: len(b.msgs), rec: u})
	}
	b.msgs = append(b.msgs, msg)
}

// flush writes b's records, waits for Kafka to acknowledge them, then checkpoints b.slot with the
// fill ids. Failures are retried until ctx ends: nothing is passed over.
func (idx *Indexer) flush(ctx context.Context, b *batch, fills *fillIDs) error {
	start := time.Now()
	if len(b.users) > 0 {
		if err := idx.completeUsers(ctx, b); err != nil {
			return err
		}
	}
	if len(b.msgs) > 0 {
		if err := retry(ctx, idx.log, "write records to Kafka", retryFirst, retryMost, func() error { return idx.out.Write(ctx, b.msgs...) }); err != nil {
			return err
		}
		for _, m := range b.msgs {
			idx.m.events.WithLabelValues(m.Topic).Inc()
		}
	}
	cp := Checkpoint{Slot: b.slot, FillIDs: fills.snapshot()}
	if err := retry(ctx, idx.log, "save the checkpoint", retryFirst, retryMost, func() error { return idx.store.Save(ctx, cp) }); err != nil {
		return err
	}
	idx.checkpoint.Store(b.slot)
	idx.m.checkpoint.Set(float64(b.slot))
	idx.m.lag.Set(float64(idx.tip.Load() - min(idx.tip.Load(), b.slot)))
	idx.m.produceSeconds.Observe(time.Since(start).Seconds())
	b.msgs, b.users = b.msgs[:0], b.users[:0]
	return nil
}

// The waits between attempts to write to Kafka, Postgres or read accounts: short first, since most
// failures are a leader moving, and bounded so that a long outage is retried often enough.
const (
	retryFirst = 100 * time.Millisecond
	retryMost  = 10 * time.Second
)

// retry runs f until it succeeds or ctx ends, waiting from first to most between attempts,
// doubling.
func retry(ctx context.Context, log *slog.Logger, what string, first, most time.Duration, f func() error) error {
	wait := first
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn(what+" failed: retrying", "err", err, "in", wait)
		sleep(ctx, wait)
		wait = min(2*wait, most)
	}
}
