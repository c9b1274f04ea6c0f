package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/tools/sim"
)

// newSimulator is the simulator of o's seed.
func newSimulator(o Options) *sim.Simulator {
	cfg := sim.DefaultConfig()
	cfg.Seed = o.Seed
	// Live market states at every slot, as the chain makes them (the AMM series' own resolution is
	// 20 s); the backfill keeps the default interval, which days of slots would swamp.
	cfg.LiveMarketStateInterval = sim.SlotInterval
	return sim.New(cfg)
}

// simulate backfills history, then streams live events until ctx ends. The simulator derives every
// event from its time window, so a backfill overlapping a previous run's data (kept in ./.data)
// produces the same messages, which the ingest deduplicates.
func simulate(ctx context.Context, s *sim.Simulator, kc kafka.Config, o Options, log *slog.Logger) error {
	w := kc.NewWriter("")
	// Throughput over latency while backfilling: large batches, flushed rarely.
	w.BatchSize = 10000
	w.BatchTimeout = 50 * time.Millisecond
	defer w.Close()
	start := time.Now()
	if err := s.Backfill(ctx, kafka.Producer{W: w}, o.BackfillDays, o.Progress); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("backfill: %w", err)
	}
	log.Info("backfill written", "days", o.BackfillDays, "took", time.Since(start).Round(time.Millisecond))
	w.BatchTimeout = 5 * time.Millisecond
	return s.Live(ctx, kafka.Producer{W: w}, o.LiveRate)
}
