package kit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ProbeCommand is the subcommand of every service binary that checks a release from inside the
// cluster, as the chart's `helm test` hook runs it: each URL must answer 200, and one whose path
// ends in /openapi.json must answer an OpenAPI 3 document with paths. A URL that does not yet is
// asked again until -timeout, so that a release still rolling out passes once it is ready.
//
//	market probe -timeout 2m http://tidemark-market:9090/readyz http://tidemark-market:8080/openapi.json
const ProbeCommand = "probe"

// Probe runs the probe command with args and returns the process's exit code: 0 when every URL
// passed, 1 when one did not by the timeout, 2 for bad arguments. It prints a line per URL.
func Probe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(ProbeCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", time.Minute, "how long a URL may take to pass")
	interval := fs.Duration("interval", 2*time.Second, "the pause between two attempts at a URL")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	urls := fs.Args()
	if len(urls) == 0 || *timeout <= 0 || *interval <= 0 {
		fmt.Fprintln(stderr, "probe: want a positive -timeout and -interval and at least one URL")
		return 2
	}
	for _, u := range urls {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			fmt.Fprintf(stderr, "probe: %q is not an http(s) URL\n", u)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	results := make([]string, len(urls))
	var failed bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			start := time.Now()
			err := probeUntil(ctx, client, u, *interval)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = true
				results[i] = fmt.Sprintf("FAIL  %s: %v", u, err)
				return
			}
			results[i] = fmt.Sprintf("ok    %s (%v)", u, time.Since(start).Round(time.Millisecond))
		})
	}
	wg.Wait()
	fmt.Fprintln(stdout, strings.Join(results, "\n"))
	if failed {
		return 1
	}
	return 0
}

// probeUntil asks u until it passes or ctx ends, and returns the last reason it did not pass: the
// last answer's, rather than the deadline that cut a later attempt short.
func probeUntil(ctx context.Context, client *http.Client, u string, interval time.Duration) error {
	var last error
	for {
		err := probeOnce(ctx, client, u)
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(interval):
		}
	}
}

func probeOnce(ctx context.Context, client *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	if !strings.HasSuffix(req.URL.Path, "/openapi.json") {
		return nil
	}
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("not a JSON document: %w", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") || len(doc.Paths) == 0 {
		return errors.New("not an OpenAPI 3 document with paths")
	}
	return nil
}
