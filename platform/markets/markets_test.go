package markets_test

import (
	"context"
	"os"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

var pgServer *pglocal.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pgServer)) }

// TestCatalogue: recorded markets are found, a market recorded again keeps its first entry, and a
// symbol no event named is fault.NotFound.
func TestCatalogue(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgServer)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA svc; CREATE TABLE svc.markets (symbol text PRIMARY KEY,
		market_index int NOT NULL, market_type text NOT NULL, market_filter text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	table := markets.In("svc")
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
