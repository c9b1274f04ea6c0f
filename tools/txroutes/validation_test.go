package txroutes_test

import (
	"net/http"
	"strings"
	"testing"

	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/txroutes"
)

// TestValidation: every refusal of the reference's, and the ones a demanding client expects, is a
// 400 whose message names what was wrong; nothing reaches the chain's simulation.
func TestValidation(t *testing.T) {
	w := txroutes.Start(t, txservice.Config{ComputeUnits: 200_000})
	u := w.User(t, 0)
	acct := u.PDA.String()
	nobody := "11111111111111111111111111111112" // a valid key that holds no User account
	tests := []struct {
		name, path string
		body       any
		want       string // the message starts with it
	}{
		{"deposit without amount", "/tx/deposit", map[string]any{"accountId": acct, "symbol": "USDC"}, "Missing required fields: accountId and amount"},
		{"deposit without symbol", "/tx/deposit", map[string]any{"accountId": acct, "amount": "1"}, "Missing required fields: accountId and amount"},
		{"deposit without account", "/tx/deposit", map[string]any{"amount": "1", "symbol": "USDC"}, "Missing required fields: accountId and amount"},
		{"deposit of an unknown symbol", "/tx/deposit", map[string]any{"accountId": acct, "amount": "1", "symbol": "DOGE"}, "Invalid symbol: DOGE"},
		{"deposit to a malformed key", "/tx/deposit", map[string]any{"accountId": "not-a-key", "amount": "1", "symbol": "USDC"}, "Invalid public key format for accountId"},
		{"deposit of zero", "/tx/deposit", map[string]any{"accountId": acct, "amount": "0", "symbol": "USDC"}, "Invalid amount: must be a positive number"},
		{"deposit of a negative amount", "/tx/deposit", map[string]any{"accountId": acct, "amount": "-5", "symbol": "USDC"}, "Invalid amount: must be a positive number"},
		{"deposit with too many decimals", "/tx/deposit", map[string]any{"accountId": acct, "amount": "1.0000001", "symbol": "USDC"}, "Invalid amount: must be a positive number with at most 6 decimals for USDC"},
		{"deposit of an exponent", "/tx/deposit", map[string]any{"accountId": acct, "amount": "1e3", "symbol": "USDC"}, "Invalid amount"},
		{"deposit past a u64", "/tx/deposit", map[string]any{"accountId": acct, "amount": "18446744073709.551616", "symbol": "USDC"}, "Invalid amount"},
		{"deposit to nobody's account", "/tx/deposit", map[string]any{"accountId": nobody, "amount": "1", "symbol": "USDC"}, "Unknown account: " + nobody},
		{"withdraw of an unknown symbol", "/tx/withdraw", map[string]any{"accountId": acct, "amount": "1", "symbol": "SOL-PERP"}, "Invalid symbol: SOL-PERP"},
		{"an unknown property", "/tx/deposit", map[string]any{"accountId": acct, "amount": "1", "symbol": "USDC", "memo": "x"}, `invalid JSON body: json: unknown field "memo"`},
		{"a property in another case", "/tx/withdraw", `{"accountId":"` + acct + `","Amount":"1","symbol":"USDC"}`, `invalid JSON body: unknown property "Amount" (property names are case-sensitive: "amount")`},
		{"a property twice", "/tx/withdraw", `{"accountId":"` + acct + `","amount":"1","amount":"2","symbol":"USDC"}`, `invalid JSON body: property "amount" appears twice`},
		{"a body over the limit", "/tx/deposit", `{"accountId":"` + strings.Repeat("a", 20<<10) + `"}`, "request body exceeds 16384 bytes"},
		{"no body", "/tx/deposit", "", "request body is empty"},
		{"not JSON", "/tx/deposit", "{", "invalid JSON body"},
		{"an array", "/tx/deposit", "[]", "invalid JSON body"},
		{"order without direction", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "amount": "1", "orderType": "market"}, "body must have required property 'direction'"},
		{"order with a bad direction", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "up", "amount": "1", "orderType": "market"}, "body/direction must be equal to one of the allowed values"},
		{"order with a bad type", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "stop"}, "body/orderType must be equal to one of the allowed values"},
		{"limit order without price", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "limit"}, "price is required for limit orders"},
		{"order in a spot symbol", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "USDC", "direction": "long", "amount": "1", "orderType": "market"}, "Invalid symbol: USDC"},
		{"order with too many decimals", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "0.0000000001", "orderType": "market"}, "Invalid amount"},
		{"order price with too many decimals", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "limit", "price": "1.0000001"}, "Invalid price"},
		{"order with a bad margin mode", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "market", "marginMode": "all"}, "body/marginMode must be equal to one of the allowed values"},
		{"order with zero leverage", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "market", "positionMaxLeverage": 0}, "positionMaxLeverage must be between 1 and 10000"},
		{"swift order", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "market", "useSwift": true}, "useSwift is not supported"},
		{"builder params with an extra property", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "market", "builderParams": map[string]any{"builderIdx": 0, "builderFeeTenthBps": 1, "x": 1}}, `invalid JSON body: json: unknown field "x"`},
		{"builder fee of zero", "/tx/order/place", map[string]any{"accountId": acct, "symbol": "SOL-PERP", "direction": "long", "amount": "1", "orderType": "market", "builderParams": map[string]any{"builderIdx": 0, "builderFeeTenthBps": 0}}, "builderParams.builderFeeTenthBps must be an integer from 1 to 65535"},
		{"cancel without account", "/tx/order/cancel", map[string]any{"orderIds": []int{1}}, "body must have required property 'accountId'"},
		{"cancel of a negative id", "/tx/order/cancel", map[string]any{"accountId": acct, "orderIds": []int{-1}}, "invalid JSON body"},
		{"cancel of too many ids", "/tx/order/cancel", map[string]any{"accountId": acct, "orderIds": make([]int, 33)}, "orderIds may list at most 32 orders"},
		{"settle of unknown symbols", "/tx/settlePnl", map[string]any{"accountId": acct, "symbols": []string{"SOL-PERP", " FOO-PERP ", "USDC"}}, "Invalid perp symbols: FOO-PERP, USDC"},
		{"settle of no symbols", "/tx/settlePnl", map[string]any{"accountId": acct, "symbols": []string{}}, "body/symbols must NOT have fewer than 1 items"},
		{"builder init without builder", "/tx/builder/init", map[string]any{}, "body must have required property 'builderId'"},
		{"builder init with a malformed key", "/tx/builder/init", map[string]any{"builderId": "0OIl"}, "Invalid public key format for builderId"},
		{"approve with a malformed authority", "/tx/builder/approve", map[string]any{"authorityId": "x", "builderId": u.Authority.String(), "maxFeeTenthBps": 5}, "Invalid public key format for authorityId"},
		{"approve with a fractional fee", "/tx/builder/approve", map[string]any{"authorityId": u.Authority.String(), "builderId": u.Authority.String(), "maxFeeTenthBps": 1.5}, "maxFeeTenthBps must be a positive integer"},
		{"approve with no fee", "/tx/builder/approve", map[string]any{"authorityId": u.Authority.String(), "builderId": u.Authority.String(), "maxFeeTenthBps": 0}, "maxFeeTenthBps must be a positive integer"},
		{"approve with too many orders", "/tx/builder/approve", map[string]any{"authorityId": u.Authority.String(), "builderId": u.Authority.String(), "maxFeeTenthBps": 5, "numOrders": 129}, "numOrders must be an integer between 1 and 128"},
		{"execute without a transaction", "/tx/execute", map[string]any{}, "Missing signedTransaction in request body"},
		{"execute of an empty transaction", "/tx/execute", map[string]any{"signedTx": ""}, "Missing signedTransaction in request body"},
		{"execute of no base64", "/tx/execute", map[string]any{"signedTx": "%%%"}, "signedTx must be the base64 of a signed transaction"},
		{"execute of no transaction", "/tx/execute", map[string]any{"signedTx": "AQID"}, "signedTx is no transaction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := w.Post(t, tt.path, tt.body)
			msg, _ := a.Body["message"].(string)
			if a.Status != http.StatusBadRequest || a.Body["success"] != false || !strings.HasPrefix(msg, tt.want) {
				t.Fatalf("answered %d %s, want 400 with a message starting %q", a.Status, a.Raw, tt.want)
			}
		})
	}
	if n := len(w.Chain.Sent()); n != 0 {
		t.Errorf("%d transactions reached the chain", n)
	}
}
