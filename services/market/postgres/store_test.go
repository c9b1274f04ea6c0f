package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/market/postgres"
)

// TestRollingPagesKeepEveryRecord reads rolling pages whose records differ in size by three orders of
// magnitude, across two month partitions and after a cursor: every record must come back as stored,
// however the page's records share memory.
func TestRollingPagesKeepEveryRecord(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgServer)
	if err := pg.Migrate(ctx, pool, "market", postgres.Migrations()); err != nil {
		t.Fatal(err)
	}
	err := pg.EnsureMonthlyPartitions(ctx, pool, "market.fills", time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
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
		_, err := pool.Exec(ctx, `INSERT INTO market.fills (ts, tx_sig, tx_sig_index, slot, symbol, market_index, market_type,
			fill_record_id, taker, maker, record) VALUES ($1, $2, 0, 0, 'SOL-PERP', 0, 'perp', $3, 't', 'm', $4)`,
			start+int64(i)*3600, sig, i, rec)
		if err != nil {
			t.Fatal(err)
		}
	}
	s := postgres.NewStore(pool, "market")
	q := market.RollingQuery{Series: market.Trades, Symbol: "SOL-PERP", Since: start - 86400, Until: start + 61*3600, Limit: 21}
	seen := 0
	for page := 0; ; page++ {
		rows, err := s.Rolling(ctx, q)
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
		if len(rows) < q.Limit {
			break
		}
		// The handler keeps one row less than it asks for, and continues after the last one it keeps.
		q.After = &rows[q.Limit-2].Cursor
		seen--
	}
	if seen != 60 {
		t.Fatalf("%d records read, want 60", seen)
	}
}
