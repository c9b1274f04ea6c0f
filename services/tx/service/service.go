// Package service runs the tx service: its configuration, the chain state it reads over JSON-RPC,
// the /tx routes on the public listener and health, readiness and metrics on the internal one. It
// has no schema, consumes no topic and holds no key, so it is not a kit.Service; it is built from
// the same platform parts.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/tx"
	txhttp "github.com/tidemark/tidemark/services/tx/http"
)

// Name is the service's name in logs, metrics and the routing table.
const Name = "tx"

// Prefixes are the public path prefixes it answers.
func Prefixes() []string { return []string{"/tx/"} }

// Config is the service's own configuration; zero values take the defaults.
type Config struct {
	// RPC is the Solana JSON-RPC endpoint (TIDEMARK_TX_RPC_*). A client waits for the answer: one
	// request's timeout defaults to 5 s, and a transient failure is tried RPCAttempts times
	// (TIDEMARK_TX_RPC_ATTEMPTS).
	RPC         rpc.Endpoint
	RPCAttempts int
	// LookupTables are the address lookup tables messages compress their keys with
	// (TIDEMARK_TX_LOOKUP_TABLES, base58 keys separated by commas; mainnet's are the protocol's
	// market tables).
	LookupTables []string
	// PriorityFee is the compute unit price in µlamports (TIDEMARK_TX_PRIORITY_FEE, 0: none).
	PriorityFee int
	// ComputeUnits is a fixed compute unit limit (TIDEMARK_TX_COMPUTE_UNITS); 0 simulates each
	// transaction for it, as the reference does.
	ComputeUnits int
	// MarketsInterval, BlockhashTTL and AccountTTL are the chain state's freshness
	// (TIDEMARK_TX_MARKETS_INTERVAL, TIDEMARK_TX_BLOCKHASH_TTL, TIDEMARK_TX_ACCOUNT_TTL): see
	// tx.ChainConfig.
	MarketsInterval time.Duration
	BlockhashTTL    time.Duration
	AccountTTL      time.Duration
}

// RegisterEnv reads the TIDEMARK_TX_* variables.
func (c *Config) RegisterEnv(e *app.Env) {
	c.RPC.RegisterEnv(e, "TX", 5*time.Second)
	c.RPCAttempts = e.Int("TX_RPC_ATTEMPTS", 3)
	c.LookupTables = e.Strings("TX_LOOKUP_TABLES", nil)
	c.PriorityFee = e.Int("TX_PRIORITY_FEE", tx.DefaultPriorityFee)
	c.ComputeUnits = e.Int("TX_COMPUTE_UNITS", 0)
	c.MarketsInterval = e.Duration("TX_MARKETS_INTERVAL", 10*time.Second)
	c.BlockhashTTL = e.Duration("TX_BLOCKHASH_TTL", time.Second)
	c.AccountTTL = e.Duration("TX_ACCOUNT_TTL", 0)
}

// SetDefaults sets the zero fields that have a default other than zero.
func (c *Config) SetDefaults() {
	if c.RPC.Timeout <= 0 {
		c.RPC.Timeout = 5 * time.Second
	}
	if c.RPCAttempts <= 0 {
		c.RPCAttempts = 3
	}
	if c.MarketsInterval <= 0 {
		c.MarketsInterval = 10 * time.Second
	}
}

// Validate reports every value out of range, naming its variable.
func (c Config) Validate() error {
	errs := []error{c.RPC.Validate("TX")}
	bad := func(name, want string, got any) {
		errs = append(errs, fmt.Errorf("%sTX_%s must be %s, got %v", app.EnvPrefix, name, want, got))
	}
	if c.RPCAttempts > 10 {
		bad("RPC_ATTEMPTS", "1..10", c.RPCAttempts)
	}
	if _, err := lookupTables(c.LookupTables); err != nil {
		bad("LOOKUP_TABLES", "base58 public keys separated by commas", err)
	}
	if c.PriorityFee < 0 {
		bad("PRIORITY_FEE", "0 or more µlamports per compute unit", c.PriorityFee)
	}
	if c.ComputeUnits < 0 || c.ComputeUnits > tx.MaxComputeUnits {
		bad("COMPUTE_UNITS", fmt.Sprintf("0 (simulate) to %d", tx.MaxComputeUnits), c.ComputeUnits)
	}
	if c.MarketsInterval < 100*time.Millisecond {
		bad("MARKETS_INTERVAL", "at least 100ms", c.MarketsInterval)
	}
	if c.BlockhashTTL < 0 || c.BlockhashTTL > 30*time.Second {
		bad("BLOCKHASH_TTL", "0 to 30s (a blockhash expires after about a minute)", c.BlockhashTTL)
	}
	if c.AccountTTL < 0 || c.AccountTTL > time.Minute {
		bad("ACCOUNT_TTL", "0 to 1m", c.AccountTTL)
	}
	return errors.Join(errs...)
}

func lookupTables(keys []string) ([]solana.PublicKey, error) {
	out := make([]solana.PublicKey, 0, len(keys))
	for _, k := range keys {
		p, err := solana.ParsePublicKey(k)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", k, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Deps are what the service runs on.
type Deps struct {
	Logger         *slog.Logger
	Registry       prometheus.Registerer // metrics register here with service=tx
	TracerProvider trace.TracerProvider  // nil: no spans
	HTTPClient     *http.Client          // to the RPC endpoint; nil: the rpc package's own
}

// Service is one replica of the tx service.
type Service struct {
	cfg    Config
	logger *slog.Logger
	chain  *tx.Chain
	api    *httpapi.API
}

// New builds the service with cfg (validated); Run keeps its chain state current, Handler serves
// the routes.
func New(cfg Config, deps Deps) (*Service, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	logger := deps.Logger.With("service", Name)
	opts, err := cfg.RPC.Options()
	if err != nil {
		return nil, err
	}
	tables, err := lookupTables(cfg.LookupTables)
	if err != nil {
		return nil, err
	}
	reg := telemetry.ServiceRegisterer(deps.Registry, Name)
	opts.Attempts, opts.MinBackoff, opts.MaxBackoff, opts.HTTP = cfg.RPCAttempts, 100*time.Millisecond, time.Second, deps.HTTPClient
	opts.Observe = rpc.Metrics(reg)
	client, err := rpc.New(opts)
	if err != nil {
		return nil, err
	}
	chain := tx.NewChain(client, tx.ChainConfig{Markets: cfg.MarketsInterval, Blockhash: cfg.BlockhashTTL,
		Accounts: cfg.AccountTTL, LookupTables: tables})
	api := httpapi.New(httpapi.Options{Logger: logger, Registerer: reg, TracerProvider: deps.TracerProvider})
	txhttp.Routes(api, tx.NewBuilder(chain, client, tx.Config{PriorityFee: uint64(cfg.PriorityFee), ComputeUnits: uint32(cfg.ComputeUnits)}))
	return &Service{cfg: cfg, logger: logger, chain: chain, api: api}, nil
}

// Run reads the market accounts and the lookup tables every MarketsInterval until ctx ends. A
// failed read keeps the last good state and is logged; the service is not ready before the first.
func (s *Service) Run(ctx context.Context) error {
	read := func(ctx context.Context) {
		if err := s.chain.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("read the market accounts", "err", err)
		}
	}
	read(ctx)
	return app.Every(ctx, s.cfg.MarketsInterval, read)
}

// Handler serves the public routes.
func (s *Service) Handler() http.Handler { return s.api.Handler() }

// Ready is nil once the market accounts have been read.
func (s *Service) Ready() error {
	if err := s.chain.Ready(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}

// Main runs the deployable as the process' only one (app.Main), its configuration from the
// environment.
func Main() { app.Main(Name, Run) }

// LoadConfiguration reads the service's configuration and the process' from env and validates both.
func LoadConfiguration(env *app.Env) (app.Config, Config, error) {
	appCfg, appErr := app.LoadConfig(env, Name, app.WithoutPageKey(), app.WithoutKafka())
	var cfg Config
	cfg.RegisterEnv(env)
	cfg.SetDefaults()
	if err := errors.Join(appErr, env.Err(), cfg.Validate()); err != nil {
		return appCfg, cfg, fmt.Errorf("configuration: %w", err)
	}
	return appCfg, cfg, nil
}

// Variables lists every environment variable the service reads, with its default.
func Variables() []app.Var {
	env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(string) (string, bool) { return "", false }}
	_, _, _ = LoadConfiguration(env)
	return env.Vars()
}

// Run runs the service with its configuration from env until ctx ends: logger, tracing, metrics,
// the chain state, the public listener and the internal one.
func Run(ctx context.Context, env *app.Env) error {
	appCfg, cfg, err := LoadConfiguration(env)
	if err != nil {
		return err
	}
	logger := telemetry.NewLogger(os.Stderr, appCfg.LogLevel)
	tracing, err := telemetry.NewTracing(ctx, Name, appCfg.OTLPEndpoint)
	if err != nil {
		return err
	}
	defer tracing.Shutdown(context.WithoutCancel(ctx))
	registry := telemetry.NewRegistry()
	s, err := New(cfg, Deps{Logger: logger, Registry: registry, TracerProvider: tracing.Provider})
	if err != nil {
		return err
	}
	var g app.Group
	g.Add("chain", s.Run)
	g.Add("public", func(ctx context.Context) error {
		return app.Serve(ctx, appCfg.PublicAddr, s.Handler(), appCfg.ShutdownTimeout, s.logger)
	})
	g.Add("internal", func(ctx context.Context) error {
		return app.Serve(ctx, appCfg.InternalAddr, app.InternalMux(registry, s.Ready), appCfg.ShutdownTimeout, s.logger)
	})
	s.logger.Info("starting", "public", appCfg.PublicAddr, "internal", appCfg.InternalAddr)
	return g.Run(ctx)
}
