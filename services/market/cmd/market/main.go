// Command market serves the Market tag: it consumes protocol fills, funding rates, insurance-fund,
// IF-stake, swap and deposit topics into the market schema and answers /market/... over REST.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/market/service"
)

// maxIngestWriters bounds TIDEMARK_INGEST_WRITERS: each writer is a Postgres connection and a core's
// worth of COPY, and a topic spreads over no more writers than it has partitions.
const maxIngestWriters = 16

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "market:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env := app.NewEnv(app.EnvPrefix)
	cfg, err := app.LoadConfig(env, "market")
	if err != nil {
		return err
	}
	writers := env.Int("INGEST_WRITERS", ingest.DefaultWriters)
	if err := env.Err(); err != nil {
		return fmt.Errorf("market configuration: %w", err)
	}
	if writers < 1 || writers > maxIngestWriters {
		return fmt.Errorf("%sINGEST_WRITERS must be 1..%d, got %d", app.EnvPrefix, maxIngestWriters, writers)
	}
	logger := telemetry.NewLogger(os.Stderr, cfg.LogLevel).With("service", cfg.Service)
	tracing, err := telemetry.NewTracing(ctx, cfg.Service, cfg.OTLPEndpoint)
	if err != nil {
		return err
	}
	defer tracing.Shutdown(context.Background())
	reg := telemetry.NewRegistry()

	// Each ingest writer holds a connection through its batch; the rest serve reads and exports.
	pool, err := pg.Open(ctx, env.String("PG_URL", ""), int32(16+writers))
	if err != nil {
		return err
	}
	defer pool.Close()

	svc, err := service.New(ctx, service.Config{IngestWriters: writers}, service.Deps{
		Pool: pool, Kafka: kafka.Config{Brokers: cfg.KafkaBrokers, ClientID: cfg.Service},
		Logger: logger, Registerer: reg, TracerProvider: tracing.Provider, PageKey: cfg.PageKey,
	})
	if err != nil {
		return err
	}
	var g app.Group
	g.Add("consumer", svc.Run)
	g.Add("public", func(ctx context.Context) error {
		return app.Serve(ctx, cfg.PublicAddr, svc.Handler(), cfg.ShutdownTimeout, logger)
	})
	internal := app.InternalMux(reg, svc.Ready)
	svc.RegisterInternal(internal)
	g.Add("internal", func(ctx context.Context) error {
		return app.Serve(ctx, cfg.InternalAddr, internal, cfg.ShutdownTimeout, logger)
	})
	logger.Info("market service starting", "public", cfg.PublicAddr, "internal", cfg.InternalAddr)
	return g.Run(ctx)
}
