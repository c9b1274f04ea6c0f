package market_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark/services/market"
)

// history is a random market's stored buckets at res: gaps of every length, a late first bucket.
// Its prices are whole millionths and its volumes whole protocol units, as the ingest writes them,
// but for odd, which puts a few values that are not (written by something else) among them.
func history(rng *rand.Rand, res market.Resolution, from int64, n int, odd bool) []market.Bucket {
	var out []market.Bucket
	ts := res.Floor(from)
	for range n {
		ts = res.Step(ts, 1+rng.IntN(4)*rng.IntN(3))
		p := func() float64 { return float64(100_000_000+rng.IntN(1_000_000)) / 1e6 }
		b := market.Bucket{Ts: ts, FillFirst: p(), FillHigh: p() + 1, FillLow: p() - 1, FillClose: p(),
			OracleFirst: p(), OracleHigh: p() + 1, OracleLow: p() - 1, OracleClose: p(),
			QuoteVolume: float64(rng.IntN(1e12)) / 1e6, BaseVolume: float64(rng.IntN(1e12)) / 1e9}
		if odd && rng.IntN(40) == 0 {
			b.FillHigh, b.BaseVolume = b.FillHigh+1.0/3, float64(rng.IntN(1e9))/1e12
		}
		out = append(out, b)
	}
	return out
}

// bucketsIn is what the store answers for [lo, hi]: the buckets there and the last one before lo.
func bucketsIn(all []market.Bucket, lo, hi int64) ([]market.Bucket, *market.Bucket) {
	var in []market.Bucket
	var before *market.Bucket
	for i := range all {
		switch {
		case all[i].Ts < lo:
			before = &all[i]
		case all[i].Ts <= hi:
			in = append(in, all[i])
		}
	}
	return in, before
}

func encodeList(l []market.Candle) string {
	var b []byte
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = l[i].AppendJSON(b)
	}
	return string(b)
}

// TestHotMatchesAssemble: for random histories, loaded whole or in pieces as a follower applies
// changes, and random windows, limits and directions, Hot answers the bytes the store path makes
// (Assemble, then AppendJSON), or declines a window before its range.
func TestHotMatchesAssemble(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	now := time.Date(2026, 11, 20, 12, 34, 56, 0, time.UTC)
	clock := func() time.Time { return now }
	answered := 0
	for round := range 48 {
		hot := market.NewHot(market.HotDays{"1": 1, "5": 3, "15": 9, "60": 30, "240": 90, "D": 400, "W": 900, "M": 1500}, clock)
		all := map[market.Resolution][]market.Bucket{}
		for _, res := range market.Resolutions() {
			start, _ := hot.Start(res)
			h := history(rng, res, res.Step(start, -40), 60+rng.IntN(400), round%4 == 3)
			all[res] = h
			if round%2 == 0 {
				stored, before := bucketsIn(h, start, math.MaxInt64)
				hot.Load("SOL-PERP", res, start, stored, before)
				continue
			}
			// Loaded empty, then the history arrives in random ranges, as committed changes do.
			hot.Load("SOL-PERP", res, start, nil, nil)
			for range 30 {
				lo := res.Step(start, rng.IntN(500)-60)
				hi := res.Step(lo, rng.IntN(80))
				stored, before := bucketsIn(h, max(lo, start), hi)
				hot.Apply("SOL-PERP", res, lo, hi, stored, before)
			}
			stored, before := bucketsIn(h, start, math.MaxInt64)
			hot.Apply("SOL-PERP", res, start, math.MaxInt64, stored, before)
		}
		hot.SetReady(true)
		for range 300 {
			res := market.Resolutions()[rng.IntN(8)]
			start, _ := hot.Start(res)
			h := all[res]
			a := res.Step(start, rng.IntN(600)-50) + rng.Int64N(100)
			b := res.Step(start, rng.IntN(600)-50) + rng.Int64N(100)
			limit := 1 + rng.IntN(1000)
			w := market.Window(res, a, b, limit, now)
			stored, before := bucketsIn(h, w.Lo, w.Hi)
			want := encodeList(market.Assemble(res, w, stored, before))
			got, ok := hot.AppendCandles(nil, "SOL-PERP", res, w)
			if !ok {
				if w.Lo >= start {
					t.Fatalf("round %d %s window %+v (start %d) declined", round, res, w, start)
				}
				continue
			}
			if string(got) != want {
				t.Fatalf("round %d %s window %+v:\n got %s\nwant %s", round, res, w, got, want)
			}
			answered++
		}
	}
	if answered < 48*300/2 {
		t.Fatalf("only %d windows answered from memory", answered)
	}
}

// TestHotTrimKeepsAnswers: as the clock moves the range on, the buckets that fell out are dropped,
// the last of them still opening the first bucket held.
func TestHotTrimKeepsAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	hot := market.NewHot(market.HotDays{"1": 1}, func() time.Time { return now })
	start, _ := hot.Start("1")
	h := history(rng, "1", start-600, 3000, false)
	stored, before := bucketsIn(h, start, math.MaxInt64)
	hot.Load("SOL-PERP", "1", start, stored, before)
	hot.SetReady(true)
	n0, _ := hot.Buckets()
	now = now.Add(6 * time.Hour)
	hot.Trim()
	if n, _ := hot.Buckets(); n >= n0 {
		t.Fatalf("%d buckets after trim, %d before", n, n0)
	}
	newStart, _ := hot.Start("1")
	for _, limit := range []int{1, 7, 1000} {
		w := market.Window("1", newStart+int64(limit-1)*60, newStart, limit, now)
		s, b := bucketsIn(h, w.Lo, w.Hi)
		got, ok := hot.AppendCandles(nil, "SOL-PERP", "1", w)
		if want := encodeList(market.Assemble("1", w, s, b)); !ok || string(got) != want {
			t.Fatalf("limit %d after trim (ok %v):\n got %s\nwant %s", limit, ok, got, want)
		}
	}
	if _, ok := hot.AppendCandles(nil, "SOL-PERP", "1", market.CandleWindow{Lo: newStart - 60, Hi: newStart}); ok {
		t.Fatal("a window before the trimmed range was answered")
	}
}

// TestHotPending: a market with a change of this process' ingest in flight is left to the store
// until the change is read back.
func TestHotPending(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	hot := market.NewHot(market.DefaultHotDays, func() time.Time { return now })
	start, _ := hot.Start("1")
	hot.Load("SOL-PERP", "1", start, nil, nil)
	w := market.CandleWindow{Lo: start, Hi: start + 600}
	if _, ok := hot.AppendCandles(nil, "SOL-PERP", "1", w); ok {
		t.Fatal("answered before ready")
	}
	hot.SetReady(true)
	hot.Pending(42, []string{"SOL-PERP", "BTC-PERP"})
	if _, ok := hot.AppendCandles(nil, "SOL-PERP", "1", w); ok {
		t.Fatal("answered with a change in flight")
	}
	if got := hot.Unresolved(0); !slices.Equal(got[42], []string{"SOL-PERP", "BTC-PERP"}) {
		t.Fatalf("unresolved %v", got)
	}
	hot.Resolve(42)
	if _, ok := hot.AppendCandles(nil, "SOL-PERP", "1", w); !ok {
		t.Fatal("not answered once resolved")
	}
}

func TestParseHotDays(t *testing.T) {
	d, err := market.ParseHotDays([]string{"1:7", " D : 0 "})
	if err != nil || d["1"] != 7 || d["D"] != 0 || d["5"] != market.DefaultHotDays["5"] {
		t.Fatalf("%v %v", d, err)
	}
	for _, bad := range []string{"2:3", "1", "1:-1", "1:x", "1:4000"} {
		if _, err := market.ParseHotDays([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// BenchmarkHotAppendCandles encodes the newest 1000 one-minute candles of a market traded every
// minute, as the candles route does from memory.
func BenchmarkHotAppendCandles(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	hot := market.NewHot(market.DefaultHotDays, func() time.Time { return now })
	start, _ := hot.Start("1")
	var h []market.Bucket
	for ts := start; ts <= now.Unix(); ts += 60 {
		p := func() float64 { return float64(150_000_000+rng.IntN(1_000_000)) / 1e6 }
		h = append(h, market.Bucket{Ts: ts, FillFirst: p(), FillHigh: p() + 1, FillLow: p() - 1, FillClose: p(),
			OracleFirst: p(), OracleHigh: p() + 1, OracleLow: p() - 1, OracleClose: p(),
			QuoteVolume: float64(rng.IntN(1e12)) / 1e6, BaseVolume: float64(rng.IntN(1e12)) / 1e9})
	}
	hot.Load("SOL-PERP", "1", start, h, nil)
	hot.SetReady(true)
	w := market.Window("1", now.Unix(), 0, 1000, now)
	buf := make([]byte, 0, 300_000)
	b.ReportAllocs()
	for b.Loop() {
		out, ok := hot.AppendCandles(buf[:0], "SOL-PERP", "1", w)
		if !ok || len(out) < 1000 {
			b.Fatal("not answered")
		}
	}
}

// TestHotTextFollowsChanges: the candle JSON a Hot keeps between answers follows every change to its
// series. Two Hots get the same loads, changes and trims, read after each: one keeping its JSON, one
// keeping none (every answer written from the columns); they must answer the same bytes.
func TestHotTextFollowsChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    market.Resolution
		budget int64
		odd    bool
	}{
		{"minutes", "1", market.DefaultTextBudget, false},
		{"minutes, some values not whole millionths", "1", market.DefaultTextBudget, true},
		{"minutes, small budget", "1", 20_000, false},
		{"hours", "60", market.DefaultTextBudget, false},
		{"months", "M", market.DefaultTextBudget, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(23, 29))
			now := time.Date(2026, 11, 20, 12, 34, 56, 0, time.UTC)
			clock := func() time.Time { return now }
			days := market.HotDays{tc.res: 2}
			if tc.res == "60" || tc.res == "M" {
				days[tc.res] = 3000
			}
			kept, fresh := market.NewHot(days, clock), market.NewHot(days, clock)
			kept.SetTextBudget(tc.budget)
			fresh.SetTextBudget(-1)
			start, _ := kept.Start(tc.res)
			h := history(rng, tc.res, tc.res.Step(start, -40), 2000, tc.odd)
			for _, hot := range []*market.Hot{kept, fresh} {
				hot.Load("SOL-PERP", tc.res, start, nil, nil)
				hot.SetReady(true)
			}
			compareWindow := func(step string, w market.CandleWindow) {
				t.Helper()
				got, ok := kept.AppendCandles(nil, "SOL-PERP", tc.res, w)
				want, wantOK := fresh.AppendCandles(nil, "SOL-PERP", tc.res, w)
				if ok != wantOK || string(got) != string(want) {
					t.Fatalf("%s, window %+v (ok %v, %v):\n got %s\nwant %s", step, w, ok, wantOK, got, want)
				}
			}
			compare := func(step string) {
				t.Helper()
				for range 5 {
					s, _ := kept.Start(tc.res)
					a := tc.res.Step(s, rng.IntN(2100))
					b := tc.res.Step(s, rng.IntN(2100))
					compareWindow(step, market.Window(tc.res, a, b, 1+rng.IntN(1000), now))
				}
			}
			// compareAt reads the 1000 buckets from lo on: what a change there may have moved.
			compareAt := func(step string, lo int64) {
				t.Helper()
				s, _ := kept.Start(tc.res)
				compareWindow(step, market.Window(tc.res, max(lo, s), math.MaxInt32, 1000, now))
			}
			for i := range 60 {
				switch {
				case i%20 == 19:
					now = now.Add(time.Duration(1+rng.IntN(6*60)) * time.Minute)
					kept.Trim()
					fresh.Trim()
				default:
					s, _ := kept.Start(tc.res)
					lo := tc.res.Step(s, rng.IntN(2100)-20)
					hi := tc.res.Step(lo, rng.IntN(300))
					if i%10 == 0 {
						lo, hi = s, math.MaxInt64
					}
					stored, before := bucketsIn(h, max(lo, s), hi)
					// Late fills move closes, and with them the opens of the buckets after.
					for k := range stored {
						if rng.IntN(3) == 0 {
							stored[k].FillClose, stored[k].OracleClose = stored[k].FillClose+1, stored[k].OracleClose-1
						}
					}
					kept.Apply("SOL-PERP", tc.res, lo, hi, stored, before)
					fresh.Apply("SOL-PERP", tc.res, lo, hi, stored, before)
					compareAt(fmt.Sprintf("step %d", i), lo)
				}
				compare(fmt.Sprintf("step %d", i))
			}
			if tc.budget > 0 && kept.TextBytes() > tc.budget+64_000 {
				t.Errorf("%d bytes of JSON kept, budget %d", kept.TextBytes(), tc.budget)
			}
		})
	}
}
