package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tidemark/tidemark/platform/kafka"
)

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
//
// What the code keeps true, and where:
//   - A partition's messages are written by one writer (WriterOf), in offset order: its batches
//     commit in order (batcher.go).
//   - A batch's transaction locks its partitions' offset rows before it writes; messages at or below
//     the stored offset are skipped, and stored offsets only grow (lockOffsets, offsets.go).
//   - Each positioning of the partitions is an epoch. Within one, the batches a writer commits of a
//     partition are an unbroken stretch of its reader's stream: a batch is dropped only together with
//     every later one of its epoch (keepCurrent, writer.go), so skipping by offset never leaves a hole.
//   - The offset before a batch's first message (writeState.prev) is at most what Postgres stores
//     for its partition; below it, commits were lost, and the partitions are positioned anew from
//     what is stored (lostError, markBehind, session).
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
	cfg = cfg.WithDefaults()
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
//
// The pieces, a file each: group.go follows the group's generations and reads each assigned
// partition; batcher.go fills one batch per writer; writer.go commits each batch in a transaction
// of its own; offsets.go holds what decides where partitions are read from (the offsets stored in
// Postgres) and when to read them again; dlq.go what goes to the dead-letter topics.
func (c *Consumer) Run(ctx context.Context) error {
	c.setRunning(true)
	defer c.setRunning(false)
	group, err := c.kc.NewConsumerGroup(c.cfg.Group, c.topics, c.cfg.SessionTimeout)
	if err != nil {
		return fmt.Errorf("ingest %s: %w", c.cfg.Group, err)
	}
	dlq := c.kc.NewWriter("")
	defer c.closeDLQ(dlq)
	// Batches in flight may still commit after ctx ends, up to the grace period.
	procCtx, cancelProc := graceful(ctx, c.cfg.ShutdownGrace)
	defer cancelProc()

	fetchCtx, stopFetch := context.WithCancel(ctx)
	queues, free, fetchersDone := c.startFetching(fetchCtx, group)
	defer func() {
		stopFetch()
		fetchersDone()
		// Last, after the final Kafka commits: leaving the group hands the partitions to the other
		// replicas at once.
		if err := group.Close(); err != nil {
			c.logger.Warn("leave consumer group", "err", err)
		}
	}()
	// Deferred after the group's close, so the last commit finishes first.
	commits, commitsDone := c.commitToKafka()
	defer commitsDone()

	c.setDB(c.ping(procCtx))
	w := c.startWriters(procCtx, queues, free, commits, dlq, stopFetch)
	return c.superviseWriters(procCtx, w)
}

// graceful returns a context that ends grace after ctx does, or when its cancel is called.
func graceful(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	proc, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(proc, func() { t.Stop() })
	})
	return proc, func() {
		stop()
		cancel()
	}
}

func (c *Consumer) closeDLQ(dlq *kafkago.Writer) {
	if err := dlq.Close(); err != nil {
		c.logger.Warn("close dlq writer", "err", err)
	}
	if t, ok := dlq.Transport.(*kafkago.Transport); ok {
		t.CloseIdleConnections()
	}
}

// startFetching follows the group's generations and fills the writers' queues, one per writer
// holding one batch: with a queue full the batcher blocks, so a stuck Postgres stops fetching. The
// queues close once ctx has ended and the batches in hand are handed over; wait returns then.
func (c *Consumer) startFetching(ctx context.Context, group *kafkago.ConsumerGroup) (queues []chan *batch, free chan *batch, wait func()) {
	queues = make([]chan *batch, c.cfg.Writers)
	for i := range queues {
		queues[i] = make(chan *batch, 1)
	}
	free = make(chan *batch, 3*c.cfg.Writers)
	in := make(chan fetched, fetchedQueue)
	var wg sync.WaitGroup
	wg.Go(func() { c.follow(ctx, group, in) })
	wg.Go(func() {
		defer func() {
			for _, q := range queues {
				close(q)
			}
		}()
		c.fetchLoop(ctx, in, queues, free)
	})
	return queues, free, wg.Wait
}

// brokerNames is offsets keyed by the brokers' topic names.
func (c *Consumer) brokerNames(offsets map[string]map[int]int64) map[string]map[int]int64 {
	if c.kc.TopicPrefix == "" {
		return offsets
	}
	out := make(map[string]map[int]int64, len(offsets))
	for t, parts := range offsets {
		out[c.kc.Topic(t)] = parts
	}
	return out
}

// commitToKafka commits the offsets sent to it to the current generation, beside the next
// batches. Positions come from Postgres, so these commits only show the group's progress to
// Kafka's tools (lag exporters, kafka-consumer-groups). done closes the channel and waits for the
// last commit.
func (c *Consumer) commitToKafka() (commits chan<- map[string]map[int]int64, done func()) {
	ch := make(chan map[string]map[int]int64, c.cfg.Writers)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for offsets := range ch {
			if gen := c.gen.Load(); gen != nil {
				if err := gen.CommitOffsets(c.brokerNames(offsets)); err != nil {
					c.logger.Debug("kafka commit failed; the offsets stored in Postgres stand", "err", err)
				}
			}
		}
	}()
	return ch, func() {
		close(ch)
		<-finished
	}
}

// writers are the goroutines that commit batches, one per queue.
type writers struct {
	done       chan struct{} // closed once every writer has returned
	mu         sync.Mutex
	failed     error        // the first batch that could not be committed before shutdown
	lastCommit atomic.Int64 // unix nanoseconds of the last batch committed
}

func (w *writers) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failed = cmp.Or(w.failed, err)
}

func (w *writers) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// startWriters runs a writer per queue until its queue closes. A writer whose batch could not be
// committed stops the fetching and keeps taking its batches, unwritten, until the queue closes;
// so do the others from then on.
func (c *Consumer) startWriters(ctx context.Context, queues []chan *batch, free chan<- *batch,
	commits chan<- map[string]map[int]int64, dlq *kafkago.Writer, stopFetch func()) *writers {
	ws := &writers{done: make(chan struct{})}
	ws.lastCommit.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	for _, q := range queues {
		wg.Go(func() {
			w := newWriteState(len(c.sinks))
			for b := range q {
				if ws.err() != nil {
					continue
				}
				if err := c.commitBatch(ctx, commits, dlq, w, b); err != nil {
					ws.fail(err)
					stopFetch()
					continue
				}
				ws.lastCommit.Store(time.Now().UnixNano())
				select {
				case free <- b:
				default:
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(ws.done)
	}()
	return ws
}

// superviseWriters waits for the writers to finish, and meanwhile has an idle consumer check
// Postgres now and then, so that readiness follows it and a restore that took back what this
// consumer wrote is found even when no new message comes.
func (c *Consumer) superviseWriters(ctx context.Context, w *writers) error {
	idle := time.NewTicker(idleCheck)
	defer idle.Stop()
	for {
		select {
		case <-w.done:
			if err := w.err(); err != nil {
				return err
			}
			c.logger.Info("consumer stopped")
			return nil
		case <-idle.C:
			if time.Since(time.Unix(0, w.lastCommit.Load())) >= idleCheck {
				c.setDB(c.checkStored(ctx))
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
