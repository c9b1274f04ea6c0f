// Package rpc is a client of a Solana JSON-RPC endpoint: the few methods the indexer and the /tx
// group call, paced for endpoints that rate-limit and retried with backoff when the failure is
// one that passes (HTTP 429 and 5xx, timeouts, a node behind or unhealthy).
//
// A refusal that does not pass (bad params, an unknown method) is returned at once as an *Error.
// A slot the cluster skipped is no failure to retry either: Block answers ErrSkipped for it.
package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Commitment is how settled the state a request reads must be.
type Commitment string

// The commitments of the RPC. The indexer reads Finalized: a finalized block never changes, so a
// slot indexed once is never indexed again differently.
const (
	Finalized Commitment = "finalized"
	Confirmed Commitment = "confirmed"
	Processed Commitment = "processed"
)

// The JSON-RPC error codes the client tells apart (the Solana RPC's, in its rpc_custom_error.rs).
const (
	CodeInvalidParams          = -32602
	CodeMethodNotFound         = -32601
	CodeBlockCleanedUp         = -32001
	CodeSendTransactionFailed  = -32002
	CodeBlockNotAvailable      = -32004
	CodeNodeUnhealthy          = -32005
	CodeSlotSkipped            = -32007
	CodeLongTermStorageSkipped = -32009
	CodeBlockStatusNotYet      = -32014
	CodeMinContextSlot         = -32016
)

// Error is a JSON-RPC error object as the endpoint answered it.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// transient reports whether asking again may succeed: the node is behind, unhealthy or has not
// the block yet. Skipped slots, bad params and unknown methods never pass.
func (e *Error) transient() bool {
	switch e.Code {
	case CodeBlockNotAvailable, CodeNodeUnhealthy, CodeBlockStatusNotYet, CodeMinContextSlot:
		return true
	case CodeSlotSkipped, CodeLongTermStorageSkipped, CodeInvalidParams, CodeMethodNotFound, CodeBlockCleanedUp,
		CodeSendTransactionFailed:
		return false
	}
	// -32603 internal error and the rest of the server range: the node's own trouble.
	return e.Code <= -32000 && e.Code >= -32099 || e.Code == -32603
}

// HTTPError is an answer that is not a JSON-RPC response: a status other than 200.
type HTTPError struct {
	Status     int
	RetryAfter time.Duration // from the Retry-After header, 0 when absent
	Body       string        // the start of the body, for the log
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("rpc: HTTP %d: %s", e.Status, e.Body)
}

func (e *HTTPError) transient() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}

// ErrSkipped is Block's answer for a slot that has no block: the leader skipped it (-32007), or the
// node's long-term storage has none for it (-32009).
var ErrSkipped = errors.New("rpc: slot skipped")

// Code is how an attempt ended, as the metrics label it: "ok", "http_<status>", the JSON-RPC code
// ("-32007"), "timeout", "decode" (an answer that is no JSON-RPC response) or "network".
func Code(err error) string {
	if err == nil {
		return "ok"
	}
	var re *Error
	var he *HTTPError
	var ne net.Error
	switch {
	case errors.As(err, &re):
		return strconv.Itoa(re.Code)
	case errors.As(err, &he):
		return "http_" + strconv.Itoa(he.Status)
	case errors.Is(err, errDecode):
		return "decode"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "network"
}

// Options configure a Client. Zero values take the defaults.
type Options struct {
	// URL is the endpoint; Headers are sent with every request (an API key, say).
	URL     string
	Headers map[string]string
	// RequestsPerSecond paces requests, retries included, across every goroutine using the Client:
	// public endpoints count requests per second and answer 429 beyond their limit. 0: unpaced.
	RequestsPerSecond float64
	// Timeout bounds one attempt (default 30s): a getBlock of a full block is megabytes.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts, doubling from the first to the
	// second with jitter (defaults 200ms, 30s). A Retry-After longer than the wait wins.
	MinBackoff, MaxBackoff time.Duration
	// Attempts bounds the attempts of one call; 0 retries a transient failure until the call's
	// context ends, which is what the indexer wants: a slot that fails is never passed over.
	Attempts int
	// Observe is told of every attempt: the method and how it ended (Code). nil: nobody.
	Observe func(method, code string)
	// HTTP is the client to send with (default: one of its own with keep-alives).
	HTTP *http.Client
}

// Client calls one endpoint. It is safe for concurrent use.
type Client struct {
	opts Options
	http *http.Client
	pace *pacer
	id   atomic.Uint64
}

// New returns a client of o.URL.
func New(o Options) (*Client, error) {
	if o.URL == "" {
		return nil, errors.New("rpc: no endpoint URL")
	}
	if o.RequestsPerSecond < 0 {
		return nil, fmt.Errorf("rpc: requests per second must not be negative, got %v", o.RequestsPerSecond)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 200 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(30*time.Second, o.MinBackoff)
	}
	c := &Client{opts: o, http: o.HTTP}
	if c.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		c.http = &http.Client{Transport: t}
	}
	if o.RequestsPerSecond > 0 {
		c.pace = &pacer{every: time.Duration(float64(time.Second) / o.RequestsPerSecond)}
	}
	return c, nil
}

// URL is the endpoint the client calls.
func (c *Client) URL() string { return c.opts.URL }

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params,omitempty"`
}

// response is a JSON-RPC response whose result decodes into Result, the caller's value (nil: the
// result is not kept). A null result leaves it as it is.
type response struct {
	Result any    `json:"result"`
	Error  *Error `json:"error"`
}

// Call calls method with params and decodes its result into result (a pointer, or nil to drop it),
// retrying transient failures as Options say. A JSON null result leaves result as it is.
func (c *Client) Call(ctx context.Context, method string, result any, params ...any) error {
	wait := c.opts.MinBackoff
	for attempt := 1; ; attempt++ {
		err := c.once(ctx, method, result, params)
		if c.opts.Observe != nil && ctx.Err() == nil {
			c.opts.Observe(method, Code(err))
		}
		if err == nil || !retryable(err) || ctx.Err() != nil ||
			(c.opts.Attempts > 0 && attempt >= c.opts.Attempts) {
			if err != nil && ctx.Err() != nil {
				return fmt.Errorf("rpc %s: %w", method, ctx.Err())
			}
			if err != nil {
				return fmt.Errorf("rpc %s: %w", method, err)
			}
			return nil
		}
		d := jitter(wait)
		var he *HTTPError
		if errors.As(err, &he) && he.RetryAfter > d {
			d = he.RetryAfter
		}
		wait = min(2*wait, c.opts.MaxBackoff)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("rpc %s: %w (last attempt: %v)", method, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// retryable reports whether err may pass on another attempt.
func retryable(err error) bool {
	var re *Error
	var he *HTTPError
	switch {
	case errors.As(err, &re):
		return re.transient()
	case errors.As(err, &he):
		return he.transient()
	case errors.Is(err, errDecode):
		return false
	}
	return true // the network: resets, timeouts, a proxy closing on us
}

var errDecode = errors.New("undecodable answer")

func (c *Client) once(ctx context.Context, method string, result any, params []any) error {
	if err := c.pace.wait(ctx); err != nil {
		return err
	}
	reqBody, err := json.Marshal(request{JSONRPC: "2.0", ID: c.id.Add(1), Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("encode params: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.URL, bytes.NewReader(reqBody))
	if err != nil {
		return fmt.Errorf("%w: %v", errDecode, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.opts.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return &HTTPError{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After")), Body: string(head)}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	// One pass over the body, straight into the caller's result: a block is hundreds of kilobytes,
	// and decoding it into a raw result first and then again doubled the indexer's cost per event.
	r := response{Result: result}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%w: %v", errDecode, err)
	}
	if r.Error != nil {
		return r.Error
	}
	return nil
}

// retryAfter reads a Retry-After of seconds; dates and garbage count as absent.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// jitter is d give or take a quarter, so that workers retrying together spread out.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

// pacer spaces requests every `every` apart over all goroutines: each takes the next free time
// and sleeps until it.
type pacer struct {
	every time.Duration
	mu    sync.Mutex
	next  time.Time
}

func (p *pacer) wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	now := time.Now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	p.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
