package markets_test

import (
	"context"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// newCatalogue is a fresh database with an empty markets table in schema, and the catalogue on it.
func newCatalogue(t *testing.T, schema string) (*pgxpool.Pool, markets.Table) {
	t.Helper()
	pool := pgtest.NewPool(t, pgtest.Server())
	if _, err := pool.Exec(context.Background(), `CREATE SCHEMA `+schema+`; CREATE TABLE `+schema+`.markets (
		symbol text PRIMARY KEY, market_index int NOT NULL, market_type text NOT NULL, market_filter text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pool, markets.In(schema)
}

// TestCatalogue: recorded markets are found, a market recorded again keeps its first entry, and a
// symbol no event named is fault.NotFound.
func TestCatalogue(t *testing.T) {
	ctx := context.Background()
	pool, table := newCatalogue(t, "svc")
	record := func(ms ...events.Market) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]events.Market{}
		for _, m := range ms {
			byName[m.Symbol] = m
		}
		if err := table.Save(ctx, tx, byName); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sol := events.Market{Symbol: "SOL-PERP", Index: 0, Type: events.MarketTypePerp}
	usdc := events.Market{Symbol: "USDC", Index: 0, Type: events.MarketTypeSpot}
	record(sol, usdc)
	record(events.Market{Symbol: "SOL-PERP", Index: 7, Type: events.MarketTypePerp})
	record()

	c := markets.NewCatalogue(pool, "svc")
	for _, want := range []events.Market{sol, usdc, sol} { // the second SOL-PERP from what it has found
		got, err := c.Market(ctx, want.Symbol)
		if err != nil || got != want {
			t.Errorf("Market(%s) = %+v, %v; want %+v", want.Symbol, got, err, want)
		}
	}
	var filter string
	if err := pool.QueryRow(ctx, `SELECT market_filter FROM svc.markets WHERE symbol = 'USDC'`).Scan(&filter); err != nil || filter != usdc.Filter() {
		t.Errorf("USDC's filter %q (%v), want %q", filter, err, usdc.Filter())
	}
	if _, err := c.Market(ctx, "BTC-PERP"); fault.CodeOf(err) != fault.NotFound {
		t.Errorf("an unknown market: %v, want not found", err)
	}
}

// TestConcurrentWritersRecordNewMarketsWithoutDeadlock: two ingest writers record the same new markets
// in opposite orders, each over two statements of one transaction (fills' markets, then funding
// rates'), as a batch whose partitions cross does. Neither may deadlock the other.
func TestConcurrentWritersRecordNewMarketsWithoutDeadlock(t *testing.T) {
	ctx := context.Background()
	pool, table := newCatalogue(t, "race")
	one := func(m events.Market) map[string]events.Market { return map[string]events.Market{m.Symbol: m} }
	sol := events.Market{Symbol: "SOL-PERP", Index: 0, Type: events.MarketTypePerp}
	btc := events.Market{Symbol: "BTC-PERP", Index: 1, Type: events.MarketTypePerp}

	tx1, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback(ctx)
	if err := table.Save(ctx, tx1, one(sol)); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		tx2, err := pool.Begin(ctx)
		if err != nil {
			second <- err
			return
		}
		defer tx2.Rollback(ctx)
		if err := table.Save(ctx, tx2, one(btc)); err != nil {
			second <- err
			return
		}
		if err := table.Save(ctx, tx2, one(sol)); err != nil {
			second <- err
			return
		}
		second <- tx2.Commit(ctx)
	}()
	// The second writer waits on a lock: on the first's SOL-PERP having recorded BTC-PERP, or before
	// recording anything.
	awaitLockWait(t, pool)
	if err := table.Save(ctx, tx1, one(btc)); err != nil {
		t.Fatalf("first writer: %v", err)
	}
	if err := tx1.Commit(ctx); err != nil {
		t.Fatalf("first writer's commit: %v", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second writer: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM race.markets`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d markets (%v), want 2", n, err)
	}
}

// awaitLockWait returns once a backend of pool's database waits on a lock.
func awaitLockWait(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no backend waits on a lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOf: one market per symbol, the first record's, and none for a record without a symbol.
func TestOf(t *testing.T) {
	type stake struct {
		symbol string
		index  int
	}
	got := markets.Of([]stake{{"USDC", 0}, {"", 5}, {"SOL", 1}, {"USDC", 9}}, func(s stake) events.Market {
		return events.Market{Symbol: s.symbol, Index: s.index, Type: events.MarketTypeSpot}
	})
	want := map[string]events.Market{
		"USDC": {Symbol: "USDC", Index: 0, Type: events.MarketTypeSpot},
		"SOL":  {Symbol: "SOL", Index: 1, Type: events.MarketTypeSpot},
	}
	if !maps.Equal(got, want) {
		t.Errorf("Of = %v, want %v", got, want)
	}
}
