package apitest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/api/apitest"
)

func validFill() map[string]any {
	return map[string]any{
		"ts": 1714521600, "txSig": "3xQfZcXhB7wP9uEyR1nT4kL6mV8sA2dG5jH", "txSigIndex": 1, "slot": 263000000,
		"marketIndex": 0, "fillerReward": "0", "baseAssetAmountFilled": "2000000000",
		"quoteAssetAmountFilled": "284000000", "takerFee": "142000", "makerRebate": "5680", "referrerReward": "0",
		"quoteAssetAmountSurplus": "0", "oraclePrice": "141990000", "makerFee": "-5680",
		"spotFulfillmentMethodFee": "0", "takerOrderBaseAssetAmount": "2000000000",
		"takerOrderCumulativeBaseAssetAmountFilled":  "2000000000",
		"takerOrderCumulativeQuoteAssetAmountFilled": "284000000", "makerOrderBaseAssetAmount": "5000000000",
		"makerOrderCumulativeBaseAssetAmountFilled":  "2000000000",
		"makerOrderCumulativeQuoteAssetAmountFilled": "284000000", "action": "fill",
		"actionExplanation": "orderFilledWithMatch", "marketType": "perp",
		"filler": "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", "fillRecordId": "1843211",
		"taker": "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T", "takerOrderId": "77", "takerOrderDirection": "long",
		"maker": "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU", "makerOrderId": "1204",
		"makerOrderDirection": "short", "marketFilter": "perp", "symbol": "SOL-PERP", "bitFlags": 0,
	}
}

func rollingBody(tb testing.TB, records ...map[string]any) []byte {
	tb.Helper()
	return mustJSON(tb, map[string]any{"success": true, "records": records, "meta": map[string]any{"nextPage": "eyJ0cyI6MX0.abc"}})
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	return b
}

func jsonHeader() http.Header {
	return http.Header{"Content-Type": {"application/json; charset=utf-8"}}
}

func csvHeader(name string) http.Header {
	return http.Header{
		"Content-Type":        {"text/csv; charset=utf-8"},
		"Content-Disposition": {`attachment; filename="` + name + `"`},
	}
}

func TestValidator(t *testing.T) {
	v := apitest.New(t)
	get := func(target string) *http.Request { return httptest.NewRequest(http.MethodGet, target, nil) }
	with := func(change func(map[string]any)) []byte {
		f := validFill()
		change(f)
		return rollingBody(t, f)
	}
	datedMeta := map[string]any{
		"records": 1, "totalRecords": 21, "currentPage": 1, "totalPages": 2, "nextPage": 2, "includesLatest": false,
	}
	const goodCSV = "\"ts\",\"txSig\",\"txSigIndex\",\"slot\"\n\"1714521600\",\"3xQf\",\"0\",\"263000000\"\n"

	tests := []struct {
		name    string
		req     *http.Request
		status  int
		header  http.Header
		body    []byte
		wantErr string // "" = must pass
	}{
		{
			name: "valid rolling fills", req: get("/market/SOL-PERP/trades?limit=5"),
			status: 200, header: jsonHeader(), body: rollingBody(t, validFill()),
		},
		{
			name: "last rolling page", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body: []byte(`{"success":true,"records":[],"meta":{"nextPage":null}}`),
		},
		{
			name: "fill against the AMM (no maker)", req: get("/market/SOL-PERP/trades"), status: 200,
			header: jsonHeader(), body: with(func(f map[string]any) {
				f["maker"], f["makerOrderId"], f["makerOrderDirection"] = "", "", ""
				f["actionExplanation"] = "orderFilledWithAmm"
			}),
		},
		{
			name: "null records", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body:    []byte(`{"success":true,"records":null,"meta":{"nextPage":null}}`),
			wantErr: `"/records": Value is not nullable`,
		},
		{
			name: "missing required field", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body:    with(func(f map[string]any) { delete(f, "takerFee") }),
			wantErr: `property "takerFee" is missing`,
		},
		{
			name: "stray field", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body:    with(func(f map[string]any) { f["price"] = "142000000" }),
			wantErr: `property "price" is unsupported`,
		},
		{
			name: "decimal amount string", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body:    with(func(f map[string]any) { f["baseAssetAmountFilled"] = "2.5" }),
			wantErr: "baseAssetAmountFilled",
		},
		{
			name: "amount as a number", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body:    with(func(f map[string]any) { f["takerFee"] = 142000 }),
			wantErr: "takerFee",
		},
		{
			name: "fractional ts", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body:    with(func(f map[string]any) { f["ts"] = 1714521600.5 }),
			wantErr: "ts",
		},
		{
			name: "unknown enum value", req: get("/market/SOL-PERP/trades"), status: 200, header: jsonHeader(),
			body:    with(func(f map[string]any) { f["takerOrderDirection"] = "Long" }),
			wantErr: "takerOrderDirection",
		},
		{
			name: "rolling meta without nextPage", req: get("/market/SOL-PERP/trades"), status: 200,
			header: jsonHeader(), body: []byte(`{"success":true,"records":[],"meta":{}}`),
			wantErr: "nextPage",
		},
		{
			name: "more records than limit allows", req: get("/market/SOL-PERP/trades"), status: 200,
			header: jsonHeader(), body: rollingBody(t, slices.Repeat([]map[string]any{validFill()}, 51)...),
			wantErr: "maximum number of items is 50",
		},
		{
			name: "valid dated page", req: get("/market/SOL-PERP/trades/2024/05/01?page=1"), status: 200,
			header: jsonHeader(),
			body:   mustJSON(t, map[string]any{"success": true, "records": []any{validFill()}, "meta": datedMeta}),
		},
		{
			name: "dated page with rolling meta", req: get("/market/SOL-PERP/trades/2024/5/1"), status: 200,
			header: jsonHeader(), body: rollingBody(t, validFill()),
			wantErr: `"/meta/nextPage": value must be an integer`,
		},
		{
			name: "dated csv", req: get("/market/SOL-PERP/trades/2024/5/1?format=csv"), status: 200,
			header: csvHeader("market-SOL-PERP-trades-2024-05-01.csv"), body: []byte(goodCSV),
		},
		{
			name: "dated csv header only", req: get("/market/SOL/deposits/2024/5/1?format=csv"), status: 200,
			header: csvHeader("market-SOL-deposits-2024-05-01.csv"), body: []byte("\"ts\",\"txSig\"\n"),
		},
		{
			name: "csv with unquoted fields", req: get("/market/SOL-PERP/trades/2024/5/1?format=csv"), status: 200,
			header: csvHeader("market-SOL-PERP-trades-2024-05-01.csv"), body: []byte("ts,txSig\n1714521600,3xQf\n"),
			wantErr: "regular expression",
		},
		{
			name: "ragged csv", req: get("/market/SOL-PERP/trades/2024/5/1?format=csv"), status: 200,
			header: csvHeader("market-SOL-PERP-trades-2024-05-01.csv"), body: []byte("\"ts\",\"txSig\"\n\"1\"\n"),
			wantErr: "wrong number of fields",
		},
		{
			name: "csv without attachment header", req: get("/market/SOL-PERP/trades/2024/5/1?format=csv"),
			status: 200, header: http.Header{"Content-Type": {"text/csv"}, "Content-Disposition": {"inline"}},
			body: []byte(goodCSV), wantErr: "Content-Disposition",
		},
		{
			name: "csv on a rolling path", req: get("/market/SOL-PERP/trades"), status: 200,
			header: csvHeader("x.csv"), body: []byte(goodCSV),
			wantErr: "text/csv",
		},
		{
			name: "candles without meta", req: get("/market/SOL-PERP/candles/15?startTs=1714521600&limit=2"),
			status: 200, header: jsonHeader(),
			body: []byte(`{"success":true,"records":[{"ts":1714521600,"fillOpen":1,"fillHigh":2,"fillClose":1.5,` +
				`"fillLow":1,"oracleOpen":1,"oracleHigh":2,"oracleClose":1.5,"oracleLow":1,"quoteVolume":10,"baseVolume":7}]}`),
		},
		{
			name: "candles with meta", req: get("/market/SOL-PERP/candles/D"), status: 200, header: jsonHeader(),
			body:    []byte(`{"success":true,"records":[],"meta":{"nextPage":null}}`),
			wantErr: `property "meta" is unsupported`,
		},
		{
			name: "error body", req: get("/market/SOL-PERP/trades?limit=0"), status: 400, header: jsonHeader(),
			body: []byte(`{"success":false,"message":"limit must be an integer between 1 and 50"}`),
		},
		{
			name: "not found body", req: get("/market/NOPE-PERP/fundingRates"), status: 404, header: jsonHeader(),
			body: []byte(`{"success":false,"message":"market not found"}`),
		},
		{
			name: "error body claiming success", req: get("/market/SOL-PERP/trades"), status: 500,
			header: jsonHeader(), body: []byte(`{"success":true,"message":"internal error"}`),
			wantErr: "success",
		},
		{
			name: "invalid request answered 200", req: get("/market/SOL-PERP/trades?limit=51"), status: 200,
			header: jsonHeader(), body: rollingBody(t, validFill()),
			wantErr: "must answer 4xx",
		},
		{
			name: "year before the archive answered 200", req: get("/market/SOL-PERP/trades/2021/12/31"),
			status: 200, header: jsonHeader(),
			body:    mustJSON(t, map[string]any{"success": true, "records": []any{}, "meta": datedMeta}),
			wantErr: "must answer 4xx",
		},
		{
			name: "undocumented status", req: get("/market/SOL-PERP/trades"), status: http.StatusTeapot,
			header: jsonHeader(), body: []byte(`{"success":false,"message":"teapot"}`),
			wantErr: "status is not supported",
		},
		{
			name: "route not in the document", req: get("/market/SOL-PERP/orderbook"), status: 200,
			header: jsonHeader(), body: []byte(`{}`),
			wantErr: "is not an operation of the openapi document",
		},
		{
			name: "method not in the document", req: httptest.NewRequest(http.MethodDelete, "/market/SOL-PERP/trades", nil),
			status: 200, header: jsonHeader(), body: []byte(`{}`),
			wantErr: "is not an operation of the openapi document",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Validate(tc.req, tc.status, tc.header, tc.body)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("want a pass, got: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("want a failure mentioning %q, got a pass", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("failure does not mention %q:\n%v", tc.wantErr, err)
			}
		})
	}
}

// failRecorder stands in for the test a Validator reports to, so a failing Check can be observed.
type failRecorder struct {
	testing.TB
	errors []string
}

func (r *failRecorder) Helper() {}

func (r *failRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestServedDocumentMatchesItsOwnOperation(t *testing.T) {
	v := apitest.New(t)
	doc, err := api.JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	v.Check(t, httptest.NewRequest(http.MethodGet, "/openapi.json", nil), http.StatusOK, jsonHeader(), doc)
	if !slices.Contains(v.Covered(), "getOpenAPI") {
		t.Errorf("getOpenAPI not covered after a valid check")
	}
}

func TestCheckFailsTheTest(t *testing.T) {
	v := apitest.New(t)
	req := httptest.NewRequest(http.MethodGet, "/market/SOL-PERP/trades", nil)
	f := validFill()
	delete(f, "maker")

	rec := &failRecorder{TB: t}
	v.Check(rec, req, 200, jsonHeader(), rollingBody(t, f))
	if len(rec.errors) != 1 {
		t.Fatalf("Check reported %d failures, want 1", len(rec.errors))
	}
	for _, want := range []string{"GET /market/SOL-PERP/trades -> 200", "getMarketTrades", `"maker"`, "response body:"} {
		if !strings.Contains(rec.errors[0], want) {
			t.Errorf("failure message lacks %q:\n%s", want, rec.errors[0])
		}
	}

	rec = &failRecorder{TB: t}
	v.Check(rec, req, 200, jsonHeader(), rollingBody(t, validFill()))
	if len(rec.errors) != 0 {
		t.Errorf("Check failed a valid response: %v", rec.errors)
	}
}

func TestCoverage(t *testing.T) {
	v := apitest.New(t)
	all := v.Uncovered("/market/")
	if len(all) != 17 {
		t.Fatalf("Uncovered(/market/) = %d operations, want 17: %v", len(all), all)
	}
	if !slices.Contains(all, "getMarketTrades") || slices.Contains(all, "getOpenAPI") {
		t.Errorf("Uncovered(/market/) = %v", all)
	}

	// A handler answering every fills path: Serve validates the exchange and records coverage.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.RawQuery, "limit=0") {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"success":false,"message":"limit must be an integer between 1 and 50"}`))
			return
		}
		_, _ = w.Write(rollingBody(t, validFill()))
	})
	rec := v.Serve(t, h, httptest.NewRequest(http.MethodGet, "/market/SOL-PERP/trades", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	v.Serve(t, h, httptest.NewRequest(http.MethodGet, "/market/TRUMP-WIN-2024-BET/predictions?limit=0", nil))

	if got := v.Covered(); !slices.Equal(got, []string{"getMarketTrades"}) {
		t.Errorf("Covered = %v, want [getMarketTrades] (a 400 does not cover an operation)", got)
	}
	left := v.Uncovered("/market/")
	if len(left) != 16 || slices.Contains(left, "getMarketTrades") || !slices.Contains(left, "getMarketPredictions") {
		t.Errorf("Uncovered after one operation = %v", left)
	}

	rec2 := &failRecorder{TB: t}
	v.RequireCovered(rec2, "/market/")
	if len(rec2.errors) != 1 || !strings.Contains(rec2.errors[0], "getMarketCandles") {
		t.Errorf("RequireCovered reported %v", rec2.errors)
	}
}
