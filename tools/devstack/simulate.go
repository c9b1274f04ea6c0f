package devstack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	indexerpg "github.com/tidemark/tidemark/services/indexer/postgres"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
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

// backfillStart is where the backfill of o begins, and so the slot the indexer starts from.
func backfillStart(o Options) time.Time {
	return time.Now().Add(-time.Duration(o.BackfillDays) * 24 * time.Hour)
}

// simulate backfills history, then streams live events until ctx ends, through the simulated
// chain: the records the program emits as events go into its blocks, which the indexer reads back
// into Kafka, and the market states move its market accounts, which the indexer samples. What has
// no on-chain source (account snapshots, vaults, params) the simulator writes to Kafka itself, and
// so it does with the backfill's market states: an account is read as it is now, and no RPC gives
// its past, so history of the AMM series comes from the simulator and the live series from the
// accounts. The simulator derives every event from its time window, so a backfill overlapping a
// previous run's data (kept in ./.data) produces the same records, which the ingest deduplicates.
func simulate(ctx context.Context, s *sim.Simulator, chain *simchain.Chain, kc kafka.Config, o Options, log *slog.Logger) error {
	w := kc.NewWriter("")
	// Throughput over latency while backfilling: large batches, flushed rarely.
	w.BatchSize = 10000
	w.BatchTimeout = 50 * time.Millisecond
	defer w.Close()
	direct := kafka.Producer{W: w}
	start := time.Now()
	if err := s.Backfill(ctx, statesToo{chain: chain.Writer(direct), direct: direct}, o.BackfillDays, o.Progress); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("backfill: %w", err)
	}
	chain.Seal()
	log.Info("backfill written", "days", o.BackfillDays, "took", time.Since(start).Round(time.Millisecond))
	w.BatchTimeout = 5 * time.Millisecond
	return s.Live(ctx, chain.Writer(direct), o.LiveRate)
}

// statesToo writes everything to the chain and the market states to Kafka as well.
type statesToo struct {
	chain, direct sim.Writer
}

func (s statesToo) Write(ctx context.Context, msgs ...events.Message) error {
	var states []events.Message
	for _, m := range msgs {
		if m.Topic == events.TopicMarketStates {
			states = append(states, m)
		}
	}
	if err := s.chain.Write(ctx, msgs...); err != nil {
		return err
	}
	return s.direct.Write(ctx, states...)
}

// reportIndexed prints, once the indexer has read every block the backfill put on the chain, how
// long that took and how far behind the chain's tip it is.
func reportIndexed(ctx context.Context, checkpoints *indexerpg.Store, chain *simchain.Chain, out io.Writer, log *slog.Logger) {
	start := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		slot, ok := indexedSlot(ctx, checkpoints, log)
		if !ok {
			continue
		}
		// The backfill is on the chain once live blocks follow it: the tip is within seconds of now.
		tip := chain.Tip()
		if tip < sim.SlotAt(time.Now().Add(-5*time.Second)) || slot < tip {
			continue
		}
		st := chain.Stats()
		fmt.Fprintf(out, "\nThe indexer read the backfill's %d blocks (%d events) from the chain in %s; it follows the tip at slot %d, %d slots behind.\n",
			st.Blocks, st.Events, time.Since(start).Round(time.Second), tip, tip-min(tip, slot))
		return
	}
}

// chainKeep is how far behind the indexer's checkpoint the dev stack's chain keeps its blocks: the
// indexer reads each block once, from its checkpoint on, and an hour is there for whoever reads
// the banner's chain endpoint with getBlock.
const chainKeep = time.Hour

// pruneChain drops, at each tick of every, the chain's blocks chainKeep behind the indexer's checkpoint.
// The chain holds its blocks in memory: kept, the backfill's would stay for as long as the stack
// runs, and every live block after them.
func pruneChain(ctx context.Context, checkpoints *indexerpg.Store, chain *simchain.Chain, every time.Duration, log *slog.Logger) error {
	keep := int64(chainKeep / sim.SlotInterval)
	return app.Every(ctx, every, func(ctx context.Context) {
		if slot, ok := indexedSlot(ctx, checkpoints, log); ok {
			if n := chain.PruneBefore(slot - keep); n > 0 {
				log.Debug("chain pruned", "blocks", n, "below", slot-keep)
			}
		}
	})
}

// indexedSlot is the indexer's checkpoint: every block up to it is read. ok is false before the
// first checkpoint and when it cannot be read (logged unless ctx has ended).
func indexedSlot(ctx context.Context, checkpoints *indexerpg.Store, log *slog.Logger) (slot int64, ok bool) {
	s, ok, err := checkpoints.Slot(ctx)
	if err != nil && ctx.Err() == nil {
		log.Warn("read the indexer's checkpoint", "err", err)
	}
	return int64(s), ok && err == nil
}
