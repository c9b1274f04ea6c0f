package service_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/amm"
	"github.com/tidemark/tidemark/services/amm/postgres"
	"github.com/tidemark/tidemark/services/amm/service"
)

// TestSeries: every series over a window of 20-second steps, its values exact decimal strings, and
// the Cache-Control of a finished window and of one that reaches now.
func TestSeries(t *testing.T) {
	s := start(t, service.Config{})
	s.Ingest(t, encode(t,
		mstate(solPerp, hour+5, slotAt(hour+5, 0), 149, 7),
		mstate(solPerp, hour+15, slotAt(hour+15, 0), 150, 10), // bucket [hour, hour+20): its last state
		mstate(solPerp, hour+25, slotAt(hour+25, 0), 151, -3), // bucket [hour+20, hour+40)
		mstate(solPerp, hour+3601, slotAt(hour+3601, 0), 152, 0),
		mstate(btcPerp, hour+10, slotAt(hour+10, 1), 90000, 1),
		mstate(solSpot, hour+3, slotAt(hour+3, 2), 148, 0),
	)...)
	// Instants hour, +20, +40, +60, +80: the first has no complete bucket with a state yet; want are
	// the values of the rows at the others.
	cases := []struct {
		series, market string
		want           []string
	}{
		{"position", "SOL-PERP", []string{"10.000000001", "-2.999999999", "-2.999999999", "-2.999999999"}},
		{"bidAskPrice", "SOL-PERP", []string{"149.962500 150.037501", "150.962500 151.037501", "150.962500 151.037501", "150.962500 151.037501"}},
		{"oraclePrice", "SOL-PERP", []string{"150.000000", "151.000000", "151.000000", "151.000000"}},
		{"spreads", "SOL-PERP", []string{"0.0250 100.0001", "0.0250 100.0001", "0.0250 100.0001", "0.0250 100.0001"}},
		{"openInterest", "SOL-PERP", []string{"9000.000000123", "9000.000000123", "9000.000000123", "9000.000000123"}},
		{"oraclePrice", "BTC-PERP", []string{"90000.000000", "90000.000000", "90000.000000", "90000.000000"}},
		{"oraclePrice", "SOL", []string{"148.000000", "148.000000", "148.000000", "148.000000"}},
	}
	for _, c := range cases {
		t.Run(c.series+" "+c.market, func(t *testing.T) {
			want := make([]string, len(c.want))
			for i, v := range c.want {
				want[i] = fmt.Sprint(hour+20*int64(i+1), " ", v)
			}
			path := seriesPath(c.series, c.market, hour, hour+100, 5)
			if got := rows(get(t, s, path)); !slices.Equal(got, want) {
				t.Errorf("rows:\n got %q\nwant %q", got, want)
			}
			if cc := s.Get(t, path).Header().Get("Cache-Control"); cc != "public, max-age=3600" {
				t.Errorf("a finished window's Cache-Control = %q", cc)
			}
		})
	}

	// A window reaching now: the rows stop at now, the last carrying the last state, and it is
	// cached briefly.
	path := seriesPath("oraclePrice", "SOL-PERP", hour+3500, now.Unix()+3600, 0)
	a := get(t, s, path)
	if n := len(a.Data); n != int((now.Unix()-(hour+3500))/20)+1 {
		t.Errorf("%d rows up to now", n)
	}
	if last := a.Data[len(a.Data)-1]; row(last) != fmt.Sprint(now.Unix(), " 152.000000") {
		t.Errorf("last row %v", last)
	}
	if cc := s.Get(t, path).Header().Get("Cache-Control"); cc != "public, max-age=10" {
		t.Errorf("a live window's Cache-Control = %q", cc)
	}
	// A window before the market's first state: no rows.
	if a := get(t, s, seriesPath("position", "SOL-PERP", hour-1000, hour+10, 0)); len(a.Data) != 0 {
		t.Errorf("rows before the first state: %v", a.Data)
	}
}

// TestLongestWindow: the longest window at the 20-second resolution, 220,000 seconds, answers 11,000
// rows, one per bucket, with the default samples.
func TestLongestWindow(t *testing.T) {
	s := start(t, service.Config{})
	first := (now.Unix()-230_000)/20*20 + 20
	var states []*events.MarketState
	for i := range int64(11_001) {
		ts := first + 20*i
		states = append(states, mstate(solPerp, ts, slotAt(ts, 0), 100+i%50, i))
	}
	s.Ingest(t, encode(t, states...)...)
	a := get(t, s, seriesPath("oraclePrice", "SOL-PERP", first+19, first+19+220_000, 0))
	if len(a.Data) != 11_000 {
		t.Fatalf("%d rows, want 11000", len(a.Data))
	}
	for i, r := range a.Data {
		want := fmt.Sprint(first+19+20*int64(i), fmt.Sprintf(" %d.000000", 100+i%50))
		if got := row(r); got != want {
			t.Fatalf("row %d = %q, want %q", i, got, want)
		}
	}
	// One more sample than allowed is refused; one second more than the longest window doubles
	// nothing: the step becomes 21 s and the rows stay within 11,000.
	if rec := s.Get(t, seriesPath("oraclePrice", "SOL-PERP", first, first+220_000, 11_001)); rec.Code != http.StatusBadRequest {
		t.Errorf("11001 samples: %d %s", rec.Code, rec.Body)
	}
	if a := get(t, s, seriesPath("oraclePrice", "SOL-PERP", first+19, first+19+220_001, 0)); len(a.Data) != 10_477 {
		t.Errorf("a window of 220,001 s: %d rows, want 10477 (step 21)", len(a.Data))
	}
}

// TestErrors: every rule of the spec's limits and errors, each answered 400 {success:false, message}
// naming what was wrong; a server failure answers 500 {success:false} and nothing else.
func TestErrors(t *testing.T) {
	s := start(t, service.Config{})
	s.Ingest(t, encode(t, mstate(solPerp, hour, slotAt(hour, 0), 150, 1), mstate(solSpot, hour, slotAt(hour, 1), 150, 0))...)
	q := func(kv ...string) string {
		var b strings.Builder
		for i := 0; i < len(kv); i += 2 {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(kv[i] + "=" + kv[i+1])
		}
		return b.String()
	}
	ok := []string{"marketName", "SOL-PERP", "start", "1763500000", "end", "1763600000"}
	with := func(k, v string) string {
		kv := slices.Clone(ok)
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == k {
				if v == "<none>" {
					return q(append(kv[:i:i], kv[i+2:]...)...)
				}
				kv[i+1] = v
				return q(kv...)
			}
		}
		return q(append(kv, k, v)...)
	}
	cases := []struct {
		series, query, message string
	}{
		{"position", with("marketName", "<none>"), "marketName is required"},
		{"position", with("marketName", ""), "marketName is required"},
		{"position", with("marketName", "XYZ-PERP"), "marketName XYZ-PERP is not a known market"},
		{"position", with("marketName", "SOL"), "marketName SOL is a spot market: only perp markets have the position series"},
		{"bidAskPrice", with("marketName", "SOL"), "marketName SOL is a spot market: only perp markets have the bidAskPrice series"},
		{"position", with("start", "<none>"), "start is required"},
		{"position", with("end", "<none>"), "end is required"},
		{"spreads", with("start", "yesterday"), "start must be an integer (unix seconds)"},
		{"spreads", with("start", "1.5"), "start must be an integer (unix seconds)"},
		{"spreads", with("end", "9223372036854775808"), "end must be an integer (unix seconds)"},
		{"oraclePrice", with("end", "1763500000"), "start must be less than end"},
		{"oraclePrice", with("end", "1763400000"), "start must be less than end"},
		{"openInterest", with("samples", "0"), "samples must be an integer between 1 and 11000"},
		{"openInterest", with("samples", "11001"), "samples must be an integer between 1 and 11000"},
		{"openInterest", with("samples", "-5"), "samples must be an integer between 1 and 11000"},
		{"openInterest", with("samples", "many"), "samples must be an integer between 1 and 11000"},
		{"openInterest", with("marketName", "SOL%00"), "query parameter marketName must be printable UTF-8 of at most 8192 bytes"},
	}
	for _, c := range cases {
		t.Run(c.series+"?"+c.query, func(t *testing.T) {
			rec := s.Get(t, "/amm/"+c.series+"?"+c.query)
			want := fmt.Sprintf(`{"success":false,"message":%q}`+"\n", c.message)
			if rec.Code != http.StatusBadRequest || rec.Body.String() != want {
				t.Errorf("got %d %s, want 400 %s", rec.Code, rec.Body, want)
			}
		})
	}
	// The edges that are valid.
	for _, query := range []string{with("samples", "1"), with("samples", "11000"), with("start", "-9223372036854775808"),
		with("end", "9223372036854775807"), with("unknown", "ignored")} {
		if rec := s.Get(t, "/amm/position?"+query); rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", query, rec.Code, rec.Body)
		}
	}

	// A server failure: the rollup is gone.
	if _, err := s.Pool.Exec(context.Background(), `ALTER TABLE amm.rollup RENAME TO rollup_gone`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"position", "bidAskPrice", "oraclePrice", "spreads", "openInterest"} {
		rec := s.Get(t, "/amm/"+name+"?"+q(ok...))
		if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"success":false}`+"\n" {
			t.Errorf("%s with the rollup gone: %d %s", name, rec.Code, rec.Body)
		}
	}
}

// TestContract: every AMM operation answers what the document says, and hostile input is never a
// server error.
func TestContract(t *testing.T) {
	s := start(t, service.Config{})
	var states []*events.MarketState
	for i := range int64(200) {
		ts := hour - 3600 + 37*i
		states = append(states, mstate(solPerp, ts, slotAt(ts, 0), 150+i%3, i-100))
	}
	s.Ingest(t, encode(t, states...)...)
	values := map[string][]string{
		"marketName": {"SOL-PERP", "XYZ-PERP"},
		"start":      {fmt.Sprint(hour - 3600), "0", "-5"},
		"end":        {fmt.Sprint(hour + 3600), "1763600000", "9223372036854775807"},
		"samples":    {"1", "100", "11000", "11001"},
	}
	for _, name := range []string{"position", "bidAskPrice", "oraclePrice", "spreads", "openInterest"} {
		if a := get(t, s, seriesPath(name, "SOL-PERP", hour-3580, hour+3600, 100)); len(a.Data) != 100 {
			t.Errorf("%s: %d rows, want 100", name, len(a.Data))
		}
	}
	s.CheckContract(t, values, 1000)
}

// TestWideWindows: a window of instants fewer than its chunks looks each instant's entry up rather
// than reading every chunk; both ways give the same rows, gaps of days and instants early in a chunk
// whose states come late included, and the route answers a two-year window.
func TestWideWindows(t *testing.T) {
	s := start(t, service.Config{})
	var states []*events.MarketState
	first := hour - 700*86400
	for d := int64(0); d < 700; d++ {
		if d%7 == 3 || d%50 < 5 {
			continue // gaps of a day, and of five
		}
		for _, off := range []int64{3500, 3590, 7300} { // late in one hour, early in the next
			ts := first + d*86400 + off
			price := 100 + d%40
			if d == 11 && off == 3590 {
				price = 90_000 // a jump no int32 difference holds: that hour's chunks are wide
			}
			states = append(states, mstate(solPerp, ts, slotAt(ts, 0), price, d-350))
		}
	}
	s.Ingest(t, encode(t, states...)...)
	store := postgres.NewStore(s.Pool, "amm")
	ctx := context.Background()
	var wide, narrow int
	if err := s.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE get_byte(chunk, $1) = 0), count(*) FILTER (WHERE get_byte(chunk, $1) = 1)
		FROM amm.rollup WHERE row = $2`, amm.BitmapBytes, int16(amm.RowOf(amm.Oracle))).Scan(&wide, &narrow); err != nil {
		t.Fatal(err)
	}
	if wide != 1 || narrow < 500 {
		t.Errorf("oracle chunks: %d wide, %d narrow; want the one of the jump wide", wide, narrow)
	}
	for _, c := range []struct {
		start, end int64
		samples    int
	}{
		{first - 86400, hour, 11000}, {first, hour, 997}, {first + 3000, first + 40*86400, 5000}, {first + 3599, first + 3599 + 86400*30, 30},
	} {
		w := amm.NewWindow(c.start, c.end, c.samples).Until(now.Unix())
		for _, series := range amm.All {
			dense, n, err := amm.SampleDense(ctx, store, "SOL-PERP", series, w, nil)
			if err != nil {
				t.Fatal(err)
			}
			points, m, err := amm.SamplePoints(ctx, store, "SOL-PERP", series, w, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 || n != m || string(dense) != string(points) {
				t.Fatalf("%s over %+v: %d rows read by chunks, %d looked up; differ at %d", series.Name(), c, n, m, firstDiff(dense, points))
			}
		}
	}
	if a := get(t, s, seriesPath("oraclePrice", "SOL-PERP", first, hour, 0)); len(a.Data) < 10_000 {
		t.Errorf("two years: %d rows", len(a.Data))
	}
	// Instants of the far past have no state (and no bucket an int64 holds); those of the far
	// future are after now.
	for _, c := range [][2]int64{{math.MinInt64, now.Unix()}, {math.MinInt64, math.MaxInt64}, {math.MinInt64, first}} {
		if a := get(t, s, seriesPath("oraclePrice", "SOL-PERP", c[0], c[1], 0)); len(a.Data) != 0 {
			t.Errorf("[%d, %d]: %d rows, the first %v", c[0], c[1], len(a.Data), a.Data[0])
		}
	}

}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
