package main

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/solana"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/txroutes"
)

// TestSignsAndSubmits: a deposit the /tx route built, piped in as its answer, is signed with the
// simulated wallet's key and submitted through /tx/execute, which the chain receives; the same
// from base64, printed instead of sent; and the refusals: a key that is no signer, input that is no
// transaction, a route's refusal piped in.
func TestSignsAndSubmits(t *testing.T) {
	w := txroutes.Start(t, txservice.Config{})
	u := w.Funded(t, 0)
	answer := w.Post(t, "/tx/deposit", map[string]any{"accountId": u.PDA.String(), "amount": "2", "symbol": "USDC", "simulate": false})
	unsigned := answer.Transaction(t)
	flags := []string{"-url", w.API.URL, "-seed", strconv.Itoa(txroutes.Seed), "-authorities", strconv.Itoa(txroutes.Authorities)}
	var other string // a wallet that is no signer of the deposit
	for _, o := range w.Chain.Users() {
		if o.Authority != u.Authority {
			other = o.Authority.String()
			break
		}
	}
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // the output holds it
		errs   string // the error holds it
	}{
		{"an answer on standard input", []string{"-wallet", u.Authority.String()}, string(answer.Raw), 0, `"txSig": "` + signedBy(t, unsigned, w, u.Authority.String()) + `"`, ""},
		{"base64 as the argument, simulated first", []string{"-wallet", u.Authority.String(), "-simulate", answer.Body["tx"].(string)}, "", 0, `"message": "Transaction executed successfully"`, ""},
		{"printed instead of sent", []string{"-wallet", u.Authority.String(), "-print", "-"}, answer.Body["tx"].(string), 0, "", ""},
		{"a key that is no signer", []string{"-wallet", other}, string(answer.Raw), 2, "", "not a signer"},
		{"no transaction", []string{"-wallet", u.Authority.String(), "AQID"}, "", 2, "", "the input is no transaction"},
		{"a refusal piped in", []string{"-wallet", u.Authority.String()}, `{"success":false,"message":"Invalid symbol: DOGE"}`, 2, "", "Invalid symbol: DOGE"},
		{"no key", nil, string(answer.Raw), 2, "", "give exactly one of -wallet, -key and -key-file"},
	}
	sent := len(w.Chain.Sent())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code, err := run(context.Background(), append(append([]string{}, flags...), tt.args...), strings.NewReader(tt.stdin), &stdout, &stderr, http.DefaultClient)
			if code != tt.code || (tt.errs == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.errs)) {
				t.Fatalf("code %d, err %v; want %d and an error holding %q (stderr %s)", code, err, tt.code, tt.errs, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Fatalf("output %s, want it to hold %s", stdout.String(), tt.stdout)
			}
		})
	}
	if n := len(w.Chain.Sent()) - sent; n != 2 {
		t.Fatalf("the chain received %d transactions, want the two sent", n)
	}
	got := w.Chain.Sent()[sent]
	signed, err := solana.ParseTransaction(got.Raw)
	if err != nil || signed.Verify() != nil {
		t.Fatalf("the chain received an unsigned or broken transaction: %v", err)
	}
}

// signedBy is tx's signature once signed by wallet's simulated key, tx itself left unsigned.
func signedBy(t *testing.T, tx *solana.Transaction, w *txroutes.World, wallet string) string {
	t.Helper()
	key, ok := w.Sim.WalletKey(wallet)
	if !ok {
		t.Fatalf("no key of %s", wallet)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c, err := solana.ParseTransaction(raw) // a copy: the test's transaction stays unsigned
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sign(key); err != nil {
		t.Fatal(err)
	}
	return c.Signature()
}
