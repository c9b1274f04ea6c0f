package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/ingest"
)

// The three benchmarks write the same rows to the same table, so their rows/s compare the
// consumer loop and Table.Insert against a bare COPY.

const benchBatch = 2000

// BenchmarkRawCopy is the baseline: COPY straight into the table, one transaction per batch.
func BenchmarkRawCopy(b *testing.B) {
	benchWrite(b, benchBatch, func(ctx context.Context, tx pgx.Tx, table ingest.Table[item], recs []item) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"test", "items"}, table.Columns,
			pgx.CopyFromSlice(len(recs), func(j int) ([]any, error) { return table.Row(recs[j]), nil }))
		return err
	})
}

// BenchmarkTableInsert is Table.Insert alone, one transaction per batch.
func BenchmarkTableInsert(b *testing.B) {
	benchWrite(b, benchBatch, func(ctx context.Context, tx pgx.Tx, table ingest.Table[item], recs []item) error {
		got, err := table.Insert(ctx, tx, recs)
		if err == nil && len(got) != len(recs) {
			b.Errorf("inserted %d of %d", len(got), len(recs))
		}
		return err
	})
}

// BenchmarkIngest is the whole loop: fetch from the embedded broker, decode JSON, Insert, store
// offsets, commit. The messages are produced before the timer starts.
func BenchmarkIngest(b *testing.B) {
	pool := newItemsPool(b)
	kc := startBroker(b)
	n := b.N * benchBatch
	produceItems(b, kc, genItems(0, n))
	var s itemSink
	cfg := testConfig()
	cfg.BatchSize = benchBatch
	cfg.BatchWait = 50 * time.Millisecond
	c, err := ingest.NewConsumer(cfg, ingest.Deps{Pool: pool, Kafka: kc}, []ingest.Sink{s.sink()})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	r := start(b, c)
	eventually(b, 5*time.Minute, func() (bool, string) { return s.inserted.Load() == int64(n), "" })
	b.StopTimer()
	if err := r.stop(b); err != nil {
		b.Fatal(err)
	}
	waitRows(b, pool, n, time.Second)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkTableInsertHalfKnown measures the staging path: every batch repeats half of the
// previous one, as when an upstream producer re-sends.
func BenchmarkTableInsertHalfKnown(b *testing.B) {
	benchWrite(b, benchBatch/2, func(ctx context.Context, tx pgx.Tx, table ingest.Table[item], recs []item) error {
		_, err := table.Insert(ctx, tx, recs)
		return err
	})
}

// benchWrite times write of b.N batches of benchBatch items into a fresh items table, each batch
// in a transaction of its own and starting step items after the previous one (benchBatch: no item
// twice), and reports the rows written a second.
func benchWrite(b *testing.B, step int, write func(ctx context.Context, tx pgx.Tx, table ingest.Table[item], recs []item) error) {
	b.Helper()
	ctx := context.Background()
	pool := newItemsPool(b)
	table := itemsTable()
	items := genItems(0, (b.N-1)*step+benchBatch)
	b.ResetTimer()
	for i := range b.N {
		recs := items[i*step : i*step+benchBatch]
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return write(ctx, tx, table, recs) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "rows/s")
}
