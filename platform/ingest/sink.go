// Package ingest is the one Kafka -> Postgres consumer loop every service runs: batches of
// messages are decoded by per-topic sinks and written in one transaction together with the
// consumed offsets, so a crash replays without losing or doubling anything. A few writers commit
// batches at once, each partition's always on the same one, in order.
package ingest

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Sink turns one topic's messages into rows.
type Sink interface {
	// Topic is the Kafka topic the sink consumes.
	Topic() string
	// Decode parses and validates one message value. An error sends the message to
	// "<topic>.dlq" with the error text as reason; it must not depend on Postgres. value is the
	// message's own memory, which nothing changes afterwards, so the record may share it
	// (events.DecodeOwned).
	Decode(value []byte) (any, error)
	// Write stores the decoded records of one batch, in consumption order (per partition), within
	// tx. It is called once per topic per batch and again with the same records when the
	// transaction has to be retried, so it must be idempotent (Table.Insert is). When Postgres
	// refuses the batch's values (SQLSTATE classes 22 and 23, or a value its column cannot hold),
	// the consumer writes the batch again by halves until it has the messages refused on their
	// own, and sends those to the DLQ; any other error retries the batch whole. Writers of other
	// partitions run Write at the same time: rows that several may change (aggregates, upserted
	// reference rows) must be written in one order, so that their transactions cannot deadlock.
	Write(ctx context.Context, tx pgx.Tx, records []any) error
}

// NewSink adapts typed functions to a Sink.
func NewSink[T any](topic string, decode func([]byte) (T, error), write func(ctx context.Context, tx pgx.Tx, recs []T) error) Sink {
	return &typedSink[T]{topic: topic, decode: decode, write: write}
}

type typedSink[T any] struct {
	topic  string
	decode func([]byte) (T, error)
	write  func(ctx context.Context, tx pgx.Tx, recs []T) error
}

func (s *typedSink[T]) Topic() string { return s.topic }

func (s *typedSink[T]) Decode(value []byte) (any, error) { return s.decode(value) }

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
