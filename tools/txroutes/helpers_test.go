package txroutes_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// world is a simulated chain served on loopback and a tx service reading it.
type world struct {
	chain *simchain.Chain
	sim   *sim.Simulator
	rpc   *httptest.Server // the chain's JSON-RPC
	api   *httptest.Server // the tx service's routes
	svc   *txservice.Service
}

// start is an hour of simulated history in a chain, and a tx service against it with cfg (its
// endpoint and lookup tables filled in). The service is ready when start returns.
func start(t testing.TB, cfg txservice.Config) *world {
	t.Helper()
	c := simchain.New(simchain.Config{Seed: 3})
	s := sim.New(sim.Config{Seed: 3, Authorities: 30, FillsPerMinute: 60})
	from := sim.Epoch().Add(48 * time.Hour)
	if err := s.Write(context.Background(), c.Writer(discard{}), from, from.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	c.Seal()
	rpc := httptest.NewServer(c.Handler())
	t.Cleanup(rpc.Close)
	cfg.RPC.URL = rpc.URL
	if cfg.LookupTables == nil {
		for _, k := range c.LookupTables() {
			cfg.LookupTables = append(cfg.LookupTables, k.String())
		}
	}
	svc, err := txservice.New(cfg, txservice.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	kittest.Eventually(t, 10*time.Second, "the tx service reads the markets", func() bool { return svc.Ready() == nil })
	api := httptest.NewServer(svc.Handler())
	t.Cleanup(api.Close)
	return &world{chain: c, sim: s, rpc: rpc, api: api, svc: svc}
}

type discard struct{}

func (discard) Write(context.Context, ...events.Message) error { return nil }

// answer is a route's answer.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// post sends body (a string as is, anything else as JSON) to path.
func (w *world) post(t testing.TB, path string, body any) answer {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	resp, err := http.Post(w.api.URL+path, "application/json", bytes.NewReader([]byte(raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, raw: b}
	if err := json.Unmarshal(b, &a.body); err != nil {
		t.Fatalf("POST %s: %d %s is no JSON object", path, resp.StatusCode, b)
	}
	return a
}

// transaction decodes a builder's answer.
func (a answer) transaction(t testing.TB) *solana.Transaction {
	t.Helper()
	if a.status != http.StatusOK || a.body["success"] != true {
		t.Fatalf("answer %d %s", a.status, a.raw)
	}
	raw, err := base64.StdEncoding.DecodeString(a.body["tx"].(string))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.ParseTransaction(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// user is a simulated subaccount with a User account, and a perp market it trades.
func (w *world) user(t testing.TB, i int) simchain.User {
	t.Helper()
	users := w.chain.Users()
	if len(users) <= i {
		t.Fatalf("the chain has %d users", len(users))
	}
	return users[i]
}

// funded is a simulated subaccount whose wallet has a token account for every spot market's mint,
// skipping the first skip of them.
func (w *world) funded(t testing.TB, skip int) simchain.User {
	t.Helper()
	var mints []solana.PublicKey
	for _, m := range w.chain.Markets() {
		if m.Type == events.MarketTypeSpot {
			mints = append(mints, m.Mint)
		}
	}
users:
	for _, u := range w.chain.Users() {
		for _, m := range mints {
			if _, ok := u.TokenAccounts[m]; !ok {
				continue users
			}
		}
		if skip == 0 {
			return u
		}
		skip--
	}
	t.Fatal("no simulated wallet has every token account")
	return simchain.User{}
}

// unfunded is a simulated subaccount whose wallet lacks the token account of mint's spot market
// symbol.
func (w *world) unfunded(t testing.TB, symbol string) simchain.User {
	t.Helper()
	for _, m := range w.chain.Markets() {
		if m.Type != events.MarketTypeSpot || m.Symbol != symbol {
			continue
		}
		for _, u := range w.chain.Users() {
			if _, ok := u.TokenAccounts[m.Mint]; !ok {
				return u
			}
		}
	}
	t.Fatalf("every simulated wallet has a %s token account", symbol)
	return simchain.User{}
}

// userAccount is the simulated User at u's PDA.
func (w *world) userAccount(t testing.TB, u simchain.User) drift.User {
	t.Helper()
	a, ok := w.chain.UserAccount(u.PDA)
	if !ok {
		t.Fatalf("no User account at %s", u.PDA)
	}
	return a
}
