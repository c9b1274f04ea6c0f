package api_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

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
	want := []string{"Market", "User", "Authority", "Stats", "AMM", "Notifications", "WebSocket"}
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

func TestPathSetIsMarketAndOpenAPIOnly(t *testing.T) {
	doc := mustLoad(t)
	want := []string{"/openapi.json"}
	for _, op := range marketOperations {
		want = append(want, op.path)
	}
	slices.Sort(want)
	got := slices.Sorted(func(yield func(string) bool) {
		for p := range doc.Paths.Map() {
			if !yield(p) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Errorf("paths:\n got %v\nwant %v", got, want)
	}
	op := doc.Paths.Value("/openapi.json").Get
	if op == nil || op.OperationID != "getOpenAPI" {
		t.Errorf("GET /openapi.json missing or misnamed")
	}
}

func TestMarketOperations(t *testing.T) {
	doc := mustLoad(t)
	camel := regexp.MustCompile(`^[a-z][a-zA-Z]+$`)
	for _, tc := range marketOperations {
		t.Run(tc.id, func(t *testing.T) {
			item := doc.Paths.Value(tc.path)
			if item == nil {
				t.Fatalf("path %s missing", tc.path)
			}
			if len(item.Operations()) != 1 || item.Get == nil {
				t.Fatalf("path %s: want exactly a GET operation", tc.path)
			}
			op := item.Get
			if op.OperationID != tc.id || !camel.MatchString(op.OperationID) {
				t.Errorf("operationId = %q, want %q", op.OperationID, tc.id)
			}
			if !slices.Equal(op.Tags, []string{"Market"}) {
				t.Errorf("tags = %v, want [Market]", op.Tags)
			}
			if op.Summary == "" || len(op.Description) < 80 {
				t.Errorf("summary/description too thin")
			}
			for _, code := range []int{400, 404, 500} {
				r := op.Responses.Status(code)
				if r == nil || r.Value.Content.Get("application/json") == nil ||
					r.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/Error" {
					t.Errorf("response %d does not use the Error schema", code)
				}
			}
			ok := op.Responses.Status(200)
			if ok == nil {
				t.Fatalf("no 200 response")
			}
			js := ok.Value.Content.Get("application/json")
			if js == nil || js.Schema.Ref != "#/components/schemas/"+tc.list {
				t.Errorf("200 application/json schema is not %s", tc.list)
			}
			csv := ok.Value.Content.Get("text/csv")
			if (csv != nil) != (tc.kind == dated) {
				t.Errorf("text/csv content present = %v, want only on dated paths", csv != nil)
			}

			params := map[string]*openapi3.Parameter{}
			for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				params[p.Value.In+":"+p.Value.Name] = p.Value
			}
			if p := params["path:symbol"]; p == nil || !p.Required {
				t.Errorf("path parameter symbol missing")
			}
			switch tc.kind {
			case rolling:
				if p := params["query:page"]; p == nil || !p.Schema.Value.Type.Is("string") {
					t.Errorf("rolling page must be a string token")
				}
			case dated:
				if p := params["query:page"]; p == nil || !p.Schema.Value.Type.Is("integer") ||
					p.Schema.Value.Min == nil || *p.Schema.Value.Min != 1 {
					t.Errorf("dated page must be an integer >= 1")
				}
				if p := params["query:format"]; p == nil || !slices.Equal(p.Schema.Value.Enum, []any{"json", "csv"}) {
					t.Errorf("format must be json|csv")
				}
				checkRange(t, params["path:year"], 2022, nil)
				checkRange(t, params["path:month"], 1, ptr(12))
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

func TestEveryOperationDocumentsErrors(t *testing.T) {
	doc := mustLoad(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, code := range []int{400, 404, 500} {
				if op.Responses.Status(code) == nil {
					t.Errorf("%s %s: no %d response", method, path, code)
				}
			}
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
