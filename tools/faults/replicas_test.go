package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
)

// serviceEnv names the service a replica process runs.
const serviceEnv = "TIDEMARK_FAULTS_SERVICE"

func TestMain(m *testing.M) {
	if r, ok := kittest.ReplicaFromEnv(); ok {
		os.Exit(runReplica(r, os.Getenv(serviceEnv)))
	}
	os.Exit(m.Run())
}

// runReplica is the body of a replica process: service, with slow commits, until it is killed or
// stopped.
func runReplica(rep kittest.Replica, service string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pool, err := rep.Open(ctx, 8)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	svc, ok := lookup(service)
	if !ok {
		fmt.Fprintln(os.Stderr, "no service", service)
		return 1
	}
	r, err := newReplica(svc, pool, rep.Kafka, kittest.SlowCommits)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kittest.AnnounceReady(r.inst.Ready)
	<-ctx.Done()
	if err := r.stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startProcess runs a replica of service in a child process of this test binary, under name in
// Postgres' application_name, and waits until it is ready.
func startProcess(tb testing.TB, service, name, dbURL string, kc kafka.Config) *exec.Cmd {
	tb.Helper()
	return kittest.StartReplica(tb, kittest.Replica{Name: name, DB: dbURL, Kafka: kc}, serviceEnv+"="+service)
}

// partitionOffsets reads the stored offset of every topic and partition of schema.
func partitionOffsets(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, schema string) map[string]int64 {
	tb.Helper()
	rows, err := pool.Query(ctx, `SELECT topic || '/' || partition, "offset" FROM `+pgx.Identifier{schema, "kafka_offsets"}.Sanitize())
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]int64{}
	var tp string
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&tp, &off}, func() error { out[tp] = off; return nil }); err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestReplicasMoveUnderLoad runs market and user as several replicas of one group each while events
// arrive: a second replica of each in a process of its own, a third that joins, then the second
// killed (SIGKILL, with a batch's transaction open), then the third stopped cleanly. Partitions move
// at each step. Afterwards every table of both services, candles, order states and positions
// among them, equals what a single replica of each stores from the same events.
func TestReplicasMoveUnderLoad(t *testing.T) {
	cycles := soakRounds(1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cycles)*5*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	msgs := history(t, time.Duration(cycles)*90*time.Minute)
	names := []string{"market", "user"}

	moved := openDB(ctx, t, srv.CreateDatabase, "moved")
	url := srv.URL("moved") + "&connect_timeout=2"
	all := run(ctx, t, moved, msgs, names, func(kc kafka.Config, rs []*replica) []*replica {
		progress := func(what string) { t.Helper(); waitProgress(ctx, t, moved, what, 500, schemas(rs...)...) }
		for cycle := range cycles {
			var killed []*exec.Cmd
			for _, name := range names {
				killed = append(killed, startProcess(t, name, name+"-2", url, kc))
			}
			progress("two replicas each")
			var third []*replica
			for _, name := range names {
				third = append(third, startReplica(t, declaration(t, name), moved, kc, nil))
			}
			progress("three replicas each")

			kittest.Eventually(t, time.Minute, "the second replicas to have a batch open", func() bool {
				var open int
				_ = moved.QueryRow(ctx, `SELECT count(DISTINCT application_name) FROM pg_stat_activity
					WHERE application_name IN ('market-2', 'user-2') AND xact_start IS NOT NULL`).Scan(&open)
				return open == len(names)
			})
			before := map[string]map[string]int64{}
			for _, r := range rs {
				before[r.inst.Schema()] = partitionOffsets(ctx, t, moved, r.inst.Schema())
			}
			for _, cmd := range killed {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
			}
			killedAt := time.Now()
			// Every partition that was behind its topic's end is written again, whoever owns it now.
			for schema, offsets := range before {
				kittest.Eventually(t, 2*time.Minute, schema+"'s partitions to be written after the kill", func() bool {
					now := partitionOffsets(ctx, t, moved, schema)
					for tp, off := range offsets {
						if now[tp] <= off && !atEnd(ctx, kc, tp, off) {
							return false
						}
					}
					return true
				})
			}
			t.Logf("cycle %d: every partition written again %v after the kill (session timeout %v)",
				cycle+1, time.Since(killedAt).Round(100*time.Millisecond), ingestConfig().SessionTimeout)

			for _, r := range third {
				if err := r.stop(); err != nil {
					t.Errorf("%s's third replica stopped with: %v", r.inst.Name(), err)
				}
			}
			progress("after the third replicas left")
		}
		return rs
	})
	t.Logf("%d messages through %d cycles of replicas that joined, died and left", len(msgs), cycles)

	single := openDB(ctx, t, srv.CreateDatabase, "single")
	run(ctx, t, single, msgs, names, nil)
	sameState(ctx, t, moved, single, "a single replica's run", all...)
}

// atEnd tells whether offset is the last of topic/partition tp: nothing more to write there.
func atEnd(ctx context.Context, kc kafka.Config, tp string, offset int64) bool {
	topic, p, ok := strings.Cut(tp, "/")
	if !ok {
		return false
	}
	ends, err := kc.EndOffsets(ctx, topic)
	if err != nil {
		return false
	}
	var part int
	fmt.Sscan(p, &part)
	return ends[topic][part] <= offset+1
}
