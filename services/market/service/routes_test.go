package service_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// seed ingests a little of every series the Market tag serves, on 2026-11-18 and 2026-11-19.
func seed(t *testing.T, s *stack) {
	t.Helper()
	day1, day2 := at("2026-11-18T09:00:00Z"), at("2026-11-19T09:00:00Z")
	var msgs []events.Message
	msgs = append(msgs, encode(t, events.TopicFills,
		fill(solPerp, day1, 1, 150_000_000, 1_000_000_000, 150_000_000),
		fill(solPerp, day2, 2, 302_000_000, 2_000_000_000, 151_000_000),
		fill(betMkt, day2+60, 3, 620_000, 1_000_000_000, 610_000),
		fill(solSpot, day2+120, 4, 149_000_000, 1_000_000_000, 149_000_000),
	)...)
	msgs = append(msgs, encode(t, events.TopicFundingRates, fundingRate(solPerp, day1, 1), fundingRate(solPerp, day2, 2))...)
	msgs = append(msgs, encode(t, events.TopicInsuranceFund, insuranceFund(usdc, day2, 1))...)
	msgs = append(msgs, encode(t, events.TopicDeposits, deposit(usdc, day2, 1, false), deposit(usdc, day2+5, 2, true))...)
	msgs = append(msgs, encode(t, events.TopicSwaps, swap(usdc, solSpot, day2, 1))...)
	s.ingest(t, msgs...)
	// Stakes resolve their symbol from the catalogue, which the deposits above filled.
	s.ingest(t, encode(t, events.TopicIFStakes, ifStake(usdc, day2, 1, false), ifStake(usdc, day2+1, 2, true))...)
}

// TestEveryMarketRouteMatchesTheContract drives every documented Market operation with real data and
// validates each answer (status, headers, body) against api/openapi.yaml.
func TestEveryMarketRouteMatchesTheContract(t *testing.T) {
	s := startStack(t)
	seed(t, s)
	paths := []struct {
		path    string
		records int
	}{
		{"/market/SOL-PERP/trades", 2},
		{"/market/SOL-PERP/trades?limit=1", 1},
		{"/market/SOL-PERP/trades/2026/11/19", 1},
		{"/market/TRUMP-WIN-2028-BET/predictions", 1},
		{"/market/TRUMP-WIN-2028-BET/predictions/2026/11/19", 1},
		{"/market/SOL-PERP/fundingRates?limit=750", 2},
		{"/market/SOL-PERP/fundingRates/2026/11/18", 1},
		{"/market/USDC/insuranceFund", 1},
		{"/market/USDC/insuranceFund/2026/11/19", 1},
		{"/market/USDC/insuranceFundStake", 2},
		{"/market/USDC/insuranceFundStake/2026/11/19", 2},
		{"/market/USDC/swaps", 1},
		{"/market/SOL/swaps/2026/11/19", 1},
		{"/market/USDC/deposits", 1},
		{"/market/USDC/deposits/2026/11/19", 1},
		{"/market/USDC/rewards", 1},
		{"/market/USDC/rewards/2026/11/19", 1},
	}
	for _, p := range paths {
		var body struct {
			Success bool              `json:"success"`
			Records []json.RawMessage `json:"records"`
		}
		s.getJSON(t, p.path, http.StatusOK, &body)
		if !body.Success || len(body.Records) != p.records {
			t.Errorf("GET %s: %d records, want %d", p.path, len(body.Records), p.records)
		}
		if strings.Count(p.path, "/") > 4 { // dated: the CSV form too
			rec := s.get(t, p.path+"?format=csv")
			if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "\n") != p.records+1 {
				t.Errorf("GET %s?format=csv: status %d, body %q", p.path, rec.Code, rec.Body.String())
			}
		}
	}
	for _, res := range []string{"1", "5", "15", "60", "240", "D", "W", "M"} {
		s.getJSON(t, "/market/SOL-PERP/candles/"+res, http.StatusOK, nil)
	}
	s.getJSON(t, "/openapi.json", http.StatusOK, nil)
	s.Validator.RequireCovered(t, "/market")
}

func TestRollingPagesWalkEveryRecordOnceNewestFirst(t *testing.T) {
	s := startStack(t)
	var recs []events.Record
	// 3 fills per hour over the last 40 days: those older than 31 days must not be listed.
	id := 0
	inWindow := 0
	cutoff := now.Add(-31 * 24 * 3600 * 1e9).Unix()
	for ts := now.Unix() - 40*86400; ts <= now.Unix(); ts += 1200 {
		id++
		recs = append(recs, fill(solPerp, ts, id, 150_000_000, 1_000_000_000, 150_000_000))
		if ts >= cutoff {
			inWindow++
		}
		if id%10 == 0 { // another market's fills interleave and must not leak in
			recs = append(recs, fill(btcPerp, ts, 100_000+id, 60_000_000_000, 1_000_000_000, 60_000_000_000))
		}
	}
	s.ingest(t, encode(t, events.TopicFills, recs...)...)

	type page struct {
		Records []events.Fill `json:"records"`
		Meta    struct {
			NextPage *string `json:"nextPage"`
		} `json:"meta"`
	}
	seen := map[string]bool{}
	var last *events.Fill
	path := "/market/SOL-PERP/trades?limit=50"
	pages := 0
	for {
		var p page
		s.getJSON(t, path, http.StatusOK, &p)
		pages++
		for i := range p.Records {
			f := &p.Records[i]
			if f.Symbol != "SOL-PERP" {
				t.Fatalf("record of %s listed under SOL-PERP", f.Symbol)
			}
			k := fmt.Sprintf("%s/%d", f.TxSig, f.TxSigIndex)
			if seen[k] {
				t.Fatalf("record %s listed twice", k)
			}
			seen[k] = true
			if last != nil && (f.Ts > last.Ts || (f.Ts == last.Ts && f.TxSig >= last.TxSig)) {
				t.Fatalf("records out of order: %d after %d", f.Ts, last.Ts)
			}
			last = f
		}
		if p.Meta.NextPage == nil {
			break
		}
		path = "/market/SOL-PERP/trades?limit=50&page=" + url.QueryEscape(*p.Meta.NextPage)
	}
	if len(seen) != inWindow {
		t.Fatalf("walked %d records, want the %d of the last 31 days", len(seen), inWindow)
	}
	if want := (inWindow + 49) / 50; pages != want && pages != want+1 {
		t.Fatalf("%d pages for %d records", pages, inWindow)
	}

	// A token is bound to its route and signed: forged, truncated and borrowed tokens are refused.
	var first page
	s.getJSON(t, "/market/SOL-PERP/trades", http.StatusOK, &first)
	tok := *first.Meta.NextPage
	forged := []byte(tok)
	forged[len(forged)/2] ^= 0x01
	for _, bad := range []string{
		"/market/SOL-PERP/trades?page=" + url.QueryEscape(string(forged)),
		"/market/SOL-PERP/trades?page=" + url.QueryEscape(tok[:len(tok)-4]),
		"/market/SOL-PERP/trades?page=not-a-token",
		"/market/BTC-PERP/trades?page=" + url.QueryEscape(tok),
		"/market/SOL-PERP/fundingRates?page=" + url.QueryEscape(tok),
	} {
		rec := s.get(t, bad)
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("GET %s: status %d, want 400", bad, rec.Code)
		}
		mustContain(t, rec.Body.String(), `"message":"Invalid page token"`)
	}
}

func TestDatedPagesAddUpAndCSVMatchesJSON(t *testing.T) {
	s := startStack(t)
	day := at("2026-11-18T00:00:00Z")
	var recs []events.Record
	for i := 0; i < 45; i++ {
		recs = append(recs, fill(solPerp, day+int64(i)*1800, i+1, 150_000_000+int64(i)*1000, 1_000_000_000, 150_000_000))
	}
	// Neighbouring days must not count.
	recs = append(recs, fill(solPerp, day-1, 1000, 150_000_000, 1_000_000_000, 150_000_000),
		fill(solPerp, day+86400, 1001, 150_000_000, 1_000_000_000, 150_000_000))
	s.ingest(t, encode(t, events.TopicFills, recs...)...)

	type meta struct {
		Records, TotalRecords, CurrentPage, TotalPages int
		NextPage                                       *int
		IncludesLatest                                 bool
	}
	var all []json.RawMessage
	for p := 1; p <= 4; p++ {
		var body struct {
			Records []json.RawMessage `json:"records"`
			Meta    meta              `json:"meta"`
		}
		s.getJSON(t, fmt.Sprintf("/market/SOL-PERP/trades/2026/11/18?page=%d", p), http.StatusOK, &body)
		m := body.Meta
		if m.TotalRecords != 45 || m.TotalPages != 3 || m.CurrentPage != p || m.Records != len(body.Records) || m.IncludesLatest {
			t.Fatalf("page %d meta %+v", p, m)
		}
		switch {
		case p < 3 && (m.NextPage == nil || *m.NextPage != p+1):
			t.Fatalf("page %d nextPage %v", p, m.NextPage)
		case p >= 3 && m.NextPage != nil:
			t.Fatalf("page %d nextPage %d, want null", p, *m.NextPage)
		}
		all = append(all, body.Records...)

		// The CSV of the same page has the header and exactly the JSON records' values.
		rec := s.get(t, fmt.Sprintf("/market/SOL-PERP/trades/2026/11/18?page=%d&format=csv", p))
		if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="market-SOL-PERP-trades-2026-11-18.csv"` {
			t.Fatalf("Content-Disposition %q", cd)
		}
		if !bytes.HasPrefix(rec.Body.Bytes(), []byte(`"ts","txSig","txSigIndex","slot","fillerReward"`)) {
			t.Fatalf("CSV header %q", strings.SplitN(rec.Body.String(), "\n", 2)[0])
		}
		rows, err := csv.NewReader(rec.Body).ReadAll()
		if err != nil {
			t.Fatalf("read CSV: %v", err)
		}
		if want := (&events.Fill{}).CSVHeader(); strings.Join(rows[0], ",") != strings.Join(want, ",") {
			t.Fatalf("CSV header %v, want %v", rows[0], want)
		}
		if len(rows)-1 != len(body.Records) {
			t.Fatalf("page %d: %d CSV rows, %d JSON records", p, len(rows)-1, len(body.Records))
		}
		for i, raw := range body.Records {
			var obj map[string]any
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			for c, name := range rows[0] {
				v, ok := obj[name]
				got := rows[i+1][c]
				want := ""
				if ok {
					want = strings.Trim(string(mustJSON(t, v)), `"`)
				}
				if got != want {
					t.Fatalf("page %d row %d column %s: CSV %q, JSON %q", p, i, name, got, want)
				}
			}
		}
	}
	if len(all) != 45 {
		t.Fatalf("pages hold %d records, want 45", len(all))
	}
	var firstTs, lastTs struct {
		Ts int64 `json:"ts"`
	}
	_ = json.Unmarshal(all[0], &firstTs)
	_ = json.Unmarshal(all[44], &lastTs)
	if firstTs.Ts != day || lastTs.Ts != day+44*1800 {
		t.Fatalf("dated pages run %d..%d, want oldest first %d..%d", firstTs.Ts, lastTs.Ts, day, day+44*1800)
	}

	// Today's page may still grow.
	var today struct {
		Meta meta `json:"meta"`
	}
	s.getJSON(t, "/market/SOL-PERP/trades/2026/11/19", http.StatusOK, &today)
	if !today.Meta.IncludesLatest || today.Meta.TotalRecords != 1 {
		t.Fatalf("today's meta %+v", today.Meta)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLimitsAndErrors covers every limit and error of the spec's tables that concerns the Market tag.
func TestLimitsAndErrors(t *testing.T) {
	s := startStack(t)
	seed(t, s)
	s.CheckRefusals(t, []kittest.Refusal{
		{Path: "/market/SOL-PERP/trades?limit=0", Status: 400, Message: "limit must be an integer between 1 and 50"},
		{Path: "/market/SOL-PERP/trades?limit=51", Status: 400, Message: "limit must be an integer between 1 and 50"},
		{Path: "/market/SOL-PERP/trades?limit=abc", Status: 400, Message: "limit must be an integer between 1 and 50"},
		{Path: "/market/SOL-PERP/trades?limit=50", Status: 200, Message: ""},
		{Path: "/market/SOL-PERP/fundingRates?limit=751", Status: 400, Message: "limit must be an integer between 1 and 750"},
		{Path: "/market/SOL-PERP/fundingRates?limit=0", Status: 400, Message: "limit must be an integer between 1 and 750"},
		{Path: "/market/SOL-PERP/candles/1?limit=1001", Status: 400, Message: "limit must be an integer between 1 and 1000"},
		{Path: "/market/SOL-PERP/candles/1?limit=0", Status: 400, Message: "limit must be an integer between 1 and 1000"},
		{Path: "/market/SOL-PERP/candles/1?limit=1000", Status: 200, Message: ""},
		{Path: "/market/SOL-PERP/candles/1?startTs=1668470399", Status: 400, Message: "startTs must be an integer between 1668470400"},
		{Path: "/market/SOL-PERP/candles/1?endTs=1668470399", Status: 400, Message: "endTs must be an integer between 1668470400"},
		{Path: "/market/SOL-PERP/candles/1?startTs=1668470400&endTs=1668474000", Status: 200, Message: ""},
		{Path: "/market/SOL-PERP/candles/2", Status: 400, Message: "resolution must be one of"},
		{Path: "/market/SOL-PERP/trades/2021/12/31", Status: 400, Message: "year must be an integer >= 2022"},
		{Path: "/market/SOL-PERP/trades/2026/13/01", Status: 400, Message: "month must be an integer between 1 and 12"},
		{Path: "/market/SOL-PERP/trades/2026/0/01", Status: 400, Message: "month must be an integer between 1 and 12"},
		{Path: "/market/SOL-PERP/trades/2026/11/32", Status: 400, Message: "day must be an integer between 1 and 31"},
		{Path: "/market/SOL-PERP/trades/2026/11/0", Status: 400, Message: "day must be an integer between 1 and 31"},
		{Path: "/market/SOL-PERP/trades/2026/02/30", Status: 400, Message: "is not a valid date"},
		{Path: "/market/SOL-PERP/trades/2026/11/20", Status: 400, Message: "is in the future"},
		{Path: "/market/SOL-PERP/trades/2026/11/x", Status: 400, Message: "day must be an integer"},
		{Path: "/market/SOL-PERP/trades/2026/11/18?page=0", Status: 400, Message: "page"},
		{Path: "/market/SOL-PERP/trades/2026/11/18?format=xml", Status: 400, Message: "format must be one of"},
		{Path: "/market/DOGE-PERP/trades", Status: 404, Message: "market DOGE-PERP not found"},
		{Path: "/market/DOGE-PERP/candles/1", Status: 404, Message: "market DOGE-PERP not found"},
		{Path: "/market/DOGE-PERP/trades/2026/11/18", Status: 404, Message: "market DOGE-PERP not found"},
		{Path: "/market/SOL-PERP/predictions", Status: 404, Message: "SOL-PERP is not a prediction market"},
		{Path: "/market/USDC/fundingRates", Status: 404, Message: "USDC is not a perp market"},
		{Path: "/market/SOL-PERP/insuranceFund", Status: 404, Message: "SOL-PERP is not a spot market"},
		{Path: "/market/SOL-PERP/deposits", Status: 404, Message: "SOL-PERP is not a spot market"},
	})
	// Paths outside the document: still JSON errors, never HTML.
	for _, p := range []string{"/market", "/nope", "/market/SOL-PERP/unknown"} {
		rec := httpRecorder(s, http.MethodGet, p)
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"success":false`) {
			t.Fatalf("GET %s: %d %s", p, rec.Code, rec.Body.String())
		}
	}
	if rec := httpRecorder(s, http.MethodPost, "/market/SOL-PERP/trades"); rec.Code != 405 || !strings.Contains(rec.Body.String(), `"success":false`) {
		t.Fatalf("POST trades: %d %s", rec.Code, rec.Body.String())
	}
}

// A producer that pretty-prints still has its fills served as the compact records the API emits.
func TestIndentedFillIsServedCompact(t *testing.T) {
	s := startStack(t)
	msgs := encode(t, events.TopicFills, fill(solPerp, now.Unix()-60, 1, 150_000_000, 1_000_000_000, 150_000_000))
	compact := slices.Clone(msgs[0].Value)
	var indented bytes.Buffer
	if err := json.Indent(&indented, compact, "", "\t"); err != nil {
		t.Fatal(err)
	}
	msgs[0].Value = indented.Bytes()
	s.ingest(t, msgs...)
	rec := s.get(t, "/market/SOL-PERP/trades")
	var page struct {
		Records []json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Records) != 1 {
		t.Fatalf("page %s: %v", rec.Body, err)
	}
	if !bytes.Equal(page.Records[0], compact) {
		t.Fatalf("served %s\nwant %s", page.Records[0], compact)
	}
}

// marketValues are candidate values of the Market operations' path parameters, for the data of seed.
var marketValues = map[string][]string{
	"symbol":     {"SOL-PERP", "TRUMP-WIN-2028-BET", "USDC", "SOL"},
	"year":       {"2026"},
	"month":      {"11"},
	"day":        {"19", "18"},
	"resolution": {"1", "60", "D", "W", "M"},
}

// TestEveryOperationOfTheDocument walks every operation of api/openapi.yaml the service serves, with
// the seeded data, and validates every answer; then it sends hostile values to all of them, and no
// answer may be a server error.
func TestEveryOperationOfTheDocument(t *testing.T) {
	s := startStack(t)
	seed(t, s)
	s.CheckContract(t, marketValues, 3000, "/market/")
}
