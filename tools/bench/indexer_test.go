package bench_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/indexer"
	indexersvc "github.com/tidemark/tidemark/services/indexer/service"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// The window the chain is made of: a high fill rate over a few minutes gives a few hundred thousand
// events, enough that the indexer's start and its last, partial batch are a small part of a round,
// and few enough that a round at the target rate takes seconds. The window crosses
// an hour so that the hourly records (funding rates and payments, the insurance fund) are among
// the events, as they are in any backfill.
const (
	indexerFillsPerMinute = 8000
	indexerAuthorities    = 3000
	indexerMinutes        = 10
	indexerRounds         = 3
	indexerTarget         = 20_000 // events/s, issue #34
)

var indexerWindow = sim.Epoch().Add(50*time.Hour + 55*time.Minute)

var indexerProfile = flag.String("bench.indexerprofile", "", "write a CPU profile of the last indexer round (the whole process: the indexer, the simulated chain serving it and the embedded broker) to this file")

// BenchmarkIndexer measures the indexer end to end, from the simulated chain's JSON-RPC to acknowledged
// Kafka records: the service runs through the kit as its deployable does, with its default settings,
// from the window's first slot, and a round lasts from its start until its checkpoint in Postgres
// reaches the chain's tip. The baseline, in alternating rounds of the same run, produces the same
// records (the simulator's messages of the event topics) to a fresh broker with a plain
// kafka.Producer whose writer has the indexer's batch settings, in the indexer's batches of
// BatchEvents, each acknowledged before the next, as the indexer must before it checkpoints. The
// ratio is what reading, decoding and mapping the chain cost over writing the records alone.
// Target: the indexer at >= 20,000 events/s.
//
// Everything runs in this process on the machine's few cores, the simulated chain included: its
// rendering of getBlock answers is a cost a real endpoint bears on its own machines, and the
// profile (-bench.indexerprofile) tells how much of the round it took.
func BenchmarkIndexer(b *testing.B) {
	for range b.N {
		w := indexerChain(b)
		srv := httptest.NewServer(w.chain.Handler())
		b.Cleanup(srv.Close)
		var idxRates, baseRates, ratios, idxCPU, baseCPU []float64
		for round := 1; round <= indexerRounds; round++ {
			base := produceBaseline(b, w.msgs)
			run := indexRound(b, srv.URL, w, round)
			idxRates, baseRates, ratios = append(idxRates, run.rate), append(baseRates, base.rate), append(ratios, run.rate/base.rate)
			idxCPU, baseCPU = append(idxCPU, run.cpuPerEvent), append(baseCPU, base.cpuPerEvent)
			b.Logf("round %d: plain producer %.0f events/s (%s; %s); indexer %.0f events/s (%s from start to the tip's checkpoint, "+
				"%s to its first checkpoint; %s, the chain's serving included); ratio %.2f",
				round, base.rate, base.elapsed.Round(time.Millisecond), base.sched, run.rate, run.elapsed.Round(time.Millisecond),
				run.first.Round(time.Millisecond), run.sched, run.rate/base.rate)
		}
		idxBest, idxMedian, idxSpread := spreadOf(idxRates, false)
		baseBest, baseMedian, baseSpread := spreadOf(baseRates, false)
		b.ReportMetric(idxMedian, "indexer_events/s")
		b.ReportMetric(baseMedian, "producer_events/s")
		b.ReportMetric(median(ratios), "ratio")
		// The CPU an event takes is what the neighbours' load moves least: with the rates it tells a
		// slow round that waited for a CPU from one that had work to do.
		b.Logf("RESULT indexer, sim chain to Kafka, %d events in %d blocks (%d transactions), %d rounds: indexer median %s events/s, best %.0f, "+
			"spread %.2f (rounds %.0f), this process on CPU %.1f µs an event (median, the simulated chain's serving included); "+
			"plain producer of the same records median %.0f events/s, best %.0f, spread %.2f (rounds %.0f), %.1f µs an event; "+
			"ratio indexer/producer median %.2f (rounds %.2f)",
			w.stats.Events, w.stats.Blocks, w.stats.Transactions, indexerRounds, atLeast(idxMedian, indexerTarget), idxBest,
			idxSpread, idxRates, median(idxCPU), baseMedian, baseBest, baseSpread, baseRates, median(baseCPU), median(ratios), ratios)
	}
}

// indexedChain is the simulated window on its chain.
type indexedChain struct {
	chain *simchain.Chain
	stats simchain.Stats
	start uint64           // the window's first slot: the indexer's Config.Start
	tip   int64            // the chain's finalized tip: where the checkpoint ends
	msgs  []events.Message // the simulator's messages of the event topics, as the baseline produces them
}

// indexerChain generates the window and writes it into a sealed chain, in batches of the size
// Backfill writes. The topics the chain does not carry (snapshots, vaults, params) are dropped: the
// indexer does not write them.
func indexerChain(b *testing.B) indexedChain {
	b.Helper()
	ctx := context.Background()
	began := time.Now()
	chain := simchain.New(simchain.Config{Seed: 1})
	feed := chain.Writer(nil)
	s := sim.New(sim.Config{Seed: 1, FillsPerMinute: indexerFillsPerMinute, Authorities: indexerAuthorities})
	var msgs, batch []events.Message
	flush := func() error {
		err := feed.Write(ctx, batch...)
		batch = batch[:0]
		return err
	}
	err := s.Generate(indexerWindow, indexerWindow.Add(indexerMinutes*time.Minute), func(m events.Message) error {
		if simchain.EventTopic(m.Topic) {
			msgs = append(msgs, m)
		}
		batch = append(batch, m)
		if len(batch) == 20000 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		b.Fatalf("write the window into the chain: %v", err)
	}
	chain.Seal()
	w := indexedChain{chain: chain, stats: chain.Stats(), start: uint64(sim.SlotAt(indexerWindow)), tip: chain.Tip(), msgs: msgs}
	if w.stats.Events != len(msgs) {
		// Not fatal: the figures stand, but the baseline then writes other records than the chain holds.
		b.Errorf("the chain holds %d events, the simulator wrote %d messages of the event topics", w.stats.Events, len(msgs))
	}
	b.Logf("setup: %d minutes at %d fills/min: %d events in %d blocks, %d transactions, %.1f MB of events, slots %d to %d (%s)",
		indexerMinutes, indexerFillsPerMinute, w.stats.Events, w.stats.Blocks, w.stats.Transactions, float64(w.stats.EventBytes)/1e6,
		w.start, w.tip, time.Since(began).Round(time.Millisecond))
	return w
}

// throughput is one round of either side.
type throughput struct {
	rate        float64       // events/s
	elapsed     time.Duration // the timed part
	first       time.Duration // the indexer's: from its start to its first checkpoint (its first batch acknowledged)
	cpuPerEvent float64       // this process's CPU in the timed part, µs an event
	sched       schedTimes    // this process's threads in the timed part
}

// schedTimes is how long this process's threads ran and how long they were ready to run but waited
// for a CPU: on a shared machine, the wait tells a round the neighbours slowed.
type schedTimes struct{ run, wait time.Duration }

func (s schedTimes) String() string {
	return fmt.Sprintf("this process's threads on CPU %s, ready but waiting for one %s", s.run.Round(time.Millisecond), s.wait.Round(time.Millisecond))
}

func (s schedTimes) since(then schedTimes) schedTimes {
	return schedTimes{run: s.run - then.run, wait: s.wait - then.wait}
}

// selfSched sums /proc/self/task/*/schedstat (nanoseconds on CPU, nanoseconds waiting) over this
// process's threads; the Go runtime keeps its threads, so a sum taken later covers an earlier one's.
// Zero where /proc has no such files.
func selfSched() schedTimes {
	var out schedTimes
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		var run, wait int64
		if _, err := fmt.Sscan(string(stat), &run, &wait); err == nil {
			out.run += time.Duration(run)
			out.wait += time.Duration(wait)
		}
	}
	return out
}

// indexerDefaults are the indexer's settings when none is set, which the benchmark runs with.
func indexerDefaults() indexer.Config {
	var c indexer.Config
	c.SetDefaults()
	return c
}

// produceBaseline writes msgs to a fresh broker with a plain producer, in the indexer's batches.
// The broker's start and the topics are not timed, as they are not for the indexer.
func produceBaseline(b *testing.B, msgs []events.Message) throughput {
	b.Helper()
	ctx := context.Background()
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 3})
	if err != nil {
		b.Fatalf("start broker: %v", err)
	}
	defer broker.Close()
	if err := kafka.EnsureTopics(ctx, broker.Brokers(), 3, indexersvc.Topics...); err != nil {
		b.Fatal(err)
	}
	wr := kafka.Config{Brokers: broker.Brokers(), ClientID: "bench"}.NewWriter("")
	// The indexer's writer (services/indexer/service): the same batches on the wire.
	wr.BatchSize, wr.BatchTimeout = 5000, 2*time.Millisecond
	defer wr.Close()
	p := kafka.Producer{W: wr}
	batch := indexerDefaults().BatchEvents
	collect()
	cpu0, sched0 := processCPU(), selfSched()
	start := time.Now()
	for chunk := range slices.Chunk(msgs, batch) {
		if err := p.Write(ctx, chunk...); err != nil {
			b.Fatalf("produce: %v", err)
		}
	}
	elapsed := time.Since(start)
	return throughput{rate: float64(len(msgs)) / elapsed.Seconds(), elapsed: elapsed, sched: selfSched().since(sched0),
		cpuPerEvent: float64((processCPU() - cpu0).Microseconds()) / float64(len(msgs))}
}

// indexRound runs the indexer service on a fresh broker and a fresh database from the window's
// first slot until its checkpoint reaches the chain's tip.
func indexRound(b *testing.B, url string, w indexedChain, round int) throughput {
	b.Helper()
	ctx := context.Background()
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 3})
	if err != nil {
		b.Fatalf("start broker: %v", err)
	}
	defer broker.Close()
	pool := database(b, fmt.Sprintf("bench_indexer_%d", round), true)
	defer pool.Close()
	reg := prometheus.NewRegistry()
	cfg := indexersvc.Config{RPC: rpc.Endpoint{URL: url}}
	cfg.Start = w.start
	inst, err := kit.Start(ctx, indexersvc.Service(cfg), kit.Runtime{
		Pool: pool, Kafka: kafka.Config{Brokers: broker.Brokers(), ClientID: "bench"},
		Logger: slog.New(slog.DiscardHandler), Registry: reg, PageKey: benchPageKey,
	}, kit.Settings{})
	if err != nil {
		b.Fatalf("indexer service: %v", err)
	}
	if err := kafka.EnsureTopics(ctx, broker.Brokers(), 3, inst.Topics()...); err != nil {
		b.Fatal(err)
	}
	if *indexerProfile != "" && round == indexerRounds {
		defer startCPUProfile(b, *indexerProfile)()
	}
	collect()
	cpu0, sched0 := processCPU(), selfSched()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- inst.Run(runCtx) }()
	stopped := false
	halt := func() {
		if stopped {
			return
		}
		stopped = true
		stop()
		if err := <-done; err != nil {
			b.Errorf("indexer service: %v", err)
		}
	}
	defer halt()
	// The checkpoint is one row of the service's schema: polled closely, it overshoots the end by
	// little.
	var first time.Duration
	for {
		var slot int64
		err := pool.QueryRow(ctx, "SELECT slot FROM "+pgx.Identifier{inst.Name(), "checkpoint"}.Sanitize()).Scan(&slot)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			b.Fatalf("read the checkpoint: %v", err)
		}
		if first == 0 && err == nil && uint64(slot) >= w.start {
			first = time.Since(start)
		}
		if err == nil && slot >= w.tip {
			break
		}
		select {
		case err := <-done:
			stopped = true
			b.Fatalf("the indexer stopped at slot %d of %d: %v", slot, w.tip, err)
		default:
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("the indexer stalled at slot %d of %d", slot, w.tip)
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	cpu, sched := processCPU()-cpu0, selfSched().since(sched0)
	halt()
	// What it wrote is what the chain holds: a round that lost events or failed to decode some
	// would measure something else.
	written := indexerCounts(b, reg)
	var indexed int
	for topic, n := range written {
		if simchain.EventTopic(topic) { // market states come from the accounts, not the blocks
			indexed += n
		}
	}
	if indexed != w.stats.Events {
		b.Errorf("round %d: the indexer wrote %d records of the event topics, the chain holds %d events (%v)", round, indexed, w.stats.Events, written)
	}
	if n := kittest.Metric(b, reg, "tidemark_indexer_decode_failures_total", nil); n > 0 {
		b.Errorf("round %d: %.0f decode failures", round, n)
	}
	return throughput{rate: float64(w.stats.Events) / elapsed.Seconds(), elapsed: elapsed, first: first, sched: sched,
		cpuPerEvent: float64(cpu.Microseconds()) / float64(w.stats.Events)}
}

// indexerCounts is tidemark_indexer_events_total by topic.
func indexerCounts(b *testing.B, reg prometheus.Gatherer) map[string]int {
	b.Helper()
	byTopic, err := telemetry.SumBy(reg, "tidemark_indexer_events_total", "topic", nil)
	if err != nil {
		b.Fatal(err)
	}
	out := make(map[string]int, len(byTopic))
	for topic, n := range byTopic {
		out[topic] = int(n)
	}
	return out
}
