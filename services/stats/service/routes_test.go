package service_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// TestEveryOperationAgreesWithTheDocument: every Stats operation, /params, /vaults and /external over
// the known stream, each answer validated against the OpenAPI document; then hostile input, never a
// 5xx.
func TestEveryOperationAgreesWithTheDocument(t *testing.T) {
	s := start(t)
	feed(t, s, streamMessages(t)...)
	values := map[string][]string{
		"symbol": {"USDC", "SOL"}, "kind": {"deposit", "borrow", "deposit_balance", "borrow_balance"},
		"window": {"1h", "24h", "30d"}, "authority": {w1, w3},
	}
	s.CheckContract(t, values, 1500, "/stats/", "/params", "/vaults", "/external/")
}

// TestBadInput: every rule of the input, each answered 400 (or 404 for what is not there) with a
// message that names it.
func TestBadInput(t *testing.T) {
	s := start(t)
	feed(t, s, streamMessages(t)...)
	nine := strconv.FormatInt(kittest.At("2026-11-19T09:00:00Z"), 10)
	s.CheckRefusals(t, []kittest.Refusal{
		{Path: "/stats/markets/volume?startTs=" + nine, Status: 400, Message: "endTs is required"},
		{Path: "/stats/markets/volume?endTs=" + nine, Status: 400, Message: "startTs is required"},
		{Path: "/stats/markets/volume?startTs=" + nine + "&endTs=" + nine, Status: 400, Message: "startTs must be less than endTs"},
		{Path: "/stats/markets/volume?startTs=" + nine + "&endTs=" + strconv.FormatInt(kittest.At("2026-11-19T08:00:00Z"), 10), Status: 400, Message: "startTs must be less than endTs"},
		// 09:10 to 09:50 floors to no hour at all; 25 hours is one too many.
		{Path: "/stats/markets/volume?startTs=" + strconv.FormatInt(kittest.At("2026-11-19T09:10:00Z"), 10) + "&endTs=" + strconv.FormatInt(kittest.At("2026-11-19T09:50:00Z"), 10), Status: 400, Message: "between 1 and 24 hours"},
		{Path: "/stats/markets/volume?startTs=" + strconv.FormatInt(kittest.At("2026-11-18T08:00:00Z"), 10) + "&endTs=" + nine, Status: 400, Message: "between 1 and 24 hours"},
		{Path: "/stats/markets/volume?startTs=" + strconv.FormatInt(kittest.At("2026-11-18T09:00:00Z"), 10) + "&endTs=" + strconv.FormatInt(kittest.At("2026-11-19T09:59:59Z"), 10), Status: 200, Message: ""},
		{Path: "/stats/markets/volume?startTs=abc&endTs=" + nine, Status: 400, Message: "startTs must be an integer"},
		{Path: "/stats/markets/volume?startTs=-3600&endTs=" + nine, Status: 400, Message: "startTs must be an integer"},
		{Path: "/stats/markets/volume/2h", Status: 400, Message: "window must be one of 1h, 24h, 30d"},
		{Path: "/stats/NOPE/rateHistory/deposit", Status: 404, Message: "market NOPE not found"},
		{Path: "/stats/SOL-PERP/rateHistory/deposit", Status: 404, Message: "SOL-PERP is not a spot market"},
		{Path: "/stats/USDC/rateHistory/supply", Status: 400, Message: "deposit, borrow, deposit_balance, borrow_balance"},
		{Path: "/stats/USDC/rateHistory/deposit?days=0", Status: 400, Message: "days must be an integer between 1 and 365"},
		{Path: "/stats/USDC/rateHistory/deposit?days=366", Status: 400, Message: "days must be an integer between 1 and 365"},
		{Path: "/stats/leaderboard?sort=fees", Status: 400, Message: "sort must be one of pnl, volume, maker, taker"},
		{Path: "/stats/leaderboard?limit=0", Status: 400, Message: "limit must be an integer between 1 and 1000"},
		{Path: "/stats/leaderboard?limit=1001", Status: 400, Message: "limit must be an integer between 1 and 1000"},
		{Path: "/stats/leaderboard?limit=1000", Status: 200, Message: ""},
		{Path: "/stats/leaderboard?page=0", Status: 400, Message: "page must be an integer between 1 and 1000000"},
		{Path: "/stats/leaderboard?month=2026-12", Status: 400, Message: "month must be from 2022-01 to 2026-11"},
		{Path: "/stats/leaderboard?month=2021-12", Status: 400, Message: "month must be from 2022-01 to 2026-11"},
		{Path: "/stats/leaderboard?month=2026-13", Status: 400, Message: "YYYY-MM"},
		{Path: "/stats/leaderboard?month=2026-1", Status: 400, Message: "YYYY-MM"},
		{Path: "/stats/leaderboard/not-a-key", Status: 400, Message: "authority must be a wallet's public key"},
		{Path: "/stats/leaderboard/" + w1 + "?month=11-2026", Status: 400, Message: "YYYY-MM"},
		{Path: "/stats/liquidations?page=bm90IGEgdG9rZW4", Status: 400, Message: "Invalid page token"},
		{Path: "/stats/bankruptcies?page=x", Status: 400, Message: "Invalid page token"},
		{Path: "/stats/insuranceFundSwaps?page=%00", Status: 400, Message: "printable"},
	})
}

// TestPages: token pages walk every record once, and a token is bound to the list it came from.
func TestPages(t *testing.T) {
	s := start(t)
	feed(t, s, streamMessages(t)...)
	type page struct {
		Records []events.Swap
		Meta    httpapi.RollingMeta
	}
	var first, second page
	s.GetJSON(t, "/stats/insuranceFundSwaps", http.StatusOK, &first)
	if len(first.Records) != 20 || first.Meta.NextPage == nil {
		t.Fatalf("first page: %d records, next %v", len(first.Records), first.Meta.NextPage)
	}
	s.GetJSON(t, "/stats/insuranceFundSwaps?page="+url.QueryEscape(*first.Meta.NextPage), http.StatusOK, &second)
	if len(second.Records) != 5 || second.Meta.NextPage != nil {
		t.Fatalf("second page: %d records, next %v", len(second.Records), second.Meta.NextPage)
	}
	seen := map[string]bool{}
	prev := int64(1 << 62)
	for _, r := range append(first.Records, second.Records...) {
		if seen[r.TxSig] || r.Ts > prev {
			t.Fatalf("swap %s listed twice or out of order", r.TxSig)
		}
		seen[r.TxSig], prev = true, r.Ts
	}
	rec := s.Get(t, "/stats/liquidations?page="+url.QueryEscape(*first.Meta.NextPage))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Invalid page token") {
		t.Errorf("a swaps token on liquidations: %d %s", rec.Code, rec.Body)
	}
}

// TestBeforeAnyData: a service that has ingested nothing answers empty lists, and /params 404.
func TestBeforeAnyData(t *testing.T) {
	s := start(t)
	s.GetJSON(t, "/params", http.StatusNotFound, nil)
	for _, p := range []string{"/stats/markets", "/stats/leaderboard", "/vaults", "/stats/insuranceFund"} {
		if rec := s.Get(t, p); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"records":[]`) {
			t.Errorf("GET %s: %d %s", p, rec.Code, rec.Body)
		}
	}
	if rec := s.Get(t, "/external/aggregator/contracts"); rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"contracts":[]}` {
		t.Errorf("contracts: %d %s", rec.Code, rec.Body)
	}
}

// TestUnusableFillsGoToTheDLQ: a fill without a symbol or base cannot be a market's trading; it is
// dead-lettered with the reason while the partition moves on.
func TestUnusableFillsGoToTheDLQ(t *testing.T) {
	s := start(t)
	noSymbol := fill(kittest.SOLPerp, nowS-hour, 1, a1, a2, 1_000_000_000, 150*usd, 150*usd)
	noSymbol.Symbol, noSymbol.MarketFilter = "", ""
	noBase := fill(kittest.SOLPerp, nowS-hour, 2, a1, a2, 1_000_000_000, 150*usd, 150*usd)
	noBase.BaseAssetAmountFilled = "0"
	good := fill(kittest.SOLPerp, nowS-hour, 3, a1, a2, 1_000_000_000, 150*usd, 150*usd)
	feed(t, s, encode(t, events.TopicFills, noSymbol, noBase, good)...)
	if n := s.Count(t, "stats.fills"); n != 1 {
		t.Fatalf("%d fills stored, want the good one", n)
	}
	reasons := s.DLQReasons(t, events.TopicFills, 2)
	for _, want := range []string{"fill has no symbol", "baseAssetAmountFilled \"0\" must be positive"} {
		if !strings.Contains(strings.Join(reasons, "\n"), want) {
			t.Errorf("no DLQ reason says %q: %q", want, reasons)
		}
	}
}
