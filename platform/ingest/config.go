package ingest

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/platform/app"
)

// Config tunes a Consumer. Zero durations and sizes take the defaults.
type Config struct {
	// Group is the Kafka consumer group, also the key of the stored offsets.
	Group string
	// Schema holds <Schema>.kafka_offsets (created by pg.Migrate).
	Schema string
	// BatchSize is the most messages written in one transaction (default DefaultBatchSize). Each
	// transaction has a fixed cost (its round trips to Postgres and a Kafka commit), which small
	// batches pay often: smaller batches ingest a backlog markedly slower. Under light load
	// BatchWait closes batches long before they fill, so the size only matters in a backlog.
	BatchSize int
	// BatchWait is how long a batch stays open for more messages after its first (default 100ms).
	BatchWait time.Duration
	// Writers is how many batches are written at once, each in its own transaction on its own
	// connection (default DefaultWriters). A topic partition is always written by the same writer,
	// so its batches commit in order; partition p of every topic goes to writer p mod Writers (see
	// WriterOf). One writer keeps one Postgres backend busy, and a backlog then waits on that
	// backend's core while the database's others idle.
	Writers int
	// MinBackoff and MaxBackoff bound the wait between retries of a failed batch
	// (defaults 100ms and 10s).
	MinBackoff, MaxBackoff time.Duration
	// ShutdownGrace bounds finishing the in-flight batch once Run's context ends (default 10s).
	ShutdownGrace time.Duration
	// SessionTimeout is how long the group's coordinator waits for a replica that stopped
	// heartbeating (killed, cut off) before it gives that replica's partitions to the others
	// (default 30s). A replica that stops cleanly hands its partitions over at once.
	SessionTimeout time.Duration
}

// Defaults of Config, also those of its environment variables.
const (
	DefaultBatchSize = 10000
	DefaultBatchWait = 100 * time.Millisecond
	DefaultWriters   = 2
	// MaxWriters bounds Writers: each writer is a Postgres connection and a core's worth of COPY,
	// and a topic spreads over no more writers than it has partitions.
	MaxWriters = 16
	// MaxBatchSize bounds BatchSize: a batch is held in memory whole, and its transaction holds its
	// rows' locks until it commits.
	MaxBatchSize = 100_000
	// DefaultSessionTimeout is Kafka's classic default, within every broker's allowed range.
	DefaultSessionTimeout = 30 * time.Second
)

// DefaultConfig is every knob's default, stated once: the defaults of RegisterEnv's variables, and
// what WithDefaults gives a field left zero.
func DefaultConfig() Config {
	return Config{
		BatchSize: DefaultBatchSize, BatchWait: DefaultBatchWait, Writers: DefaultWriters,
		MinBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second,
		ShutdownGrace: 10 * time.Second, SessionTimeout: DefaultSessionTimeout,
	}
}

// RegisterEnv sets the knobs a platform team tunes from the environment (defaults when unset):
// TIDEMARK_INGEST_BATCH_SIZE, TIDEMARK_INGEST_BATCH_WAIT, TIDEMARK_INGEST_WRITERS,
// TIDEMARK_INGEST_MAX_BACKOFF and TIDEMARK_INGEST_SESSION_TIMEOUT. Group and Schema are the
// service's, set by the kit.
func (c *Config) RegisterEnv(e *app.Env) {
	d := DefaultConfig()
	c.BatchSize = e.Int("INGEST_BATCH_SIZE", d.BatchSize)
	c.BatchWait = e.Duration("INGEST_BATCH_WAIT", d.BatchWait)
	c.Writers = e.Int("INGEST_WRITERS", d.Writers)
	c.MaxBackoff = e.Duration("INGEST_MAX_BACKOFF", d.MaxBackoff)
	c.SessionTimeout = e.Duration("INGEST_SESSION_TIMEOUT", d.SessionTimeout)
}

// Validate reports every value out of range, naming its environment variable. Zero values are not
// accepted here: validate WithDefaults' result, as NewConsumer does.
func (c Config) Validate() error {
	var errs []error
	if c.BatchSize < 1 || c.BatchSize > MaxBatchSize {
		errs = append(errs, fmt.Errorf("%sINGEST_BATCH_SIZE must be 1..%d, got %d", app.EnvPrefix, MaxBatchSize, c.BatchSize))
	}
	if c.BatchWait < time.Millisecond || c.BatchWait > time.Minute {
		errs = append(errs, fmt.Errorf("%sINGEST_BATCH_WAIT must be 1ms..1m, got %s", app.EnvPrefix, c.BatchWait))
	}
	if c.Writers < 1 || c.Writers > MaxWriters {
		errs = append(errs, fmt.Errorf("%sINGEST_WRITERS must be 1..%d, got %d", app.EnvPrefix, MaxWriters, c.Writers))
	}
	if c.MaxBackoff < c.MinBackoff || c.MaxBackoff > 10*time.Minute {
		errs = append(errs, fmt.Errorf("%sINGEST_MAX_BACKOFF must be %s..10m, got %s", app.EnvPrefix, c.MinBackoff, c.MaxBackoff))
	}
	// Kafka brokers accept 6s..30m by default (group.min/max.session.timeout.ms).
	if c.SessionTimeout < 6*time.Second || c.SessionTimeout > 30*time.Minute {
		errs = append(errs, fmt.Errorf("%sINGEST_SESSION_TIMEOUT must be 6s..30m, got %s", app.EnvPrefix, c.SessionTimeout))
	}
	return errors.Join(errs...)
}

// WithDefaults is c with each zero field (a non-positive backoff or grace) set to its default.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	c.BatchSize = cmp.Or(c.BatchSize, d.BatchSize)
	c.BatchWait = cmp.Or(c.BatchWait, d.BatchWait)
	c.Writers = cmp.Or(c.Writers, d.Writers)
	if c.MinBackoff <= 0 {
		c.MinBackoff = d.MinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(d.MaxBackoff, c.MinBackoff)
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = d.ShutdownGrace
	}
	c.SessionTimeout = cmp.Or(c.SessionTimeout, d.SessionTimeout)
	return c
}
