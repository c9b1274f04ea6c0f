package ingest

import (
	"context"
	"errors"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// follow takes the group's generations one after the other and runs a session for each: the
// partitions a generation assigns are this consumer's until the next rebalance.
func (c *Consumer) follow(ctx context.Context, group *kafkago.ConsumerGroup, in chan<- fetched) {
	var sessions sync.WaitGroup
	defer sessions.Wait()
	for {
		gen, err := group.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafkago.ErrGroupClosed) {
				return
			}
			// The group retries by itself, after a backoff.
			c.logger.Warn("consumer group join failed; retrying", "err", err)
			continue
		}
		c.gen.Store(gen)
		c.metrics.generations.Inc()
		c.setJoined()
		sessions.Add(1)
		// The group moves to its next generation only once this returns.
		gen.Start(func(genCtx context.Context) {
			defer sessions.Done()
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(genCtx, cancel)()
			c.session(sctx, gen, in)
		})
	}
}

// position is where a partition's reading starts or stands: an offset read from Postgres (or
// committed), in the epoch of the positioning it belongs to.
type position struct {
	epoch  uint64
	offset int64 // -1: none stored
}

// fetched is a message with the position its partition's reader started after.
type fetched struct {
	msg  kafkago.Message
	from position
}

// session reads the partitions gen assigns until ctx ends, each from the offset after the one
// Postgres stores for it, and all of them again from there whenever a writer finds Postgres behind
// what this consumer committed. Each positioning is a new epoch: messages of an older one are
// dropped wherever they wait, unwritten.
func (c *Consumer) session(ctx context.Context, gen *kafkago.Generation, in chan<- fetched) {
	var parts []topicPartition
	for topic, as := range gen.Assignments {
		for _, a := range as {
			parts = append(parts, topicPartition{c.kc.Logical(topic), a.ID})
		}
	}
	c.logger.Info("partitions assigned", "generation", gen.ID, "partitions", len(parts))
	backoff := c.cfg.MinBackoff
	for {
		epoch := c.epoch.Add(1)
		stored, err := c.readStored(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.setDB(err)
			c.logger.Warn("cannot read the stored offsets; retrying", "err", err, "retry_in", backoff)
			if !pause(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, c.cfg.MaxBackoff)
			continue
		}
		backoff = c.cfg.MinBackoff
		c.setDB(nil)
		fctx, stop := context.WithCancel(ctx)
		var readers sync.WaitGroup
		for _, tp := range parts {
			from := position{epoch: epoch, offset: -1}
			if off, ok := stored[tp]; ok {
				from.offset = off
			}
			readers.Go(func() { c.fetchPartition(fctx, tp, from, in) })
		}
		rewind := c.awaitBehind(ctx, epoch)
		stop()
		readers.Wait()
		if !rewind {
			return
		}
		c.metrics.rewinds.Inc()
	}
}

// awaitBehind waits until a writer finds Postgres behind in epoch (true) or ctx ends (false).
func (c *Consumer) awaitBehind(ctx context.Context, epoch uint64) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.rewind:
			if c.behind.Load() >= epoch {
				return true
			}
		}
	}
}

// fetchPartition reads tp from the offset after from's until ctx ends, handing each message to in.
func (c *Consumer) fetchPartition(ctx context.Context, tp topicPartition, from position, in chan<- fetched) {
	r := c.kc.NewPartitionReader(tp.topic, tp.partition, partitionQueue)
	defer func() {
		if err := r.Close(); err != nil {
			c.logger.Debug("close partition reader", "topic", tp.topic, "partition", tp.partition, "err", err)
		}
	}()
	start := from.offset + 1
	if from.offset < 0 {
		start = kafkago.FirstOffset
	}
	// Cannot fail on a reader that has not read yet.
	_ = r.SetOffset(start)
	backoff := c.cfg.MinBackoff
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("kafka fetch failed", "topic", tp.topic, "partition", tp.partition, "err", err, "retry_in", backoff)
			if !pause(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, c.cfg.MaxBackoff)
			continue
		}
		backoff = c.cfg.MinBackoff
		m.Topic = tp.topic // the mesh's name, whatever the deployment's prefix
		select {
		case in <- fetched{msg: m, from: from}:
		case <-ctx.Done():
			return
		}
	}
}

// pause waits d, or less if ctx ends first; it reports whether ctx is still live.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
