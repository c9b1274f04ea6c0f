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
)

// TestBuildSignExecute: a deposit built for a simulated subaccount is an unsigned v0 transaction
// its wallet pays for and signs; signed, /tx/execute forwards it and answers its signature, which
// the chain received; sent unsigned, it is refused before the chain sees it.
func TestBuildSignExecute(t *testing.T) {
	w := start(t, txservice.Config{PriorityFee: tx.DefaultPriorityFee})
	u := w.funded(t, 0)
	a := w.post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "12.5", "symbol": "USDC"})
	tx := a.transaction(t)
	if !strings.HasPrefix(a.body["message"].(string), "Deposit transaction created and simulated successfully for USDC.") {
		t.Errorf("message %q", a.body["message"])
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
	unsigned := w.post(t, "/tx/execute", map[string]any{"signedTx": a.body["tx"]})
	if unsigned.status != http.StatusBadRequest || !strings.Contains(unsigned.body["message"].(string), "signedTx is not signed") {
		t.Fatalf("unsigned: %d %s", unsigned.status, unsigned.raw)
	}
	key, ok := w.sim.WalletKey(u.Authority.String())
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
		e := w.post(t, "/tx/execute", map[string]any{"signedTx": base64.StdEncoding.EncodeToString(raw), "simulate": simulate})
		if e.status != http.StatusOK || e.body["txSig"] != tx.Signature() || e.body["message"] != "Transaction executed successfully" {
			t.Fatalf("execute (simulate %v): %d %s, want the signature %s", simulate, e.status, e.raw, tx.Signature())
		}
	}
	sent := w.chain.Sent()
	if len(sent) != 2 || sent[0].Signature != tx.Signature() {
		t.Fatalf("the chain received %d transactions", len(sent))
	}
}

// TestEveryRouteBuilds: each builder route answers a transaction for a simulated subaccount, with
// and without simulation, whose instructions are the protocol's after the compute budget.
func TestEveryRouteBuilds(t *testing.T) {
	w := start(t, txservice.Config{})
	u := w.funded(t, 1)
	acct := u.PDA.String()
	builder := w.funded(t, 2).Authority.String()
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
			a := w.post(t, tt.path, tt.body)
			tx := a.transaction(t)
			// The message says a simulation ran only when the client asked for one, whatever the
			// service simulated to size the compute budget.
			if simulated := strings.Contains(a.body["message"].(string), "created and simulated successfully"); simulated != simulate {
				t.Errorf("%s simulate %v: message %q", tt.path, simulate, a.body["message"])
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
	w := start(t, txservice.Config{RPC: rpc.Endpoint{Timeout: 500 * time.Millisecond}, RPCAttempts: 1})
	u := w.user(t, 0)
	w.rpc.Close() // the markets are read; the chain goes away
	a := w.post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "1", "symbol": "USDC"})
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
		t.Fatalf("answered %d %s (Retry-After %q), want 503 with Retry-After", a.status, a.raw, a.header.Get("Retry-After"))
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
	w2 := &world{api: api}
	if a := w2.post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "1", "symbol": "USDC"}); a.status != http.StatusServiceUnavailable {
		t.Fatalf("before the markets: %d %s", a.status, a.raw)
	}
}
