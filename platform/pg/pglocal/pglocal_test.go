package pglocal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/pg/pglocal"
)

func TestPersistentPauseResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	// The server user has to traverse the test's temp directories.
	for d := filepath.Join(base, "pg"); ; d = filepath.Dir(d) {
		if d == filepath.Dir(d) {
			break
		}
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o055); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(base, "pg")

	srv, err := pglocal.Start(ctx, pglocal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	url, err := srv.CreateDatabase(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	exec(t, ctx, url, `CREATE TABLE t (v int); INSERT INTO t VALUES (42)`)

	port := srv.Port()
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	if conn, err := pgx.Connect(ctx, url); err == nil {
		_ = conn.Close(ctx)
		t.Fatal("connected to a paused server")
	}
	if err := srv.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if srv.Port() != port {
		t.Errorf("port changed from %d to %d", port, srv.Port())
	}
	if got := queryInt(t, ctx, url, `SELECT v FROM t`); got != 42 {
		t.Errorf("after resume v = %d", got)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Fatalf("persistent data dir removed: %v", err)
	}

	// A second Start reuses the cluster (no initdb) on a new free port.
	srv2, err := pglocal.Start(ctx, pglocal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv2.Stop() }()
	if got := queryInt(t, ctx, srv2.URL("kept"), `SELECT v FROM t`); got != 42 {
		t.Errorf("after restart v = %d", got)
	}
}

func TestTempDirRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := srv.DataDir()
	if got := queryInt(t, ctx, srv.URL("postgres"), `SELECT 1`); got != 1 {
		t.Fatal(got)
	}
	if err := srv.DropDatabase(ctx, "nonexistent"); err != nil {
		t.Errorf("drop missing database: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp data dir still there: %v", err)
	}
}

func exec(tb testing.TB, ctx context.Context, url, sql string) {
	tb.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatal(err)
	}
}

func queryInt(tb testing.TB, ctx context.Context, url, sql string) int {
	tb.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var v int
	if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
		tb.Fatal(err)
	}
	return v
}

// TestCrashAndRestore: a crash keeps what was flushed, and a restore puts the cluster back to its
// backup, dropping what was committed after it, as a failover to a lagging replica does.
func TestCrashAndRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	url, err := srv.CreateDatabase(ctx, "restored")
	if err != nil {
		t.Fatal(err)
	}
	exec(t, ctx, url, `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`)
	backup, err := srv.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, ctx, url, `INSERT INTO t VALUES (2)`)
	exec(t, ctx, url, `CHECKPOINT`)

	if err := srv.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, ctx, url, `SELECT count(*) FROM t`); got != 2 {
		t.Errorf("after a crash %d rows, want the 2 checkpointed", got)
	}

	if err := srv.Restore(ctx, backup); err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, ctx, url, `SELECT count(*) FROM t`); got != 1 {
		t.Errorf("after the restore %d rows, want the 1 of the backup", got)
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Errorf("the backup folder is still there: %v", err)
	}
}
