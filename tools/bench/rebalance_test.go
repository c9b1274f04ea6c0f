package bench_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	market "github.com/tidemark/tidemark/services/market/service"
)

// rebalanceFills is the backlog: long enough that the ingest after the join outlasts the recovery.
const rebalanceFills = 600_000

// BenchmarkIngestRebalance measures what a replica joining costs the ingest. Two replicas of market
// (the chart's defaults: two writers each, a 30 s session and so 3 s heartbeats) consume a backlog of
// fills over six partitions; once a sixth of it is stored, a third replica joins and the partitions
// move. The stored offsets are read every 100 ms. The baseline is the two replicas' rate before the
// join, in the same run; the dip is the slowest half second after the join; the recovery is how long
// after the join a half second runs at 90% of the baseline again; the first commit is how long the
// new replica took to commit a batch of the partitions it was given. Figures, no target.
func BenchmarkIngestRebalance(b *testing.B) {
	for range b.N {
		benchRebalance(b)
	}
}

func benchRebalance(b *testing.B) {
	ctx := context.Background()
	msgs := simulatedFills(b, rebalanceFills)
	pool := database(b, "bench_rebalance", true)
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 6})
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "bench"}
	if err := kafka.EnsureTopics(ctx, kc.Brokers, 6, events.TopicFills); err != nil {
		b.Fatal(err)
	}
	wr := kc.NewWriter("")
	wr.BatchSize, wr.BatchTimeout = 10000, 50*time.Millisecond
	if err := (kafka.Producer{W: wr}).Write(ctx, msgs...); err != nil {
		b.Fatalf("produce: %v", err)
	}
	wr.Close()

	start := func() *prometheus.Registry {
		reg := prometheus.NewRegistry()
		inst, err := kit.Start(ctx, market.Service(market.Config{}), kit.Runtime{
			Pool: pool, Kafka: kc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg,
			PageKey: benchPageKey, Now: time.Now,
		}, kit.Settings{})
		if err != nil {
			b.Fatal(err)
		}
		runService(b, inst)
		return reg
	}
	type sample struct {
		at     time.Time
		stored int64
	}
	var samples []sample
	read := func() sample { return sample{time.Now(), storedFills(ctx, pool)} }

	begin := time.Now()
	start()
	start()
	for s := read(); s.stored < rebalanceFills/6; s = read() {
		samples = append(samples, s)
		time.Sleep(100 * time.Millisecond)
	}
	joinedAt := time.Now()
	reg := start()
	var firstCommit time.Duration
	for s := read(); s.stored < rebalanceFills; s = read() {
		samples = append(samples, s)
		if firstCommit == 0 && batchesOf(reg) > 0 {
			firstCommit = time.Since(joinedAt)
		}
		if time.Since(begin) > 10*time.Minute {
			b.Fatalf("%d of %d fills stored after 10 minutes", s.stored, rebalanceFills)
		}
		time.Sleep(100 * time.Millisecond)
	}
	samples = append(samples, read())

	// Rates of half-second windows (5 samples), each stamped with its end.
	type window struct {
		end  time.Time
		rate float64
	}
	var before, after []window
	for i := 5; i < len(samples); i++ {
		w := window{samples[i].at, float64(samples[i].stored-samples[i-5].stored) / samples[i].at.Sub(samples[i-5].at).Seconds()}
		switch {
		case !w.end.After(joinedAt):
			before = append(before, w)
		case samples[i-5].at.After(joinedAt) || samples[i-5].at.Equal(joinedAt):
			after = append(after, w)
		}
	}
	if len(before) < 3 || len(after) == 0 {
		b.Fatalf("too few windows: %d before the join, %d after", len(before), len(after))
	}
	rates := func(ws []window) []float64 {
		out := make([]float64, len(ws))
		for i, w := range ws {
			out[i] = w.rate
		}
		return out
	}
	// The first windows are the replicas joining and warming up: the baseline is the median of the rest.
	baseline := median(rates(before[len(before)/3:]))
	dip := slices.Min(rates(after))
	recovery := time.Duration(-1)
	seenDip := false
	for _, w := range after {
		seenDip = seenDip || w.rate < 0.9*baseline
		if seenDip && w.rate >= 0.9*baseline {
			recovery = w.end.Sub(joinedAt)
			break
		}
	}
	recovered := "never within the backlog"
	if recovery >= 0 {
		recovered = recovery.Round(100 * time.Millisecond).String()
	}
	b.ReportMetric(baseline, "baseline_fills/s")
	b.ReportMetric(dip, "dip_fills/s")
	b.ReportMetric(recovery.Seconds(), "recovery_s")
	b.Logf("RESULT market, a third replica joins two: %.0f fills/s before the join (median half second); slowest half second after it %.0f fills/s (%.2f of it); back at 90%% after %s; the new replica's first commit %s after it joined; %d fills in %s",
		baseline, dip, dip/baseline, recovered, firstCommit.Round(100*time.Millisecond), rebalanceFills, time.Since(begin).Round(100*time.Millisecond))
}

// storedFills is how many fills market's stored offsets cover.
func storedFills(ctx context.Context, pool *pgxpool.Pool) int64 {
	var n int64
	_ = pool.QueryRow(ctx, `SELECT coalesce(sum("offset" + 1), 0) FROM market.kafka_offsets WHERE topic = $1`, events.TopicFills).Scan(&n)
	return n
}

// batchesOf is how many batches the consumer registered in reg has committed.
func batchesOf(reg *prometheus.Registry) uint64 {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == "tidemark_ingest_batch_size" {
			var n uint64
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	return 0
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
