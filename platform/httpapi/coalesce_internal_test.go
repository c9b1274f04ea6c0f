package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// coalesceRig serves GET /c/{x} through a coalescer it can inspect. Each run of the handler gets the
// next number; a run the test has gated waits for its gate, and a run the test has given a behaviour
// answers with it. Otherwise a run answers {"run": n}.
type coalesceRig struct {
	t       *testing.T
	c       *coalescer
	h       http.Handler
	runs    atomic.Int32
	started chan int // each run's number as it starts

	mu    sync.Mutex
	gates map[int]chan struct{}
	acts  map[int]func(*http.Request) (any, error)
}

func newCoalesceRig(t *testing.T) *coalesceRig {
	t.Helper()
	a := New(Options{Registerer: prometheus.NewRegistry()})
	g := &coalesceRig{
		t: t, c: a.coalescer("/c/{x}"), started: make(chan int, 64),
		gates: map[int]chan struct{}{}, acts: map[int]func(*http.Request) (any, error){},
	}
	// As Handle does, but keeping the coalescer to look into.
	a.router.Handle("/c/{x}", a.wrap(g.c.wrap(g.handle), routeConfig{cacheControl: "no-cache"})).Methods(http.MethodGet)
	g.h = a.Handler()
	return g
}

func (g *coalesceRig) handle(r *http.Request) (any, error) {
	n := int(g.runs.Add(1))
	g.started <- n
	g.mu.Lock()
	gate, act := g.gates[n], g.acts[n]
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if act != nil {
		return act(r)
	}
	return map[string]int{"run": n}, nil
}

// gate makes run n wait until the returned function is called.
func (g *coalesceRig) gate(n int) (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.gates[n] = ch
	g.mu.Unlock()
	return sync.OnceFunc(func() { close(ch) })
}

func (g *coalesceRig) act(n int, f func(*http.Request) (any, error)) {
	g.mu.Lock()
	g.acts[n] = f
	g.mu.Unlock()
}

// awaitStart waits for run n to start.
func (g *coalesceRig) awaitStart(n int) {
	g.t.Helper()
	select {
	case got := <-g.started:
		if got != n {
			g.t.Fatalf("run %d started, want %d", got, n)
		}
	case <-time.After(5 * time.Second):
		g.t.Fatalf("run %d did not start", n)
	}
}

// awaitWaiting waits until n requests wait for the next run of path.
func (g *coalesceRig) awaitWaiting(path string, n int) {
	g.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.c.mu.Lock()
		next := g.c.keys[path]
		got := 0
		if next != nil {
			got = next.waiting
		}
		g.c.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("%s: %d requests wait for the next run, want %d", path, got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type answer struct {
	code int
	body string
}

// get requests path in the background with ctx; the answer arrives on the returned channel.
func (g *coalesceRig) get(ctx context.Context, path string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		rec := httptest.NewRecorder()
		g.h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil))
		out <- answer{rec.Code, rec.Body.String()}
	}()
	return out
}

func (g *coalesceRig) await(ch <-chan answer) answer {
	g.t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		g.t.Fatal("no answer")
		return answer{}
	}
}

// runOf is the run number of a {"run": n} answer.
func (g *coalesceRig) runOf(a answer) int {
	g.t.Helper()
	var v struct{ Run int }
	if a.code != http.StatusOK || json.Unmarshal([]byte(a.body), &v) != nil {
		g.t.Fatalf("answer %d %s", a.code, a.body)
	}
	return v.Run
}

// idle fails unless no run of any key is under way.
func (g *coalesceRig) idle() {
	g.t.Helper()
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	if len(g.c.keys) != 0 {
		g.t.Fatalf("runs still under way: %v", g.c.keys)
	}
}

// queueBehind starts run n for path, queues one request per context behind it and lets run n end,
// so that run n+1 starts for the queued requests. Their answers arrive on the returned channels.
func (g *coalesceRig) queueBehind(path string, n int, ctxs ...context.Context) []<-chan answer {
	g.t.Helper()
	release := g.gate(n)
	first := g.get(context.Background(), path)
	g.awaitStart(n)
	var queued []<-chan answer
	for _, ctx := range ctxs {
		queued = append(queued, g.get(ctx, path))
	}
	g.awaitWaiting(path, len(ctxs))
	release()
	if run := g.runOf(g.await(first)); run != n {
		g.t.Fatalf("first request answered by run %d, want %d", run, n)
	}
	g.awaitStart(n + 1)
	return queued
}

// TestCoalesceAnswersWithTheNextRun: requests arriving during a run never take its answer (its read
// may predate them); all of them share the next run.
func TestCoalesceAnswersWithTheNextRun(t *testing.T) {
	g := newCoalesceRig(t)
	bg := context.Background()
	release1 := g.gate(1)
	first := g.get(bg, "/c/a?limit=5")
	g.awaitStart(1)

	// Another key does not wait for this one.
	if run := g.runOf(g.await(g.get(bg, "/c/a?limit=6"))); run != 2 {
		t.Fatalf("other query answered by run %d, want 2", run)
	}
	g.awaitStart(2)

	release3 := g.gate(3)
	var later []<-chan answer
	for range 3 {
		later = append(later, g.get(bg, "/c/a?limit=5"))
	}
	g.awaitWaiting("/c/a?limit=5", 3)
	release1()
	if run := g.runOf(g.await(first)); run != 1 {
		t.Fatalf("first request answered by run %d", run)
	}
	g.awaitStart(3)
	// Run 3 is under way: a request arriving now waits for run 4.
	latest := g.get(bg, "/c/a?limit=5")
	g.awaitWaiting("/c/a?limit=5", 1)
	release3()
	for i, ch := range later {
		if run := g.runOf(g.await(ch)); run != 3 {
			t.Fatalf("request %d arriving during run 1 answered by run %d, want 3", i, run)
		}
	}
	if run := g.runOf(g.await(latest)); run != 4 {
		t.Fatalf("request arriving during run 3 answered by run %d, want 4", run)
	}
	if got := g.runs.Load(); got != 4 {
		t.Fatalf("%d runs, want 4", got)
	}
	if got := testutil.ToFloat64(g.c.shared); got != 2 {
		t.Fatalf("coalesced requests %v, want 2 (run 3's waiters but its leader)", got)
	}
	g.idle()
}

// TestCoalesceRequestsThatLeave: waiters that go before their run starts cancel it; a shared run
// outlives its leader's client while anyone waits, and is cancelled when everyone has gone.
func TestCoalesceRequestsThatLeave(t *testing.T) {
	g := newCoalesceRig(t)
	bg := context.Background()
	const path = "/c/b"

	t.Run("all waiters leave before their run", func(t *testing.T) {
		g.t = t
		release := g.gate(1)
		first := g.get(bg, path)
		g.awaitStart(1)
		ctx, cancel := context.WithCancel(bg)
		gone := g.get(ctx, path)
		g.awaitWaiting(path, 1)
		cancel()
		g.await(gone)
		release()
		g.runOf(g.await(first))
		g.idle()
		if got := g.runs.Load(); got != 1 {
			t.Fatalf("%d runs, want 1: the run nobody waited for happened", got)
		}
	})

	t.Run("a shared run goes on for those still waiting", func(t *testing.T) {
		g.t = t
		// Run 3 waits until the test has cancelled one of its two requests, leader or not, then
		// reports whether its context is still alive.
		cancelled := make(chan struct{})
		g.act(3, func(r *http.Request) (any, error) {
			<-cancelled
			time.Sleep(20 * time.Millisecond) // let a cancellation propagate, were it to
			return map[string]any{"run": 3, "alive": r.Context().Err() == nil}, nil
		})
		ctx, cancel := context.WithCancel(bg)
		queued := g.queueBehind(path, 2, ctx, bg)
		cancel()
		close(cancelled)
		got := g.await(queued[1])
		var v struct {
			Run   int
			Alive bool
		}
		if got.code != 200 || json.Unmarshal([]byte(got.body), &v) != nil || v.Run != 3 || !v.Alive {
			t.Fatalf("remaining waiter: %d %s, want run 3 with its context alive", got.code, got.body)
		}
		g.await(queued[0])
		g.idle()
	})

	t.Run("a shared run is cancelled when everyone has gone", func(t *testing.T) {
		g.t = t
		sawCancel := make(chan error, 1)
		g.act(5, func(r *http.Request) (any, error) {
			select {
			case <-r.Context().Done():
				sawCancel <- r.Context().Err()
			case <-time.After(5 * time.Second):
				sawCancel <- nil
			}
			return nil, r.Context().Err()
		})
		ctx, cancel := context.WithCancel(bg)
		queued := g.queueBehind(path, 4, ctx, ctx)
		cancel()
		if err := <-sawCancel; !errors.Is(err, context.Canceled) {
			t.Fatalf("shared run's context: %v, want cancelled", err)
		}
		for _, ch := range queued {
			g.await(ch)
		}
		g.idle()
	})
}

// TestCoalesceSharesFailures: a run's error is every waiter's answer; a run that panics answers its
// waiters 500 and frees the key.
func TestCoalesceSharesFailures(t *testing.T) {
	cases := []struct {
		name     string
		act      func(*http.Request) (any, error)
		wantCode int
	}{
		{"handler error", func(*http.Request) (any, error) { return nil, fault.Errorf(fault.Invalid, "bad symbol") }, http.StatusBadRequest},
		{"handler panic", func(*http.Request) (any, error) { panic("boom") }, http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newCoalesceRig(t)
			bg := context.Background()
			g.act(2, tc.act)
			for i, ch := range g.queueBehind("/c/f", 1, bg, bg, bg) {
				if got := g.await(ch); got.code != tc.wantCode {
					t.Fatalf("waiter %d: %d %s, want %d", i, got.code, got.body, tc.wantCode)
				}
			}
			g.idle()
			if run := g.runOf(g.await(g.get(bg, "/c/f"))); run != 3 {
				t.Fatalf("after the failure: answered by run %d, want 3", run)
			}
		})
	}
}
