package httpapi

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// SharedCache reuses a route's successful answers for up to ttl, keyed by path and query, for every
// client. Concurrent requests for the same key while it is computed share one computation. It is for
// expensive reads whose answer is the same for everyone who asks within ttl, such as the newest
// candles every chart polls; keep ttl within the route's Cache-Control max-age so clients and CDNs
// see nothing staler than they are already allowed to. Errors are never cached.
//
// The cache holds at most maxBytes of keys and bodies: clients choose the keys, and a 1000-candle
// answer is 250 KB, so a count of entries would let them make it hold gigabytes. When it is full of
// live answers, new ones are served without being kept.
func SharedCache(ttl time.Duration, maxBytes int) RouteOption {
	return func(c *routeConfig) {
		c.cache = &responseCache{ttl: ttl, max: maxBytes, entries: map[string]cachedResponse{}}
	}
}

type responseCache struct {
	ttl   time.Duration
	max   int // bytes of keys and bodies
	group singleflight.Group

	mu      sync.Mutex
	entries map[string]cachedResponse
	order   []stored // what was stored, oldest first: with one ttl for all, also the order of expiry
	bytes   int
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

// wrap serves f through the cache. Expiry runs on the wall clock, not the API's injected clock: that
// one is the data's notion of now (tests freeze it), while freshness is about real elapsed time.
func (c *responseCache) wrap(f Func) Func {
	now := time.Now
	return func(r *http.Request) (any, error) {
		key := requestKey(r)
		c.mu.Lock()
		e, ok := c.entries[key]
		c.mu.Unlock()
		if ok && now().Before(e.expires) {
			return e, nil
		}
		v, err, _ := c.group.Do(key, func() (any, error) {
			res, err := f(r)
			if err != nil {
				return nil, err
			}
			rendered, err := render(res, r)
			if err != nil {
				return nil, err
			}
			rendered.expires = now().Add(c.ttl)
			c.store(key, rendered, now())
			return rendered, nil
		})
		if err != nil {
			return nil, err
		}
		return v, nil
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
