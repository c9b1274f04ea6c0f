package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// newClock is a clock that moves only when a test moves it.
func newClock() *kittest.Clock {
	return kittest.NewClock(time.Date(2026, 11, 19, 12, 0, 0, 0, time.UTC))
}

func TestSharedCache(t *testing.T) {
	// The data clock is frozen, as in service tests: expiry follows the other clock, Options.Clock.
	frozen := time.Date(2026, 11, 19, 12, 0, 0, 0, time.UTC)
	clock := newClock()
	api := httpapi.New(httpapi.Options{Now: func() time.Time { return frozen }, Clock: clock.Now})
	const ttl = 100 * time.Millisecond
	var calls atomic.Int32
	release := make(chan struct{})
	api.Handle(http.MethodGet, "/v/{x}", func(r *http.Request) (any, error) {
		n := calls.Add(1)
		if httpapi.PathVar(r, "x") == "slow" {
			<-release
		}
		if httpapi.PathVar(r, "x") == "fail" {
			return nil, errors.New("boom")
		}
		return map[string]any{"call": n, "q": r.URL.RawQuery}, nil
	}, httpapi.SharedCache(ttl, 1<<20), httpapi.CacheControl("public, max-age=2"))
	h := api.Handler()
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}

	first := get("/v/a?limit=5")
	if first.Code != 200 || first.Header().Get("Cache-Control") != "public, max-age=2" || first.Header().Get("Content-Type") == "" {
		t.Fatalf("first: %d %v %s", first.Code, first.Header(), first.Body)
	}
	steps := []struct {
		name      string
		path      string
		wait      time.Duration
		wantCalls int32
		sameBody  bool
	}{
		{"hit within ttl", "/v/a?limit=5", ttl - time.Millisecond, 1, true},
		{"other query is another key", "/v/a?limit=6", 0, 2, false},
		{"expired entry is recomputed", "/v/a?limit=5", time.Millisecond, 3, false},
	}
	for _, s := range steps {
		clock.Advance(s.wait)
		rec := get(s.path)
		if rec.Code != 200 || calls.Load() != s.wantCalls {
			t.Fatalf("%s: status %d, %d calls, want %d", s.name, rec.Code, calls.Load(), s.wantCalls)
		}
		if s.sameBody != (rec.Body.String() == first.Body.String()) {
			t.Fatalf("%s: body %s (first %s)", s.name, rec.Body, first.Body)
		}
	}

	// Errors are answered as errors and never cached.
	before := calls.Load()
	for range 2 {
		if rec := get("/v/fail"); rec.Code != 500 {
			t.Fatalf("failing route: %d", rec.Code)
		}
	}
	if calls.Load() != before+2 {
		t.Fatalf("an error was cached")
	}

	// Concurrent misses for one key share one computation.
	before = calls.Load()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); get("/v/slow") }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if got := calls.Load() - before; got != 1 {
		t.Fatalf("8 concurrent misses made %d calls, want 1", got)
	}
}

// TestSharedCacheBoundsBytes: clients choose the keys, so what the cache keeps is bounded by bytes;
// answers that do not fit are served uncached until expiry makes room.
func TestSharedCacheBoundsBytes(t *testing.T) {
	clock := newClock()
	api := httpapi.New(httpapi.Options{Clock: clock.Now})
	const ttl = 150 * time.Millisecond
	var calls atomic.Int32
	api.Handle(http.MethodGet, "/b/{x}", func(r *http.Request) (any, error) {
		calls.Add(1)
		n := 1000
		if httpapi.PathVar(r, "x") == "big" {
			n = 3000
		}
		return httpapi.RawJSON(`"` + strings.Repeat("x", n-2) + `"`), nil
	}, httpapi.SharedCache(ttl, 2500)) // two 1000-byte answers and their keys
	get := func(path string) {
		rec := httptest.NewRecorder()
		api.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	steps := []struct {
		name      string
		wait      time.Duration
		paths     []string
		wantCalls int32
	}{
		{"two fit", 0, []string{"/b/1", "/b/2", "/b/1", "/b/2"}, 2},
		{"a third is served, not kept", 0, []string{"/b/3", "/b/3"}, 4},
		{"nor one larger than the budget", 0, []string{"/b/big", "/b/big"}, 6},
		{"expiry makes room", ttl, []string{"/b/3", "/b/3"}, 7},
	}
	for _, s := range steps {
		clock.Advance(s.wait)
		for _, p := range s.paths {
			get(p)
		}
		if got := calls.Load(); got != s.wantCalls {
			t.Fatalf("%s: %d calls, want %d", s.name, got, s.wantCalls)
		}
	}
}

// TestSharedCacheMissOutlivesItsFirstClient: the requests that joined a miss get its answer when the
// client that started it goes away, and the computation is cancelled only when all of them have.
func TestSharedCacheMissOutlivesItsFirstClient(t *testing.T) {
	api := httpapi.New(httpapi.Options{Clock: newClock().Now})
	started := make(chan struct{}, 4)
	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	cancelled := make(chan struct{}, 4)
	api.Handle(http.MethodGet, "/slow/{x}", func(r *http.Request) (any, error) {
		started <- struct{}{}
		select {
		case <-release[httpapi.PathVar(r, "x")]:
			return map[string]string{"x": httpapi.PathVar(r, "x")}, nil
		case <-r.Context().Done():
			cancelled <- struct{}{}
			return nil, r.Context().Err()
		}
	}, httpapi.SharedCache(time.Minute, 1<<20))
	h := api.Handler()
	serve := func(ctx context.Context, path string) chan *httptest.ResponseRecorder {
		out := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil))
			out <- rec
		}()
		return out
	}

	// The first client leaves after the computation started and two others joined it.
	ctx1, leave1 := context.WithCancel(context.Background())
	first := serve(ctx1, "/slow/a")
	<-started
	second, third := serve(context.Background(), "/slow/a"), serve(context.Background(), "/slow/a")
	waitJoined(t, api, "/slow/a", 3)
	leave1()
	// The computation is not cancelled for the others: it ends when released.
	select {
	case <-cancelled:
		t.Fatal("the shared computation was cancelled when its first client left")
	case <-time.After(50 * time.Millisecond):
	}
	close(release["a"])
	for i, ch := range []chan *httptest.ResponseRecorder{second, third} {
		if rec := <-ch; rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"x":"a"`) {
			t.Errorf("joined request %d: %d %s", i+2, rec.Code, rec.Body)
		}
	}
	<-first

	// When every client of a miss leaves, its computation is cancelled.
	ctxA, leaveA := context.WithCancel(context.Background())
	ctxB, leaveB := context.WithCancel(context.Background())
	a, b := serve(ctxA, "/slow/b"), serve(ctxB, "/slow/b")
	<-started
	waitJoined(t, api, "/slow/b", 2)
	leaveA()
	select {
	case <-cancelled:
		t.Fatal("cancelled while a client still waited")
	case <-time.After(20 * time.Millisecond):
	}
	leaveB()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the computation went on after every client left")
	}
	<-a
	<-b
}

// waitJoined waits until n requests wait for the computation of path.
func waitJoined(t *testing.T, api *httpapi.API, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for httpapi.CacheWaiting(api, path) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d requests waiting, want %d", path, httpapi.CacheWaiting(api, path), n)
		}
		time.Sleep(time.Millisecond)
	}
}
