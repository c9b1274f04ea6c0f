package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/pg"
)

// Folder moves what the sinks appended to the volume and P&L deltas into the wallets' months: the
// deltas of accounts whose wallet is known go to their wallet's row, the others wait in the pending
// tables, and the pending rows of accounts whose new-user record has come since go to their wallet.
// All in one transaction, one replica at a time: every delta is moved exactly once, and deltas
// committed while a fold runs wait for the next.
//
// Folding once a second, not in every batch, keeps the wallets' rows (each in the indexes of its
// leaderboards) out of the ingest's transactions: a batch of fills touches most active wallets, and a
// second holds many batches.
type Folder struct {
	pg.DB
	t tables
}

// NewFolder folds schema's deltas.
func NewFolder(pool *pgxpool.Pool, schema string) *Folder {
	return &Folder{DB: pg.DB{Pool: pool, Schema: schema}, t: tablesOf(schema)}
}

// Fold moves the deltas once.
func (f *Folder) Fold(ctx context.Context) error {
	tx, err := f.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`, f.Schema+".fold").Scan(&mine); err != nil {
		return fmt.Errorf("take the fold lock: %w", err)
	}
	if !mine {
		return nil // another replica folds
	}
	volumes := `maker_volume = w.maker_volume + excluded.maker_volume, taker_volume = w.taker_volume + excluded.taker_volume`
	pnl := `pnl = w.pnl + excluded.pnl`
	months := map[int64]bool{}
	collect := func(rows pgx.Rows) error {
		var m int64
		_, err := pgx.ForEachRow(rows, []any{&m}, func() error {
			months[m] = true
			return nil
		})
		return err
	}
	var b pgx.Batch
	// The deltas, summed per account and month: to the wallet when it is known, else pending. Rows
	// go in key order, the order every fold takes them in.
	b.Queue(`WITH moved AS (DELETE FROM ` + f.t.volumeDeltas + ` RETURNING month, account, maker_volume, taker_volume),
			summed AS (SELECT m.month, m.account, a.authority, sum(m.maker_volume) AS maker, sum(m.taker_volume) AS taker
				FROM moved m LEFT JOIN ` + f.t.accounts + ` a USING (account) GROUP BY 1, 2, 3),
			parked AS (INSERT INTO ` + f.t.pendingVolumes + ` AS w (month, account, maker_volume, taker_volume)
				SELECT month, account, maker, taker FROM summed WHERE authority IS NULL ORDER BY month, account
				ON CONFLICT (month, account) DO UPDATE SET ` + volumes + `)
		INSERT INTO ` + f.t.walletMonths + ` AS w (month, authority, maker_volume, taker_volume)
		SELECT month, authority, sum(maker), sum(taker) FROM summed WHERE authority IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
		ON CONFLICT (month, authority) DO UPDATE SET ` + volumes + ` RETURNING month`).Query(collect)
	b.Queue(`WITH moved AS (DELETE FROM ` + f.t.pnlDeltas + ` RETURNING month, account, pnl),
			summed AS (SELECT m.month, m.account, a.authority, sum(m.pnl) AS pnl
				FROM moved m LEFT JOIN ` + f.t.accounts + ` a USING (account) GROUP BY 1, 2, 3),
			parked AS (INSERT INTO ` + f.t.pendingPnl + ` AS w (month, account, pnl)
				SELECT month, account, pnl FROM summed WHERE authority IS NULL ORDER BY month, account
				ON CONFLICT (month, account) DO UPDATE SET ` + pnl + `)
		INSERT INTO ` + f.t.walletMonths + ` AS w (month, authority, pnl)
		SELECT month, authority, sum(pnl) FROM summed WHERE authority IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
		ON CONFLICT (month, authority) DO UPDATE SET ` + pnl + ` RETURNING month`).Query(collect)
	// Pending rows whose wallet is known now (its new-user record may have come in this very fold's
	// lifetime: these statements see it).
	b.Queue(`WITH moved AS (DELETE FROM ` + f.t.pendingVolumes + ` p USING ` + f.t.accounts + ` a WHERE p.account = a.account
				RETURNING p.month, a.authority, p.maker_volume, p.taker_volume)
		INSERT INTO ` + f.t.walletMonths + ` AS w (month, authority, maker_volume, taker_volume)
		SELECT month, authority, sum(maker_volume), sum(taker_volume) FROM moved GROUP BY 1, 2 ORDER BY 1, 2
		ON CONFLICT (month, authority) DO UPDATE SET ` + volumes + ` RETURNING month`).Query(collect)
	b.Queue(`WITH moved AS (DELETE FROM ` + f.t.pendingPnl + ` p USING ` + f.t.accounts + ` a WHERE p.account = a.account
				RETURNING p.month, a.authority, p.pnl)
		INSERT INTO ` + f.t.walletMonths + ` AS w (month, authority, pnl)
		SELECT month, authority, sum(pnl) FROM moved GROUP BY 1, 2 ORDER BY 1, 2
		ON CONFLICT (month, authority) DO UPDATE SET ` + pnl + ` RETURNING month`).Query(collect)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("fold the deltas into the wallets: %w", err)
	}
	if len(months) > 0 {
		// The boards of the months moved are counted again, so that a page need not count its board.
		list := slices.Collect(maps.Keys(months))
		var sizes pgx.Batch
		sizes.Queue(`INSERT INTO `+f.t.boardSizes+` AS s (month, board, wallets)
			SELECT month, unnest(ARRAY['maker', 'taker', 'volume']),
				unnest(ARRAY[count(*) FILTER (WHERE maker_volume > 0), count(*) FILTER (WHERE taker_volume > 0),
					count(*) FILTER (WHERE volume > 0)])
			FROM `+f.t.walletMonths+` WHERE month = ANY($1) GROUP BY month
			ON CONFLICT (month, board) DO UPDATE SET wallets = excluded.wallets`, list)
		sizes.Queue(`INSERT INTO `+f.t.boardSizes+` AS s (month, board, wallets)
			SELECT month, 'pnl', count(*) FILTER (WHERE pnl <> 0) FROM `+f.t.walletMonths+` WHERE month = ANY($1) GROUP BY month
			ON CONFLICT (month, board) DO UPDATE SET wallets = excluded.wallets`, list)
		if err := tx.SendBatch(ctx, &sizes).Close(); err != nil {
			return fmt.Errorf("count the boards: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
