package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/market"
	marketsvc "github.com/tidemark/tidemark/services/market/service"
	"github.com/tidemark/tidemark/tools/loadgen"
)

const (
	hotMarkets        = 10
	hotDays           = 31
	hotDatasetVersion = "candles-v2" // v2: every price in whole millionths, as the ingest stores them
)

// hotDataset makes sure the bench_candles database holds the candles of hotMarkets markets traded
// every minute over the hotDays days before its fixed clock, at every resolution, as the ingest stores
// them (prices in whole millionths, volumes in protocol units), and returns that clock. The 1-minute
// buckets are generated, the wider ones aggregated from them.
func hotDataset(b *testing.B, pool *pgxpool.Pool) time.Time {
	b.Helper()
	ctx := context.Background()
	marketService(b, pool, time.Now) // migrates the schema
	if rows, at := storedDataset(ctx, b, pool, hotDatasetVersion); rows > 0 {
		b.Logf("reusing the %d-candle dataset", rows)
		return at
	}
	now := time.Now().Truncate(time.Hour)
	start := now.Unix() - hotDays*86400
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{"TRUNCATE market.candles, market.markets", nil},
		{`INSERT INTO market.markets SELECT 'M' || i || '-PERP', i, 'perp', 'perp' FROM generate_series(0, $1 - 1) AS i`, []any{hotMarkets}},
		// One bucket a minute per market: prices of whole millionths around 150 (numeric, so that the
		// offsets stay whole millionths), three fills a minute (first and last ids), sizes of 0.1 to 5
		// in 1e9 units, quote at the price in 1e6 units.
		{`INSERT INTO market.candles
		SELECT 'M' || m || '-PERP', '1', ts, ts + 1, id, p::float8, (p - 0.01)::float8, (p + 0.05)::float8, (p - 0.04)::float8,
		       (p + 0.03)::float8, (p - 0.02)::float8, ts + 58, id + 2, (p + 0.01)::float8, (p - 0.005)::float8,
		       (base * p)::bigint / 1000, base
		FROM (
		  SELECT m, ts, (ts / 60) * 3 AS id,
		         round((150 + 10 * sin(ts / 7200.0 + m) + ((ts * 7919 + m * 104729) % 1000) / 1000.0)::numeric, 6) AS p,
		         (1 + (ts * 31 + m) % 50) * 100000000::bigint AS base
		  FROM generate_series(0, $1 - 1) AS m, generate_series($2::bigint, $3::bigint - 60, 60) AS ts
		) g`, []any{hotMarkets, start, now.Unix()}},
	} {
		if _, err := pool.Exec(ctx, st.sql, st.args...); err != nil {
			b.Fatalf("generate candles: %v", err)
		}
	}
	// Every wider resolution aggregated from the minutes, as the ingest folds the same fills into each.
	for _, r := range []struct{ res, bucket string }{
		{"5", "ts / 300 * 300"}, {"15", "ts / 900 * 900"}, {"60", "ts / 3600 * 3600"}, {"240", "ts / 14400 * 14400"},
		{"D", "ts / 86400 * 86400"},
		{"W", "extract(epoch FROM date_trunc('week', to_timestamp(ts) AT TIME ZONE 'UTC'))::bigint"},
		{"M", "extract(epoch FROM date_trunc('month', to_timestamp(ts) AT TIME ZONE 'UTC'))::bigint"},
	} {
		_, err := pool.Exec(ctx, `INSERT INTO market.candles
			SELECT symbol, $1, b, min(first_ts), (array_agg(first_id ORDER BY ts))[1],
			       (array_agg(fill_first ORDER BY ts))[1], (array_agg(oracle_first ORDER BY ts))[1],
			       max(fill_high), min(fill_low), max(oracle_high), min(oracle_low), max(last_ts), (array_agg(last_id ORDER BY ts DESC))[1],
			       (array_agg(fill_close ORDER BY ts DESC))[1], (array_agg(oracle_close ORDER BY ts DESC))[1],
			       sum(quote_volume), sum(base_volume)
			FROM (SELECT *, `+r.bucket+` AS b FROM market.candles WHERE resolution = '1') m
			GROUP BY symbol, b`, r.res)
		if err != nil {
			b.Fatalf("aggregate %s candles: %v", r.res, err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE market.candles"); err != nil {
		b.Fatal(err)
	}
	var rows int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM market.candles").Scan(&rows); err != nil {
		b.Fatal(err)
	}
	recordDataset(ctx, b, pool, hotDatasetVersion, rows, now)
	return now
}

// hotReplica starts and runs the market service on pool with cfg and its own registry, on the
// dataset's clock now, and returns it with the registry.
func hotReplica(b *testing.B, pool *pgxpool.Pool, broker *kafka.Embedded, cfg marketsvc.Config, now time.Time) (*kit.Instance, *prometheus.Registry, context.CancelFunc) {
	b.Helper()
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	inst, err := kit.Start(ctx, marketsvc.Service(cfg), kit.Runtime{
		Pool: pool, Kafka: kafka.Config{Brokers: broker.Brokers(), ClientID: "bench"},
		Logger: slog.New(slog.DiscardHandler), Registry: reg, PageKey: benchPageKey,
		Now: func() time.Time { return now },
	}, kit.Settings{})
	if err != nil {
		cancel()
		b.Fatalf("market service: %v", err)
	}
	if err := kafka.EnsureTopics(ctx, broker.Brokers(), 3, inst.Topics()...); err != nil {
		cancel()
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("market service: %v", err)
		}
	}
	return inst, reg, stop
}

// gauge is the value of the market service's gauge name in reg (0 before it is set).
func gauge(b *testing.B, reg prometheus.Gatherer, name string) float64 {
	b.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// awaitLoad waits until the replica's hot candles are loaded and returns how long the load took.
func awaitLoad(b *testing.B, reg prometheus.Gatherer) time.Duration {
	b.Helper()
	var took float64
	waitFor(b, 10*time.Minute, "the hot candles to load", func() bool {
		took = gauge(b, reg, "tidemark_market_hot_load_seconds")
		return took > 0
	})
	return time.Duration(took * float64(time.Second))
}

// spreadOf is best, median and spread (max/min) of xs; best is the largest unless lowIsBest.
func spreadOf(xs []float64, lowIsBest bool) (best, median, spread float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	best = s[len(s)-1]
	if lowIsBest {
		best = s[0]
	}
	return best, s[len(s)/2], s[len(s)-1] / s[0]
}

// BenchmarkCandlesHot serves 1,000 one-minute candles, every window different, to 16 connections:
// within the hot range (from memory) and past it (from Postgres), against a bare net/http handler
// writing the same 1,000 candles pre-encoded, the three alternating for restRounds rounds in one run.
// Targets (hot): p99 < 10 ms and >= 0.25 x the bare handler. It also measures the memory the default
// hot range takes per market traded every minute, and the load at start of hotMarkets markets with
// hotDays days of candles, with the default hot range and with every resolution's at hotDays days.
func BenchmarkCandlesHot(b *testing.B) {
	for range b.N {
		pool := database(b, "bench_candles", false)
		now := hotDataset(b, pool)
		broker := benchBroker(b)

		// Load at start, each round a new replica on the same database.
		var loadDefault, loadAll, perMarket []float64
		var perBucket float64
		all := market.HotDays{}
		for _, r := range market.Resolutions() {
			all[r] = hotDays
		}
		for round := range restRounds {
			for _, c := range []struct {
				name string
				days market.HotDays
				into *[]float64
			}{{"the default hot range", nil, &loadDefault}, {fmt.Sprintf("%d days of every resolution", hotDays), all, &loadAll}} {
				collect()
				_, reg, stop := hotReplica(b, pool, broker, marketsvc.Config{HotDays: c.days}, now)
				took := awaitLoad(b, reg)
				*c.into = append(*c.into, took.Seconds()*1000)
				if c.days == nil {
					bytes := gauge(b, reg, "tidemark_market_hot_bytes")
					perMarket = append(perMarket, bytes/hotMarkets)
					perBucket = bytes / gauge(b, reg, "tidemark_market_hot_buckets")
				}
				stop()
				b.Logf("round %d: load of %d markets x %d days, %s: %s", round, hotMarkets, hotDays, c.name, took.Round(time.Millisecond))
			}
		}

		inst, reg, stop := hotReplica(b, pool, broker, marketsvc.Config{}, now)
		defer stop()
		awaitLoad(b, reg)
		srv := httptest.NewServer(inst.Handler())
		defer srv.Close()
		newest := get(b, srv.URL+"/market/M0-PERP/candles/1?limit=1000")
		bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(newest)
		}))
		defer bare.Close()

		// The hot range of 1-minute candles is 3 days by default: the 1000-candle windows ending in it
		// start from its first 3,300 minutes on. Past it, windows end 4 to 30 days back.
		var seq atomic.Int64
		hotStart, _ := market.NewHot(market.DefaultHotDays, func() time.Time { return now }).Start("1")
		hotURL := func(int) string {
			n := seq.Add(1)
			return fmt.Sprintf("%s/market/M%d-PERP/candles/1?limit=1000&startTs=%d", srv.URL, n%hotMarkets, hotStart+999*60+(n%3300)*60)
		}
		coldURL := func(int) string {
			n := seq.Add(1)
			return fmt.Sprintf("%s/market/M%d-PERP/candles/1?limit=1000&startTs=%d", srv.URL, n%hotMarkets, now.Unix()-4*86400-(n%36000)*60)
		}
		// A replica keeping no candle JSON writes every answer from the columns: what a window costs
		// the first time it is read, or after its candles changed.
		plain, plainReg, stopPlain := hotReplica(b, pool, broker, marketsvc.Config{HotText: -1}, now)
		defer stopPlain()
		awaitLoad(b, plainReg)
		plainSrv := httptest.NewServer(plain.Handler())
		defer plainSrv.Close()
		plainURL := func(i int) string { return strings.Replace(hotURL(i), srv.URL, plainSrv.URL, 1) }
		// Every hot window must be answered from memory, and every cold one by Postgres: check both
		// ends of each range once; both replicas answer the same bytes.
		for _, u := range []string{hotURL(0), coldURL(0)} {
			if got, plainGot := get(b, u), get(b, strings.Replace(u, srv.URL, plainSrv.URL, 1)); !bytes.Equal(got, plainGot) {
				b.Fatalf("%s: the replica keeping candle JSON and the one keeping none answer differently", u)
			}
		}
		scenarios := []restScenario{
			{name: "bare handler, the same 1000 candles pre-encoded", url: func(int) string { return bare.URL + "/" }},
			{name: "candles 1m, limit 1000, every window different, hot range", url: hotURL},
			{name: "candles 1m, limit 1000, every window different, past the hot range", url: coldURL},
			{name: "the same in the hot range, no candle JSON kept (HotText -1)", url: plainURL},
		}
		results := make([][]loadgen.Result, len(scenarios))
		memory0 := counter(b, reg, "memory")
		for round := range restRounds {
			for i, sc := range scenarios {
				results[i] = append(results[i], runREST(b, fmt.Sprintf("round %d: ", round), sc, nil))
			}
		}
		oneClient := runREST(b, "", restScenario{name: "candles 1m, limit 1000, every window different, hot range, 1 client", url: hotURL, clients: 1}, nil)
		fromMemory := counter(b, reg, "memory") - memory0
		textKept := gauge(b, reg, "tidemark_market_hot_text_bytes")
		var hotRequests int
		for _, r := range results[1] {
			hotRequests += r.Requests
		}
		if fromMemory < float64(hotRequests) {
			b.Fatalf("%v answers from memory, fewer than the %d hot requests", fromMemory, hotRequests)
		}

		var ratio, hotRPS, hotP99, coldP50, coldP99, plainRatio, plainP99 []float64
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		for round := range restRounds {
			plainRatio = append(plainRatio, results[3][round].RPS/results[0][round].RPS)
			plainP99 = append(plainP99, ms(results[3][round].P99))
			ratio = append(ratio, results[1][round].RPS/results[0][round].RPS)
			hotRPS = append(hotRPS, results[1][round].RPS)
			hotP99 = append(hotP99, ms(results[1][round].P99))
			coldP50 = append(coldP50, ms(results[2][round].P50))
			coldP99 = append(coldP99, ms(results[2][round].P99))
		}
		rb, rm, rs := spreadOf(ratio, false)
		pb, pm, ps := spreadOf(hotP99, true)
		qb, qm, qs := spreadOf(hotRPS, false)
		c50b, c50m, c50s := spreadOf(coldP50, true)
		c99b, c99m, c99s := spreadOf(coldP99, true)
		mb, mm, msp := spreadOf(perMarket, true)
		lb, lm, ls := spreadOf(loadDefault, true)
		ab, am, as := spreadOf(loadAll, true)
		b.ReportMetric(rm, "hot_ratio")
		b.ReportMetric(qm, "hot_req/s")
		b.ReportMetric(pm, "hot_p99_ms")
		b.ReportMetric(c50m, "cold_p50_ms")
		b.ReportMetric(c99m, "cold_p99_ms")
		b.ReportMetric(mm/1024, "hot_KiB/market")
		b.ReportMetric(lm, "load_ms")
		b.Logf("hot, 1 client: p50 %s, p99 %s", oneClient.P50, oneClient.P99)
		b.Logf("RESULT candles: 1000 1-minute candles, every window different, 16 connections, %d rounds (best / median / spread):", restRounds)
		b.Logf("RESULT   hot range: %s of the bare handler (%.2f / %.2f / %.2fx; target >= 0.25), %.0f / %.0f req/s / %.2fx, p99 %.2f / %.2f ms / %.2fx (target < 10 ms)",
			atLeast(rm, 0.25), rb, rm, rs, qb, qm, qs, pb, pm, ps)
		nb, nm, ns := spreadOf(plainRatio, false)
		npb, npm, nps := spreadOf(plainP99, true)
		b.Logf("RESULT   hot range with no candle JSON kept (every answer written from the columns): %.2f / %.2f / %.2fx of the bare handler, p99 %.2f / %.2f ms / %.2fx",
			nb, nm, ns, npb, npm, nps)
		b.Logf("RESULT   candle JSON kept after the runs: %.1f MiB for the %d markets read (TIDEMARK_MARKET_HOT_TEXT_MIB, default %d MiB)",
			textKept/(1<<20), hotMarkets, market.DefaultTextBudget>>20)
		b.Logf("RESULT   past the hot range (Postgres): p50 %.2f / %.2f ms / %.2fx, p99 %.2f / %.2f ms / %.2fx",
			c50b, c50m, c50s, c99b, c99m, c99s)
		b.Logf("RESULT   memory per market traded every minute over the %d days, default hot range %v: %.0f / %.0f KiB / %.2fx",
			hotDays,
			market.DefaultHotDays.Strings(), mb/1024, mm/1024, msp)
		// A market traded every minute for longer than every default range holds each range whole.
		var full float64
		for r, d := range market.DefaultHotDays {
			switch r {
			case "W":
				full += float64(d) / 7
			case "M":
				full += float64(d) / 30.44
			default:
				width := market.Resolution(r).Step(0, 1)
				full += float64(d) * 86400 / float64(width)
			}
		}
		b.Logf("RESULT   that is %.0f bytes a bucket; a market traded every minute for %d days or more: %.0f buckets, %.0f KiB",
			perBucket, slices.Max(slices.Collect(maps.Values(market.DefaultHotDays))), full, full*perBucket/1024)
		b.Logf("RESULT   load at start, %d markets x %d days: default hot range %.0f / %.0f ms / %.2fx; every resolution %d days %.0f / %.0f ms / %.2fx",
			hotMarkets, hotDays, lb, lm, ls, hotDays, ab, am, as)
	}
}

// counter is the market service's count of candle answers from source in reg.
func counter(b *testing.B, reg prometheus.Gatherer, source string) float64 {
	b.Helper()
	return kittest.Metric(b, reg, "tidemark_market_candle_answers_total", map[string]string{"source": source})
}
