package txroutes_test

import (
	"encoding/base64"
	"testing"

	"github.com/tidemark/tidemark/api/apitest"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/tx"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/txroutes"
)

// TestContract: every /tx operation answers a validated 2xx for the chain's users, and thousands of
// hostile requests, bodies included, get no server error.
func TestContract(t *testing.T) {
	w := txroutes.Start(t, txservice.Config{RPCAttempts: 1})
	users := w.Chain.Users()
	if len(users) < 4 {
		t.Fatalf("the chain has %d users, want 4 at least", len(users))
	}
	var accounts, wallets []string
	for _, u := range users[:4] {
		accounts = append(accounts, u.Address.String(), u.PDA.String())
		wallets = append(wallets, u.Authority.String())
	}
	walk := kittest.Walk{
		Handler:   w.Service.Handler(),
		Validator: apitest.New(t),
		Serves:    kittest.ServedUnder(txservice.Prefixes()...),
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
	// A deposit the service built, signed by its wallet, for the execute operation.
	u := w.Funded(t, 0)
	built := w.Post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "1", "symbol": "USDC", "simulate": false}).Transaction(t)
	key, ok := w.Sim.WalletKey(u.Authority.String())
	if !ok {
		t.Fatalf("the simulator has no key of wallet %s", u.Authority)
	}
	if err := built.Sign(key); err != nil {
		t.Fatal(err)
	}
	signed, err := built.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	walk.Bodies = map[string][]string{
		"executeTransaction": {`{"signedTx":"` + base64.StdEncoding.EncodeToString(signed) + `"}`},
	}
	walk.CheckContract(t, 2400, "/tx/")
}
