package rpc

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/tidemark/tidemark/platform/app"
)

// Endpoint is how a deployable reaches its JSON-RPC endpoint, read from its variables
// TIDEMARK_<PREFIX>_RPC_URL, _RPC_HEADERS, _RPC_RATE and _RPC_TIMEOUT. The URL and the headers come
// from a Secret in a cluster, since providers put API keys in either.
type Endpoint struct {
	// URL is the endpoint's http(s) URL.
	URL string
	// Headers are sent with every request, "Name: value" pairs (ParseHeaders).
	Headers []string
	// Rate paces requests per second across the process (0: unpaced): the endpoint's limit.
	Rate float64
	// Timeout bounds one request.
	Timeout time.Duration
}

// RegisterEnv reads the endpoint's variables under prefix ("INDEXER"); timeout is the default of
// _RPC_TIMEOUT.
func (e *Endpoint) RegisterEnv(env *app.Env, prefix string, timeout time.Duration) {
	e.URL = env.String(prefix+"_RPC_URL", "")
	e.Headers = env.Strings(prefix+"_RPC_HEADERS", nil)
	e.Rate = float64(env.Int(prefix+"_RPC_RATE", 0))
	e.Timeout = env.Duration(prefix+"_RPC_TIMEOUT", timeout)
}

// Validate reports every value out of range, naming its variable under prefix.
func (e Endpoint) Validate(prefix string) error {
	var errs []error
	bad := func(name, want string, got any) {
		errs = append(errs, fmt.Errorf("%s%s_RPC_%s must be %s, got %v", app.EnvPrefix, prefix, name, want, got))
	}
	if u, err := url.Parse(e.URL); e.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("URL", "the http(s) URL of a Solana JSON-RPC endpoint", fmt.Sprintf("%q", e.URL))
	}
	if _, err := ParseHeaders(e.Headers); err != nil {
		bad("HEADERS", `"Name: value" pairs separated by commas`, err)
	}
	if e.Rate < 0 {
		bad("RATE", "0 (unpaced) or more", e.Rate)
	}
	if e.Timeout < 0 {
		bad("TIMEOUT", "0 (the default) or more", e.Timeout)
	}
	return errors.Join(errs...)
}

// Options are the client's options for the endpoint; the caller adds its own (attempts, backoff,
// what to observe).
func (e Endpoint) Options() (Options, error) {
	h, err := ParseHeaders(e.Headers)
	if err != nil {
		return Options{}, err
	}
	return Options{URL: e.URL, Headers: h, RequestsPerSecond: e.Rate, Timeout: e.Timeout}, nil
}
