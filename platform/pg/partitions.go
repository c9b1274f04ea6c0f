package pg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnsureMonthlyPartitions creates, when missing, the monthly partitions <table>_pYYYYMM of the
// range-partitioned table ("schema.name", partitioned on ts in unix seconds) for every UTC month
// that [from, to] touches. All statements go in one round trip under an advisory lock keyed by
// the table, so replicas racing on the same month do not fail on each other's CREATE.
func EnsureMonthlyPartitions(ctx context.Context, db Execer, table string, from, to time.Time) error {
	schema, name, err := SplitTable(table)
	if err != nil {
		return fmt.Errorf("pg: ensure partitions: %w", err)
	}
	if to.Before(from) {
		return fmt.Errorf("pg: ensure partitions of %s: to %s before from %s", table, to, from)
	}
	parent := pgx.Identifier{schema, name}.Sanitize()
	var b strings.Builder
	// A literal key keeps the statement free of parameters (see below).
	fmt.Fprintf(&b, "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0));\n", quoteLiteral("tidemark.partitions:"+table))
	start, _ := MonthRange(from)
	last, _ := MonthRange(to)
	for s := start; s <= last; {
		_, e := MonthRange(time.Unix(s, 0))
		part := pgx.Identifier{schema, partitionName(name, time.Unix(s, 0))}.Sanitize()
		fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM (%s) TO (%s);\n",
			part, parent, strconv.FormatInt(s, 10), strconv.FormatInt(e, 10))
		s = e
	}
	// Without arguments Exec uses the simple protocol: the script is one implicit transaction
	// (or part of the caller's), which is what keeps the advisory lock held across the CREATEs.
	if _, err := db.Exec(ctx, b.String()); err != nil {
		return fmt.Errorf("pg: ensure partitions of %s: %w", table, err)
	}
	return nil
}

func partitionName(name string, t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%s_p%04d%02d", name, t.Year(), int(t.Month()))
}

// Partitions returns the monthly partitions of table ("schema.name") that hold [from, to] (unix
// seconds), newest first, as quoted identifiers ready for SQL. Reading a partition directly lets a
// prepared statement use a generic plan without locking and pruning every partition of the parent
// at each execution; walking them newest first serves keyset pages that usually end in the first.
func Partitions(table string, from, to int64) ([]string, error) {
	schema, name, err := SplitTable(table)
	if err != nil {
		return nil, fmt.Errorf("pg: partitions: %w", err)
	}
	var out []string
	if from > to {
		return nil, nil
	}
	first, _ := MonthRange(time.Unix(from, 0))
	for s, _ := MonthRange(time.Unix(to, 0)); s >= first; s, _ = MonthRange(time.Unix(s-1, 0)) {
		out = append(out, pgx.Identifier{schema, partitionName(name, time.Unix(s, 0))}.Sanitize())
	}
	return out, nil
}

// SplitTable splits a "schema.name" table reference. Both parts are required so that nothing
// depends on a connection's search_path.
func SplitTable(table string) (schema, name string, err error) {
	schema, name, ok := strings.Cut(table, ".")
	if !ok || schema == "" || name == "" || strings.Contains(name, ".") {
		return "", "", errors.New("table " + strconv.Quote(table) + " is not of the form schema.name")
	}
	return schema, name, nil
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// PartitionedTables lists the range-partitioned tables of schema as "schema.name": a service's
// event tables, all partitioned by month on ts, whose partitions the service keeps ahead.
func PartitionedTables(ctx context.Context, db Querier, schema string) ([]string, error) {
	rows, err := db.Query(ctx, `
SELECT n.nspname || '.' || c.relname FROM pg_partitioned_table p
JOIN pg_class c ON c.oid = p.partrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND p.partstrat = 'r' AND NOT c.relispartition ORDER BY c.relname`, schema)
	if err != nil {
		return nil, fmt.Errorf("pg: list partitioned tables of %s: %w", schema, err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pg: list partitioned tables of %s: %w", schema, err)
	}
	return tables, nil
}
