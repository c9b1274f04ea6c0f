// Package service declares the market service to the kit: its schema, the topics it consumes, its
// series, its candles route and the edge topic it publishes. The command and the dev stack both run
// this declaration.
package service

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/series"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/market"
	markethttp "github.com/tidemark/tidemark/services/market/http"
	"github.com/tidemark/tidemark/services/market/postgres"
	"github.com/tidemark/tidemark/services/market/postgres/migrations"
)

// DefaultEdgeWindow is Config.EdgeWindow when none is set.
const DefaultEdgeWindow = 15 * time.Minute

// Config is the market service's own configuration; zero values take the defaults.
type Config struct {
	// EdgeWindow: candle changes of fills older than this are not published to edge.candles
	// (TIDEMARK_MARKET_EDGE_WINDOW): backfilled history would flood the WebSocket edge with changes
	// no live chart shows.
	EdgeWindow time.Duration
	// HotDays: how many days of candles each resolution keeps in memory on every replica
	// (TIDEMARK_MARKET_HOT_DAYS, "res:days" items; resolutions not named keep market.DefaultHotDays').
	// Windows within them are answered from memory, older ones from Postgres.
	HotDays market.HotDays
	// HotText bounds the bytes of candle JSON kept to answer from, made as candles are read
	// (TIDEMARK_MARKET_HOT_TEXT_MIB, in MiB, 0: none): 0 here is market.DefaultTextBudget, below 0
	// keeps none and every answer is written from the columns.
	HotText int64

	hotDaysErr error // TIDEMARK_MARKET_HOT_DAYS did not parse: Validate reports it
}

// RegisterEnv reads TIDEMARK_MARKET_EDGE_WINDOW, TIDEMARK_MARKET_HOT_DAYS and
// TIDEMARK_MARKET_HOT_TEXT_MIB.
func (c *Config) RegisterEnv(e *app.Env) {
	c.EdgeWindow = e.Duration("MARKET_EDGE_WINDOW", DefaultEdgeWindow)
	c.HotText = int64(e.Int("MARKET_HOT_TEXT_MIB", market.DefaultTextBudget>>20)) << 20
	if c.HotText == 0 {
		c.HotText = -1
	}
	items := e.Strings("MARKET_HOT_DAYS", market.DefaultHotDays.Strings())
	days, err := market.ParseHotDays(items)
	if err != nil {
		// Validate names the variable: a nil HotDays cannot pass it.
		c.hotDaysErr = err
		return
	}
	c.HotDays = days
}

// SetDefaults sets a zero edge window to DefaultEdgeWindow, and no hot days to the default's.
func (c *Config) SetDefaults() {
	c.EdgeWindow = cmp.Or(c.EdgeWindow, DefaultEdgeWindow)
	c.HotText = cmp.Or(c.HotText, market.DefaultTextBudget)
	if c.HotDays == nil && c.hotDaysErr == nil {
		c.HotDays = market.DefaultHotDays
	}
}

// Validate reports an edge window or hot days out of range, naming the variable.
func (c Config) Validate() error {
	if c.EdgeWindow <= 0 || c.EdgeWindow > 7*24*time.Hour {
		return fmt.Errorf("%sMARKET_EDGE_WINDOW must be more than 0 and at most 168h, got %s", app.EnvPrefix, c.EdgeWindow)
	}
	if c.HotText > 4<<30 {
		return fmt.Errorf("%sMARKET_HOT_TEXT_MIB must be 0..4096, got %d", app.EnvPrefix, c.HotText>>20)
	}
	err := c.hotDaysErr
	if err == nil {
		err = c.HotDays.Validate()
	}
	if err != nil {
		return fmt.Errorf("%sMARKET_HOT_DAYS: %w", app.EnvPrefix, err)
	}
	return nil
}

// Service declares the market service with cfg.
func Service(cfg Config) kit.Service {
	return kit.Configure(kit.Service{
		Name:       "market",
		Migrations: migrations.FS,
		Prefixes:   []string{"/market/"},
		Publishes:  []string{events.TopicEdgeCandles},
	}, cfg, func(d kit.Deps, cfg Config) (kit.Parts, error) {
		store := postgres.NewStore(d.Pool, d.Schema)
		// Every replica keeps the recent candles of every market, whichever partitions it ingests.
		hot := market.NewHot(cfg.HotDays, d.Now)
		hot.SetTextBudget(cfg.HotText)
		follower := postgres.NewFollower(d.Pool, d.Schema, hot, d.Logger)
		registerHotMetrics(d.Registerer, hot, follower)
		answered := telemetry.Register(d.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_market_candle_answers_total",
			Help: "Candle answers by source: memory (the hot candles) or store (Postgres).",
		}, []string{"source"}))
		in := postgres.NewIngest(d.Schema, cfg.EdgeWindow, d.Now).WithHot(hot)
		return kit.Parts{
			Sinks:  in.Sinks(),
			Series: Series(store),
			Routes: func(api *httpapi.API) { markethttp.Routes(api, store, hot, answered) },
			// The WebSocket edge warms its candle inits from the newest candles.
			Internal: func(api *httpapi.API) { markethttp.Internal(api, store) },
			Jobs:     []kit.Job{{Name: "hot-candles", Run: follower.Run}},
		}, nil
	})
}

// registerHotMetrics exposes the size of the hot candles and how long their last load took.
func registerHotMetrics(reg prometheus.Registerer, hot *market.Hot, f *postgres.Follower) {
	loaded := telemetry.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tidemark_market_hot_load_seconds",
		Help: "How long the last full load of the hot candles from Postgres took (at start, or after losing track of changes).",
	}))
	bytes := telemetry.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tidemark_market_hot_bytes",
		Help: "Bytes of the candle columns held in memory, as of the last load or trim.",
	}))
	buckets := telemetry.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tidemark_market_hot_buckets",
		Help: "Buckets of candles held in memory, as of the last load or trim.",
	}))
	telemetry.Register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tidemark_market_hot_text_bytes",
		Help: "Bytes of candle JSON kept to answer from, made as candles are read (TIDEMARK_MARKET_HOT_TEXT_MIB bounds it).",
	}, func() float64 { return float64(hot.TextBytes()) }))
	size := func() { n, b := hot.Buckets(); buckets.Set(float64(n)); bytes.Set(float64(b)) }
	f.Loaded = func(d time.Duration) { loaded.Set(d.Seconds()); size() }
	f.Trimmed = size
}

// Series are the market's event series, each scoped by the market's symbol.
func Series(store market.Store) []series.Series {
	check := func(k market.Kind) func(context.Context, map[string]string) error {
		return func(ctx context.Context, vars map[string]string) error {
			_, err := k.Check(ctx, store, vars["symbol"])
			return err
		}
	}
	checkMarket := func(k market.Kind) func(context.Context, string) error {
		return func(ctx context.Context, symbol string) error {
			_, err := k.Check(ctx, store, symbol)
			return err
		}
	}
	fills, deposits := series.LayoutOf[events.Fill](), series.LayoutOf[events.Deposit]()
	bySymbol := []string{"symbol = @symbol"}
	day := "/{year}/{month}/{day}"
	list := []series.Series{
		{Name: "trades", Table: "fills", Where: bySymbol, Limit: series.Limit{Default: 20, Max: 50}, Record: fills,
			Check: check(market.AnyMarket),
			// A market's fills of the job's accounts, as taker or maker.
			Export: &series.Export{FileType: "market-trades", Market: "symbol = @market", RequireMarket: true,
				Accounts: "taker = ANY(@accounts) OR maker = ANY(@accounts)", CheckMarket: checkMarket(market.AnyMarket)}},
		{Name: "predictions", Table: "fills", Where: bySymbol, Record: fills, Check: check(market.PredictionMarket)},
		{Name: "fundingRates", Table: "funding_rates", Where: bySymbol, Limit: series.Limit{Default: 20, Max: 750},
			Record: series.LayoutOf[events.FundingRate](), Check: check(market.PerpMarket),
			// Funding rates belong to a market, not to accounts: a job's accounts are no filter.
			Export: &series.Export{FileType: "funding-rates", Market: "symbol = @market", RequireMarket: true,
				CheckMarket: checkMarket(market.PerpMarket)}},
		{Name: "insuranceFund", Table: "insurance_fund", Where: bySymbol, Record: series.LayoutOf[events.InsuranceFund](),
			Check: check(market.SpotMarket)},
		{Name: "insuranceFundStake", Table: "if_stakes", Where: bySymbol, Record: series.LayoutOf[events.IFStake](),
			Check: check(market.SpotMarket)},
		// A swap belongs to both of its markets; the second branch leaves out the first's rows.
		{Name: "swaps", Table: "swaps", Where: []string{"in_symbol = @symbol", "out_symbol = @symbol AND in_symbol <> @symbol"},
			Record: series.LayoutOf[events.Swap](), Check: check(market.SpotMarket)},
		{Name: "deposits", Table: "deposits", Where: []string{"symbol = @symbol AND category = 'deposit'"}, Record: deposits,
			Check: check(market.SpotMarket)},
		{Name: "rewards", Table: "deposits", Where: []string{"symbol = @symbol AND category = 'reward'"}, Record: deposits,
			Check: check(market.SpotMarket)},
	}
	for i := range list {
		list[i].Path = "/market/{symbol}/" + list[i].Name
		list[i].Dated = list[i].Path + day
	}
	return list
}
