package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Coalesce makes concurrent requests for the same path and query share one run of the route's
// handler, without ever answering a request with a read older than the request itself.
//
// A request that finds no run under way for its key runs alone, at no extra cost. One that arrives
// while a run is under way does not take that run's answer (the read may have begun before the
// request arrived); it waits for the next run, which starts when the current one ends and answers
// every request that arrived meanwhile. So each answer reflects a read begun after its request
// arrived, exactly as if it had run alone, while a crowd polling one hot URL (the newest trades of a
// market) costs the database one read at a time instead of one per request.
//
// A shared run uses the context of the request that runs it without its cancellation, and is
// cancelled only when every request waiting for it has gone. Requests answered by another's run are
// counted in tidemark_http_coalesced_requests_total and marked on their span; the database spans are
// on the span of the request that ran it. Use it only for reads whose answer depends on nothing but
// path and query. SharedCache shares its computations its own way, joining one under way (its
// answers may be as old as its ttl anyway): the two are not meant together.
func Coalesce() RouteOption {
	return func(c *routeConfig) { c.coalesce = true }
}

// coalescer holds the runs of one route.
type coalescer struct {
	shared prometheus.Counter // the route's tidemark_http_coalesced_requests_total

	mu sync.Mutex
	// A key is present while a run for it is under way. Its value is the next run, which requests
	// arriving meanwhile wait for; nil until one arrives.
	keys map[string]*flight
}

// flight is one run that waiting requests share.
type flight struct {
	// Under coalescer.mu.
	waiting int  // requests that take this run's answer and have not gone, its leader included
	started bool // the run before it ended: no request may join any more
	led     bool // a request took the lead token and runs it
	cancel  context.CancelFunc

	lead chan struct{} // receives one token when the run may start; whoever takes it runs it
	done chan struct{} // closed once res and err are set
	res  cachedResponse
	err  error
}

// errLeaderFailed answers the requests that waited for a run whose handler panicked; the panic
// itself is logged and answered on the request that ran it.
var errLeaderFailed = errors.New("the shared read this request waited for failed")

func (a *API) coalescer(route string) *coalescer {
	return &coalescer{shared: a.coalesced.WithLabelValues(route), keys: map[string]*flight{}}
}

// requestKey is what identifies a request's answer on the routes that share them: path and query.
func requestKey(r *http.Request) string { return r.URL.RequestURI() }

func (c *coalescer) wrap(f Func) Func {
	return func(r *http.Request) (any, error) {
		key := requestKey(r)
		c.mu.Lock()
		next, running := c.keys[key]
		if !running {
			c.keys[key] = nil
			c.mu.Unlock()
			defer c.finish(key)
			return f(r)
		}
		if next == nil {
			next = &flight{lead: make(chan struct{}, 1), done: make(chan struct{})}
			c.keys[key] = next
		}
		next.waiting++
		c.mu.Unlock()

		select {
		case <-next.lead:
			return c.run(r, key, next, f)
		case <-next.done:
			c.shared.Inc()
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.Bool("tidemark.coalesced", true))
			if next.err != nil {
				return nil, next.err
			}
			return next.res, nil
		case <-r.Context().Done():
			c.leave(key, next)
			return nil, r.Context().Err()
		}
	}
}

// run runs fl for every request waiting for it, then starts the next run of key.
func (c *coalescer) run(r *http.Request, key string, fl *flight, f Func) (any, error) {
	defer c.finish(key)
	c.mu.Lock()
	fl.led = true
	alone := fl.waiting == 1 // the others left before it started, and no one can join now
	var ctx context.Context
	if !alone {
		ctx, fl.cancel = context.WithCancel(context.WithoutCancel(r.Context()))
	}
	c.mu.Unlock()
	if alone {
		return f(r)
	}
	defer fl.cancel()
	// This request counts among the waiters: if its client goes, the run goes on for the others.
	stop := context.AfterFunc(r.Context(), func() { c.leave(key, fl) })
	defer stop()

	published := false
	defer func() {
		if !published { // f panicked: the waiters must not wait for ever
			fl.err = errLeaderFailed
			close(fl.done)
		}
	}()
	shared := r.WithContext(ctx)
	res, err := f(shared)
	if err == nil {
		// Rendered once for all: the answer must not point into memory lent to this request.
		fl.res, err = render(res, shared)
	}
	fl.err = err
	published = true
	close(fl.done)
	if err != nil {
		return nil, err
	}
	return fl.res, nil
}

// leave takes a request that stopped waiting off fl.
func (c *coalescer) leave(key string, fl *flight) {
	c.mu.Lock()
	fl.waiting--
	if fl.waiting > 0 {
		c.mu.Unlock()
		return
	}
	switch {
	case !fl.started: // nobody wants it any more: it need not run
		c.keys[key] = nil
	case fl.led: // the run is under way for no one
		fl.cancel()
	default: // it may start but nobody is left to take the lead: start the one after it
		c.mu.Unlock()
		c.finish(key)
		return
	}
	c.mu.Unlock()
}

// finish ends the run under way for key and starts the next one, if any request waits for it.
func (c *coalescer) finish(key string) {
	c.mu.Lock()
	next := c.keys[key]
	if next == nil {
		delete(c.keys, key)
		c.mu.Unlock()
		return
	}
	next.started = true
	c.keys[key] = nil
	c.mu.Unlock()
	next.lead <- struct{}{}
}
