package service_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/api/apitest"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/tx"
	"github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// discard is where the chain passes the messages that have no on-chain source: these tests read the
// chain only.
type discard struct{}

func (discard) Write(context.Context, ...events.Message) error { return nil }

// world is a simulated chain served on loopback and the tx service reading it.
type world struct {
	chain   *simchain.Chain
	sim     *sim.Simulator // its wallets' keys sign what the tests execute
	handler http.Handler
}

// mustWorld runs the simulator for a few minutes into a chain (its users, their orders and fills),
// serves the chain's JSON-RPC on loopback, and starts the service against it with the chain's
// lookup tables, returning once the service has read the markets.
func mustWorld(t *testing.T) *world {
	t.Helper()
	c := simchain.New(simchain.Config{Seed: 3})
	s := sim.New(sim.Config{Seed: 3, Authorities: 12, FillsPerMinute: 60})
	w := c.Writer(discard{})
	start := sim.Epoch().Add(50 * time.Hour)
	var batch []events.Message
	err := s.Generate(start, start.Add(5*time.Minute), func(m events.Message) error {
		batch = append(batch, m)
		if len(batch) < 500 {
			return nil
		}
		err := w.Write(context.Background(), batch...)
		batch = batch[:0]
		return err
	})
	if err == nil {
		err = w.Write(context.Background(), batch...)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Seal()
	rpc := httptest.NewServer(c.Handler())
	t.Cleanup(rpc.Close)

	var tables []string
	for _, k := range c.LookupTables() {
		tables = append(tables, k.String())
	}
	svc, err := service.New(service.Config{RPCURL: rpc.URL, LookupTables: tables, RPCAttempts: 1}, service.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("run: %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for svc.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the service did not read the markets: %v", svc.Ready())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &world{chain: c, sim: s, handler: svc.Handler()}
}

// walk is the contract walk over the service's routes, with candidates from the chain: the first
// users' subaccounts (by the address the records name and by their PDA), wallets, the markets the
// simulator trades, simulation asked for and not.
func (w *world) walk(t *testing.T) kittest.Walk {
	t.Helper()
	users := w.chain.Users()
	if len(users) < 4 {
		t.Fatalf("the chain has %d users, want 4 at least", len(users))
	}
	var accounts, wallets []string
	for _, u := range users[:4] {
		accounts = append(accounts, u.Address.String(), u.PDA.String())
		wallets = append(wallets, u.Authority.String())
	}
	return kittest.Walk{
		Handler:   w.handler,
		Validator: apitest.New(t),
		Serves:    kittest.ServedUnder(service.Prefixes()...),
		MaxBody:   tx.MaxBody,
		Values: map[string][]string{
			"accountId":   accounts,
			"authorityId": wallets,
			"builderId":   {wallets[1], wallets[2]},
			// The i-th body takes the i-th of each list: a deposit and an order are each built with
			// and without a simulation.
			"symbol":   {"USDC", "USDC", "SOL-PERP", "SOL-PERP"},
			"simulate": {"false", "true"},
			"amount":   {"1", "0.5", "0.01", "2"},
			"symbols":  {`["SOL-PERP"]`, `["SOL-PERP","BTC-PERP"]`},
			"orderIds": {`[1]`, `[]`},
		},
	}
}

// TestContract: every /tx operation answers a validated 2xx for the chain's users, and thousands of
// hostile requests get no server error.
func TestContract(t *testing.T) {
	w := mustWorld(t)
	walk := w.walk(t)
	signed := w.signedDeposit(t, walk)
	walk.Bodies = map[string][]string{
		"executeTransaction": {`{"signedTx":"` + signed + `"}`},
	}
	walk.CheckContract(t, 2400, "/tx/")
}

// signedDeposit is a deposit built by the service for the first user without a simulation and
// signed by its wallet, base64.
func (w *world) signedDeposit(t *testing.T, walk kittest.Walk) string {
	t.Helper()
	u := w.chain.Users()[0]
	body := `{"accountId":"` + u.Address.String() + `","amount":"1","symbol":"USDC","simulate":false}`
	req := httptest.NewRequest(http.MethodPost, "/tx/deposit", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := walk.Validator.Serve(t, w.handler, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /tx/deposit %s: %d %s", body, rec.Code, rec.Body)
	}
	var built tx.Built
	if err := json.Unmarshal(rec.Body.Bytes(), &built); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(built.Tx)
	if err != nil {
		t.Fatal(err)
	}
	txn, err := solana.ParseTransaction(raw)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := w.sim.WalletKey(u.Authority.String())
	if !ok {
		t.Fatalf("the simulator has no key of wallet %s", u.Authority)
	}
	if err := txn.Sign(key); err != nil {
		t.Fatal(err)
	}
	signed, err := txn.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(signed)
}
