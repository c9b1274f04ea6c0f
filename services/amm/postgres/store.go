// Package postgres stores the amm schema: its migrations, the ingest sink of market states and the
// store of its catalogue and rollup.
package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/services/amm"
)

// StatesTable is the raw states' table, partitioned by day.
const StatesTable = "states"

// Store reads the amm schema's catalogue and rollup.
type Store struct {
	markets.Store
	chunks string
	points string
}

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	ms := markets.NewStore(pool, schema)
	rollup := ms.Table("rollup")
	hdr, fmtByte := strconv.Itoa(amm.HeaderBytes), strconv.Itoa(amm.BitmapBytes)
	return &Store{
		Store: ms,
		// The carried chunk and the window's in one statement; the union keeps each side's order.
		chunks: `(SELECT start, chunk FROM ` + rollup + ` WHERE symbol = $1 AND row = $2 AND start < $3 ORDER BY start DESC LIMIT 1)
UNION ALL
(SELECT start, chunk FROM ` + rollup + ` WHERE symbol = $1 AND row = $2 AND start >= $3 AND start <= $4 ORDER BY start)`,
		// Per bucket (chunk start cs, bucket b): the latest chunk at or before cs that has a state at
		// or before the bucket (get_bit numbers bits from the least significant of byte 0, as the
		// bitmap does), and of it, when the bucket has its own entry, the chunk's head (bitmap,
		// format, base values: amm.PointHeader bytes) and the entry, else the whole chunk. $3 is the
		// row's values per entry; an entry is 4 bytes a value in a narrow chunk (format 1), 8 in a
		// wide one, after the base values in the first.
		points: `SELECT q.ord::int, c.start, c.start = q.cs AND get_bit(c.chunk, q.b) = 1 AS exact,
  CASE WHEN c.start = q.cs AND get_bit(c.chunk, q.b) = 1 THEN
    substring(c.chunk FROM 1 FOR ` + hdr + ` + 8 * $3) || CASE get_byte(c.chunk, ` + fmtByte + `)
      WHEN 1 THEN substring(c.chunk FROM ` + hdr + ` + 8 * $3 + q.b * 4 * $3 + 1 FOR 4 * $3)
      ELSE substring(c.chunk FROM ` + hdr + ` + q.b * 8 * $3 + 1 FOR 8 * $3) END
  ELSE c.chunk END
FROM unnest($4::bigint[], $5::int[]) WITH ORDINALITY AS q(cs, b, ord)
CROSS JOIN LATERAL (
  SELECT start, chunk FROM ` + rollup + `
  WHERE symbol = $1 AND row = $2 AND start <= q.cs AND (start < q.cs
    OR substring(chunk FROM 1 FOR q.b / 8) <> decode(repeat('00', q.b / 8), 'hex')
    OR get_byte(chunk, q.b / 8) & ((2 << (q.b % 8)) - 1) <> 0)
  ORDER BY start DESC LIMIT 1) c
ORDER BY q.ord`,
	}
}

// Points implements amm.Store: an exact bucket's data is amm.PointHeader bytes of its chunk and
// its entry.
func (s *Store) Points(ctx context.Context, symbol string, series amm.Series, buckets []int64, fn func(i int, start int64, data []byte, exact bool) error) error {
	cs, bs := make([]int64, len(buckets)), make([]int32, len(buckets))
	for i, k := range buckets {
		cs[i] = amm.ChunkStart(k)
		bs[i] = int32((k - cs[i]) / amm.Resolution)
	}
	r := amm.RowOf(series)
	rows, err := s.Pool.Query(ctx, s.points, symbol, int16(r), int32(r.Values()), cs, bs)
	if err != nil {
		return fmt.Errorf("read the rollup of %s: %w", symbol, err)
	}
	defer rows.Close()
	var ord int32
	var start int64
	var exact bool
	var data []byte
	for rows.Next() {
		if err := rows.Scan(&ord, &start, &exact, &data); err != nil {
			return fmt.Errorf("read the rollup of %s: %w", symbol, err)
		}
		if err := fn(int(ord)-1, start, data, exact); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the rollup of %s: %w", symbol, err)
	}
	return nil
}

var _ amm.Store = (*Store)(nil)

// Chunks implements amm.Store. The chunks are handed over in pgx's read buffer, without a copy.
func (s *Store) Chunks(ctx context.Context, symbol string, series amm.Series, from, to int64, fn func(start int64, data []byte) error) error {
	rows, err := s.Pool.Query(ctx, s.chunks, symbol, int16(amm.RowOf(series)), from, to)
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
