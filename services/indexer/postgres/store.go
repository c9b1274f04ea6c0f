// Package postgres keeps the indexer's checkpoint in its schema and the lock that lets one replica
// index at a time.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/indexer"
)

// Store is the checkpoint of one schema.
type Store struct {
	pool                *pgxpool.Pool
	schema              string
	checkpoint, fillIDs string
	lockKey             int64
}

// NewStore keeps the checkpoint in schema.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	h := fnv.New64a()
	h.Write([]byte("tidemark indexer " + schema))
	return &Store{pool: pool, schema: schema, checkpoint: pg.Table(schema, "checkpoint"), fillIDs: pg.Table(schema, "fill_ids"),
		lockKey: int64(h.Sum64())}
}

// Slot reads the checkpoint's slot alone: every block up to it is indexed. ok is false before the
// first checkpoint.
func (s *Store) Slot(ctx context.Context) (slot uint64, ok bool, err error) {
	err = s.pool.QueryRow(ctx, "SELECT slot FROM "+s.checkpoint+" WHERE id = 1").Scan(&slot)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read the checkpoint: %w", err)
	}
	return slot, true, nil
}

// Load reads the checkpoint; ok is false before the first.
func (s *Store) Load(ctx context.Context) (c indexer.Checkpoint, ok bool, err error) {
	if c.Slot, ok, err = s.Slot(ctx); err != nil || !ok {
		return indexer.Checkpoint{}, false, err
	}
	rows, err := s.pool.Query(ctx, "SELECT market_type, market_index, last_id FROM "+s.fillIDs)
	if err != nil {
		return indexer.Checkpoint{}, false, fmt.Errorf("read the fill ids: %w", err)
	}
	c.FillIDs = map[indexer.Market]uint64{}
	var t int16
	var i int32
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&t, &i, &id}, func() error {
		c.FillIDs[indexer.Market{Type: drift.MarketType(t), Index: uint16(i)}] = uint64(id)
		return nil
	})
	if err != nil {
		return indexer.Checkpoint{}, false, fmt.Errorf("read the fill ids: %w", err)
	}
	return c, true, nil
}

// Save stores c in one transaction. The slot never goes back: a replica that lost the lock and
// has not noticed yet cannot undo the progress of the one that took it.
func (s *Store) Save(ctx context.Context, c indexer.Checkpoint) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		b.Queue("INSERT INTO "+s.checkpoint+" (id, slot) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET slot = GREATEST("+
			s.checkpoint+".slot, EXCLUDED.slot), updated_at = now()", int64(c.Slot))
		for m, id := range c.FillIDs {
			b.Queue("INSERT INTO "+s.fillIDs+" (market_type, market_index, last_id) VALUES ($1, $2, $3) "+
				"ON CONFLICT (market_type, market_index) DO UPDATE SET last_id = GREATEST("+s.fillIDs+".last_id, EXCLUDED.last_id)",
				int16(m.Type), int32(m.Index), int64(id))
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("save the checkpoint at slot %d: %w", c.Slot, err)
		}
		return nil
	})
}

// Lead blocks until this process holds the schema's indexing lock (a session advisory lock on a
// connection of its own), then returns a context that ends when the lock may be lost (the
// connection fails its check) or ctx ends, and the function that releases it.
func (s *Store) Lead(ctx context.Context, check time.Duration) (context.Context, func(), error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("acquire a connection for the indexing lock: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", s.lockKey); err != nil {
		conn.Release()
		return nil, nil, fmt.Errorf("take the indexing lock: %w", err)
	}
	held, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(check)
		defer t.Stop()
		for {
			select {
			case <-held.Done():
				return
			case <-t.C:
				if err := conn.Ping(held); err != nil {
					cancel()
					return
				}
			}
		}
	}()
	release := func() {
		cancel()
		<-done
		// Unlocking on a connection that failed is moot: the server dropped the lock with it.
		ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", s.lockKey); err != nil {
			conn.Conn().Close(ctx)
		}
		conn.Release()
	}
	return held, release, nil
}
