package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/services/stats"
)

// The edge topics' messages, which the WebSocket edge forwards to its markets and pricing channels:
//
//   - edge.markets: one message per changed market, value the market's summary exactly as
//     /stats/markets serves it among its records (stats.MarketSummary), event type "marketSummary".
//   - edge.pricing: one message per changed market, value its pricing data (stats.Pricing: symbol,
//     marketIndex, marketType, oraclePrice, oraclePriceSlot, price, markPrice, markPriceSlot), event
//     type "pricing".
//
// Each topic is one WebSocket channel (events.MarketsChannel, events.PricingChannel), whose messages
// the outbox numbers; the key is the channel, so that the whole channel sits in one partition and
// every edge replica reads it in the order of its numbers.
//
// A market is published to a topic when its value there differs from its last publication, at most
// once per MinEdgeInterval; GET /internal/edge/markets and /internal/edge/pricing serve the last
// publication of every market, {"success":true,"data":[...]}, for the edge's init messages.

// MinEdgeInterval is the shortest time between two publications of one market to one edge topic.
const MinEdgeInterval = time.Second

// edgeTick is how often the publisher looks for changes: a change waits at most this long once its
// market may be published again.
const edgeTick = 250 * time.Millisecond

// Publisher publishes the markets' summaries and pricing to the edge topics through the outbox,
// after the commits that changed them: every tick it reads every market as committed, and queues the
// markets whose value changed since their last publication, at most once per MinEdgeInterval each.
// Replicas take turns under an advisory lock; the last publications are shared in edge_published.
type Publisher struct {
	store *Store           // what it reads the markets with, and the schema it publishes from
	now   func() time.Time // the data's clock: the end of the 24-hour window
	clock func() time.Time // the wall clock, which throttles
}

// NewPublisher publishes schema's markets; now is the data's clock.
func NewPublisher(pool *pgxpool.Pool, schema string, now func() time.Time) *Publisher {
	return &Publisher{store: NewStore(pool, schema), now: now, clock: time.Now}
}

// Background is the stats service's own work beside its consumer: the edge publisher every edgeTick
// and the fold of the wallets' deltas every foldTicks ticks.
type Background struct {
	edge   *Publisher
	fold   *Folder
	wake   func()
	logger *slog.Logger
}

// foldTicks is how many edge ticks pass between folds: a second.
const foldTicks = 4

// NewBackground runs schema's publisher and fold. now is the data's clock; wake (nil: none) asks the
// outbox to publish at once what a tick queued.
func NewBackground(pool *pgxpool.Pool, schema string, now func() time.Time, wake func(), logger *slog.Logger) *Background {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "background")
	return &Background{edge: NewPublisher(pool, schema, now), fold: NewFolder(pool, schema), wake: wake, logger: logger}
}

// Run folds and publishes until ctx ends. A failure (Postgres unreachable) is logged once per
// outage of each task and tried again at its next turn.
func (b *Background) Run(ctx context.Context) error {
	t := time.NewTicker(edgeTick)
	defer t.Stop()
	var foldFailing, edgeFailing bool
	report := func(what string, err error, failing *bool) {
		switch {
		case ctx.Err() != nil:
		case err != nil && !*failing:
			*failing = true
			b.logger.Warn(what+" failed; retrying", "err", err)
		case err == nil && *failing:
			*failing = false
			b.logger.Info(what + " works again")
		}
	}
	for tick := 0; ; tick++ {
		if tick%foldTicks == 0 {
			report("the fold of the wallets' deltas", b.fold.Fold(ctx), &foldFailing)
		}
		n, err := b.edge.Publish(ctx)
		report("edge publication", err, &edgeFailing)
		if n > 0 && b.wake != nil {
			b.wake()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// edgeChannel is the WebSocket channel of an edge topic of the service.
func edgeChannel(topic string) (string, error) {
	switch topic {
	case events.TopicEdgeMarkets:
		return events.MarketsChannel, nil
	case events.TopicEdgePricing:
		return events.PricingChannel, nil
	}
	return "", fmt.Errorf("%s is not an edge topic of the stats service", topic)
}

type published struct {
	value []byte
	at    time.Time
}

// Publish queues the changed markets once and returns how many messages it queued.
func (p *Publisher) Publish(ctx context.Context) (int, error) {
	tx, err := p.store.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`, p.store.Schema+".edge").Scan(&mine); err != nil {
		return 0, fmt.Errorf("take the edge lock: %w", err)
	}
	if !mine {
		return 0, nil // another replica publishes
	}
	data, err := p.store.marketData(ctx, tx, stats.Rolling(p.now(), 24*time.Hour))
	if err != nil {
		return 0, err
	}
	last := map[[2]string]published{}
	rows, err := tx.Query(ctx, `SELECT topic, symbol, value::text, published_at FROM `+p.store.t.edgePublished)
	if err != nil {
		return 0, fmt.Errorf("read the last publications: %w", err)
	}
	var topic, symbol, value string
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&topic, &symbol, &value, &at}, func() error {
		last[[2]string{topic, symbol}] = published{[]byte(value), at}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("read the last publications: %w", err)
	}

	now := p.clock()
	var msgs []events.Message
	var topics, symbols, values []string
	queue := func(topic, eventType, symbol string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s of %s: %w", topic, symbol, err)
		}
		prev, ok := last[[2]string{topic, symbol}]
		if ok && (bytes.Equal(prev.value, b) || now.Sub(prev.at) < MinEdgeInterval) {
			return nil
		}
		channel, err := edgeChannel(topic)
		if err != nil {
			return err
		}
		m, err := events.NewMessage(topic, channel, eventType, json.RawMessage(b))
		if err != nil {
			return err
		}
		msgs = append(msgs, events.InChannel(m, channel))
		topics, symbols, values = append(topics, topic), append(symbols, symbol), append(values, string(b))
		return nil
	}
	for _, d := range data {
		if err := queue(events.TopicEdgeMarkets, "marketSummary", d.Market.Symbol, d.Summary()); err != nil {
			return 0, err
		}
		if err := queue(events.TopicEdgePricing, "pricing", d.Market.Symbol, d.Pricing()); err != nil {
			return 0, err
		}
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if err := outbox.Add(ctx, tx, p.store.Schema, msgs...); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+p.store.t.edgePublished+` AS e (topic, symbol, value, published_at)
		SELECT t, s, v, $4 FROM unnest($1::text[], $2::text[], $3::json[]) AS u(t, s, v)
		ON CONFLICT (topic, symbol) DO UPDATE SET value = excluded.value, published_at = excluded.published_at`,
		topics, symbols, values, now); err != nil {
		return 0, fmt.Errorf("record the publications: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return len(msgs), nil
}
