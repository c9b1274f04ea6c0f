// Package postgres stores the amm schema: its migrations, the ingest sink of market states and the
// store of its catalogue and rollup.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/services/amm"
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

// StatesTable is the raw states' table, partitioned by day.
const StatesTable = "states"

// Store reads the amm schema's catalogue and rollup.
type Store struct {
	*markets.Catalogue
	pool   *pgxpool.Pool
	chunks string
}

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	rollup := pgx.Identifier{schema, "rollup"}.Sanitize()
	return &Store{
		Catalogue: markets.NewCatalogue(pool, schema),
		pool:      pool,
		// The carried chunk and the window's in one statement; the union keeps each side's order.
		chunks: `(SELECT start, chunk FROM ` + rollup + ` WHERE symbol = $1 AND row = $2 AND start < $3 ORDER BY start DESC LIMIT 1)
UNION ALL
(SELECT start, chunk FROM ` + rollup + ` WHERE symbol = $1 AND row = $2 AND start >= $3 AND start <= $4 ORDER BY start)`,
	}
}

var _ amm.Store = (*Store)(nil)

// Chunks implements amm.Store. The chunks are handed over in pgx's read buffer, without a copy.
func (s *Store) Chunks(ctx context.Context, symbol string, series amm.Series, from, to int64, fn func(start int64, data []byte) error) error {
	rows, err := s.pool.Query(ctx, s.chunks, symbol, int16(amm.RowOf(series)), from, to)
	if err != nil {
		return fmt.Errorf("read the rollup of %s: %w", symbol, err)
	}
	defer rows.Close()
	var start int64
	var copied []byte
	for rows.Next() {
		if err := rows.Scan(&start, nil); err != nil {
			return fmt.Errorf("read the rollup of %s: %w", symbol, err)
		}
		data := rows.RawValues()[1]
		if rows.FieldDescriptions()[1].Format != pgx.BinaryFormatCode { // bytea in text is hex: decode it
			if err := rows.Scan(nil, &copied); err != nil {
				return fmt.Errorf("read the rollup of %s: %w", symbol, err)
			}
			data = copied
		}
		if err := fn(start, data); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the rollup of %s: %w", symbol, err)
	}
	return nil
}
