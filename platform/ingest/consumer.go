package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
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

// RegisterEnv sets the knobs a platform team tunes from the environment (defaults when unset):
// TIDEMARK_INGEST_BATCH_SIZE, TIDEMARK_INGEST_BATCH_WAIT, TIDEMARK_INGEST_WRITERS,
// TIDEMARK_INGEST_MAX_BACKOFF and TIDEMARK_INGEST_SESSION_TIMEOUT. Group and Schema are the service's, set by the kit.
func (c *Config) RegisterEnv(e *app.Env) {
	c.BatchSize = e.Int("INGEST_BATCH_SIZE", DefaultBatchSize)
	c.BatchWait = e.Duration("INGEST_BATCH_WAIT", DefaultBatchWait)
	c.Writers = e.Int("INGEST_WRITERS", DefaultWriters)
	c.MaxBackoff = e.Duration("INGEST_MAX_BACKOFF", 10*time.Second)
	c.SessionTimeout = e.Duration("INGEST_SESSION_TIMEOUT", DefaultSessionTimeout)
}

// Validate reports every value out of range, naming its environment variable. Zero values are not
// accepted here: NewConsumer fills them with the defaults before it validates.
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

func (c *Config) defaults() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchWait == 0 {
		c.BatchWait = DefaultBatchWait
	}
	if c.Writers == 0 {
		c.Writers = DefaultWriters
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = max(10*time.Second, c.MinBackoff)
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
}

// DLQ headers added to a message that could not be decoded, next to its own headers.
const (
	HeaderDLQReason    = "dlq-reason"
	HeaderDLQTopic     = "dlq-topic"
	HeaderDLQPartition = "dlq-partition"
	HeaderDLQOffset    = "dlq-offset"
)

// DLQTopic is where undecodable messages of topic go.
func DLQTopic(topic string) string { return topic + ".dlq" }

// attemptTimeout bounds one try at a batch, so a silently dead connection cannot hang ingest.
const attemptTimeout = 2 * time.Minute

// idleCheck is how often an idle consumer checks Postgres, so readiness follows it.
const idleCheck = 5 * time.Second

// Deps are what a Consumer runs on.
type Deps struct {
	Pool  *pgxpool.Pool
	Kafka kafka.Config
	// Logger and Registerer may be nil (nothing logged, metrics unregistered). Consumers of different
	// services sharing a registry register through telemetry.ServiceRegisterer.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// TracerProvider creates one span per batch, linked to the spans of the messages' producers;
	// nil means no tracing.
	TracerProvider trace.TracerProvider
	// BeforeCommit, when set, runs in every attempt at a batch once its sinks have written, just
	// before the commit; an error rolls the attempt back and the batch is tried again, as after any
	// failure. Tests inject failures with it (kittest's RetryEveryBatch), which proves that the
	// sinks' writes can be repeated: a sink that keeps state of an attempt that was rolled back
	// loses or doubles data on the next.
	BeforeCommit func(ctx context.Context, attempt int) error
}

// Consumer reads its sinks' topics as one consumer group and writes them to Postgres.
//
// The offsets stored with the rows are the truth, not Kafka's commits nor the consumer's memory:
// each partition the group assigns is read from the offset after the one Postgres stores for it,
// and every batch locks and checks its partitions' stored offsets in its own transaction. A stored
// offset ahead of what this consumer committed means another replica wrote the partition (it moved
// in a rebalance): what is stored is skipped, so a replica that lost a partition never doubles what
// the new owner writes. A stored offset behind it means Postgres lost commits (a failover to a
// replica that lagged, a restore from a backup): the consumer reads its partitions again from the
// stored offsets, and Kafka's retention gives back what Postgres lost, written once.
type Consumer struct {
	cfg     Config
	pool    *pgxpool.Pool
	kc      kafka.Config
	sinks   map[string]Sink
	topics  []string
	logger  *slog.Logger
	metrics *metrics
	tracer  trace.Tracer

	offsetsTable string // quoted <schema>.kafka_offsets

	mu      sync.Mutex
	hooks   []func(ctx context.Context)
	running bool
	dbErr   error // last Postgres round's (or DLQ write's) error; nil after a success
	dbOK    bool  // a Postgres round has succeeded
	joined  bool  // the group has handed out assignments at least once
	// committed is the last offset this consumer committed per partition, in the epoch it was
	// read in; the idle check compares it with what Postgres stores.
	committed map[topicPartition]position

	epoch  atomic.Uint64                      // bumped each time the partitions are positioned anew
	behind atomic.Uint64                      // the latest epoch in which Postgres was found behind
	rewind chan struct{}                      // wakes the session once behind is set
	gen    atomic.Pointer[kafkago.Generation] // where Kafka commits go

	// afterDBCommit, set only by tests, runs between the Postgres and the Kafka commit; an
	// error ends Run as a crash there would.
	afterDBCommit func(ctx context.Context) error
	beforeCommit  func(ctx context.Context, attempt int) error // Deps.BeforeCommit
}

// NewConsumer checks the configuration (zero values take the defaults) and registers the metrics.
func NewConsumer(cfg Config, d Deps, sinks []Sink) (*Consumer, error) {
	cfg.defaults()
	switch {
	case cfg.Group == "":
		return nil, errors.New("ingest: Config.Group is required")
	case cfg.Schema == "":
		return nil, errors.New("ingest: Config.Schema is required")
	case d.Pool == nil:
		return nil, errors.New("ingest: nil pool")
	case len(d.Kafka.Brokers) == 0:
		return nil, errors.New("ingest: no Kafka brokers")
	case len(sinks) == 0:
		return nil, errors.New("ingest: no sinks")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	logger := d.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tp := d.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	c := &Consumer{
		cfg:          cfg,
		pool:         d.Pool,
		kc:           d.Kafka,
		sinks:        make(map[string]Sink, len(sinks)),
		logger:       logger.With("group", cfg.Group),
		tracer:       tp.Tracer("github.com/tidemark/tidemark/platform/ingest"),
		offsetsTable: pgx.Identifier{cfg.Schema, "kafka_offsets"}.Sanitize(),
		beforeCommit: d.BeforeCommit,
		committed:    make(map[topicPartition]position),
		rewind:       make(chan struct{}, 1),
	}
	for _, s := range sinks {
		t := s.Topic()
		if t == "" {
			return nil, errors.New("ingest: sink with an empty topic")
		}
		if _, dup := c.sinks[t]; dup {
			return nil, fmt.Errorf("ingest: two sinks for topic %s", t)
		}
		c.sinks[t] = s
		c.topics = append(c.topics, t)
	}
	c.metrics = newMetrics(d.Registerer)
	return c, nil
}

// OnCommit registers f to run after every batch is committed to Postgres (e.g. to wake an outbox
// publisher); its Kafka commit may still be under way. f runs on the goroutine of the writer that
// committed, perhaps on several at once, and should return quickly.
func (c *Consumer) OnCommit(f func(ctx context.Context)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = append(c.hooks, f)
}

// Ready is nil when the consumer has joined its group and its last Postgres round succeeded.
func (c *Consumer) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.running:
		return fmt.Errorf("ingest %s: not running", c.cfg.Group)
	case c.dbErr != nil:
		return fmt.Errorf("ingest %s: last batch failed: %w", c.cfg.Group, c.dbErr)
	case !c.dbOK:
		return fmt.Errorf("ingest %s: postgres not checked yet", c.cfg.Group)
	case !c.joined:
		return fmt.Errorf("ingest %s: not joined to the consumer group yet", c.cfg.Group)
	}
	return nil
}

func (c *Consumer) setDB(err error) {
	c.mu.Lock()
	c.dbErr = err
	if err == nil {
		c.dbOK = true
	}
	ready := c.running && c.dbErr == nil && c.dbOK && c.joined
	c.mu.Unlock()
	c.metrics.setReady(ready)
}

func (c *Consumer) setRunning(running bool) {
	c.mu.Lock()
	c.running = running
	c.joined, c.dbOK, c.dbErr = false, false, nil
	c.mu.Unlock()
	c.metrics.setReady(false)
}

func (c *Consumer) setJoined() {
	c.mu.Lock()
	c.joined = true
	ready := c.running && c.dbErr == nil && c.dbOK
	c.mu.Unlock()
	c.metrics.setReady(ready)
}

// Run consumes until ctx ends, then finishes and commits the batches in flight (within
// ShutdownGrace), leaves the group and returns nil. Postgres failures never end Run: the batch is
// kept and retried with backoff while Ready reports the error. Run must be called once.
func (c *Consumer) Run(ctx context.Context) error {
	c.setRunning(true)
	defer c.setRunning(false)
	group, err := c.kc.NewConsumerGroup(c.cfg.Group, c.topics, c.cfg.SessionTimeout)
	if err != nil {
		return fmt.Errorf("ingest %s: %w", c.cfg.Group, err)
	}
	dlq := c.kc.NewWriter("")
	defer func() {
		if err := dlq.Close(); err != nil {
			c.logger.Warn("close dlq writer", "err", err)
		}
		if t, ok := dlq.Transport.(*kafkago.Transport); ok {
			t.CloseIdleConnections()
		}
	}()

	// Batches in flight may still commit after ctx ends, up to the grace period.
	procCtx, cancelProc := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelProc()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		select {
		case <-time.After(c.cfg.ShutdownGrace):
			cancelProc()
		case <-done:
		}
	}()

	fetchCtx, stopFetch := context.WithCancel(ctx)
	// One queue per writer, holding one batch: with it full the fetcher blocks, so a stuck
	// Postgres stops fetching.
	queues := make([]chan *batch, c.cfg.Writers)
	for i := range queues {
		queues[i] = make(chan *batch, 1)
	}
	free := make(chan *batch, 3*c.cfg.Writers)
	in := make(chan fetched, fetchedQueue)
	var wg sync.WaitGroup
	wg.Go(func() { c.follow(fetchCtx, group, in) })
	wg.Go(func() {
		defer func() {
			for _, q := range queues {
				close(q)
			}
		}()
		c.fetchLoop(fetchCtx, in, queues, free)
	})
	defer func() {
		stopFetch()
		wg.Wait()
		// Last, after the final Kafka commits: leaving the group hands the partitions to the other
		// replicas at once.
		if err := group.Close(); err != nil {
			c.logger.Warn("leave consumer group", "err", err)
		}
	}()

	// Kafka commits run beside the next batches. Positions come from Postgres, so these only show
	// the group's progress to Kafka's tools (lag exporters, kafka-consumer-groups). Registered after
	// the group's close, so this runs, and finishes the last commit, first.
	kafkaCommits := make(chan map[string]map[int]int64, c.cfg.Writers)
	committed := make(chan struct{})
	go func() {
		defer close(committed)
		for offsets := range kafkaCommits {
			if gen := c.gen.Load(); gen != nil {
				if err := gen.CommitOffsets(offsets); err != nil {
					c.logger.Debug("kafka commit failed; the offsets stored in Postgres stand", "err", err)
				}
			}
		}
	}()
	defer func() {
		close(kafkaCommits)
		<-committed
	}()

	c.setDB(c.ping(procCtx))
	var (
		writers    sync.WaitGroup
		failMu     sync.Mutex
		failed     error
		lastCommit atomic.Int64 // unix nanoseconds of the last batch committed
	)
	lastCommit.Store(time.Now().UnixNano())
	for _, q := range queues {
		writers.Go(func() {
			w := &writeState{
				stored:  make(map[topicPartition]int64),
				prev:    make(map[topicPartition]position),
				last:    make(map[topicPartition]int),
				records: make(map[string][]any, len(c.sinks)),
				counts:  make(map[string]int, len(c.sinks)),
			}
			// A writer that failed keeps taking its batches, unwritten, until the fetcher stops.
			for b := range q {
				failMu.Lock()
				stop := failed != nil
				failMu.Unlock()
				if stop {
					continue
				}
				if err := c.commitBatch(procCtx, kafkaCommits, dlq, w, b); err != nil {
					failMu.Lock()
					failed = cmp.Or(failed, err)
					failMu.Unlock()
					stopFetch()
					continue
				}
				lastCommit.Store(time.Now().UnixNano())
				select {
				case free <- b:
				default:
				}
			}
		})
	}
	writersDone := make(chan struct{})
	go func() {
		writers.Wait()
		close(writersDone)
	}()
	// An idle consumer checks Postgres now and then, so readiness follows it and a restore that
	// took back what this consumer wrote is found even when no new message comes.
	idle := time.NewTicker(idleCheck)
	defer idle.Stop()
	for {
		select {
		case <-writersDone:
			if failed != nil {
				return failed
			}
			c.logger.Info("consumer stopped")
			return nil
		case <-idle.C:
			if time.Since(time.Unix(0, lastCommit.Load())) >= idleCheck {
				c.setDB(c.checkStored(procCtx))
			}
		}
	}
}

// fetchedQueue is how many fetched messages wait for the batcher, from all partitions together;
// partitionQueue how many each partition's reader holds ahead of that.
const (
	fetchedQueue   = 4096
	partitionQueue = 256
)

func (c *Consumer) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var ok bool
	if err := c.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, c.offsetsTable).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s does not exist (run pg.Migrate)", c.offsetsTable)
	}
	return nil
}

// checkStored compares the offsets Postgres stores with those this consumer committed in the
// current epoch, and rewinds when Postgres has fewer: a failover or a restore took back rows
// that no new message would reveal. Its error is Postgres'.
func (c *Consumer) checkStored(ctx context.Context) error {
	if err := c.ping(ctx); err != nil {
		return err
	}
	epoch := c.epoch.Load()
	// Taken before the read: commits only raise what is stored, so a commit landing between the
	// two cannot look like a loss.
	c.mu.Lock()
	mine := maps.Clone(c.committed)
	c.mu.Unlock()
	stored, err := c.readStored(ctx)
	if err != nil {
		return err
	}
	for tp, p := range mine {
		s, ok := stored[tp]
		if !ok {
			s = -1
		}
		if p.epoch == epoch && s < p.offset {
			c.logger.Warn("postgres stores less than this consumer committed (failover or restore); reading again from the stored offsets",
				"topic", tp.topic, "partition", tp.partition, "stored", s, "committed", p.offset)
			c.markBehind(epoch)
			break
		}
	}
	return nil
}

// readStored reads the group's stored offsets.
func (c *Consumer) readStored(ctx context.Context) (map[topicPartition]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := c.pool.Query(ctx, `SELECT topic, partition, "offset" FROM `+c.offsetsTable+` WHERE consumer_group = $1`, c.cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("read stored offsets: %w", err)
	}
	stored := make(map[topicPartition]int64)
	var tp topicPartition
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&tp.topic, &tp.partition, &off}, func() error {
		stored[tp] = off
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read stored offsets: %w", err)
	}
	return stored, nil
}

// markBehind notes that, in epoch, Postgres was found to hold less than this consumer committed,
// and wakes the session to read its partitions again.
func (c *Consumer) markBehind(epoch uint64) {
	for {
		old := c.behind.Load()
		if epoch <= old || c.behind.CompareAndSwap(old, epoch) {
			break
		}
	}
	select {
	case c.rewind <- struct{}{}:
	default:
	}
}

// follow takes the group's generations one after the other and runs a session for each: the
// partitions a generation assigns are this consumer's until the next rebalance.
func (c *Consumer) follow(ctx context.Context, group *kafkago.ConsumerGroup, in chan<- fetched) {
	var sessions sync.WaitGroup
	defer sessions.Wait()
	for {
		gen, err := group.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafkago.ErrGroupClosed) {
				return
			}
			// The group retries by itself, after a backoff.
			c.logger.Warn("consumer group join failed; retrying", "err", err)
			continue
		}
		c.gen.Store(gen)
		c.metrics.generations.Inc()
		c.setJoined()
		sessions.Add(1)
		// The group moves to its next generation only once this returns.
		gen.Start(func(genCtx context.Context) {
			defer sessions.Done()
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(genCtx, cancel)()
			c.session(sctx, gen, in)
		})
	}
}

// position is where a partition's reading starts or stands: an offset read from Postgres (or
// committed), in the epoch of the positioning it belongs to.
type position struct {
	epoch  uint64
	offset int64 // -1: none stored
}

// fetched is a message with the position its partition's reader started after.
type fetched struct {
	msg  kafkago.Message
	from position
}

// session reads the partitions gen assigns until ctx ends, each from the offset after the one
// Postgres stores for it, and all of them again from there whenever a writer finds Postgres behind
// what this consumer committed. Each positioning is a new epoch: messages of an older one are
// dropped wherever they wait, unwritten.
func (c *Consumer) session(ctx context.Context, gen *kafkago.Generation, in chan<- fetched) {
	var parts []topicPartition
	for topic, as := range gen.Assignments {
		for _, a := range as {
			parts = append(parts, topicPartition{topic, a.ID})
		}
	}
	c.logger.Info("partitions assigned", "generation", gen.ID, "partitions", len(parts))
	backoff := c.cfg.MinBackoff
	for {
		epoch := c.epoch.Add(1)
		stored, err := c.readStored(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.setDB(err)
			c.logger.Warn("cannot read the stored offsets; retrying", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, c.cfg.MaxBackoff)
			continue
		}
		backoff = c.cfg.MinBackoff
		c.setDB(nil)
		fctx, stop := context.WithCancel(ctx)
		var readers sync.WaitGroup
		for _, tp := range parts {
			from := position{epoch: epoch, offset: -1}
			if off, ok := stored[tp]; ok {
				from.offset = off
			}
			readers.Go(func() { c.fetchPartition(fctx, tp, from, in) })
		}
		rewind := c.awaitBehind(ctx, epoch)
		stop()
		readers.Wait()
		if !rewind {
			return
		}
		c.metrics.rewinds.Inc()
	}
}

// awaitBehind waits until a writer finds Postgres behind in epoch (true) or ctx ends (false).
func (c *Consumer) awaitBehind(ctx context.Context, epoch uint64) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.rewind:
			if c.behind.Load() >= epoch {
				return true
			}
		}
	}
}

// fetchPartition reads tp from the offset after from's until ctx ends, handing each message to in.
func (c *Consumer) fetchPartition(ctx context.Context, tp topicPartition, from position, in chan<- fetched) {
	r := c.kc.NewPartitionReader(tp.topic, tp.partition, partitionQueue)
	defer func() {
		if err := r.Close(); err != nil {
			c.logger.Debug("close partition reader", "topic", tp.topic, "partition", tp.partition, "err", err)
		}
	}()
	start := from.offset + 1
	if from.offset < 0 {
		start = kafkago.FirstOffset
	}
	// Cannot fail on a reader that has not read yet.
	_ = r.SetOffset(start)
	backoff := c.cfg.MinBackoff
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("kafka fetch failed", "topic", tp.topic, "partition", tp.partition, "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, c.cfg.MaxBackoff)
			continue
		}
		backoff = c.cfg.MinBackoff
		select {
		case in <- fetched{msg: m, from: from}:
		case <-ctx.Done():
			return
		}
	}
}

type topicPartition struct {
	topic     string
	partition int
}

type item struct {
	msg     kafkago.Message
	from    position // where its partition's reader started
	rec     any
	err     error // decode error: the message goes to the DLQ
	dlqDone bool  // already produced to the DLQ by an earlier attempt
	skip    bool  // at or below the stored offset: written before a crash
}

type batch struct {
	items []item
	due   time.Time // BatchWait after its first message
}

// fetchLoop fills one batch per writer (up to BatchSize, or until BatchWait after its first
// message), decoding while the writers commit earlier ones, and hands each to its writer's queue,
// blocking while that is full. It returns when ctx ends, handing over what it holds.
func (c *Consumer) fetchLoop(ctx context.Context, in <-chan fetched, queues []chan *batch, free chan *batch) {
	open := make([]*batch, len(queues))
	// Sending is not abandoned when ctx ends: the writers drain their queues until they close.
	handOver := func(due time.Time) {
		for i, b := range open {
			if b != nil && (due.IsZero() || !b.due.After(due)) {
				queues[i] <- b
				open[i] = nil
			}
		}
	}
	defer handOver(time.Time{})

	// The next message is awaited until the oldest open batch is due, or as long as it takes.
	var waitUntil time.Time
	waitCtx, cancel := until(ctx, waitUntil)
	defer func() { cancel() }()
	// The clock messages are validated against: read when a batch opens and after every wait on a
	// writer, so never older than BatchWait, instead of once per message.
	clock := time.Now()
	for {
		var due time.Time
		for _, b := range open {
			if b != nil && (due.IsZero() || b.due.Before(due)) {
				due = b.due
			}
		}
		if !due.Equal(waitUntil) {
			cancel()
			waitUntil = due
			waitCtx, cancel = until(ctx, waitUntil)
		}
		var f fetched
		select {
		case f = <-in:
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return
			}
			handOver(time.Now())
			clock = time.Now()
			continue
		}
		if f.from.epoch < c.epoch.Load() {
			continue // read before the partitions were positioned anew
		}
		m := f.msg

		i := WriterOf(m.Partition, len(queues))
		b := open[i]
		if b == nil {
			select {
			case b = <-free:
				b.items = b.items[:0]
			default:
				b = &batch{items: make([]item, 0, c.cfg.BatchSize)}
			}
			clock = time.Now()
			b.due = clock.Add(c.cfg.BatchWait)
			open[i] = b
		}
		it := item{msg: m, from: f.from}
		if s, ok := c.sinks[m.Topic]; !ok {
			it.err = fmt.Errorf("no sink for topic %s", m.Topic)
		} else if it.err = checkSchemaVersion(m); it.err == nil {
			it.rec, it.err = s.Decode(Message{Topic: m.Topic, Key: m.Key, Value: m.Value, Headers: m.Headers, Fetched: clock})
		}
		b.items = append(b.items, it)
		if len(b.items) >= c.cfg.BatchSize {
			queues[i] <- b
			open[i] = nil
			clock = time.Now()
		}
	}
}

// WriterOf is the writer (of writers) that writes partition p of every topic. Producers key the
// topics of one thing alike (an account's orders and its order actions, say) and partition them by
// the same hash, so the same partition of each holds it: one writer then writes all of its rows, and
// rows that several topics change (an order's state) are never locked by two writers' transactions
// in opposite orders. The same writer in every run, so a skewed load is spread the same way each time.
func WriterOf(p, writers int) int { return p % writers }

// until returns ctx bounded by due, or merely cancelable when due is zero.
func until(ctx context.Context, due time.Time) (context.Context, context.CancelFunc) {
	if due.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, due)
}

// writeState is reused across batches to keep the hot path free of per-message allocations.
type writeState struct {
	stored  map[topicPartition]int64    // of the attempt's partitions, read under lock
	prev    map[topicPartition]position // the offset before the next message of each partition's reader
	last    map[topicPartition]int      // index of the batch's last item per partition
	records map[string][]any
	counts  map[string]int
	dlq     []kafkago.Message
	offT    []string
	offP    []int32
	offO    []int64
	attempt int // of the batch being written, from 1
}

// commitBatch writes b, retrying Postgres (and DLQ) failures until it succeeds or ctx ends,
// then hands the offsets to the Kafka committer and runs the hooks.
func (c *Consumer) commitBatch(ctx context.Context, kafkaCommits chan<- map[string]map[int]int64, dlq *kafkago.Writer, w *writeState, b *batch) error {
	start := time.Now()
	// Messages read before their partitions were positioned anew, or after a batch of theirs found
	// Postgres behind (their reader's stream has a hole there now), are dropped: they are read again.
	epoch, behind := c.epoch.Load(), c.behind.Load()
	b.items = slices.DeleteFunc(b.items, func(it item) bool { return it.from.epoch < epoch || it.from.epoch <= behind })
	if len(b.items) == 0 {
		return nil
	}
	lastPerPartition(w.last, b.items)
	for tp, i := range w.last {
		if from := b.items[i].from; from.epoch > w.prev[tp].epoch {
			w.prev[tp] = from
		}
	}
	// The batch continues its messages' traces: what it writes (outbox messages among them) carries
	// this span's context.
	ctx, span := c.tracer.Start(ctx, "ingest batch", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.consumer.group.name", c.cfg.Group),
			attribute.Int("messaging.batch.message_count", len(b.items))))
	defer span.End()
	if span.IsRecording() {
		linkProducers(ctx, span, b.items)
	}
	backoff := c.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		w.attempt = attempt
		attemptCtx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := c.writeIsolating(attemptCtx, dlq, w, b.items, w.last)
		cancel()
		if err == nil {
			break
		}
		var lost *lostError
		if errors.As(err, &lost) {
			c.setDB(nil)
			c.logger.Warn("postgres stores less than this consumer committed (failover or restore); reading again from the stored offsets",
				"topic", lost.tp.topic, "partition", lost.tp.partition, "stored", lost.stored, "committed", lost.committed)
			span.SetStatus(codes.Error, "postgres behind: batch dropped, read again")
			c.markBehind(lost.epoch)
			return nil
		}
		if ctx.Err() == nil {
			c.setDB(err)
			c.metrics.retries.Inc()
			c.logger.Warn("batch failed; retrying", "err", err, "messages", len(b.items), "attempt", attempt, "retry_in", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
		}
		if ctx.Err() != nil {
			span.SetStatus(codes.Error, "not committed before shutdown")
			return fmt.Errorf("ingest %s: batch of %d messages not committed before shutdown (it will be consumed again): %w",
				c.cfg.Group, len(b.items), err)
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
	c.setDB(nil)

	if c.afterDBCommit != nil {
		if err := c.afterDBCommit(ctx); err != nil {
			return err
		}
	}

	// Kafka's commit is the offset of the next message to read.
	commits := make(map[string]map[int]int64, 1)
	c.mu.Lock()
	for tp, i := range w.last {
		m := b.items[i].msg
		if commits[tp.topic] == nil {
			commits[tp.topic] = make(map[int]int64)
		}
		commits[tp.topic][tp.partition] = m.Offset + 1
		c.committed[tp] = w.prev[tp]
		c.metrics.lag.WithLabelValues(tp.topic, strconv.Itoa(tp.partition)).Set(float64(max(0, m.HighWaterMark-m.Offset-1)))
	}
	c.mu.Unlock()
	kafkaCommits <- commits
	skipped := 0
	clear(w.counts)
	for i := range b.items {
		if b.items[i].skip {
			skipped++
			continue
		}
		w.counts[b.items[i].msg.Topic]++
	}
	for topic, n := range w.counts {
		c.metrics.messages.WithLabelValues(topic).Add(float64(n))
	}
	if skipped > 0 {
		c.metrics.replayed.Add(float64(skipped))
		c.logger.Info("skipped messages already stored", "messages", skipped)
	}
	c.metrics.batchSize.Observe(float64(len(b.items)))
	c.metrics.batchSeconds.Observe(time.Since(start).Seconds())

	c.mu.Lock()
	hooks := c.hooks
	c.mu.Unlock()
	for _, h := range hooks {
		h(ctx)
	}
	return nil
}

// writeIsolating writes items; when Postgres refuses their values, it finds the messages it refuses
// by halves and sends each of them to the DLQ, so that one bad record neither stalls its partition
// nor keeps the rest of its batch out. Halves are written in order, so the offsets stored for a
// partition only grow. last indexes items' last message of each partition (lastPerPartition).
func (c *Consumer) writeIsolating(ctx context.Context, dlq *kafkago.Writer, w *writeState, items []item, last map[topicPartition]int) error {
	err := c.writeBatch(ctx, dlq, w, items, last)
	if err == nil || !rejectsValues(err) {
		return err
	}
	if len(items) == 1 {
		items[0].err = fmt.Errorf("refused by postgres: %w", err)
		return c.writeBatch(ctx, dlq, w, items, last)
	}
	half := len(items) / 2
	for _, part := range [][]item{items[:half], items[half:]} {
		// A map per half: rare, and each is in use until its writes are done.
		if err := c.writeIsolating(ctx, dlq, w, part, lastPerPartition(nil, part)); err != nil {
			return err
		}
	}
	return nil
}

// lastPerPartition fills last (emptied first; nil: a new map) with the index of each partition's
// last message in items, and returns it.
func lastPerPartition(last map[topicPartition]int, items []item) map[topicPartition]int {
	if last == nil {
		last = make(map[topicPartition]int)
	}
	clear(last)
	for i := range items {
		last[topicPartition{items[i].msg.Topic, items[i].msg.Partition}] = i
	}
	return last
}

// rejectsValues tells a batch that Postgres (or the COPY encoder) refuses for what its records hold
// (data exceptions, integrity violations such as a row that no partition takes) from a failure to
// serve it, which is retried as it is.
func rejectsValues(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")
	}
	var ve *valueError
	return errors.As(err, &ve)
}

// writeBatch is one attempt: in one transaction, store the offsets, skip what an earlier run
// stored, send the undecodable messages to the DLQ, write every sink, commit.
func (c *Consumer) writeBatch(ctx context.Context, dlq *kafkago.Writer, w *writeState, items []item, last map[topicPartition]int) error {
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	// The batch's partitions' offset rows are locked first (created when missing), so that two
	// replicas writing one partition during a rebalance take turns, and the second reads what the
	// first stored. What is stored decides what is written: the fence against doubles. The new
	// offsets are set in the same round trip (the read returns the values from before); a failure
	// later rolls all of it back. Sorted, so that transactions lock offset rows in one order.
	w.offT, w.offP, w.offO = w.offT[:0], w.offP[:0], w.offO[:0]
	for tp, i := range last {
		w.offT = append(w.offT, tp.topic)
		w.offP = append(w.offP, int32(tp.partition))
		w.offO = append(w.offO, items[i].msg.Offset)
	}
	clear(w.stored)
	var offsets pgx.Batch
	offsets.Queue(`
INSERT INTO `+c.offsetsTable+` (consumer_group, topic, partition, "offset")
SELECT $1, t, p, -1 FROM unnest($2::text[], $3::int[]) AS u(t, p) ORDER BY t, p
ON CONFLICT (consumer_group, topic, partition) DO NOTHING`, c.cfg.Group, w.offT, w.offP)
	offsets.Queue(`
SELECT o.topic, o.partition, o."offset" FROM `+c.offsetsTable+` o
JOIN unnest($2::text[], $3::int[]) AS u(t, p) ON o.topic = u.t AND o.partition = u.p
WHERE o.consumer_group = $1 ORDER BY o.topic, o.partition FOR UPDATE OF o`, c.cfg.Group, w.offT, w.offP).
		Query(func(rows pgx.Rows) error {
			var tp topicPartition
			var off int64
			_, err := pgx.ForEachRow(rows, []any{&tp.topic, &tp.partition, &off}, func() error {
				w.stored[tp] = off
				return nil
			})
			return err
		})
	offsets.Queue(`
UPDATE `+c.offsetsTable+` o SET "offset" = greatest(o."offset", u.n), updated_at = now()
FROM unnest($2::text[], $3::int[], $4::bigint[]) AS u(t, p, n)
WHERE o.consumer_group = $1 AND o.topic = u.t AND o.partition = u.p`,
		c.cfg.Group, w.offT, w.offP, w.offO)
	if err := tx.SendBatch(ctx, &offsets).Close(); err != nil {
		return fmt.Errorf("lock and store offsets: %w", err)
	}
	for tp := range last {
		if stored, prev := w.stored[tp], w.prev[tp]; stored < prev.offset {
			return &lostError{tp: tp, stored: stored, committed: prev.offset, epoch: prev.epoch}
		}
	}

	for k, v := range w.records {
		w.records[k] = v[:0]
	}
	w.dlq = w.dlq[:0]
	for i := range items {
		it := &items[i]
		it.skip = it.msg.Offset <= w.stored[topicPartition{it.msg.Topic, it.msg.Partition}]
		switch {
		case it.skip:
		case it.err != nil:
			if !it.dlqDone {
				w.dlq = append(w.dlq, dlqMessage(it))
			}
		default:
			w.records[it.msg.Topic] = append(w.records[it.msg.Topic], it.rec)
		}
	}

	if len(w.dlq) > 0 {
		if err := dlq.WriteMessages(ctx, w.dlq...); err != nil {
			return fmt.Errorf("produce %d messages to the DLQ: %w", len(w.dlq), err)
		}
		for i := range items {
			it := &items[i]
			if !it.skip && it.err != nil && !it.dlqDone {
				it.dlqDone = true
				c.metrics.dlq.WithLabelValues(it.msg.Topic).Inc()
				c.logger.Warn("message sent to DLQ", "topic", it.msg.Topic, "partition", it.msg.Partition,
					"offset", it.msg.Offset, "reason", it.err.Error())
			}
		}
	}

	for _, topic := range c.topics {
		if recs := w.records[topic]; len(recs) > 0 {
			if err := c.sinks[topic].Write(ctx, tx, recs); err != nil {
				return fmt.Errorf("sink %s: %w", topic, err)
			}
		}
	}
	if c.beforeCommit != nil {
		if err := c.beforeCommit(ctx, w.attempt); err != nil {
			return fmt.Errorf("before commit: %w", err)
		}
	}

	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for tp, i := range last {
		w.prev[tp] = position{epoch: w.prev[tp].epoch, offset: max(w.stored[tp], items[i].msg.Offset)}
	}
	return nil
}

// lostError is a batch that found its partition's stored offset below what this consumer had
// committed there: Postgres lost commits.
type lostError struct {
	tp                topicPartition
	stored, committed int64
	epoch             uint64
}

func (e *lostError) Error() string {
	return fmt.Sprintf("%s/%d: postgres stores offset %d, this consumer committed %d", e.tp.topic, e.tp.partition, e.stored, e.committed)
}

// maxLinks bounds the links of a batch's span (OpenTelemetry's default limit): a batch of thousands of
// messages usually comes from a few producer spans, and more would be dropped anyway.
const maxLinks = 128

// linkProducers links span to the distinct producer spans of items' messages.
func linkProducers(ctx context.Context, span trace.Span, items []item) {
	type spanID struct {
		trace trace.TraceID
		span  trace.SpanID
	}
	seen := make(map[spanID]bool)
	for i := range items {
		if len(seen) == maxLinks {
			return
		}
		if _, ok := kafka.Header(items[i].msg, "traceparent"); !ok {
			continue
		}
		sc := trace.SpanContextFromContext(kafka.TraceContext(context.WithoutCancel(ctx), items[i].msg))
		if id := (spanID{sc.TraceID(), sc.SpanID()}); sc.IsValid() && !seen[id] {
			seen[id] = true
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}
}

// checkSchemaVersion refuses a message whose schema-version header names a major version this code
// does not read (events.SchemaVersion); a message without the header is read as the current version.
func checkSchemaVersion(m kafkago.Message) error {
	v, ok := kafka.Header(m, events.HeaderSchemaVersion)
	if !ok {
		return nil
	}
	major, _, _ := strings.Cut(v, ".")
	if major != events.SchemaVersion {
		return fmt.Errorf("unsupported %s %q: this consumer reads major version %s", events.HeaderSchemaVersion, v, events.SchemaVersion)
	}
	return nil
}

// maxReason keeps a DLQ header well inside any broker's limits.
const maxReason = 2048

func dlqMessage(it *item) kafkago.Message {
	reason := it.err.Error()
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	h := make([]kafkago.Header, 0, len(it.msg.Headers)+4)
	h = append(h, it.msg.Headers...)
	h = append(h,
		kafkago.Header{Key: HeaderDLQReason, Value: []byte(reason)},
		kafkago.Header{Key: HeaderDLQTopic, Value: []byte(it.msg.Topic)},
		kafkago.Header{Key: HeaderDLQPartition, Value: []byte(strconv.Itoa(it.msg.Partition))},
		kafkago.Header{Key: HeaderDLQOffset, Value: []byte(strconv.FormatInt(it.msg.Offset, 10))},
	)
	return kafkago.Message{Topic: DLQTopic(it.msg.Topic), Key: it.msg.Key, Value: it.msg.Value, Headers: h}
}
