package series

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// eventsTable is an event table as the series read them: the key, a scope column and the record.
var eventsTable = fstest.MapFS{"001_events.sql": {Data: []byte(`
CREATE TABLE events (
	ts bigint NOT NULL,
	tx_sig text NOT NULL,
	tx_sig_index int NOT NULL,
	scope text NOT NULL,
	record json NOT NULL,
	PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX events_scope_key ON events (scope, ts, tx_sig, tx_sig_index);`)}}

// TestRollingPagesKeepEveryRecord reads rolling pages whose records differ in size by three orders of
// magnitude, across two month partitions and after a cursor: every record must come back as stored,
// however the page's records share memory.
func TestRollingPagesKeepEveryRecord(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	if err := pg.Migrate(ctx, pool, "svc", eventsTable); err != nil {
		t.Fatal(err)
	}
	err := pg.EnsureMonthlyPartitions(ctx, pool, "svc.events", time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	// 60 fills an hour apart around the October/November boundary, the first ones tiny and later ones
	// up to ~6 KB, so that chunks sized on a page's first record overflow.
	start := time.Date(2026, 10, 30, 12, 0, 0, 0, time.UTC).Unix()
	want := map[string]string{}
	for i := range 60 {
		sig := fmt.Sprintf("sig%03d", i)
		rec := fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", (i*i*i)%6000))
		want[sig] = rec
		_, err := pool.Exec(ctx, `INSERT INTO svc.events (ts, tx_sig, tx_sig_index, scope, record) VALUES ($1, $2, 0, 'a', $3)`,
			start+int64(i)*3600, sig, rec)
		if err != nil {
			t.Fatal(err)
		}
	}
	s := newStore(pool)
	c, err := compile(Series{Name: "events", Table: "events", Path: "/x/{scope}/events", Where: []string{"scope = @scope"},
		Record: LayoutOf[events.Fill]()}, "svc")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 21
	var after *Cursor
	seen := 0
	for page := 0; ; page++ {
		rows, err := s.rolling(ctx, c, []any{"a"}, start-86400, start+61*3600, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			if string(r.Record) != want[r.TxSig] {
				t.Fatalf("page %d row %d (%s): record of %d bytes differs from the stored one of %d", page, i, r.TxSig, len(r.Record), len(want[r.TxSig]))
			}
			if want := fmt.Sprintf("sig%03d", 59-seen); r.TxSig != want {
				t.Fatalf("page %d row %d: %s, want %s (newest first)", page, i, r.TxSig, want)
			}
			seen++
		}
		if len(rows) < limit {
			break
		}
		// The handler keeps one row less than it asks for, and continues after the last one it keeps.
		after = &rows[limit-2].Cursor
		seen--
	}
	if seen != 60 {
		t.Fatalf("%d records read, want 60", seen)
	}
}
