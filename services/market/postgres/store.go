// Package postgres stores the market schema: its migrations, the ingest sinks that write it and the
// store of its catalogue and candles.
package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/market"
)

// Store reads the market schema's catalogue and candles; the event series are the kit's to read.
type Store struct{ markets.Store }

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	return &Store{markets.NewStore(pool, schema)}
}

// Volumes are exact numeric sums in protocol precision; the cast to float8 before scaling spares a
// numeric division (arbitrary precision, in software), and the API serves them as JSON numbers anyway.
const bucketCols = `ts, fill_first, fill_high, fill_low, fill_close, oracle_first, oracle_high, oracle_low, oracle_close,
	quote_volume::float8 / 1e6::float8, base_volume::float8 / 1e9::float8, last_ts, last_id::text`

// Candles implements market.Store.
func (s *Store) Candles(ctx context.Context, symbol string, res market.Resolution, lo, hi int64) ([]market.Bucket, *market.Bucket, error) {
	return candles(ctx, s.Pool, s.Schema, symbol, res, lo, hi)
}

// batcher is what candle reads need of a pool or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// candles reads the bucket before lo and the buckets of [lo, hi] in one round trip, each query walking
// the primary key in order (a single UNION would sort).
func candles(ctx context.Context, db batcher, schema, symbol string, res market.Resolution, lo, hi int64) ([]market.Bucket, *market.Bucket, error) {
	var b pgx.Batch
	queueCandles(&b, schema, symbol, res, lo, hi)
	br := db.SendBatch(ctx, &b)
	defer br.Close()
	return readCandles(br)
}

// queueCandles adds the two queries of one candle read to b; readCandles reads their results.
func queueCandles(b *pgx.Batch, schema, symbol string, res market.Resolution, lo, hi int64) {
	c := pg.Table(schema, "candles")
	b.Queue(`SELECT `+bucketCols+` FROM `+c+`
		WHERE symbol = $1 AND resolution = $2 AND ts < $3 ORDER BY ts DESC LIMIT 1`, symbol, string(res), lo)
	b.Queue(`SELECT `+bucketCols+` FROM `+c+`
		WHERE symbol = $1 AND resolution = $2 AND ts >= $3 AND ts <= $4 ORDER BY ts`, symbol, string(res), lo, hi)
}

// hotCols are the columns of bucketCols an answer is made of: the hot candles read these alone.
const hotCols = `ts, fill_first, fill_high, fill_low, fill_close, oracle_first, oracle_high, oracle_low, oracle_close,
	quote_volume::float8 / 1e6::float8, base_volume::float8 / 1e9::float8`

// queueHotCandles is queueCandles of hotCols, read by readHotCandles.
func queueHotCandles(b *pgx.Batch, schema, symbol string, res market.Resolution, lo, hi int64) {
	c := pg.Table(schema, "candles")
	b.Queue(`SELECT `+hotCols+` FROM `+c+`
		WHERE symbol = $1 AND resolution = $2 AND ts < $3 ORDER BY ts DESC LIMIT 1`, symbol, string(res), lo)
	b.Queue(`SELECT `+hotCols+` FROM `+c+`
		WHERE symbol = $1 AND resolution = $2 AND ts >= $3 AND ts <= $4 ORDER BY ts`, symbol, string(res), lo, hi)
}

func readCandles(br pgx.BatchResults) ([]market.Bucket, *market.Bucket, error) {
	return readBuckets(br, scanBuckets)
}

func readHotCandles(br pgx.BatchResults) ([]market.Bucket, *market.Bucket, error) {
	return readBuckets(br, scanHotBuckets)
}

// readBuckets reads the results of a queued candle read with scan: the bucket before, then the range.
func readBuckets(br pgx.BatchResults, scan func(pgx.BatchResults) ([]market.Bucket, error)) ([]market.Bucket, *market.Bucket, error) {
	prev, err := scan(br)
	if err != nil {
		return nil, nil, err
	}
	stored, err := scan(br)
	if err != nil {
		return nil, nil, err
	}
	var before *market.Bucket
	if len(prev) == 1 {
		before = &prev[0]
	}
	return stored, before, nil
}

// scanBuckets reads the next query's result of br: the columns of candleCols.
func scanBuckets(br pgx.BatchResults) ([]market.Bucket, error) { return scanCandleRows(br, true) }

// scanHotBuckets is scanBuckets of hotCols, which leave out the last trade's time and fill id.
func scanHotBuckets(br pgx.BatchResults) ([]market.Bucket, error) { return scanCandleRows(br, false) }

// scanCandleRows reads the next query's result of br, with the last trade's columns when last.
func scanCandleRows(br pgx.BatchResults, last bool) ([]market.Bucket, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("query candles: %w", err)
	}
	defer rows.Close()
	var b market.Bucket
	into := []any{&b.Ts, &b.FillFirst, &b.FillHigh, &b.FillLow, &b.FillClose, &b.OracleFirst, &b.OracleHigh,
		&b.OracleLow, &b.OracleClose, &b.QuoteVolume, &b.BaseVolume}
	if last {
		into = append(into, &b.LastTradeTs, &b.LastFillRecordID)
	}
	out := make([]market.Bucket, 0, 64)
	for rows.Next() {
		b = market.Bucket{}
		if err := rows.Scan(into...); err != nil {
			return nil, fmt.Errorf("scan candle: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read candles: %w", err)
	}
	return out, nil
}

// LatestCandles returns the newest stored candle of every market at every resolution (of symbol
// alone when it is not empty), opening at the previous bucket's close: what the WebSocket edge's
// candle inits start from. Each is two index lookups, however long the history. seqs holds the number
// of the last edge.candles message of each of those channels that has one, read in the same snapshot
// as the candles: the candles are current to exactly those messages.
func (s *Store) LatestCandles(ctx context.Context, symbol string) (candles []market.EdgeCandle, seqs map[string]int64, err error) {
	res := make([]string, 0, 8)
	for _, r := range market.Resolutions() {
		res = append(res, string(r))
	}
	tx, err := s.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, fmt.Errorf("latest candles: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT m.symbol, r.res, `+bucketColsOf("c")+`, p.fill_close, p.oracle_close
		FROM `+s.Table("markets")+` m CROSS JOIN unnest($1::text[]) WITH ORDINALITY AS r(res, n)
		JOIN LATERAL (SELECT * FROM `+s.Table("candles")+`
			WHERE symbol = m.symbol AND resolution = r.res ORDER BY ts DESC LIMIT 1) c ON true
		LEFT JOIN LATERAL (SELECT fill_close, oracle_close FROM `+s.Table("candles")+`
			WHERE symbol = m.symbol AND resolution = r.res AND ts < c.ts ORDER BY ts DESC LIMIT 1) p ON true
		WHERE $2 = '' OR m.symbol = $2
		ORDER BY m.symbol, r.n`, res, symbol)
	if err != nil {
		return nil, nil, fmt.Errorf("query latest candles: %w", err)
	}
	defer rows.Close()
	out := []market.EdgeCandle{}
	for rows.Next() {
		var (
			c                market.EdgeCandle
			b                market.Bucket
			prevF, prevO     *float64
			symbol, resolved string
		)
		if err := rows.Scan(&symbol, &resolved, &b.Ts, &b.FillFirst, &b.FillHigh, &b.FillLow, &b.FillClose, &b.OracleFirst,
			&b.OracleHigh, &b.OracleLow, &b.OracleClose, &b.QuoteVolume, &b.BaseVolume, &b.LastTradeTs, &b.LastFillRecordID,
			&prevF, &prevO); err != nil {
			return nil, nil, fmt.Errorf("scan latest candle: %w", err)
		}
		var prev *market.Bucket
		if prevF != nil && prevO != nil {
			prev = &market.Bucket{FillClose: *prevF, OracleClose: *prevO}
		}
		c.Symbol, c.Resolution, c.Candle = symbol, resolved, market.CandleOf(b, prev)
		c.LastTradeTs, c.LastFillRecordID = &b.LastTradeTs, &b.LastFillRecordID
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read latest candles: %w", err)
	}
	prefix := "candle:"
	if symbol != "" {
		prefix = events.CandleChannel(symbol, "")
	}
	seqs, err = outbox.Seqs(ctx, tx, s.Schema, prefix)
	if err != nil {
		return nil, nil, err
	}
	return out, seqs, nil
}

// bucketColsOf is bucketCols qualified by a table alias.
func bucketColsOf(alias string) string {
	a := alias + "."
	return a + `ts, ` + a + `fill_first, ` + a + `fill_high, ` + a + `fill_low, ` + a + `fill_close, ` + a + `oracle_first, ` +
		a + `oracle_high, ` + a + `oracle_low, ` + a + `oracle_close, ` + a + `quote_volume::float8 / 1e6::float8, ` +
		a + `base_volume::float8 / 1e9::float8, ` + a + `last_ts, ` + a + `last_id::text`
}
