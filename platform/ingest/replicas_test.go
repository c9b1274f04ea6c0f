package ingest_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

// replicaConfig is every replica's: one group, short sessions so that a killed replica's
// partitions move within the test's patience.
func replicaConfig() ingest.Config {
	cfg := testConfig()
	cfg.BatchSize = 100
	cfg.SessionTimeout = 6 * time.Second
	return cfg
}

// runReplica is the body of a replica process: a consumer of the items topic whose batches stay
// open a while before they commit, so that a kill lands in one. It runs until killed or stopped.
func runReplica(r kittest.Replica) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := r.Open(ctx, 4)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	c, err := ingest.NewConsumer(replicaConfig(), ingest.Deps{Pool: pool, Kafka: r.Kafka, BeforeCommit: kittest.SlowCommits},
		[]ingest.Sink{countingSink()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kittest.AnnounceReady(c.Ready)
	if err := c.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestReplicasShareAGroup runs replicas of one consumer in one group under continuous production:
// two, then a third that joins, then one killed (SIGKILL, with a batch's transaction open), then one
// that leaves cleanly. Partitions move at each step; every message ends up in the table once and
// the running count equals the number produced.
func TestReplicasShareAGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	url := pgtest.NewDB(t, pgtest.Server())
	pool, err := pg.Open(ctx, url, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	newItemsDB(t, pool)
	newTotals(ctx, t, pool)
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 6, Topics: []string{itemsTopic}})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: t.Name()}
	stopProducing := produceLive(ctx, t, kc)
	defer stopProducing()
	progress := func(what string) { t.Helper(); waitProgress(ctx, t, pool, what, 300) }

	newReplica := func(reg prometheus.Registerer) *ingest.Consumer {
		c, err := ingest.NewConsumer(replicaConfig(), ingest.Deps{Pool: pool, Kafka: kc, Registerer: reg}, []ingest.Sink{countingSink()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	regA := prometheus.NewRegistry()
	a := start(t, newReplica(regA))
	killed := kittest.StartReplica(t, kittest.Replica{Name: "replica-b", DB: url, Kafka: kc})
	progress("two replicas")

	regC := prometheus.NewRegistry()
	c := start(t, newReplica(regC))
	eventually(t, time.Minute, func() (bool, string) {
		n := kittest.Metric(t, regC, "tidemark_ingest_group_generations_total", nil)
		return n >= 1, fmt.Sprintf("the third replica joined %v generations", n)
	})
	progress("three replicas")

	// Killed with a batch open: its transaction is rolled back, and its partitions move once the
	// coordinator gives up on it.
	eventually(t, 30*time.Second, func() (bool, string) {
		var open int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'replica-b' AND xact_start IS NOT NULL`).Scan(&open)
		return open > 0, "replica-b has no transaction open"
	})
	genA := kittest.Metric(t, regA, "tidemark_ingest_group_generations_total", nil)
	before := partitionOffsets(ctx, t, pool)
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	eventually(t, time.Minute, func() (bool, string) {
		n := kittest.Metric(t, regA, "tidemark_ingest_group_generations_total", nil)
		return n > genA, "the group has not rebalanced after the kill"
	})
	waitEveryPartition(ctx, t, pool, before)
	t.Logf("every partition written again %v after the kill (session timeout %v)",
		time.Since(killedAt).Round(100*time.Millisecond), replicaConfig().SessionTimeout)

	if err := c.stop(t); err != nil {
		t.Fatalf("the replica that left: %v", err)
	}
	progress("one replica left")

	want := stopProducing()
	waitExactlyOnce(ctx, t, pool, want)
	if err := a.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkCount(ctx, t, pool, want)
	t.Logf("%d messages over 6 partitions and 3 moves, none lost or doubled", want)
}

// partitionOffsets reads the stored offset of every partition.
func partitionOffsets(ctx context.Context, tb testing.TB, pool *pgxpool.Pool) map[int]int64 {
	tb.Helper()
	rows, err := pool.Query(ctx, `SELECT partition, "offset" FROM test.kafka_offsets`)
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[int]int64)
	var p int
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&p, &off}, func() error { out[p] = off; return nil }); err != nil {
		tb.Fatal(err)
	}
	return out
}

// waitEveryPartition waits until every partition's stored offset has passed the one in before:
// whoever owns each now has committed there.
func waitEveryPartition(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, before map[int]int64) {
	tb.Helper()
	eventually(tb, time.Minute, func() (bool, string) {
		now := partitionOffsets(ctx, tb, pool)
		for p, off := range before {
			if now[p] <= off {
				return false, fmt.Sprintf("partition %d still at offset %d", p, off)
			}
		}
		return len(before) > 0, "no partition stored yet"
	})
}
