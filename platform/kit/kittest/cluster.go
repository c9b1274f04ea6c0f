package kittest

import (
	"testing"

	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

// cluster is the PostgreSQL cluster Main started for this test binary.
var cluster *pglocal.Server

// Main is the body of the TestMain of a test binary whose tests start stacks with Up: it starts the
// binary's PostgreSQL cluster (pgtest.Main), runs the tests, stops the cluster and returns the exit
// code for os.Exit.
//
//	func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }
func Main(m *testing.M) int { return pgtest.Main(m, &cluster) }

// Postgres is the cluster Main started, for a test that wants a database of its own beside a stack's
// (pgtest.NewPool(t, kittest.Postgres())).
func Postgres() *pglocal.Server { return cluster }

// Up starts services as Start does, on a fresh database of the cluster Main started.
func Up(t testing.TB, opts Options, services ...kit.Service) *Stack {
	t.Helper()
	return Start(t, cluster, opts, services...)
}
