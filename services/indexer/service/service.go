// Package service declares the indexer to the kit: its schema (the checkpoint), the protocol topics
// it produces and its job, the indexer itself. The command and the dev stack both run this
// declaration.
package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/indexer"
	"github.com/tidemark/tidemark/services/indexer/postgres"
	"github.com/tidemark/tidemark/services/indexer/postgres/migrations"
)

// Topics are the topics the indexer writes: every protocol topic with an on-chain source. Account
// snapshots, vaults and params have none yet.
var Topics = []string{
	events.TopicFills, events.TopicOrderActions, events.TopicOrders, events.TopicFundingRates, events.TopicFundingPayments,
	events.TopicLiquidations, events.TopicDeposits, events.TopicSwaps, events.TopicSettlePnl, events.TopicLP,
	events.TopicInsuranceFund, events.TopicIFStakes, events.TopicLPMintRedeem, events.TopicNewUsers, events.TopicMarketStates,
}

// Config is the indexer's configuration; zero values take the defaults.
type Config struct {
	// RPC is the Solana JSON-RPC endpoint (TIDEMARK_INDEXER_RPC_*). A request may be a getBlock of
	// a full block, megabytes: its timeout defaults to 30 s.
	RPC rpc.Endpoint
	indexer.Config
}

// RegisterEnv reads the TIDEMARK_INDEXER_* variables.
func (c *Config) RegisterEnv(e *app.Env) {
	c.RPC.RegisterEnv(e, "INDEXER", 30*time.Second)
	c.Start = uint64(e.Int("INDEXER_START_SLOT", 0))
	c.InFlight = e.Int("INDEXER_IN_FLIGHT", 8)
	c.Span = uint64(e.Int("INDEXER_SPAN", 2000))
	c.BatchEvents = e.Int("INDEXER_BATCH_EVENTS", 10000)
	c.Poll = e.Duration("INDEXER_POLL", 400*time.Millisecond)
	c.ReadyLag = uint64(e.Int("INDEXER_READY_LAG", 150))
	c.Accounts = e.Duration("INDEXER_ACCOUNTS_INTERVAL", 2*time.Second)
	c.StateEvery = e.Duration("INDEXER_STATE_EVERY", time.Minute)
}

// SetDefaults sets every zero field to its default.
func (c *Config) SetDefaults() {
	if c.RPC.Timeout <= 0 {
		c.RPC.Timeout = 30 * time.Second
	}
	c.Config.SetDefaults()
}

// Validate reports every value out of range, naming its variable.
func (c Config) Validate() error {
	errs := []error{c.RPC.Validate("INDEXER")}
	bad := func(name, want string, got any) {
		errs = append(errs, fmt.Errorf("%sINDEXER_%s must be %s, got %v", app.EnvPrefix, name, want, got))
	}
	if c.InFlight > 256 {
		bad("IN_FLIGHT", "at most 256", c.InFlight)
	}
	if c.Span > rpc.MaxBlocksRange {
		bad("SPAN", fmt.Sprintf("at most %d", rpc.MaxBlocksRange), c.Span)
	}
	if c.Poll > time.Minute {
		bad("POLL", "at most 1m", c.Poll)
	}
	if c.Accounts < 100*time.Millisecond {
		bad("ACCOUNTS_INTERVAL", "at least 100ms", c.Accounts)
	}
	return errors.Join(errs...)
}

// Name is the indexer's name in the mesh, and its schema's.
const Name = "indexer"

// Service declares the indexer with cfg.
func Service(cfg Config) kit.Service {
	return kit.Configure(kit.Service{
		Name:       Name,
		Migrations: migrations.FS,
		Produces:   Topics,
	}, cfg, func(d kit.Deps, cfg Config) (kit.Parts, error) {
		endpoint, err := cfg.RPC.Options()
		if err != nil {
			return kit.Parts{}, err
		}
		w := d.Kafka.NewWriter("")
		// Backfill throughput: large batches; following the tip, a batch is written as soon as its
		// slots are read, and the writer's own wait adds to the latency.
		w.BatchSize = 5000
		w.BatchTimeout = 2 * time.Millisecond
		idx, err := indexer.New(cfg.Config, indexer.Options{
			RPC:    endpoint,
			Store:  postgres.NewStore(d.Pool, d.Schema),
			Out:    kafka.Producer{W: w, Naming: d.Kafka.Naming},
			Logger: d.Logger, Registerer: d.Registerer, Now: d.Now,
		})
		if err != nil {
			return kit.Parts{}, err
		}
		return kit.Parts{
			Jobs: []kit.Job{{Name: "indexer", Run: func(ctx context.Context) error {
				defer w.Close()
				return idx.Run(ctx)
			}}},
			Ready: idx.Ready,
		}, nil
	})
}
