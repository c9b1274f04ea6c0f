package txroutes_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/solana"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/txroutes"
)

// TestSimulationErrors: a transaction the chain refuses is a 400 naming the program's error as the
// reference names it (code, name, message, a hint) when it is a program's error, and as the runtime
// reported it otherwise; without simulation the same request builds. (The mapping of the IDL's own
// errors is services/tx's unit test: the simulated chain fails no instruction the service lets through
// with one.)
func TestSimulationErrors(t *testing.T) {
	w := txroutes.Start(t, txservice.Config{})
	stranger := solana.PublicKey{7, 7, 7}.String() // a wallet with no account of the protocol
	tests := []struct {
		name, path string
		body       map[string]any
		code       float64
		errName    string
	}{
		{"a deposit from a wallet without the token account", "/tx/deposit",
			map[string]any{"accountId": w.Unfunded(t, "USDC").PDA.String(), "amount": "1", "symbol": "USDC"}, 3012, "AccountNotInitialized"},
		{"an approval paid by a wallet the chain does not know", "/tx/builder/approve",
			map[string]any{"authorityId": stranger, "builderId": w.Funded(t, 0).Authority.String(), "maxFeeTenthBps": 3}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := w.Post(t, tt.path, tt.body)
			runtime := tt.code == 0 && a.Body["code"] == nil && strings.Contains(a.Body["message"].(string), "AccountNotFound")
			program := tt.code != 0 && a.Body["code"] == tt.code && a.Body["name"] == tt.errName && a.Body["details"] != nil
			if a.Status != http.StatusBadRequest || a.Body["error"] == nil || !runtime && !program {
				t.Fatalf("answered %d %s, want 400 with error %v %s", a.Status, a.Raw, tt.code, tt.errName)
			}
			tt.body["simulate"] = false
			if a := w.Post(t, tt.path, tt.body); a.Status != http.StatusOK {
				t.Fatalf("without simulation: %d %s", a.Status, a.Raw)
			}
		})
	}
}
