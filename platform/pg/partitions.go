package pg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Period is the span of time one partition of a range-partitioned table holds.
type Period int

const (
	// Monthly partitions, <table>_pYYYYMM: the event tables, kept for ever.
	Monthly Period = iota
	// Daily partitions, <table>_pYYYYMMDD: high-rate tables whose old days are dropped.
	Daily
)

// String is "monthly" or "daily".
func (p Period) String() string {
	if p == Daily {
		return "daily"
	}
	return "monthly"
}

// Range returns the UTC period (calendar month or day) containing t as [start, end) in unix seconds:
// the bounds of the partition that holds t.
func (p Period) Range(t time.Time) (start, end int64) {
	if p == Daily {
		return DayRange(t)
	}
	return MonthRange(t)
}

// partitionName names the partition of table name that holds t.
func (p Period) partitionName(name string, t time.Time) string {
	t = t.UTC()
	if p == Daily {
		return fmt.Sprintf("%s_p%04d%02d%02d", name, t.Year(), int(t.Month()), t.Day())
	}
	return fmt.Sprintf("%s_p%04d%02d", name, t.Year(), int(t.Month()))
}

// EnsureMonthlyPartitions is EnsurePartitions with monthly partitions.
func EnsureMonthlyPartitions(ctx context.Context, db Execer, table string, from, to time.Time) error {
	return EnsurePartitions(ctx, db, table, Monthly, from, to)
}

// EnsurePartitions creates, when missing, the partitions of period p of the range-partitioned table
// ("schema.name", partitioned on a column of unix seconds) for every UTC month or day that
// [from, to] touches: <table>_pYYYYMM or <table>_pYYYYMMDD. All statements go in one round trip
// under an advisory lock keyed by the table, so replicas racing on the same period do not fail on
// each other's CREATE.
func EnsurePartitions(ctx context.Context, db Execer, table string, p Period, from, to time.Time) error {
	schema, name, err := SplitTable(table)
	if err != nil {
		return fmt.Errorf("pg: ensure partitions: %w", err)
	}
	if to.Before(from) {
		return fmt.Errorf("pg: ensure partitions of %s: to %s before from %s", table, to, from)
	}
	parent := Table(schema, name)
	var b strings.Builder
	// A literal key keeps the statement free of parameters (see below).
	fmt.Fprintf(&b, "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0));\n", quoteLiteral(partitionLock(table)))
	start, _ := p.Range(from)
	last, _ := p.Range(to)
	for s := start; s <= last; {
		_, e := p.Range(time.Unix(s, 0))
		part := Table(schema, p.partitionName(name, time.Unix(s, 0)))
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

func partitionLock(table string) string { return "tidemark.partitions:" + table }

// partitionBound reads the bounds of a range partition of one bigint column as pg_get_expr prints them.
var partitionBound = regexp.MustCompile(`^FOR VALUES FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)$`)

// DropPartitionsBefore drops the partitions of the range-partitioned table ("schema.name", on a
// column of unix seconds) that hold nothing at or after before: those whose upper bound is at most
// before. It returns the dropped partitions' names, oldest first. The bounds are read from the
// catalogue, so partitions of any period, and any name, are judged alike; the drops run in one
// transaction under the lock EnsurePartitions takes.
func DropPartitionsBefore(ctx context.Context, db TxBeginner, table string, before int64) ([]string, error) {
	schema, name, err := SplitTable(table)
	if err != nil {
		return nil, fmt.Errorf("pg: drop partitions: %w", err)
	}
	var dropped []string
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", partitionLock(table)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass`, Table(schema, name))
		if err != nil {
			return err
		}
		type part struct {
			name string
			end  int64
		}
		var old []part
		var rel, bound string
		_, err = pgx.ForEachRow(rows, []any{&rel, &bound}, func() error {
			m := partitionBound.FindStringSubmatch(bound)
			if m == nil {
				return nil // a default partition, or bounds of another shape: not ours to judge
			}
			end, err := strconv.ParseInt(m[2], 10, 64)
			if err == nil && end <= before {
				old = append(old, part{rel, end})
			}
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortFunc(old, func(a, b part) int { return cmp.Compare(a.end, b.end) })
		for _, p := range old {
			if _, err := tx.Exec(ctx, "DROP TABLE "+Table(schema, p.name)); err != nil {
				return err
			}
			dropped = append(dropped, p.name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pg: drop partitions of %s before %d: %w", table, before, err)
	}
	return dropped, nil
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
		out = append(out, Table(schema, Monthly.partitionName(name, time.Unix(s, 0))))
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
// event tables (monthly on ts unless its declaration says otherwise), whose partitions the service
// keeps ahead.
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
