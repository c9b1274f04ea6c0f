package kittest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg"
)

// The environment of a replica process, which tells it from the test binary's own (ReplicaFromEnv).
const (
	replicaNameEnv  = "TIDEMARK_TEST_REPLICA"
	replicaDBEnv    = "TIDEMARK_TEST_REPLICA_DB"
	replicaKafkaEnv = "TIDEMARK_TEST_REPLICA_BROKERS"
)

// Replica is a consumer run in a helper process of its own (StartReplica), so that a test can kill
// it for real, with a batch's transaction open.
type Replica struct {
	// Name names it in failures, in Postgres (application_name) and to Kafka (the client id).
	Name string
	// DB is the URL of its database.
	DB string
	// Kafka is the cluster it consumes from: only the brokers go to the process.
	Kafka kafka.Config
}

// StartReplica runs r in a helper process (StartProcess), env added to its environment (what it
// should run, say), and waits until it is ready.
func StartReplica(tb testing.TB, r Replica, env ...string) *exec.Cmd {
	tb.Helper()
	env = append(env, replicaNameEnv+"="+r.Name, replicaDBEnv+"="+r.DB, replicaKafkaEnv+"="+strings.Join(r.Kafka.Brokers, ","))
	return StartProcess(tb, r.Name, env...)
}

// ReplicaFromEnv is the replica this process was started as by StartReplica; false in the test
// binary's own process. A TestMain that finds one runs it instead of the tests.
func ReplicaFromEnv() (Replica, bool) {
	name := os.Getenv(replicaNameEnv)
	if name == "" {
		return Replica{}, false
	}
	return Replica{
		Name:  name,
		DB:    os.Getenv(replicaDBEnv),
		Kafka: kafka.Config{Brokers: strings.Split(os.Getenv(replicaKafkaEnv), ","), ClientID: name},
	}, true
}

// Open opens a pool of conns connections on r's database, under r's name, so that a test can find
// the replica's sessions (and its open transaction) in pg_stat_activity.
func (r Replica) Open(ctx context.Context, conns int32) (*pgxpool.Pool, error) {
	return pg.Open(ctx, r.DB+"&application_name="+r.Name, conns)
}

// SlowCommits is a replica's BeforeCommit: it holds each batch a while before its commit, so that a
// kill lands in an open one.
func SlowCommits(ctx context.Context, _ int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(300 * time.Millisecond):
		return nil
	}
}
