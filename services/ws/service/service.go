// Package service runs the WebSocket edge: its configuration, the hub, the edge readers and the
// snapshot warm-up, the public /ws listener and the internal one (health, readiness, metrics), and
// a shutdown that closes every client with 1001 so that it reconnects to another replica. The edge
// has no schema and no sink, so it is not a kit.Service; it is built from the same platform parts.
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/ws"
	"github.com/tidemark/tidemark/services/ws/edge"
	"github.com/tidemark/tidemark/services/ws/hub"
)

// Name is the edge's name in logs, metrics and the routing table.
const Name = "ws"

// Path is the one public route.
const Path = "/ws"

// candleSource is the market service's candle snapshot, taken at start, every rewarmInterval, and
// for one market when a subscription finds nothing of it.
const candleSource = "market candles"

// Config is the edge's own configuration; zero values take the defaults.
type Config struct {
	// MarketURL is the market service's internal base URL (TIDEMARK_WS_MARKET_URL): the candle
	// inits warm from its mesh.EdgeCandles. Empty: no market service, nothing to warm candles from.
	MarketURL string
	// StatsURL is the stats service's internal base URL (TIDEMARK_WS_STATS_URL), for the markets and
	// pricing snapshots. Empty: not deployed.
	StatsURL string
	// NotifyURL is the notify service's internal base URL (TIDEMARK_WS_NOTIFY_URL): a notifications
	// subscription for a wallet the replica has had no message of reads the channel's seq from its
	// mesh.EdgeNotifications before the acknowledgement. Empty: such a subscription is acknowledged at 0.
	NotifyURL string
	Hub       hub.Config
	// Kafka is how the edge reaches the brokers (TLS, SASL); Naming, the release's topic prefix.
	Kafka  kafka.Security
	Naming kafka.Naming
}

// upstreamVars are the variables of the upstreams' internal URLs, named by the registry.
func upstreamVars() (market, stats, notify string) {
	self, _ := mesh.Lookup(Name)
	return self.UpstreamVariable("market"), self.UpstreamVariable("stats"), self.UpstreamVariable("notify")
}

// RegisterEnv reads the TIDEMARK_WS_* variables.
func (c *Config) RegisterEnv(e *app.Env) {
	market, stats, notify := upstreamVars()
	c.MarketURL = e.String(market, "")
	c.StatsURL = e.String(stats, "")
	c.NotifyURL = e.String(notify, "")
	c.Kafka.RegisterEnv(e)
	c.Naming.TopicPrefix = e.String("KAFKA_TOPIC_PREFIX", "") // the edge joins no group
	c.Hub.QueueSize = e.Int("WS_QUEUE_SIZE", hub.DefaultQueueSize)
	c.Hub.MaxSubscriptions = e.Int("WS_MAX_SUBSCRIPTIONS", hub.DefaultMaxSubscriptions)
	c.Hub.MaxMessageBytes = e.Int("WS_MAX_MESSAGE_BYTES", hub.DefaultMaxMessageBytes)
	c.Hub.MessageRate = float64(e.Int("WS_MESSAGE_RATE", hub.DefaultMessageRate))
	c.Hub.MessageBurst = e.Int("WS_MESSAGE_BURST", hub.DefaultMessageBurst)
	c.Hub.PingInterval = e.Duration("WS_PING_INTERVAL", hub.DefaultPingInterval)
	c.Hub.PongTimeout = e.Duration("WS_PONG_TIMEOUT", hub.DefaultPongTimeout)
	c.Hub.ReplayWindow = e.Duration("WS_REPLAY_WINDOW", hub.DefaultReplayWindow)
	c.Hub.ReplayMax = e.Int("WS_REPLAY_MAX", hub.DefaultReplayMax)
	c.Hub.SocketBuffer = e.Int("WS_SOCKET_BUFFER", hub.DefaultSocketBuffer)
}

// Validate reports every value out of range, naming its variable.
func (c Config) Validate() error {
	errs := []error{c.Kafka.Validate(), c.Naming.Validate()}
	market, stats, notify := upstreamVars()
	for _, u := range []struct{ name, v string }{{market, c.MarketURL}, {stats, c.StatsURL}, {notify, c.NotifyURL}} {
		if u.v != "" && !strings.HasPrefix(u.v, "http://") && !strings.HasPrefix(u.v, "https://") {
			errs = append(errs, fmt.Errorf("%s%s %q must be an http(s) base URL such as http://market:9090", app.EnvPrefix, u.name, u.v))
		}
	}
	ints := []struct {
		name    string
		v, l, h int
	}{
		{"WS_QUEUE_SIZE", c.Hub.QueueSize, 16, 1 << 20},
		{"WS_MAX_SUBSCRIPTIONS", c.Hub.MaxSubscriptions, 1, 10000},
		{"WS_MAX_MESSAGE_BYTES", c.Hub.MaxMessageBytes, 256, hub.MaxFrameBytes},
		{"WS_MESSAGE_RATE", int(c.Hub.MessageRate), 1, 100000},
		{"WS_MESSAGE_BURST", c.Hub.MessageBurst, 1, 100000},
		{"WS_REPLAY_MAX", c.Hub.ReplayMax, 1, 10_000_000},
		{"WS_SOCKET_BUFFER", c.Hub.SocketBuffer, 4096, 64 << 20},
	}
	for _, i := range ints {
		if i.v < i.l || i.v > i.h {
			errs = append(errs, fmt.Errorf("%s%s must be %d..%d, got %d", app.EnvPrefix, i.name, i.l, i.h, i.v))
		}
	}
	durs := []struct {
		name    string
		v, l, h time.Duration
	}{
		{"WS_PING_INTERVAL", c.Hub.PingInterval, time.Second, 10 * time.Minute},
		{"WS_PONG_TIMEOUT", c.Hub.PongTimeout, time.Second, 10 * time.Minute},
		{"WS_REPLAY_WINDOW", c.Hub.ReplayWindow, time.Second, time.Hour},
	}
	for _, d := range durs {
		if d.v < d.l || d.v > d.h {
			errs = append(errs, fmt.Errorf("%s%s must be %s..%s, got %s", app.EnvPrefix, d.name, d.l, d.h, d.v))
		}
	}
	return errors.Join(errs...)
}

// Deps are what an edge runs on.
type Deps struct {
	Kafka          kafka.Config
	Logger         *slog.Logger
	Registry       prometheus.Registerer // the edge's metrics register here with service=ws
	TracerProvider trace.TracerProvider  // nil: no spans
	HTTPClient     *http.Client          // for the snapshots; nil: a client with a 30 s timeout
	// ShutdownTimeout bounds how long clients get to close on shutdown (default 5s).
	ShutdownTimeout time.Duration
}

// Edge is one replica of the WebSocket edge.
type Edge struct {
	cfg    Config
	deps   Deps
	logger *slog.Logger
	hub    *hub.Hub
	reader *edge.Reader
	warmer *edge.Warmer
}

// New builds an edge; Run runs it, Handler serves /ws.
func New(cfg Config, deps Deps) *Edge {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.HTTPClient == nil {
		deps.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if deps.ShutdownTimeout <= 0 {
		deps.ShutdownTimeout = 5 * time.Second
	}
	logger := deps.Logger.With("service", Name)
	h := hub.New(cfg.Hub, logger, telemetry.ServiceRegisterer(deps.Registry, Name))
	e := &Edge{cfg: cfg, deps: deps, logger: logger, hub: h,
		reader: edge.NewReader(deps.Kafka, Topics(), h, logger.With("component", "edge"), deps.TracerProvider)}
	e.warmer = edge.NewWarmer([]edge.Source{
		{Name: candleSource, URL: join(cfg.MarketURL, mesh.EdgeCandles), Apply: h.WarmCandles},
		{Name: "stats markets", URL: join(cfg.StatsURL, mesh.EdgeMarkets), Apply: func(d []json.RawMessage, seqs map[string]int64) error {
			return h.WarmItems(ws.Markets, d, seqs)
		}},
		{Name: "stats pricing", URL: join(cfg.StatsURL, mesh.EdgePricing), Apply: func(d []json.RawMessage, seqs map[string]int64) error {
			return h.WarmItems(ws.Pricing, d, seqs)
		}},
	}, deps.HTTPClient, logger.With("component", "warm"))
	if cfg.MarketURL != "" {
		h.SetFetch(func(ctx context.Context, symbol string) error {
			return e.warmer.Fetch(ctx, candleSource, url.Values{"symbol": {symbol}})
		})
	}
	if cfg.NotifyURL != "" {
		seqURL := join(cfg.NotifyURL, mesh.EdgeNotifications)
		h.SetNotificationsSeq(func(ctx context.Context, authority string) (int64, error) {
			return edge.ChannelSeq(ctx, deps.HTTPClient, seqURL+"?"+url.Values{"authority": {authority}}.Encode(),
				events.NotificationsChannel(authority))
		})
	}
	return e
}

func join(base, path string) string {
	if base == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + path
}

// Topics are the edge topics a replica reads.
func Topics() []string {
	return []string{events.TopicEdgeCandles, events.TopicEdgeMarkets, events.TopicEdgePricing, events.TopicEdgeNotifications}
}

// Prefixes are the public paths the edge answers, for the routing table.
func Prefixes() []string { return []string{Path} }

// Handler serves GET /ws; every other path is a 404.
func (e *Edge) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, e.hub)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, r, fault.Errorf(fault.NotFound, "not found: the edge serves GET %s", Path), e.logger)
	})
	return mux
}

// Ready is nil once every partition of the edge topics is read and every configured snapshot taken
// and applied: a replica that is not warm would answer a subscription with an empty init.
func (e *Edge) Ready() error {
	err := errors.Join(e.reader.Ready(), e.warmer.Ready())
	if err == nil && !e.hub.Warmed() {
		err = errors.New("snapshots not applied yet")
	}
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}

// Hub is the edge's hub (tests count its connections and channels).
func (e *Edge) Hub() *hub.Hub { return e.hub }

// rewarmInterval is how often the snapshots are taken again once warmed: a market that trades
// rarely is named by no message for long, and the edge learns of it from the next snapshot.
const rewarmInterval = 30 * time.Second

// Run reads the edge topics and warms the state until ctx ends, then closes every client with 1001
// (going away) so that they reconnect to another replica.
func (e *Edge) Run(ctx context.Context) error {
	var g app.Group
	g.Add("edge topics", e.reader.Run)
	g.Add("snapshots", func(ctx context.Context) error {
		select {
		case <-e.reader.Started():
		case <-ctx.Done():
			return nil
		}
		if err := e.warmer.Run(ctx); err != nil {
			return nil // ctx ended
		}
		e.hub.SetWarmed()
		e.logger.Info("edge warmed")
		return app.Every(ctx, rewarmInterval, func(ctx context.Context) {
			if err := e.warmer.Refresh(ctx); err != nil && ctx.Err() == nil {
				e.logger.Debug("snapshot refresh failed", "err", err)
			}
		})
	})
	g.Add("sweep", func(ctx context.Context) error {
		return app.Every(ctx, time.Second, func(context.Context) { e.hub.Sweep() })
	})
	// The hub's writers outlive the group's context: they write the 1001 close frames.
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	hubDone := make(chan error, 1)
	go func() { hubDone <- e.hub.Run(hubCtx) }()
	g.Add("clients", func(ctx context.Context) error {
		<-ctx.Done()
		e.hub.CloseAll(hub.CloseGoingAway, "server shutting down: reconnect", e.deps.ShutdownTimeout)
		stopHub()
		return <-hubDone
	})
	return g.Run(ctx)
}

// Main runs the deployable as the process' only one (app.Main), its configuration from the
// environment.
func Main() { app.Main(Name, Run) }

// LoadConfiguration reads the edge's configuration and the process' from env and validates both.
func LoadConfiguration(env *app.Env) (app.Config, Config, error) {
	appCfg, appErr := app.LoadConfig(env, Name, app.WithoutPageKey())
	var cfg Config
	cfg.RegisterEnv(env)
	errs := []error{appErr, env.Err(), cfg.Validate()}
	if len(appCfg.KafkaBrokers) == 0 {
		errs = append(errs, errors.New(app.EnvPrefix+"KAFKA_BROKERS is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return appCfg, cfg, fmt.Errorf("configuration: %w", err)
	}
	return appCfg, cfg, nil
}

// Variables lists every environment variable the edge reads, with its default.
func Variables() []app.Var {
	env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(string) (string, bool) { return "", false }}
	_, _, _ = LoadConfiguration(env)
	return env.Vars()
}

// Run runs an edge with its configuration from env until ctx ends: logger, tracing, metrics, the
// edge, its public listener and its internal one.
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
	host, _ := os.Hostname()
	kc, err := kafka.Config{Brokers: appCfg.KafkaBrokers, ClientID: Name + "-" + host, Naming: cfg.Naming}.Connect(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	e := New(cfg, Deps{
		Kafka:  kc,
		Logger: logger, Registry: registry, TracerProvider: tracing.Provider, ShutdownTimeout: appCfg.ShutdownTimeout,
	})
	var g app.Group
	g.Add("edge", e.Run)
	g.Add("public", func(ctx context.Context) error {
		return app.Serve(ctx, appCfg.PublicAddr, e.Handler(), appCfg.ShutdownTimeout, e.logger)
	})
	g.Add("internal", func(ctx context.Context) error {
		return app.Serve(ctx, appCfg.InternalAddr, app.InternalMux(registry, e.Ready), appCfg.ShutdownTimeout, e.logger)
	})
	e.logger.Info("starting", "public", appCfg.PublicAddr, "internal", appCfg.InternalAddr)
	return g.Run(ctx)
}
