// Package outbox publishes Kafka messages only once the transaction that produced them has
// committed: Add stores them in <schema>.outbox inside that transaction, and a Publisher
// drains the table to Kafka. A crash between the two leaves rows that the next run publishes.
// Delivery is at least once: a crash after the Kafka write and before the delete repeats them.
//
// Add also numbers the messages of the WebSocket edge's channels (those with an
// events.HeaderEdgeChannel header): each channel's counter in <schema>.outbox_seq moves by the
// channel's messages in the same transaction, and each message carries its number in
// events.HeaderEdgeSeq. A repeated delivery repeats the number, so a reader drops it by arithmetic.
package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/telemetry"
)

// Add stores msgs in <schema>.outbox within tx, in order, together with the trace context of
// ctx so that the published messages continue the trace of the write that produced them.
//
// Messages naming a channel (events.InChannel) are numbered first: the k-th message of a channel
// in msgs gets the channel's counter plus k. The counter row stays locked until tx ends, so a
// concurrent transaction numbering the same channel waits for this one's commit (or rollback, which
// gives its numbers back) and continues after it: per channel, numbers follow commit order with no
// hole, and rows of a later number get later ids, so the Publisher sends them in number order.
func Add(ctx context.Context, tx pgx.Tx, schema string, msgs ...events.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	seqs, err := number(ctx, tx, schema, msgs)
	if err != nil {
		return err
	}
	rows := make([][]any, len(msgs))
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("outbox: message %d has no topic", i)
		}
		km := kafka.ToKafka(ctx, m)
		var headers map[string]string
		if len(km.Headers) > 0 || seqs[i] > 0 {
			headers = make(map[string]string, len(km.Headers)+1)
			for _, h := range km.Headers {
				headers[h.Key] = string(h.Value)
			}
		}
		if seqs[i] > 0 {
			headers[events.HeaderEdgeSeq] = strconv.FormatInt(seqs[i], 10)
		}
		value := m.Value
		if value == nil {
			value = []byte{}
		}
		rows[i] = []any{m.Topic, m.Key, value, headers}
	}
	// COPY keeps the rows' order, so ids follow it.
	_, err = tx.CopyFrom(ctx, pgx.Identifier{schema, "outbox"}, []string{"topic", "key", "value", "headers"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("outbox: add %d messages: %w", len(msgs), err)
	}
	return nil
}

// number moves the counter of every channel msgs name by its number of messages and returns each
// message's number (0: no channel). The rows are upserted in channel order, so two transactions
// numbering the same channels lock them in the same order and cannot deadlock on them.
func number(ctx context.Context, tx pgx.Tx, schema string, msgs []events.Message) ([]int64, error) {
	counts := map[string]int64{}
	for _, m := range msgs {
		if c := m.Headers[events.HeaderEdgeChannel]; c != "" {
			counts[c]++
		}
	}
	seqs := make([]int64, len(msgs))
	if len(counts) == 0 {
		return seqs, nil
	}
	channels := slices.Sorted(maps.Keys(counts))
	ns := make([]int64, len(channels))
	for i, c := range channels {
		ns[i] = counts[c]
	}
	rows, err := tx.Query(ctx, `INSERT INTO `+pgx.Identifier{schema, "outbox_seq"}.Sanitize()+` AS o (channel, seq)
		SELECT c, n FROM unnest($1::text[], $2::bigint[]) AS u(c, n) ORDER BY c
		ON CONFLICT (channel) DO UPDATE SET seq = o.seq + excluded.seq
		RETURNING channel, seq`, channels, ns)
	if err != nil {
		return nil, fmt.Errorf("outbox: number %d channels: %w", len(channels), err)
	}
	next := make(map[string]int64, len(channels)) // the number of each channel's next message
	var channel string
	var last int64
	if _, err := pgx.ForEachRow(rows, []any{&channel, &last}, func() error {
		next[channel] = last - counts[channel] + 1
		return nil
	}); err != nil {
		return nil, fmt.Errorf("outbox: number %d channels: %w", len(channels), err)
	}
	for i, m := range msgs {
		if c := m.Headers[events.HeaderEdgeChannel]; c != "" {
			seqs[i] = next[c]
			next[c]++
		}
	}
	return seqs, nil
}

// Querier is what Seqs reads with: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Seqs returns the number of the last message queued in every channel of schema whose name starts
// with prefix ("" for all). A snapshot read in the same transaction as the state it describes (one
// at repeatable read) is current to exactly these numbers: the channel's next message is one more.
func Seqs(ctx context.Context, q Querier, schema, prefix string) (map[string]int64, error) {
	rows, err := q.Query(ctx, `SELECT channel, seq FROM `+pgx.Identifier{schema, "outbox_seq"}.Sanitize()+
		` WHERE starts_with(channel, $1)`, prefix)
	if err != nil {
		return nil, fmt.Errorf("outbox: read channel numbers: %w", err)
	}
	out := map[string]int64{}
	var channel string
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&channel, &seq}, func() error {
		out[channel] = seq
		return nil
	}); err != nil {
		return nil, fmt.Errorf("outbox: read channel numbers: %w", err)
	}
	return out, nil
}

// Seq returns the number of the last message queued in channel (0: none yet), by the counter's
// key: one row however many channels the schema numbers, where Seqs with the channel as its prefix
// would scan them all (and name the channels it prefixes too, notifications:<a> of notifications:<ab>).
func Seq(ctx context.Context, q Querier, schema, channel string) (int64, error) {
	rows, err := q.Query(ctx, `SELECT seq FROM `+pgx.Identifier{schema, "outbox_seq"}.Sanitize()+` WHERE channel = $1`, channel)
	if err != nil {
		return 0, fmt.Errorf("outbox: read the number of %s: %w", channel, err)
	}
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&seq}, func() error { return nil }); err != nil {
		return 0, fmt.Errorf("outbox: read the number of %s: %w", channel, err)
	}
	return seq, nil
}

// Config tunes a Publisher; zero values take the defaults.
type Config struct {
	// BatchSize is the most rows written to Kafka in one transaction (default 500).
	BatchSize int
	// PollInterval is how often the outbox is drained without a wake-up (default 1s): the
	// consumer wakes the publisher after each commit, so this only bounds the delay of rows left by a
	// crash or by another replica.
	PollInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed drains (defaults 100ms and 10s).
	MinBackoff, MaxBackoff time.Duration
}

// DefaultConfig is every knob's default, stated once: the defaults of RegisterEnv's variables, and
// what WithDefaults gives a field left zero.
func DefaultConfig() Config {
	return Config{BatchSize: 500, PollInterval: time.Second, MinBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
}

// RegisterEnv sets the knobs from TIDEMARK_OUTBOX_BATCH_SIZE and TIDEMARK_OUTBOX_POLL_INTERVAL
// (defaults when unset).
func (c *Config) RegisterEnv(e *app.Env) {
	d := DefaultConfig()
	c.BatchSize = e.Int("OUTBOX_BATCH_SIZE", d.BatchSize)
	c.PollInterval = e.Duration("OUTBOX_POLL_INTERVAL", d.PollInterval)
}

// Validate reports every value out of range, naming its environment variable. Zero values are
// valid: they take the defaults.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		errs = append(errs, fmt.Errorf("%sOUTBOX_BATCH_SIZE must be 1..10000, got %d", app.EnvPrefix, c.BatchSize))
	}
	if c.PollInterval < 10*time.Millisecond || c.PollInterval > time.Hour {
		errs = append(errs, fmt.Errorf("%sOUTBOX_POLL_INTERVAL must be 10ms..1h, got %s", app.EnvPrefix, c.PollInterval))
	}
	if c.MinBackoff <= 0 || c.MaxBackoff < c.MinBackoff {
		errs = append(errs, fmt.Errorf("outbox backoff %s..%s is empty", c.MinBackoff, c.MaxBackoff))
	}
	return errors.Join(errs...)
}

// WithDefaults is c with each zero field set to its default.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	c.BatchSize = cmp.Or(c.BatchSize, d.BatchSize)
	c.PollInterval = cmp.Or(c.PollInterval, d.PollInterval)
	c.MinBackoff = cmp.Or(c.MinBackoff, d.MinBackoff)
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(d.MaxBackoff, c.MinBackoff)
	}
	return c
}

// Publisher moves outbox rows to Kafka in id order and deletes them once written.
type Publisher struct {
	cfg    Config
	pool   *pgxpool.Pool
	schema string
	table  string // quoted <schema>.outbox
	w      *kafkago.Writer
	naming kafka.Naming
	logger *slog.Logger
	wake   chan struct{}

	published prometheus.Counter
	failures  prometheus.Counter
}

// NewPublisher returns a publisher of schema's outbox writing with out (whose writer's Topic must be
// empty: each row names its topic, by the mesh's name, which out's Naming renames for the brokers).
// The caller closes the writer after Run returns. Metrics go to reg when not nil.
func NewPublisher(cfg Config, pool *pgxpool.Pool, schema string, out kafka.Producer, logger *slog.Logger, reg prometheus.Registerer) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{
		cfg:    cfg,
		pool:   pool,
		schema: schema,
		table:  pgx.Identifier{schema, "outbox"}.Sanitize(),
		w:      out.W,
		naming: out.Naming,
		logger: logger.With("outbox", schema),
		wake:   make(chan struct{}, 1),
	}
	p.published = telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tidemark_outbox_published_total",
		Help: "Outbox messages written to Kafka and deleted.",
	}))
	p.failures = telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tidemark_outbox_failures_total",
		Help: "Failed outbox drains (Postgres or Kafka), retried with backoff.",
	}))
	return p, nil
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
	poll := time.NewTicker(p.cfg.PollInterval)
	defer poll.Stop()
	backoff := p.cfg.MinBackoff
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
			backoff = min(2*backoff, p.cfg.MaxBackoff)
			continue
		}
		backoff = p.cfg.MinBackoff
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
		if n < p.cfg.BatchSize {
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
	rows, err := tx.Query(ctx, `SELECT id, topic, key, value, headers FROM `+p.table+` ORDER BY id LIMIT $1`, p.cfg.BatchSize)
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
	p.naming.Outgoing(msgs)
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
