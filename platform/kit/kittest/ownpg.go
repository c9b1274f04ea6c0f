package kittest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
)

// OwnPostgres starts a PostgreSQL cluster of the test's own, for a test that pauses, crashes or
// restores it (doing so to the package's shared one would disturb other tests), creates database
// name in it and opens a pool of 4 connections on that database, params added to its URL
// ("&connect_timeout=2", say). The pool is closed, then the cluster stopped, at cleanup.
func OwnPostgres(tb testing.TB, ctx context.Context, name, params string) (*pglocal.Server, *pgxpool.Pool) {
	tb.Helper()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Stop() })
	url, err := srv.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	pool, err := pg.Open(ctx, url+params, 4)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return srv, pool
}
