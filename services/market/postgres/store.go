// Package postgres stores the market schema: the ingest sinks write it, Store reads it.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/httpapi"
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
// two predicates (either side of the swap), read as a union of two keyset scans.
type series struct {
	table  string
	wheres []string // each uses $1 for the symbol
}

func seriesOf(s market.Series) (series, error) {
	switch s {
	case market.Trades, market.Predictions:
		return series{"fills", []string{"symbol = $1"}}, nil
	case market.FundingRates:
		return series{"funding_rates", []string{"symbol = $1"}}, nil
	case market.InsuranceFund:
		return series{"insurance_fund", []string{"symbol = $1"}}, nil
	case market.InsuranceFundStake:
		return series{"if_stakes", []string{"symbol = $1"}}, nil
	case market.Swaps:
		// The second predicate excludes the first's rows so the branches can be joined with UNION ALL
		// (json has no equality operator, so UNION cannot deduplicate).
		return series{"swaps", []string{"in_symbol = $1", "out_symbol = $1 AND in_symbol <> $1"}}, nil
	case market.Deposits:
		return series{"deposits", []string{"symbol = $1 AND category = 'deposit'"}}, nil
	case market.Rewards:
		return series{"deposits", []string{"symbol = $1 AND category = 'reward'"}}, nil
	}
	return series{}, fmt.Errorf("unknown series %q", s)
}

// Store reads the market schema.
type Store struct {
	pool   *pgxpool.Pool
	schema string

	mu      sync.RWMutex
	markets map[string]market.Market // markets never disappear, so hits are cached for good
}

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	return &Store{pool: pool, schema: schema, markets: map[string]market.Market{}}
}

// Market implements market.Store.
func (s *Store) Market(ctx context.Context, symbol string) (market.Market, error) {
	s.mu.RLock()
	m, ok := s.markets[symbol]
	s.mu.RUnlock()
	if ok {
		return m, nil
	}
	err := s.pool.QueryRow(ctx,
		`SELECT symbol, market_index, market_type, market_filter FROM `+s.schema+`.markets WHERE symbol = $1`, symbol).
		Scan(&m.Symbol, &m.Index, &m.Type, &m.Filter)
	if errors.Is(err, pgx.ErrNoRows) {
		return market.Market{}, httpapi.Errorf(httpapi.NotFound, "market %s not found", symbol)
	}
	if err != nil {
		return market.Market{}, fmt.Errorf("look up market %s: %w", symbol, err)
	}
	s.mu.Lock()
	s.markets[symbol] = m
	s.mu.Unlock()
	return m, nil
}

const keyCols = "ts, tx_sig, tx_sig_index, record"

// Rolling implements market.Store.
func (s *Store) Rolling(ctx context.Context, q market.RollingQuery) ([]market.Row, error) {
	sr, err := seriesOf(q.Series)
	if err != nil {
		return nil, err
	}
	args := []any{q.Symbol, q.Since, q.Limit}
	after := ""
	if q.After != nil {
		after = " AND (ts, tx_sig, tx_sig_index) < ($4, $5, $6)"
		args = append(args, q.After.Ts, q.After.TxSig, q.After.TxSigIndex)
	}
	parts := make([]string, len(sr.wheres))
	for i, w := range sr.wheres {
		parts[i] = fmt.Sprintf("(SELECT %s FROM %s.%s WHERE %s AND ts >= $2%s ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT $3)",
			keyCols, s.schema, sr.table, w, after)
	}
	sql := parts[0]
	if len(parts) > 1 {
		sql = strings.Join(parts, " UNION ALL ") + " ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT $3"
	}
	return s.rows(ctx, sql, args...)
}

// Dated implements market.Store.
func (s *Store) Dated(ctx context.Context, q market.DatedQuery) ([]market.Row, int, error) {
	sr, err := seriesOf(q.Series)
	if err != nil {
		return nil, 0, err
	}
	var from, count string
	if len(sr.wheres) == 1 {
		from = fmt.Sprintf("%s.%s WHERE %s AND ts >= $2 AND ts < $3", s.schema, sr.table, sr.wheres[0])
	} else {
		parts := make([]string, len(sr.wheres))
		for i, w := range sr.wheres {
			parts[i] = fmt.Sprintf("SELECT %s FROM %s.%s WHERE %s AND ts >= $2 AND ts < $3", keyCols, s.schema, sr.table, w)
		}
		from = "(" + strings.Join(parts, " UNION ALL ") + ") u"
	}
	count = "SELECT count(*) FROM " + from
	var total int
	if err := s.pool.QueryRow(ctx, count, q.Symbol, q.Start, q.End).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s of %s: %w", q.Series, q.Symbol, err)
	}
	if total == 0 || q.Offset >= total {
		return []market.Row{}, total, nil
	}
	sql := fmt.Sprintf("SELECT %s FROM %s ORDER BY ts, tx_sig, tx_sig_index LIMIT $4 OFFSET $5", keyCols, from)
	rows, err := s.rows(ctx, sql, q.Symbol, q.Start, q.End, q.Limit, q.Offset)
	return rows, total, err
}

func (s *Store) rows(ctx context.Context, sql string, args ...any) ([]market.Row, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("query rows: %w", err)
	}
	defer rows.Close()
	out := make([]market.Row, 0, 20)
	for rows.Next() {
		var r market.Row
		var rec []byte
		if err := rows.Scan(&r.Ts, &r.TxSig, &r.TxSigIndex, &rec); err != nil {
			return nil, fmt.Errorf("scan row: %w", err)
		}
		r.Record = rec
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	return out, nil
}

const bucketCols = `ts, fill_first, fill_high, fill_low, fill_close, oracle_first, oracle_high, oracle_low, oracle_close,
	(quote_volume / 1e6)::float8, (base_volume / 1e9)::float8, last_ts, last_id::text`

// Candles implements market.Store.
func (s *Store) Candles(ctx context.Context, symbol string, res market.Resolution, lo, hi int64) ([]market.Bucket, *market.Bucket, error) {
	return candles(ctx, s.pool, s.schema, symbol, res, lo, hi)
}

// querier is what reads need of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func candles(ctx context.Context, db querier, schema, symbol string, res market.Resolution, lo, hi int64) ([]market.Bucket, *market.Bucket, error) {
	sql := `SELECT * FROM (
	          (SELECT ` + bucketCols + ` FROM ` + schema + `.candles
	             WHERE symbol = $1 AND resolution = $2 AND ts < $3 ORDER BY ts DESC LIMIT 1)
	          UNION ALL
	          (SELECT ` + bucketCols + ` FROM ` + schema + `.candles
	             WHERE symbol = $1 AND resolution = $2 AND ts >= $3 AND ts <= $4)
	        ) c ORDER BY ts`
	rows, err := db.Query(ctx, sql, symbol, string(res), lo, hi)
	if err != nil {
		return nil, nil, fmt.Errorf("query candles: %w", err)
	}
	defer rows.Close()
	var before *market.Bucket
	stored := make([]market.Bucket, 0, 64)
	for rows.Next() {
		var b market.Bucket
		if err := rows.Scan(&b.Ts, &b.FillFirst, &b.FillHigh, &b.FillLow, &b.FillClose, &b.OracleFirst, &b.OracleHigh,
			&b.OracleLow, &b.OracleClose, &b.QuoteVolume, &b.BaseVolume, &b.LastTradeTs, &b.LastFillRecordID); err != nil {
			return nil, nil, fmt.Errorf("scan candle: %w", err)
		}
		if b.Ts < lo {
			before = &b
			continue
		}
		stored = append(stored, b)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read candles: %w", err)
	}
	return stored, before, nil
}
