package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
)

// TestConsumerSurvivesPostgresLosingCommits takes back, under live ingest and again and again,
// commits the consumer had made: its Postgres is put back to a backup taken seconds earlier (a
// failover to a replica that lagged, a restore), or stopped immediately with commits not yet
// flushed. Every message then is in the table exactly once, and a running count kept by the sink
// (state derived from every record written, so a message applied twice or never shows) equals the
// number produced.
func TestConsumerSurvivesPostgresLosingCommits(t *testing.T) {
	cases := []struct {
		name string
		// fault takes back what was committed since it began; begin runs first, with ingest going.
		begin func(ctx context.Context, srv *pglocal.Server) (string, error)
		fault func(ctx context.Context, srv *pglocal.Server, backup string) error
		// rewinds tells whether every fault must be seen: a restore always takes commits back, an
		// immediate stop only those the WAL writer had not flushed yet.
		rewinds bool
	}{
		{
			name:    "restored to a backup",
			begin:   func(ctx context.Context, srv *pglocal.Server) (string, error) { return srv.Backup(ctx) },
			fault:   func(ctx context.Context, srv *pglocal.Server, backup string) error { return srv.Restore(ctx, backup) },
			rewinds: true,
		},
		{
			name:  "stopped immediately",
			begin: func(context.Context, *pglocal.Server) (string, error) { return "", nil },
			fault: func(ctx context.Context, srv *pglocal.Server, _ string) error {
				if err := srv.Crash(); err != nil {
					return err
				}
				return srv.Resume(ctx)
			},
		},
	}
	const iterations = 3
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			srv, pool := kittest.OwnPostgres(t, ctx, "failover", "&connect_timeout=2")
			newItemsDB(t, pool)
			newTotals(ctx, t, pool)

			kc := startBroker(t)
			reg := prometheus.NewRegistry()
			cfg := testConfig()
			cfg.BatchSize = 100
			c, err := ingest.NewConsumer(cfg, ingest.Deps{Pool: pool, Kafka: kc, Registerer: reg}, []ingest.Sink{countingSink()})
			if err != nil {
				t.Fatal(err)
			}
			r := start(t, c)
			stopProducing := produceLive(ctx, t, kc)
			defer stopProducing()
			progress := func(what string, n int64) { t.Helper(); waitProgress(ctx, t, pool, what, n) }
			for i := range iterations {
				progress("before the fault", 200)
				backup, err := tc.begin(ctx, srv)
				if err != nil {
					t.Fatal(err)
				}
				progress("commits the fault takes back", 300)
				if err := tc.fault(ctx, srv, backup); err != nil {
					t.Fatalf("fault %d: %v", i+1, err)
				}
			}
			progress("after the last fault", 200)
			want := stopProducing()
			waitExactlyOnce(ctx, t, pool, want)
			if err := r.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			checkCount(ctx, t, pool, want)
			rewinds := kittest.Metric(t, reg, "tidemark_ingest_rewinds_total", nil)
			if tc.rewinds && rewinds < iterations {
				t.Errorf("%v rewinds after %d restores", rewinds, iterations)
			}
			t.Logf("%d faults, %d messages, %v rewinds, none lost or doubled", iterations, want, rewinds)
		})
	}
}

// newTotals creates the running count countingSink keeps.
func newTotals(ctx context.Context, tb testing.TB, pool *pgxpool.Pool) {
	tb.Helper()
	if _, err := pool.Exec(ctx, `CREATE TABLE test.totals (id int PRIMARY KEY, n bigint NOT NULL); INSERT INTO test.totals VALUES (1, 0)`); err != nil {
		tb.Fatal(err)
	}
}

// countingSink writes items and adds the number of records it is handed to test.totals: state
// derived from every record written, so that a message applied twice, or never, shows.
func countingSink() ingest.Sink {
	table := itemsTable()
	return ingest.NewSink(itemsTopic, decodeItem, func(ctx context.Context, tx pgx.Tx, recs []item) error {
		if _, err := table.Insert(ctx, tx, recs); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE test.totals SET n = n + $1 WHERE id = 1`, len(recs))
		return err
	})
}

// produceLive produces 50 items every 20 ms until stop, which returns how many it produced.
func produceLive(ctx context.Context, tb testing.TB, kc kafka.Config) (stop func() int) {
	var produced atomic.Int64
	prodCtx, cancel := context.WithCancel(ctx)
	var producer sync.WaitGroup
	producer.Go(func() {
		for next := 0; prodCtx.Err() == nil; next += 50 {
			produceItems(tb, kc, genItems(next, 50))
			produced.Store(int64(next + 50))
			select {
			case <-prodCtx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() int {
		cancel()
		producer.Wait()
		return int(produced.Load())
	}
}

// storedOffsets is how many messages the stored offsets cover; 0 while Postgres does not answer.
func storedOffsets(ctx context.Context, pool *pgxpool.Pool) int64 {
	var n int64
	_ = pool.QueryRow(ctx, `SELECT coalesce(sum("offset" + 1), 0) FROM test.kafka_offsets`).Scan(&n)
	return n
}

// waitProgress waits until the stored offsets cover n more messages than now.
func waitProgress(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, what string, n int64) {
	tb.Helper()
	from := storedOffsets(ctx, pool)
	eventually(tb, time.Minute, func() (bool, string) {
		s := storedOffsets(ctx, pool)
		return s >= from+n, fmt.Sprintf("%s: stored offsets moved from %d to %d, want +%d", what, from, s, n)
	})
}

// waitExactlyOnce waits until the table holds the want items produced, each once, and the running
// count has reached want.
func waitExactlyOnce(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, want int) {
	tb.Helper()
	waitRows(tb, pool, want, time.Minute)
	eventually(tb, 30*time.Second, func() (bool, string) {
		n := total(ctx, tb, pool)
		return n >= int64(want), fmt.Sprintf("running count %d, want %d", n, want)
	})
}

// checkCount fails unless the running count is exactly want.
func checkCount(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, want int) {
	tb.Helper()
	if n := total(ctx, tb, pool); n != int64(want) {
		tb.Errorf("running count %d after %d messages: %d applied twice", n, want, n-int64(want))
	}
}

func total(ctx context.Context, tb testing.TB, pool *pgxpool.Pool) int64 {
	tb.Helper()
	var n int64
	if err := pool.QueryRow(ctx, `SELECT n FROM test.totals`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}
