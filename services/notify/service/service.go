// Package service declares the notify service to the kit: its schema, the topics it makes
// notifications of, its authenticated routes, the edge topic it publishes and its upkeep jobs. The
// command and the dev stack both run this declaration.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/notify"
	notifyhttp "github.com/tidemark/tidemark/services/notify/http"
	"github.com/tidemark/tidemark/services/notify/postgres"
	"github.com/tidemark/tidemark/services/notify/postgres/migrations"
)

// Defaults of the configuration.
const (
	DefaultFundingMinimum = "1" // USDC
	DefaultEdgeWindow     = 15 * time.Minute
)

// Config is the notify service's own configuration.
type Config struct {
	// AuthWindow is how far a signed message's ts may be from the server's clock, either way
	// (TIDEMARK_NOTIFY_AUTH_WINDOW, whole seconds).
	AuthWindow time.Duration
	// FundingMinimum is the smallest funding payment notified, quote 1e6
	// (TIDEMARK_NOTIFY_FUNDING_MIN, in USDC: "1", "0.5").
	FundingMinimum int64
	// EdgeWindow: notifications of events older than this are not published to edge.notifications
	// (TIDEMARK_NOTIFY_EDGE_WINDOW); they are in the feed all the same.
	EdgeWindow time.Duration
	// Clock is the verifier's clock; nil: the kit's (Deps.Now). Tests move it.
	Clock func() time.Time
}

// RegisterEnv reads the TIDEMARK_NOTIFY_* variables.
func (c *Config) RegisterEnv(e *app.Env) {
	c.AuthWindow = e.Duration("NOTIFY_AUTH_WINDOW", notify.DefaultWindow)
	min, _ := parseUSDC(DefaultFundingMinimum)
	c.FundingMinimum = app.Parse(e, "NOTIFY_FUNDING_MIN", min, "a USDC amount such as 1 or 0.25", parseUSDC)
	c.EdgeWindow = e.Duration("NOTIFY_EDGE_WINDOW", DefaultEdgeWindow)
}

// Validate reports every value out of range, naming its variable.
func (c Config) Validate() error {
	var errs []error
	if c.AuthWindow < time.Second || c.AuthWindow > time.Hour || c.AuthWindow%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%sNOTIFY_AUTH_WINDOW must be whole seconds from 1s to 1h, got %s", app.EnvPrefix, c.AuthWindow))
	}
	if c.FundingMinimum < 0 {
		errs = append(errs, fmt.Errorf("%sNOTIFY_FUNDING_MIN must not be negative", app.EnvPrefix))
	}
	if c.EdgeWindow <= 0 || c.EdgeWindow > 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("%sNOTIFY_EDGE_WINDOW must be more than 0 and at most 168h, got %s", app.EnvPrefix, c.EdgeWindow))
	}
	return errors.Join(errs...)
}

// SetDefaults sets every field left zero to its default, the one RegisterEnv gives it.
func (c *Config) SetDefaults() {
	c.AuthWindow = cmp.Or(c.AuthWindow, notify.DefaultWindow)
	if c.FundingMinimum == 0 {
		c.FundingMinimum, _ = parseUSDC(DefaultFundingMinimum)
	}
	c.EdgeWindow = cmp.Or(c.EdgeWindow, DefaultEdgeWindow)
}

// parseUSDC reads a decimal USDC amount into quote units (1e6).
func parseUSDC(s string) (int64, error) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok || r.Sign() < 0 {
		return 0, fmt.Errorf("%q is not a USDC amount", s)
	}
	r.Mul(r, big.NewRat(events.QuotePrecision, 1))
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, fmt.Errorf("%q has more than 6 decimals or is too large", s)
	}
	return r.Num().Int64(), nil
}

// Upkeep intervals: signatures are pruned once a minute (they are refused by the clock past their
// window anyway), and occurrences whose account became known beside them are delivered within a few
// seconds.
const (
	pruneEvery   = time.Minute
	pendingEvery = 5 * time.Second
)

// Service declares the notify service with cfg; zero values take the defaults (SetDefaults, which
// the kit applies). When the kit runs it as a process, the environment sets every value (RegisterEnv).
func Service(cfg Config) kit.Service {
	return kit.Configure(kit.Service{
		Name:       "notify",
		Migrations: migrations.FS,
		Prefixes:   []string{"/notifications"},
		Publishes:  []string{events.TopicEdgeNotifications},
	}, cfg, func(d kit.Deps, c Config) (kit.Parts, error) {
		clock := c.Clock
		if clock == nil {
			clock = d.Now
		}
		store := postgres.NewStore(d.Pool, d.Schema)
		in := postgres.NewIngest(d.Schema, postgres.IngestConfig{FundingMinimum: c.FundingMinimum, EdgeWindow: c.EdgeWindow}, d.Now)
		upkeep := postgres.NewUpkeep(d.Pool, in, clock)
		v := &notify.Verifier{Action: notify.ActionNotifications, Window: c.AuthWindow, Now: clock, Signatures: store, Accounts: store}
		return kit.Parts{
			Sinks:  in.Sinks(),
			Routes: func(api *httpapi.API) { notifyhttp.Routes(api, store, v) },
			// The WebSocket edge reads a wallet's channel seq here before it acknowledges a
			// subscription to a wallet it has seen no message of.
			Internal: func(api *httpapi.API) { notifyhttp.Internal(api, store) },
			Jobs: []kit.Job{
				{Name: "signature pruning", Run: every(pruneEvery, d, func(ctx context.Context) error {
					_, err := upkeep.PruneSignatures(ctx, c.AuthWindow)
					return err
				})},
				{Name: "pending delivery", Run: every(pendingEvery, d, func(ctx context.Context) error {
					_, err := upkeep.DeliverPending(ctx)
					return err
				})},
			},
		}, nil
	})
}

// every runs f each interval until ctx ends. A failure is logged and tried again next time: the
// work is upkeep, and Postgres being away for a while must not stop the service.
func every(interval time.Duration, d kit.Deps, f func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		return app.Every(ctx, interval, func(ctx context.Context) {
			if err := f(ctx); err != nil && ctx.Err() == nil {
				d.Logger.Warn("notify upkeep failed", "err", err)
			}
		})
	}
}
