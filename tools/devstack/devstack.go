// Package devstack runs the whole mesh in one process for a laptop: an embedded Kafka broker, a
// local PostgreSQL cluster under ./.data, every service on its own loopback ports, one edge router
// that routes by path prefix like the chart's Ingress, and the simulator feeding protocol events.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/telemetry"
	market "github.com/tidemark/tidemark/services/market/service"
)

// Options configure the stack; zero values take the defaults.
type Options struct {
	DataDir      string       // default ./.data; PostgreSQL keeps its cluster in DataDir/pg
	Addr         string       // edge router address, default ":8080"
	BackfillDays int          // history written before going live, default 3
	LiveRate     float64      // simulated events per second once live, default 20
	Seed         int64        // simulator seed, default 1
	Progress     io.Writer    // backfill progress bar, default stderr
	Out          io.Writer    // the banner with the URL, default stdout
	Logger       *slog.Logger // default JSON on stderr at warn
	Registry     *prometheus.Registry
	Ready        chan<- string // receives the base URL once the routes answer (tests)
	// Exports receives the export runner and its file store once they run, for callers that create
	// export jobs (tests, until the Authority API does).
	Exports chan<- Exports
}

func (o *Options) defaults() {
	if o.DataDir == "" {
		o.DataDir = ".data"
	}
	if o.Addr == "" {
		o.Addr = ":8080"
	}
	if o.BackfillDays == 0 {
		o.BackfillDays = 3
	}
	if o.LiveRate == 0 {
		o.LiveRate = 20
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = telemetry.NewLogger(os.Stderr, slog.LevelWarn)
	}
	if o.Registry == nil {
		o.Registry = telemetry.NewRegistry()
	}
}

// Run starts everything and blocks until ctx ends, then stops it all in order.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	log := o.Logger

	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	db, err := pglocal.Start(ctx, pglocal.Options{Dir: filepath.Join(dataDir, "pg"), Logger: log.With("component", "postgres")})
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	defer func() {
		if err := db.Stop(); err != nil {
			log.Warn("stop postgres", "err", err)
		}
	}()
	pgURL, err := ensureDatabase(ctx, db, "tidemark")
	if err != nil {
		return err
	}
	pool, err := pg.Open(ctx, pgURL, 32)
	if err != nil {
		return err
	}
	defer pool.Close()

	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 3, Topics: topics()})
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	defer broker.Close()
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "devstack"}

	mkt, err := market.New(ctx, market.Config{}, market.Deps{
		Pool: pool, Kafka: kc, Logger: log.With("service", "market"), Registerer: o.Registry,
		PageKey: []byte("tidemark-devstack-page-key-0000000000"),
	})
	if err != nil {
		return fmt.Errorf("start market service: %w", err)
	}
	// The embedded broker starts empty on every run while Postgres keeps the offsets of the last one:
	// those would make the consumer skip the new broker's first messages as already stored.
	if err := resetOffsets(ctx, pool, "market"); err != nil {
		return err
	}

	var g app.Group
	services := map[string]string{}
	marketLn, err := listen()
	if err != nil {
		return err
	}
	services["market"] = "http://" + marketLn.Addr().String()
	internalLn, err := listen()
	if err != nil {
		return err
	}
	g.Add("market", mkt.Run)
	g.Add("market-public", func(ctx context.Context) error {
		return app.ServeListener(ctx, marketLn, mkt.Handler(), 5*time.Second, log)
	})
	internal := app.InternalMux(o.Registry, mkt.Ready)
	mkt.RegisterInternal(internal)
	g.Add("market-internal", func(ctx context.Context) error {
		return app.ServeListener(ctx, internalLn, internal, 5*time.Second, log)
	})

	edgeLn, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("edge router on %s: %w", o.Addr, err)
	}
	base := baseURL(edgeLn.Addr())
	exports, err := startExports(&g, exportOptions{
		dir: filepath.Join(dataDir, "exports"), baseURL: base + downloadsPrefix,
		sources: "http://" + internalLn.Addr().String(), registry: o.Registry, logger: log.With("component", "exports"),
	})
	if err != nil {
		return err
	}
	services["exports"] = exports.url
	// In a cluster, downloads are presigned S3 URLs; only the dev stack serves files itself.
	router, err := NewRouter(append(Routes(), Route{Prefix: downloadsPrefix + "/", Service: "exports"}), services, log)
	if err != nil {
		return err
	}
	g.Add("edge", func(ctx context.Context) error {
		return app.ServeListener(ctx, edgeLn, router, 5*time.Second, log)
	})
	g.Add("simulator", func(ctx context.Context) error {
		printBanner(o.Out, base, pgURL, broker.Brokers(), "http://"+internalLn.Addr().String())
		if o.Ready != nil {
			o.Ready <- base
		}
		if o.Exports != nil {
			o.Exports <- Exports{Jobs: exports.jobs, Files: exports.store}
		}
		return simulate(ctx, pool, kc, o, log)
	})
	err = g.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// topics is every topic the running services consume or produce, created up front so that
// consumers join without waiting for auto-creation.
func topics() []string {
	var out []string
	for _, t := range market.Topics() {
		out = append(out, t)
		if _, ok := events.TopicByName(t); ok && t != events.TopicEdgeCandles {
			out = append(out, t+".dlq")
		}
	}
	return out
}

func ensureDatabase(ctx context.Context, db *pglocal.Server, name string) (string, error) {
	url, err := db.CreateDatabase(ctx, name)
	if err == nil {
		return url, nil
	}
	// A reused data dir already has it: connect to make sure that is the reason.
	url = db.URL(name)
	pool, perr := pg.Open(ctx, url, 1)
	if perr != nil {
		return "", fmt.Errorf("create database %s: %w", name, errors.Join(err, perr))
	}
	pool.Close()
	return url, nil
}

func resetOffsets(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if _, err := pool.Exec(ctx, "DELETE FROM "+schema+".kafka_offsets"); err != nil {
		return fmt.Errorf("reset %s offsets: %w", schema, err)
	}
	return nil
}

func listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	return ln, nil
}

func baseURL(a net.Addr) string {
	tcp := a.(*net.TCPAddr)
	host := "localhost"
	if !tcp.IP.IsUnspecified() && !tcp.IP.IsLoopback() {
		host = tcp.IP.String()
	}
	return fmt.Sprintf("http://%s:%d", host, tcp.Port)
}

func printBanner(w io.Writer, base, pgURL string, brokers []string, internal string) {
	fmt.Fprintf(w, `
tidemark is running at %[1]s

  curl -s %[1]s/market/SOL-PERP/trades?limit=5
  curl -s '%[1]s/market/SOL-PERP/candles/60?limit=24'
  curl -s %[1]s/market/SOL-PERP/fundingRates
  curl -s %[1]s/market/TRUMP-WIN-2028-BET/predictions
  curl -s %[1]s/market/USDC/deposits
  curl -s %[1]s/openapi.json

  postgres: %[2]s
  kafka:    %[3]s
  metrics:  %[4]s/metrics   readiness: %[4]s/readyz
  exports:  market-trades and funding-rates jobs run in-process (the operator's state machine);
            files land in ./.data/exports and download from %[1]s/downloads/ with signed URLs

History is being backfilled, then the simulator goes live. Ctrl-C stops everything.
`, base, pgURL, brokers, internal)
}
