// Package service wires the market service: schema, ingest, outbox, partitions and routes. The
// command and the dev stack both build it here.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	markethttp "github.com/tidemark/tidemark/services/market/http"
	"github.com/tidemark/tidemark/services/market/postgres"
)

// Config tunes the service; zero values take the defaults.
type Config struct {
	Schema string // default "market"
	Group  string // Kafka consumer group, default "market"
	// BatchSize and BatchWait bound one ingest transaction; IngestWriters is how many are written
	// at once (ingest.Config.Writers).
	BatchSize     int
	BatchWait     time.Duration
	IngestWriters int
	// EdgeWindow: candle changes of fills older than this are not published to edge.candles.
	EdgeWindow time.Duration
	// PartitionsFrom is the first month with partitions; the spec's archive starts in 2022.
	PartitionsFrom time.Time
	// PartitionsAhead is how many months past now get partitions before data arrives.
	PartitionsAhead int
	// ExportConcurrency is how many exports may stream at once, each on a database connection of
	// its own (default 4); further ones wait for a slot.
	ExportConcurrency int
}

// DefaultEdgeWindow is Config.EdgeWindow when none is set.
const DefaultEdgeWindow = 15 * time.Minute

func (c *Config) defaults() {
	if c.Schema == "" {
		c.Schema = "market"
	}
	if c.Group == "" {
		c.Group = "market"
	}
	if c.EdgeWindow == 0 {
		c.EdgeWindow = DefaultEdgeWindow
	}
	if c.PartitionsFrom.IsZero() {
		c.PartitionsFrom = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.PartitionsAhead == 0 {
		c.PartitionsAhead = 3
	}
	if c.ExportConcurrency == 0 {
		c.ExportConcurrency = 4
	}
}

// Deps are the shared resources the service runs on.
type Deps struct {
	Pool           *pgxpool.Pool
	Kafka          kafka.Config
	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	TracerProvider trace.TracerProvider // nil: no tracing
	PageKey        []byte
	Now            func() time.Time // nil: time.Now
}

// Service is one market service instance.
type Service struct {
	cfg       Config
	deps      Deps
	api       *httpapi.API
	internal  *httpapi.API
	consumer  *ingest.Consumer
	publisher *outbox.Publisher
	writer    interface{ Close() error }

	mu         sync.Mutex
	partitions error // last partition upkeep failure, reported by Ready
}

// New migrates the schema, creates partitions and builds the consumer and the routes.
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	cfg.defaults()
	if d.Now == nil {
		d.Now = time.Now
	}
	if err := pg.Migrate(ctx, d.Pool, cfg.Schema, postgres.Migrations()); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", cfg.Schema, err)
	}
	s := &Service{cfg: cfg, deps: d}
	if err := s.ensurePartitions(ctx); err != nil {
		return nil, err
	}

	in := postgres.NewIngest(cfg.Schema, cfg.EdgeWindow, d.Now)
	consumer, err := ingest.NewConsumer(ingest.Config{
		Group: cfg.Group, Schema: cfg.Schema, BatchSize: cfg.BatchSize, BatchWait: cfg.BatchWait, Writers: cfg.IngestWriters,
	}, ingest.Deps{Pool: d.Pool, Kafka: d.Kafka, Logger: d.Logger.With("component", "ingest"), Registerer: d.Registerer,
		TracerProvider: d.TracerProvider}, in.Sinks())
	if err != nil {
		return nil, fmt.Errorf("build consumer: %w", err)
	}
	w := d.Kafka.NewWriter("")
	s.writer = w
	s.publisher, err = outbox.NewPublisher(outbox.Config{}, d.Pool, cfg.Schema, w, d.Logger.With("component", "outbox"), d.Registerer)
	if err != nil {
		return nil, err
	}
	consumer.OnCommit(func(context.Context) { s.publisher.Wake() })
	s.consumer = consumer

	doc, err := api.JSON()
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	s.api = httpapi.New(httpapi.Options{
		Logger: d.Logger, Registerer: d.Registerer, TracerProvider: d.TracerProvider, PageKey: d.PageKey, Now: d.Now,
	})
	store := postgres.NewStore(d.Pool, cfg.Schema)
	markethttp.Routes(s.api, store, d.Now)
	s.api.Handle(http.MethodGet, "/openapi.json", httpapi.ServeOpenAPI(doc), httpapi.CacheControl("public, max-age=300"))

	// The internal routes get an API of their own: same envelope, logs and metrics, but nothing of
	// them is in the public document or reachable from the public port.
	s.internal = httpapi.New(httpapi.Options{
		Logger: d.Logger, Registerer: d.Registerer, TracerProvider: d.TracerProvider, Now: d.Now,
	})
	markethttp.Exports(s.internal, store, postgres.NewExporter(d.Pool, cfg.Schema, cfg.ExportConcurrency), d.Logger.With("component", "export"))
	return s, nil
}

// Topics are the topics the service consumes and produces, for provisioning.
func Topics() []string {
	return []string{
		events.TopicFills, events.TopicFundingRates, events.TopicInsuranceFund, events.TopicIFStakes,
		events.TopicSwaps, events.TopicDeposits, events.TopicEdgeCandles,
	}
}

// Handler serves the public routes.
func (s *Service) Handler() http.Handler { return s.api.Handler() }

// RegisterInternal adds the service's internal routes (export streaming, GET
// /internal/exports/{fileType}) to mux, the internal port's mux of app.InternalMux.
func (s *Service) RegisterInternal(mux *http.ServeMux) {
	mux.Handle("GET "+exportstream.PathPrefix+"{fileType}", s.internal.Handler())
}

// Ready reports whether the service can serve fresh data.
func (s *Service) Ready() error {
	s.mu.Lock()
	perr := s.partitions
	s.mu.Unlock()
	return errors.Join(s.consumer.Ready(), perr)
}

// Run consumes, publishes and keeps partitions ahead until ctx ends. The consumer finishes and
// commits its batch before Run returns.
func (s *Service) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 3)
	go func() { errs <- s.consumer.Run(ctx) }()
	go func() { errs <- s.publisher.Run(ctx) }()
	go func() { errs <- s.keepPartitions(ctx) }()
	var first error
	for range 3 {
		if err := <-errs; err != nil && first == nil && ctx.Err() == nil {
			first = err
			cancel()
		}
	}
	if err := s.writer.Close(); err != nil && first == nil {
		first = fmt.Errorf("close edge writer: %w", err)
	}
	return first
}

func (s *Service) ensurePartitions(ctx context.Context) error {
	to := s.deps.Now().UTC().AddDate(0, s.cfg.PartitionsAhead, 0)
	for _, t := range postgres.Tables(s.cfg.Schema) {
		if err := pg.EnsureMonthlyPartitions(ctx, s.deps.Pool, t, s.cfg.PartitionsFrom, to); err != nil {
			return fmt.Errorf("partitions of %s: %w", t, err)
		}
	}
	return nil
}

// keepPartitions runs the upkeep every few hours; a failure is reported through Ready and retried,
// not fatal, because months ahead already exist.
func (s *Service) keepPartitions(ctx context.Context) error {
	t := time.NewTicker(6 * time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			err := s.ensurePartitions(ctx)
			if err != nil && ctx.Err() == nil {
				s.deps.Logger.Warn("partition upkeep failed", "err", err)
			}
			s.mu.Lock()
			s.partitions = err
			s.mu.Unlock()
		}
	}
}
