// Package markets is the catalogue a service keeps of the markets its events name: written as the
// events are ingested, read to check a symbol in a path and to resolve an export's market. Each
// schema that keeps one has the table
//
//	CREATE TABLE markets (
//	    symbol        text PRIMARY KEY,
//	    market_index  int  NOT NULL,
//	    market_type   text NOT NULL,
//	    market_filter text NOT NULL
//	);
package markets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/pg"
)

// Table is the markets table of one schema.
type Table struct{ name string }

// In is schema's markets table.
func In(schema string) Table { return Table{pg.Table(schema, "markets")} }

// Queue adds to b the recording of ms; markets already known are left as they are.
//
// Writers of other partitions may record the same new markets at once, and a transaction records
// markets in several statements (each sink its own): symbol order within a statement does not keep
// two transactions from taking the same new rows in opposite orders. So a transaction that finds a
// market missing first takes the table's transaction lock, and only one at a time holds uncommitted
// markets; one that finds them all recorded takes nothing, which is nearly every batch.
func (t Table) Queue(b *pgx.Batch, ms map[string]events.Market) {
	if len(ms) == 0 {
		return
	}
	n := len(ms)
	syms, idx, typ, flt := make([]string, 0, n), make([]int32, 0, n), make([]string, 0, n), make([]string, 0, n)
	for _, sym := range slices.Sorted(maps.Keys(ms)) {
		m := ms[sym]
		syms, idx, typ, flt = append(syms, m.Symbol), append(idx, int32(m.Index)), append(typ, string(m.Type)), append(flt, m.Filter())
	}
	b.Queue(`SELECT pg_advisory_xact_lock(hashtext($1)) FROM unnest($2::text[]) AS u(symbol)
		WHERE NOT EXISTS (SELECT 1 FROM `+t.name+` m WHERE m.symbol = u.symbol) LIMIT 1`, t.name, syms)
	b.Queue(`INSERT INTO `+t.name+` (symbol, market_index, market_type, market_filter)
		SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) ON CONFLICT (symbol) DO NOTHING`,
		syms, idx, typ, flt)
}

// Of is the markets recs name, by symbol, as market reads each record's: what Queue and Save take
// from a batch of records. A record whose market has no symbol (the field is optional on some
// records) names none; of records naming one symbol, the first counts.
func Of[T any](recs []T, market func(T) events.Market) map[string]events.Market {
	ms := map[string]events.Market{}
	for _, r := range recs {
		m := market(r)
		if _, ok := ms[m.Symbol]; !ok && m.Symbol != "" {
			ms[m.Symbol] = m
		}
	}
	return ms
}

// Save records ms within tx.
func (t Table) Save(ctx context.Context, tx pgx.Tx, ms map[string]events.Market) error {
	var b pgx.Batch
	t.Queue(&b, ms)
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("record markets: %w", err)
	}
	return nil
}

// Catalogue reads a markets table. Markets never disappear, so what it has found it keeps.
type Catalogue struct {
	table Table
	pool  *pgxpool.Pool

	mu    sync.RWMutex
	known map[string]events.Market
}

// NewCatalogue reads schema's markets table through pool.
func NewCatalogue(pool *pgxpool.Pool, schema string) *Catalogue {
	return &Catalogue{table: In(schema), pool: pool, known: map[string]events.Market{}}
}

// Market returns the entry of symbol, or fault.NotFound when no event has named it.
func (c *Catalogue) Market(ctx context.Context, symbol string) (events.Market, error) {
	c.mu.RLock()
	m, ok := c.known[symbol]
	c.mu.RUnlock()
	if ok {
		return m, nil
	}
	err := c.pool.QueryRow(ctx, `SELECT symbol, market_index, market_type FROM `+c.table.name+` WHERE symbol = $1`, symbol).
		Scan(&m.Symbol, &m.Index, &m.Type)
	if errors.Is(err, pgx.ErrNoRows) {
		return events.Market{}, fault.Errorf(fault.NotFound, "market %s not found", symbol)
	}
	if err != nil {
		return events.Market{}, fmt.Errorf("look up market %s: %w", symbol, err)
	}
	c.mu.Lock()
	c.known[symbol] = m
	c.mu.Unlock()
	return m, nil
}

// Store is the schema a service's store reads with the catalogue of its markets: the pg.DB its
// statements run on and the Catalogue its routes check a symbol against. A service's store embeds
// it, so that both come from one constructor and the two can never name different schemas.
type Store struct {
	pg.DB
	*Catalogue
}

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) Store {
	return Store{DB: pg.DB{Pool: pool, Schema: schema}, Catalogue: NewCatalogue(pool, schema)}
}
