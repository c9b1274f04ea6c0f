package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/services/market"
)

// Exporter streams export ranges out of the market schema. Each export runs on a connection of its
// own, opened with the pool's settings but outside it: an export holds its connection for as long as
// the client reads (minutes for a year of fills), and pool connections are for the API's short
// queries. At most concurrency exports run at once; further ones wait for a slot.
type Exporter struct {
	conn   *pgx.ConnConfig
	schema string
	slots  chan struct{}
}

// NewExporter reads schema with the connection settings of pool, at most concurrency exports at a
// time (at least one).
func NewExporter(pool *pgxpool.Pool, schema string, concurrency int) *Exporter {
	cfg := pool.Config().ConnConfig
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	// An export connection runs one statement, so:
	//   - plan_cache_mode=force_custom_plan: plan it for the actual range, pruning partitions while
	//     planning (the pool's generic plans pay off only for statements executed many times).
	//   - enable_sort=off: for a market whose fills are a good share of the table the planner
	//     prefers scanning whole partitions and sorting them, which is cheaper on paper but holds the
	//     first row back until everything is sorted, spilling gigabytes to disk for a year of fills.
	//     The indexes give the order; the sort is the plan of last resort, never the cheaper one.
	//   - QueryExecModeExec: no separate round trip to prepare a statement used once.
	cfg.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	cfg.RuntimeParams["enable_sort"] = "off"
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	return &Exporter{conn: cfg, schema: schema, slots: make(chan struct{}, max(concurrency, 1))}
}

// connect opens an export connection.
func (e *Exporter) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, e.conn)
	if err != nil {
		return nil, fmt.Errorf("connect for export: %w", err)
	}
	return conn, nil
}

// Export implements market.Exporter.
//
// The records come from one SELECT on the partitioned parent, in one implicit transaction (one
// snapshot). Monthly partitions are ranges of ts, so for ORDER BY (ts, tx_sig, tx_sig_index) the
// planner appends the partitions in order, each read in key order through its primary key (or its
// (symbol, ts, ...) index for one market), and prunes the months outside [From, To]: no sort, and
// the first row leaves at once (see NewExporter for the settings that keep it so). pgx reads the
// result as the server sends it, one message at a time, and TCP flow control keeps the server from
// running ahead of the client, so memory stays flat without a cursor's round trips.
func (e *Exporter) Export(ctx context.Context, q market.ExportQuery, emit func(record []byte) error) error {
	sql, args, err := e.query(q)
	if err != nil {
		return err
	}
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for an export slot: %w", ctx.Err())
	}
	defer func() { <-e.slots }()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// Text results: a json value's text is its stored bytes, handed to emit as they arrive.
	rows, err := conn.Query(ctx, sql, append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)...)
	if err != nil {
		return fmt.Errorf("export %s: %w", q.Series, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := emit(rows.RawValues()[0]); err != nil {
			// Closing the rows would otherwise read every remaining row; cancelling drops the
			// connection, which is this export's alone.
			cancel()
			return fmt.Errorf("export %s: %w", q.Series, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export %s: %w", q.Series, err)
	}
	return nil
}

// query is the statement of q and its arguments.
func (e *Exporter) query(q market.ExportQuery) (string, []any, error) {
	sr, err := seriesOf(q.Series)
	if err != nil {
		return "", nil, err
	}
	if q.From > q.To {
		return "", nil, errors.New("export range ends before it starts")
	}
	table := e.schema + "." + sr.table
	const order = " ORDER BY ts, tx_sig, tx_sig_index"
	if q.Symbol == "" {
		if !sr.everyMarket {
			return "", nil, fmt.Errorf("%s are exported one market at a time", q.Series)
		}
		return "SELECT record FROM " + table + " WHERE ts >= $1 AND ts <= $2" + order, []any{q.From, q.To}, nil
	}
	if len(sr.wheres) != 1 {
		// Swaps (a market on either side) are not an export type; their union would not stream in order.
		return "", nil, fmt.Errorf("%s are not exported", q.Series)
	}
	return "SELECT record FROM " + table + " WHERE " + sr.wheres[0] + " AND ts >= $2 AND ts <= $3" + order,
		[]any{q.Symbol, q.From, q.To}, nil
}
