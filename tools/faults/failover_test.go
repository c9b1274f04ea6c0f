package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
)

// ingestConfig is every instance's ingest: small batches, so that a fault meets many of them.
func ingestConfig() ingest.Config {
	return ingest.Config{
		BatchSize:      200,
		BatchWait:      20 * time.Millisecond,
		MinBackoff:     20 * time.Millisecond,
		MaxBackoff:     time.Second,
		SessionTimeout: 6 * time.Second,
	}
}

// consumers are the services whose derived state a lost commit would corrupt.
var consumers = []string{"market", "user", "stats", "notify"}

// TestMeshSurvivesPostgresLosingCommits runs market, user, stats and notify while events arrive
// and takes back commits they made, again and again: Postgres put back to a backup taken seconds
// earlier (a failover to a replica that lagged, a restore), and stopped immediately with commits
// not yet flushed. Then the same events go into a fresh database through the same services with
// no fault: every table of every service, derived state included, must be equal.
func TestMeshSurvivesPostgresLosingCommits(t *testing.T) {
	rounds := soakRounds(3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds)*3*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	// Enough arrivals to last the rounds: a restore waits for commits to take back.
	msgs := history(t, time.Duration(rounds)*30*time.Minute)

	faulted := openDB(ctx, t, srv.CreateDatabase, "faulted")
	all := run(ctx, t, faulted, msgs, consumers, func(_ kafka.Config, rs []*replica) []*replica {
		all := schemas(rs...)
		progress := func(what string) { t.Helper(); waitProgress(ctx, t, faulted, what, 500, all...) }
		faults := []struct {
			name string
			do   func() error
		}{
			{"restore", func() error {
				backup, err := srv.Backup(ctx)
				if err != nil {
					return err
				}
				progress("commits the restore takes back")
				return srv.Restore(ctx, backup)
			}},
			{"immediate stop", func() error {
				if err := srv.Crash(); err != nil {
					return err
				}
				return srv.Resume(ctx)
			}},
		}
		for round := range rounds {
			for _, f := range faults {
				progress("before a fault")
				start := time.Now()
				if err := f.do(); err != nil {
					t.Fatalf("%s %d: %v", f.name, round+1, err)
				}
				t.Logf("%s %d took %v", f.name, round+1, time.Since(start).Round(time.Millisecond))
			}
		}
		return rs
	})
	t.Logf("%d restores and %d immediate stops over %d messages", rounds, rounds, len(msgs))

	reference := openDB(ctx, t, srv.CreateDatabase, "reference")
	run(ctx, t, reference, msgs, consumers, nil)
	sameState(ctx, t, faulted, reference, "the run without faults", all...)
}
