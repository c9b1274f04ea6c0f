package ingest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark/platform/pg"
)

// Table inserts records of type T into one table, skipping those whose natural key is already
// there, and tells which ones were new.
//
// Row returns the values of Columns for one record. It is called while the COPY is sent, on
// pgx's sending goroutine, so it must not change the record. When every column is of a type the
// binary encoder knows (see binaryKinds: integers, text, json, jsonb, bool, floats, numeric) they
// travel in COPY's binary format, which Postgres parses more cheaply than text; otherwise in
// COPY's text format. Either way a value is accepted if its text rendering is: nil, strings and
// named string kinds (events.Amount), integers, floats, bools and pointers to them are rendered
// directly (so a decimal string goes into a numeric column without the big.Int detour of pgx's
// numeric encoding); any other value goes through pgx's text encoding for the column's type. Key
// columns must be NOT NULL (they form the table's unique key).
type Table[T any] struct {
	Name    string   // "schema.table"
	Columns []string // columns written, in Row order
	Key     []string // the conflict target: columns of a unique index, e.g. (ts, tx_sig, tx_sig_index, id)
	Row     func(T) []any
}

// Insert writes recs within tx and returns exactly the records that were not in the table yet,
// in input order. When recs repeat a key, the first one counts and the others are dropped.
//
// Most batches are all new, so Insert first copies them straight into the table under a
// savepoint. Only when that hits a unique violation does it roll back to the savepoint (the
// newest of that name, so a transaction's earlier Inserts stay) and take the general path: copy
// into a temporary staging table of the session (created on first use, emptied at every commit),
// INSERT ... SELECT ... ON CONFLICT DO NOTHING in input order, and join the inserted keys back to
// the staged ordinals.
func (t Table[T]) Insert(ctx context.Context, tx pgx.Tx, recs []T) (inserted []T, err error) {
	if len(recs) == 0 {
		return nil, nil
	}
	schema, name, err := t.validate()
	if err != nil {
		return nil, err
	}
	target := pgx.Identifier{schema, name}
	oids, err := t.columnTypes(ctx, tx, target)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil { // perhaps a migration changed a column: ask again on the retry
			t.forgetColumnTypes(tx, target)
		}
	}()
	enc := newCopyEncoder(tx.Conn().TypeMap(), oids)
	stream := newRowStream(enc, recs, t.Row, false)
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	colList := strings.Join(cols, ", ")
	pgConn := tx.Conn().PgConn()

	// The savepoint travels in the COPY's own query string: pgconn streams the rows without waiting
	// for the server's answer, so the two cost one round trip. It is never released: a release is a
	// round trip that changes nothing here, as the transaction commits or rolls back as a whole.
	_, err = pgConn.CopyFrom(ctx, stream, "SAVEPOINT tidemark_insert; COPY "+target.Sanitize()+" ("+colList+") FROM STDIN"+enc.options())
	if stream.err != nil { // the COPY was abandoned for it
		return nil, fmt.Errorf("ingest: %s: %w", t.Name, stream.err)
	}
	if err == nil {
		return slices.Clone(recs), nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" { // unique_violation
		return nil, fmt.Errorf("ingest: %s: copy %d rows: %w", t.Name, len(recs), err)
	}
	if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT tidemark_insert"); err != nil {
		return nil, fmt.Errorf("ingest: %s: rollback to savepoint: %w", t.Name, err)
	}
	return t.insertStaged(ctx, tx, schema, name, colList, enc, recs)
}

// insertStaged is the general path for batches holding known or repeated keys.
func (t Table[T]) insertStaged(ctx context.Context, tx pgx.Tx, schema, name, colList string, enc *copyEncoder, recs []T) ([]T, error) {
	// One staging table per table and column list: a session may serve several of each.
	h := fnv.New32a()
	h.Write([]byte(t.Name))
	for _, c := range t.Columns {
		h.Write([]byte{0})
		h.Write([]byte(c))
	}
	stageName := fmt.Sprintf("tidemark_stage_%s_%s_%08x", schema, name, h.Sum32())
	if len(stageName) > 63 {
		stageName = fmt.Sprintf("tidemark_stage_%08x", h.Sum32())
	}
	stage := pgx.Identifier{"pg_temp", stageName}.Sanitize()
	target := pgx.Identifier{schema, name}.Sanitize()

	// CREATE TABLE AS copies the column types and nothing else: no NOT NULLs or defaults of
	// columns Row does not write, and no indexes to maintain while staging.
	create := "CREATE TEMP TABLE IF NOT EXISTS " + stage + " ON COMMIT DELETE ROWS AS SELECT " + colList +
		", 0::int4 AS _ord FROM " + target + " WITH NO DATA"
	if _, err := tx.Exec(ctx, create); err != nil {
		return nil, fmt.Errorf("ingest: %s: create staging table: %w", t.Name, err)
	}
	// The rows are rendered again, each with its ordinal: rare batches pay twice so that the
	// common ones need not keep their payload.
	stream := newRowStream(enc, recs, t.Row, true)
	_, err := tx.Conn().PgConn().CopyFrom(ctx, stream, "COPY "+stage+" ("+colList+", _ord) FROM STDIN"+enc.options())
	if stream.err != nil {
		return nil, fmt.Errorf("ingest: %s: %w", t.Name, stream.err)
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: %s: copy %d rows to staging: %w", t.Name, len(recs), err)
	}

	var keys, join, group []string
	for _, k := range t.Key {
		qk := pgx.Identifier{k}.Sanitize()
		keys = append(keys, qk)
		join = append(join, "s."+qk+" = i."+qk)
		group = append(group, "i."+qk)
	}
	// ON CONFLICT DO NOTHING also skips a key repeated within the batch; rows are fed in ordinal
	// order so the first one is inserted, and min(_ord) names it.
	insert := "WITH i AS (INSERT INTO " + target + " (" + colList + ") SELECT " + colList + " FROM " + stage +
		" ORDER BY _ord ON CONFLICT (" + strings.Join(keys, ", ") + ") DO NOTHING RETURNING " + strings.Join(keys, ", ") +
		") SELECT min(s._ord) FROM i JOIN " + stage + " s ON " + strings.Join(join, " AND ") +
		" GROUP BY " + strings.Join(group, ", ") + " ORDER BY 1"
	rows, err := tx.Query(ctx, insert)
	if err != nil {
		return nil, fmt.Errorf("ingest: %s: insert: %w", t.Name, err)
	}
	defer rows.Close()
	var inserted []T
	var ord int32
	for rows.Next() {
		if err := rows.Scan(&ord); err != nil {
			return nil, fmt.Errorf("ingest: %s: scan ordinal: %w", t.Name, err)
		}
		inserted = append(inserted, recs[ord])
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ingest: %s: insert: %w", t.Name, err)
	}
	return inserted, nil
}

func (t Table[T]) validate() (schema, name string, err error) {
	schema, name, err = pg.SplitTable(t.Name)
	if err != nil {
		return "", "", fmt.Errorf("ingest: table: %w", err)
	}
	if len(t.Columns) == 0 || len(t.Key) == 0 || t.Row == nil {
		return "", "", fmt.Errorf("ingest: table %s: Columns, Key and Row are required", t.Name)
	}
	for _, k := range t.Key {
		if !slices.Contains(t.Columns, k) {
			return "", "", fmt.Errorf("ingest: table %s: key column %q is not among Columns", t.Name, k)
		}
	}
	return schema, name, nil
}

// columnTypes returns the type OID of each of Columns, in order. They are remembered on the
// connection until an Insert fails: asking cost a round trip per batch, which waited on the
// consumer's busy goroutines while the server sat idle.
func (t Table[T]) columnTypes(ctx context.Context, tx pgx.Tx, target pgx.Identifier) ([]uint32, error) {
	key := t.typesKey(target)
	cache := tx.Conn().PgConn().CustomData()
	if oids, ok := cache[key].([]uint32); ok {
		return oids, nil
	}
	rows, err := tx.Query(ctx, `
SELECT attname::text, atttypid FROM pg_attribute
WHERE attrelid = $1::regclass AND attname = ANY($2) AND attnum > 0 AND NOT attisdropped`,
		target.Sanitize(), t.Columns)
	if err != nil {
		return nil, fmt.Errorf("ingest: %s: read column types: %w", t.Name, err)
	}
	byName := make(map[string]uint32, len(t.Columns))
	var col string
	var oid uint32
	if _, err := pgx.ForEachRow(rows, []any{&col, &oid}, func() error { byName[col] = oid; return nil }); err != nil {
		return nil, fmt.Errorf("ingest: %s: read column types: %w", t.Name, err)
	}
	oids := make([]uint32, len(t.Columns))
	for i, c := range t.Columns {
		o, ok := byName[c]
		if !ok {
			return nil, fmt.Errorf("ingest: %s: no column %q", t.Name, c)
		}
		oids[i] = o
	}
	cache[key] = oids
	return oids, nil
}

func (t Table[T]) forgetColumnTypes(tx pgx.Tx, target pgx.Identifier) {
	delete(tx.Conn().PgConn().CustomData(), t.typesKey(target))
}

func (t Table[T]) typesKey(target pgx.Identifier) string {
	return "tidemark/ingest column types " + target.Sanitize() + " " + strings.Join(t.Columns, ",")
}
