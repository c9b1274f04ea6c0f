package simchain_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// discard is a direct writer that keeps nothing.
type discard struct{}

func (discard) Write(context.Context, ...events.Message) error { return nil }

// TestMemoryPerEvent measures what the chain keeps per event for the default dev flow (30 fills a
// minute), over SIMCHAIN_MEMORY_HOURS simulated hours (default 2; 72 is the dev backfill), and
// logs it with the extrapolation to three days.
func TestMemoryPerEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("simulated hours")
	}
	hours := 2
	if v, err := strconv.Atoi(os.Getenv("SIMCHAIN_MEMORY_HOURS")); err == nil && v > 0 {
		hours = v
	}
	s := sim.New(sim.DefaultConfig())
	start := windowStart
	c := simchain.New(simchain.Config{Seed: 1})
	began := time.Now()
	if err := s.Write(context.Background(), c.Writer(discard{}), start, start.Add(time.Duration(hours)*time.Hour)); err != nil {
		t.Fatal(err)
	}
	c.Seal()
	took := time.Since(began)
	st := c.Stats()
	with := heap()
	runtime.KeepAlive(c) // alive until measured, then freed
	if p := os.Getenv("SIMCHAIN_HEAP"); p != "" {
		f, _ := os.Create(p)
		_ = pprof.WriteHeapProfile(f)
		f.Close()
	}
	c = nil
	// What the chain holds is what freeing it gives back; the simulator's caches stay either way.
	without := heap()
	size := with - without
	if st.Events == 0 {
		t.Fatal("no events")
	}
	perEvent := float64(size) / float64(st.Events)
	perDay := float64(st.Events) / float64(hours) * 24
	t.Logf("%d h: %d blocks, %d txs, %d events (%d event bytes, %.0f a event); chain %.1f MB, %.0f bytes a event; "+
		"3 days: %.0f events, %.0f MB; written in %s",
		hours, st.Blocks, st.Transactions, st.Events, st.EventBytes, float64(st.EventBytes)/float64(st.Events),
		float64(size)/1e6, perEvent, 3*perDay, 3*perDay*perEvent/1e6, took.Round(time.Millisecond))
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
