package ingest_test

import (
	"context"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/platform/ingest"
)

func ids(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID + ":" + it.Amount
	}
	return out
}

func TestTableInsertDedupes(t *testing.T) {
	ctx := context.Background()
	pool := newItemsPool(t)
	table := itemsTable()

	mk := func(k int, amount string) item {
		it := genItems(k, 1)[0]
		it.Amount = amount
		return it
	}
	// Batches run in order against one table; each lists what it writes and what must come
	// back as new.
	steps := []struct {
		name string
		in   []item
		want []string
	}{
		{"all new", []item{mk(1, "10"), mk(2, "20"), mk(3, "30")}, []string{"1:10", "2:20", "3:30"}},
		{"empty", nil, nil},
		{"all known", []item{mk(2, "99"), mk(1, "99")}, nil},
		{"mixed keeps input order", []item{mk(5, "50"), mk(1, "99"), mk(4, "40"), mk(3, "99"), mk(6, "60")}, []string{"5:50", "4:40", "6:60"}},
		{"repeat within batch: first wins", []item{mk(8, "81"), mk(7, "70"), mk(8, "82"), mk(7, "71")}, []string{"8:81", "7:70"}},
		{"numerically equal id is the same key", []item{{Ts: mk(9, "").Ts, TxSig: mk(9, "").TxSig, TxSigIndex: mk(9, "").TxSigIndex, ID: "09", Amount: "1"}, mk(9, "90")}, []string{"09:1"}},
		{"both months", []item{mk(9000, "1"), mk(10, "2")}, []string{"9000:1", "10:2"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			var got []item
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var err error
				got, err = table.Insert(ctx, tx, st.in)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), st.want) {
				t.Errorf("inserted %v, want %v", ids(got), st.want)
			}
		})
	}
	var amounts []string
	rows, err := pool.Query(ctx, `SELECT item_id::text || ':' || amount::text FROM test.items ORDER BY item_id`)
	if err == nil {
		amounts, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:10", "2:20", "3:30", "4:40", "5:50", "6:60", "7:70", "8:81", "9:1", "10:2", "9000:1"}
	if !slices.Equal(amounts, want) {
		t.Errorf("table holds %v, want %v", amounts, want)
	}
}

func TestTableInsertRolledBack(t *testing.T) {
	ctx := context.Background()
	pool := newItemsPool(t)
	table := itemsTable()
	// One session, so both transactions share the staging table.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()

	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := table.Insert(ctx, tx, genItems(0, 3)); err != nil || len(got) != 3 {
		t.Fatalf("insert: %d, %v", len(got), err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Nothing of the rolled-back attempt is left, in the table or in staging.
	var got []item
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		got, err = table.Insert(ctx, tx, genItems(0, 3))
		return err
	})
	if err != nil || len(got) != 3 {
		t.Fatalf("retry: inserted %d, %v; want 3", len(got), err)
	}
	if n, _ := countRows(t, pool); n != 3 {
		t.Errorf("rows = %d, want 3", n)
	}
}

// Each Insert sets a savepoint of the same name and leaves it; a unique violation must roll back
// only the COPY it guarded, never an earlier Insert of the same transaction.
func TestTableInsertsShareATransaction(t *testing.T) {
	ctx := context.Background()
	pool := newItemsPool(t)
	table := itemsTable()
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := table.Insert(ctx, tx, genItems(1, 1))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got [][]item
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, in := range [][]item{
			genItems(10, 2), // new: the fast path
			append(genItems(1, 1), genItems(20, 1)...), // a known key: rolled back to its savepoint, staged
			genItems(30, 1), // new again: the fast path after a rollback
		} {
			ins, err := table.Insert(ctx, tx, in)
			if err != nil {
				return err
			}
			got = append(got, ins)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{2, 1, 1} {
		if len(got[i]) != want {
			t.Errorf("insert %d: %d new, want %d", i, len(got[i]), want)
		}
	}
	if n, _ := countRows(t, pool); n != 5 {
		t.Errorf("rows = %d, want 5 (1, 10, 11, 20, 30)", n)
	}
}

// bigID's String method makes it a fmt.Stringer.
type bigID struct{ n *big.Int }

func (b bigID) String() string { return b.n.String() }

type amount string

func TestTableNumericValues(t *testing.T) {
	ctx := context.Background()
	pool := newItemsPool(t)

	huge, _ := new(big.Int).SetString("-123456789012345678901234567890123456789", 10)
	var num pgtype.Numeric
	if err := num.Scan("98765432109876543210.5"); err != nil {
		t.Fatal(err)
	}
	nilPrice := (*string)(nil)
	price := "7"
	tests := []struct {
		name         string
		id, amt, prc any
		want         string // amount::text || ' ' || coalesce(price::text, 'null')
	}{
		{"string", "1", "1500000", nil, "1500000 null"},
		{"named string", amount("2"), amount("-42"), amount("0"), "-42 0"},
		{"30 digits", "3", "123456789012345678901234567890", "-1", "123456789012345678901234567890 -1"},
		{"ints", int64(4), int(-5), int32(6), "-5 6"},
		{"uints", uint64(5), uint8(7), uint(8), "7 8"},
		{"floats", 6, 1.25, float32(-0.5), "1.25 -0.5"},
		{"pgtype.Numeric", 7, num, pgtype.Numeric{}, "98765432109876543210.5 null"},
		{"stringer", bigID{big.NewInt(8)}, bigID{huge}, &price, "-123456789012345678901234567890123456789 7"},
		{"nil pointer", 9, "1", nilPrice, "1 null"},
	}
	table := ingest.Table[[]any]{
		Name:    "test.items",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "item_id", "amount", "price"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index", "item_id"},
		Row:     func(v []any) []any { return v },
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				got, err := table.Insert(ctx, tx, [][]any{{base.Unix(), tt.name, 0, tt.id, tt.amt, tt.prc}})
				if err == nil && len(got) != 1 {
					t.Errorf("inserted %d rows, want 1", len(got))
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			err = pool.QueryRow(ctx, `SELECT amount::text || ' ' || coalesce(price::text, 'null') FROM test.items WHERE tx_sig = $1`, tt.name).Scan(&got)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("stored %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTableInsertErrors(t *testing.T) {
	ctx := context.Background()
	pool := newItemsPool(t)
	good := itemsTable()
	tests := []struct {
		name  string
		table func() ingest.Table[item]
		want  string
	}{
		{"unqualified name", func() ingest.Table[item] { tb := good; tb.Name = "items"; return tb }, "schema.name"},
		{"missing table", func() ingest.Table[item] { tb := good; tb.Name = "test.nope"; return tb }, "does not exist"},
		{"missing column", func() ingest.Table[item] {
			tb := good
			tb.Columns = append(slices.Clone(tb.Columns[:6]), "nope")
			return tb
		}, `no column "nope"`},
		{"key outside columns", func() ingest.Table[item] { tb := good; tb.Key = []string{"ts", "nope"}; return tb }, "not among Columns"},
		{"no key", func() ingest.Table[item] { tb := good; tb.Key = nil; return tb }, "required"},
		{"short row", func() ingest.Table[item] {
			tb := good
			tb.Row = func(it item) []any { return []any{it.Ts} }
			return tb
		}, "1 values for 7 columns"},
		{"bad numeric value", func() ingest.Table[item] {
			tb := good
			tb.Row = func(it item) []any { return []any{it.Ts, it.TxSig, it.TxSigIndex, struct{}{}, it.Amount, nil, ""} }
			return tb
		}, "encode struct {}"},
		{"not a number", func() ingest.Table[item] {
			tb := good
			tb.Row = func(it item) []any { return []any{it.Ts, it.TxSig, it.TxSigIndex, it.ID, "1.2.3", nil, ""} }
			return tb
		}, "invalid input syntax for type numeric"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := tt.table().Insert(ctx, tx, genItems(0, 2))
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTableTextValues(t *testing.T) {
	ctx := context.Background()
	pool := newItemsPool(t)
	table := itemsTable()
	notes := []string{"tab\there", "line\nbreak", `back\slash`, "cr\rlf", `\N`, "", "ünïcode ✓"}
	recs := genItems(0, len(notes))
	for i, n := range notes {
		recs[i].Note = n
	}
	// Once straight into the table, then through staging (a known key forces that path).
	for _, batch := range [][]item{recs[:3], append([]item{recs[0]}, recs[3:]...)} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := table.Insert(ctx, tx, batch)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := pool.Query(ctx, `SELECT note FROM test.items ORDER BY item_id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, notes) {
		t.Errorf("notes = %q, want %q", got, notes)
	}
}
