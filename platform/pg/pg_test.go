package pg_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// newPartitioned is a fresh database with table (schema.name, its schema created) of columns,
// partitioned by range of ts and with no partition yet.
func newPartitioned(t *testing.T, table, columns string) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewPool(t, pgtest.Server())
	schema, _, _ := strings.Cut(table, ".")
	if _, err := pool.Exec(context.Background(),
		`CREATE SCHEMA `+schema+`; CREATE TABLE `+table+` (`+columns+`) PARTITION BY RANGE (ts)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestMonthRange(t *testing.T) {
	tests := []struct {
		name       string
		in         time.Time
		start, end string
	}{
		{"mid month", time.Date(2026, 11, 21, 13, 4, 5, 0, time.UTC), "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"first second", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"last second", time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC), "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"december", time.Date(2025, 12, 31, 12, 0, 0, 0, time.UTC), "2025-12-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"leap february", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"},
		// 2026-03-01 00:30 in UTC+2 is still February in UTC.
		{"other zone", time.Date(2026, 3, 1, 0, 30, 0, 0, time.FixedZone("x", 2*3600)), "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := pg.MonthRange(tt.in)
			if got := time.Unix(start, 0).UTC().Format(time.RFC3339); got != tt.start {
				t.Errorf("start = %s, want %s", got, tt.start)
			}
			if got := time.Unix(end, 0).UTC().Format(time.RFC3339); got != tt.end {
				t.Errorf("end = %s, want %s", got, tt.end)
			}
		})
	}
}

func migrations() fstest.MapFS {
	return fstest.MapFS{
		"002_items_index.sql": {Data: []byte(`CREATE INDEX items_name ON items (name);`)},
		"001_items.sql": {Data: []byte(`
CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO items VALUES (1, 'one');`)},
		"sub/003_more.sql": {Data: []byte(`INSERT INTO items VALUES (2, 'two');`)},
		"README.md":        {Data: []byte(`not a migration`)},
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())

	for i := range 2 { // the second run must be a no-op
		if err := pg.Migrate(ctx, pool, "svc", migrations()); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM svc.items`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("items = %d, want 2 (each migration applied once)", n)
	}
	versions := queryStrings(t, pool, `SELECT version FROM svc.schema_migrations ORDER BY applied_at, version`)
	want := []string{"001_items.sql", "002_items_index.sql", "003_more.sql"}
	if !slices.Equal(versions, want) {
		t.Errorf("versions = %v, want %v", versions, want)
	}
	for _, table := range []string{"svc.kafka_offsets", "svc.outbox", "svc.outbox_seq", "svc.schema_migrations"} {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || !exists {
			t.Errorf("%s missing (err %v)", table, err)
		}
	}
	// A new file is picked up by a later run.
	more := migrations()
	more["004_three.sql"] = &fstest.MapFile{Data: []byte(`INSERT INTO items VALUES (3, 'three');`)}
	if err := pg.Migrate(ctx, pool, "svc", more); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM svc.items`).Scan(&n); err != nil || n != 3 {
		t.Errorf("items = %d (err %v), want 3", n, err)
	}
}

func TestMigrateFailureRollsBackThatFile(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	bad := fstest.MapFS{
		"001_ok.sql":  {Data: []byte(`CREATE TABLE ok (id int);`)},
		"002_bad.sql": {Data: []byte(`CREATE TABLE half (id int); SELECT no_such_function();`)},
	}
	if err := pg.Migrate(ctx, pool, "svc", bad); err == nil {
		t.Fatal("want an error from 002_bad.sql")
	}
	var ok, half bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('svc.ok') IS NOT NULL, to_regclass('svc.half') IS NOT NULL`).Scan(&ok, &half); err != nil {
		t.Fatal(err)
	}
	if !ok || half {
		t.Errorf("ok exists = %v (want true), half exists = %v (want false)", ok, half)
	}
	if v := queryStrings(t, pool, `SELECT version FROM svc.schema_migrations`); !slices.Equal(v, []string{"001_ok.sql"}) {
		t.Errorf("versions = %v", v)
	}
}

func TestMigrateConcurrent(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	const replicas = 8
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pg.Migrate(ctx, pool, "svc", migrations())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM svc.items`).Scan(&n); err != nil || n != 2 {
		t.Errorf("items = %d (err %v), want 2", n, err)
	}
}

func TestEnsureMonthlyPartitions(t *testing.T) {
	ctx := context.Background()
	pool := newPartitioned(t, "svc.events", "ts bigint NOT NULL, v int")
	from := time.Date(2025, 11, 30, 23, 0, 0, 0, time.UTC)
	to := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for range 2 {
		if err := pg.EnsureMonthlyPartitions(ctx, pool, "svc.events", from, to); err != nil {
			t.Fatal(err)
		}
	}
	got := partitionsOf(t, pool, "svc.events")
	want := []string{
		"events_p202511 FOR VALUES FROM ('1761955200') TO ('1764547200')",
		"events_p202512 FOR VALUES FROM ('1764547200') TO ('1767225600')",
		"events_p202601 FOR VALUES FROM ('1767225600') TO ('1769904000')",
		"events_p202602 FOR VALUES FROM ('1769904000') TO ('1772323200')",
	}
	if !slices.Equal(got, want) {
		t.Errorf("partitions:\n got %q\nwant %q", got, want)
	}
	// Rows route by ts: the last second of a month and the first of the next.
	_, endNov := pg.MonthRange(from)
	if _, err := pool.Exec(ctx, `INSERT INTO svc.events VALUES ($1, 1), ($2, 2)`, endNov-1, endNov); err != nil {
		t.Fatal(err)
	}
	routed := queryStrings(t, pool, `SELECT tableoid::regclass::text FROM svc.events ORDER BY ts`)
	if !slices.Equal(routed, []string{"svc.events_p202511", "svc.events_p202512"}) {
		t.Errorf("routed to %v", routed)
	}
}

func TestEnsureMonthlyPartitionsConcurrentInTx(t *testing.T) {
	ctx := context.Background()
	pool := newPartitioned(t, "svc.events", "ts bigint NOT NULL")
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				return pg.EnsureMonthlyPartitions(ctx, tx, "svc.events", now, now.AddDate(0, 2, 0))
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(queryStrings(t, pool, `SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'svc.events'::regclass`)); n != 3 {
		t.Errorf("partitions = %d, want 3", n)
	}
}

func TestEnsureMonthlyPartitionsBadInput(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	for _, table := range []string{"events", ".events", "svc.", "a.b.c"} {
		if err := pg.EnsureMonthlyPartitions(ctx, nil, table, now, now); err == nil {
			t.Errorf("%q: want an error", table)
		}
	}
	if err := pg.EnsureMonthlyPartitions(ctx, nil, "svc.events", now, now.Add(-time.Hour)); err == nil {
		t.Error("to before from: want an error")
	}
}

func TestEnsureDailyPartitionsAndDrop(t *testing.T) {
	ctx := context.Background()
	pool := newPartitioned(t, "svc.states", "ts bigint NOT NULL, v int")
	from := time.Date(2026, 2, 27, 13, 0, 0, 0, time.UTC)
	to := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for range 2 {
		if err := pg.EnsurePartitions(ctx, pool, "svc.states", pg.Daily, from, to); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"states_p20260227 FOR VALUES FROM ('1772150400') TO ('1772236800')",
		"states_p20260228 FOR VALUES FROM ('1772236800') TO ('1772323200')",
		"states_p20260301 FOR VALUES FROM ('1772323200') TO ('1772409600')",
		"states_p20260302 FOR VALUES FROM ('1772409600') TO ('1772496000')",
	}
	if got := partitionsOf(t, pool, "svc.states"); !slices.Equal(got, want) {
		t.Errorf("partitions:\n got %q\nwant %q", got, want)
	}
	// Rows route by ts: the last second of a day and the first of the next.
	_, endFeb28 := pg.DayRange(time.Date(2026, 2, 28, 12, 0, 0, 0, time.UTC))
	if _, err := pool.Exec(ctx, `INSERT INTO svc.states VALUES ($1, 1), ($2, 2)`, endFeb28-1, endFeb28); err != nil {
		t.Fatal(err)
	}
	routed := queryStrings(t, pool, `SELECT tableoid::regclass::text FROM svc.states ORDER BY ts`)
	if !slices.Equal(routed, []string{"svc.states_p20260228", "svc.states_p20260301"}) {
		t.Errorf("routed to %v", routed)
	}

	// A partition goes once nothing in it is at or after the bound: Feb 27 ends at 1772236800.
	cases := []struct {
		before  int64
		dropped []string
	}{
		{1772236799, nil},
		{1772236800, []string{"states_p20260227"}},
		{endFeb28 + 3600, []string{"states_p20260228"}},
		{endFeb28 + 3600, nil},
	}
	for _, c := range cases {
		got, err := pg.DropPartitionsBefore(ctx, pool, "svc.states", c.before)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.dropped) {
			t.Errorf("DropPartitionsBefore(%d) dropped %v, want %v", c.before, got, c.dropped)
		}
	}
	if got := partitionsOf(t, pool, "svc.states"); !slices.Equal(got, want[2:]) {
		t.Errorf("partitions left:\n got %q\nwant %q", got, want[2:])
	}
	if n := len(queryStrings(t, pool, `SELECT ts::text FROM svc.states`)); n != 1 {
		t.Errorf("rows left = %d, want the one of March 1", n)
	}
	if _, err := pg.DropPartitionsBefore(ctx, pool, "svc", 0); err == nil {
		t.Error("a table without a schema: want an error")
	}
}

func TestPeriodRange(t *testing.T) {
	at := time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)
	if s, e := pg.Daily.Range(at); s != 1709164800 || e != 1709251200 {
		t.Errorf("daily range of %s = [%d, %d)", at, s, e)
	}
	if s, e := pg.Monthly.Range(at); s != 1706745600 || e != 1709251200 {
		t.Errorf("monthly range of %s = [%d, %d)", at, s, e)
	}
}

func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pg.Open(ctx, "postgres://nobody@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", 2)
	if err == nil {
		t.Fatal("want an error")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a connection error, got timeout: %v", err)
	}
}

// partitionsOf lists the partitions of table as "name bounds", by name.
func partitionsOf(tb testing.TB, pool *pgxpool.Pool, table string) []string {
	tb.Helper()
	return queryStrings(tb, pool, `
SELECT c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass ORDER BY c.relname`, table)
}

func queryStrings(tb testing.TB, pool *pgxpool.Pool, sql string, args ...any) []string {
	tb.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
