package ingest

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
)

// checkStored compares the offsets Postgres stores with those this consumer committed in the
// current epoch, and rewinds when Postgres has fewer: a failover or a restore took back rows
// that no new message would reveal. Its error is Postgres'.
func (c *Consumer) checkStored(ctx context.Context) error {
	if err := c.ping(ctx); err != nil {
		return err
	}
	epoch := c.epoch.Load()
	// Taken before the read: commits only raise what is stored, so a commit landing between the
	// two cannot look like a loss.
	c.mu.Lock()
	mine := maps.Clone(c.committed)
	c.mu.Unlock()
	stored, err := c.readStored(ctx)
	if err != nil {
		return err
	}
	for tp, p := range mine {
		s, ok := stored[tp]
		if !ok {
			s = -1
		}
		if p.epoch == epoch && s < p.offset {
			c.markBehind(&lostError{tp: tp, stored: s, committed: p.offset, epoch: epoch})
			break
		}
	}
	return nil
}

// readStored reads the group's stored offsets.
func (c *Consumer) readStored(ctx context.Context) (map[topicPartition]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := c.pool.Query(ctx, `SELECT topic, partition, "offset" FROM `+c.offsetsTable+` WHERE consumer_group = $1`, c.cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("read stored offsets: %w", err)
	}
	stored := make(map[topicPartition]int64)
	var tp topicPartition
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&tp.topic, &tp.partition, &off}, func() error {
		stored[tp] = off
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read stored offsets: %w", err)
	}
	return stored, nil
}

// markBehind reports that Postgres was found to hold less than this consumer committed (lost), and
// wakes the session to read its partitions again, unless that epoch has been left already.
func (c *Consumer) markBehind(lost *lostError) {
	c.logger.Warn("postgres stores less than this consumer committed (failover or restore); reading again from the stored offsets",
		"topic", lost.tp.topic, "partition", lost.tp.partition, "stored", lost.stored, "committed", lost.committed)
	epoch := lost.epoch
	for {
		old := c.behind.Load()
		if epoch <= old || c.behind.CompareAndSwap(old, epoch) {
			break
		}
	}
	select {
	case c.rewind <- struct{}{}:
	default:
	}
}

// lockOffsets locks the offset rows of the partitions of items (last indexes each one's last
// message), creating those missing, reads what they store into w.stored and sets them to the
// batch's offsets, all in one round trip (the read returns the values from before; a failure later
// rolls all of it back).
//
// The lock is the fence: two replicas writing one partition during a rebalance take turns, and the
// second reads what the first stored, so what is stored decides what is written and nothing is
// applied twice. The rows are locked in one order (sorted) in every transaction. A stored offset
// below what this consumer committed there is a *lostError: Postgres lost commits.
func (c *Consumer) lockOffsets(ctx context.Context, tx pgx.Tx, w *writeState, items []item, last map[topicPartition]int) error {
	w.offT, w.offP, w.offO = w.offT[:0], w.offP[:0], w.offO[:0]
	for tp, i := range last {
		w.offT = append(w.offT, tp.topic)
		w.offP = append(w.offP, int32(tp.partition))
		w.offO = append(w.offO, items[i].msg.Offset)
	}
	clear(w.stored)
	var offsets pgx.Batch
	offsets.Queue(`
INSERT INTO `+c.offsetsTable+` (consumer_group, topic, partition, "offset")
SELECT $1, t, p, -1 FROM unnest($2::text[], $3::int[]) AS u(t, p) ORDER BY t, p
ON CONFLICT (consumer_group, topic, partition) DO NOTHING`, c.cfg.Group, w.offT, w.offP)
	offsets.Queue(`
SELECT o.topic, o.partition, o."offset" FROM `+c.offsetsTable+` o
JOIN unnest($2::text[], $3::int[]) AS u(t, p) ON o.topic = u.t AND o.partition = u.p
WHERE o.consumer_group = $1 ORDER BY o.topic, o.partition FOR UPDATE OF o`, c.cfg.Group, w.offT, w.offP).
		Query(func(rows pgx.Rows) error {
			var tp topicPartition
			var off int64
			_, err := pgx.ForEachRow(rows, []any{&tp.topic, &tp.partition, &off}, func() error {
				w.stored[tp] = off
				return nil
			})
			return err
		})
	offsets.Queue(`
UPDATE `+c.offsetsTable+` o SET "offset" = greatest(o."offset", u.n), updated_at = now()
FROM unnest($2::text[], $3::int[], $4::bigint[]) AS u(t, p, n)
WHERE o.consumer_group = $1 AND o.topic = u.t AND o.partition = u.p`,
		c.cfg.Group, w.offT, w.offP, w.offO)
	if err := tx.SendBatch(ctx, &offsets).Close(); err != nil {
		return fmt.Errorf("lock and store offsets: %w", err)
	}
	for tp := range last {
		if stored, prev := w.stored[tp], w.prev[tp]; stored < prev.offset {
			return &lostError{tp: tp, stored: stored, committed: prev.offset, epoch: prev.epoch}
		}
	}
	return nil
}
