package bench_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/stats"
	statspg "github.com/tidemark/tidemark/services/stats/postgres"
	statsmigrations "github.com/tidemark/tidemark/services/stats/postgres/migrations"
	statsservice "github.com/tidemark/tidemark/services/stats/service"
	"github.com/tidemark/tidemark/tools/sim"
)

// statsIngestCase is the stats service's fill ingest: the fills table it writes, its minute and hour
// buckets, its markets and every wallet's monthly maker and taker volume, the simulator's accounts'
// wallets known before the fills arrive, as after their new-user records.
func statsIngestCase() ingestCase {
	table := statspg.FillsTable("stats")
	return ingestCase{
		name: "stats", svc: statsservice.Service(), schema: "stats", table: "fills", columns: table.Columns,
		rows: func(b *testing.B, msgs []events.Message) ([][]any, []int) {
			sink := statspg.NewIngest("stats").Sinks()[statspg.FillsTopicIndex]
			out, of := make([][]any, len(msgs)), make([]int, len(msgs))
			for i, m := range msgs {
				r, err := sink.Decode(ingest.Message{Topic: m.Topic, Key: m.Key, Value: m.Value})
				if err != nil {
					b.Fatalf("decode: %v", err)
				}
				out[i], of[i] = table.Row(r.(stats.Fill)), i
			}
			return out, of
		},
		setup: func(b *testing.B, pool *pgxpool.Pool) {
			var rows [][]any
			for _, a := range sim.New(sim.DefaultConfig()).Accounts() {
				rows = append(rows, []any{a.User, a.Authority})
			}
			if _, err := pool.CopyFrom(context.Background(), pgx.Identifier{"stats", "accounts"}, []string{"account", "authority"},
				pgx.CopyFromRows(rows)); err != nil {
				b.Fatalf("accounts: %v", err)
			}
		},
		empty: "TRUNCATE stats.fills, stats.trade_minutes, stats.trade_hours, stats.volume_deltas, stats.wallet_months, stats.pending_volumes, stats.board_sizes, stats.markets",
	}
}

// statsFloorCase is statsIngestCase with a service whose only sink stores the fills: the consumer's
// own cost (fetching, decoding, committing) against the same COPY, which the stats' narrow rows make
// the larger part of the ingest's.
func statsFloorCase() ingestCase {
	c := statsIngestCase()
	c.name = "stats_floor"
	table := statspg.FillsTable("stats")
	c.svc = kit.Service{Name: "stats", Migrations: statsmigrations.FS, Build: func(kit.Deps) (kit.Parts, error) {
		return kit.Parts{Sinks: []ingest.Sink{ingest.Prepared(events.TopicFills,
			func(e ingest.Event[*events.Fill]) (stats.Fill, error) { return stats.FillOf(e.Record) },
			func(ctx context.Context, tx pgx.Tx, fills []stats.Fill) error {
				_, err := table.Insert(ctx, tx, fills)
				return err
			})}}, nil
	}}
	return c
}

// BenchmarkStatsIngestFills measures the stats service's fill ingest from the broker into its
// aggregates (decode, validate, COPY of the fills, minute and hour buckets, the wallets' monthly
// volumes for the leaderboards, offsets, Kafka commit) with ingest.DefaultWriters writers, against
// as many concurrent raw COPY streams of the same fill rows into the same table, in alternating
// rounds of the same run (see BenchmarkIngestFills). Target: best ingest / best COPY >= 0.8. The
// floor case is the same with a consumer that only stores the fills, for what the aggregates cost.
func BenchmarkStatsIngestFills(b *testing.B) {
	for range b.N {
		msgs := simulatedFills(b, statsIngestFills)
		for _, c := range []ingestCase{statsIngestCase(), statsFloorCase()} {
			b.Run(c.name, func(b *testing.B) { benchIngest(b, c, msgs) })
		}
	}
}

// statsIngestFills makes each stats ingest run last seconds: its rows are small, and at the 300,000
// fills of the other ingest benchmarks a run was short enough for this machine's other tenants and the
// consumer's group join (each round prints its join time) to sway it markedly.
const statsIngestFills = 1_200_000

const (
	statsRows           = 10_000_000
	statsWallets        = 5_000
	statsDatasetVersion = "stats-fills-v4"
)

// statsNow is the stats dataset's clock: its fills fill October 2026 up to it, so the current
// month's leaderboards rank every one of them.
var statsNow = time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC)

// statsDataset makes sure the bench_rest database holds statsRows fills of 5,000 wallets (one account
// each) in the stats schema over the month up to statsNow, and the aggregates the ingest keeps of
// them, generating them in SQL the first time: SOL-PERP, BTC-PERP, ETH-PERP and JUP-PERP, every
// wallet taking, the first 500 also making, settled P&L for each, a state sample per market. The
// aggregates are what the ingest and its fold would have made of those fills.
func statsDataset(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	rows, _ := storedDataset(ctx, b, pool, statsDatasetVersion)
	reuse := rows == statsRows
	if !reuse {
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS stats CASCADE"); err != nil {
			b.Fatal(err)
		}
	}
	// A service built only to migrate.
	startService(b, pool, benchBroker(b), statsservice.Service(), kit.Settings{}, func() time.Time { return statsNow })
	if reuse {
		b.Logf("reusing the %d-fill stats dataset", rows)
		return
	}
	accounts := make([]string, statsWallets)
	for i := range accounts {
		accounts[i] = kittest.Key(20_000 + i)
	}
	month := stats.MonthOf(statsNow.Unix())
	span := statsNow.Unix() - month
	for lo := int64(1); lo <= statsRows; lo += restChunk {
		roomFor(b, "stats fills")
		t0 := time.Now()
		_, err := pool.Exec(ctx, `
			INSERT INTO stats.fills (ts, tx_sig, tx_sig_index, slot, symbol, fill_record_id, taker, maker, quote, base, price, oracle_price)
			SELECT ts, sig, 0, 300000000 + ts * 5 / 2, sym, i, taker, maker, (base::numeric * price / 1000000000)::bigint, base,
			       price, price + (i % 7) * 1000 - 3000
			FROM (
			  SELECT i, encode(sha256(i::text::bytea), 'hex') AS sig, $3::bigint + i * $4::bigint / $5::bigint AS ts,
			         (ARRAY['SOL-PERP','SOL-PERP','BTC-PERP','ETH-PERP','JUP-PERP'])[i % 5 + 1] AS sym,
			         ((ARRAY[150, 150, 60000, 3000, 1])[i % 5 + 1]::bigint * 1000000 + (i % 1000) * 1000) AS price,
			         (1 + i % 50) * 100000000::bigint AS base,
			         ($6::text[])[i * 7919 % $7 + 1] AS taker, ($6::text[])[i * 31 % 500 + 1] AS maker
			  FROM generate_series($1::bigint, $2::bigint) AS i
			) g`, lo, min(lo+restChunk-1, statsRows), month, span, statsRows, accounts, statsWallets)
		if err != nil {
			b.Fatalf("generate stats fills %d..: %v", lo, err)
		}
		b.Logf("generated stats fill rows up to %d (%s)", min(lo+restChunk-1, statsRows), time.Since(t0).Round(time.Millisecond))
	}
	t0 := time.Now()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO stats.accounts SELECT a, a FROM unnest($1::text[]) a`, []any{accounts}},
		{`INSERT INTO stats.markets VALUES ('SOL-PERP', 0, 'perp', 'perp'), ('BTC-PERP', 1, 'perp', 'perp'),
		  ('ETH-PERP', 2, 'perp', 'perp'), ('JUP-PERP', 4, 'perp', 'perp')`, nil},
		// As the ingest folds them: per minute, the last fill in (ts, id) order closing it.
		{`INSERT INTO stats.trade_minutes
		 SELECT a.symbol, a.m, a.fills, a.quote, a.base, a.fh, a.fl, a.oh, a.ol, l.ts, l.fill_record_id, l.slot, l.price, l.oracle_price
		 FROM (SELECT symbol, ts / 60 * 60 AS m, count(*) AS fills, sum(quote) AS quote, sum(base) AS base, max(price) AS fh,
		              min(price) AS fl, max(oracle_price) AS oh, min(oracle_price) AS ol
		       FROM stats.fills GROUP BY 1, 2) a
		 JOIN (SELECT DISTINCT ON (symbol, ts / 60 * 60) symbol, ts / 60 * 60 AS m, ts, fill_record_id, slot, price, oracle_price
		       FROM stats.fills ORDER BY symbol, ts / 60 * 60, ts DESC, fill_record_id DESC) l USING (symbol, m)`, nil},
		{`INSERT INTO stats.trade_hours
		 SELECT a.symbol, a.h, a.fills, a.quote, a.base, a.fh, a.fl, a.oh, a.ol, l.last_ts, l.last_id, l.last_slot, l.close, l.close_oracle
		 FROM (SELECT symbol, ts / 3600 * 3600 AS h, sum(fills) AS fills, sum(quote) AS quote, sum(base) AS base,
		              max(fill_high) AS fh, min(fill_low) AS fl, max(oracle_high) AS oh, min(oracle_low) AS ol
		       FROM stats.trade_minutes GROUP BY 1, 2) a
		 JOIN (SELECT DISTINCT ON (symbol, ts / 3600 * 3600) symbol, ts / 3600 * 3600 AS h, last_ts, last_id, last_slot, close, close_oracle
		       FROM stats.trade_minutes ORDER BY symbol, ts / 3600 * 3600, last_ts DESC, last_id DESC) l USING (symbol, h)`, nil},
		{`INSERT INTO stats.wallet_months (month, authority, maker_volume, taker_volume, pnl)
		 SELECT $1::bigint, w, sum(maker), sum(taker), ((hashtext(w) % 1000000) * 1000)::numeric FROM (
		   SELECT taker AS w, 0::numeric AS maker, quote AS taker FROM stats.fills
		   UNION ALL SELECT maker, quote, 0 FROM stats.fills) x
		 GROUP BY w`, []any{month}},
		// As the fold counts them.
		{`INSERT INTO stats.board_sizes
		 SELECT month, unnest(ARRAY['maker', 'taker', 'volume', 'pnl']), unnest(ARRAY[count(*) FILTER (WHERE maker_volume > 0),
		   count(*) FILTER (WHERE taker_volume > 0), count(*) FILTER (WHERE volume > 0), count(*) FILTER (WHERE pnl <> 0)])
		 FROM stats.wallet_months GROUP BY month`, nil},
		{`INSERT INTO stats.market_states
		 SELECT symbol, market_index, 'perp', $1::bigint, 300000000 + $1::bigint * 5 / 2, close_oracle, close + 1000,
		        '500000000000000', '-499000000000000', '999000000000000', '625000', '-625000', NULL
		 FROM stats.markets m JOIN LATERAL (SELECT close, close_oracle FROM stats.trade_minutes t WHERE t.symbol = m.symbol
		   ORDER BY ts DESC LIMIT 1) t ON true`, []any{statsNow.Unix()}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			b.Fatalf("aggregate the stats dataset: %v\n%s", err, q.sql)
		}
	}
	for _, t := range []string{"fills", "trade_minutes", "trade_hours", "wallet_months"} {
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE stats."+t); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("aggregated the stats dataset (%s)", time.Since(t0).Round(time.Millisecond))
	recordDataset(ctx, b, pool, statsDatasetVersion, statsRows, statsNow)
}

// BenchmarkStatsREST serves GET /stats/markets and a page of the month's volume leaderboard (100
// wallets, the default) over 10 M fills of 5,000 wallets to 16 concurrent keep-alive connections,
// every request its own read (a parameter the route ignores makes every URL distinct, so no two
// requests share one), each against a bare net/http handler answering the same bytes from memory in
// the same run. Target: p99 < 10 ms for both.
func BenchmarkStatsREST(b *testing.B) {
	for range b.N {
		pool := database(b, "bench_rest", false)
		statsDataset(b, pool)
		svc := startService(b, pool, benchBroker(b), statsservice.Service(), kit.Settings{}, func() time.Time { return statsNow })
		runService(b, svc)
		srv := httptest.NewServer(svc.Handler())
		defer srv.Close()
		var seq atomic.Int64
		unique := func(path string) func(int) string {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			return func(int) string { return srv.URL + path + sep + "n=" + strconv.FormatInt(seq.Add(1), 10) }
		}
		bareOf := func(path string) *httptest.Server {
			body := get(b, srv.URL+path)
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			b.Cleanup(s.Close)
			return s
		}
		const markets, board = "/stats/markets", "/stats/leaderboard?sort=volume"
		bareMarkets, bareBoard := bareOf(markets), bareOf(board)
		runs := compareREST(b, "", []restScenario{
			{name: "bare handler, the same market summaries from memory", url: func(int) string { return bareMarkets.URL + "/" }},
			{name: "/stats/markets, every request its own read", url: unique(markets)},
			{name: "bare handler, the same leaderboard page from memory", url: func(int) string { return bareBoard.URL + "/" }},
			{name: "volume leaderboard, first page of 100, every request its own read", url: unique(board)},
		}, nil)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(runs[1].best.RPS/runs[0].best.RPS, "markets_ratio")
		b.ReportMetric(ms(runs[1].worstP99), "markets_p99_ms")
		b.ReportMetric(ms(runs[1].bestP99), "markets_best_p99_ms")
		b.ReportMetric(runs[3].best.RPS/runs[2].best.RPS, "leaderboard_ratio")
		b.ReportMetric(ms(runs[3].worstP99), "leaderboard_p99_ms")
		b.ReportMetric(ms(runs[3].bestP99), "leaderboard_best_p99_ms")
		// A neighbour's burst moves the bare handler's p99 as much as the service's: the best and the
		// worst round are both given, each beside the bare handler's of the same round's kind.
		b.Logf("RESULT stats: over %d fills of %d wallets, %d connections, every request its own read: /stats/markets %.0f req/s "+
			"(%.2f of the bare handler's %.0f), p99 %s best round, %s worst (bare %s, %s); volume leaderboard page %.0f req/s "+
			"(%.2f of %.0f), p99 %s best round, %s worst (bare %s, %s); target p99 < 10 ms", statsRows, statsWallets, restConcurrency,
			runs[1].best.RPS, runs[1].best.RPS/runs[0].best.RPS, runs[0].best.RPS, runs[1].bestP99, runs[1].worstP99, runs[0].bestP99, runs[0].worstP99,
			runs[3].best.RPS, runs[3].best.RPS/runs[2].best.RPS, runs[2].best.RPS, runs[3].bestP99, runs[3].worstP99, runs[2].bestP99, runs[2].worstP99)
	}
}
