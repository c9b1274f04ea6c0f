package devstack_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/tools/devstack"
)

// TestMakeRunStaysInItsBudget runs what `make run` runs with its defaults (three days of history,
// then live events) and reads the process's resident memory at the banner, after the backfill and
// while live: it must stay under the default budget. TIDEMARK_DEVSTACK_SOAK (a duration, `make soak`
// sets 30m) keeps it live that long and checks that the live heap of the last third is no more than
// 10% over the first's.
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
	progress := &backfillWatch{done: make(chan struct{})}
	banner := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- devstack.Run(ctx, devstack.Options{DataDir: dir, Addr: "127.0.0.1:0", Progress: progress, Out: io.Discard, Ready: banner,
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
		rss, heap := residentBytes(t), liveHeap()
		t.Logf("%s (%s): %s resident, live heap %s", when, time.Since(start).Round(time.Second), devstack.FormatBytes(rss), devstack.FormatBytes(heap))
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
	// What the process retains is its live heap; its resident set also holds what the collector has
	// not yet reclaimed, which the soft limit bounds, so growth is judged on the live heap.
	var samples []int64
	for end := time.Now().Add(live); time.Now().Before(end); {
		time.Sleep(min(live/10, time.Minute))
		samples = append(samples, check("live"))
	}
	if soak != "" && len(samples) >= 6 {
		third := len(samples) / 3
		if first, last := maxOf(samples[:third]), maxOf(samples[len(samples)-third:]); last > first+first/10 {
			t.Errorf("the live heap grew while live: %s at most in the first third, %s in the last",
				devstack.FormatBytes(first), devstack.FormatBytes(last))
		}
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

// residentBytes is this process's resident set (VmRSS).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func maxOf(xs []int64) int64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = max(m, x)
	}
	return m
}
