package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// txOperations are the Transactions group's operations: POSTs of a required JSON body, BETA.
var txOperations = []struct {
	path, id, body, answer string
}{
	{"/tx/deposit", "createDepositTransaction", "TxDepositRequest", "TxBuilt"},
	{"/tx/withdraw", "createWithdrawTransaction", "TxDepositRequest", "TxBuilt"},
	{"/tx/order/place", "createPlaceOrderTransaction", "TxOrderRequest", "TxBuilt"},
	{"/tx/order/cancel", "createCancelOrdersTransaction", "TxCancelRequest", "TxBuilt"},
	{"/tx/settlePnl", "createSettlePnlTransaction", "TxSettleRequest", "TxBuilt"},
	{"/tx/builder/init", "createBuilderInitTransaction", "TxBuilderInitRequest", "TxBuilt"},
	{"/tx/builder/approve", "createBuilderApproveTransaction", "TxBuilderApproveRequest", "TxBuilt"},
	{"/tx/execute", "executeTransaction", "TxExecuteRequest", "TxExecuted"},
}

func TestTransactionsOperations(t *testing.T) {
	doc := mustLoad(t)
	for _, tc := range txOperations {
		t.Run(tc.id, func(t *testing.T) {
			item, op := operationOf(t, doc, http.MethodPost, tc.path, tc.id)
			if len(item.Operations()) != 1 {
				t.Errorf("want a POST only")
			}
			checkDocumented(t, op, []string{"Transactions"}, 500, 503)
			if !strings.HasPrefix(op.Description, "Currently in BETA, for test purposes only.") {
				t.Errorf("the description does not say BETA, for test purposes only")
			}
			body := op.RequestBody
			if body == nil || !body.Value.Required || body.Value.Content.Get("application/json") == nil ||
				body.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/"+tc.body {
				t.Errorf("the request body must be a required %s", tc.body)
			}
			if c := op.Responses.Status(200).Value.Content.Get("application/json"); c == nil ||
				c.Schema.Ref != "#/components/schemas/"+tc.answer {
				t.Errorf("200 is not a %s", tc.answer)
			}
			if r := op.Responses.Status(400); r == nil || r.Ref != "#/components/responses/TxBadRequest" {
				t.Errorf("400 is not TxBadRequest")
			}
		})
	}
}

// The request bodies are what services/tx parses: strict, with its required properties, enums and
// ranges, and the builders simulating by default where execute does not.
func TestTransactionsBodies(t *testing.T) {
	schemas := mustLoad(t).Components.Schemas
	for _, tc := range []struct {
		name     string
		required []string
		simulate any
	}{
		{"TxDepositRequest", []string{"accountId", "amount", "symbol"}, true},
		{"TxOrderRequest", []string{"accountId", "amount", "direction", "orderType", "symbol"}, true},
		{"TxCancelRequest", []string{"accountId"}, true},
		{"TxSettleRequest", []string{"accountId"}, true},
		{"TxBuilderInitRequest", []string{"builderId"}, true},
		{"TxBuilderApproveRequest", []string{"authorityId", "builderId", "maxFeeTenthBps"}, true},
		{"TxExecuteRequest", []string{"signedTx"}, false},
	} {
		s := schemas[tc.name].Value
		if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			t.Errorf("%s must refuse extra properties", tc.name)
		}
		if got := slices.Sorted(slices.Values(s.Required)); !slices.Equal(got, tc.required) {
			t.Errorf("%s required = %v, want %v", tc.name, got, tc.required)
		}
		if p := s.Properties["simulate"]; p == nil || !p.Value.Type.Is("boolean") || p.Value.Default != tc.simulate {
			t.Errorf("%s: simulate must be a boolean defaulting to %v", tc.name, tc.simulate)
		}
	}
	order := schemas["TxOrderRequest"].Value.Properties
	for name, want := range map[string][]any{"direction": {"long", "short"}, "orderType": {"market", "limit"}, "marginMode": {"cross", "isolated"}} {
		if got := order[name].Value.Enum; !slices.Equal(got, want) {
			t.Errorf("%s enum = %v, want %v", name, got, want)
		}
	}
	if b := order["builderParams"].Value; b.AdditionalProperties.Has == nil || *b.AdditionalProperties.Has {
		t.Errorf("builderParams must refuse extra properties")
	}
	approve := schemas["TxBuilderApproveRequest"].Value.Properties["numOrders"].Value
	if !approve.Type.Is("integer") || *approve.Min != 1 || *approve.Max != 128 || approve.Default != float64(16) {
		t.Errorf("numOrders must be an integer 1..128 defaulting to 16")
	}
	ids := schemas["TxCancelRequest"].Value.Properties["orderIds"].Value
	if ids.MaxItems == nil || *ids.MaxItems != 32 || !ids.Items.Value.Type.Is("integer") || *ids.Items.Value.Max != 4294967295 {
		t.Errorf("orderIds must be at most 32 u32s")
	}
	if s := schemas["TxSettleRequest"].Value.Properties["symbols"].Value; s.MinItems != 1 {
		t.Errorf("symbols must have at least one item")
	}
	// Amounts and prices are decimal strings, numbers accepted too.
	dec := schemas["TxDecimal"].Value
	for _, v := range []any{"100.50", float64(2), ".5"} {
		if err := dec.VisitJSON(v); err != nil {
			t.Errorf("TxDecimal refuses %v: %v", v, err)
		}
	}
	for _, v := range []any{"-1", "1e3", float64(0), true} {
		if err := dec.VisitJSON(v); err == nil {
			t.Errorf("TxDecimal accepts %v", v)
		}
	}
	e := schemas["TxError"].Value
	for _, name := range []string{"error", "code", "name", "details", "logs"} {
		if e.Properties[name] == nil || slices.Contains(e.Required, name) {
			t.Errorf("TxError.%s must be an optional property", name)
		}
	}
}
