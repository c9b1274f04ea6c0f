// Package pgtest gives each test package one real PostgreSQL cluster and each test its own
// database in it.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) { pool := pgtest.NewPool(t, pgtest.Server()); ... }
package pgtest

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
)

// server is the cluster Main started for this test binary. A test binary is one package's tests,
// so each package gets its own without declaring a variable for it.
var server *pglocal.Server

// Server is the cluster Main started, nil before it.
func Server() *pglocal.Server { return server }

// Main starts the test binary's temporary cluster (Server), runs the tests and stops the cluster.
// It returns the exit code for os.Exit. Set PGTEST_LOG=1 to see the server's log on stderr.
func Main(m *testing.M) int {
	var logger *slog.Logger
	if os.Getenv("PGTEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := pglocal.Start(ctx, pglocal.Options{Logger: logger})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	server = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDB creates a fresh database for the test and drops it at cleanup. It returns its URL.
func NewDB(tb testing.TB, srv *pglocal.Server) string {
	tb.Helper()
	if srv == nil {
		tb.Fatal("pgtest: no server; call pgtest.Main from TestMain")
	}
	name := unsafeName.ReplaceAllString(strings.ToLower(tb.Name()), "_")
	suffix := fmt.Sprintf("_%08x", rand.Uint32())
	if max := 63 - len(suffix) - len("t_"); len(name) > max {
		name = name[:max]
	}
	name = "t_" + name + suffix

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, err := srv.CreateDatabase(ctx, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.DropDatabase(ctx, name); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return url
}

// NewPool returns a pool on a fresh database (see NewDB), closed at cleanup.
func NewPool(tb testing.TB, srv *pglocal.Server) *pgxpool.Pool {
	tb.Helper()
	url := NewDB(tb, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pg.Open(ctx, url, 16)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}
