// Package postgres stores the authority schema: its migrations, the ingest sinks that write it and the
// store of what its series do not read (accounts, builder accounts, snapshots, the export lock).
package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/snapshots"
	"github.com/tidemark/tidemark/services/authority"
)

// Store reads the authority schema: it is the authority.Store, and the catalogue of the spot markets
// its stakes named.
type Store struct{ markets.Store }

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	return &Store{markets.NewStore(pool, schema)}
}

// Accounts implements authority.Store.
func (s *Store) Accounts(ctx context.Context, auth string) (authority.AccountList, error) {
	out := authority.AccountList{Accounts: []authority.Account{}}
	var b pgx.Batch
	b.Queue(`SELECT account, sub_account_id, name FROM `+s.Table("accounts")+`
		WHERE authority = $1 AND sub_account_id IS NOT NULL ORDER BY sub_account_id, account`, auth).Query(func(rows pgx.Rows) error {
		var a authority.Account
		_, err := pgx.ForEachRow(rows, []any{&a.AccountID, &a.SubAccountID, &a.Name}, func() error {
			out.Accounts = append(out.Accounts, a)
			return nil
		})
		return err
	})
	b.Queue(`SELECT kind, record FROM `+s.Table("builder_accounts")+` WHERE authority = $1`, auth).Query(func(rows pgx.Rows) error {
		var kind string
		var record []byte
		_, err := pgx.ForEachRow(rows, []any{&kind, &record}, func() error {
			switch kind {
			case "builder":
				out.BuilderRevenueShareAccount = new(events.BuilderAccount)
				return json.Unmarshal(record, out.BuilderRevenueShareAccount)
			case "escrow":
				out.RevenueShareEscrow = new(events.RevenueShareEscrow)
				return json.Unmarshal(record, out.RevenueShareEscrow)
			}
			return nil
		})
		return err
	})
	if err := s.Pool.SendBatch(ctx, &b).Close(); err != nil {
		return authority.AccountList{}, fmt.Errorf("read the accounts of %s: %w", auth, err)
	}
	return out, nil
}

// Foreign implements authority.Store.
func (s *Store) Foreign(ctx context.Context, auth string, keys []string) ([]string, error) {
	rows, err := s.Pool.Query(ctx, `SELECT account FROM `+s.Table("accounts")+`
		WHERE authority = $1 AND account = ANY($2) AND sub_account_id IS NOT NULL`, auth, keys)
	if err != nil {
		return nil, fmt.Errorf("read the accounts of %s: %w", auth, err)
	}
	owned, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the accounts of %s: %w", auth, err)
	}
	var out []string
	for _, k := range keys {
		if !slices.Contains(owned, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// pointsSQL selects, for the wallet $1, the series of the kinds $2 over the points from $3 (width $4,
// up to $5), as (kind, account, point, record). Hourly series are the latest snapshot of each hour,
// read as one range of ts per kind for all the wallet's accounts (the last day is in one or two
// partitions). Daily series read the kept latest of each day, a range of the primary key per account
// and kind (accounts selects the wallet's accounts): the limit (no day has two rows) keeps each an
// ordered range whatever the planner estimates of the table.
func (s *Store) pointsSQL(hourly bool, accounts string) string {
	if hourly {
		return `SELECT DISTINCT ON (kind, account, i) kind, account, (ts - $3) / $4 AS i, record FROM ` + s.Table("snapshots") + `
			WHERE authority = $1 AND kind = ANY($2) AND ts >= $3 AND ts < $5 ORDER BY kind, account, i, ts DESC`
	}
	return `SELECT k.kind, a.account, (p.day - $3) / $4, p.record FROM (` + accounts + `) a CROSS JOIN unnest($2::text[]) AS k(kind)
		CROSS JOIN LATERAL (SELECT day, record FROM ` + s.Table("snapshot_days") + `
		  WHERE authority = $1 AND kind = k.kind AND account = a.account AND day >= $3 AND day < $5 ORDER BY day LIMIT ($5 - $3) / $4) p`
}

// Snapshots implements authority.Store. Everything is read in one round trip.
func (s *Store) Snapshots(ctx context.Context, auth string, kinds []string, p snapshots.Points) (authority.Snapshots, error) {
	out := authority.Snapshots{ByKind: map[string][]authority.Series{}, Latest: map[string]json.RawMessage{}}
	series := map[string]map[string][]json.RawMessage{} // kind -> account -> points
	for _, k := range kinds {
		series[k] = map[string][]json.RawMessage{}
	}
	accounts := `SELECT account FROM ` + s.Table("accounts") + ` WHERE authority = $1`
	var b pgx.Batch
	b.Queue(accounts+` ORDER BY sub_account_id NULLS LAST, account`, auth).Query(func(rows pgx.Rows) error {
		var err error
		out.Accounts, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	b.Queue(s.pointsSQL(p.Hourly(), accounts), auth, kinds, p.Start, p.Width, p.End()).Query(func(rows pgx.Rows) error {
		var kind, account string
		var i int64
		var record []byte
		_, err := pgx.ForEachRow(rows, []any{&kind, &account, &i, &record}, func() error {
			pts := series[kind][account]
			if pts == nil {
				pts = make([]json.RawMessage, p.N)
				series[kind][account] = pts
			}
			if i >= 0 && i < int64(p.N) {
				pts[i] = append(json.RawMessage(nil), record...)
			}
			return nil
		})
		return err
	})
	if slices.Contains(kinds, authority.SnapshotTrading) {
		// The metrics: each account's newest trading snapshot before the series ends, found as the
		// newest kept day before it.
		b.Queue(`SELECT a.account, l.record FROM (`+accounts+`) a CROSS JOIN LATERAL (SELECT record FROM `+s.Table("snapshot_days")+`
			WHERE authority = $1 AND kind = 'trading' AND account = a.account AND day < $2 AND ts < $2 ORDER BY day DESC LIMIT 1) l`,
			auth, p.End()).Query(func(rows pgx.Rows) error {
			var account string
			var record []byte
			_, err := pgx.ForEachRow(rows, []any{&account, &record}, func() error {
				out.Latest[account] = append(json.RawMessage(nil), record...)
				return nil
			})
			return err
		})
	}
	if err := s.Pool.SendBatch(ctx, &b).Close(); err != nil {
		return authority.Snapshots{}, fmt.Errorf("read the snapshots of %s: %w", auth, err)
	}
	for _, k := range kinds {
		list := make([]authority.Series, len(out.Accounts))
		for i, a := range out.Accounts {
			pts := series[k][a]
			if pts == nil {
				pts = make([]json.RawMessage, p.N)
			}
			list[i] = authority.Series{AccountID: a, Snapshots: pts}
		}
		out.ByKind[k] = list
	}
	return out, nil
}

// Referrals implements authority.Store.
func (s *Store) Referrals(ctx context.Context, auth string, p snapshots.Points) ([]json.RawMessage, error) {
	rows, err := s.Pool.Query(ctx, s.pointsSQL(p.Hourly(), `SELECT ''::text AS account`), auth,
		[]string{authority.SnapshotReferral}, p.Start, p.Width, p.End())
	if err != nil {
		return nil, fmt.Errorf("read the referral snapshots of %s: %w", auth, err)
	}
	out := make([]json.RawMessage, p.N)
	var kind, account string
	var i int64
	var record []byte
	_, err = pgx.ForEachRow(rows, []any{&kind, &account, &i, &record}, func() error {
		if i >= 0 && i < int64(p.N) {
			out[i] = append(json.RawMessage(nil), record...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the referral snapshots of %s: %w", auth, err)
	}
	return out, nil
}

// Exclusive implements authority.Store with a transaction-scoped advisory lock on the wallet: it is
// released when f returns, or when the connection dies with the process holding it.
func (s *Store) Exclusive(ctx context.Context, auth string, f func(ctx context.Context) error) error {
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("lock the exports of %s: %w", auth, err)
	}
	// The transaction writes nothing: ending it, however, releases the lock.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, s.Schema+".exports", auth); err != nil {
		return fmt.Errorf("lock the exports of %s: %w", auth, err)
	}
	return f(ctx)
}

var _ authority.Store = (*Store)(nil)
