package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/platform/kafka"
)

// attemptTimeout bounds one try at a batch, so a silently dead connection cannot hang ingest.
const attemptTimeout = 2 * time.Minute

// newWriteState is a writer's state for sinks sinks.
func newWriteState(sinks int) *writeState {
	return &writeState{
		stored:  make(map[topicPartition]int64),
		prev:    make(map[topicPartition]position),
		last:    make(map[topicPartition]int),
		records: make(map[string][]any, sinks),
		counts:  make(map[string]int, sinks),
	}
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
// then hands the offsets to the Kafka committer and runs the hooks. A batch that finds Postgres
// behind what this consumer committed is dropped, and its partitions are read again.
func (c *Consumer) commitBatch(ctx context.Context, kafkaCommits chan<- map[string]map[int]int64, dlq *kafkago.Writer, w *writeState, b *batch) error {
	start := time.Now()
	if !c.keepCurrent(w, b) {
		return nil
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
	written, err := c.writeRetrying(ctx, span, dlq, w, b)
	if err != nil || !written {
		return err
	}
	if c.afterDBCommit != nil {
		if err := c.afterDBCommit(ctx); err != nil {
			return err
		}
	}
	kafkaCommits <- c.noteCommitted(w, b)
	c.countBatch(w, b, time.Since(start))
	c.mu.Lock()
	hooks := c.hooks
	c.mu.Unlock()
	for _, h := range hooks {
		h(ctx)
	}
	return nil
}

// keepCurrent drops b's messages that were read before their partitions were positioned anew, or
// after a batch of theirs found Postgres behind (their reader's stream has a hole there now): they
// are read again. It notes where each partition's reader started for those that remain, and
// reports whether any do.
func (c *Consumer) keepCurrent(w *writeState, b *batch) bool {
	epoch, behind := c.epoch.Load(), c.behind.Load()
	b.items = slices.DeleteFunc(b.items, func(it item) bool { return it.from.epoch < epoch || it.from.epoch <= behind })
	if len(b.items) == 0 {
		return false
	}
	lastPerPartition(w.last, b.items)
	for tp, i := range w.last {
		if from := b.items[i].from; from.epoch > w.prev[tp].epoch {
			w.prev[tp] = from
		}
	}
	return true
}

// writeRetrying writes b until it is committed (true), Postgres is found behind (false: the batch
// is dropped and its partitions read again), or ctx ends (an error).
func (c *Consumer) writeRetrying(ctx context.Context, span trace.Span, dlq *kafkago.Writer, w *writeState, b *batch) (bool, error) {
	backoff := c.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		w.attempt = attempt
		attemptCtx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := c.writeIsolating(attemptCtx, dlq, w, b.items, w.last)
		cancel()
		if err == nil {
			c.setDB(nil)
			return true, nil
		}
		var lost *lostError
		if errors.As(err, &lost) {
			c.setDB(nil)
			span.SetStatus(codes.Error, "postgres behind: batch dropped, read again")
			c.markBehind(lost)
			return false, nil
		}
		if ctx.Err() == nil {
			c.setDB(err)
			c.metrics.retries.Inc()
			c.logger.Warn("batch failed; retrying", "err", err, "messages", len(b.items), "attempt", attempt, "retry_in", backoff)
			pause(ctx, backoff)
		}
		if ctx.Err() != nil {
			span.SetStatus(codes.Error, "not committed before shutdown")
			return false, fmt.Errorf("ingest %s: batch of %d messages not committed before shutdown (it will be consumed again): %w",
				c.cfg.Group, len(b.items), err)
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

// noteCommitted records what this consumer has committed of each of b's partitions (for the idle
// check of offsets.go) and their lag, and returns the Kafka commits: each partition's next offset.
func (c *Consumer) noteCommitted(w *writeState, b *batch) map[string]map[int]int64 {
	commits := make(map[string]map[int]int64, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for tp, i := range w.last {
		m := b.items[i].msg
		if commits[tp.topic] == nil {
			commits[tp.topic] = make(map[int]int64)
		}
		commits[tp.topic][tp.partition] = m.Offset + 1
		c.committed[tp] = w.prev[tp]
		c.metrics.lag.WithLabelValues(tp.topic, strconv.Itoa(tp.partition)).Set(float64(max(0, m.HighWaterMark-m.Offset-1)))
	}
	return commits
}

// countBatch counts a committed batch's messages, those skipped as stored and its size and time.
func (c *Consumer) countBatch(w *writeState, b *batch, took time.Duration) {
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
	c.metrics.batchSeconds.Observe(took.Seconds())
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

// writeBatch is one attempt: in one transaction, lock and store the offsets, skip what is stored
// already, send the undecodable messages to the DLQ, write every sink, commit.
func (c *Consumer) writeBatch(ctx context.Context, dlq *kafkago.Writer, w *writeState, items []item, last map[topicPartition]int) error {
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := c.lockOffsets(ctx, tx, w, items, last); err != nil {
		return err
	}
	w.sort(items)
	if err := c.produceDLQ(ctx, dlq, w, items); err != nil {
		return err
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
	// Each partition's reader now stands after what is stored, whoever stored it.
	for tp, i := range last {
		w.prev[tp] = position{epoch: w.prev[tp].epoch, offset: max(w.stored[tp], items[i].msg.Offset)}
	}
	return nil
}

// sort marks the items at or below their partition's stored offset as skipped (written already, by
// an earlier run or by the replica that had the partition before), queues the undecodable ones for
// the DLQ and the others for their topic's sink.
func (w *writeState) sort(items []item) {
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
