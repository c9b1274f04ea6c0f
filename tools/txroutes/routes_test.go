package txroutes_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/services/tx"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/txroutes"
)

// TestBuildSignExecute: a deposit built for a simulated subaccount is an unsigned v0 transaction
// its wallet pays for and signs; signed, /tx/execute forwards it and answers its signature, which
// the chain received; sent unsigned, it is refused before the chain sees it.
func TestBuildSignExecute(t *testing.T) {
	w := txroutes.Start(t, txservice.Config{PriorityFee: tx.DefaultPriorityFee})
	u := w.Funded(t, 0)
	a := w.Post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "12.5", "symbol": "USDC"})
	tx := a.Transaction(t)
	if !strings.HasPrefix(a.Body["message"].(string), "Deposit transaction created and simulated successfully for USDC.") {
		t.Errorf("message %q", a.Body["message"])
	}
	if tx.Message.Version != solana.Version0 || tx.Message.FeePayer() != u.Authority {
		t.Fatalf("version %v, payer %s, want v0 paid by %s", tx.Message.Version, tx.Message.FeePayer(), u.Authority)
	}
	if len(tx.Message.AddressTableLookups) == 0 {
		t.Error("no key came from the lookup tables")
	}
	// The compute budget: a limit sized by the simulation, and the default price.
	if n := len(tx.Message.Instructions); n != 3 {
		t.Fatalf("%d instructions, want the limit, the price and the deposit", n)
	}
	unsigned := w.Post(t, "/tx/execute", map[string]any{"signedTx": a.Body["tx"]})
	if unsigned.Status != http.StatusBadRequest || !strings.Contains(unsigned.Body["message"].(string), "signedTx is not signed") {
		t.Fatalf("unsigned: %d %s", unsigned.Status, unsigned.Raw)
	}
	key, ok := w.Sim.WalletKey(u.Authority.String())
	if !ok {
		t.Fatalf("the simulator has no key of %s", u.Authority)
	}
	if err := tx.Sign(key); err != nil {
		t.Fatal(err)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, simulate := range []bool{false, true} {
		e := w.Post(t, "/tx/execute", map[string]any{"signedTx": base64.StdEncoding.EncodeToString(raw), "simulate": simulate})
		if e.Status != http.StatusOK || e.Body["txSig"] != tx.Signature() || e.Body["message"] != "Transaction executed successfully" {
			t.Fatalf("execute (simulate %v): %d %s, want the signature %s", simulate, e.Status, e.Raw, tx.Signature())
		}
	}
	sent := w.Chain.Sent()
	if len(sent) != 2 || sent[0].Signature != tx.Signature() {
		t.Fatalf("the chain received %d transactions", len(sent))
	}
}

// TestEveryRouteBuilds: each builder route answers a transaction for a simulated subaccount, with
// and without simulation, whose instructions are the protocol's after the compute budget.
func TestEveryRouteBuilds(t *testing.T) {
	w := txroutes.Start(t, txservice.Config{})
	u := w.Funded(t, 1)
	acct := u.PDA.String()
	builder := w.Funded(t, 2).Authority.String()
	tests := []struct {
		path    string
		body    map[string]any
		program int // instructions of the protocol's program
	}{
		{"/tx/deposit", map[string]any{"accountId": acct, "amount": "3", "symbol": "USDC"}, 1},
		{"/tx/withdraw", map[string]any{"accountId": acct, "amount": "1.25", "symbol": "USDC"}, 1},
		{"/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "0.5", "orderType": "market"}, 1},
		{"/tx/order/place", map[string]any{"accountId": acct, "symbol": "BTC-PERP", "direction": "short", "amount": "0.01", "orderType": "limit", "price": "65000.5", "postOnly": true, "positionMaxLeverage": 5}, 2},
		{"/tx/order/cancel", map[string]any{"accountId": acct}, 1},
		{"/tx/order/cancel", map[string]any{"accountId": acct, "orderIds": []int{1, 2, 3}}, 1},
		{"/tx/settlePnl", map[string]any{"accountId": acct, "symbols": []string{"SOL-PERP", "sol-perp"}}, 1},
		{"/tx/settlePnl", map[string]any{"accountId": acct}, 1},
		{"/tx/builder/approve", map[string]any{"authorityId": u.Authority.String(), "builderId": builder, "maxFeeTenthBps": 10}, 0},
	}
	for _, tt := range tests {
		for _, simulate := range []bool{true, false} {
			tt.body["simulate"] = simulate
			a := w.Post(t, tt.path, tt.body)
			tx := a.Transaction(t)
			// The message says a simulation ran only when the client asked for one, whatever the
			// service simulated to size the compute budget.
			if simulated := strings.Contains(a.Body["message"].(string), "created and simulated successfully"); simulated != simulate {
				t.Errorf("%s simulate %v: message %q", tt.path, simulate, a.Body["message"])
			}
			if tx.Message.FeePayer().IsZero() {
				t.Fatalf("%s: no fee payer", tt.path)
			}
			n := 0
			for _, ix := range tx.Message.Instructions {
				if tx.Message.AccountKeys[ix.ProgramIDIndex] == drift.Program() {
					n++
				}
			}
			if tt.program > 0 && n != tt.program {
				t.Errorf("%s %v: %d instructions of the protocol, want %d", tt.path, tt.body, n, tt.program)
			}
		}
	}
}

// TestRPCDown: an endpoint that does not answer is a 503 with Retry-After, never a 500, and the
// service is not ready before it has read the markets once.
func TestRPCDown(t *testing.T) {
	w := txroutes.Start(t, txservice.Config{RPC: rpc.Endpoint{Timeout: 500 * time.Millisecond}, RPCAttempts: 1})
	u := w.User(t, 0)
	w.RPC.Close() // the markets are read; the chain goes away
	a := w.Post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "1", "symbol": "USDC"})
	if a.Status != http.StatusServiceUnavailable || a.Header.Get("Retry-After") == "" {
		t.Fatalf("answered %d %s (Retry-After %q), want 503 with Retry-After", a.Status, a.Raw, a.Header.Get("Retry-After"))
	}
	// A replica that never reached the endpoint is not ready, and answers 503 too.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	svc, err := txservice.New(txservice.Config{RPC: rpc.Endpoint{URL: dead.URL}, RPCAttempts: 1}, txservice.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Ready() == nil {
		t.Error("ready without the markets")
	}
	api := httptest.NewServer(svc.Handler())
	defer api.Close()
	w2 := &txroutes.World{API: api}
	if a := w2.Post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "1", "symbol": "USDC"}); a.Status != http.StatusServiceUnavailable {
		t.Fatalf("before the markets: %d %s", a.Status, a.Raw)
	}
}
