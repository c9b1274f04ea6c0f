// Command sim feeds Kafka with simulated protocol events.
//
//	sim backfill --days 7 [--until 2025-06-01T00:00:00Z]   history ending now (or --until), as fast as possible
//	sim live --rate 20                                     events at the current time, until interrupted
//
// Common flags: --brokers (TIDEMARK_KAFKA_BROKERS), --partitions (TIDEMARK_KAFKA_PARTITIONS),
// --seed (TIDEMARK_SIM_SEED), --authorities (TIDEMARK_SIM_AUTHORITIES), --fills-per-minute.
// Both subcommands create the protocol topics first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/tools/sim"
)

const usage = `usage: sim backfill [--days N] [--until RFC3339] [flags]
       sim live [--rate R] [flags]
run "sim backfill -h" or "sim live -h" for the flags`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], app.NewEnv("TIDEMARK_"), os.Stderr, logger); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			logger.Error("sim failed", "err", err)
		}
		os.Exit(2)
	}
}

// run parses args (subcommand first) with defaults from env and runs the subcommand; progress goes
// to stderr.
func run(ctx context.Context, args []string, env *app.Env, stderr io.Writer, logger *slog.Logger) error {
	if len(args) == 0 || (args[0] != "backfill" && args[0] != "live") {
		fmt.Fprintln(stderr, usage)
		return errors.New("missing or unknown subcommand")
	}
	cmd := args[0]
	def := sim.DefaultConfig()
	fs := flag.NewFlagSet("sim "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", strings.Join(env.Strings("KAFKA_BROKERS", []string{"localhost:9092"}), ","),
		"comma-separated Kafka bootstrap brokers")
	partitions := fs.Int("partitions", env.Int("KAFKA_PARTITIONS", 3), "partitions of the topics sim creates")
	seed := fs.Int64("seed", int64(env.Int("SIM_SEED", int(def.Seed))), "simulation seed")
	authorities := fs.Int("authorities", env.Int("SIM_AUTHORITIES", def.Authorities), "simulated wallets")
	fillsPerMinute := fs.Float64("fills-per-minute", def.FillsPerMinute, "mean fill rate (backfill)")
	days := fs.Int("days", env.Int("SIM_DAYS", 7), "days of history to backfill")
	until := fs.String("until", "", "end of the backfilled history, RFC 3339 (default now)")
	rate := fs.Float64("rate", float64(env.Int("SIM_RATE", 20)), "live messages per second")
	if err := env.Err(); err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg := sim.Config{Seed: *seed, Authorities: *authorities, FillsPerMinute: *fillsPerMinute, Now: time.Now}
	if *until != "" {
		end, err := time.Parse(time.RFC3339, *until)
		if err != nil {
			return fmt.Errorf("--until: %w", err)
		}
		cfg.Now = func() time.Time { return end }
	}
	kc := kafka.Config{Brokers: splitList(*brokers), ClientID: "tidemark-sim"}
	if len(kc.Brokers) == 0 {
		return errors.New("no Kafka brokers: set --brokers or TIDEMARK_KAFKA_BROKERS")
	}
	if err := kafka.EnsureTopics(ctx, kc.Brokers, *partitions, events.ProtocolTopics()...); err != nil {
		return fmt.Errorf("ensure topics: %w", err)
	}

	w := kc.NewWriter("")
	defer closeWriter(w, logger)
	s := sim.New(cfg)
	switch cmd {
	case "backfill":
		// Throughput over latency: batches as large as the broker takes, flushed rarely.
		w.BatchSize = 10000
		w.BatchTimeout = 50 * time.Millisecond
		logger.Info("backfill", "days", *days, "brokers", kc.Brokers, "seed", *seed)
		start := time.Now()
		if err := s.Backfill(ctx, kafka.Producer{W: w}, *days, stderr); err != nil {
			return err
		}
		logger.Info("backfill done", "took", time.Since(start).Round(time.Millisecond))
		return nil
	default:
		logger.Info("live", "rate", *rate, "brokers", kc.Brokers, "seed", *seed)
		return s.Live(ctx, kafka.Producer{W: w}, *rate)
	}
}

func closeWriter(w *kafkago.Writer, logger *slog.Logger) {
	if err := w.Close(); err != nil {
		logger.Warn("close kafka writer", "err", err)
	}
	if t, ok := w.Transport.(*kafkago.Transport); ok {
		t.CloseIdleConnections()
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
