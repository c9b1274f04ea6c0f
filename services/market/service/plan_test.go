package service_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/platform/series"
	"github.com/tidemark/tidemark/services/market/postgres"
	"github.com/tidemark/tidemark/services/market/service"
)

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
	pool := pgtest.NewPool(t, pgtest.Server())
	// The schema and its partitions, made by the kit; the service never runs.
	if _, err := kit.Start(ctx, service.Service(service.Config{}), kit.Runtime{Pool: pool, Kafka: kafka.Config{Brokers: []string{"127.0.0.1:1"}},
		Now: func() time.Time { return now }}, kit.Settings{}); err != nil {
		t.Fatal(err)
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
	set, err := series.New(pool, "market", service.Series(postgres.NewStore(pool, "market")), series.ExportConfig{Concurrency: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	accounts := []string{key(2), key(3)}
	cases := []struct {
		name, fileType, market string
		from, to               int64
		partitions             int // scanned after pruning
	}{
		{"one market over five months", "market-trades", "SOL-PERP", month(2026, 7), month(2026, 12) - 1, 5},
		{"one market, part of a month", "market-trades", "SOL-PERP", month(2026, 8) + 86400, month(2026, 8) + 20*86400, 1},
		{"a range on a month's bounds", "market-trades", "BTC-PERP", month(2026, 8) - 1, month(2026, 9), 3},
		{"from 1970: months without partitions", "market-trades", "SOL-PERP", 0, month(2022, 3) - 1, 2},
		{"funding rates of one market", "funding-rates", "SOL-PERP", month(2026, 6), month(2026, 12), 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := set.Explain(ctx, c.fileType, c.from, c.to, accounts, c.market)
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
