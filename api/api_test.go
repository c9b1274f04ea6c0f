package api_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tidemark/tidemark/api"
)

func mustLoad(tb testing.TB) *openapi3.T {
	tb.Helper()
	doc, err := api.Load()
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return doc
}

func TestLoadValidates(t *testing.T) {
	doc := mustLoad(t)
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	if doc.Info.Title != "tidemark" || doc.Info.Version != "1.0.0" {
		t.Errorf("info = %q %q, want tidemark 1.0.0", doc.Info.Title, doc.Info.Version)
	}
	var tags []string
	for _, tag := range doc.Tags {
		tags = append(tags, tag.Name)
		if tag.Description == "" {
			t.Errorf("tag %s has no description", tag.Name)
		}
	}
	want := []string{"Market", "User", "Authority", "Stats", "AMM", "Notifications", "WebSocket", "Transactions"}
	if !slices.Equal(tags, want) {
		t.Errorf("tags = %v, want %v", tags, want)
	}
}

func TestJSONIsTheSameDocument(t *testing.T) {
	fromYAML := mustLoad(t)
	j, err := api.JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	fromJSON, err := openapi3.NewLoader().LoadFromData(j)
	if err != nil {
		t.Fatalf("load JSON: %v", err)
	}
	if err := fromJSON.Validate(context.Background()); err != nil {
		t.Fatalf("validate JSON: %v", err)
	}
	if a, b := fromYAML.Paths.InMatchingOrder(), fromJSON.Paths.InMatchingOrder(); !slices.Equal(a, b) {
		t.Errorf("paths differ:\nyaml %v\njson %v", a, b)
	}
	for name, s := range fromYAML.Components.Schemas {
		js, ok := fromJSON.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s missing from JSON", name)
			continue
		}
		if !slices.Equal(s.Value.Required, js.Value.Required) {
			t.Errorf("schema %s: required differs between YAML and JSON", name)
		}
	}

	// Callers get copies: altering one must not change what the next caller sees.
	j[0] = 'X'
	again, err := api.JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if again[0] != '{' {
		t.Errorf("JSON() returned shared bytes")
	}
	y := api.YAML()
	y[0] = 'X'
	if api.YAML()[0] == 'X' {
		t.Errorf("YAML() returned shared bytes")
	}
}

type kind int

const (
	rolling kind = iota
	dated
	candles
	datedMonth // /{year}/{month}: one UTC calendar month
	orders     // token paging plus startTs, endTs, hasFill
	single     // one record, no paging
	snapshots  // days, no paging
)

var marketOperations = []struct {
	path string
	id   string
	kind kind
	list string // response schema of 200 application/json
}{
	{"/market/{symbol}/trades", "getMarketTrades", rolling, "FillList"},
	{"/market/{symbol}/trades/{year}/{month}/{day}", "getMarketTradesByDay", dated, "FillDatedList"},
	{"/market/{symbol}/predictions", "getMarketPredictions", rolling, "FillList"},
	{"/market/{symbol}/predictions/{year}/{month}/{day}", "getMarketPredictionsByDay", dated, "FillDatedList"},
	{"/market/{symbol}/candles/{resolution}", "getMarketCandles", candles, "CandleList"},
	{"/market/{symbol}/fundingRates", "getMarketFundingRates", rolling, "FundingRateList"},
	{"/market/{symbol}/fundingRates/{year}/{month}/{day}", "getMarketFundingRatesByDay", dated, "FundingRateDatedList"},
	{"/market/{symbol}/insuranceFund", "getMarketInsuranceFund", rolling, "InsuranceFundList"},
	{"/market/{symbol}/insuranceFund/{year}/{month}/{day}", "getMarketInsuranceFundByDay", dated, "InsuranceFundDatedList"},
	{"/market/{symbol}/insuranceFundStake", "getMarketInsuranceFundStake", rolling, "IFStakeList"},
	{"/market/{symbol}/insuranceFundStake/{year}/{month}/{day}", "getMarketInsuranceFundStakeByDay", dated, "IFStakeDatedList"},
	{"/market/{symbol}/swaps", "getMarketSwaps", rolling, "SwapList"},
	{"/market/{symbol}/swaps/{year}/{month}/{day}", "getMarketSwapsByDay", dated, "SwapDatedList"},
	{"/market/{symbol}/deposits", "getMarketDeposits", rolling, "DepositList"},
	{"/market/{symbol}/deposits/{year}/{month}/{day}", "getMarketDepositsByDay", dated, "DepositDatedList"},
	{"/market/{symbol}/rewards", "getMarketRewards", rolling, "DepositList"},
	{"/market/{symbol}/rewards/{year}/{month}/{day}", "getMarketRewardsByDay", dated, "DepositDatedList"},
}

// userOperations are the User group's operations. notFound marks the ones with a path value that can be
// unknown (a symbol, or the order of getUserOrder): only they document 404.
var userOperations = []struct {
	path     string
	id       string
	kind     kind
	list     string // response schema of 200 application/json
	notFound bool
}{
	{"/user/{accountId}/trades", "getUserTrades", rolling, "UserFillList", false},
	{"/user/{accountId}/trades/{symbol}", "getUserTradesBySymbol", rolling, "UserFillList", true},
	{"/user/{accountId}/trades/{year}/{month}", "getUserTradesByMonth", datedMonth, "FillDatedList", false},
	{"/user/{accountId}/predictions", "getUserPredictions", rolling, "UserFillList", false},
	{"/user/{accountId}/predictions/{symbol}", "getUserPredictionsBySymbol", rolling, "UserFillList", true},
	{"/user/{accountId}/predictions/{year}/{month}", "getUserPredictionsByMonth", datedMonth, "FillDatedList", false},
	{"/user/{accountId}/swaps", "getUserSwaps", rolling, "SwapList", false},
	{"/user/{accountId}/swaps/{year}/{month}", "getUserSwapsByMonth", datedMonth, "SwapDatedList", false},
	{"/user/{accountId}/deposits", "getUserDeposits", rolling, "DepositList", false},
	{"/user/{accountId}/deposits/{year}/{month}", "getUserDepositsByMonth", datedMonth, "DepositDatedList", false},
	{"/user/{accountId}/rewards", "getUserRewards", rolling, "DepositList", false},
	{"/user/{accountId}/rewards/{year}/{month}", "getUserRewardsByMonth", datedMonth, "DepositDatedList", false},
	{"/user/{accountId}/settlePnl", "getUserSettlePnl", rolling, "SettlePnlList", false},
	{"/user/{accountId}/settlePnl/{year}/{month}", "getUserSettlePnlByMonth", datedMonth, "SettlePnlDatedList", false},
	{"/user/{accountId}/fundingPayments", "getUserFundingPayments", rolling, "FundingPaymentList", false},
	{"/user/{accountId}/fundingPayments/{year}/{month}", "getUserFundingPaymentsByMonth", datedMonth, "FundingPaymentDatedList", false},
	{"/user/{accountId}/liquidations", "getUserLiquidations", rolling, "LiquidationList", false},
	{"/user/{accountId}/liquidations/{year}/{month}", "getUserLiquidationsByMonth", datedMonth, "LiquidationDatedList", false},
	{"/user/{accountId}/lp", "getUserLP", rolling, "PerpLPList", false},
	{"/user/{accountId}/lp/{year}/{month}", "getUserLPByMonth", datedMonth, "PerpLPDatedList", false},
	{"/user/{accountId}/positions", "getUserPositions", rolling, "PositionList", false},
	{"/user/{accountId}/orders/{marketFilter}", "getUserOrders", orders, "OrderList", false},
	{"/user/{accountId}/orders/{marketFilter}/{symbol}", "getUserOrdersBySymbol", orders, "OrderList", true},
	{"/user/{accountId}/orders/id/{orderId}", "getUserOrder", single, "OrderRecord", true},
	{"/user/{accountId}/orders/{orderId}/actions", "getUserOrderActions", rolling, "OrderActionList", false},
	{"/user/{accountId}/snapshots/trading", "getUserTradingSnapshots", snapshots, "TradingSnapshots", false},
	{"/user/{accountId}/snapshots/earn", "getUserEarnSnapshots", snapshots, "EarnSnapshots", false},
	{"/user/{accountId}/snapshots/vaults", "getUserVaultSnapshots", snapshots, "VaultSnapshots", false},
}

// notifyOperations are the Notifications group's operations, every one behind the signed-request
// headers; notFound marks those naming a notification or a device the wallet may not have.
var notifyOperations = []struct {
	path, method, id, schema string
	body                     string // request body schema, "" for none
	notFound                 bool
}{
	{"/notifications", http.MethodGet, "getNotifications", "NotificationList", "", false},
	{"/notifications/{notificationId}/read", http.MethodPut, "markNotificationRead", "NotificationRecord", "", true},
	{"/notifications/preferences", http.MethodGet, "getNotificationPreferences", "NotificationPreferences", "", false},
	{"/notifications/preferences", http.MethodPut, "setNotificationPreferences", "NotificationPreferences", "NotificationPreferencesBody", false},
	{"/notifications/devices", http.MethodGet, "getNotificationDevices", "NotificationDevices", "", false},
	{"/notifications/devices", http.MethodPost, "registerNotificationDevice", "NotificationDeviceRecord", "NotificationDeviceRegistration", false},
	{"/notifications/devices/{deviceId}", http.MethodDelete, "deleteNotificationDevice", "NotifySuccess", "", true},
}

// TestNotificationsOperations: every operation of the group requires the three headers and documents
// the signed request's refusals, 401 in the envelope with error "Unauthorized".
func TestNotificationsOperations(t *testing.T) {
	doc := mustLoad(t)
	for _, tc := range notifyOperations {
		t.Run(tc.id, func(t *testing.T) {
			item, op := operationOf(t, doc, tc.method, tc.path, tc.id)
			checkDocumented(t, op, []string{"Notifications"})
			params := parameters(item, op)
			for _, h := range []string{"x-wallet-address", "x-signature", "x-signed-message"} {
				if p := params["header:"+h]; p == nil || !p.Required {
					t.Errorf("header %s not required", h)
				}
			}
			if r := op.Responses.Status(401); r == nil || r.Ref != "#/components/responses/NotifyUnauthorized" {
				t.Errorf("401 is not NotifyUnauthorized")
			}
			if r := op.Responses.Status(403); r == nil || r.Ref != "#/components/responses/NotifyForbidden" {
				t.Errorf("403 is not NotifyForbidden")
			}
			if tc.notFound != (op.Responses.Status(404) != nil) {
				t.Errorf("404 documented = %v, want %v", !tc.notFound, tc.notFound)
			}
			checkAnswer(t, op, 200, tc.schema)
			switch {
			case tc.body == "" && op.RequestBody != nil:
				t.Errorf("documents a request body")
			case tc.body != "":
				if op.RequestBody == nil || !op.RequestBody.Value.Required ||
					op.RequestBody.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/"+tc.body {
					t.Errorf("request body is not a required %s", tc.body)
				}
			}
		})
	}
	e := doc.Components.Schemas["NotifyAuthError"].Value
	if !slices.Equal(slices.Sorted(slices.Values(e.Required)), []string{"error", "message", "success"}) {
		t.Errorf("NotifyAuthError requires %v", e.Required)
	}
}

// ammPaths are the AMM group's operations: they document 400 and 500 only (the spec's two answers).
var ammPaths = []string{"/amm/position", "/amm/bidAskPrice", "/amm/oraclePrice", "/amm/spreads", "/amm/openInterest"}

// The set of documented paths is held to the mesh's registry in platform/mesh (TestRoutesAreDocumented:
// every route a deployable declares is documented, every documented path is routed), and each is
// proved served by the kit's contract walk: no list of paths is kept here.
func TestOpenAPIIsDocumented(t *testing.T) {
	op := mustLoad(t).Paths.Value("/openapi.json").Get
	if op == nil || op.OperationID != "getOpenAPI" {
		t.Errorf("GET /openapi.json missing or misnamed")
	}
}

// Requests reach the operation their path reads as, whatever the order of the overlapping order paths.
func TestUserRoutes(t *testing.T) {
	router, err := gorillamux.NewRouter(mustLoad(t))
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	const acct = "/user/4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"
	for url, want := range map[string]string{
		acct + "/trades":                   "getUserTrades",
		acct + "/trades/SOL-PERP":          "getUserTradesBySymbol",
		acct + "/trades/2024/05":           "getUserTradesByMonth",
		acct + "/orders/perp":              "getUserOrders",
		acct + "/orders/spot/SOL":          "getUserOrdersBySymbol",
		acct + "/orders/id/77":             "getUserOrder",
		acct + "/orders/77/actions":        "getUserOrderActions",
		acct + "/snapshots/trading?days=1": "getUserTradingSnapshots",
		acct + "/lp/2024/5":                "getUserLPByMonth",
	} {
		route, _, err := router.FindRoute(httptest.NewRequest(http.MethodGet, url, nil))
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			continue
		}
		if got := route.Operation.OperationID; got != want {
			t.Errorf("GET %s -> %s, want %s", url, got, want)
		}
	}
}

// The order paths share a prefix: the router must try the literal segments first, or an order id would be
// taken for a marketFilter and "actions" for a symbol.
func TestOrderPathsMatchInOrder(t *testing.T) {
	doc := mustLoad(t)
	order := doc.Paths.InMatchingOrder()
	pos := func(p string) int { return slices.Index(order, p) }
	generic := pos("/user/{accountId}/orders/{marketFilter}/{symbol}")
	for _, p := range []string{"/user/{accountId}/orders/id/{orderId}", "/user/{accountId}/orders/{orderId}/actions"} {
		if pos(p) < 0 || pos(p) > generic {
			t.Errorf("%s must match before /user/{accountId}/orders/{marketFilter}/{symbol}", p)
		}
	}
}

func TestMarketOperations(t *testing.T) {
	doc := mustLoad(t)
	camel := regexp.MustCompile(`^[a-z][a-zA-Z]+$`)
	for _, tc := range marketOperations {
		t.Run(tc.id, func(t *testing.T) {
			item, op := onlyGetOf(t, doc, tc.path, tc.id)
			if !camel.MatchString(op.OperationID) {
				t.Errorf("operationId %q is not camelCase", op.OperationID)
			}
			checkDocumented(t, op, []string{"Market"}, 400, 404, 500)
			ok := checkAnswer(t, op, 200, tc.list)
			checkCSV(t, ok, tc.kind == dated)

			params := parameters(item, op)
			if p := params["path:symbol"]; p == nil || !p.Required {
				t.Errorf("path parameter symbol missing")
			}
			switch tc.kind {
			case rolling:
				checkTokenPage(t, params)
			case dated:
				checkDated(t, params)
				checkRange(t, params["path:day"], 1, ptr(31))
			case candles:
				p := params["path:resolution"]
				if p == nil || !slices.Equal(p.Schema.Value.Enum, []any{"1", "5", "15", "60", "240", "D", "W", "M"}) {
					t.Errorf("resolution enum wrong")
				}
				checkRange(t, params["query:startTs"], 1668470400, nil)
				checkRange(t, params["query:endTs"], 1668470400, nil)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	doc := mustLoad(t)
	tests := []struct {
		path          string
		min, max, def float64
	}{
		{"/market/{symbol}/trades", 1, 50, 20},
		{"/market/{symbol}/fundingRates", 1, 750, 20},
		{"/market/{symbol}/candles/{resolution}", 1, 1000, 100},
	}
	for _, tc := range tests {
		p := doc.Paths.Value(tc.path).Get.Parameters.GetByInAndName("query", "limit")
		if p == nil {
			t.Errorf("%s: no limit", tc.path)
			continue
		}
		s := p.Schema.Value
		if !s.Type.Is("integer") || *s.Min != tc.min || *s.Max != tc.max || s.Default != tc.def {
			t.Errorf("%s: limit = %v..%v default %v, want %v..%v default %v",
				tc.path, *s.Min, *s.Max, s.Default, tc.min, tc.max, tc.def)
		}
	}
}

// Every operation documents 400, 500 and 503 (the AMM series 400 and 500 only); 404 only where a path value can be unknown (a symbol, the
// order of getUserOrder), on /openapi.json, which always had it, and on /params before its first blob.
func TestEveryOperationDocumentsErrors(t *testing.T) {
	doc := mustLoad(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if slices.Contains(ammPaths, path) {
				if codes := slices.Sorted(maps.Keys(op.Responses.Map())); !slices.Equal(codes, []string{"200", "400", "500"}) {
					t.Errorf("%s %s: responses %v, want 200, 400 and 500 only", method, path, codes)
				}
				continue
			}
			for _, code := range []int{400, 500, 503} {
				if op.Responses.Status(code) == nil {
					t.Errorf("%s %s: no %d response", method, path, code)
				}
			}
			wantNotFound := strings.Contains(path, "{symbol}") ||
				op.OperationID == "getOpenAPI" || op.OperationID == "getUserOrder" || op.OperationID == "getParams" ||
				op.OperationID == "markNotificationRead" || op.OperationID == "deleteNotificationDevice"
			if got := op.Responses.Status(404) != nil; got != wantNotFound {
				t.Errorf("%s %s: 404 documented = %v, want %v", method, path, got, wantNotFound)
			}
			r := op.Responses.Status(503)
			if r == nil {
				continue
			}
			if r.Ref != "#/components/responses/ServiceUnavailable" {
				t.Errorf("%s %s: 503 is not the ServiceUnavailable response", method, path)
			}
			h := r.Value.Headers["Retry-After"]
			if h == nil || !h.Value.Required || !h.Value.Schema.Value.Type.Is("integer") {
				t.Errorf("%s %s: 503 lacks a required integer Retry-After header", method, path)
			}
			if c := r.Value.Content.Get("application/json"); c == nil || c.Schema.Ref != "#/components/schemas/Error" {
				t.Errorf("%s %s: 503 does not use the Error schema", method, path)
			}
		}
	}
}

func TestUserOperations(t *testing.T) {
	doc := mustLoad(t)
	for _, tc := range userOperations {
		t.Run(tc.id, func(t *testing.T) {
			item, op := onlyGetOf(t, doc, tc.path, tc.id)
			codes := []int{400, 500, 503}
			if tc.notFound {
				codes = append(codes, 404)
			}
			checkDocumented(t, op, []string{"User"}, codes...)
			if tc.notFound != (op.Responses.Status(404) != nil) {
				t.Errorf("404 documented = %v, want %v", !tc.notFound, tc.notFound)
			}
			ok := checkAnswer(t, op, 200, tc.list)
			if list := doc.Components.Schemas[tc.list]; list != nil {
				if recs := list.Value.Properties["records"]; recs != nil &&
					(recs.Value.MaxItems == nil || *recs.Value.MaxItems != 20) {
					t.Errorf("%s: records must hold at most 20", tc.list)
				}
			}
			checkCSV(t, ok, tc.kind == datedMonth)
			if tc.kind == datedMonth && ok.Headers["Content-Disposition"] == nil {
				t.Errorf("dated path without the Content-Disposition header")
			}

			params := parameters(item, op)
			checkKey(t, params, "accountId")
			if p := params["path:symbol"]; (p != nil) != strings.Contains(tc.path, "{symbol}") {
				t.Errorf("path parameter symbol present = %v", p != nil)
			}
			if p := params["path:orderId"]; p != nil && p.Schema.Value.Pattern != "^[0-9]{1,20}$" {
				t.Errorf("orderId pattern = %q", p.Schema.Value.Pattern)
			}
			if params["query:limit"] != nil {
				t.Errorf("user endpoints take no limit")
			}
			switch tc.kind {
			case rolling:
				checkQuery(t, params, "page")
				checkTokenPage(t, params)
			case orders:
				checkQuery(t, params, "endTs", "hasFill", "page", "startTs")
				if p := params["path:marketFilter"]; p == nil || !slices.Equal(p.Schema.Value.Enum, []any{"perp", "spot", "prediction"}) {
					t.Errorf("marketFilter must be perp|spot|prediction")
				}
				checkRange(t, params["query:startTs"], 0, nil)
				checkRange(t, params["query:endTs"], 0, nil)
				for _, name := range []string{"query:startTs", "query:endTs"} {
					if p := params[name]; p != nil && p.Schema.Value.Format != "int64" {
						t.Errorf("%s: want int64", name)
					}
				}
				if p := params["query:hasFill"]; p == nil || !p.Schema.Value.Type.Is("boolean") || p.Required {
					t.Errorf("hasFill must be an optional boolean")
				}
			case datedMonth:
				checkQuery(t, params, "format", "page")
				checkDated(t, params)
				if params["path:day"] != nil {
					t.Errorf("user archives are monthly: no day")
				}
			case snapshots:
				checkQuery(t, params, "days")
				p := params["query:days"]
				checkRange(t, p, 1, ptr(100))
				if p != nil && p.Schema.Value.Default != float64(7) {
					t.Errorf("days default = %v, want 7", p.Schema.Value.Default)
				}
			default:
				checkQuery(t, params)
			}
		})
	}
}

// Snapshot series hold one entry per hour or day, null where the account has none; metrics may be null.
func TestSnapshotEntriesAreNullable(t *testing.T) {
	doc := mustLoad(t)
	for _, tc := range []struct{ list, item string }{
		{"TradingSnapshots", "TradingSnapshot"}, {"EarnSnapshots", "EarnSnapshot"}, {"VaultSnapshots", "VaultSnapshot"},
	} {
		s := doc.Components.Schemas[tc.list].Value
		arr := s.Properties["snapshots"].Value
		if arr.Items == nil || !arr.Items.Value.Nullable || len(arr.Items.Value.AllOf) != 1 ||
			arr.Items.Value.AllOf[0].Ref != "#/components/schemas/"+tc.item {
			t.Errorf("%s.snapshots: want nullable items of %s", tc.list, tc.item)
		}
		body := map[string]any{"success": true, "snapshots": []any{nil, nil}}
		if tc.list == "TradingSnapshots" {
			body["metrics"] = nil
		}
		if err := s.VisitJSON(body); err != nil {
			t.Errorf("%s rejects a series of nulls: %v", tc.list, err)
		}
	}
	if m := doc.Components.Schemas["TradingSnapshots"].Value.Properties["metrics"]; m == nil || !m.Value.Nullable {
		t.Errorf("TradingSnapshots.metrics must be nullable")
	}
}

// kin-openapi validates examples on load; this also pins that every record and envelope has one.
func TestSchemasHaveExamples(t *testing.T) {
	doc := mustLoad(t)
	for name, ref := range doc.Components.Schemas {
		s := ref.Value
		if s.Example == nil {
			if !strings.HasSuffix(name, "List") && !strings.HasSuffix(name, "Meta") && name != "Error" {
				t.Errorf("%s: no example", name)
			}
			continue
		}
		if err := s.VisitJSON(s.Example); err != nil {
			t.Errorf("%s: example does not match the schema: %v", name, err)
		}
	}
}

func checkRange(t *testing.T, p *openapi3.Parameter, minimum float64, maximum *float64) {
	t.Helper()
	if p == nil {
		t.Errorf("parameter missing")
		return
	}
	s := p.Schema.Value
	if !s.Type.Is("integer") || s.Min == nil || *s.Min != minimum ||
		(maximum == nil) != (s.Max == nil) || (maximum != nil && *s.Max != *maximum) {
		t.Errorf("parameter %s: want integer %v..%v", p.Name, minimum, maximum)
	}
}

func ptr(f float64) *float64 { return &f }

// Prefixed sub-record fields of the flat liquidation record (events.Liquidation).
var (
	liquidationIndexes = []string{
		"liquidatePerp_marketIndex", "liquidateSpot_assetMarketIndex", "liquidateSpot_liabilityMarketIndex",
		"liquidateBorrowForPerpPnl_perpMarketIndex", "liquidateBorrowForPerpPnl_liabilityMarketIndex",
		"liquidatePerpPnlForDeposit_perpMarketIndex", "liquidatePerpPnlForDeposit_assetMarketIndex",
		"perpBankruptcy_marketIndex", "spotBankruptcy_marketIndex",
	}
	liquidationIDs = []string{
		"liquidatePerp_fillRecordId", "liquidatePerp_userOrderId", "liquidatePerp_liquidatorOrderId",
	}
	liquidationAmounts = []string{
		"liquidatePerp_oraclePrice", "liquidatePerp_baseAssetAmount", "liquidatePerp_quoteAssetAmount",
		"liquidatePerp_lpShares", "liquidatePerp_liquidatorFee", "liquidatePerp_ifFee",
		"liquidateSpot_assetPrice", "liquidateSpot_assetTransfer", "liquidateSpot_liabilityPrice",
		"liquidateSpot_liabilityTransfer", "liquidateSpot_ifFee",
		"liquidateBorrowForPerpPnl_marketOraclePrice", "liquidateBorrowForPerpPnl_pnlTransfer",
		"liquidateBorrowForPerpPnl_liabilityPrice", "liquidateBorrowForPerpPnl_liabilityTransfer",
		"liquidatePerpPnlForDeposit_marketOraclePrice", "liquidatePerpPnlForDeposit_pnlTransfer",
		"liquidatePerpPnlForDeposit_assetPrice", "liquidatePerpPnlForDeposit_assetTransfer",
		"perpBankruptcy_pnl", "perpBankruptcy_ifPayment", "perpBankruptcy_clawbackUserPayment",
		"perpBankruptcy_cumulativeFundingRateDelta",
		"spotBankruptcy_borrowAmount", "spotBankruptcy_ifPayment", "spotBankruptcy_cumulativeDepositInterestDelta",
	}
	tradingAmounts = []string{
		"accountBalance", "unrealizedPnl", "cumulativeRealizedPnl", "unsettledPnl", "cumulativeSettledPnl",
		"cumulativeFunding", "cumulativeFeePaid", "cumulativeFeeRebate", "cumulativeTakerVolume",
		"cumulativeMakerVolume",
	}
	metricsAmounts = []string{
		"cumulativeRealizedPnl", "cumulativeMakerVolume", "cumulativeTakerVolume", "cumulativeFeePaid",
		"cumulativeFeeRebate",
	}
	earnAmounts = []string{
		"balance", "deposits", "withdrawals", "pnl", "interestBaseValue", "interestQuoteValue", "oraclePrice",
	}
)

// The record schemas are the contract other teams build against: pin their field sets exactly.
func TestRecordSchemas(t *testing.T) {
	common := []string{"ts", "txSig", "txSigIndex", "slot"}
	fillAmounts := []string{
		"fillerReward", "baseAssetAmountFilled", "quoteAssetAmountFilled", "takerFee", "makerRebate",
		"referrerReward", "quoteAssetAmountSurplus", "oraclePrice", "makerFee", "spotFulfillmentMethodFee",
		"takerOrderBaseAssetAmount", "takerOrderCumulativeBaseAssetAmountFilled",
		"takerOrderCumulativeQuoteAssetAmountFilled", "makerOrderBaseAssetAmount",
		"makerOrderCumulativeBaseAssetAmountFilled", "makerOrderCumulativeQuoteAssetAmountFilled",
	}
	tests := []struct {
		name     string
		required []string
		optional []string
		amounts  []string // integer amount strings
		nullable []string // properties that may be null
		strict   bool     // additionalProperties: false
	}{
		{
			name: "Fill",
			required: concat(common, []string{"marketIndex"}, fillAmounts, []string{
				"action", "actionExplanation", "marketType", "filler", "fillRecordId", "taker", "takerOrderId",
				"takerOrderDirection", "maker", "makerOrderId", "makerOrderDirection",
			}),
			optional: []string{
				"marketFilter", "user", "symbol", "bitFlags", "takerExistingQuoteEntryAmount",
				"takerExistingBaseAssetAmount", "makerExistingQuoteEntryAmount", "makerExistingBaseAssetAmount",
			},
			amounts: concat(fillAmounts, []string{
				"takerExistingQuoteEntryAmount", "takerExistingBaseAssetAmount",
				"makerExistingQuoteEntryAmount", "makerExistingBaseAssetAmount",
			}),
			strict: true,
		},
		{
			name: "FundingRate",
			required: concat(common, []string{
				"marketIndex", "recordId", "symbol", "fundingRate", "fundingRateLong", "fundingRateShort",
				"cumulativeFundingRateLong", "cumulativeFundingRateShort", "oraclePriceTwap", "markPriceTwap",
				"periodRevenue", "baseAssetAmountWithAmm", "baseAssetAmountWithUnsettledLp",
			}),
			amounts: []string{
				"fundingRate", "fundingRateLong", "fundingRateShort", "cumulativeFundingRateLong",
				"cumulativeFundingRateShort", "oraclePriceTwap", "markPriceTwap", "periodRevenue",
				"baseAssetAmountWithAmm", "baseAssetAmountWithUnsettledLp",
			},
			strict: true,
		},
		{
			name: "Candle",
			required: []string{
				"ts", "fillOpen", "fillHigh", "fillClose", "fillLow", "oracleOpen", "oracleHigh", "oracleClose",
				"oracleLow", "quoteVolume", "baseVolume",
			},
			strict: true,
		},
		{
			name: "InsuranceFund",
			required: concat(common, []string{
				"spotMarketIndex", "perpMarketIndex", "userIfFactor", "totalIfFactor", "symbol",
				"vaultAmountBefore", "insuranceVaultAmountBefore", "totalIfSharesBefore", "totalIfSharesAfter",
				"amount",
			}),
			amounts: []string{
				"vaultAmountBefore", "insuranceVaultAmountBefore", "totalIfSharesBefore", "totalIfSharesAfter", "amount",
			},
		},
		{
			name: "IFStake",
			required: concat(common, []string{
				"marketIndex", "amount", "userAuthority", "action", "ifSharesBefore", "userIfSharesBefore",
				"totalIfSharesBefore", "ifSharesAfter", "userIfSharesAfter", "totalIfSharesAfter",
				"insuranceVaultAmountBefore",
			}),
			optional: []string{"symbol"},
			amounts: []string{
				"amount", "ifSharesBefore", "userIfSharesBefore", "totalIfSharesBefore", "ifSharesAfter",
				"userIfSharesAfter", "totalIfSharesAfter", "insuranceVaultAmountBefore",
			},
			strict: true,
		},
		{
			name: "Swap",
			required: concat(common, []string{
				"user", "outMarketIndex", "inMarketIndex", "amountOut", "amountIn", "outOraclePrice",
				"inOraclePrice", "fee", "inSymbol", "outSymbol",
			}),
			optional: []string{"symbol"},
			amounts:  []string{"amountOut", "amountIn", "outOraclePrice", "inOraclePrice", "fee"},
			strict:   true,
		},
		{
			name: "Deposit",
			required: concat(common, []string{
				"amount", "oraclePrice", "marketDepositBalance", "marketWithdrawBalance",
				"marketCumulativeDepositInterest", "marketCumulativeBorrowInterest", "totalDepositsAfter",
				"totalWithdrawsAfter", "depositRecordId", "userAuthority", "user", "direction", "explanation",
				"marketIndex", "symbol",
			}),
			amounts: []string{
				"amount", "oraclePrice", "marketDepositBalance", "marketWithdrawBalance",
				"marketCumulativeDepositInterest", "marketCumulativeBorrowInterest", "totalDepositsAfter",
				"totalWithdrawsAfter",
			},
			strict: true,
		},
		{
			name: "FundingPayment",
			required: concat(common, []string{
				"userAuthority", "user", "marketIndex", "fundingPayment", "baseAssetAmount",
				"userLastCumulativeFunding", "ammCumulativeFundingLong", "ammCumulativeFundingShort",
			}),
			amounts: []string{
				"fundingPayment", "baseAssetAmount", "userLastCumulativeFunding", "ammCumulativeFundingLong",
				"ammCumulativeFundingShort",
			},
			strict: true,
		},
		{
			name: "SettlePnl",
			required: concat(common, []string{
				"user", "marketIndex", "pnl", "baseAssetAmount", "quoteAssetAmountAfter", "quoteEntryAmount",
				"settlePrice", "explanation",
			}),
			amounts: []string{"pnl", "baseAssetAmount", "quoteAssetAmountAfter", "quoteEntryAmount", "settlePrice"},
			strict:  true,
		},
		{
			name: "PerpLP",
			required: concat(common, []string{
				"user", "action", "marketIndex", "nShares", "deltaBaseAssetAmount", "deltaQuoteAssetAmount", "pnl",
			}),
			amounts: []string{"nShares", "deltaBaseAssetAmount", "deltaQuoteAssetAmount", "pnl"},
			strict:  true,
		},
		{
			// Every record carries every sub-record's fields, as the protocol's data API emits them.
			name: "Liquidation",
			required: concat(common, []string{
				"liquidationType", "user", "liquidator", "marginRequirement", "totalCollateral", "marginFreed",
				"liquidationId", "bankrupt", "canceledOrderIds", "bitFlags", "perpBankruptcy_clawbackUser",
			}, liquidationIndexes, liquidationIDs, liquidationAmounts),
			amounts:  concat([]string{"marginRequirement", "totalCollateral", "marginFreed"}, liquidationAmounts),
			nullable: []string{"perpBankruptcy_clawbackUser"},
			strict:   true,
		},
		{
			name: "Position",
			required: concat(common, []string{"marketIndex"}, fillAmounts, []string{
				"action", "actionExplanation", "marketType", "filler", "fillRecordId", "taker", "takerOrderId",
				"takerOrderDirection", "maker", "makerOrderId", "makerOrderDirection",
				"user", "userFee", "baseClosedForPnl", "userExistingBaseAssetAmount", "userExistingQuoteEntryAmount",
			}),
			optional: []string{
				"marketFilter", "symbol", "bitFlags", "takerExistingQuoteEntryAmount",
				"takerExistingBaseAssetAmount", "makerExistingQuoteEntryAmount", "makerExistingBaseAssetAmount",
			},
			amounts: concat(fillAmounts, []string{
				"takerExistingQuoteEntryAmount", "takerExistingBaseAssetAmount",
				"makerExistingQuoteEntryAmount", "makerExistingBaseAssetAmount",
				"userFee", "baseClosedForPnl", "userExistingBaseAssetAmount", "userExistingQuoteEntryAmount",
			}),
			strict: true,
		},
		{
			name:     "OrderAction",
			required: concat(common, []string{"action", "actionExplanation", "marketIndex", "marketType"}),
			optional: concat(fillAmounts, []string{
				"filler", "fillRecordId", "taker", "takerOrderId", "takerOrderDirection", "maker", "makerOrderId",
				"makerOrderDirection", "marketFilter", "user", "symbol", "bitFlags", "takerExistingQuoteEntryAmount",
				"takerExistingBaseAssetAmount", "makerExistingQuoteEntryAmount", "makerExistingBaseAssetAmount",
			}),
			amounts: concat(fillAmounts, []string{
				"takerExistingQuoteEntryAmount", "takerExistingBaseAssetAmount",
				"makerExistingQuoteEntryAmount", "makerExistingBaseAssetAmount",
			}),
			nullable: concat(fillAmounts, []string{
				"takerExistingQuoteEntryAmount", "takerExistingBaseAssetAmount",
				"makerExistingQuoteEntryAmount", "makerExistingBaseAssetAmount",
				"filler", "fillRecordId", "taker", "takerOrderId", "takerOrderDirection", "maker", "makerOrderId",
				"makerOrderDirection",
			}),
			strict: true,
		},
		{
			name: "Order",
			required: concat(common, []string{
				"user", "status", "marketType", "marketFilter", "orderId", "marketIndex", "symbol", "direction",
				"baseAssetAmount", "baseAssetAmountFilled", "quoteAssetAmountFilled", "lastUpdatedTs",
				"lastActionStatus", "lastActionExplanation", "cumulativeFee",
			}),
			optional: []string{
				"orderType", "userOrderId", "price", "quoteAssetAmount", "reduceOnly", "triggerPrice",
				"triggerCondition", "existingPositionDirection", "postOnly", "immediateOrCancel", "oraclePriceOffset",
				"auctionDuration", "auctionStartPrice", "auctionEndPrice", "maxTs",
			},
			amounts: []string{
				"baseAssetAmount", "baseAssetAmountFilled", "quoteAssetAmountFilled", "cumulativeFee", "price",
				"quoteAssetAmount", "triggerPrice", "oraclePriceOffset", "auctionStartPrice", "auctionEndPrice",
			},
			strict: true,
		},
		{
			name:     "TradingSnapshot",
			required: concat([]string{"ts"}, tradingAmounts),
			amounts:  tradingAmounts,
			strict:   true,
		},
		{
			name:     "TradingMetrics",
			required: metricsAmounts,
			amounts:  metricsAmounts,
			strict:   true,
		},
		{
			name:     "EarnSnapshot",
			required: []string{"ts", "assets"},
			strict:   true,
		},
		{
			name:     "EarnAsset",
			required: concat([]string{"marketIndex"}, earnAmounts),
			optional: []string{"rewards"},
			amounts:  concat(earnAmounts, []string{"rewards"}),
			strict:   true,
		},
		{
			name:     "VaultSnapshot",
			required: []string{"ts", "vault", "totalAccountValue", "totalAccountBaseValue", "marketIndex"},
			optional: []string{"netDeposits"},
			amounts:  []string{"totalAccountValue", "totalAccountBaseValue", "netDeposits"},
			strict:   true,
		},
	}
	doc := mustLoad(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := doc.Components.Schemas[tc.name]
			if ref == nil {
				t.Fatalf("schema %s missing", tc.name)
			}
			s := ref.Value
			if got, want := slices.Sorted(slices.Values(s.Required)), slices.Sorted(slices.Values(tc.required)); !slices.Equal(got, want) {
				t.Errorf("required:\n got %v\nwant %v", got, want)
			}
			var props []string
			for name := range s.Properties {
				props = append(props, name)
			}
			slices.Sort(props)
			if want := slices.Sorted(slices.Values(concat(tc.required, tc.optional))); !slices.Equal(props, want) {
				t.Errorf("properties:\n got %v\nwant %v", props, want)
			}
			strict := s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has
			if strict != tc.strict {
				t.Errorf("additionalProperties false = %v, want %v", strict, tc.strict)
			}
			for _, name := range tc.amounts {
				p := s.Properties[name].Value
				if !p.Type.Is("string") || p.Pattern != "^-?[0-9]+$" {
					t.Errorf("%s: want an integer amount string", name)
				}
			}
			for name, p := range s.Properties {
				if got, want := p.Value.Nullable, slices.Contains(tc.nullable, name); got != want {
					t.Errorf("%s: nullable = %v, want %v", name, got, want)
				}
			}
			if tc.name == "Liquidation" {
				for _, name := range liquidationIndexes {
					if p := s.Properties[name]; p == nil || !p.Value.Type.Is("integer") || p.Value.Min == nil || *p.Value.Min != 0 {
						t.Errorf("%s: want an integer >= 0", name)
					}
				}
				for _, name := range liquidationIDs {
					if p := s.Properties[name]; p == nil || p.Value.Pattern != "^[0-9]+$" {
						t.Errorf("%s: want a digit string", name)
					}
				}
				if f := s.Properties["bitFlags"].Value; !f.Type.Is("integer") || f.Min == nil || *f.Min != 0 || f.Max == nil || *f.Max != 255 {
					t.Errorf("bitFlags: want an integer 0..255 (a u8)")
				}
				ids := s.Properties["canceledOrderIds"].Value
				if !ids.Type.Is("array") || ids.Items.Value.Pattern != "^[0-9]+$" {
					t.Errorf("canceledOrderIds: want an array of digit strings")
				}
			}
			for _, name := range []string{"ts", "slot"} {
				if p, ok := s.Properties[name]; ok && (!p.Value.Type.Is("integer") || p.Value.Format != "int64") {
					t.Errorf("%s: want integer int64", name)
				}
			}
		})
	}
}

func TestEnvelopesAreStrict(t *testing.T) {
	doc := mustLoad(t)
	for name, ref := range doc.Components.Schemas {
		envelope := map[string][]string{
			"OrderRecord":      {"record", "success"},
			"TradingSnapshots": {"metrics", "snapshots", "success"},
			"EarnSnapshots":    {"snapshots", "success"},
			"VaultSnapshots":   {"snapshots", "success"},
		}
		if want, ok := envelope[name]; ok {
			s := ref.Value
			if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
				t.Errorf("%s: want additionalProperties false", name)
			}
			if got := slices.Sorted(slices.Values(s.Required)); !slices.Equal(got, want) {
				t.Errorf("%s: required = %v, want %v", name, got, want)
			}
			continue
		}
		if !strings.HasSuffix(name, "List") && !strings.HasSuffix(name, "Meta") && name != "Error" {
			continue
		}
		s := ref.Value
		if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			t.Errorf("%s: want additionalProperties false", name)
		}
		want := []string{"meta", "records", "success"}
		switch {
		case name == "CandleList":
			want = []string{"records", "success"}
		case strings.HasSuffix(name, "Meta"), name == "Error":
			continue
		}
		if got := slices.Sorted(slices.Values(s.Required)); !slices.Equal(got, want) {
			t.Errorf("%s: required = %v, want %v", name, got, want)
		}
	}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// statsOperations are the Stats group's operations and the public reads beside it. notFound marks the
// ones that answer 404 for a value of theirs (a symbol; /params before its first blob); tag is "" for
// the reads outside the tags.
var statsOperations = []struct {
	path     string
	id       string
	tag      string
	schema   string // response schema of 200 application/json
	notFound bool
}{
	{"/stats/markets", "getStatsMarkets", "Stats", "MarketSummaryList", false},
	{"/stats/markets/prices", "getStatsMarketPrices", "Stats", "PriceChangeList", false},
	{"/stats/markets/volume", "getStatsMarketVolumeRange", "Stats", "MarketVolumes", false},
	{"/stats/markets/volume/{window}", "getStatsMarketVolume", "Stats", "MarketVolumes", false},
	{"/stats/fundingRates", "getStatsFundingRates", "Stats", "FundingRateAveragesList", false},
	{"/stats/liquidations", "getStatsLiquidations", "Stats", "StatsLiquidations", false},
	{"/stats/bankruptcies", "getStatsBankruptcies", "Stats", "StatsBankruptcies", false},
	{"/stats/insuranceFundSwaps", "getStatsInsuranceFundSwaps", "Stats", "SwapList", false},
	{"/stats/{symbol}/rateHistory/{kind}", "getStatsRateHistory", "Stats", "RateHistory", true},
	{"/stats/vaults", "getStatsVaults", "Stats", "VaultStatsList", false},
	{"/stats/insuranceFund", "getStatsInsuranceFund", "Stats", "InsuranceFundStatsList", false},
	{"/stats/leaderboard", "getStatsLeaderboard", "Stats", "Leaderboard", false},
	{"/stats/leaderboard/{authority}", "getStatsLeaderboardStanding", "Stats", "LeaderboardStanding", false},
	{"/params", "getParams", "", "Params", true},
	{"/vaults", "getVaults", "", "VaultConfigList", false},
	{"/external/aggregator/contracts", "getAggregatorContracts", "", "AggregatorContracts", false},
}

func TestStatsOperations(t *testing.T) {
	doc := mustLoad(t)
	for _, tc := range statsOperations {
		t.Run(tc.id, func(t *testing.T) {
			_, op := onlyGetOf(t, doc, tc.path, tc.id)
			var wantTags []string
			if tc.tag != "" {
				wantTags = []string{tc.tag}
			}
			checkDocumented(t, op, wantTags)
			if (op.Responses.Status(404) != nil) != tc.notFound {
				t.Errorf("404 documented = %v, want %v", op.Responses.Status(404) != nil, tc.notFound)
			}
			checkAnswer(t, op, 200, tc.schema)
		})
	}
	// The public reads sit behind a one-minute cache, and say so.
	for _, path := range []string{"/params", "/vaults"} {
		h := doc.Paths.Value(path).Get.Responses.Status(200).Value.Headers["Cache-Control"]
		if h == nil || !h.Value.Required || !slices.Equal(h.Value.Schema.Value.Enum, []any{"public, max-age=60"}) {
			t.Errorf("%s: 200 does not document Cache-Control public, max-age=60", path)
		}
	}
	// The leaderboard's limits are the reference's: 100 a page by default.
	lim := doc.Paths.Value("/stats/leaderboard").Get.Parameters.GetByInAndName("query", "limit").Schema.Value
	if *lim.Min != 1 || *lim.Max != 1000 || lim.Default != float64(100) {
		t.Errorf("leaderboard limit = %v..%v default %v", *lim.Min, *lim.Max, lim.Default)
	}
	// The aggregator's entries: contract_index a number, every other field a string.
	entry := doc.Components.Schemas["DerivativeContract"].Value
	for name, p := range entry.Properties {
		want := "string"
		if name == "contract_index" {
			want = "number"
		}
		if !p.Value.Type.Is(want) {
			t.Errorf("DerivativeContract.%s: want %s", name, want)
		}
	}
	if len(entry.Properties) != 20 || len(entry.Required) != 20 {
		t.Errorf("DerivativeContract: %d fields, %d required, want the spec's 20", len(entry.Properties), len(entry.Required))
	}
}

// checkDocumented asserts what every documented operation has: its tags, a summary and a description
// worth reading, and each of errorCodes answered with the Error schema.
func checkDocumented(t *testing.T, op *openapi3.Operation, tags []string, errorCodes ...int) {
	t.Helper()
	if !slices.Equal(op.Tags, tags) {
		t.Errorf("tags = %v, want %v", op.Tags, tags)
	}
	if op.Summary == "" || len(op.Description) < 80 {
		t.Errorf("summary/description too thin")
	}
	for _, code := range errorCodes {
		r := op.Responses.Status(code)
		if r == nil || r.Value.Content.Get("application/json") == nil ||
			r.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/Error" {
			t.Errorf("response %d does not use the Error schema", code)
		}
	}
}

// operationOf is the method operation of path in doc, and its path item; it fails the test unless the
// document has it, under operationId id.
func operationOf(t *testing.T, doc *openapi3.T, method, path, id string) (*openapi3.PathItem, *openapi3.Operation) {
	t.Helper()
	item := doc.Paths.Value(path)
	if item == nil {
		t.Fatalf("path %s missing", path)
	}
	op := item.GetOperation(method)
	if op == nil || op.OperationID != id {
		t.Fatalf("%s %s: operation missing or not %s", method, path, id)
	}
	return item, op
}

// onlyGetOf is operationOf the GET of path, which must be its only operation.
func onlyGetOf(t *testing.T, doc *openapi3.T, path, id string) (*openapi3.PathItem, *openapi3.Operation) {
	t.Helper()
	item, op := operationOf(t, doc, http.MethodGet, path, id)
	if len(item.Operations()) != 1 {
		t.Errorf("want exactly a GET operation, not %v", slices.Sorted(maps.Keys(item.Operations())))
	}
	return item, op
}

// parameters are the parameters of op and of its path item, by "in:name" ("query:page").
func parameters(item *openapi3.PathItem, op *openapi3.Operation) map[string]*openapi3.Parameter {
	params := map[string]*openapi3.Parameter{}
	for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
		params[p.Value.In+":"+p.Value.Name] = p.Value
	}
	return params
}

// checkQuery fails the test unless the query parameters among params are named want, in order.
func checkQuery(t *testing.T, params map[string]*openapi3.Parameter, want ...string) {
	t.Helper()
	var got []string
	for key, p := range params {
		if p.In == "query" {
			got = append(got, strings.TrimPrefix(key, "query:"))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("query parameters = %v, want %v", got, want)
	}
}

// checkAnswer fails the test unless op answers status with application/json of the components'
// schema, and returns that answer.
func checkAnswer(t *testing.T, op *openapi3.Operation, status int, schema string) *openapi3.Response {
	t.Helper()
	r := op.Responses.Status(status)
	if r == nil {
		t.Fatalf("no %d response", status)
	}
	if js := r.Value.Content.Get("application/json"); js == nil || js.Schema.Ref != "#/components/schemas/"+schema {
		t.Errorf("%d application/json schema is not %s", status, schema)
	}
	return r.Value
}

// checkCSV fails the test unless answer offers text/csv exactly when dated.
func checkCSV(t *testing.T, answer *openapi3.Response, dated bool) {
	t.Helper()
	if csv := answer.Content.Get("text/csv"); (csv != nil) != dated {
		t.Errorf("text/csv content present = %v, want only on dated paths", csv != nil)
	}
}

// checkKey fails the test unless the path parameter name is a required public key in base58.
func checkKey(t *testing.T, params map[string]*openapi3.Parameter, name string) {
	t.Helper()
	if p := params["path:"+name]; p == nil || !p.Required || p.Schema.Value.Pattern != "^[1-9A-HJ-NP-Za-km-z]{32,44}$" {
		t.Errorf("path parameter %s missing or without the base58 pattern", name)
	}
}

// checkTokenPage fails the test unless params page by a token: a string.
func checkTokenPage(t *testing.T, params map[string]*openapi3.Parameter) {
	t.Helper()
	if p := params["query:page"]; p == nil || !p.Schema.Value.Type.Is("string") {
		t.Errorf("rolling page must be a string token")
	}
}

// checkDated fails the test unless params are those of a dated archive: a page number from 1 and a
// format of json or csv in the query, a year from 2022 and a month from 1 to 12 in the path.
func checkDated(t *testing.T, params map[string]*openapi3.Parameter) {
	t.Helper()
	if p := params["query:page"]; p == nil || !p.Schema.Value.Type.Is("integer") ||
		p.Schema.Value.Min == nil || *p.Schema.Value.Min != 1 {
		t.Errorf("dated page must be an integer >= 1")
	}
	if p := params["query:format"]; p == nil || !slices.Equal(p.Schema.Value.Enum, []any{"json", "csv"}) {
		t.Errorf("format must be json|csv")
	}
	checkRange(t, params["path:year"], 2022, nil)
	checkRange(t, params["path:month"], 1, ptr(12))
}
