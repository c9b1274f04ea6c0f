// Package service declares the amm service to the kit: its schema (raw states in daily partitions
// kept for the raw retention, and the rollup), the topic it consumes and the five series' routes. The
// command and the dev stack both run this declaration.
package service

import (
	"cmp"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/pg"
	ammhttp "github.com/tidemark/tidemark/services/amm/http"
	"github.com/tidemark/tidemark/services/amm/postgres"
	"github.com/tidemark/tidemark/services/amm/postgres/migrations"
)

// DefaultRawRetention is Config.RawRetention when none is set.
const DefaultRawRetention = 35 * 24 * time.Hour

// Config is the amm service's own configuration; zero values take the defaults.
type Config struct {
	// RawRetention is how long the per-slot states are kept (TIDEMARK_AMM_RAW_RETENTION): their
	// daily partitions are dropped once older. The rollup the answers read is kept for good.
	RawRetention time.Duration
}

// RegisterEnv reads TIDEMARK_AMM_RAW_RETENTION.
func (c *Config) RegisterEnv(e *app.Env) {
	c.RawRetention = e.Duration("AMM_RAW_RETENTION", DefaultRawRetention)
}

// SetDefaults sets a zero retention to DefaultRawRetention.
func (c *Config) SetDefaults() { c.RawRetention = cmp.Or(c.RawRetention, DefaultRawRetention) }

// Validate reports a retention out of range, naming its variable: a day at least (partitions are
// daily), ten years at most.
func (c Config) Validate() error {
	if c.RawRetention < 24*time.Hour || c.RawRetention > 10*365*24*time.Hour {
		return fmt.Errorf("%sAMM_RAW_RETENTION must be between 24h and 87600h, got %s", app.EnvPrefix, c.RawRetention)
	}
	return nil
}

// Service declares the amm service with cfg.
func Service(cfg Config) kit.Service {
	return kit.Configure(kit.Service{
		Name:       "amm",
		Migrations: migrations.FS,
		Prefixes:   []string{"/amm/"},
	}, cfg, func(d kit.Deps, cfg Config) (kit.Parts, error) {
		retention := cfg.RawRetention
		store := postgres.NewStore(d.Pool, d.Schema)
		return kit.Parts{
			Sinks:  postgres.NewIngest(d.Schema, retention, d.Now).Sinks(),
			Routes: func(api *httpapi.API) { ammhttp.Routes(api, store) },
			Partitions: []kit.Partitioning{
				{Table: postgres.StatesTable, Period: pg.Daily, Retention: retention},
			},
		}, nil
	})
}
