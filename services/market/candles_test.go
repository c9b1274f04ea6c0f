package market_test

import (
	"cmp"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
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
	if tr.Price != 150 || tr.Base.String() != "2500000000" {
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
	if !reflect.DeepEqual(one[1].Trades, []int{0}) {
		t.Fatalf("minute 10:02 trades %v", one[1].Trades)
	}
	// Deltas share their trade lists' memory: appending to one must leave the next bucket's alone.
	_ = append(d.Trades, 99)
	if !reflect.DeepEqual(one[1].Trades, []int{0}) {
		t.Fatalf("appending to a delta's trades changed the next one's: %v", one[1].Trades)
	}
	for _, d := range deltas {
		if d.Resolution == "60" && !reflect.DeepEqual(d.Trades, []int{1, 3, 2, 0}) {
			t.Fatalf("hour trades %v", d.Trades)
		}
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

// TestAppendJSONDecimalsMatchEncodingJSON: prices and volumes as the store returns them (whole
// millionths, volumes in protocol units divided by 1e6 or 1e9) are written from their integer, and
// must read exactly as encoding/json writes them, at every magnitude the fast path takes and around
// its limits.
func TestAppendJSONDecimalsMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 50_000 {
		digits := 1 + rng.IntN(16)
		n := rng.Int64N(int64(math.Pow10(digits)))
		v := float64(n) / 1e6
		if i%2 == 1 {
			v = float64(n) / 1e9
		}
		if i%7 == 0 {
			v = -v
		}
		c := market.Candle{FillOpen: v, QuoteVolume: math.Round(v*1e6) / 1e6, BaseVolume: v * 3}
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("value %v:\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestParseVolume(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"0", "0", true},
		{"2500000000", "2500000000", true},
		{"-2500000000", "2500000000", true},
		{"18446744073709551615", "18446744073709551615", true},  // max uint64
		{"-18446744073709551616", "18446744073709551616", true}, // one past: big
		{"123456789012345678901234567890", "123456789012345678901234567890", true},
		{"", "", false},
		{"-", "", false},
		{"+5", "", false},
		{"--5", "", false},
		{"1.5", "", false},
		{"1_000", "", false},
		{"99999999999999999999x", "", false},
	}
	for _, tc := range tests {
		v, ok := market.ParseVolume(tc.in)
		if ok != tc.ok || ok && v.String() != tc.want {
			t.Errorf("ParseVolume(%q) = %s, %v; want %s, %v", tc.in, v, ok, tc.want, tc.ok)
		}
	}
}

func TestVolumeAddCarriesIntoBig(t *testing.T) {
	max64, _ := market.ParseVolume("18446744073709551615")
	one, _ := market.ParseVolume("1")
	var v market.Volume
	v.Add(max64)
	v.Add(one)
	if v.String() != "18446744073709551616" {
		t.Fatalf("max uint64 + 1 = %s", v)
	}
	v.Add(max64)
	if v.String() != "36893488147419103231" || v.Float64() != 36893488147419103231.0 {
		t.Fatalf("sum %s (%g)", v, v.Float64())
	}
	if !new(market.Volume).IsZero() || v.IsZero() {
		t.Fatal("IsZero")
	}
}

// TestAggregateMatchesBruteForce checks every delta of shuffled trades over calendar boundaries
// against the bucket's trades picked out and folded one by one.
func TestAggregateMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	start := ts("2026-11-29T23:00:00Z") // a Sunday night, two days before December
	var trades []market.Trade
	for i := range 3000 {
		sym := []string{"SOL-PERP", "BTC-PERP", "SOL"}[rng.IntN(3)]
		at := start + rng.Int64N(3*86400)
		base := strconv.FormatInt(int64(1+rng.IntN(1000))*1_000_000, 10)
		quote := strconv.FormatInt(int64(1+rng.IntN(1_000_000))*1000, 10)
		if i%500 == 0 {
			quote = "30000000000000000000" // over 64 bits: sums go big
		}
		oracle := strconv.FormatInt(int64(100+rng.IntN(100))*1_000_000, 10)
		trades = append(trades, trade(t, at, strconv.Itoa(rng.IntN(100)), quote, base, oracle))
		trades[len(trades)-1].Symbol = sym
	}
	deltas := market.Aggregate(trades)
	type key struct {
		sym string
		res market.Resolution
		ts  int64
	}
	rank := map[market.Resolution]int{}
	for i, r := range market.Resolutions() {
		rank[r] = i
	}
	seen := map[key]bool{}
	for i, d := range deltas {
		if i > 0 {
			p := deltas[i-1]
			if c := cmp.Or(cmp.Compare(p.Symbol, d.Symbol), cmp.Compare(rank[p.Resolution], rank[d.Resolution]), cmp.Compare(p.Ts, d.Ts)); c >= 0 {
				t.Fatalf("delta %d (%s %s %d) not after %s %s %d", i, d.Symbol, d.Resolution, d.Ts, p.Symbol, p.Resolution, p.Ts)
			}
		}
		seen[key{d.Symbol, d.Resolution, d.Ts}] = true
		var in []int
		for j, tr := range trades {
			if tr.Symbol == d.Symbol && d.Resolution.Floor(tr.Ts) == d.Ts {
				in = append(in, j)
			}
		}
		slices.SortStableFunc(in, func(a, b int) int {
			return cmp.Or(cmp.Compare(trades[a].Ts, trades[b].Ts), cmp.Compare(trades[a].FillRecordID, trades[b].FillRecordID))
		})
		if !slices.Equal(in, d.Trades) {
			t.Fatalf("%s %s %d: trades %v, want %v", d.Symbol, d.Resolution, d.Ts, d.Trades, in)
		}
		first, last := trades[in[0]], trades[in[len(in)-1]]
		var quote, base market.Volume
		hi, lo := first.Price, first.Price
		for _, j := range in {
			quote.Add(trades[j].Quote)
			base.Add(trades[j].Base)
			hi, lo = max(hi, trades[j].Price), min(lo, trades[j].Price)
		}
		if d.FirstTs != first.Ts || d.FirstID != first.FillRecordID || d.FillFirst != first.Price ||
			d.LastTs != last.Ts || d.LastID != last.FillRecordID || d.FillClose != last.Price || d.OracleClose != last.Oracle ||
			d.FillHigh != hi || d.FillLow != lo || d.Quote.String() != quote.String() || d.Base.String() != base.String() {
			t.Fatalf("%s %s %d: got %+v", d.Symbol, d.Resolution, d.Ts, d)
		}
	}
	// Every trade is in exactly one bucket per resolution.
	for _, tr := range trades {
		for _, r := range market.Resolutions() {
			if !seen[key{tr.Symbol, r, r.Floor(tr.Ts)}] {
				t.Fatalf("no %s delta for a trade at %d", r, tr.Ts)
			}
		}
	}
}
