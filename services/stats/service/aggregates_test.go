package service_test

import (
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/stats"
)

// views are what the API answers over the known stream, for comparing before and after a replay.
var views = []string{
	"/stats/markets", "/stats/markets/prices", "/stats/markets/volume/1h", "/stats/markets/volume/24h",
	"/stats/markets/volume/30d", "/stats/markets/volume?startTs=1795078800&endTs=1795082400", "/stats/fundingRates",
	"/stats/liquidations", "/stats/bankruptcies", "/stats/insuranceFundSwaps", "/stats/USDC/rateHistory/deposit",
	"/stats/USDC/rateHistory/borrow_balance", "/stats/SOL/rateHistory/deposit_balance", "/stats/vaults",
	"/stats/insuranceFund", "/stats/leaderboard", "/stats/leaderboard?sort=volume", "/stats/leaderboard?sort=maker",
	"/stats/leaderboard?sort=taker", "/stats/leaderboard/" + w1, "/stats/leaderboard/" + w4, "/params", "/vaults",
	"/external/aggregator/contracts",
}

func snapshot(t *testing.T, s *kittest.Stack) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range views {
		rec := s.Get(t, p)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, rec.Code, rec.Body)
		}
		out[p] = rec.Body.String()
	}
	return out
}

func sameViews(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("%s changed %s:\n before %s\n after  %s", what, k, want[k], got[k])
		}
	}
}

func get[T any](t *testing.T, s *kittest.Stack, path string) T {
	t.Helper()
	var v T
	s.GetJSON(t, path, http.StatusOK, &v)
	return v
}

type summaries struct {
	Records []stats.MarketSummary `json:"records"`
}

func summaryOf(t *testing.T, s *kittest.Stack, symbol string) stats.MarketSummary {
	t.Helper()
	for _, m := range get[summaries](t, s, "/stats/markets").Records {
		if m.Symbol == symbol {
			return m
		}
	}
	t.Fatalf("no summary of %s", symbol)
	return stats.MarketSummary{}
}

func str(s string) *string { return &s }

func amt(s string) *events.Amount {
	a := events.Amount(s)
	return &a
}

// TestAggregatesByHand: every aggregate of the known stream as worked out by hand, then the stream
// delivered again by its producer, twice, and once more from the start of every topic: nothing
// changes.
func TestAggregatesByHand(t *testing.T) {
	s := start(t)
	msgs := streamMessages(t)
	feed(t, s, msgs...)
	feed(t, s, lateUser(t)...)

	t.Run("market summary", func(t *testing.T) {
		got := summaryOf(t, s, "SOL-PERP")
		last := kittest.At("2026-11-19T15:30:59Z")
		want := stats.MarketSummary{
			Symbol: "SOL-PERP", MarketIndex: 0, MarketType: "perp", MarketFilter: "perp",
			// The state sample of the later slot, not the one delivered after it.
			OraclePrice: "155400000", OraclePriceSlot: 300_000_000 + nowS + 100,
			Price: "155000000", MarkPrice: "155600000", MarkPriceSlot: 300_000_000 + nowS + 100,
			// Fills 3, 4, 5, 6: 150 + 480 + 155 + 260 USDC, 1 + 3 + 1 + 2 SOL; fill 2, in the minute before
			// the window but in an hour that overlaps it, is out.
			QuoteVolume: "1045000000", BaseVolume: "7000000000", Fills: 4,
			OpenInterest: stats.LongShort{Long: "500000000000", Short: "-499000000000"},
			FundingRate:  stats.LongShort{Long: "12500", Short: "-12500"},
			// 155 less fill 2's 145, the last price before the window: +10, +6.90 %.
			PriceChange24h: str("10000000"), PriceChange24hPercent: str("6.90"),
			PriceHigh:   stats.FillOracle{Fill: amt("160000000"), Oracle: amt("159000000")},
			PriceLow:    stats.FillOracle{Fill: amt("130000000"), Oracle: amt("131000000")},
			LastTradeTs: &last, Ts: last,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("SOL-PERP:\n got %+v\nwant %+v", got, want)
		}
		btc := summaryOf(t, s, "BTC-PERP")
		// No state: the oracle of its last fill, the mark its last fill price, no funding yet; 24 hours
		// ago its price was fill 9's, a week before: 60,000 less 58,000 is +3.45 %.
		if btc.OraclePrice != "60010000000" || btc.MarkPrice != "60000000000" || btc.QuoteVolume != "6000000000" ||
			btc.PriceChange24h == nil || *btc.PriceChange24h != "2000000000" || *btc.PriceChange24hPercent != "3.45" ||
			btc.FundingRate != (stats.LongShort{Long: "0", Short: "0"}) {
			t.Errorf("BTC-PERP: %+v", btc)
		}
		sol := summaryOf(t, s, "SOL")
		if sol.MarketType != "spot" || sol.OraclePrice != "155000000" || sol.MarkPrice != "155000000" || sol.Price != "155000000" ||
			sol.QuoteVolume != "0" || sol.PriceHigh.Fill != nil || sol.OpenInterest != (stats.LongShort{Long: "0", Short: "0"}) {
			t.Errorf("SOL: %+v", sol)
		}
	})

	t.Run("prices", func(t *testing.T) {
		var got struct {
			Records []stats.PriceChange `json:"records"`
		}
		s.GetJSON(t, "/stats/markets/prices", http.StatusOK, &got)
		want := stats.PriceChange{Symbol: "SOL-PERP", MarketIndex: 0, MarketType: "perp", CurrentPrice: str("155000000"),
			Price24hAgo: str("145000000"), PriceChange: str("10000000"), PriceChangePercent: str("6.90")}
		if i := slices.IndexFunc(got.Records, func(p stats.PriceChange) bool { return p.Symbol == "SOL-PERP" }); i < 0 || !reflect.DeepEqual(got.Records[i], want) {
			t.Errorf("prices: %+v", got.Records)
		}
	})

	t.Run("volume windows", func(t *testing.T) {
		type volumes struct {
			StartTs, EndTs int64
			Total          string
			Records        []stats.MarketVolume
		}
		vol := func(path, symbol string) (string, string, volumes) {
			v := get[volumes](t, s, path)
			for _, r := range v.Records {
				if r.Symbol == symbol {
					return string(r.QuoteVolume), string(r.BaseVolume), v
				}
			}
			t.Fatalf("%s: no %s", path, symbol)
			return "", "", v
		}
		for _, tc := range []struct {
			path, quote, base string
			from, to          int64
			total             string
		}{
			// Fills 5 and 6.
			{"/stats/markets/volume/1h", "415000000", "3000000000", kittest.At("2026-11-19T14:31:00Z"), kittest.At("2026-11-19T15:31:00Z"), "415000000"},
			{"/stats/markets/volume/24h", "1045000000", "7000000000", kittest.At("2026-11-18T15:31:00Z"), kittest.At("2026-11-19T15:31:00Z"), "7045000000"},
			// Every SOL-PERP fill: 140 + 290 + 1045 + 480.
			{"/stats/markets/volume/30d", "1955000000", "13000000000", kittest.At("2026-10-20T15:31:00Z"), kittest.At("2026-11-19T15:31:00Z"), "8535000000"},
			// 09:30 and 10:45 floor to the hour of fill 4.
			{"/stats/markets/volume?startTs=1795080600&endTs=1795085100", "480000000", "3000000000", kittest.At("2026-11-19T09:00:00Z"), kittest.At("2026-11-19T10:00:00Z"), "480000000"},
		} {
			q, b, v := vol(tc.path, "SOL-PERP")
			if q != tc.quote || b != tc.base || v.StartTs != tc.from || v.EndTs != tc.to || v.Total != tc.total {
				t.Errorf("%s: quote %s base %s [%d, %d) total %s; want %s %s [%d, %d) %s", tc.path, q, b, v.StartTs, v.EndTs, v.Total,
					tc.quote, tc.base, tc.from, tc.to, tc.total)
			}
			// Every market is listed, the untraded ones with zeros.
			if _, _, v := vol(tc.path, "USDC"); len(v.Records) != 4 {
				t.Errorf("%s: %d markets, want 4", tc.path, len(v.Records))
			}
		}
	})

	t.Run("funding averages", func(t *testing.T) {
		var got struct {
			Records []struct {
				Symbol       string
				FundingRates map[string]*string
			}
		}
		s.GetJSON(t, "/stats/fundingRates", http.StatusOK, &got)
		want := map[string]map[string]*string{
			// (0.003 + 0.001) / 2; (+ 0.005) / 3; (- 0.002) / 4; (+ 0.01) / 5
			"SOL-PERP": {"24h": str("0.002000000"), "7d": str("0.003000000"), "30d": str("0.001750000"), "1y": str("0.003400000")},
			"BTC-PERP": {"24h": nil, "7d": nil, "30d": nil, "1y": nil},
		}
		if len(got.Records) != 2 {
			t.Fatalf("%d markets, want the two perp markets", len(got.Records))
		}
		for _, r := range got.Records {
			if !reflect.DeepEqual(r.FundingRates, want[r.Symbol]) {
				t.Errorf("%s: %v, want %v", r.Symbol, deref(r.FundingRates), deref(want[r.Symbol]))
			}
		}
	})

	t.Run("liquidations", func(t *testing.T) {
		var liq struct {
			Stats   map[string]stats.CountAmount
			Records []events.Liquidation
		}
		s.GetJSON(t, "/stats/liquidations", http.StatusOK, &liq)
		// 24 h: the perp liquidation (1,000 USDC) and the spot one (500 USDC of liability at 1.00);
		// 30 days: and the P&L liquidation (300); bankruptcies are not liquidations here.
		wantStats := map[string]stats.CountAmount{"24h": {Count: 2, Amount: "1500000000"}, "30d": {Count: 3, Amount: "1800000000"}}
		if !reflect.DeepEqual(liq.Stats, wantStats) {
			t.Errorf("stats %+v, want %+v", liq.Stats, wantStats)
		}
		var ids []int
		for _, r := range liq.Records {
			ids = append(ids, r.LiquidationID)
		}
		if !slices.Equal(ids, []int{1, 2, 5, 6, 3}) { // newest first; the one of 40 days ago is out
			t.Errorf("liquidations %v", ids)
		}
		var bk struct {
			Stats   stats.BankruptcyStats
			Records []events.Liquidation
		}
		s.GetJSON(t, "/stats/bankruptcies", http.StatusOK, &bk)
		// 200 USDC lost on the perp side (150 paid by the fund); 2 SOL borrowed at 155 (1 SOL paid).
		want := stats.BankruptcyStats{TotalAmount: "510000000", IfPayment: "305000000", SocialLoss: "205000000", TotalCount: "2"}
		if bk.Stats != want || len(bk.Records) != 2 || bk.Records[0].LiquidationID != 5 {
			t.Errorf("bankruptcies %+v (%d records), want %+v", bk.Stats, len(bk.Records), want)
		}
	})

	t.Run("leaderboards", func(t *testing.T) {
		type board struct {
			Records []stats.Leader
			Meta    struct {
				Month        string
				TotalRecords int64
				TotalPages   int64
				NextPage     *int
			}
		}
		check := func(path string, sort stats.Board, want []stats.Leader) {
			t.Helper()
			b := get[board](t, s, path)
			var got []stats.Leader
			for _, l := range b.Records {
				got = append(got, stats.Leader{Rank: l.Rank, Authority: l.Authority, Volume: l.Figure(sort)})
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got %v\nwant %v", path, got, want)
			}
			if b.Meta.Month != "2026-11" || b.Meta.TotalRecords != int64(len(want)) {
				t.Errorf("%s: meta %+v", path, b.Meta)
			}
		}
		l := func(rank int64, authority, figure string) stats.Leader {
			return stats.Leader{Rank: rank, Authority: authority, Volume: events.Amount(figure)}
		}
		// Taker: w1 140 + 290 + 150 + 6,000; w3 260 + 580; w2 480 ties w5 480; w4 155 (late wallet).
		check("/stats/leaderboard?sort=taker", stats.BoardTaker, []stats.Leader{
			l(1, w1, "6580000000"), l(2, w3, "840000000"), l(3, w2, "480000000"), l(3, w5, "480000000"), l(5, w4, "155000000")})
		// Maker: w3 155 + 6,000; w1 480 + 480; w2 140 + 290 + 150 ties w4 580; w5 made nothing.
		check("/stats/leaderboard?sort=maker", stats.BoardMaker, []stats.Leader{
			l(1, w3, "6155000000"), l(2, w1, "960000000"), l(3, w2, "580000000"), l(3, w4, "580000000")})
		check("/stats/leaderboard?sort=volume", stats.BoardVolume, []stats.Leader{
			l(1, w1, "7540000000"), l(2, w3, "6995000000"), l(3, w2, "1060000000"), l(4, w4, "735000000"), l(5, w5, "480000000")})
		// P&L: w1 and w3 tie; w4's settlement came before its wallet was known.
		check("/stats/leaderboard", stats.BoardPnl, []stats.Leader{
			l(1, w1, "100000000"), l(1, w3, "100000000"), l(3, w4, "20000000"), l(4, w2, "-50000000")})

		// Pages: two a page; the second page's first is ranked by what lies before it.
		b := get[board](t, s, "/stats/leaderboard?sort=taker&limit=2&page=2")
		if len(b.Records) != 2 || b.Records[0].Authority != w2 || b.Records[0].Rank != 3 || b.Records[1].Rank != 3 ||
			b.Meta.TotalPages != 3 || b.Meta.NextPage == nil || *b.Meta.NextPage != 3 {
			t.Errorf("page 2: %+v", b)
		}
		b = get[board](t, s, "/stats/leaderboard?sort=taker&limit=2&page=3")
		if len(b.Records) != 1 || b.Records[0].Rank != 5 || b.Meta.NextPage != nil {
			t.Errorf("page 3: %+v", b)
		}
		if b := get[board](t, s, "/stats/leaderboard?sort=taker&limit=2&page=9"); len(b.Records) != 0 || b.Meta.TotalRecords != 5 {
			t.Errorf("past the last page: %+v", b)
		}

		var st struct{ Data stats.Standing }
		s.GetJSON(t, "/stats/leaderboard/"+w4, http.StatusOK, &st)
		want := stats.Standing{Authority: w4, Month: "2026-11", Volume: "735000000", MakerVolume: "580000000", TakerVolume: "155000000",
			Pnl: "20000000", Rank: stats.Ranks{Pnl: i64(3), Volume: i64(4), Maker: i64(3), Taker: i64(5)}}
		if !reflect.DeepEqual(st.Data, want) {
			t.Errorf("w4's standing %+v, want %+v", st.Data, want)
		}
		s.GetJSON(t, "/stats/leaderboard/"+w5, http.StatusOK, &st)
		if st.Data.Rank.Maker != nil || st.Data.Rank.Pnl != nil || *st.Data.Rank.Taker != 3 || st.Data.Pnl != "0" {
			t.Errorf("w5's standing %+v", st.Data)
		}
		s.GetJSON(t, "/stats/leaderboard/"+kittest.Key(999), http.StatusOK, &st)
		if st.Data.Volume != "0" || st.Data.Rank != (stats.Ranks{}) {
			t.Errorf("a stranger's standing %+v", st.Data)
		}
		// Last month: nothing.
		if b := get[board](t, s, "/stats/leaderboard?sort=volume&month=2026-10"); len(b.Records) != 0 || b.Meta.Month != "2026-10" {
			t.Errorf("October: %+v", b)
		}
	})

	t.Run("spot rates", func(t *testing.T) {
		type rates struct{ Rates [][2]any }
		h := stats.HourOf(nowS)
		for path, want := range map[string][][2]any{
			// The later sample of the hour two hours ago, then this hour's.
			"/stats/USDC/rateHistory/deposit":        {{float64(h - 2*hour), "51000"}, {float64(h), "52000"}},
			"/stats/USDC/rateHistory/borrow":         {{float64(h - 2*hour), "81000"}, {float64(h), "82000"}},
			"/stats/USDC/rateHistory/borrow_balance": {{float64(h - 2*hour), "20400000"}, {float64(h), "20800000"}},
			// SOL's samples carry no lending: its deposits' balances.
			"/stats/SOL/rateHistory/deposit_balance": {{float64(h - hour), "7000000000000"}},
			"/stats/SOL/rateHistory/deposit":         {},
			"/stats/USDC/rateHistory/deposit?days=1": {{float64(h - 2*hour), "51000"}, {float64(h), "52000"}},
		} {
			if got := get[rates](t, s, path).Rates; !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s: %v, want %v", path, got, want)
			}
		}
	})

	t.Run("insurance fund", func(t *testing.T) {
		var got struct{ Records []stats.InsuranceFund }
		s.GetJSON(t, "/stats/insuranceFund", http.StatusOK, &got)
		if len(got.Records) != 1 {
			t.Fatalf("%d funds, want USDC's", len(got.Records))
		}
		f := got.Records[0]
		// The stake an hour ago is later than the last movement: it states the vault and the shares.
		if f.Symbol != "USDC" || f.VaultBalance != "2011000" || f.TotalShares != "110" || f.UserShares == nil || *f.UserShares != "10" ||
			!reflect.DeepEqual(f.Revenue, map[string]events.Amount{"24h": "1000", "7d": "1500", "30d": "1500"}) ||
			f.Apy == nil || *f.Apy != "0.91" || len(f.RecentFlows) != 3 {
			t.Errorf("USDC fund %+v", f)
		}
	})

	t.Run("vaults and params", func(t *testing.T) {
		var v struct {
			Records []struct {
				Slot              int64
				TotalAccountValue string
				Pnl               string
			}
		}
		s.GetJSON(t, "/stats/vaults", http.StatusOK, &v)
		if len(v.Records) != 1 || v.Records[0].Slot != 400_000_300 || v.Records[0].Pnl != "100000000" {
			t.Errorf("vaults %+v", v.Records)
		}
		rec := s.Get(t, "/params")
		if rec.Header().Get("Cache-Control") != "public, max-age=60" || strings.TrimSpace(rec.Body.String()) !=
			`{"success":true,"ts":`+itoa(nowS-hour)+`,"params":{"maintenance":false,"fundingPeriod":3600}}` {
			t.Errorf("params: %s %s", rec.Header().Get("Cache-Control"), rec.Body)
		}
		rec = s.Get(t, "/vaults")
		if rec.Header().Get("Cache-Control") != "public, max-age=60" {
			t.Errorf("vaults: Cache-Control %q", rec.Header().Get("Cache-Control"))
		}
	})

	t.Run("aggregator contracts", func(t *testing.T) {
		var got struct{ Contracts []stats.Contract }
		s.GetJSON(t, "/external/aggregator/contracts", http.StatusOK, &got)
		if len(got.Contracts) != 2 {
			t.Fatalf("%d contracts, want the two perp markets", len(got.Contracts))
		}
		want := stats.Contract{
			ContractIndex: 0, TickerID: "SOL-PERP", BaseCurrency: "SOL", QuoteCurrency: "USDC", LastPrice: "155.000000",
			BaseVolume: "7.000000000", QuoteVolume: "1045.000000", High: "160.000000", Low: "130.000000", ProductType: "PERPETUAL",
			OpenInterest: "999.000000000", OpenInterestUsd: "155244.600000", IndexPrice: "155.400000", IndexName: "SOL-USD",
			IndexCurrency: "USD",
			// 12,500 (1e9) at 155.40: 0.0000080437 %; the premium (155.60 - 155.40) / 155.40 / 24 in percent.
			FundingRate: "0.000008044", NextFundingRate: "0.005362505",
			NextFundingRateTimestamp: itoa(kittest.At("2026-11-19T16:00:00Z") * 1000), ContractType: "vanilla", ContractPriceCurrency: "USDC",
		}
		if got.Contracts[0] != want {
			t.Errorf("SOL-PERP:\n got %+v\nwant %+v", got.Contracts[0], want)
		}
	})

	// Everything again, as a producer that sends twice would, and every topic read again from its
	// start, as an indexer that reads blocks again after a crash produces it.
	before := snapshot(t, s)
	counts := tableCounts(t, s)
	feed(t, s, msgs...)
	feed(t, s, lateUser(t)...)
	sameViews(t, "a second delivery", before, snapshot(t, s))
	s.Restart(t, "stats", true)
	feed(t, s, encode(t, events.TopicParams, &events.Params{Ts: nowS - 3*hour, Params: []byte(`{"old":true}`)})...)
	sameViews(t, "a rewound restart", before, snapshot(t, s))
	if after := tableCounts(t, s); !reflect.DeepEqual(after, counts) {
		t.Errorf("replays changed the tables:\n before %v\n after  %v", counts, after)
	}
}

func tableCounts(t *testing.T, s *kittest.Stack) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tb := range []string{"fills", "trade_minutes", "trade_hours", "wallet_months", "pending_volumes",
		"pending_pnl", "accounts", "settlements", "liquidations", "funding_rates", "insurance_fund", "if_stakes", "swaps"} {
		out[tb] = s.Count(t, "stats."+tb)
	}
	return out
}

func deref(m map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = "null"
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func i64(v int64) *int64 { return &v }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
