package service_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/market"
	markethttp "github.com/tidemark/tidemark/services/market/http"
	"github.com/tidemark/tidemark/services/market/postgres"
	"github.com/tidemark/tidemark/services/market/service"
)

// simulatedHistory is two markets' fills over the 40 days before now: hourly far back, every minute or
// so over the last two days with gaps of every length, sizes and prices moving.
func simulatedHistory(rng *rand.Rand) []*events.Fill {
	var out []*events.Fill
	id := 0
	for _, m := range []mkt{solPerp, btcPerp} {
		price := int64(150_000_000)
		for ts := now.Unix() - 40*86400; ts < now.Unix(); {
			id++
			base := (1 + rng.Int64N(50)) * 100_000_000
			price += rng.Int64N(2_000_001) - 1_000_000
			out = append(out, fill(m, ts, id, base*price/1_000_000_000, base, price+rng.Int64N(200_000)-100_000))
			step := int64(3600)
			if now.Unix()-ts < 2*86400 {
				step = 1 + rng.Int64N(120)
				if rng.IntN(50) == 0 {
					step = rng.Int64N(7200) // a quiet spell: empty buckets carried
				}
			}
			ts += step
		}
	}
	return out
}

// ingestShuffled ingests fills in batches of about 400, the batches out of time order, as a backfill
// and the live stream arrive together.
func ingestShuffled(t *testing.T, s *stack, rng *rand.Rand, fills []*events.Fill) {
	t.Helper()
	var batches [][]*events.Fill
	for i := 0; i < len(fills); i += 400 {
		batches = append(batches, fills[i:min(i+400, len(fills))])
	}
	rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
	for _, b := range batches {
		recs := make([]events.Record, len(b))
		for i, f := range b {
			recs[i] = f
		}
		s.produce(t, encode(t, events.TopicFills, recs...)...)
	}
	s.WaitConsumed(t, events.TopicFills)
}

// candleAnswers is the count of candle answers from source ("memory" or "store") in reg.
func candleAnswers(t *testing.T, reg prometheus.Gatherer, source string) float64 {
	t.Helper()
	return kittest.Metric(t, reg, "tidemark_market_candle_answers_total", map[string]string{"source": source})
}

// awaitMemory waits until h answers the newest candles of symbol from memory: the replica has loaded
// them and read back every change of its own.
func awaitMemory(t *testing.T, h http.Handler, reg prometheus.Gatherer, symbol string) {
	t.Helper()
	kittest.Eventually(t, 20*time.Second, "candles answered from memory", func() bool {
		before := candleAnswers(t, reg, "memory")
		rec := serve(h, "/market/"+symbol+"/candles/1?limit=5")
		return rec.StatusCode == http.StatusOK && candleAnswers(t, reg, "memory") > before
	})
}

func serve(h http.Handler, path string) *http.Response {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result()
}

// checkWindows asks h for random windows, limits and resolutions, with and without a range, and
// compares each answer byte for byte with the store's path (the store's buckets, Assemble, the
// route's encoding). Most windows are within the hot range: at least a third must be answered from
// memory, or the comparison would prove nothing.
func checkWindows(t *testing.T, h http.Handler, pool *pgxpool.Pool, reg prometheus.Gatherer, rng *rand.Rand, n int, symbols ...string) {
	t.Helper()
	store := postgres.NewStore(pool, "market")
	fromMemory := candleAnswers(t, reg, "memory")
	for i := range n {
		res := market.Resolutions()[rng.IntN(len(market.Resolutions()))]
		symbol := symbols[rng.IntN(len(symbols))]
		span := int64(45 * 86400)
		if rng.IntN(3) > 0 {
			span = 3 * 86400 // within the default hot range of every resolution
		}
		startTs, endTs, limit := now.Unix(), int64(markethttp.CandleMinTs), int64(100)
		q := url.Values{}
		if rng.IntN(4) > 0 {
			startTs = now.Unix() + 3600 - rng.Int64N(span)
			q.Set("startTs", strconv.FormatInt(startTs, 10))
		}
		if rng.IntN(2) > 0 {
			endTs = now.Unix() + 3600 - rng.Int64N(span)
			q.Set("endTs", strconv.FormatInt(endTs, 10))
		}
		if rng.IntN(4) > 0 {
			limit = 1 + rng.Int64N(1000)
			q.Set("limit", strconv.FormatInt(limit, 10))
		}
		path := fmt.Sprintf("/market/%s/candles/%s?%s", symbol, res, q.Encode())
		resp := serve(h, path)
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, got)
		}
		w := market.Window(res, startTs, endTs, int(limit), now)
		var list []market.Candle
		if w.Hi >= w.Lo {
			stored, before, err := store.Candles(context.Background(), symbol, res, w.Lo, w.Hi)
			if err != nil {
				t.Fatal(err)
			}
			list = market.Assemble(res, w, stored, before)
		}
		want := `{"success":true,"records":[` + string(markethttp.AppendCandles(nil, list)) + "]}"
		if string(got) != want {
			t.Fatalf("window %d, GET %s (window %+v):\n got %.600s\nwant %.600s", i, path, w, got, want)
		}
	}
	if m := candleAnswers(t, reg, "memory") - fromMemory; m < float64(n)/3 {
		t.Fatalf("%v of %d answers from memory", m, n)
	}
}

// TestHotCandlesMatchStore is the property of the hot candles: over a simulated history, delivered out
// of order, for random windows, limits and resolutions, the answer from memory is the store's answer
// byte for byte; the same once late fills have moved old buckets, after the whole history is replayed
// twice (once to the running replica, once to a restarted one that reads every message again), and
// after a plain restart, which loads memory from Postgres alone.
func TestHotCandlesMatchStore(t *testing.T) {
	s := startStack(t)
	rng := rand.New(rand.NewPCG(21, 34))
	history := simulatedHistory(rng)
	ingestShuffled(t, s, rng, history)
	awaitMemory(t, s.Handler(), s.Registry, "SOL-PERP")
	checkWindows(t, s.Handler(), s.Pool, s.Registry, rng, 400, "SOL-PERP", "BTC-PERP")

	// Late fills: into a bucket held in memory, a new bucket in a quiet spell, and one before the hot
	// range of 1-minute candles, whose close the first bucket held opens at.
	late := []*events.Fill{
		fill(solPerp, now.Unix()-3600-7, 900_001, 1_000_000, 10_000_000, 150_000_000),
		fill(solPerp, now.Unix()-5*86400/2+11, 900_002, 1_600_000, 10_000_000, 160_000_000),
		fill(btcPerp, now.Unix()-3*86400-3600, 900_003, 1_200_000, 10_000_000, 120_000_000),
	}
	s.ingest(t, encode(t, events.TopicFills, late[0], late[1], late[2])...)
	awaitMemory(t, s.Handler(), s.Registry, "SOL-PERP")
	awaitMemory(t, s.Handler(), s.Registry, "BTC-PERP")
	checkWindows(t, s.Handler(), s.Pool, s.Registry, rng, 200, "SOL-PERP", "BTC-PERP")

	ingestShuffled(t, s, rng, history)
	awaitMemory(t, s.Handler(), s.Registry, "SOL-PERP")
	checkWindows(t, s.Handler(), s.Pool, s.Registry, rng, 200, "SOL-PERP", "BTC-PERP")

	s.Restart(t, "market", true)
	s.WaitConsumed(t, events.TopicFills)
	awaitMemory(t, s.Handler(), s.Registry, "SOL-PERP")
	checkWindows(t, s.Handler(), s.Pool, s.Registry, rng, 200, "SOL-PERP", "BTC-PERP")

	s.Restart(t, "market", false)
	awaitMemory(t, s.Handler(), s.Registry, "SOL-PERP")
	checkWindows(t, s.Handler(), s.Pool, s.Registry, rng, 200, "SOL-PERP", "BTC-PERP")
}

// readOnlyReplica starts a second replica of the market service on the stack's database that ingests
// nothing (its declaration without sinks: no partition of any topic is its), as a replica is when
// the others hold every partition, and runs it until the test ends.
func readOnlyReplica(t *testing.T, s *stack) (http.Handler, *prometheus.Registry) {
	t.Helper()
	svc := service.Service(service.Config{})
	build := svc.Build
	svc.Build = func(d kit.Deps) (kit.Parts, error) {
		p, err := build(d)
		p.Sinks = nil
		return p, err
	}
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	inst, err := kit.Start(ctx, svc, kit.Runtime{
		Pool: s.Pool, Kafka: s.Kafka, Logger: slog.New(slog.DiscardHandler), Registry: reg, PageKey: kittest.PageKey,
		Now: func() time.Time { return now },
	}, kit.Settings{})
	if err != nil {
		cancel()
		t.Fatalf("start the second replica: %v", err)
	}
	if len(inst.Consumes()) != 0 {
		cancel()
		t.Fatalf("the second replica consumes %v", inst.Consumes())
	}
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("second replica: %v", err)
		}
	})
	return inst.Handler(), reg
}

// TestHotCandlesFreshOnAnotherReplica: a fill's candle change is answered over REST, from memory,
// within a second of its commit by a replica that does not ingest the fill's partition; and that
// replica answers every window as the store does.
func TestHotCandlesFreshOnAnotherReplica(t *testing.T) {
	s := startStack(t)
	ts := now.Unix() - 20
	s.ingest(t, encode(t, events.TopicFills, fill(solPerp, ts-600, 1, 300_000_000, 2_000_000_000, 150_000_000))...)
	other, reg := readOnlyReplica(t, s)
	awaitMemory(t, other, reg, "SOL-PERP")

	path := fmt.Sprintf("/market/SOL-PERP/candles/1?limit=3&startTs=%d", now.Unix())
	newest := func() []byte {
		b, _ := io.ReadAll(serve(other, path).Body)
		return b
	}
	before := newest()
	fromMemory := candleAnswers(t, reg, "memory")

	// 151.5 for 2 SOL: the newest bucket's close moves from 150 to 151.5.
	s.produce(t, encode(t, events.TopicFills, fill(solPerp, ts, 2, 303_000_000, 2_000_000_000, 151_000_000))...)
	var committed time.Time
	deadline := time.Now().Add(30 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the fill was never committed and read back")
		}
		if committed.IsZero() {
			var n int
			if err := s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM market.fills WHERE fill_record_id = 2`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				committed = time.Now()
			}
		}
		got := newest()
		if string(got) != string(before) {
			if committed.IsZero() {
				committed = time.Now() // read back before this loop saw the commit: within a poll of it
			}
			lag := time.Since(committed)
			t.Logf("the other replica answered the change %s after the commit was seen", lag)
			if lag > time.Second {
				t.Fatalf("the change reached the other replica %s after its commit", lag)
			}
			if !strings.Contains(string(got), `"fillClose":151.5`) {
				t.Fatalf("newest candles after the fill: %s", got)
			}
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if candleAnswers(t, reg, "memory") <= fromMemory {
		t.Fatal("the other replica answered from the store, not from memory")
	}
	checkWindows(t, other, s.Pool, reg, rand.New(rand.NewPCG(1, 1)), 100, "SOL-PERP")
}
