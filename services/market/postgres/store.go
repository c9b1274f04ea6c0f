// Package postgres stores the market schema: the ingest sinks write it, Store reads it.
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/market"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations are the schema's migrations, applied by pg.Migrate at start-up.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err) // the embed pattern above guarantees the folder
	}
	return sub
}

// Tables are the partitioned event tables, for partition upkeep.
func Tables(schema string) []string {
	names := []string{"fills", "funding_rates", "insurance_fund", "if_stakes", "swaps", "deposits"}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = schema + "." + n
	}
	return out
}

// series maps a market.Series to its table and the predicates selecting one symbol's rows. Swaps have
// two predicates (either side of the swap), read as a union of two keyset scans. everyMarket marks
// the series an export without a market may read, as the whole of its table: only those the export
// route serves so (trades are every fill, prediction markets' included).
type series struct {
	table       string
	wheres      []string // each uses $1 for the symbol
	everyMarket bool
}

func seriesOf(s market.Series) (series, error) {
	switch s {
	case market.Trades:
		return series{"fills", []string{"symbol = $1"}, true}, nil
	case market.Predictions:
		return series{"fills", []string{"symbol = $1"}, false}, nil
	case market.FundingRates:
		return series{"funding_rates", []string{"symbol = $1"}, true}, nil
	case market.InsuranceFund:
		return series{"insurance_fund", []string{"symbol = $1"}, false}, nil
	case market.InsuranceFundStake:
		return series{"if_stakes", []string{"symbol = $1"}, false}, nil
	case market.Swaps:
		// The second predicate excludes the first's rows so the branches can be joined with UNION ALL
		// (json has no equality operator, so UNION cannot deduplicate).
		return series{"swaps", []string{"in_symbol = $1", "out_symbol = $1 AND in_symbol <> $1"}, false}, nil
	case market.Deposits:
		return series{"deposits", []string{"symbol = $1 AND category = 'deposit'"}, false}, nil
	case market.Rewards:
		return series{"deposits", []string{"symbol = $1 AND category = 'reward'"}, false}, nil
	}
	return series{}, fmt.Errorf("unknown series %q", s)
}

// Store reads the market schema.
type Store struct {
	pool   *pgxpool.Pool
	schema string

	mu      sync.RWMutex
	markets map[string]events.Market // markets never disappear, so hits are cached for good

	sqlMu sync.RWMutex
	sql   map[rollingKey][]string // see rollingSQL
}

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	return &Store{pool: pool, schema: schema, markets: map[string]events.Market{}, sql: map[rollingKey][]string{}}
}

// Market implements market.Store.
func (s *Store) Market(ctx context.Context, symbol string) (events.Market, error) {
	s.mu.RLock()
	m, ok := s.markets[symbol]
	s.mu.RUnlock()
	if ok {
		return m, nil
	}
	err := s.pool.QueryRow(ctx,
		`SELECT symbol, market_index, market_type FROM `+s.schema+`.markets WHERE symbol = $1`, symbol).
		Scan(&m.Symbol, &m.Index, &m.Type)
	if errors.Is(err, pgx.ErrNoRows) {
		return events.Market{}, fault.Errorf(fault.NotFound, "market %s not found", symbol)
	}
	if err != nil {
		return events.Market{}, fmt.Errorf("look up market %s: %w", symbol, err)
	}
	s.mu.Lock()
	s.markets[symbol] = m
	s.mu.Unlock()
	return m, nil
}

const keyCols = "ts, tx_sig, tx_sig_index, record"

// Rolling implements market.Store. It reads the month partitions newest first and stops as soon as
// the page is full, which for a first page is almost always in the current month.
func (s *Store) Rolling(ctx context.Context, q market.RollingQuery) ([]market.Row, error) {
	until := q.Until
	if q.After != nil {
		until = min(until, q.After.Ts)
	}
	out := make([]market.Row, 0, q.Limit)
	if q.Since > until {
		return out, nil // a cursor older than the window
	}
	k := rollingKey{series: q.Series, after: q.After != nil}
	k.from, _ = pg.MonthRange(time.Unix(q.Since, 0))
	k.to, _ = pg.MonthRange(time.Unix(until, 0))
	stmts, err := s.rollingSQL(k)
	if err != nil {
		return nil, err
	}
	for _, sql := range stmts {
		args := []any{q.Symbol, q.Since, q.Limit - len(out)}
		if q.After != nil {
			args = append(args, q.After.Ts, q.After.TxSig, q.After.TxSigIndex)
		}
		rows, err := s.rows(ctx, out, sql, args...)
		if err != nil {
			return nil, err
		}
		out = rows
		if len(out) >= q.Limit {
			break
		}
	}
	return out, nil
}

// rollingKey identifies the statements of a rolling read: its series, the first seconds of the
// oldest and the newest month it spans, and whether it continues after a cursor.
type rollingKey struct {
	series   market.Series
	from, to int64
	after    bool
}

// maxRollingSQL bounds the statement cache. Keys change only with the months (a handful per series
// at any time), so it is never reached in practice; it keeps a bug from becoming a leak.
const maxRollingSQL = 1024

// rollingSQL returns the statements of a rolling read, one per month partition, newest first. They
// are built once per key and kept: formatting them (partition names, quoting, fmt) was a few percent
// of the trades route's CPU, for text that only changes when the month does.
func (s *Store) rollingSQL(k rollingKey) ([]string, error) {
	s.sqlMu.RLock()
	stmts, ok := s.sql[k]
	s.sqlMu.RUnlock()
	if ok {
		return stmts, nil
	}
	sr, err := seriesOf(k.series)
	if err != nil {
		return nil, err
	}
	after := ""
	if k.after {
		after = " AND (ts, tx_sig, tx_sig_index) < ($4, $5, $6)"
	}
	parts, err := pg.Partitions(s.schema+"."+sr.table, k.from, k.to)
	if err != nil {
		return nil, err
	}
	stmts = make([]string, len(parts))
	for p, part := range parts {
		branches := make([]string, len(sr.wheres))
		for i, w := range sr.wheres {
			branches[i] = fmt.Sprintf("(SELECT %s FROM %s WHERE %s AND ts >= $2%s ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT $3)",
				keyCols, part, w, after)
		}
		stmts[p] = branches[0]
		if len(branches) > 1 {
			stmts[p] = strings.Join(branches, " UNION ALL ") + " ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT $3"
		}
	}
	s.sqlMu.Lock()
	if len(s.sql) >= maxRollingSQL {
		clear(s.sql)
	}
	s.sql[k] = stmts
	s.sqlMu.Unlock()
	return stmts, nil
}

// Dated implements market.Store. A dated range lies within one month, so within one partition.
func (s *Store) Dated(ctx context.Context, q market.DatedQuery) ([]market.Row, int, error) {
	sr, err := seriesOf(q.Series)
	if err != nil {
		return nil, 0, err
	}
	parts, err := pg.Partitions(s.schema+"."+sr.table, q.Start, q.End-1)
	if err != nil {
		return nil, 0, err
	}
	if len(parts) != 1 {
		return nil, 0, fmt.Errorf("dated range [%d, %d) spans %d months", q.Start, q.End, len(parts))
	}
	branches := make([]string, len(sr.wheres))
	for i, w := range sr.wheres {
		branches[i] = fmt.Sprintf("SELECT %s FROM %s WHERE %s AND ts >= $2 AND ts < $3", keyCols, parts[0], w)
	}
	from := "(" + strings.Join(branches, " UNION ALL ") + ") u"
	var total int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+from, q.Symbol, q.Start, q.End).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s of %s: %w", q.Series, q.Symbol, err)
	}
	if total == 0 || q.Offset >= total {
		return []market.Row{}, total, nil
	}
	sql := fmt.Sprintf("SELECT %s FROM %s ORDER BY ts, tx_sig, tx_sig_index LIMIT $4 OFFSET $5", keyCols, from)
	rows, err := s.rows(ctx, make([]market.Row, 0, q.Limit), sql, q.Symbol, q.Start, q.End, q.Limit, q.Offset)
	return rows, total, err
}

// rows appends the rows sql returns to out, whose spare capacity is the number of rows the query
// may return at most (its LIMIT). The records are copied out of pgx's read buffer into memory lent
// for the request (see recordArena), so they are valid until its response has been written.
func (s *Store) rows(ctx context.Context, out []market.Row, sql string, args ...any) ([]market.Row, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("query rows: %w", err)
	}
	defer rows.Close()
	// One row and one list of destinations for every row: taking their addresses moves them to the
	// heap, once per read rather than once per row.
	var r market.Row
	rec := arenaRecord{arena: &recordArena{ctx: ctx}, dst: &r.Record}
	dest := []any{&r.Ts, &r.TxSig, &r.TxSigIndex, &rec}
	for rows.Next() {
		rec.more = cap(out) - len(out)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("scan row: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	return out, nil
}

// recordArena copies the records of one read into a few chunks of httpapi.Scratch memory, lent for
// the request and reused by later ones once its response is written. Every page a read route
// answers is such a copy (a page of fills is 20 records of ~1.2 KB), and allocating them one by one
// made the GC a fifth of the trades route's CPU. Outside a request Scratch allocates, so rows read
// elsewhere (tests, tools) own their memory as before.
type recordArena struct {
	ctx context.Context
	buf []byte
}

// add copies rec into the arena and returns the copy, capped so that appending to it cannot
// overwrite its neighbour. more is how many records, this one included, the read may still return:
// a new chunk is sized for them on the assumption that they resemble rec (a series' records do).
func (a *recordArena) add(rec []byte, more int) json.RawMessage {
	if rec == nil {
		return nil
	}
	if cap(a.buf)-len(a.buf) < len(rec) {
		n := len(rec) * max(more, 1)
		a.buf = httpapi.Scratch(a.ctx, n+n/8)
	}
	start := len(a.buf)
	a.buf = append(a.buf, rec...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// arenaRecord scans a json column into *dst through an arena. It is a pgtype.BytesScanner: pgx hands
// it the column's bytes in its read buffer, valid only until the next row, and they are copied once.
type arenaRecord struct {
	arena *recordArena
	more  int
	dst   *json.RawMessage
}

// ScanBytes implements pgtype.BytesScanner.
func (a *arenaRecord) ScanBytes(src []byte) error {
	*a.dst = a.arena.add(src, a.more)
	return nil
}

// Volumes are exact numeric sums in protocol precision; the cast to float8 before scaling is a
// fraction of the cost of numeric division, and the API serves them as JSON numbers anyway.
const bucketCols = `ts, fill_first, fill_high, fill_low, fill_close, oracle_first, oracle_high, oracle_low, oracle_close,
	quote_volume::float8 / 1e6::float8, base_volume::float8 / 1e9::float8, last_ts, last_id::text`

// Candles implements market.Store.
func (s *Store) Candles(ctx context.Context, symbol string, res market.Resolution, lo, hi int64) ([]market.Bucket, *market.Bucket, error) {
	return candles(ctx, s.pool, s.schema, symbol, res, lo, hi)
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
	b.Queue(`SELECT `+bucketCols+` FROM `+schema+`.candles
		WHERE symbol = $1 AND resolution = $2 AND ts < $3 ORDER BY ts DESC LIMIT 1`, symbol, string(res), lo)
	b.Queue(`SELECT `+bucketCols+` FROM `+schema+`.candles
		WHERE symbol = $1 AND resolution = $2 AND ts >= $3 AND ts <= $4 ORDER BY ts`, symbol, string(res), lo, hi)
}

func readCandles(br pgx.BatchResults) ([]market.Bucket, *market.Bucket, error) {
	prev, err := scanBuckets(br)
	if err != nil {
		return nil, nil, err
	}
	stored, err := scanBuckets(br)
	if err != nil {
		return nil, nil, err
	}
	var before *market.Bucket
	if len(prev) == 1 {
		before = &prev[0]
	}
	return stored, before, nil
}

// scanBuckets reads the next query's result of br.
func scanBuckets(br pgx.BatchResults) ([]market.Bucket, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("query candles: %w", err)
	}
	defer rows.Close()
	out := make([]market.Bucket, 0, 64)
	for rows.Next() {
		var b market.Bucket
		if err := rows.Scan(&b.Ts, &b.FillFirst, &b.FillHigh, &b.FillLow, &b.FillClose, &b.OracleFirst, &b.OracleHigh,
			&b.OracleLow, &b.OracleClose, &b.QuoteVolume, &b.BaseVolume, &b.LastTradeTs, &b.LastFillRecordID); err != nil {
			return nil, fmt.Errorf("scan candle: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read candles: %w", err)
	}
	return out, nil
}
