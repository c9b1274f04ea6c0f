package ingest

import (
	"context"
	"fmt"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

type topicPartition struct {
	topic     string
	partition int
}

type item struct {
	msg     kafkago.Message
	from    position // where its partition's reader started
	rec     any
	err     error // decode error: the message goes to the DLQ
	dlqDone bool  // already produced to the DLQ by an earlier attempt
	skip    bool  // at or below the stored offset: written before a crash
}

type batch struct {
	items []item
	due   time.Time // BatchWait after its first message
}

// fetchLoop fills one batch per writer (up to BatchSize, or until BatchWait after its first
// message), decoding while the writers commit earlier ones, and hands each to its writer's queue,
// blocking while that is full. It returns when ctx ends, handing over what it holds.
func (c *Consumer) fetchLoop(ctx context.Context, in <-chan fetched, queues []chan *batch, free chan *batch) {
	b := &batcher{c: c, queues: queues, free: free, open: make([]*batch, len(queues)), clock: time.Now()}
	defer b.handOver(time.Time{})
	// The next message is awaited until the oldest open batch is due, or as long as it takes.
	var waitUntil time.Time
	waitCtx, cancel := until(ctx, waitUntil)
	defer func() { cancel() }()
	for {
		if due := b.due(); !due.Equal(waitUntil) {
			cancel()
			waitUntil = due
			waitCtx, cancel = until(ctx, waitUntil)
		}
		select {
		case f := <-in:
			// Read before the partitions were positioned anew: read again after this.
			if f.from.epoch >= c.epoch.Load() {
				b.add(f)
			}
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return
			}
			b.handOver(time.Now())
			b.clock = time.Now()
		}
	}
}

// batcher holds the open batch of each writer.
type batcher struct {
	c      *Consumer
	queues []chan *batch
	free   chan *batch
	open   []*batch // by writer; nil: none open
	// clock is what messages are validated against: read when a batch opens and after every wait
	// on a writer, so never older than BatchWait, instead of once per message.
	clock time.Time
}

// due is when the oldest open batch is due (zero: none is open).
func (b *batcher) due() time.Time {
	var due time.Time
	for _, o := range b.open {
		if o != nil && (due.IsZero() || o.due.Before(due)) {
			due = o.due
		}
	}
	return due
}

// handOver sends the batches due by due (zero: all) to their writers. Sending is not abandoned when
// the fetching ends: the writers drain their queues until they close.
func (b *batcher) handOver(due time.Time) {
	for i, o := range b.open {
		if o != nil && (due.IsZero() || !o.due.After(due)) {
			b.queues[i] <- o
			b.open[i] = nil
		}
	}
}

// add decodes f into its writer's open batch (opening one), and hands the batch over once full.
func (b *batcher) add(f fetched) {
	c, m := b.c, f.msg
	i := WriterOf(m.Partition, len(b.queues))
	o := b.open[i]
	if o == nil {
		select {
		case o = <-b.free:
			o.items = o.items[:0]
		default:
			o = &batch{items: make([]item, 0, c.cfg.BatchSize)}
		}
		b.clock = time.Now()
		o.due = b.clock.Add(c.cfg.BatchWait)
		b.open[i] = o
	}
	it := item{msg: m, from: f.from}
	if s, ok := c.sinks[m.Topic]; !ok {
		it.err = fmt.Errorf("no sink for topic %s", m.Topic)
	} else if it.err = checkSchemaVersion(m); it.err == nil {
		it.rec, it.err = s.Decode(Message{Topic: m.Topic, Key: m.Key, Value: m.Value, Headers: m.Headers, Fetched: b.clock})
	}
	o.items = append(o.items, it)
	if len(o.items) >= c.cfg.BatchSize {
		b.queues[i] <- o
		b.open[i] = nil
		b.clock = time.Now()
	}
}

// WriterOf is the writer (of writers) that writes partition p of every topic. Producers key the
// topics of one thing alike (an account's orders and its order actions, say) and partition them by
// the same hash, so the same partition of each holds it: one writer then writes all of its rows, and
// rows that several topics change (an order's state) are never locked by two writers' transactions
// in opposite orders. The same writer in every run, so a skewed load is spread the same way each time.
func WriterOf(p, writers int) int { return p % writers }

// until returns ctx bounded by due, or merely cancelable when due is zero.
func until(ctx context.Context, due time.Time) (context.Context, context.CancelFunc) {
	if due.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, due)
}
