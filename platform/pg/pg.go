// Package pg holds the Postgres plumbing every service shares: opening a pool, running a
// service's embedded migrations into its own schema, naming the schema's tables (DB, Table), and
// keeping partitions (monthly or daily) ahead and old daily ones dropped.
package pg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/bufconn"
)

// Execer is the part of a pool, connection or transaction that DDL helpers need.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Querier is the part of a pool, connection or transaction that reads need.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// TxBeginner is the part of a pool or connection that opens transactions.
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Config is the connection pool of a deployable.
type Config struct {
	// URL is the PostgreSQL connection URL (TIDEMARK_PG_URL).
	URL string
	// PoolSize is the most connections the pool opens (TIDEMARK_PG_POOL_SIZE, default 20); the
	// ingest writers hold one each through their batches, the rest serve reads. Exports run on
	// connections of their own, outside the pool.
	PoolSize int
}

// RegisterEnv reads TIDEMARK_PG_URL and TIDEMARK_PG_POOL_SIZE.
func (c *Config) RegisterEnv(e *app.Env) {
	c.URL = e.String("PG_URL", "")
	c.PoolSize = e.Int("PG_POOL_SIZE", 20)
}

// Validate reports a missing URL and a pool size out of range, naming their variables.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New(app.EnvPrefix+"PG_URL is required"))
	} else if _, err := pgxpool.ParseConfig(c.URL); err != nil {
		errs = append(errs, fmt.Errorf("%sPG_URL does not parse: %w", app.EnvPrefix, err))
	}
	if c.PoolSize < 2 || c.PoolSize > 1000 {
		errs = append(errs, fmt.Errorf("%sPG_POOL_SIZE must be 2..1000, got %d", app.EnvPrefix, c.PoolSize))
	}
	return errors.Join(errs...)
}

// Open creates a pool for url with at most maxConns connections (0 keeps pgxpool's default)
// and pings it, so a wrong URL or an unreachable server fails here rather than on first use.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pg: parse url: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	// Settings for an API's workload, unless the URL sets them: every statement is a prepared,
	// fixed-shape keyset or batch statement over monthly partitions.
	//   - jit=off: a generic plan's estimate (LIMIT is a parameter) passes jit_above_cost, and
	//     these short queries would pay for compiling code that runs once.
	//   - plan_cache_mode=force_generic_plan: custom plans re-plan every execution over dozens of
	//     partitions; generic plans are planned once and prune partitions at executor start-up.
	for k, v := range map[string]string{"jit": "off", "plan_cache_mode": "force_generic_plan"} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	// Pages of rows arrive through pgx's 8 KB read buffer, a read system call each; a buffer of
	// our own below it takes a 25 KB page of fills in one or two.
	cfg.ConnConfig.DialFunc = bufconn.Dialer(cfg.ConnConfig.DialFunc)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pg: create pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pg: ping %s@%s:%d/%s: %w",
			cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// MonthRange returns the UTC calendar month containing t as [start, end) in unix seconds,
// the bounds used by every monthly partition.
func MonthRange(t time.Time) (start, end int64) {
	t = t.UTC()
	first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return first.Unix(), first.AddDate(0, 1, 0).Unix()
}

// DayRange returns the UTC calendar day containing t as [start, end) in unix seconds, the bounds
// used by every daily partition.
func DayRange(t time.Time) (start, end int64) {
	t = t.UTC()
	first := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return first.Unix(), first.AddDate(0, 0, 1).Unix()
}
