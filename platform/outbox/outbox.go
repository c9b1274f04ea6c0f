// Package outbox publishes Kafka messages only once the transaction that produced them has
// committed: Add stores them in <schema>.outbox inside that transaction, and a Publisher
// drains the table to Kafka. A crash between the two leaves rows that the next run publishes.
// Delivery is at least once: a crash after the Kafka write and before the delete repeats them.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
)

// Add stores msgs in <schema>.outbox within tx, in order, together with the trace context of
// ctx so that the published messages continue the trace of the write that produced them.
func Add(ctx context.Context, tx pgx.Tx, schema string, msgs ...events.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	rows := make([][]any, len(msgs))
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("outbox: message %d has no topic", i)
		}
		km := kafka.ToKafka(ctx, m)
		var headers map[string]string
		if len(km.Headers) > 0 {
			headers = make(map[string]string, len(km.Headers))
			for _, h := range km.Headers {
				headers[h.Key] = string(h.Value)
			}
		}
		value := m.Value
		if value == nil {
			value = []byte{}
		}
		rows[i] = []any{m.Topic, m.Key, value, headers}
	}
	// COPY keeps the rows' order, so ids follow it.
	_, err := tx.CopyFrom(ctx, pgx.Identifier{schema, "outbox"}, []string{"topic", "key", "value", "headers"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("outbox: add %d messages: %w", len(msgs), err)
	}
	return nil
}

// Publisher moves outbox rows to Kafka in id order and deletes them once written.
type Publisher struct {
	// BatchSize (500), PollInterval (1s), MinBackoff (100ms) and MaxBackoff (10s) may be changed
	// before Run.
	BatchSize    int
	PollInterval time.Duration
	MinBackoff   time.Duration
	MaxBackoff   time.Duration

	pool   *pgxpool.Pool
	schema string
	table  string // quoted <schema>.outbox
	w      *kafkago.Writer
	logger *slog.Logger
	wake   chan struct{}

	published prometheus.Counter
	failures  prometheus.Counter
}

// NewPublisher returns a publisher writing with w (whose Topic must be empty: each row names
// its topic). The caller closes w after Run returns. Metrics go to reg when not nil.
func NewPublisher(pool *pgxpool.Pool, schema string, w *kafkago.Writer, logger *slog.Logger, reg prometheus.Registerer) *Publisher {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{
		pool:         pool,
		schema:       schema,
		table:        pgx.Identifier{schema, "outbox"}.Sanitize(),
		w:            w,
		logger:       logger.With("outbox", schema),
		wake:         make(chan struct{}, 1),
		BatchSize:    500,
		PollInterval: time.Second,
		MinBackoff:   100 * time.Millisecond,
		MaxBackoff:   10 * time.Second,
	}
	p.published = register(reg, logger, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tidemark_outbox_published_total",
		Help: "Outbox messages written to Kafka and deleted.",
	}))
	p.failures = register(reg, logger, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tidemark_outbox_failures_total",
		Help: "Failed outbox drains (Postgres or Kafka), retried with backoff.",
	}))
	return p
}

// register tolerates a second publisher on the same registerer (the dev stack runs several
// services in one process) by sharing the counter already registered.
func register(reg prometheus.Registerer, logger *slog.Logger, c prometheus.Counter) prometheus.Counter {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
				return existing
			}
		}
		logger.Warn("outbox: metric not registered", "err", err)
	}
	return c
}

// Wake asks Run to drain now instead of at the next poll. It never blocks.
func (p *Publisher) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run drains the outbox at start, on Wake and every PollInterval until ctx ends, backing off
// while Postgres or Kafka fail. It returns nil when ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	poll := time.NewTicker(p.PollInterval)
	defer poll.Stop()
	backoff := p.MinBackoff
	for {
		err := p.drain(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			p.failures.Inc()
			p.logger.Warn("outbox drain failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, p.MaxBackoff)
			continue
		}
		backoff = p.MinBackoff
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-poll.C:
		}
	}
}

// drain publishes batches until the outbox is empty (or another replica holds it).
func (p *Publisher) drain(ctx context.Context) error {
	for {
		n, err := p.publishBatch(ctx)
		if err != nil {
			return err
		}
		if n < p.BatchSize {
			return nil
		}
	}
}

// publishBatch writes the oldest rows to Kafka and deletes them, in one transaction that holds
// the schema's outbox lock: one replica publishes at a time, so the order holds across replicas.
func (p *Publisher) publishBatch(ctx context.Context) (int, error) {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('tidemark.outbox:' || $1, 0))`, p.schema).Scan(&locked); err != nil {
		return 0, fmt.Errorf("lock: %w", err)
	}
	if !locked {
		return 0, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, topic, key, value, headers FROM `+p.table+` ORDER BY id LIMIT $1`, p.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	var (
		ids  []int64
		msgs []kafkago.Message
		row  struct {
			id         int64
			topic      string
			key, value []byte
			headers    map[string]string
		}
	)
	_, err = pgx.ForEachRow(rows, []any{&row.id, &row.topic, &row.key, &row.value, &row.headers}, func() error {
		m := kafkago.Message{Topic: row.topic, Key: row.key, Value: row.value}
		for _, k := range slices.Sorted(maps.Keys(row.headers)) {
			m.Headers = append(m.Headers, kafkago.Header{Key: k, Value: []byte(row.headers[k])})
		}
		ids = append(ids, row.id)
		msgs = append(msgs, m)
		row.headers = nil
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return 0, fmt.Errorf("write %d messages to kafka: %w", len(msgs), err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+p.table+` WHERE id = ANY($1)`, ids); err != nil {
		return 0, fmt.Errorf("delete published: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	p.published.Add(float64(len(msgs)))
	return len(msgs), nil
}
