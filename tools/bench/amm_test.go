package bench_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/amm"
	ammpg "github.com/tidemark/tidemark/services/amm/postgres"
	ammsvc "github.com/tidemark/tidemark/services/amm/service"
)

// The AMM benchmarks' data: 30 days of per-slot states (one every 400 ms, as the chain makes slots)
// of two perp markets, made here rather than by the simulator, whose states come every 30 seconds.
const (
	ammSlotMillis  = 400
	ammIngestRound = 2
)

var ammDaysFlag = flag.Int("bench.ammdays", 30, "days of per-slot states the AMM benchmarks make (30 for the figures; fewer to try them)")

// ammDays and ammStatesPer (per market) are the AMM benchmarks' span.
var ammDays, ammStatesPer int64

func ammSpan() {
	ammDays = int64(*ammDaysFlag)
	ammStatesPer = ammDays * 86400 * 1000 / ammSlotMillis
}

// ammMarkets are the benchmarks' markets: index, symbol, starting oracle price (quote units) and
// typical AMM position (base units).
var ammMarkets = []struct {
	index  int
	symbol string
	price  float64
	base   float64
}{{0, "SOL-PERP", 150, 40_000}, {1, "BTC-PERP", 90_000, 12}}

// ammStates calls fn with the states of market m in slot order, from ammStart: a seeded random walk
// of the oracle (about 0.02% a slot), a mark around it, bid and ask spread around the mark by spreads
// that widen on the side the premium leans to, an AMM position and open interest that drift. The
// same m gives the same states in every run.
func ammStates(m int, start int64, fn func(*events.MarketState) error) error {
	spec := ammMarkets[m]
	rng := rand.New(rand.NewPCG(uint64(m)+1, 42))
	oracle, premium, position, oi := spec.price, 0.0, spec.base*0.1, spec.base*3
	for i := range int64(ammStatesPer) {
		ms := start*1000 + i*ammSlotMillis
		oracle *= 1 + rng.NormFloat64()*0.0002
		premium = premium*0.999 + rng.NormFloat64()*0.00002
		position += rng.NormFloat64() * spec.base * 0.001
		oi = math.Max(spec.base, oi+rng.NormFloat64()*spec.base*0.002)
		mark := oracle * (1 + premium)
		long := 250 + math.Max(0, premium)*1e6
		short := 250 + math.Max(0, -premium)*1e6
		r := &events.MarketState{
			Ts: ms / 1000, Slot: 300_000_000 + (start-1_700_000_000)*5/2 + i, MarketIndex: spec.index,
			MarketType: events.MarketTypePerp, Symbol: spec.symbol,
			OraclePrice:            events.NewAmount(int64(oracle * 1e6)),
			MarkPrice:              events.NewAmount(int64(mark * 1e6)),
			BidPrice:               events.NewAmount(int64(mark * (1 - short/1e6) * 1e6)),
			AskPrice:               events.NewAmount(int64(mark * (1 + long/1e6) * 1e6)),
			LongSpread:             events.NewAmount(int64(long)),
			ShortSpread:            events.NewAmount(int64(short)),
			BaseAssetAmountWithAmm: events.NewAmount(int64(position * 1e9)),
			BaseAssetAmountLong:    events.NewAmount(int64((oi + position) / 2 * 1e9)),
			BaseAssetAmountShort:   events.NewAmount(-int64((oi - position) / 2 * 1e9)),
			OpenInterest:           events.NewAmount(int64(oi * 1e9)),
			FundingRateLong:        events.NewAmount(int64(premium * 1e9)),
			FundingRateShort:       events.NewAmount(int64(premium * 1e9)),
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// ammStart is the first second of the benchmarks' 30 days: they end at the current hour, so that
// every state is within the raw retention and has its day's partition.
func ammStart(now time.Time) int64 { return now.Truncate(time.Hour).Unix() - ammDays*86400 }

// BenchmarkAMMIngest measures the amm service's ingest of 30 days of per-slot states of two markets
// (12.96 M states) from the embedded broker: decode, validate, COPY into the day's raw partition,
// fold into the 20-second rollup, offsets, Kafka commit, with ingest.DefaultWriters writers; against
// as many concurrent raw COPY streams of the same rows into the same table, each stream the rows its
// writer writes, in alternating rounds of the same run, the CPUs shared or split as for
// BenchmarkIngestFills. The messages are produced once, lz4 compressed (30 days of JSON would not fit
// the embedded broker's memory otherwise), before any round: the figure is the consumer's. Target:
// best ingest / best COPY >= 0.8.
func BenchmarkAMMIngest(b *testing.B) {
	ammSpan()
	for range b.N {
		ctx := context.Background()
		now := time.Now()
		start := ammStart(now)
		total := int(ammStatesPer) * len(ammMarkets)
		w := *ingestWriters
		pool := database(b, "bench_amm_ingest", true)
		broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 3})
		if err != nil {
			b.Fatal(err)
		}
		defer broker.Close()
		svc := ammsvc.Service(ammsvc.Config{})
		startService(b, pool, broker, svc, kit.Settings{}, time.Now) // migrates and makes the partitions

		// Which writer each market's rows go to: the partition of its key, as the consumer assigns it.
		var hash kafkago.Hash
		writerOf := make([]int, len(ammMarkets))
		for m, spec := range ammMarkets {
			p := hash.Balance(kafkago.Message{Key: []byte(strconv.Itoa(spec.index))}, topicPartitions...)
			writerOf[m] = ingest.WriterOf(p, w)
		}
		b.Logf("%d states (%d markets x %d days at %d ms); markets on writers %v", total, len(ammMarkets), ammDays, ammSlotMillis, writerOf)

		t0 := time.Now()
		kc := kafka.Config{Brokers: broker.Brokers()}
		wr := kc.NewWriter("")
		wr.BatchSize, wr.BatchTimeout, wr.Compression = 10000, 50*time.Millisecond, kafkago.Lz4
		batch := make([]events.Message, 0, 20000)
		flush := func() error {
			err := (kafka.Producer{W: wr}).Write(ctx, batch...)
			batch = batch[:0]
			return err
		}
		for m := range ammMarkets {
			err := ammStates(m, start, func(r *events.MarketState) error {
				msg, err := events.Encode(events.TopicMarketStates, r)
				if err != nil {
					return err
				}
				if batch = append(batch, msg); len(batch) == cap(batch) {
					return flush()
				}
				return nil
			})
			if err == nil {
				err = flush()
			}
			if err != nil {
				b.Fatalf("produce: %v", err)
			}
		}
		wr.Close()
		b.Logf("produced in %s", time.Since(t0).Round(time.Millisecond))

		truncate := "TRUNCATE amm.states, amm.rollup, amm.markets"
		topology := splitCPUs(b)
		var bestCopy, bestIngest float64
		var paired []float64
		for round := 1; round <= ammIngestRound; round++ {
			empty(b, pool, truncate)
			copyRate, copyCPU := ammCopy(b, pool, start, writerOf, w)
			empty(b, pool, truncate)
			run := ammIngestWith(b, pool, broker, svc, total, w, round)
			bestCopy, bestIngest = max(bestCopy, copyRate), max(bestIngest, run.rate)
			paired = append(paired, run.rate/copyRate)
			b.Logf("amm round %d: %d concurrent raw COPYs %.0f states/s (Postgres %s); ingest with %d writers %.0f states/s (Postgres %s), "+
				"%.0f once joined; ratio %.2f", round, w, copyRate, copyCPU, w, run.rate, run.cpu, run.joined, run.rate/copyRate)
		}
		var chunks, raw int
		if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM amm.rollup), (SELECT count(*) FROM amm.states)").Scan(&chunks, &raw); err != nil {
			b.Fatal(err)
		}
		if raw != total {
			b.Fatalf("%d raw states after the ingest, want %d", raw, total)
		}
		b.ReportMetric(bestCopy, "copy_states/s")
		b.ReportMetric(bestIngest, "ingest_states/s")
		b.ReportMetric(bestIngest/bestCopy, "ratio")
		b.Logf("RESULT amm ingest: %d states, %d rollup chunks, best of %d rounds: %d raw COPY streams %.0f states/s, ingest with %d writers %.0f states/s: ratio %s; %s; %s",
			total, chunks, ammIngestRound, w, bestCopy, w, bestIngest, atLeast(bestIngest/bestCopy, 0.8), spread(paired), topology)
	}
}

// ammCopy COPYs the raw rows of every state into amm.states, the rows of each writer's markets on a
// connection of their own, all streams at once, and returns the states per second of the whole. The
// rows are made as they are sent (30 days of them would not fit memory) by the sink's own functions.
func ammCopy(b *testing.B, pool *pgxpool.Pool, start int64, writerOf []int, writers int) (float64, cpuTimes) {
	b.Helper()
	ctx := context.Background()
	table := ammpg.RawTable("amm")
	errs := make([]error, writers)
	collect()
	var wg sync.WaitGroup
	pg0 := postgresCPU()
	t0 := time.Now()
	for s := range writers {
		var mine []int
		for m, w := range writerOf {
			if w == s {
				mine = append(mine, m)
			}
		}
		if len(mine) == 0 {
			continue
		}
		wg.Go(func() {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs[s] = err
				return
			}
			defer conn.Release()
			rows := make(chan []any, 4096)
			go func() {
				defer close(rows)
				for _, m := range mine {
					_ = ammStates(m, start, func(r *events.MarketState) error {
						st, err := amm.StateOf(r)
						if err != nil {
							return err
						}
						rows <- ammpg.RawRow(st)
						return nil
					})
				}
			}()
			n, err := conn.CopyFrom(ctx, pgx.Identifier{"amm", "states"}, table.Columns, pgx.CopyFromFunc(func() ([]any, error) {
				r, ok := <-rows
				if !ok {
					return nil, nil
				}
				return r, nil
			}))
			for range rows { // drain on failure, so the producer ends
			}
			if err == nil && n != int64(len(mine))*ammStatesPer {
				err = fmt.Errorf("copied %d rows of %d", n, int64(len(mine))*ammStatesPer)
			}
			errs[s] = err
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("raw COPY: %v", err)
	}
	return float64(int64(len(writerOf))*ammStatesPer) / elapsed.Seconds(), postgresCPU().since(pg0)
}

// ammIngestWith runs the amm service with writers writers, as a consumer group of its own, until it
// has consumed total states into the emptied tables.
func ammIngestWith(b *testing.B, pool *pgxpool.Pool, broker *kafka.Embedded, svc kit.Service, total, writers, round int) ingestRun {
	b.Helper()
	// Numbered so that the last round is the one -bench.ingestprofile profiles.
	return ingestWith(b, pool, broker, ingestCase{name: "amm", svc: svc, schema: "amm"}, total, writers, round+ingestRounds-ammIngestRound)
}

// ammRESTDataset makes sure bench_amm_rest holds the rollup of 30 days of per-slot states of the two
// markets ending at the current hour, folded by the service's own amm.Fold, and returns its first
// second. The raw states are not needed by the answers and are not written.
func ammRESTDataset(b *testing.B) (*pgxpool.Pool, int64) {
	b.Helper()
	ctx := context.Background()
	pool := database(b, "bench_amm_rest", true)
	startService(b, pool, benchBroker(b), ammsvc.Service(ammsvc.Config{}), kit.Settings{}, time.Now)
	start := ammStart(time.Now())
	t0 := time.Now()
	var rows [][]any
	for m, spec := range ammMarkets {
		chunk := int64(math.MinInt64)
		var states []amm.State
		flush := func() error {
			if len(states) == 0 {
				return nil
			}
			c := map[amm.Row][]byte{}
			if _, err := amm.Fold(chunk, c, states); err != nil {
				return err
			}
			for r, data := range c {
				rows = append(rows, []any{spec.symbol, int16(r), chunk, data})
			}
			states = states[:0]
			return nil
		}
		err := ammStates(m, start, func(r *events.MarketState) error {
			st, err := amm.StateOf(r)
			if err != nil {
				return err
			}
			if c := amm.ChunkStart(st.Ts); c != chunk {
				if err := flush(); err != nil {
					return err
				}
				chunk = c
			}
			states = append(states, st)
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO amm.markets VALUES ($1, $2, 'perp', 'perp')`, spec.symbol, spec.index); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"amm", "rollup"}, []string{"symbol", "row", "start", "chunk"}, pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE amm.rollup"); err != nil {
		b.Fatal(err)
	}
	b.Logf("rollup of %d states in %d chunks (%s)", ammStatesPer*int64(len(ammMarkets)), len(rows), time.Since(t0).Round(time.Millisecond))
	return pool, start
}

// BenchmarkAMMREST serves 11,000 samples of the bid/ask series over the whole 30 days, and over the
// longest window at the 20-second resolution (220,000 s), to 16 concurrent keep-alive connections,
// every request its own read (a parameter the route ignores makes each URL distinct), against a bare
// net/http handler answering the same rows from memory in the same run. Target: p99 < 50 ms.
func BenchmarkAMMREST(b *testing.B) {
	ammSpan()
	for range b.N {
		pool, start := ammRESTDataset(b)
		svc := startService(b, pool, benchBroker(b), ammsvc.Service(ammsvc.Config{}), kit.Settings{}, time.Now)
		srv := httptest.NewServer(svc.Handler())
		defer srv.Close()
		end := start + ammDays*86400
		windows := []struct {
			name       string
			start, end int64
		}{
			{"30 days", start, end},
			{"the longest 20-second window", end - 220_000, end},
		}
		for _, win := range windows {
			path := fmt.Sprintf("%s/amm/bidAskPrice?marketName=SOL-PERP&start=%d&end=%d", srv.URL, win.start, win.end)
			body := get(b, path)
			if n := countRows(body); n < 10_000 {
				b.Fatalf("%s: %d rows", win.name, n)
			}
			bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			var seq atomic.Int64
			runs := compareREST(b, win.name+", ", []restScenario{
				{name: "bare handler, the same rows from memory", url: func(int) string { return bare.URL + "/" }},
				{name: "amm bidAskPrice, every request its own read", url: func(int) string {
					return path + "&n=" + strconv.FormatInt(seq.Add(1), 10)
				}},
			}, nil)
			bare.Close()
			ratio := runs[1].best.RPS / runs[0].best.RPS
			b.Logf("RESULT amm %s: 11000 samples of bidAskPrice (%d bytes), every request its own read, %d connections: "+
				"%.0f req/s against the bare handler's %.0f: %.2f, p99 %s (worst round; target < 50 ms)",
				win.name, len(body), restConcurrency, runs[1].best.RPS, runs[0].best.RPS, ratio, runs[1].worstP99)
		}
	}
}

// countRows counts the rows of an AMM answer: its '[' after the first two.
func countRows(body []byte) int {
	n := 0
	for _, c := range body {
		if c == '[' {
			n++
		}
	}
	return n - 1
}
