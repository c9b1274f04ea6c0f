// Package ingest is the one Kafka -> Postgres consumer loop every service runs: batches of
// messages are decoded by per-topic sinks and written in one transaction together with the
// consumed offsets, so a crash replays without losing or doubling anything. A few writers commit
// batches at once, each partition's always on the same one, in order.
package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
)

// Message is one consumed Kafka message as a sink sees it. Its memory belongs to the consumer, which
// never changes it: what a sink decodes may share it.
type Message struct {
	Topic   string
	Key     []byte
	Value   []byte
	Headers []kafkago.Header
	// Fetched is the consumer's clock when it fetched the message, read once for many messages:
	// records are validated against it. Zero: the wall clock.
	Fetched time.Time
}

// Header returns the value of the first header named key.
func (m Message) Header(key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// Sink turns one topic's messages into rows.
type Sink interface {
	// Topic is the Kafka topic the sink consumes.
	Topic() string
	// Decode parses and validates one message. An error sends the message to "<topic>.dlq" with
	// the error text as reason; it must not depend on Postgres. A message whose schema-version
	// header names a major version this code does not read never reaches Decode: it goes to the DLQ.
	Decode(m Message) (any, error)
	// Write stores the decoded records of one batch, in consumption order (per partition), within
	// tx. ctx carries the batch's span. It is called once per topic per batch and again with the
	// same records when the transaction has to be retried, so it must be idempotent (Table.Insert
	// is). When Postgres refuses the batch's values (SQLSTATE classes 22 and 23, or a value its
	// column cannot hold), the consumer writes the batch again by halves until it has the messages
	// refused on their own, and sends those to the DLQ; any other error retries the batch whole.
	// Writers of other partitions run Write at the same time: rows that several may change
	// (aggregates, upserted reference rows) must be written in one order, so that their
	// transactions cannot deadlock.
	Write(ctx context.Context, tx pgx.Tx, records []any) error
}

// NewSink adapts typed functions to a Sink, for topics that carry no protocol record (Records is the
// sink of protocol topics).
func NewSink[T any](topic string, decode func(Message) (T, error), write func(ctx context.Context, tx pgx.Tx, recs []T) error) Sink {
	return &typedSink[T]{topic: topic, decode: decode, write: write}
}

type typedSink[T any] struct {
	topic  string
	decode func(Message) (T, error)
	write  func(ctx context.Context, tx pgx.Tx, recs []T) error
}

func (s *typedSink[T]) Topic() string { return s.topic }

func (s *typedSink[T]) Decode(m Message) (any, error) { return s.decode(m) }

func (s *typedSink[T]) Write(ctx context.Context, tx pgx.Tx, records []any) error {
	// A fresh slice each batch: the write function may keep it past the call.
	recs := make([]T, len(records))
	for i, r := range records {
		v, ok := r.(T)
		if !ok {
			return fmt.Errorf("ingest: sink %s: record %d is %T, not %T", s.topic, i, r, *new(T))
		}
		recs[i] = v
	}
	return s.write(ctx, tx, recs)
}

// Event is one decoded message of a protocol topic.
type Event[T events.Record] struct {
	Record T
	// JSON is the record as its producer encoded it, compacted. The topics' contract is that a record
	// is encoded as the API emits it, and decoding is strict (known fields of the right types), so a
	// sink may store it as the API's JSON without encoding it again. It shares the message's memory.
	JSON []byte
}

// Records is the sink of a protocol topic whose records are of type T: every message is decoded
// strictly and validated (events.Decode), so write only ever sees valid records of the topic.
func Records[T events.Record](topic string, write func(ctx context.Context, tx pgx.Tx, evs []Event[T]) error) Sink {
	return NewSink(topic, func(m Message) (Event[T], error) { return decodeEvent[T](topic, m) }, write)
}

// Prepared is Records for a topic whose records a service turns into rows before writing them:
// prepare runs as each message is decoded, on the goroutine that fetches, beside the writers, so its
// work is off the path of the transactions. An error from prepare sends the message to the DLQ, as a
// decoding error does; prepare must not depend on Postgres.
func Prepared[T events.Record, R any](topic string, prepare func(Event[T]) (R, error), write func(ctx context.Context, tx pgx.Tx, rows []R) error) Sink {
	return NewSink(topic, func(m Message) (R, error) {
		var zero R
		e, err := decodeEvent[T](topic, m)
		if err != nil {
			return zero, err
		}
		return prepare(e)
	}, write)
}

// decodeEvent decodes m, a message of topic carrying records of type T.
func decodeEvent[T events.Record](topic string, m Message) (Event[T], error) {
	var zero Event[T]
	// The consumer hands each sink the value kafka-go allocated for that message and never changes
	// it, so the record may share its memory (see events.DecodeOwned).
	now := m.Fetched
	if now.IsZero() {
		now = time.Now()
	}
	r, err := events.DecodeOwnedAt(topic, m.Value, now)
	if err != nil {
		return zero, err
	}
	t, ok := r.(T)
	if !ok {
		return zero, fmt.Errorf("topic %s carries %T, not %T", topic, r, zero.Record)
	}
	b, err := compact(m.Value)
	if err != nil {
		return zero, err
	}
	return Event[T]{Record: t, JSON: b}, nil
}

// compact returns value without insignificant whitespace. Producers encode compactly (json.Marshal),
// so the usual value is returned as it is; the compaction pass costs more than the decoding.
func compact(value []byte) ([]byte, error) {
	if !hasSpace(value) {
		return value, nil
	}
	var b bytes.Buffer
	b.Grow(len(value))
	if err := json.Compact(&b, value); err != nil {
		return nil, fmt.Errorf("compact record: %w", err)
	}
	return b.Bytes(), nil
}

// hasSpace reports whether b holds a byte JSON counts as whitespace. Decoding has rejected raw
// control characters, so any byte up to ' ' is one. Records are a kilobyte each, so the test runs on
// eight bytes at a time: after subtracting 0x21 from every byte, a top bit that was clear before is
// set only if some byte was below 0x21 (a borrow starts only at such a byte; ^w drops the bytes from
// 0x80 up).
func hasSpace(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		if (w-0x21*ones)&^w&highs != 0 {
			return true
		}
		b = b[8:]
	}
	for _, c := range b {
		if c <= ' ' {
			return true
		}
	}
	return false
}
