package pg

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is the part of the database one service owns: its schema, and the pool that reaches it. A
// service's stores embed it, so that s.Pool runs their statements, s.Table names the service's tables
// and s.Schema is what the platform's packages (outbox, markets) take to find theirs in the schema.
type DB struct {
	Pool   *pgxpool.Pool
	Schema string
}

// Table is the schema's table name, quoted for SQL: "schema"."name".
func (db DB) Table(name string) string { return Table(db.Schema, name) }

// Table is schema's table name, quoted for SQL: "schema"."name". A service qualifies every table it
// names, so that no statement depends on a connection's search_path (only migrations run with one).
func Table(schema, name string) string { return pgx.Identifier{schema, name}.Sanitize() }
