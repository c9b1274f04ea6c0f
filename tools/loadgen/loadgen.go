// Package loadgen drives an HTTP endpoint with a fixed number of concurrent keep-alive connections and
// reports throughput and latency percentiles. It is for loopback targets only: benchmarks compare an
// endpoint with a baseline measured by the same generator in the same run.
package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Config describes one run. The run ends after Duration or Requests, whichever comes first.
type Config struct {
	Concurrency int                        // connections, each with one request in flight
	Duration    time.Duration              // upper bound on the run's length
	Requests    int                        // upper bound on the number of requests (0: none)
	Warmup      time.Duration              // requests before this are sent but not measured
	URL         func(n int) string         // the n-th request's URL (n counts per worker from 0)
	Check       func(*http.Response) error // nil: any 2xx passes
	// Header makes the n-th request's headers (signed ones, say) before its latency is measured;
	// nil: none.
	Header func(n int) http.Header
	// Body makes the n-th request's JSON body before its latency is measured: the request is then
	// a POST. nil: GETs.
	Body func(n int) []byte
}

// Result summarises the measured requests.
type Result struct {
	Requests int
	Errors   int
	Elapsed  time.Duration
	RPS      float64
	P50, P90 time.Duration
	P99, Max time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("%d requests in %s: %.0f req/s, p50 %s, p90 %s, p99 %s, max %s, %d errors",
		r.Requests, r.Elapsed.Round(time.Millisecond), r.RPS, r.P50, r.P90, r.P99, r.Max, r.Errors)
}

// Run sends the load and waits for every worker.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Concurrency <= 0 || cfg.URL == nil || cfg.Duration <= 0 {
		return Result{}, fmt.Errorf("loadgen: concurrency, duration and URL are required")
	}
	transport := &http.Transport{
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		MaxConnsPerHost:     cfg.Concurrency,
		IdleConnTimeout:     time.Minute,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}

	ctx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration)
	defer cancel()
	measureFrom := time.Now().Add(cfg.Warmup)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      int
		firstErr  error
		wg        sync.WaitGroup
	)
	perWorker := 0
	if cfg.Requests > 0 {
		perWorker = (cfg.Requests + cfg.Concurrency - 1) / cfg.Concurrency
	}
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			localErrs := 0
			var localFirst error
			for n := 0; perWorker == 0 || n < perWorker; n++ {
				if ctx.Err() != nil {
					break
				}
				i := w*1_000_000 + n
				var header http.Header
				if cfg.Header != nil {
					header = cfg.Header(i)
				}
				var body []byte
				if cfg.Body != nil {
					body = cfg.Body(i)
				}
				start := time.Now()
				err := do(ctx, client, cfg.URL(i), header, body, cfg.Body != nil, cfg.Check)
				if ctx.Err() != nil {
					break // the run ended mid-request: neither a sample nor an error
				}
				if start.Before(measureFrom) {
					continue
				}
				if err != nil {
					localErrs++
					if localFirst == nil {
						localFirst = err
					}
					continue
				}
				local = append(local, time.Since(start))
			}
			mu.Lock()
			latencies = append(latencies, local...)
			errs += localErrs
			if firstErr == nil {
				firstErr = localFirst
			}
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(measureFrom)
	slices.Sort(latencies)
	res := Result{Requests: len(latencies), Errors: errs, Elapsed: elapsed}
	if len(latencies) > 0 {
		res.RPS = float64(len(latencies)) / elapsed.Seconds()
		res.P50, res.P90 = pct(latencies, 0.50), pct(latencies, 0.90)
		res.P99, res.Max = pct(latencies, 0.99), latencies[len(latencies)-1]
	}
	if errs > 0 {
		return res, fmt.Errorf("loadgen: %d failed requests, first: %w", errs, firstErr)
	}
	return res, nil
}

func do(ctx context.Context, c *http.Client, url string, header http.Header, body []byte, post bool, check func(*http.Response) error) error {
	method, r := http.MethodGet, io.Reader(nil)
	if post {
		method, r = http.MethodPost, bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	if post {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if check != nil {
		if err := check(resp); err != nil {
			return err
		}
	} else if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d", method, url, resp.StatusCode)
	}
	// Drain so the connection is reused.
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func pct(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted)-1) * q)
	return sorted[i]
}
