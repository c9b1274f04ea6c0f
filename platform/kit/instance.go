package kit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/series"
	"github.com/tidemark/tidemark/platform/telemetry"
)

// Runtime is what a process gives every service it runs: one service in a deployment, all of them in
// the dev stack.
type Runtime struct {
	Pool  *pgxpool.Pool
	Kafka kafka.Config
	// Logger is the process' logger; each service adds its "service" attribute.
	Logger *slog.Logger
	// Registry is the process' metrics registry; each service registers with its service label.
	Registry prometheus.Registerer
	// TracerProvider makes spans; nil: no tracing.
	TracerProvider trace.TracerProvider
	// PageKey signs page tokens: every replica of a service must share it.
	PageKey []byte
	// Now is the data's clock (nil: time.Now); tests freeze it.
	Now func() time.Time
	// BeforeIngestCommit is the consumer's ingest.Deps.BeforeCommit: tests inject failures with it.
	BeforeIngestCommit func(ctx context.Context, attempt int) error
}

// Settings are the kit's components' configurations; zero values take the defaults.
type Settings struct {
	Ingest ingest.Config // Group and Schema default to the service's
	Outbox outbox.Config
	Export series.ExportConfig
}

// WithDefaults is s with every zero value set to its component's default (each stated once, in its
// component's DefaultConfig).
func (s Settings) WithDefaults() Settings {
	s.Ingest = s.Ingest.WithDefaults()
	s.Outbox = s.Outbox.WithDefaults()
	s.Export = s.Export.WithDefaults()
	return s
}

// Validate reports every value out of range, naming its variable: the one check of settings, whether
// they came from the environment (Run) or from code (Start, which the dev stack and tests call).
func (s Settings) Validate() error {
	return errors.Join(s.Ingest.Validate(), s.Outbox.Validate(), s.Export.Validate())
}

// partitionsFrom is the first month with partitions: the spec's archive starts in 2022.
var partitionsFrom = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

// partitionsAhead is how many months past now get monthly partitions before data arrives,
// dailyPartitionsAhead how many days get daily ones (records may be a day ahead of the clock, see
// events.MaxClockSkew), and partitionUpkeep how often that is checked and old partitions dropped:
// a failing upkeep has days to be noticed.
const (
	partitionsAhead      = 3
	dailyPartitionsAhead = 7
	partitionUpkeep      = 6 * time.Hour
)

// Instance is a started service: its schema migrated, its parts built, its routes registered.
type Instance struct {
	svc      Service
	schema   string
	rt       Runtime
	logger   *slog.Logger
	public   *httpapi.API
	internal *httpapi.API
	series   *series.Set
	consumer *ingest.Consumer // nil without sinks
	group    string
	consumes []string // the topics of its sinks
	topics   []string

	hasInternal bool // it declared internal routes of its own
	jobs        []Job
	ready       func() error // the parts' own readiness, nil when none

	outbox *outbox.Publisher // nil when the service publishes nothing
	writer interface{ Close() error }

	partitioning map[string]Partitioning // by "schema.table": the tables declared otherwise than monthly, kept

	mu         sync.Mutex
	partitions error // the last partition upkeep's failure, reported by Ready
}

// Start migrates svc's schema, creates its partitions, builds its parts and registers its routes. Run
// then runs its consumer, outbox and upkeep; Handler serves its public routes.
func Start(ctx context.Context, svc Service, rt Runtime, set Settings) (*Instance, error) {
	if svc.Name == "" || svc.Build == nil {
		return nil, errors.New("kit: a service needs a Name and a Build")
	}
	set = set.WithDefaults()
	if err := set.Validate(); err != nil {
		return nil, fmt.Errorf("%s: settings: %w", svc.Name, err)
	}
	if svc.Config != nil {
		svc.Config.SetDefaults()
		if err := svc.Config.Validate(); err != nil {
			return nil, fmt.Errorf("%s: configuration: %w", svc.Name, err)
		}
	}
	if rt.Now == nil {
		rt.Now = time.Now
	}
	logger := rt.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	inst := &Instance{svc: svc, schema: svc.Schema, rt: rt, logger: logger.With("service", svc.Name)}
	if inst.schema == "" {
		inst.schema = svc.Name
	}
	reg := telemetry.ServiceRegisterer(rt.Registry, svc.Name)

	if err := pg.Migrate(ctx, rt.Pool, inst.schema, svc.Migrations); err != nil {
		return nil, fmt.Errorf("%s: %w", svc.Name, err)
	}
	// Built before the partitions exist, since the parts declare how some are kept; nothing of
	// them runs before Run. The outbox is made after Build too: by the time the service wakes it,
	// it is there.
	wake := func() {
		if inst.outbox != nil {
			inst.outbox.Wake()
		}
	}
	parts, err := svc.Build(Deps{Schema: inst.schema, Pool: rt.Pool, Now: rt.Now, Logger: inst.logger, WakeOutbox: wake,
		Kafka: rt.Kafka, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("%s: build: %w", svc.Name, err)
	}
	for _, j := range parts.Jobs {
		if j.Name == "" || j.Run == nil {
			return nil, fmt.Errorf("%s: a job needs a Name and a Run", svc.Name)
		}
	}
	inst.jobs = parts.Jobs
	inst.ready = parts.Ready
	inst.topics = append(inst.topics, svc.Produces...)
	if err := inst.declarePartitions(ctx, parts.Partitions); err != nil {
		return nil, fmt.Errorf("%s: %w", svc.Name, err)
	}
	if err := inst.ensurePartitions(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", svc.Name, err)
	}
	if inst.series, err = series.New(rt.Pool, inst.schema, parts.Series, set.Export, inst.logger.With("component", "export")); err != nil {
		return nil, fmt.Errorf("%s: %w", svc.Name, err)
	}

	if len(parts.Sinks) > 0 {
		cfg := set.Ingest
		if cfg.Group == "" {
			cfg.Group = svc.Name
		}
		cfg.Schema = inst.schema
		inst.consumer, err = ingest.NewConsumer(cfg, ingest.Deps{
			Pool: rt.Pool, Kafka: rt.Kafka, Logger: inst.logger.With("component", "ingest"), Registerer: reg,
			TracerProvider: rt.TracerProvider, BeforeCommit: rt.BeforeIngestCommit,
		}, parts.Sinks)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", svc.Name, err)
		}
		inst.group = cfg.Group
		for _, s := range parts.Sinks {
			inst.consumes = append(inst.consumes, s.Topic())
			inst.topics = append(inst.topics, s.Topic(), ingest.DLQTopic(s.Topic()))
		}
	}
	if len(svc.Publishes) > 0 {
		w := rt.Kafka.NewWriter("")
		inst.writer = w
		inst.outbox, err = outbox.NewPublisher(set.Outbox, rt.Pool, inst.schema, kafka.Producer{W: w, Naming: rt.Kafka.Naming}, inst.logger.With("component", "outbox"), reg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", svc.Name, err)
		}
		if inst.consumer != nil {
			inst.consumer.OnCommit(func(context.Context) { inst.outbox.Wake() })
		}
		inst.topics = append(inst.topics, svc.Publishes...)
	}

	doc, err := api.JSON()
	if err != nil {
		return nil, fmt.Errorf("load the openapi document: %w", err)
	}
	opts := httpapi.Options{
		Logger: inst.logger, Registerer: reg, TracerProvider: rt.TracerProvider, PageKey: rt.PageKey, Now: rt.Now,
		Unavailable: pg.Unavailable,
	}
	inst.public = httpapi.New(opts)
	inst.series.Routes(inst.public)
	if parts.Routes != nil {
		parts.Routes(inst.public)
	}
	inst.public.Handle(http.MethodGet, "/openapi.json", httpapi.ServeOpenAPI(doc), httpapi.CacheControl("public, max-age=300"))
	// The internal routes get an API of their own: same envelope, logs and metrics, but nothing of
	// them is in the public document or reachable from the public port.
	opts.PageKey = nil
	inst.internal = httpapi.New(opts)
	inst.series.Exports(inst.internal)
	if parts.Internal != nil {
		parts.Internal(inst.internal)
		inst.hasInternal = true
	}
	return inst, nil
}

// Name is the service's name.
func (i *Instance) Name() string { return i.svc.Name }

// Schema is the service's Postgres schema.
func (i *Instance) Schema() string { return i.schema }

// Group is the service's Kafka consumer group ("" when it consumes nothing).
func (i *Instance) Group() string { return i.group }

// Consumes are the topics the service consumes.
func (i *Instance) Consumes() []string { return slices.Clone(i.consumes) }

// Serves reports whether one of the service's public routes serves r.
func (i *Instance) Serves(r *http.Request) bool { return i.public.Serves(r) }

// Prefixes are the public path prefixes the service answers.
func (i *Instance) Prefixes() []string { return i.svc.Prefixes }

// Handler serves the public routes.
func (i *Instance) Handler() http.Handler { return i.public.Handler() }

// FileTypes are the export file types the service streams on its internal port.
func (i *Instance) FileTypes() []string { return i.series.FileTypes() }

// Topics are the topics the service consumes (with their DLQs) and publishes, for provisioning.
func (i *Instance) Topics() []string { return slices.Clone(i.topics) }

// RegisterInternal adds the service's internal routes to mux, an internal port's mux of
// app.InternalMux: its export streams (under exportstream.PathPrefix) and the routes of
// Parts.Internal, all under InternalPrefix.
func (i *Instance) RegisterInternal(mux *http.ServeMux) {
	if len(i.FileTypes()) > 0 || i.hasInternal {
		mux.Handle(InternalPrefix, i.internal.Handler())
	}
}

// InternalMux is the internal port of a process running this one service: /healthz, /readyz,
// /metrics of registry and the service's internal routes.
func (i *Instance) InternalMux(registry *prometheus.Registry) *http.ServeMux {
	mux := app.InternalMux(registry, i.Ready)
	i.RegisterInternal(mux)
	return mux
}

// Ready reports whether the service can serve fresh data: its consumer has joined its group and its
// last Postgres round succeeded, its own parts report ready (Parts.Ready), and its partitions are
// kept ahead.
func (i *Instance) Ready() error {
	i.mu.Lock()
	perr := i.partitions
	i.mu.Unlock()
	var cerr, rerr error
	if i.consumer != nil {
		cerr = i.consumer.Ready()
	}
	if i.ready != nil {
		rerr = i.ready()
	}
	if err := errors.Join(cerr, rerr, perr); err != nil {
		return fmt.Errorf("%s: %w", i.svc.Name, err)
	}
	return nil
}

// Run consumes, publishes, keeps partitions ahead and runs the service's jobs until ctx ends. The consumer finishes and commits
// its batch before Run returns.
func (i *Instance) Run(ctx context.Context) error {
	var g app.Group
	if i.consumer != nil {
		g.Add(i.svc.Name+" consumer", i.consumer.Run)
	}
	if i.outbox != nil {
		g.Add(i.svc.Name+" outbox", i.outbox.Run)
	}
	g.Add(i.svc.Name+" partitions", i.keepPartitions)
	for _, j := range i.jobs {
		g.Add(i.svc.Name+" "+j.Name, j.Run)
	}
	err := g.Run(ctx)
	if i.writer != nil {
		if cerr := i.writer.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("%s: close the edge writer: %w", i.svc.Name, cerr)
		}
	}
	return err
}

// declarePartitions checks that every declared table is a range-partitioned table of the schema.
func (i *Instance) declarePartitions(ctx context.Context, decl []Partitioning) error {
	tables, err := pg.PartitionedTables(ctx, i.rt.Pool, i.schema)
	if err != nil {
		return err
	}
	i.partitioning = map[string]Partitioning{}
	for _, p := range decl {
		name := i.schema + "." + p.Table
		switch {
		case !slices.Contains(tables, name):
			return fmt.Errorf("partitions declared for %s, which is no range-partitioned table of the schema", name)
		case p.Retention < 0:
			return fmt.Errorf("partitions of %s: negative retention %s", name, p.Retention)
		case p.Period != pg.Monthly && p.Period != pg.Daily:
			return fmt.Errorf("partitions of %s: unknown period %d", name, p.Period)
		}
		if _, dup := i.partitioning[name]; dup {
			return fmt.Errorf("partitions of %s declared twice", name)
		}
		i.partitioning[name] = p
	}
	return nil
}

// ensurePartitions creates the missing partitions of every partitioned table of the schema, up to
// partitionsAhead months (dailyPartitionsAhead days) past now: monthly ones from the first month of
// the archive, or as the service declared them, from its retention on, after dropping those older.
func (i *Instance) ensurePartitions(ctx context.Context) error {
	tables, err := pg.PartitionedTables(ctx, i.rt.Pool, i.schema)
	if err != nil {
		return err
	}
	now := i.rt.Now().UTC()
	for _, t := range tables {
		p := i.partitioning[t] // the zero value: monthly, kept
		from, to := partitionsFrom, now.AddDate(0, partitionsAhead, 0)
		if p.Period == pg.Daily {
			to = now.AddDate(0, 0, dailyPartitionsAhead)
		}
		if p.Retention > 0 {
			from = now.Add(-p.Retention)
			dropped, err := pg.DropPartitionsBefore(ctx, i.rt.Pool, t, from.Unix())
			if err != nil {
				return err
			}
			if len(dropped) > 0 {
				i.logger.Info("dropped partitions past their retention", "table", t, "retention", p.Retention.String(),
					"partitions", dropped)
			}
		}
		if err := pg.EnsurePartitions(ctx, i.rt.Pool, t, p.Period, from, to); err != nil {
			return err
		}
	}
	return nil
}

// keepPartitions runs the upkeep every partitionUpkeep; a failure is reported through Ready and
// retried, not fatal, because months ahead already exist.
func (i *Instance) keepPartitions(ctx context.Context) error {
	return app.Every(ctx, partitionUpkeep, func(ctx context.Context) {
		err := i.ensurePartitions(ctx)
		if err != nil && ctx.Err() == nil {
			i.logger.Warn("partition upkeep failed", "err", err)
		}
		i.mu.Lock()
		i.partitions = err
		i.mu.Unlock()
	})
}
