package txroutes

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

	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// The simulator of a World: its wallets' keys are those of the simulator of this seed and number
// of wallets (the command-line tools' -seed and -authorities).
const (
	Seed        = 3
	Authorities = 30
)

// World is a simulated chain served on loopback and a tx service reading it.
type World struct {
	Chain   *simchain.Chain
	Sim     *sim.Simulator   // its wallets' keys sign what tests send
	RPC     *httptest.Server // the chain's JSON-RPC
	API     *httptest.Server // the tx service's routes
	Service *txservice.Service
}

// Start is an hour of simulated history in a chain, and a tx service against it with cfg (its
// endpoint and lookup tables filled in), until the test ends. The service is ready when Start
// returns.
func Start(t testing.TB, cfg txservice.Config) *World {
	t.Helper()
	c := simchain.New(simchain.Config{Seed: Seed})
	s := sim.New(sim.Config{Seed: Seed, Authorities: Authorities, FillsPerMinute: 60})
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
	return &World{Chain: c, Sim: s, RPC: rpc, API: api, Service: svc}
}

type discard struct{}

func (discard) Write(context.Context, ...events.Message) error { return nil }

// Answer is a route's answer.
type Answer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Post sends body (a string as is, anything else as JSON) to path.
func (w *World) Post(t testing.TB, path string, body any) Answer {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	resp, err := http.Post(w.API.URL+path, "application/json", bytes.NewReader([]byte(raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Raw: b}
	if err := json.Unmarshal(b, &a.Body); err != nil {
		t.Fatalf("POST %s: %d %s is no JSON object", path, resp.StatusCode, b)
	}
	return a
}

// Transaction decodes a builder's answer, failing the test unless it is a 200 with one.
func (a Answer) Transaction(t testing.TB) *solana.Transaction {
	t.Helper()
	if a.Status != http.StatusOK || a.Body["success"] != true {
		t.Fatalf("answer %d %s", a.Status, a.Raw)
	}
	raw, err := base64.StdEncoding.DecodeString(a.Body["tx"].(string))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.ParseTransaction(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// User is the i-th simulated subaccount.
func (w *World) User(t testing.TB, i int) simchain.User {
	t.Helper()
	users := w.Chain.Users()
	if len(users) <= i {
		t.Fatalf("the chain has %d users", len(users))
	}
	return users[i]
}

// Funded is a simulated subaccount whose wallet has a token account for every spot market's mint,
// skipping the first skip of them.
func (w *World) Funded(t testing.TB, skip int) simchain.User {
	t.Helper()
	var mints []solana.PublicKey
	for _, m := range w.Chain.Markets() {
		if m.Type == events.MarketTypeSpot {
			mints = append(mints, m.Mint)
		}
	}
users:
	for _, u := range w.Chain.Users() {
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

// Unfunded is a simulated subaccount whose wallet lacks the token account of mint's spot market
// symbol.
func (w *World) Unfunded(t testing.TB, symbol string) simchain.User {
	t.Helper()
	for _, m := range w.Chain.Markets() {
		if m.Type != events.MarketTypeSpot || m.Symbol != symbol {
			continue
		}
		for _, u := range w.Chain.Users() {
			if _, ok := u.TokenAccounts[m.Mint]; !ok {
				return u
			}
		}
	}
	t.Fatalf("every simulated wallet has a %s token account", symbol)
	return simchain.User{}
}
