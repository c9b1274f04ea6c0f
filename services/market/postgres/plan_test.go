package postgres_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/market/postgres"
)

var pgServer *pglocal.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pgServer)) }

// planNode is the part of an EXPLAIN (FORMAT JSON) node the plan checks read.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

// walk calls f for n and every node under it.
func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// TestExportPlansStreamInKeyOrder checks that every export reads only the partitions of its range,
// each through an index in (ts, tx_sig, tx_sig_index) order, appended month after month: no sort, so
// rows stream from the first and nothing is held back, whatever share of the table the range is.
func TestExportPlansStreamInKeyOrder(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgServer)
	if err := pg.Migrate(ctx, pool, "market", postgres.Migrations()); err != nil {
		t.Fatal(err)
	}
	for _, tb := range postgres.Tables("market") {
		err := pg.EnsureMonthlyPartitions(ctx, pool, tb, time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
	}
	// Half a year of fills of two markets, one a minute, and hourly funding rates: with a third of
	// the rows, one market's export is where a sort looks cheapest to the planner.
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, sql := range []string{
		`INSERT INTO market.fills SELECT $1 + g*60, 'sig' || g, 0, g, CASE WHEN g % 3 = 0 THEN 'SOL-PERP' ELSE 'BTC-PERP' END,
			0, 'perp', g, 'taker', 'maker', '{"ts":0}' FROM generate_series(0, 260000) g`,
		`INSERT INTO market.funding_rates SELECT $1 + g*3600, 'sig' || g, 0, g, CASE WHEN g % 2 = 0 THEN 'SOL-PERP' ELSE 'BTC-PERP' END,
			0, g::text, '{"ts":0}' FROM generate_series(0, 4400) g`,
	} {
		if _, err := pool.Exec(ctx, sql, start); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "ANALYZE market.fills, market.funding_rates"); err != nil {
		t.Fatal(err)
	}
	month := func(y, m int) int64 { return time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC).Unix() }
	e := postgres.NewExporter(pool, "market", 1)
	cases := []struct {
		name       string
		q          market.ExportQuery
		partitions int // scanned after pruning
	}{
		{"every fill of five months", market.ExportQuery{Series: market.Trades, From: month(2026, 7), To: month(2026, 12) - 1}, 5},
		{"one market over five months", market.ExportQuery{Series: market.Trades, Symbol: "SOL-PERP", From: month(2026, 7), To: month(2026, 12) - 1}, 5},
		{"one market, part of a month", market.ExportQuery{Series: market.Trades, Symbol: "SOL-PERP", From: month(2026, 8) + 86400, To: month(2026, 8) + 20*86400}, 1},
		{"a range on a month's bounds", market.ExportQuery{Series: market.Trades, From: month(2026, 8) - 1, To: month(2026, 9)}, 3},
		{"from 1970: months without partitions", market.ExportQuery{Series: market.Trades, From: 0, To: month(2022, 3) - 1}, 2},
		{"funding rates of one market", market.ExportQuery{Series: market.FundingRates, Symbol: "SOL-PERP", From: month(2026, 6), To: month(2026, 12)}, 7},
		{"every funding rate", market.ExportQuery{Series: market.FundingRates, From: month(2026, 6), To: month(2026, 11)}, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := e.ExplainExport(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			var plans []struct {
				Plan planNode `json:"Plan"`
			}
			if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
				t.Fatalf("plan %s: %v", raw, err)
			}
			root := plans[0].Plan
			scans := 0
			root.walk(func(n planNode) {
				switch n.Type {
				case "Index Scan", "Index Only Scan":
					scans++
				case "Append", "Merge Append":
				default:
					t.Errorf("%s node in the plan (want an ordered append of index scans):\n%s", n.Type, raw)
				}
			})
			if scans != c.partitions {
				t.Errorf("%d partitions scanned, want %d:\n%s", scans, c.partitions, raw)
			}
			if c.partitions > 1 && root.Type != "Append" {
				t.Errorf("root %s, want the partitions appended in order:\n%s", root.Type, raw)
			}
		})
	}
}

// TestExportOfEveryMarket checks which series an export without a market reads: trades and funding
// rates (their whole tables, as TestExportPlansStreamInKeyOrder plans them) and no other, since the
// rest share a table with another series or are not exported so.
func TestExportOfEveryMarket(t *testing.T) {
	e := postgres.NewExporter(pgtest.NewPool(t, pgServer), "market", 1)
	for _, s := range []market.Series{market.Predictions, market.InsuranceFund, market.InsuranceFundStake,
		market.Swaps, market.Deposits, market.Rewards} {
		t.Run(string(s), func(t *testing.T) {
			// The statement is refused before any connection is made.
			_, err := e.ExplainExport(context.Background(), market.ExportQuery{Series: s, From: 0, To: 1})
			if err == nil || !strings.Contains(err.Error(), "exported one market at a time") {
				t.Fatalf("export of every market's %s: %v, want it refused", s, err)
			}
		})
	}
}
