package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"
)

// SharedCache reuses a route's successful answers for up to ttl (measured by Options.Clock), keyed by
// path and query, for every client. Concurrent requests for the same key while it is computed share
// one computation, which goes on for the others when the client that started it leaves. It is for
// expensive reads whose answer is the same for everyone who asks within ttl, such as the newest
// candles every chart polls; keep ttl within the route's Cache-Control max-age so clients and CDNs
// see nothing staler than they are already allowed to. Errors are never cached.
//
// The cache holds at most maxBytes of keys and bodies: clients choose the keys, and a 1000-candle
// answer is 250 KB, so a count of entries would let them make it hold gigabytes. When it is full of
// live answers, new ones are served without being kept.
func SharedCache(ttl time.Duration, maxBytes int) RouteOption {
	return func(c *routeConfig) {
		c.cache = &responseCache{ttl: ttl, max: maxBytes, entries: map[string]cachedResponse{}, inflight: map[string]*miss{}}
	}
}

type responseCache struct {
	ttl time.Duration
	max int // bytes of keys and bodies

	mu       sync.Mutex
	entries  map[string]cachedResponse
	order    []stored // what was stored, oldest first: with one ttl for all, also the order of expiry
	bytes    int
	inflight map[string]*miss // computations under way, which requests for the same key join
}

type stored struct {
	key     string
	expires time.Time
}

// cachedResponse is a rendered answer; it implements Responder.
type cachedResponse struct {
	header  http.Header
	status  int
	body    []byte
	expires time.Time
}

func (c cachedResponse) Respond(w http.ResponseWriter, _ *http.Request) error {
	for k, v := range c.header {
		w.Header()[k] = v
	}
	w.WriteHeader(c.status)
	_, err := w.Write(c.body)
	return err
}

// miss is one computation of a key that concurrent requests share.
type miss struct {
	waiting int                // requests that want its answer and have not gone (under responseCache.mu)
	cancel  context.CancelFunc // cancels the computation once nobody waits for it
	done    chan struct{}      // closed once res and err are set
	res     cachedResponse
	err     error
}

// wrap serves f through the cache, with clock measuring freshness. A miss is computed by the first
// request for its key, on that request's goroutine, with a context that outlives its client: the
// requests that joined it get the answer even when the first one's client leaves, and it is cancelled
// only when every one of them has gone.
func (c *responseCache) wrap(f Func, clock func() time.Time) Func {
	return func(r *http.Request) (any, error) {
		key := requestKey(r)
		c.mu.Lock()
		if e, ok := c.entries[key]; ok && clock().Before(e.expires) {
			c.mu.Unlock()
			return e, nil
		}
		if m, ok := c.inflight[key]; ok {
			m.waiting++
			c.mu.Unlock()
			select {
			case <-m.done:
				if m.err != nil {
					return nil, m.err
				}
				return m.res, nil
			case <-r.Context().Done():
				c.leave(m)
				return nil, r.Context().Err()
			}
		}
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		m := &miss{waiting: 1, cancel: cancel, done: make(chan struct{})}
		c.inflight[key] = m
		c.mu.Unlock()
		return c.compute(r.WithContext(ctx), r.Context(), key, m, f, clock)
	}
}

// compute runs f for the requests waiting for m. client is the context of the request running it.
func (c *responseCache) compute(r *http.Request, client context.Context, key string, m *miss, f Func, clock func() time.Time) (any, error) {
	stop := context.AfterFunc(client, func() { c.leave(m) })
	defer func() {
		stop()
		m.cancel()
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		if !isClosed(m.done) { // f panicked: nobody may wait for ever
			m.err = errLeaderFailed
			close(m.done)
		}
	}()
	res, err := f(r)
	var rendered cachedResponse
	if err == nil {
		// Rendered once for all, into memory of its own: the answer outlives this request.
		rendered, err = render(res, r)
	}
	if err == nil {
		rendered.expires = clock().Add(c.ttl)
		c.store(key, rendered, clock())
	}
	m.res, m.err = rendered, err
	close(m.done)
	if err != nil {
		return nil, err
	}
	return rendered, nil
}

// leave takes a request that stopped waiting off m, and cancels m when it was the last.
func (c *responseCache) leave(m *miss) {
	c.mu.Lock()
	m.waiting--
	last := m.waiting == 0
	c.mu.Unlock()
	if last {
		m.cancel()
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (c *responseCache) store(key string, e cachedResponse, now time.Time) {
	size := len(key) + len(e.body)
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evict(now)
	if old, ok := c.entries[key]; ok { // computed again after a miss that raced its expiry
		c.bytes -= len(key) + len(old.body)
		delete(c.entries, key)
	}
	if c.bytes+size > c.max {
		return // full of live answers: serve uncached rather than grow
	}
	c.entries[key] = e
	c.bytes += size
	c.order = append(c.order, stored{key, e.expires})
}

// evict drops the entries that expired by now. A key stored again since has a later expiry than
// its first place in the order, and is left to its second.
func (c *responseCache) evict(now time.Time) {
	n := 0
	for ; n < len(c.order) && !now.Before(c.order[n].expires); n++ {
		s := c.order[n]
		if e, ok := c.entries[s.key]; ok && e.expires.Equal(s.expires) {
			delete(c.entries, s.key)
			c.bytes -= len(s.key) + len(e.body)
		}
	}
	c.order = c.order[n:]
}

// render turns a Func's result into the bytes wrap would have written.
func render(res any, r *http.Request) (cachedResponse, error) {
	rec := &bodyRecorder{header: http.Header{}, status: http.StatusOK}
	switch v := res.(type) {
	case nil:
		rec.status = http.StatusNoContent
	case Responder:
		if err := v.Respond(rec, r); err != nil {
			return cachedResponse{}, err
		}
	default:
		body, err := encodeJSON(v)
		if err != nil {
			return cachedResponse{}, err
		}
		if err := writeBody(rec, http.StatusOK, body); err != nil {
			return cachedResponse{}, err
		}
	}
	return cachedResponse{header: rec.header, status: rec.status, body: rec.body.Bytes()}, nil
}

type bodyRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *bodyRecorder) Header() http.Header         { return r.header }
func (r *bodyRecorder) WriteHeader(status int)      { r.status = status }
func (r *bodyRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
