package ingest_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

// kindsColumns are one column of every type the binary COPY encoder writes itself.
var kindsColumns = []string{"i2", "i4", "i8", "f4", "f8", "b", "t", "vc", "j", "jb", "n"}

func newKindsTable(tb testing.TB, pool *pgxpool.Pool, extra string) {
	tb.Helper()
	_, err := pool.Exec(context.Background(), `CREATE SCHEMA IF NOT EXISTS test;
CREATE TABLE test.kinds (
	id bigint PRIMARY KEY,
	i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision, b boolean,
	t text, vc varchar(20), j json, jb jsonb, n numeric`+extra+`)`)
	if err != nil {
		tb.Fatal(err)
	}
}

// kindsRow is one value for one column of test.kinds; the other columns are NULL.
type kindsRow struct {
	id  int64
	col string
	v   any
}

func kindsTable(cols ...string) ingest.Table[kindsRow] {
	cols = append([]string{"id"}, cols...)
	return ingest.Table[kindsRow]{
		Name:    "test.kinds",
		Columns: cols,
		Key:     []string{"id"},
		Row: func(r kindsRow) []any {
			vals := make([]any, len(cols))
			vals[0] = r.id
			vals[slices.Index(cols, r.col)] = r.v
			return vals
		},
	}
}

func TestTableColumnTypes(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	newKindsTable(t, pool, "")
	s, empty := "s", ""
	var num pgtype.Numeric
	if err := num.Scan("-98765432109876543210.5"); err != nil {
		t.Fatal(err)
	}
	// want is the column's text output as Postgres prints it, or NULL.
	tests := []struct {
		col  string
		v    any
		want string
	}{
		{"i2", int(math.MinInt16), "-32768"},
		{"i2", int64(math.MaxInt16), "32767"},
		{"i2", int8(-5), "-5"},
		{"i2", "12", "12"},
		{"i2", nil, "NULL"},
		{"i4", int32(math.MinInt32), "-2147483648"},
		{"i4", int(-1), "-1"},
		{"i4", uint16(7), "7"},
		{"i4", " 42 ", "42"},
		{"i8", int64(math.MinInt64), "-9223372036854775808"},
		{"i8", int64(math.MaxInt64), "9223372036854775807"},
		{"i8", int32(-3), "-3"},
		{"i8", uint64(5), "5"},
		{"i8", amount("-42"), "-42"},
		{"i8", (*int64)(nil), "NULL"},
		{"f4", float32(-0.5), "-0.5"},
		{"f4", 1.25, "1.25"},
		{"f4", int64(-3), "-3"},
		{"f8", -1e300, "-1e+300"},
		{"f8", math.Inf(1), "Infinity"},
		{"f8", math.Inf(-1), "-Infinity"},
		{"f8", math.NaN(), "NaN"},
		{"f8", float32(0.1), "0.1"}, // as its text, not as float64(float32(0.1))
		{"f8", int(3), "3"},
		{"f8", "2.5", "2.5"},
		{"f8", nil, "NULL"},
		{"b", true, "true"},
		{"b", false, "false"},
		{"b", "yes", "true"},
		{"b", "F", "false"},
		{"b", (*bool)(nil), "NULL"},
		{"t", "", ""},
		{"t", "ünïcode ✓ 日本", "ünïcode ✓ 日本"},
		{"t", "tab\there\nline\\back\rcr", "tab\there\nline\\back\rcr"},
		{"t", `\N`, `\N`},
		{"t", []byte("raw bytes"), "raw bytes"},
		{"t", []byte{}, ""},
		{"t", &s, "s"},
		{"t", &empty, ""},
		{"t", int(5), "5"},
		{"t", nil, "NULL"},
		{"vc", "short ü", "short ü"},
		{"j", `{"q":"say \"hi\"","b":"back\\slash\ttab","u":"\u00e9","n":-1.5e3}`, `{"q":"say \"hi\"","b":"back\\slash\ttab","u":"\u00e9","n":-1.5e3}`},
		{"j", []byte(` [1, "two" ,null] `), ` [1, "two" ,null] `},
		{"j", `""`, `""`},
		{"jb", `{"b": 1, "a": ["\\", "\"", "é"]}`, `{"a": ["\\", "\"", "é"], "b": 1}`},
		{"jb", []byte(`"x"`), `"x"`},
		{"jb", nil, "NULL"},
		{"n", "0", "0"},
		{"n", "-0", "0"},
		{"n", "0.000", "0.000"},
		{"n", "1500000", "1500000"},
		{"n", "-123456789012345678901234567890.000100", "-123456789012345678901234567890.000100"},
		{"n", "-0.00001", "-0.00001"},
		{"n", "10000", "10000"},
		{"n", "100000000", "100000000"},
		{"n", "99999999.9999", "99999999.9999"},
		{"n", ".5", "0.5"},
		{"n", "+5.", "5"},
		{"n", "1e5", "100000"},
		{"n", "1.5E-3", "0.0015"},
		{"n", "12.345e+2", "1234.5"},
		{"n", " 7 ", "7"},
		{"n", "NaN", "NaN"},
		{"n", "-Infinity", "-Infinity"},
		{"n", "inf", "Infinity"},
		{"n", amount("42"), "42"},
		{"n", int64(-7), "-7"},
		{"n", 1.25, "1.25"},
		{"n", 1e21, "1000000000000000000000"},
		{"n", num, "-98765432109876543210.5"},
		{"n", pgtype.Numeric{}, "NULL"},
		{"n", nil, "NULL"},
	}
	table := kindsTable(kindsColumns...)
	insert := func(recs []kindsRow) []kindsRow {
		t.Helper()
		var got []kindsRow
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			got, err = table.Insert(ctx, tx, recs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	const staged = 1000 // ids of the second pass
	var direct, second []kindsRow
	for i, tt := range tests {
		direct = append(direct, kindsRow{int64(i), tt.col, tt.v})
		// The second pass goes through staging: it repeats a key already stored and, after
		// each new row, its key again with another value, which must be dropped.
		second = append(second, kindsRow{int64(i), "t", "known"},
			kindsRow{staged + int64(i), tt.col, tt.v}, kindsRow{staged + int64(i), "t", "repeat"})
	}
	if got := insert(direct); len(got) != len(direct) {
		t.Fatalf("first pass inserted %d rows, want %d", len(got), len(direct))
	}
	got := insert(second)
	var wantIDs, gotIDs []int64
	for i := range tests {
		wantIDs = append(wantIDs, staged+int64(i))
	}
	for _, r := range got {
		gotIDs = append(gotIDs, r.id)
	}
	if !slices.Equal(gotIDs, wantIDs) {
		t.Errorf("second pass inserted %v, want %v", gotIDs, wantIDs)
	}

	for i, tt := range tests {
		for _, id := range []int64{int64(i), staged + int64(i)} {
			var stored string
			q := fmt.Sprintf(`SELECT coalesce(%s::text, 'NULL') FROM test.kinds WHERE id = $1`, pgx.Identifier{tt.col}.Sanitize())
			if err := pool.QueryRow(ctx, q, id).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if stored != tt.want {
				t.Errorf("%s = %T %#v (id %d): stored %q, want %q", tt.col, tt.v, tt.v, id, stored, tt.want)
			}
		}
	}
}

// TestTableNumericMatchesServer checks the client's decimal parsing against numeric_in on many
// shapes of decimal text: value and display scale must be the server's.
func TestTableNumericMatchesServer(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	newKindsTable(t, pool, "")
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0123456789"[rng.IntN(10)]
			if rng.IntN(4) == 0 {
				b[i] = '0' // runs of zeros make whole zero base-10000 digits
			}
		}
		return string(b)
	}
	var recs []kindsRow
	for i := range 3000 {
		var s strings.Builder
		s.WriteString([]string{"", "-", "+"}[rng.IntN(3)])
		s.WriteString(digits(rng.IntN(25)))
		if rng.IntN(2) == 0 {
			s.WriteString("." + digits(rng.IntN(25)))
		}
		if s.Len() == 0 || strings.Trim(s.String(), "+-.") == "" {
			s.WriteString("0")
		}
		if rng.IntN(4) == 0 {
			fmt.Fprintf(&s, "e%d", rng.IntN(60)-30)
		}
		recs = append(recs, kindsRow{int64(i), "n", s.String()})
	}
	table := kindsTable("n", "t")
	table.Row = func(r kindsRow) []any { return []any{r.id, r.v, r.v} }
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := table.Insert(ctx, tx, recs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT t, n::text, t::numeric::text FROM test.kinds WHERE n::text <> t::numeric::text ORDER BY id LIMIT 10`)
	if err != nil {
		t.Fatal(err)
	}
	var in, got, want string
	_, err = pgx.ForEachRow(rows, []any{&in, &got, &want}, func() error {
		t.Errorf("numeric %q stored as %s, want %s", in, got, want)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTableColumnTypeErrors(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	newKindsTable(t, pool, "")
	tests := []struct {
		col  string
		v    any
		want string
	}{
		{"i2", int(40000), "row 0 column 1: value 40000 is out of range for type smallint"},
		{"i4", int64(math.MaxInt32 + 1), "out of range for type integer"},
		{"i4", "abc", "invalid input for type integer"},
		{"i8", uint64(math.MaxUint64), "value out of range"},
		{"f8", "x", "invalid input for type double precision"},
		{"b", "maybe", `invalid input syntax for type boolean: "maybe"`},
		{"n", "1.2.3", `invalid input syntax for type numeric: "1.2.3"`},
		{"n", "1e", "invalid input syntax for type numeric"},
		{"n", "-", "invalid input syntax for type numeric"},
		{"n", "-NaN", "invalid input syntax for type numeric"},
		{"n", "1e999999", "value overflows numeric format"},
		{"n", struct{}{}, "encode struct {}"},
		{"vc", strings.Repeat("x", 21), "value too long for type character varying(20)"},
		{"j", "{nope", "invalid input syntax for type json"},
		{"jb", "{nope", "invalid input syntax for type json"},
		{"t", "nul\x00byte", "invalid byte sequence"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.col, tt.v), func(t *testing.T) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := kindsTable(kindsColumns...).Insert(ctx, tx, []kindsRow{{1, tt.col, tt.v}})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestTableTextFormat covers a table with a column the binary encoder does not know, copied
// in text format instead, through both paths.
func TestTableTextFormat(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	newKindsTable(t, pool, ", at timestamptz")
	table := kindsTable("at", "t", "n")
	table.Row = func(r kindsRow) []any { return []any{r.id, r.v, "a\tb\\c", "1.50"} }
	for _, batch := range [][]kindsRow{{{1, "", "2026-11-01 12:00:00+00"}}, {{1, "", nil}, {2, "", nil}}} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := table.Insert(ctx, tx, batch)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := pool.Query(ctx, `SELECT id::text || ' ' || coalesce(extract(epoch FROM at)::text, 'NULL') || ' ' || t || ' ' || n::text FROM test.kinds ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 1793534400.000000 a\tb\\c 1.50", "2 NULL a\tb\\c 1.50"}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %q, want %q", got, want)
	}
}

// TestTableStreamsLargeBatches covers batches far larger than one CopyData message, which are
// encoded while the server reads them: a bad value in the last row, after the first rows went
// out, fails the batch whole; a known key in the first row takes the staging path, which renders
// every row again after the server stopped reading at the violation.
func TestTableStreamsLargeBatches(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	newKindsTable(t, pool, "")
	const n = 5000
	batch := func(last any) []kindsRow {
		recs := make([]kindsRow, n)
		for i := range recs {
			recs[i] = kindsRow{int64(i), "t", strings.Repeat("x", 2000)}
		}
		recs[n-1].v = last
		return recs
	}
	table := kindsTable("t")
	insert := func(recs []kindsRow) (int, error) {
		var got []kindsRow
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			got, err = table.Insert(ctx, tx, recs)
			return err
		})
		return len(got), err
	}
	count := func() (c int) {
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM test.kinds").Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}

	if _, err := insert(batch(struct{}{})); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("row %d column 1: encode struct {}", n-1)) {
		t.Fatalf("bad last value: err = %v", err)
	}
	if c := count(); c != 0 {
		t.Fatalf("a failed batch left %d rows", c)
	}

	if _, err := pool.Exec(ctx, "INSERT INTO test.kinds (id) VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	if got, err := insert(batch("last")); err != nil || got != n-1 {
		t.Fatalf("known first key: %d new, %v; want %d", got, err, n-1)
	}
	var last string
	if err := pool.QueryRow(ctx, "SELECT t FROM test.kinds WHERE id = $1", n-1).Scan(&last); err != nil || last != "last" {
		t.Fatalf("last row holds %q (%v)", last, err)
	}
	if c := count(); c != n {
		t.Fatalf("table holds %d rows, want %d", c, n)
	}
}

// TestTableFollowsAColumnTypeChange: column types are remembered per connection, so a migration
// that changes one under a running consumer fails at most one attempt, and the retry writes the
// value in the new type.
func TestTableFollowsAColumnTypeChange(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	newKindsTable(t, pool, "")
	conn, err := pool.Acquire(ctx) // one connection, so one cache
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	insert := func(id int64, v any) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := kindsTable("i4").Insert(ctx, tx, []kindsRow{{id, "i4", v}})
			return err
		})
	}
	if err := insert(1, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER TABLE test.kinds ALTER COLUMN i4 TYPE bigint"); err != nil {
		t.Fatal(err)
	}
	const big = int64(1) << 40
	if err := insert(2, big); err != nil {
		t.Logf("first attempt after the change: %v", err)
		if err := insert(2, big); err != nil {
			t.Fatalf("retry: %v", err)
		}
	}
	var got int64
	if err := conn.QueryRow(ctx, "SELECT i4 FROM test.kinds WHERE id = 2").Scan(&got); err != nil || got != big {
		t.Fatalf("stored %d (%v), want %d", got, err, big)
	}
}
