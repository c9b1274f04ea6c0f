package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
)

// RegisterEnv sets the knobs a platform team tunes from the environment (defaults when unset):
// TIDEMARK_INGEST_BATCH_SIZE, TIDEMARK_INGEST_BATCH_WAIT, TIDEMARK_INGEST_WRITERS and
// TIDEMARK_INGEST_MAX_BACKOFF. Group and Schema are the service's, set by the kit.
func (c *Config) RegisterEnv(e *app.Env) {
	c.BatchSize = e.Int("INGEST_BATCH_SIZE", DefaultBatchSize)
	c.BatchWait = e.Duration("INGEST_BATCH_WAIT", DefaultBatchWait)
	c.Writers = e.Int("INGEST_WRITERS", DefaultWriters)
	c.MaxBackoff = e.Duration("INGEST_MAX_BACKOFF", 10*time.Second)
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
	reader := c.kc.NewReader(c.cfg.Group, c.topics)
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
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		c.watchJoin(fetchCtx, reader)
	}()
	go func() {
		defer wg.Done()
		defer func() {
			for _, q := range queues {
				close(q)
			}
		}()
		c.fetchLoop(fetchCtx, reader, queues, free)
	}()
	defer func() {
		stopFetch()
		wg.Wait()
		// Last: the fetcher may be inside FetchMessage until here.
		if err := reader.Close(); err != nil {
			c.logger.Warn("close kafka reader", "err", err)
		}
	}()

	// Kafka commits run beside the next batches: the offsets stored with every batch already make
	// them no more than where a restarted consumer resumes fetching. Registered after the reader's
	// close, so this runs, and finishes the last commit, first. A partition's commits come from
	// its one writer, in order.
	kafkaCommits := make(chan []kafkago.Message, c.cfg.Writers)
	committed := make(chan struct{})
	go func() {
		defer close(committed)
		for msgs := range kafkaCommits {
			if err := reader.CommitMessages(procCtx, msgs...); err != nil {
				c.logger.Warn("kafka commit failed; the batch will be skipped when consumed again", "err", err)
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
	// An idle consumer checks Postgres now and then, so readiness follows it.
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
				c.setDB(c.ping(procCtx))
			}
		}
	}
}

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

// watchJoin notes the first group generation: the reader tells it only through its counters.
func (c *Consumer) watchJoin(ctx context.Context, r *kafkago.Reader) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if r.Stats().Rebalances > 0 {
			c.setJoined()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type topicPartition struct {
	topic     string
	partition int
}

type item struct {
	msg     kafkago.Message
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
func (c *Consumer) fetchLoop(ctx context.Context, r *kafkago.Reader, queues []chan *batch, free chan *batch) {
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
	backoff := c.cfg.MinBackoff
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
		m, err := r.FetchMessage(waitCtx)
		if err != nil {
			switch {
			case ctx.Err() != nil || errors.Is(err, io.EOF):
				return
			case waitCtx.Err() != nil:
				handOver(time.Now())
				clock = time.Now()
				continue
			}
			// Group (re)join failures surface here after the reader's own retries; it keeps trying,
			// and what was fetched before is written meanwhile.
			c.logger.Warn("kafka fetch failed", "err", err, "retry_in", backoff)
			handOver(time.Time{})
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, c.cfg.MaxBackoff)
			clock = time.Now()
			continue
		}
		backoff = c.cfg.MinBackoff

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
		it := item{msg: m}
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
	stored  map[topicPartition]int64
	last    map[topicPartition]int // index of the batch's last item per partition
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
func (c *Consumer) commitBatch(ctx context.Context, kafkaCommits chan<- []kafkago.Message, dlq *kafkago.Writer, w *writeState, b *batch) error {
	start := time.Now()
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
	lastPerPartition(w.last, b.items)
	for attempt := 1; ; attempt++ {
		w.attempt = attempt
		attemptCtx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := c.writeIsolating(attemptCtx, dlq, w, b.items, w.last)
		cancel()
		if err == nil {
			break
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

	// The stored offsets make a lost Kafka commit harmless: the messages come back and are skipped.
	commits := make([]kafkago.Message, 0, len(w.last))
	for tp, i := range w.last {
		m := b.items[i].msg
		commits = append(commits, kafkago.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset})
		c.metrics.lag.WithLabelValues(tp.topic, strconv.Itoa(tp.partition)).Set(float64(max(0, m.HighWaterMark-m.Offset-1)))
	}
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

	// The batch's offsets are stored up front, in the round trip that reads what an earlier run
	// stored (the read sees the values from before): a failure later rolls both back with the rest.
	// Sorted, so that consumers overlapping during a rebalance lock offset rows in one order.
	w.offT, w.offP, w.offO = w.offT[:0], w.offP[:0], w.offO[:0]
	for tp, i := range last {
		w.offT = append(w.offT, tp.topic)
		w.offP = append(w.offP, int32(tp.partition))
		w.offO = append(w.offO, items[i].msg.Offset)
	}
	clear(w.stored)
	var offsets pgx.Batch
	offsets.Queue(`SELECT topic, partition, "offset" FROM `+c.offsetsTable+` WHERE consumer_group = $1`, c.cfg.Group).
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
INSERT INTO `+c.offsetsTable+` AS o (consumer_group, topic, partition, "offset")
SELECT $1, t, p, n FROM unnest($2::text[], $3::int[], $4::bigint[]) AS u(t, p, n) ORDER BY t, p
ON CONFLICT (consumer_group, topic, partition)
DO UPDATE SET "offset" = greatest(o."offset", excluded."offset"), updated_at = now()`,
		c.cfg.Group, w.offT, w.offP, w.offO)
	if err := tx.SendBatch(ctx, &offsets).Close(); err != nil {
		return fmt.Errorf("read and store offsets: %w", err)
	}

	for k, v := range w.records {
		w.records[k] = v[:0]
	}
	w.dlq = w.dlq[:0]
	for i := range items {
		it := &items[i]
		stored, ok := w.stored[topicPartition{it.msg.Topic, it.msg.Partition}]
		it.skip = ok && it.msg.Offset <= stored
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
	return nil
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
