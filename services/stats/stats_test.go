package stats_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/services/stats"
)

func at(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

func TestWindowSplit(t *testing.T) {
	tests := []struct {
		name    string
		w       stats.Window
		hours   stats.Range
		minutes []stats.Range
	}{
		// The minutes before the first whole hour, then hours to the end of the present one.
		{"24 h not on the hour", stats.Rolling(time.Unix(at("2026-11-19T15:30:10Z"), 0), 24*time.Hour),
			stats.Range{From: at("2026-11-18T16:00:00Z"), To: at("2026-11-19T16:00:00Z")},
			[]stats.Range{{From: at("2026-11-18T15:31:00Z"), To: at("2026-11-18T16:00:00Z")}}},
		{"24 h ending with the hour's last minute", stats.Rolling(time.Unix(at("2026-11-19T15:59:59Z"), 0), 24*time.Hour),
			stats.Range{From: at("2026-11-18T16:00:00Z"), To: at("2026-11-19T16:00:00Z")}, nil},
		{"1 h", stats.Rolling(time.Unix(at("2026-11-19T15:30:10Z"), 0), time.Hour),
			stats.Range{From: at("2026-11-19T15:00:00Z"), To: at("2026-11-19T16:00:00Z")},
			[]stats.Range{{From: at("2026-11-19T14:31:00Z"), To: at("2026-11-19T15:00:00Z")}}},
		{"inside one hour", stats.Window{From: at("2026-11-19T15:10:00Z"), To: at("2026-11-19T15:40:00Z")},
			stats.Range{}, []stats.Range{{From: at("2026-11-19T15:10:00Z"), To: at("2026-11-19T15:40:00Z")}}},
		{"whole hours", stats.Hours(at("2026-11-19T09:30:00Z"), at("2026-11-19T11:59:59Z")),
			stats.Range{From: at("2026-11-19T09:00:00Z"), To: at("2026-11-19T11:00:00Z")}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hours, minutes := tc.w.Split()
			if hours != tc.hours || !reflect.DeepEqual(minutes, tc.minutes) {
				t.Errorf("Split = %v %v, want %v %v", hours, minutes, tc.hours, tc.minutes)
			}
			// The parts start where the window does and reach its end (or the end of its hour).
			first := hours.From
			if len(minutes) > 0 {
				first = minutes[0].From
			}
			last := hours.To
			if hours.Empty() {
				last = minutes[len(minutes)-1].To
			}
			if first != tc.w.From || last < tc.w.To || last-tc.w.To >= stats.Hour {
				t.Errorf("parts cover [%d, %d) for [%d, %d)", first, last, tc.w.From, tc.w.To)
			}
		})
	}
	if w := stats.Rolling(time.Unix(at("2026-11-19T15:30:10Z"), 0), 24*time.Hour); w.To-w.From != 86400 || w.To != at("2026-11-19T15:31:00Z") {
		t.Errorf("Rolling = %+v", w)
	}
}

func TestMonths(t *testing.T) {
	if m := stats.MonthOf(at("2026-11-30T23:59:59Z")); m != at("2026-11-01T00:00:00Z") {
		t.Errorf("MonthOf the last second = %d", m)
	}
	if m := stats.MonthOf(at("2026-12-01T00:00:00Z")); m != at("2026-12-01T00:00:00Z") {
		t.Errorf("MonthOf midnight = %d", m)
	}
	now := time.Unix(at("2026-11-19T15:30:00Z"), 0)
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"", at("2026-11-01T00:00:00Z"), ""},
		{"2022-01", at("2022-01-01T00:00:00Z"), ""},
		{"2026-11", at("2026-11-01T00:00:00Z"), ""},
		{"2026-12", 0, "from 2022-01 to 2026-11"},
		{"2021-12", 0, "from 2022-01 to 2026-11"},
		{"2026-00", 0, "YYYY-MM"},
		{"2026-1", 0, "YYYY-MM"},
		{"2026-11-01", 0, "YYYY-MM"},
	} {
		got, err := stats.ParseMonth(tc.in, now)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && (fault.CodeOf(err) != fault.Invalid || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseMonth(%q) = %d, %v", tc.in, got, err)
		}
	}
}

func TestVolumeRange(t *testing.T) {
	for _, tc := range []struct {
		start, end string
		want       stats.Window
		err        string
	}{
		{"1795078800", "1795082400", stats.Window{From: 1795078800, To: 1795082400}, ""},
		{"1795078801", "1795085999", stats.Window{From: 1795078800, To: 1795082400}, ""},
		{"1795078800", "1795165200", stats.Window{From: 1795078800, To: 1795165200}, ""},
		{"1795078800", "1795168800", stats.Window{}, "between 1 and 24 hours"},
		{"1795078800", "1795078800", stats.Window{}, "less than"},
		{"1795078900", "1795079000", stats.Window{}, "between 1 and 24 hours"},
		{"", "1795079000", stats.Window{}, "startTs is required"},
		{"1e9", "1795079000", stats.Window{}, "startTs must be an integer"},
		{"1795078800", "99999999999999999999", stats.Window{}, "endTs must be an integer"},
	} {
		got, err := stats.VolumeRange(tc.start, tc.end)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("VolumeRange(%s, %s) = %+v, %v", tc.start, tc.end, got, err)
		}
	}
}

func leaders(figs ...string) []stats.Leader {
	out := make([]stats.Leader, len(figs))
	for i, f := range figs {
		out[i] = stats.Leader{Authority: string(rune('a' + i)), Volume: events.Amount(f)}
	}
	return out
}

func ranks(ls []stats.Leader) []int64 {
	var out []int64
	for _, l := range ls {
		out = append(out, l.Rank)
	}
	return out
}

func TestRankTies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		figs   []string
		offset int
		ahead  int64
		want   []int64
	}{
		{"first page", []string{"50", "40", "40", "10"}, 0, 0, []int64{1, 2, 2, 4}},
		{"all tied", []string{"7", "7", "7"}, 0, 0, []int64{1, 1, 1}},
		// The page starts inside a tie that began on the page before: three wallets are ahead of it.
		{"a tie across pages", []string{"40", "40", "30"}, 4, 3, []int64{4, 4, 7}},
		{"negative P&L", []string{"100", "-5", "-5", "-90"}, 0, 0, []int64{1, 2, 2, 4}},
		{"beyond 64 bits", []string{"99999999999999999999999", "99999999999999999999998", "100"}, 0, 0, []int64{1, 2, 3}},
		{"across signs and lengths", []string{"10", "9", "0", "-9", "-10"}, 0, 0, []int64{1, 2, 3, 4, 5}},
	} {
		ls := leaders(tc.figs...)
		if err := stats.Rank(ls, stats.BoardVolume, tc.offset, tc.ahead); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ranks(ls); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ranks %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, bad := range [][]string{{"1", "2"}, {"-10", "-9"}, {"9", "10"}, {"x", "1"}} {
		if err := stats.Rank(leaders(bad...), stats.BoardVolume, 0, 0); err == nil {
			t.Errorf("%v was ranked", bad)
		}
	}
}

func testFill(quote, base, oracle string, id string) *events.Fill {
	return &events.Fill{
		Tx: events.Tx{Ts: at("2026-11-19T10:00:00Z"), TxSig: "sig", Slot: 1}, MarketIndex: 0, MarketType: events.MarketTypePerp, Symbol: "SOL-PERP",
		FillRecordID: id, Taker: "taker", Maker: "maker", QuoteAssetAmountFilled: events.Amount(quote),
		BaseAssetAmountFilled: events.Amount(base), OraclePrice: events.Amount(oracle),
	}
}

func TestFillOf(t *testing.T) {
	for _, tc := range []struct {
		quote, base string
		price       int64
		err         string
	}{
		{"150250000", "1000000000", 150_250_000, ""},
		// quote * 1e9 / base, rounded half up.
		{"1", "3000000000", 0, ""},
		{"2", "3000000000", 1, ""},
		{"100000000", "3", 33_333_333_333_333_333, ""},
		// Beyond 64 bits for quote * 1e9, still a price.
		{"900000000000000000000", "1000000000000000", 900_000_000_000_000, ""},
		{"1", "0", 0, "must be positive"},
		{"-5", "1000000000", 0, "must not be negative"},
		{"10000000000000000000", "1", 0, "beyond 64 bits"},
	} {
		f, err := stats.FillOf(testFill(tc.quote, tc.base, "150000000", "7"))
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) || err == nil && f.Price != tc.price {
			t.Errorf("FillOf(%s / %s) = %d, %v; want %d, %q", tc.quote, tc.base, f.Price, err, tc.price, tc.err)
		}
	}
	noSymbol := testFill("1", "1", "1", "7")
	noSymbol.Symbol = ""
	if _, err := stats.FillOf(noSymbol); err == nil || !strings.Contains(err.Error(), "no symbol") {
		t.Errorf("a fill without symbol: %v", err)
	}
}

func TestBucketsAndAccountVolumes(t *testing.T) {
	mk := func(ts int64, id, quote, base, oracle, taker, maker string) stats.Fill {
		f := testFill(quote, base, oracle, id)
		f.Ts, f.Taker, f.Maker = ts, taker, maker
		out, err := stats.FillOf(f)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t0 := at("2026-11-19T10:00:00Z")
	fills := []stats.Fill{
		mk(t0+30, "3", "160000000", "1000000000", "159000000", "a", "b"),
		mk(t0+10, "1", "150000000", "1000000000", "151000000", "a", ""),
		mk(t0+30, "2", "140000000", "1000000000", "141000000", "b", "a"),
		mk(t0+90, "4", "9223372036854775807", "9223372036854775807", "1", "a", "b"), // sums past 64 bits
		// The last second of October: another month.
		mk(at("2026-10-31T23:59:59Z"), "5", "1000000", "1000000000", "1000000", "a", "b"),
	}
	minutes := stats.Buckets(fills, stats.Minute)
	if len(minutes) != 3 {
		t.Fatalf("%d minute buckets", len(minutes))
	}
	m := minutes[1] // 10:00
	if m.Fills != 3 || m.Quote.String() != "450000000" || m.FillHigh != 160_000_000 || m.FillLow != 140_000_000 ||
		m.OracleHigh != 159_000_000 || m.OracleLow != 141_000_000 || m.LastID != 3 || m.Close != 160_000_000 {
		t.Errorf("10:00 %+v", m)
	}
	hours := stats.Buckets(fills, stats.Hour)
	if h := hours[1]; h.Fills != 4 || h.Quote.String() != "9223372037304775807" || h.LastID != 4 {
		t.Errorf("10:00 hour %+v (quote %s)", h, h.Quote)
	}
	// The hours rolled up from the minutes are the hours of the fills.
	if got := stats.Rollup(minutes, stats.Hour); !reflect.DeepEqual(got, hours) {
		t.Errorf("rolled up %+v, want %+v", got, hours)
	}
	vols := stats.AccountVolumes(fills)
	got := map[string][2]string{}
	for _, v := range vols {
		got[stats.MonthLabel(v.Month)+" "+v.Account] = [2]string{v.Maker.String(), v.Taker.String()}
	}
	want := map[string][2]string{
		"2026-10 a": {"0", "1000000"}, "2026-10 b": {"1000000", "0"},
		"2026-11 a": {"140000000", "9223372037164775807"}, "2026-11 b": {"9223372037014775807", "140000000"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("account volumes %v, want %v", got, want)
	}
}

func TestSumOverflows(t *testing.T) {
	s, _ := stats.ParseSum("9223372036854775807")
	one, _ := stats.ParseSum("1")
	s.Add(one)
	if s.String() != "9223372036854775808" || s.Sign() != 1 {
		t.Errorf("sum %s", s)
	}
	neg, _ := stats.ParseSum("-9223372036854775809")
	s.Add(neg)
	if s.String() != "-1" || !strings.HasPrefix(s.String(), "-") || s.IsZero() {
		t.Errorf("sum %s", s)
	}
}

func TestSummaryWithoutStateOrFills(t *testing.T) {
	spot := stats.MarketData{Market: events.Market{Symbol: "USDC", Index: 0, Type: events.MarketTypeSpot},
		State: &stats.State{Ts: 10, Slot: 20, OraclePrice: 1_000_000}}
	s := spot.Summary()
	if s.Price != "1000000" || s.MarkPrice != "1000000" || s.MarkPriceSlot != 20 || s.QuoteVolume != "0" || s.LastTradeTs != nil ||
		s.PriceHigh.Fill != nil || s.MarketFilter != "spot" {
		t.Errorf("spot without fills %+v", s)
	}
	if _, ok := spot.Contract(100); ok {
		t.Error("a spot market is a perpetual contract")
	}
	bet := stats.MarketData{Market: events.Market{Symbol: "X-BET", Index: 3, Type: events.MarketTypePerp},
		Last: &stats.LastTrade{Ts: 5, Slot: 6, Price: 350_000, OraclePrice: 351_000}}
	if _, ok := bet.Contract(100); ok {
		t.Error("a prediction market is a perpetual contract")
	}
	if p := bet.Pricing(); p.OraclePrice != "351000" || p.MarkPrice != "350000" || p.OraclePriceSlot != 6 {
		t.Errorf("prediction market without state %+v", p)
	}
	// A drop from the price 24 hours ago, rounded half away from zero.
	ago := int64(150_000_000)
	down := stats.MarketData{Market: events.Market{Symbol: "S-PERP", Type: events.MarketTypePerp}, AgoPrice: &ago,
		Last: &stats.LastTrade{Price: 140_000_000}}
	if s := down.Summary(); *s.PriceChange24h != "-10000000" || *s.PriceChange24hPercent != "-6.67" {
		t.Errorf("change %s %s", *s.PriceChange24h, *s.PriceChange24hPercent)
	}
}
