// Package postgres stores the user schema: its migrations, the ingest sinks that write it and the
// store of what the series do not read (the market catalogue, orders, their actions, snapshots).
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/snapshots"
	"github.com/tidemark/tidemark/services/user"
)

// Store reads the user schema: it is the user.Store.
type Store struct{ markets.Store }

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	return &Store{markets.NewStore(pool, schema)}
}

// hasFill is the SQL of "order o has a fill": one of the account's fills names it, or its record says
// something was filled.
const hasFill = `(EXISTS (SELECT 1 FROM %[1]s f WHERE f.account = o.account AND f.order_id = o.order_id AND f.ts >= o.placed_ts)
	OR (o.from_record AND coalesce(o.record->>'baseAssetAmountFilled', '0') NOT IN ('0', '')))`

// Orders returns a page of orders, newest placement first.
func (s *Store) Orders(ctx context.Context, q user.OrdersQuery) ([]user.StoredOrder, error) {
	args := []any{q.Account, q.From, q.To, q.Limit}
	sql := `SELECT order_id, placed_ts, from_record, record FROM ` + s.Table("orders") + ` o WHERE account = $1 AND placed_ts >= $2 AND placed_ts <= $3`
	if q.Symbol != "" {
		args = append(args, q.Symbol)
		sql += fmt.Sprintf(" AND symbol = $%d", len(args))
	} else {
		args = append(args, q.Filter)
		sql += fmt.Sprintf(" AND market_filter = $%d", len(args))
	}
	if q.After != nil {
		args = append(args, q.After.Ts, q.After.OrderID)
		sql += fmt.Sprintf(" AND (placed_ts, order_id) < ($%d, $%d)", len(args)-1, len(args))
	}
	if q.HasFill != nil {
		cond := fmt.Sprintf(hasFill, s.Table("fills"))
		if !*q.HasFill {
			cond = "NOT " + cond
		}
		sql += " AND " + cond
	}
	sql += " ORDER BY placed_ts DESC, order_id DESC LIMIT $4"
	rows, err := s.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	return s.scanOrders(rows, q.Account)
}

// Order returns one order of account; fault.NotFound when the account has none of that id.
func (s *Store) Order(ctx context.Context, account, orderID string) (user.StoredOrder, error) {
	rows, err := s.Pool.Query(ctx, `SELECT order_id, placed_ts, from_record, record FROM `+s.Table("orders")+
		` WHERE account = $1 AND order_id = $2`, account, orderID)
	if err != nil {
		return user.StoredOrder{}, fmt.Errorf("read order: %w", err)
	}
	out, err := s.scanOrders(rows, account)
	if err != nil {
		return user.StoredOrder{}, err
	}
	if len(out) == 0 {
		return user.StoredOrder{}, fault.Errorf(fault.NotFound, "account %s has no order %s", account, orderID)
	}
	return out[0], nil
}

func (s *Store) scanOrders(rows pgx.Rows, account string) ([]user.StoredOrder, error) {
	var out []user.StoredOrder
	var o user.StoredOrder
	var fromRecord bool
	var record []byte
	_, err := pgx.ForEachRow(rows, []any{&o.OrderID, &o.PlacedTs, &fromRecord, &record}, func() error {
		o.Account = account
		o.Record, o.Place = nil, nil
		if fromRecord {
			o.Record = new(events.Order)
			if err := json.Unmarshal(record, o.Record); err != nil {
				return fmt.Errorf("stored order %s: %w", o.OrderID, err)
			}
		} else {
			o.Place = new(events.OrderAction)
			if err := json.Unmarshal(record, o.Place); err != nil {
				return fmt.Errorf("stored place action of %s: %w", o.OrderID, err)
			}
		}
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	return out, nil
}

// OrderEvents returns the actions and fills of orders (all the account's), by order id.
func (s *Store) OrderEvents(ctx context.Context, account string, orders []user.StoredOrder) (map[string][]user.OrderEvent, error) {
	out := map[string][]user.OrderEvent{}
	if len(orders) == 0 {
		return out, nil
	}
	ids := make([]string, len(orders))
	since := orders[0].PlacedTs
	for i, o := range orders {
		ids[i] = o.OrderID
		since = min(since, o.PlacedTs)
	}
	var b pgx.Batch
	b.Queue(`SELECT order_id, ts, slot, tx_sig, tx_sig_index, action, explanation FROM `+s.Table("order_actions")+
		` WHERE account = $1 AND order_id = ANY($2) AND ts >= $3`, account, ids, since).Query(func(rows pgx.Rows) error {
		var id string
		var e user.OrderEvent
		_, err := pgx.ForEachRow(rows, []any{&id, &e.Ts, &e.Slot, &e.TxSig, &e.Index, &e.Action, &e.Explanation}, func() error {
			out[id] = append(out[id], e)
			return nil
		})
		return err
	})
	b.Queue(`SELECT order_id, record FROM `+s.Table("fills")+` WHERE account = $1 AND order_id = ANY($2) AND ts >= $3`,
		account, ids, since).Query(func(rows pgx.Rows) error {
		var id string
		var record []byte
		_, err := pgx.ForEachRow(rows, []any{&id, &record}, func() error {
			f := new(events.Fill)
			if err := json.Unmarshal(record, f); err != nil {
				return fmt.Errorf("stored fill of order %s: %w", id, err)
			}
			for _, side := range user.Sides(f) {
				if side.Account == account && side.OrderID == id {
					out[id] = append(out[id], user.OrderEvent{
						Pos:    user.Pos{Ts: f.Ts, Slot: f.Slot, TxSig: f.TxSig, Index: f.TxSigIndex},
						Action: events.ActionFill, Explanation: f.ActionExplanation,
						FilledBase: side.FilledBase, FilledQuote: side.FilledQuote, Fee: side.Fee,
					})
				}
			}
			return nil
		})
		return err
	})
	if err := s.Pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("read order events: %w", err)
	}
	return out, nil
}

// OrderActions returns up to limit of the actions on account's order orderID (fills included), newest
// first, strictly before after when set.
func (s *Store) OrderActions(ctx context.Context, account, orderID string, after *user.ActionCursor, limit int) ([]user.Action, error) {
	// The order's placement bounds the partitions its actions can be in.
	var since int64
	err := s.Pool.QueryRow(ctx, `SELECT placed_ts FROM `+s.Table("orders")+` WHERE account = $1 AND order_id = $2`, account, orderID).Scan(&since)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read order: %w", err)
	}
	args := []any{account, orderID, since, limit}
	cond := ""
	if after != nil {
		args = append(args, after.Ts, after.TxSig, after.TxSigIndex)
		cond = " AND (ts, tx_sig, tx_sig_index) < ($5, $6, $7)"
	}
	branch := func(table string) string {
		return `(SELECT ts, tx_sig, tx_sig_index, record FROM ` + s.Table(table) + ` WHERE account = $1 AND order_id = $2 AND ts >= $3` +
			cond + ` ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT $4)`
	}
	rows, err := s.Pool.Query(ctx, branch("fills")+" UNION ALL "+branch("order_actions")+
		" ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT $4", args...)
	if err != nil {
		return nil, fmt.Errorf("read order actions: %w", err)
	}
	out := make([]user.Action, 0, limit)
	var a user.Action
	_, err = pgx.ForEachRow(rows, []any{&a.Ts, &a.TxSig, &a.TxSigIndex, &a.Record}, func() error {
		a.Record = append(json.RawMessage(nil), a.Record...)
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read order actions: %w", err)
	}
	return out, nil
}

// Snapshots returns account's snapshot series of kind over points: the latest snapshot of each
// point's bucket, nil where there is none.
func (s *Store) Snapshots(ctx context.Context, account, kind string, p snapshots.Points) ([]json.RawMessage, error) {
	rows, err := s.Pool.Query(ctx, `SELECT DISTINCT ON (i) (ts - $3) / $4 AS i, record FROM `+s.Table("snapshots")+`
		WHERE account = $1 AND kind = $2 AND ts >= $3 AND ts < $5 ORDER BY i, ts DESC`, account, kind, p.Start, p.Width, p.End())
	if err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}
	out := make([]json.RawMessage, p.N)
	var i int64
	var record []byte
	_, err = pgx.ForEachRow(rows, []any{&i, &record}, func() error {
		if i >= 0 && i < int64(p.N) {
			out[i] = append(json.RawMessage(nil), record...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}
	return out, nil
}

// LatestSnapshot returns account's newest snapshot of kind before until, nil when there is none.
func (s *Store) LatestSnapshot(ctx context.Context, account, kind string, until int64) (json.RawMessage, error) {
	var record []byte
	err := s.Pool.QueryRow(ctx, `SELECT record FROM `+s.Table("snapshots")+
		` WHERE account = $1 AND kind = $2 AND ts < $3 ORDER BY ts DESC LIMIT 1`, account, kind, until).Scan(&record)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the latest snapshot: %w", err)
	}
	return record, nil
}

var _ user.Store = (*Store)(nil)
