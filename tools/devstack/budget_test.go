package devstack_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/tools/devstack"
)

// TestMakeRunStaysInItsBudget runs what `make run` runs with its defaults (three days of history,
// then live events) and reads the process's resident memory at the banner, after the backfill, once
// the mesh has caught up with it and while live: it must stay under the default budget, and so must
// the peak. TIDEMARK_DEVSTACK_SOAK (a duration, `make soak` sets 30m) keeps it live that long and
// checks that the live heap of the last third is no more than 10% over the first's; the samples
// start after the catch-up, whose peak would hide a growth. TIDEMARK_DEVSTACK_PROFILES (a
// directory) gets a heap profile at every live sample, to read a growth with `go tool pprof -base`.
func TestMakeRunStaysInItsBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres, a broker, the services and the simulator")
	}
	live := 30 * time.Second
	soak := os.Getenv("TIDEMARK_DEVSTACK_SOAK")
	if soak != "" {
		d, err := time.ParseDuration(soak)
		if err != nil {
			t.Fatalf("TIDEMARK_DEVSTACK_SOAK: %v", err)
		}
		live = d
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil { // PostgreSQL runs as postgres
			t.Fatal(err)
		}
	}
	registry := telemetry.NewRegistry()
	progress := &backfillWatch{done: make(chan struct{})}
	banner := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- devstack.Run(ctx, devstack.Options{DataDir: dir, Addr: "127.0.0.1:0", Progress: progress, Out: io.Discard, Ready: banner, Registry: registry,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("devstack stopped with: %v", err)
		}
	}()
	start := time.Now()
	check := func(when string) int64 {
		rss, heap := procStatus(t, "VmRSS"), liveHeap()
		t.Logf("%s (%s): %s resident, live heap %s, chain %.0f blocks, broker %s", when, time.Since(start).Round(time.Second),
			devstack.FormatBytes(rss), devstack.FormatBytes(heap), kittest.Metric(t, registry, "tidemark_devstack_chain_blocks", nil),
			brokerHeld(t, registry))
		if rss > devstack.DefaultMemoryBudget {
			t.Errorf("%s: %s resident, over the budget of %s", when, devstack.FormatBytes(rss), devstack.FormatBytes(devstack.DefaultMemoryBudget))
		}
		return heap
	}
	select {
	case <-banner:
		check("at the banner")
	case err := <-done:
		done <- nil
		t.Fatalf("devstack stopped before its banner: %v", err)
	case <-time.After(5 * time.Minute):
		t.Fatal("no banner within 5 minutes")
	}
	select {
	case <-progress.done:
	case err := <-done:
		done <- nil
		t.Fatalf("devstack stopped before the end of its backfill: %v", err)
	case <-time.After(10 * time.Minute):
		t.Fatal("the backfill did not end within 10 minutes")
	}
	check("after the backfill")
	waitCaughtUp(t, registry, 15*time.Minute)
	check("caught up")
	// What the process retains is its live heap; its resident set also holds what the collector has
	// not yet reclaimed, which the soft limit bounds, so growth is judged on the live heap.
	var samples []int64
	for end := time.Now().Add(live); time.Now().Before(end); {
		time.Sleep(min(live/10, time.Minute))
		samples = append(samples, check("live"))
		writeHeapProfile(t, len(samples))
	}
	if peak := procStatus(t, "VmHWM"); peak > devstack.DefaultMemoryBudget {
		t.Errorf("peak resident %s, over the budget of %s", devstack.FormatBytes(peak), devstack.FormatBytes(devstack.DefaultMemoryBudget))
	} else {
		t.Logf("peak resident %s", devstack.FormatBytes(peak))
	}
	if soak != "" && len(samples) >= 6 {
		third := len(samples) / 3
		if first, last := maxOf(samples[:third]), maxOf(samples[len(samples)-third:]); last > first+first/10 {
			t.Errorf("the live heap grew while live: %s at most in the first third, %s in the last",
				devstack.FormatBytes(first), devstack.FormatBytes(last))
		}
	}
}

// writeHeapProfile writes the heap profile of the nth live sample into TIDEMARK_DEVSTACK_PROFILES
// when it is set, so that a growth the soak finds can be read with `go tool pprof -base`.
func writeHeapProfile(t *testing.T, n int) {
	dir := os.Getenv("TIDEMARK_DEVSTACK_PROFILES")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%02d.pprof", n)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

// liveHeap is what the last collection of this process kept (the runtime's /gc/heap/live:bytes).
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// backfillWatch is the progress writer: the backfill's last line says how long it took ("ETA -- in 33s").
type backfillWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	done chan struct{}
}

func (w *backfillWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "ETA -- in ") {
		w.once.Do(func() { close(w.done) })
	}
	if w.buf.Len() > 4096 {
		tail := w.buf.Bytes()[w.buf.Len()-256:]
		w.buf.Reset()
		w.buf.Write(tail)
	}
	return len(p), nil
}

// procStatus is a size from this process's /proc/self/status: VmRSS is its resident set, VmHWM
// the peak of it.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// brokerHeld is what the embedded broker holds in all, and its three largest topics.
func brokerHeld(t *testing.T, registry *prometheus.Registry) string {
	t.Helper()
	by, err := telemetry.SumBy(registry, "tidemark_devstack_broker_bytes", "topic", nil)
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	topics := make([]string, 0, len(by))
	for topic, n := range by {
		total += n
		topics = append(topics, topic)
	}
	slices.SortFunc(topics, func(a, b string) int { return cmp.Compare(by[b], by[a]) })
	largest := make([]string, 0, 3)
	for _, topic := range topics[:min(3, len(topics))] {
		largest = append(largest, topic+" "+devstack.FormatBytes(int64(by[topic])))
	}
	return fmt.Sprintf("%s (largest: %s)", devstack.FormatBytes(int64(total)), strings.Join(largest, ", "))
}

func maxOf(xs []int64) int64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = max(m, x)
	}
	return m
}
