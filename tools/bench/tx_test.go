package bench_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/loadgen"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

const (
	txConnections = 16
	txWarmup      = 2 * time.Second
	txDuration    = 10 * time.Second
	// The chain state's freshness: the User account is read once a minute, the blockhash every 30 s.
	txAccountTTL   = time.Minute
	txBlockhashTTL = 30 * time.Second
)

// txChainReads bounds the getMultipleAccounts and getLatestBlockhash calls one run (warm-up
// included) may cause: each cached value expires at most once in a 12 s run, and the requests in
// flight at an expiry share one read. A request reading the chain would be thousands.
func txChainReads() int {
	run := txWarmup + txDuration
	return int(run/txAccountTTL) + 1 + int(run/txBlockhashTTL) + 1
}

// BenchmarkTxBuild serves POST /tx/order/place (a limit order of a funded simulated subaccount,
// simulate false) to 16 keep-alive connections over loopback, with the chain state cached: a fixed
// compute unit limit (no simulation), the User account kept a minute, the blockhash 30 s. Amount,
// price and direction change with every request, so every answer is a transaction built anew. The
// baseline, in the same run, is a bare net/http handler that reads the body and writes one such
// answer from memory; the two alternate for restRounds rounds. Targets: p99 < 10 ms and >= 0.3 x
// the bare handler's throughput.
func BenchmarkTxBuild(b *testing.B) {
	for range b.N {
		chain, reads := txChain(b)
		api := txService(b, chain, reads)
		acct := txFundedUser(b, chain).PDA.String()

		// Two orders that differ must build two transactions: nothing answers from a cache of
		// answers, and the answer is a transaction that parses.
		first, second := txPost(b, api.URL, txOrder(acct, 0)), txPost(b, api.URL, txOrder(acct, 1))
		if bytes.Equal(first, second) {
			b.Fatal("two different orders got the same answer")
		}
		if err := txAnswer(http.StatusOK, first, true); err != nil {
			b.Fatal(err)
		}
		bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Read the body as the service must, so that the baseline pays for the same upload.
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(first)
		}))
		defer bare.Close()

		// loadgen numbers the requests across its workers: no two bodies are the same.
		order := func(n int) []byte { return txOrder(acct, int64(n)+2) }
		var bareRuns, txRuns []loadgen.Result
		var served map[string]int
		for round := range restRounds {
			res := txRun(b, fmt.Sprintf("round %d: bare handler, the same answer from memory", round), bare.URL+"/tx/order/place", order)
			bareRuns = append(bareRuns, res)

			before := reads.snapshot()
			res = txRun(b, fmt.Sprintf("round %d: /tx/order/place, every order different", round), api.URL+"/tx/order/place", order)
			txRuns = append(txRuns, res)
			run := reads.since(before)
			if n := run["getMultipleAccounts"] + run["getLatestBlockhash"]; n > txChainReads() {
				b.Fatalf("round %d: the chain served %d getMultipleAccounts and getLatestBlockhash calls (%v), more than the %d the caches allow",
					round, n, run, txChainReads())
			}
			if run["simulateTransaction"] > 0 {
				b.Fatalf("round %d: the service simulated %d transactions with a fixed compute unit limit", round, run["simulateTransaction"])
			}
			b.Logf("round %d: the chain served %v", round, run)
			served = addCounts(served, run)
		}

		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		var ratio, txRPS, bareRPS, txP50, txP99, bareP50, bareP99 []float64
		for round := range restRounds {
			ratio = append(ratio, txRuns[round].RPS/bareRuns[round].RPS)
			txRPS, bareRPS = append(txRPS, txRuns[round].RPS), append(bareRPS, bareRuns[round].RPS)
			txP50, txP99 = append(txP50, ms(txRuns[round].P50)), append(txP99, ms(txRuns[round].P99))
			bareP50, bareP99 = append(bareP50, ms(bareRuns[round].P50)), append(bareP99, ms(bareRuns[round].P99))
		}
		rb, rm, rs := spreadOf(ratio, false)
		qb, qm, qs := spreadOf(txRPS, false)
		bqb, bqm, bqs := spreadOf(bareRPS, false)
		p50b, p50m, p50s := spreadOf(txP50, true)
		p99b, p99m, p99s := spreadOf(txP99, true)
		bp50b, bp50m, bp50s := spreadOf(bareP50, true)
		bp99b, bp99m, bp99s := spreadOf(bareP99, true)
		b.ReportMetric(rm, "ratio")
		b.ReportMetric(qm, "tx_req/s")
		b.ReportMetric(p50m, "tx_p50_ms")
		b.ReportMetric(p99m, "tx_p99_ms")
		b.ReportMetric(bqm, "bare_req/s")
		b.ReportMetric(bp50m, "bare_p50_ms")
		b.ReportMetric(bp99m, "bare_p99_ms")
		b.Logf("RESULT tx build: POST /tx/order/place, limit orders all different, simulate false, chain state cached, %d connections, %d rounds (best / median / spread):",
			txConnections, restRounds)
		b.Logf("RESULT   ratio to the bare handler %s (%.3f / %.3f / %.2fx); %.0f / %.0f req/s / %.2fx against %.0f / %.0f req/s / %.2fx",
			atLeast(rm, 0.3), rb, rm, rs, qb, qm, qs, bqb, bqm, bqs)
		b.Logf("RESULT   /tx/order/place p50 %.2f / %.2f ms / %.2fx, p99 %.2f / %.2f ms / %.2fx, median p99 %s",
			p50b, p50m, p50s, p99b, p99m, p99s, below(p99m, 10, "ms"))
		b.Logf("RESULT   bare handler p50 %.2f / %.2f ms / %.2fx, p99 %.2f / %.2f ms / %.2fx", bp50b, bp50m, bp50s, bp99b, bp99m, bp99s)
		b.Logf("RESULT   the chain's calls over the %d measured runs (warm-ups included): %v", restRounds, served)
	}
}

// below gives a figure against the ceiling its target sets, with the verdict (see atLeast).
func below(got, target float64, unit string) string {
	verdict := "met"
	if got >= target {
		verdict = "missed"
	}
	return fmt.Sprintf("%.3f %s (target < %g %s: %s)", got, unit, target, unit, verdict)
}

// txOrder is the n-th order's body: a limit order whose amount, price and direction change with n.
func txOrder(acct string, n int64) []byte {
	direction := "long"
	if n%2 == 1 {
		direction = "short"
	}
	return fmt.Appendf(nil, `{"accountId":%q,"symbol":"SOL-PERP","direction":%q,"amount":"%d.%03d","orderType":"limit","price":"%d.%04d","simulate":false}`,
		acct, direction, 1+n%7, n%1000, 100+n%50, n%10000)
}

// txAnswer checks that an answer is a 200 carrying a transaction; parse also decodes the
// transaction, which the load loop leaves to the check above to keep the client's cost the same
// for the baseline and the service.
func txAnswer(status int, body []byte, parse bool) error {
	var a struct {
		Success bool   `json:"success"`
		Tx      string `json:"tx"`
	}
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %s", status, body)
	}
	if err := json.Unmarshal(body, &a); err != nil || !a.Success || a.Tx == "" {
		return fmt.Errorf("no transaction in %s", body)
	}
	if !parse {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(a.Tx)
	if err == nil {
		_, err = solana.ParseTransaction(raw)
	}
	if err != nil {
		return fmt.Errorf("the answer's transaction: %w", err)
	}
	return nil
}

// txPost sends one order and returns the answer's body.
func txPost(b *testing.B, base string, body []byte) []byte {
	b.Helper()
	resp, err := http.Post(base+"/tx/order/place", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if err := txAnswer(resp.StatusCode, out, false); err != nil {
		b.Fatalf("POST %s: %v", body, err)
	}
	return out
}

// txRun posts body(n) to url from txConnections keep-alive connections for txWarmup and then
// txDuration, measuring the latter, and fails the benchmark on any answer, warm-up included, that is
// not a 200 with a transaction.
func txRun(b *testing.B, name, url string, body func(n int) []byte) loadgen.Result {
	b.Helper()
	var failures atomic.Int64
	var first atomic.Value
	res, err := loadgen.Run(context.Background(), loadgen.Config{
		Concurrency: txConnections, Warmup: txWarmup, Duration: txDuration,
		URL:  func(int) string { return url },
		Body: body,
		Check: func(resp *http.Response) error {
			answer, err := io.ReadAll(resp.Body)
			if err == nil {
				err = txAnswer(resp.StatusCode, answer, false)
			}
			if err != nil {
				failures.Add(1)
				first.CompareAndSwap(nil, err.Error())
			}
			return err
		},
	})
	if n := failures.Load(); n > 0 {
		b.Fatalf("%s: %d answers were not a 200 with a transaction, first: %v", name, n, first.Load())
	}
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	if res.Requests == 0 {
		b.Fatalf("%s: no request completed", name)
	}
	b.Logf("%-60s %s", name, res)
	return res
}

// txChain is an hour of simulated history sealed into a chain, and the counter its JSON-RPC
// handler goes through.
func txChain(b *testing.B) (*simchain.Chain, *rpcCounter) {
	b.Helper()
	ctx := context.Background()
	chain := simchain.New(simchain.Config{Seed: 3})
	feed := chain.Writer(nil)
	s := sim.New(sim.Config{Seed: 3, Authorities: 30, FillsPerMinute: 60})
	from := sim.Epoch().Add(48 * time.Hour)
	if err := s.Write(ctx, feed, from, from.Add(time.Hour)); err != nil {
		b.Fatalf("write the simulated hour into the chain: %v", err)
	}
	chain.Seal()
	return chain, &rpcCounter{next: chain.Handler(), calls: map[string]int{}}
}

// txService runs the tx service against chain (served through reads) with its chain state cached,
// until the benchmark ends, and serves its routes.
func txService(b *testing.B, chain *simchain.Chain, reads *rpcCounter) *httptest.Server {
	b.Helper()
	rpcSrv := httptest.NewServer(reads)
	b.Cleanup(rpcSrv.Close)
	cfg := txservice.Config{
		RPC:          rpc.Endpoint{URL: rpcSrv.URL},
		ComputeUnits: 200_000, // a fixed limit: no simulation to size it
		AccountTTL:   txAccountTTL,
		BlockhashTTL: txBlockhashTTL,
		// The market accounts are read in the background, not for a request: past the bench's
		// length, every getMultipleAccounts the chain serves is one a request caused.
		MarketsInterval: time.Hour,
	}
	for _, k := range chain.LookupTables() {
		cfg.LookupTables = append(cfg.LookupTables, k.String())
	}
	svc, err := txservice.New(cfg, txservice.Deps{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			b.Errorf("tx service: %v", err)
		}
	})
	waitFor(b, 10*time.Second, "the tx service to read the markets", func() bool { return svc.Ready() == nil })
	api := httptest.NewServer(svc.Handler())
	b.Cleanup(api.Close)
	return api
}

// txFundedUser is a simulated subaccount whose wallet has a token account for every spot market's
// mint, so that nothing a builder checks of the wallet refuses it.
func txFundedUser(b *testing.B, chain *simchain.Chain) simchain.User {
	b.Helper()
	var mints []solana.PublicKey
	for _, m := range chain.Markets() {
		if m.Type == events.MarketTypeSpot {
			mints = append(mints, m.Mint)
		}
	}
	for _, u := range chain.Users() {
		if !slices.ContainsFunc(mints, func(m solana.PublicKey) bool { _, ok := u.TokenAccounts[m]; return !ok }) {
			return u
		}
	}
	b.Fatal("no simulated wallet has every token account")
	return simchain.User{}
}

// rpcCounter counts the JSON-RPC calls a handler serves by method, a batch counting each of its
// calls, so that a benchmark can say what its figure did not cache.
type rpcCounter struct {
	next  http.Handler
	mu    sync.Mutex
	calls map[string]int
}

func (c *rpcCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request failed", http.StatusBadRequest)
		return
	}
	var calls []struct {
		Method string `json:"method"`
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] != '[' {
		trimmed = append(append([]byte{'['}, trimmed...), ']')
	}
	if json.Unmarshal(trimmed, &calls) == nil {
		c.mu.Lock()
		for _, call := range calls {
			c.calls[call.Method]++
		}
		c.mu.Unlock()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.next.ServeHTTP(w, r)
}

func (c *rpcCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// since is the calls served after then, a snapshot.
func (c *rpcCounter) since(then map[string]int) map[string]int {
	out := map[string]int{}
	for method, n := range c.snapshot() {
		if d := n - then[method]; d > 0 {
			out[method] = d
		}
	}
	return out
}

// addCounts adds b's counts to a, which may be nil.
func addCounts(a, b map[string]int) map[string]int {
	if a == nil {
		a = map[string]int{}
	}
	for k, n := range b {
		a[k] += n
	}
	return a
}
