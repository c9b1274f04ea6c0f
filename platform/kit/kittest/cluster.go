package kittest

import (
	"testing"

	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

// Main is the body of the TestMain of a test binary whose tests start stacks with Up: it starts the
// binary's PostgreSQL cluster (pgtest.Main), runs the tests, stops the cluster and returns the exit
// code for os.Exit.
//
//	func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }
func Main(m *testing.M) int { return pgtest.Main(m) }

// Up starts services as Start does, on a fresh database of the cluster Main started.
func Up(t testing.TB, opts Options, services ...kit.Service) *Stack {
	t.Helper()
	return Start(t, pgtest.Server(), opts, services...)
}
