// Package kit runs a tidemark service from its declaration. A service is its records, its SQL and its
// routes: it declares its name, its schema's migrations, the topics it consumes (a sink each), its
// event-table series, its custom routes and the edge topics it publishes, and the kit does the rest:
// configuration from the environment, migrations, partitions (monthly, or as declared), the consumer, the outbox
// publisher, the public and internal listeners, readiness, metrics, traces and graceful shutdown.
//
//	func main() { kit.Main(service.Service(service.Config{})) }
package kit

import (
	"context"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/series"
)

// Service declares one deployable.
type Service struct {
	// Name names the service in logs and metrics (the service label), its Kafka consumer group and,
	// unless Schema says otherwise, its Postgres schema.
	Name string
	// Schema is the service's own Postgres schema (default Name); it reads and writes no other.
	Schema string
	// Migrations are the schema's SQL files, applied once each in name order at start-up, under an
	// advisory lock so that replicas can start together. Every range-partitioned table they create
	// is an event table partitioned by month on ts, whose partitions the kit keeps ahead, unless
	// Parts.Partitions declares it otherwise.
	Migrations fs.FS
	// Prefixes are the public path prefixes the service answers ("/market/"): the edge's routing
	// table (the dev stack's router, the chart's Ingress) is made of them.
	Prefixes []string
	// Publishes are the edge topics the service writes through its outbox.
	Publishes []string
	// Produces are the topics the service's jobs write themselves with Deps.Kafka (the indexer's
	// protocol topics): provisioned and granted with the rest, written by nothing of the kit's.
	Produces []string
	// Config is the service's own configuration, read from the environment with the kit's before
	// anything is built (Run), or given in code (Start); on either path its zero fields take their
	// defaults and it is validated before Build. nil when it has none.
	Config Config
	// Build makes the service's parts, once its configuration is read and its schema migrated.
	Build func(d Deps) (Parts, error)
}

// Configure declares svc with its own configuration cfg and the build that makes its parts from it.
// The kit reads cfg from the environment (Run) or takes it as given (Start), sets its defaults and
// validates it; build then receives the result as an argument, so a service's parts depend on its
// configuration explicitly rather than through a pointer its declaration shares with the kit.
func Configure[C any, P interface {
	*C
	Config
}](svc Service, cfg C, build func(d Deps, cfg C) (Parts, error)) Service {
	p := P(&cfg)
	svc.Config = p
	svc.Build = func(d Deps) (Parts, error) { return build(d, *p) }
	return svc
}

// Config is a component's configuration: RegisterEnv sets every field from its TIDEMARK_* variable
// (the default when unset), SetDefaults sets every field left zero to that same default, and
// Validate reports every value out of range, naming its variable.
type Config interface {
	RegisterEnv(e *app.Env)
	SetDefaults()
	Validate() error
}

// Deps are what a service's parts are built on.
type Deps struct {
	// Schema is the service's schema, to qualify its tables in SQL.
	Schema string
	Pool   *pgxpool.Pool
	// Now is the data's clock: the present for rolling windows, dated ranges and what is recent.
	Now    func() time.Time
	Logger *slog.Logger
	// Kafka is the process' brokers, for a service that Produces topics itself.
	Kafka kafka.Config
	// Registerer registers the service's own metrics, with its service label.
	Registerer prometheus.Registerer
	// WakeOutbox asks the outbox publisher to publish now what a transaction of the service's own
	// (a job's, say; not one of its sinks', which wake it when they commit) queued with outbox.Add;
	// it never blocks and does nothing for a service that publishes nothing.
	WakeOutbox func()
}

// Parts are what a service is made of.
type Parts struct {
	// Sinks are the topics it consumes, a sink each; none: it runs no consumer.
	Sinks []ingest.Sink
	// Series are its event-table series: each gives its rolling and dated routes, and an export
	// stream on the internal port when it declares one.
	Series []series.Series
	// Routes registers its other public routes; nil: none.
	Routes func(api *httpapi.API)
	// Internal registers routes of the internal port, each under InternalPrefix: what other parts
	// of the mesh read from the service and clients never see (the snapshots the WebSocket edge
	// warms from, say). They are in no public document and behind no Ingress; nil: none.
	Internal func(api *httpapi.API)
	// Jobs are the service's own long-running work beside its consumer (periodic upkeep of its
	// tables, say), run until the service stops; none: none.
	Jobs []Job
	// Ready reports whether the service's own work is current (the indexer: its checkpoint is near
	// the chain's tip); it is part of the instance's readiness. nil: nothing of its own to report.
	Ready func() error
	// Partitions declares the range-partitioned tables of the schema that are not monthly event
	// tables kept for ever: their period and how long their partitions are kept. Each names a
	// partitioned table of the schema; the others keep monthly partitions from the archive's start.
	Partitions []Partitioning
}

// Job is a long-running part of a service. Run must return once ctx ends (nil then is a clean stop);
// an error, or a nil return while the service runs, stops the service. Every replica runs its jobs:
// their work must be safe to do from several processes at once.
type Job struct {
	Name string
	Run  func(ctx context.Context) error
}

// Partitioning is how the kit keeps the partitions of one range-partitioned table (on a column of
// unix seconds): created ahead of now, and dropped once older than the retention.
type Partitioning struct {
	// Table is the table's name in the schema.
	Table string
	// Period is what one partition holds: pg.Monthly (the zero value) or pg.Daily.
	Period pg.Period
	// Retention: partitions holding nothing newer than now-Retention are dropped, and none is
	// created before that; 0 keeps every partition from the archive's start. Writers must not
	// send rows older than the retention (they have no partition to go to).
	Retention time.Duration
}

// InternalPrefix is where a service's internal routes live on its internal port; the export
// streams (exportstream.PathPrefix) are among them.
const InternalPrefix = "/internal/"
