package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/platform/version"
)

// Main runs svc as the process' only service until SIGINT or SIGTERM, with its configuration from the
// process environment. It exits 1 after printing the error that stopped it. Run with -version, it prints
// the build's version and revision and exits; run as `<binary> topics`, it declares the mesh's topics
// to the cluster (Topics) and exits; as `<binary> probe URL...`, it checks a release (Probe) and exits.
func Main(svc Service) {
	if version.Handle(svc.Name, os.Args[1:], os.Stdout) {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 {
		var code int
		switch os.Args[1] {
		case TopicsCommand:
			code = Topics(ctx, app.NewEnv(app.EnvPrefix), os.Args[2:], os.Stdout, os.Stderr)
		case ProbeCommand:
			code = Probe(ctx, os.Args[2:], os.Stdout, os.Stderr)
		default:
			code = -1
		}
		if code >= 0 {
			stop()
			os.Exit(code)
		}
	}
	app.TuneGC()
	if err := Run(ctx, svc, app.NewEnv(app.EnvPrefix)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", svc.Name, err)
		os.Exit(1)
	}
}

// Configuration is everything a service process reads from its environment.
type Configuration struct {
	App      app.Config
	Postgres pg.Config
	Kafka    kafka.Security
	Naming   kafka.Naming
	Settings Settings
}

// LoadConfiguration reads svc's configuration, the kit's and its own, from env and validates it. The
// error names every variable that does not parse or is out of range, so a bad value stops the start-up
// before anything is opened.
func LoadConfiguration(env *app.Env, svc Service) (Configuration, error) {
	var c Configuration
	appCfg, appErr := app.LoadConfig(env, svc.Name)
	c.App = appCfg
	c.Postgres.RegisterEnv(env)
	c.Kafka.RegisterEnv(env)
	c.Naming.RegisterEnv(env)
	c.Settings.Ingest.RegisterEnv(env)
	c.Settings.Outbox.RegisterEnv(env)
	c.Settings.Export.RegisterEnv(env)
	if svc.Config != nil {
		svc.Config.RegisterEnv(env)
	}
	errs := []error{appErr, env.Err(), c.Postgres.Validate(), c.Kafka.Validate(), c.Naming.Validate(), c.Settings.Validate()}
	if svc.Config != nil {
		errs = append(errs, svc.Config.Validate())
	}
	// Each ingest writer holds a connection through its batch; the outbox publisher and the readiness
	// check need one each, and the API the rest.
	if c.Settings.Ingest.Writers > 0 && c.Postgres.PoolSize < c.Settings.Ingest.Writers+4 {
		errs = append(errs, fmt.Errorf("%sPG_POOL_SIZE %d leaves too few connections beside %sINGEST_WRITERS %d: want at least %d",
			app.EnvPrefix, c.Postgres.PoolSize, app.EnvPrefix, c.Settings.Ingest.Writers, c.Settings.Ingest.Writers+4))
	}
	if len(c.App.KafkaBrokers) == 0 {
		errs = append(errs, errors.New(app.EnvPrefix+"KAFKA_BROKERS is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// Variables lists every environment variable svc reads, with its default.
func Variables(svc Service) []app.Var {
	env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(string) (string, bool) { return "", false }}
	_, _ = LoadConfiguration(env, svc)
	return env.Vars()
}

// Run runs svc with its configuration from env until ctx ends: the process' logger, tracing, metrics
// registry and Postgres pool, the service itself, its public listener and its internal one (health,
// readiness, metrics, exports), stopped gracefully.
func Run(ctx context.Context, svc Service, env *app.Env) error {
	cfg, err := LoadConfiguration(env, svc)
	if err != nil {
		return err
	}
	logger := telemetry.NewLogger(os.Stderr, cfg.App.LogLevel)
	tracing, err := telemetry.NewTracing(ctx, svc.Name, cfg.App.OTLPEndpoint)
	if err != nil {
		return err
	}
	defer tracing.Shutdown(context.WithoutCancel(ctx))
	registry := telemetry.NewRegistry()
	kc, err := kafka.Config{Brokers: cfg.App.KafkaBrokers, ClientID: svc.Name, Naming: cfg.Naming}.Connect(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	pool, err := pg.Open(ctx, cfg.Postgres.URL, int32(cfg.Postgres.PoolSize))
	if err != nil {
		return err
	}
	defer pool.Close()

	inst, err := Start(ctx, svc, Runtime{
		Pool: pool, Kafka: kc, Logger: logger,
		Registry: registry, TracerProvider: tracing.Provider, PageKey: cfg.App.PageKey,
	}, cfg.Settings)
	if err != nil {
		return err
	}
	var g app.Group
	g.Add("service", inst.Run)
	g.Add("public", func(ctx context.Context) error {
		return app.Serve(ctx, cfg.App.PublicAddr, inst.Handler(), cfg.App.ShutdownTimeout, inst.logger)
	})
	g.Add("internal", func(ctx context.Context) error {
		return app.Serve(ctx, cfg.App.InternalAddr, inst.InternalMux(registry), cfg.App.ShutdownTimeout, inst.logger)
	})
	inst.logger.Info("starting", "public", cfg.App.PublicAddr, "internal", cfg.App.InternalAddr)
	return g.Run(ctx)
}
