package market_test

import (
	"encoding/json"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/services/market"
)

func ts(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

func TestFloorAndStep(t *testing.T) {
	// 2026-11-19 is a Thursday.
	at := ts("2026-11-19T13:47:31Z")
	cases := []struct {
		res       market.Resolution
		floor     string
		next, prv string
	}{
		{"1", "2026-11-19T13:47:00Z", "2026-11-19T13:48:00Z", "2026-11-19T13:46:00Z"},
		{"5", "2026-11-19T13:45:00Z", "2026-11-19T13:50:00Z", "2026-11-19T13:40:00Z"},
		{"15", "2026-11-19T13:45:00Z", "2026-11-19T14:00:00Z", "2026-11-19T13:30:00Z"},
		{"60", "2026-11-19T13:00:00Z", "2026-11-19T14:00:00Z", "2026-11-19T12:00:00Z"},
		{"240", "2026-11-19T12:00:00Z", "2026-11-19T16:00:00Z", "2026-11-19T08:00:00Z"},
		{"D", "2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z", "2026-11-18T00:00:00Z"},
		{"W", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z", "2026-11-09T00:00:00Z"},
		{"M", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "2026-10-01T00:00:00Z"},
	}
	for _, c := range cases {
		t.Run(string(c.res), func(t *testing.T) {
			f := c.res.Floor(at)
			if f != ts(c.floor) {
				t.Fatalf("Floor = %s, want %s", time.Unix(f, 0).UTC(), c.floor)
			}
			if got := c.res.Floor(f); got != f {
				t.Fatalf("Floor is not idempotent: %d -> %d", f, got)
			}
			if got := c.res.Step(f, 1); got != ts(c.next) {
				t.Fatalf("Step(+1) = %s, want %s", time.Unix(got, 0).UTC(), c.next)
			}
			if got := c.res.Step(f, -1); got != ts(c.prv) {
				t.Fatalf("Step(-1) = %s, want %s", time.Unix(got, 0).UTC(), c.prv)
			}
		})
	}
	// Weeks start on Monday even for a Sunday and for Monday itself.
	if got := market.Resolution("W").Floor(ts("2026-11-22T23:59:59Z")); got != ts("2026-11-16T00:00:00Z") {
		t.Fatalf("Sunday floors to %s", time.Unix(got, 0).UTC())
	}
	if got := market.Resolution("W").Floor(ts("2026-11-16T00:00:00Z")); got != ts("2026-11-16T00:00:00Z") {
		t.Fatalf("Monday floors to %s", time.Unix(got, 0).UTC())
	}
	// Months step across year ends.
	if got := market.Resolution("M").Step(ts("2026-12-01T00:00:00Z"), 1); got != ts("2027-01-01T00:00:00Z") {
		t.Fatalf("December steps to %s", time.Unix(got, 0).UTC())
	}
}

func TestParseResolution(t *testing.T) {
	for _, ok := range []string{"1", "5", "15", "60", "240", "D", "W", "M"} {
		if _, err := market.ParseResolution(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "2", "1D", "d", "m", "1440"} {
		if _, err := market.ParseResolution(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func trade(t *testing.T, at int64, id, quote, base, oracle string) market.Trade {
	t.Helper()
	tr, ok := market.TradeOf("SOL-PERP", at, id, quote, base, oracle)
	if !ok {
		t.Fatalf("TradeOf rejected %s %s %s", quote, base, oracle)
	}
	return tr
}

func TestTradeOf(t *testing.T) {
	// 2.5 SOL for 375 USDC: price 150; oracle 149.9.
	tr := trade(t, 100, "7", "375000000", "2500000000", "149900000")
	if tr.Price != 150 || tr.Oracle != 149.9 || tr.FillRecordID != 7 {
		t.Fatalf("got %+v", tr)
	}
	// A short (negative base) still trades at a positive price.
	tr = trade(t, 100, "8", "-375000000", "-2500000000", "149900000")
	if tr.Price != 150 || tr.Base.Cmp(big.NewInt(2500000000)) != 0 {
		t.Fatalf("got %+v", tr)
	}
	if _, ok := market.TradeOf("SOL-PERP", 1, "1", "1", "0", "1"); ok {
		t.Fatal("zero base accepted")
	}
	if _, ok := market.TradeOf("SOL-PERP", 1, "x", "1", "1", "1"); ok {
		t.Fatal("non-numeric id accepted")
	}
}

func TestAggregateAndAssemble(t *testing.T) {
	base := ts("2026-11-19T10:00:00Z")
	// Fills arrive out of order; ids break the tie at equal ts.
	trades := []market.Trade{
		trade(t, base+130, "4", "303000000", "2000000000", "151000000"), // 10:02:10 price 151.5
		trade(t, base+10, "1", "150000000", "1000000000", "150000000"),  // 10:00:10 price 150
		trade(t, base+50, "3", "148000000", "1000000000", "149000000"),  // 10:00:50 price 148
		trade(t, base+50, "2", "152000000", "1000000000", "151000000"),  // 10:00:50 price 152 (id 2 before 3)
	}
	deltas := market.Aggregate(trades)
	var one []*market.Delta
	for _, d := range deltas {
		if d.Resolution == "1" {
			one = append(one, d)
		}
	}
	if len(one) != 2 || len(deltas) != 2+7 {
		t.Fatalf("got %d one-minute deltas and %d in all, want 2 and 9", len(one), len(deltas))
	}
	d := one[0]
	if d.Ts != base || d.FillFirst != 150 || d.FillClose != 148 || d.FillHigh != 152 || d.FillLow != 148 ||
		d.OracleFirst != 150 || d.OracleClose != 149 || d.OracleHigh != 151 || d.OracleLow != 149 ||
		d.Quote.String() != "450000000" || d.Base.String() != "3000000000" || d.LastID != 3 {
		t.Fatalf("minute 10:00 delta %+v", d)
	}
	if !reflect.DeepEqual(d.Trades, []int{1, 3, 2}) {
		t.Fatalf("trade order %v", d.Trades)
	}
	for _, d := range deltas {
		if d.Resolution == "60" && (d.FillFirst != 150 || d.FillClose != 151.5 || d.Quote.String() != "753000000") {
			t.Fatalf("hour delta %+v", d)
		}
	}

	// Stored buckets as the ingest would keep them, then laid out with the empty minute between.
	stored := []market.Bucket{
		{Ts: base, FillFirst: 150, FillHigh: 152, FillLow: 148, FillClose: 148, OracleFirst: 150, OracleHigh: 151, OracleLow: 149, OracleClose: 149, QuoteVolume: 450, BaseVolume: 3},
		{Ts: base + 120, FillFirst: 151.5, FillHigh: 151.5, FillLow: 151.5, FillClose: 151.5, OracleFirst: 151, OracleHigh: 151, OracleLow: 151, OracleClose: 151, QuoteVolume: 303, BaseVolume: 2},
	}
	w := market.Window("1", base, base+180, 100, time.Unix(base+200, 0))
	got := market.Assemble("1", w, stored, nil)
	want := []market.Candle{
		{Ts: base, FillOpen: 150, FillHigh: 152, FillClose: 148, FillLow: 148, OracleOpen: 150, OracleHigh: 151, OracleClose: 149, OracleLow: 149, QuoteVolume: 450, BaseVolume: 3},
		{Ts: base + 60, FillOpen: 148, FillHigh: 148, FillClose: 148, FillLow: 148, OracleOpen: 149, OracleHigh: 149, OracleClose: 149, OracleLow: 149},
		{Ts: base + 120, FillOpen: 148, FillHigh: 151.5, FillClose: 151.5, FillLow: 148, OracleOpen: 149, OracleHigh: 151, OracleClose: 151, OracleLow: 149, QuoteVolume: 303, BaseVolume: 2},
		{Ts: base + 180, FillOpen: 151.5, FillHigh: 151.5, FillClose: 151.5, FillLow: 151.5, OracleOpen: 151, OracleHigh: 151, OracleClose: 151, OracleLow: 151},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Assemble:\n got %+v\nwant %+v", got, want)
	}
}

func TestWindow(t *testing.T) {
	now := time.Unix(ts("2026-11-19T10:30:30Z"), 0)
	cases := []struct {
		name       string
		res        market.Resolution
		start, end int64
		limit      int
		lo, hi     int64
		desc       bool
	}{
		{"forward", "1", ts("2026-11-19T10:00:10Z"), ts("2026-11-19T10:05:00Z"), 100, ts("2026-11-19T10:00:00Z"), ts("2026-11-19T10:05:00Z"), false},
		{"forward limited", "1", ts("2026-11-19T10:00:10Z"), ts("2026-11-19T11:05:00Z"), 3, ts("2026-11-19T10:00:00Z"), ts("2026-11-19T10:02:00Z"), false},
		{"forward stops at now", "60", ts("2026-11-19T08:00:00Z"), ts("2026-11-20T00:00:00Z"), 100, ts("2026-11-19T08:00:00Z"), ts("2026-11-19T10:00:00Z"), false},
		{"backward from now", "1", now.Unix(), 1668470400, 5, ts("2026-11-19T10:26:00Z"), ts("2026-11-19T10:30:00Z"), true},
		{"backward bounded by end", "D", now.Unix(), ts("2026-11-18T12:00:00Z"), 100, ts("2026-11-18T00:00:00Z"), ts("2026-11-19T00:00:00Z"), true},
		{"monthly backward", "M", now.Unix(), 1668470400, 3, ts("2026-09-01T00:00:00Z"), ts("2026-11-01T00:00:00Z"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := market.Window(c.res, c.start, c.end, c.limit, now)
			if w.Lo != c.lo || w.Hi != c.hi || w.Descending != c.desc {
				t.Fatalf("got [%s, %s] desc=%v, want [%s, %s] desc=%v",
					time.Unix(w.Lo, 0).UTC(), time.Unix(w.Hi, 0).UTC(), w.Descending,
					time.Unix(c.lo, 0).UTC(), time.Unix(c.hi, 0).UTC(), c.desc)
			}
		})
	}
	// A future start has no buckets.
	if w := market.Window("1", now.Unix()+3600, now.Unix()+7200, 10, now); w.Hi >= w.Lo {
		t.Fatalf("future window %+v", w)
	}
}

func TestCandleAppendJSONMatchesEncodingJSON(t *testing.T) {
	values := []float64{0, 1, -1, 150.123456, 0.61, 1e-7, 3.5e-9, 1e21, 123456789012.5, 0.000001, 1e20, 60000.000001}
	for i, v := range values {
		c := market.Candle{Ts: int64(i) * 60, FillOpen: v, FillHigh: -v, FillClose: v / 3, FillLow: v * 7,
			OracleOpen: v, OracleHigh: v, OracleClose: v, OracleLow: v, QuoteVolume: v * 1e3, BaseVolume: v / 1e3}
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("value %g:\n got %s\nwant %s", v, got, want)
		}
	}
}
