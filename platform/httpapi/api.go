// Package httpapi is the HTTP kit of every tidemark service: handlers return a result or an *Error, and
// one wrapper writes JSON, CSV or the error envelope, so status codes, envelopes, caching headers,
// access logs, metrics and traces are decided in one place (the model is Prometheus' web/api/v1).
package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/telemetry"
)

// discardLogger stands in for a nil logger.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// unmatchedRoute labels requests no route matched (404, 405, path-cleaning redirects) so that metrics
// never carry a client-chosen path.
const unmatchedRoute = "unmatched"

// Func is a handler: it returns the response value or an error. A value implementing Responder writes
// itself; nil answers 204; anything else is written as JSON with status 200.
type Func func(r *http.Request) (any, error)

// Responder is a result that writes its own response (CSV, pre-encoded JSON). If Respond fails before
// writing anything the error is answered like a handler error; after that the response is cut short.
type Responder interface {
	Respond(w http.ResponseWriter, r *http.Request) error
}

// Options configures an API. Every field is optional.
type Options struct {
	// Logger receives access logs and internal errors; nil discards them.
	Logger *slog.Logger
	// Registerer receives tidemark_http_request_seconds and tidemark_http_coalesced_requests_total;
	// nil leaves them unregistered.
	Registerer prometheus.Registerer
	// TracerProvider creates one server span per request; nil means no tracing.
	TracerProvider trace.TracerProvider
	// PageKey is the HMAC key of page tokens. Every replica of a service must share it. Empty means a
	// random per-process key: tokens then die with the process, which is only acceptable in tests.
	PageKey []byte
	// Now is the data's clock: what handlers take as the present for date validation and rolling
	// windows (tests freeze it); nil means time.Now.
	Now func() time.Time
	// Clock measures elapsed time for freshness (SharedCache expiry); nil means time.Now. It is not
	// Now: a frozen data clock must not keep cached answers alive for ever.
	Clock func() time.Time
	// Unavailable reports errors that mean a dependency cannot be reached (pg.Unavailable): they are
	// answered 503 with Retry-After, and logged once per outage instead of once per request. nil: none.
	Unavailable func(error) bool
}

// API is a router plus the single wrapper that turns Func results into responses.
type API struct {
	logger    *slog.Logger
	router    *mux.Router
	tracer    trace.Tracer
	duration  *prometheus.HistogramVec
	coalesced *prometheus.CounterVec
	pageKey   []byte
	macs      sync.Pool // of hash.Hash: HMAC-SHA256 keyed with pageKey, see cursorMAC
	scratch   scratchPools
	now       func() time.Time
	clock     func() time.Time
	handler   http.Handler

	unavailable func(error) bool
	outage      atomic.Bool // an unavailable dependency was reported and no request has succeeded since

	routesMu sync.Mutex
	routes   map[*mux.Route]routeConfig // for preflight requests: what each route allows
}

// New builds an API. It panics if the registerer already holds an incompatible collector of one of
// its metrics' names, like prometheus.MustRegister: that is a wiring bug.
func New(opts Options) *API {
	a := &API{
		logger:      opts.Logger,
		router:      mux.NewRouter(),
		now:         opts.Now,
		clock:       opts.Clock,
		unavailable: opts.Unavailable,
		routes:      map[*mux.Route]routeConfig{},
	}
	if a.logger == nil {
		a.logger = discardLogger()
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.clock == nil {
		a.clock = time.Now
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	a.tracer = tp.Tracer("github.com/tidemark/tidemark/platform/httpapi")
	a.pageKey = append([]byte(nil), opts.PageKey...)
	if len(a.pageKey) == 0 {
		a.pageKey = make([]byte, 32)
		_, _ = rand.Read(a.pageKey) // crypto/rand.Read never fails (it crashes the program instead).
	}
	a.macs.New = func() any { return hmac.New(sha256.New, a.pageKey) }
	a.duration = telemetry.Register(opts.Registerer, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tidemark_http_request_seconds",
		Help:    "Duration of HTTP requests by route template, method and status code.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route", "method", "code"}))
	a.coalesced = telemetry.Register(opts.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_http_coalesced_requests_total",
		Help: "Requests answered by a read another request of the same path and query ran for them (see httpapi.Coalesce), by route template.",
	}, []string{"route"}))

	a.router.Use(a.recordRoute)
	a.router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, fault.Errorf(fault.NotFound, "not found"))
	})
	a.router.MethodNotAllowedHandler = http.HandlerFunc(a.methodNotAllowed)
	a.handler = http.HandlerFunc(a.serveHTTP)
	return a
}

// Router is the underlying router, for handlers that are not Funcs (they still get the access log,
// metrics, tracing and panic recovery through Handler).
func (a *API) Router() *mux.Router { return a.router }

// Serves reports whether some route serves r's method and path.
func (a *API) Serves(r *http.Request) bool {
	var match mux.RouteMatch
	return a.router.Match(r, &match) && match.MatchErr == nil
}

// Handler serves the routes with panic recovery, access log, latency histogram and a span per request.
func (a *API) Handler() http.Handler { return a.handler }

// Now is the API's clock (Options.Now).
func (a *API) Now() time.Time { return a.now() }

// RouteOption tunes one route.
type RouteOption func(*routeConfig)

type routeConfig struct {
	cacheControl string
	bareFailures bool
	cache        *responseCache
	coalesce     bool
	headers      []string // request headers a browser on another origin may send (AllowHeaders)
	auth         Authenticator
	challenge    string // WWW-Authenticate of the route's 401s
}

// CacheControl sets the Cache-Control header of the route's successful responses. Without it they carry
// "no-cache" (history changes as events arrive); error responses always carry "no-store".
func CacheControl(value string) RouteOption {
	return func(c *routeConfig) { c.cacheControl = value }
}

// BareServerFailures makes every server-side failure of the route (an internal error, a dependency
// that cannot be reached, a panic) answer 500 with the body {"success":false}: no message, no
// Retry-After. It is for the groups whose contract declares that one server failure answer (the
// AMM series); the others answer 500 "internal error" and 503 with Retry-After while the database
// is unreachable. Failures are logged as usual.
func BareServerFailures() RouteOption {
	return func(c *routeConfig) { c.bareFailures = true }
}

// AllowHeaders lets browsers on other origins send these request headers to the route (they are
// named in the answer to a CORS preflight). Every route already allows any origin to read it: the API
// is public and takes no cookies.
func AllowHeaders(names ...string) RouteOption {
	return func(c *routeConfig) { c.headers = append(c.headers, names...) }
}

// Authenticator checks the credentials of a request to an authenticated route before anything else
// of the route runs. It returns the context the handler gets (carrying who the caller is, for the
// service to read back), or the error to answer: fault.Unauthorized (401) for missing or bad
// credentials, fault.Forbidden (403) for credentials that do not allow the request, any other error
// as handlers' errors are.
type Authenticator func(r *http.Request) (context.Context, error)

// Authenticate makes the route serve only requests auth accepts; the rules of the credentials are the
// service's, auth applies them. challenge is the WWW-Authenticate value of the route's 401 answers
// (RFC 9110 wants one). An authenticated answer belongs to its caller: it is "private, no-store" unless
// CacheControl says otherwise, and Handle panics when the route is also shared (SharedCache,
// Coalesce), which would hand one caller's answer to another.
func Authenticate(challenge string, auth Authenticator) RouteOption {
	return func(c *routeConfig) {
		c.auth, c.challenge = auth, challenge
		if c.cacheControl == "no-cache" {
			c.cacheControl = "private, no-store"
		}
	}
}

// Handle registers f for method and path (a gorilla/mux template such as "/market/{symbol}/trades").
// Keep path variables free of regexps: a malformed value must reach the handler and answer 400, not 404.
func (a *API) Handle(method, path string, f Func, opts ...RouteOption) {
	cfg := routeConfig{cacheControl: "no-cache"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.auth != nil && (cfg.cache != nil || cfg.coalesce) {
		panic(fmt.Sprintf("httpapi: %s %s: an authenticated route cannot share answers (SharedCache, Coalesce)", method, path))
	}
	if cfg.cache != nil {
		f = cfg.cache.wrap(f, a.clock)
	}
	if cfg.coalesce {
		f = a.coalescer(path).wrap(f)
	}
	route := a.router.Handle(path, a.wrap(f, cfg)).Methods(method)
	a.routesMu.Lock()
	a.routes[route] = cfg
	a.routesMu.Unlock()
}

// wrap is the one place that turns a Func's outcome into a response.
func (a *API) wrap(f Func, cfg routeConfig) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Credentials come first: a caller who has none learns nothing of the route, not even
		// which of its inputs are wrong.
		if cfg.auth != nil {
			ctx, err := cfg.auth(r)
			if err != nil {
				if fault.CodeOf(err) == fault.Unauthorized && cfg.challenge != "" {
					w.Header().Set("WWW-Authenticate", cfg.challenge)
				}
				a.writeError(w, r, err)
				return
			}
			r = r.WithContext(ctx)
		}
		if err := checkInput(r); err != nil {
			a.writeRouteError(w, r, err, cfg)
			return
		}
		res, err := f(r)
		if err != nil {
			a.writeRouteError(w, r, err, cfg)
			return
		}
		w.Header().Set("Cache-Control", cfg.cacheControl)
		switch v := res.(type) {
		case nil:
			w.WriteHeader(http.StatusNoContent)
		case Responder:
			tw := &trackingWriter{ResponseWriter: w}
			if err := v.Respond(tw, r); err != nil {
				if !tw.wrote {
					a.writeRouteError(w, r, err, cfg)
					return
				}
				// Mostly a client that went away mid-stream: nothing to answer and not a server fault.
				a.logger.LogAttrs(r.Context(), slog.LevelWarn, "response cut short",
					slog.String("route", routeOf(r)), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
			}
		default:
			body, err := encodeJSON(v)
			if err != nil {
				a.writeRouteError(w, r, err, cfg)
				return
			}
			_ = writeBody(w, http.StatusOK, body) // a failed write means the client left
		}
	})
}

func (a *API) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	for _, m := range a.allowedMethods(r) {
		w.Header().Add("Allow", m)
	}
	a.writeError(w, r, fault.Errorf(MethodNotAllowed, "method not allowed"))
}

// allowedMethods lists the methods some route serves r's path with.
func (a *API) allowedMethods(r *http.Request) []string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if a.router.Match(probe, &match) && match.MatchErr == nil {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// routeFor returns the configuration of the route serving method on r's path.
func (a *API) routeFor(r *http.Request, method string) (routeConfig, bool) {
	probe := r.Clone(r.Context())
	probe.Method = method
	var match mux.RouteMatch
	if !a.router.Match(probe, &match) || match.MatchErr != nil {
		return routeConfig{}, false
	}
	a.routesMu.Lock()
	defer a.routesMu.Unlock()
	cfg, ok := a.routes[match.Route]
	return cfg, ok
}

// writeError answers err; an error Options.Unavailable recognises is answered as fault.Unavailable.
// An outage is logged when it starts and when a request succeeds again, not once per request.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	a.writeRouteError(w, r, err, routeConfig{})
}

// writeRouteError is writeError for a route configured with cfg.
func (a *API) writeRouteError(w http.ResponseWriter, r *http.Request, err error, cfg routeConfig) {
	code := fault.CodeOf(err)
	if code == fault.Internal && a.unavailable != nil && a.unavailable(err) {
		code = fault.Unavailable
	}
	if code == fault.Unavailable {
		if a.outage.CompareAndSwap(false, true) {
			a.logger.LogAttrs(r.Context(), slog.LevelError, "dependency unavailable: answering 503 until a request succeeds",
				slog.String("route", routeOf(r)), slog.String("error", err.Error()))
		} else {
			a.logger.LogAttrs(r.Context(), slog.LevelDebug, "dependency still unavailable",
				slog.String("route", routeOf(r)), slog.String("error", err.Error()))
		}
	}
	if cfg.bareFailures && StatusOf(code) >= 500 {
		writeBareFailure(w, r, err, code, a.logger)
		return
	}
	writeError(w, r, err, code, a.logger)
}

// reqState carries what the outer middleware learns only after routing, and the memory the request
// borrowed through Scratch.
type reqState struct {
	route string

	pools *scratchPools // the API's, which Scratch lends from
	mu    sync.Mutex
	lent  []*[]byte
}

type stateKey struct{}

func stateFrom(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

// recordRoute runs inside the router, where the matched route is known.
func (a *API) recordRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := stateFrom(r.Context()); st != nil {
			if tpl, err := mux.CurrentRoute(r).GetPathTemplate(); err == nil {
				st.route = tpl
			}
		}
		next.ServeHTTP(w, r)
	})
}

// routeOf is the route template of r, or unmatchedRoute.
func routeOf(r *http.Request) string {
	if st := stateFrom(r.Context()); st != nil && st.route != "" {
		return st.route
	}
	if cur := mux.CurrentRoute(r); cur != nil {
		if tpl, err := cur.GetPathTemplate(); err == nil {
			return tpl
		}
	}
	return unmatchedRoute
}

func (a *API) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &reqState{pools: &a.scratch}
	ctx := context.WithValue(r.Context(), stateKey{}, st)
	ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(r.Header))
	ctx, span := a.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
		))
	defer span.End()
	r = r.WithContext(ctx)

	rec := &recorder{ResponseWriter: w}
	h := rec.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	// Every answer is public data and no route reads cookies, so any origin may read any answer,
	// errors included (a browser app must see why it was refused).
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Content-Disposition, Retry-After")
	aborted := false
	if r.Method == http.MethodOptions {
		a.options(rec, r)
	} else {
		aborted = a.serveRecovered(rec, r)
	}

	route := st.route
	if route == "" {
		route = unmatchedRoute
	} else {
		span.SetName(r.Method + " " + route)
		span.SetAttributes(attribute.String("http.route", route))
	}
	status := rec.statusCode()
	if status < 300 && a.outage.Load() && a.outage.CompareAndSwap(true, false) {
		a.logger.LogAttrs(ctx, slog.LevelInfo, "dependency available again", slog.String("route", route))
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	elapsed := time.Since(start)
	a.duration.WithLabelValues(route, methodLabel(r.Method), strconv.Itoa(status)).Observe(elapsed.Seconds())
	a.logger.LogAttrs(ctx, slog.LevelInfo, "http request",
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.Int64("bytes", rec.bytes),
	)
	if aborted {
		// The response was already under way: abort the connection so the client sees a failure
		// instead of a truncated body that looks complete. net/http does not log this panic.
		panic(http.ErrAbortHandler)
	}
	st.releaseScratch()
}

// options answers OPTIONS for any path a route serves: 204 with Allow, and for a CORS preflight
// (Access-Control-Request-Method) the methods and the request headers the route allows other origins
// to use. A path no route serves is 404; a preflight for a method the path lacks is 405.
func (a *API) options(w http.ResponseWriter, r *http.Request) {
	allowed := a.allowedMethods(r)
	if len(allowed) == 0 {
		a.writeError(w, r, fault.Errorf(fault.NotFound, "not found"))
		return
	}
	allowed = append(allowed, http.MethodOptions)
	h := w.Header()
	h.Set("Allow", strings.Join(allowed, ", "))
	if want := r.Header.Get("Access-Control-Request-Method"); want != "" {
		cfg, ok := a.routeFor(r, want)
		if !ok {
			a.writeError(w, r, fault.Errorf(MethodNotAllowed, "method %s not allowed", want))
			return
		}
		headers := cfg.headers
		if want != http.MethodGet && want != http.MethodHead {
			headers = append([]string{"Content-Type"}, headers...)
		}
		h.Set("Access-Control-Allow-Methods", strings.Join(allowed, ", "))
		if len(headers) > 0 {
			h.Set("Access-Control-Allow-Headers", strings.Join(headers, ", "))
		}
		h.Set("Access-Control-Max-Age", "86400")
	}
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// serveRecovered runs the router and turns a panic into a logged 500. It reports whether the response
// had already started when the panic happened, in which case nothing could be answered.
func (a *API) serveRecovered(rec *recorder, r *http.Request) (aborted bool) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		a.logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
			slog.String("method", r.Method),
			slog.String("route", routeOf(r)),
			slog.String("path", r.URL.Path),
			slog.String("panic", fmt.Sprint(v)),
			slog.String("stack", string(debug.Stack())),
		)
		if rec.status != 0 {
			rec.status = http.StatusInternalServerError
			aborted = true
			return
		}
		rec.Header().Del("Content-Disposition")
		rec.Header().Set("Cache-Control", "no-store")
		body, _ := encodeJSON(errorBody{Success: false, Message: "internal error"})
		if cfg, ok := a.routeFor(r, r.Method); ok && cfg.bareFailures {
			body = []byte(bareFailureBody)
		}
		writeBody(rec, http.StatusInternalServerError, body)
	}()
	a.router.ServeHTTP(rec, r)
	return false
}

// methodLabel bounds the method label: clients choose the method, metrics must not let them grow series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	default:
		return "OTHER"
	}
}

// recorder remembers the status and size of a response for the access log and metrics.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush keeps streaming responses (CSV exports) streaming through the recorder.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (hijacking, deadlines).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) statusCode() int {
	if w.status == 0 {
		// A handler that wrote nothing gets an implicit 200 from net/http.
		return http.StatusOK
	}
	return w.status
}

// trackingWriter tells whether a Responder started its response.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	if code >= 200 {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *trackingWriter) Flush() {
	w.wrote = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
