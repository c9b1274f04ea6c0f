package amm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/amm"
)

func TestWindowStepRule(t *testing.T) {
	cases := []struct {
		name       string
		start, end int64
		samples    int
		step       uint64
		first      []int64 // the first instants
		count      int
	}{
		{"exact: 10 samples of 20 s", 1000, 1200, 10, 20, []int64{1000, 1020, 1040}, 10},
		{"uneven: ceil(235/5) = 47", 1000, 1235, 5, 47, []int64{1000, 1047, 1094, 1141, 1188}, 5},
		{"shorter than 20 s per sample: floors at 20", 1000, 1100, 11000, 20, []int64{1000, 1020, 1040, 1060, 1080, 1100}, 6},
		{"one sample", 1000, 5000, 1, 4000, []int64{1000}, 1},
		{"the longest 20-second window", 1_763_000_000, 1_763_220_000, 11000, 20, []int64{1_763_000_000, 1_763_000_020}, 11000},
		{"past the longest: step 21", 1_763_000_000, 1_763_220_001, 11000, 21, []int64{1_763_000_000, 1_763_000_021}, 10477},
		{"thirty days", 1_760_000_000, 1_760_000_000 + 30*86400, 11000, 236, []int64{1_760_000_000, 1_760_000_236}, 10984},
		{"any int64 span", math.MinInt64, math.MaxInt64, 11000, math.MaxUint64/11000 + 1, []int64{math.MinInt64}, 11000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := amm.NewWindow(c.start, c.end, c.samples)
			if w.Step != c.step || w.Count != c.count {
				t.Fatalf("step %d count %d, want %d and %d", w.Step, w.Count, c.step, c.count)
			}
			for i, want := range c.first {
				if got := w.At(i); got != want {
					t.Errorf("instant %d = %d, want %d", i, got, want)
				}
			}
			if last := w.At(w.Count - 1); last > c.end || last < c.start {
				t.Errorf("last instant %d outside [%d, %d]", last, c.start, c.end)
			}
		})
	}
}

func TestWindowUntil(t *testing.T) {
	w := amm.NewWindow(1000, 1200, 11000) // 1000, 1020, ..., 1200
	cases := []struct {
		now   int64
		count int
	}{{999, 0}, {1000, 1}, {1019, 1}, {1020, 2}, {1199, 10}, {1200, 11}, {5000, 11}}
	for _, c := range cases {
		if got := w.Until(c.now).Count; got != c.count {
			t.Errorf("Until(%d).Count = %d, want %d", c.now, got, c.count)
		}
	}
}

func TestWindowFrom(t *testing.T) {
	w := amm.NewWindow(1000, 1200, 11000) // 1000, 1020, ..., 1200
	cases := []struct {
		from         int64
		start, count int
	}{{0, 1000, 11}, {1000, 1000, 11}, {1001, 1020, 10}, {1020, 1020, 10}, {1199, 1200, 1}, {1201, 0, 0}}
	for _, c := range cases {
		got := w.From(c.from)
		if got.Count != c.count || c.count > 0 && got.Start != int64(c.start) {
			t.Errorf("From(%d) = start %d count %d, want %d and %d", c.from, got.Start, got.Count, c.start, c.count)
		}
	}
	// The whole int64 line: what is left starts at or after the bound, on the same grid.
	wide := amm.NewWindow(math.MinInt64, math.MaxInt64, 11000)
	got := wide.From(events.MinTs)
	skipped := (uint64(got.Start) - uint64(wide.Start)) / wide.Step
	if got.Start < events.MinTs || uint64(got.Start)-uint64(events.MinTs) >= wide.Step ||
		(uint64(got.Start)-uint64(wide.Start))%wide.Step != 0 || got.Count != 11000-int(skipped) {
		t.Errorf("From(MinTs) of the whole line: %+v", got)
	}
}

func TestAppendDecimal(t *testing.T) {
	cases := []struct {
		v        int64
		decimals int
		want     string
	}{
		{150123456, 6, "150.123456"},
		{1500000, 6, "1.500000"},
		{-1500000, 6, "-1.500000"},
		{-1, 9, "-0.000000001"},
		{0, 4, "0.0000"},
		{250, 4, "0.0250"},
		{1000000, 4, "100.0000"},
		{42, 0, "42"},
		{math.MaxInt64, 9, "9223372036.854775807"},
		{math.MinInt64, 9, "-9223372036.854775808"},
		{math.MinInt64, 18, "-9.223372036854775808"},
	}
	for _, c := range cases {
		if got := string(amm.AppendDecimal([]byte("x"), c.v, c.decimals)); got != "x"+c.want {
			t.Errorf("AppendDecimal(%d, %d) = %q, want %q", c.v, c.decimals, got[1:], c.want)
		}
	}
}

// base is the start of an hour, and of a rollup chunk.
const base = int64(1763380800)

func state(ts, slot, oracle int64) amm.State {
	return amm.State{Ts: ts, Slot: slot, Symbol: "SOL-PERP", Perp: true, Oracle: oracle * 1_000_000,
		Bid: oracle*1_000_000 - 5000, Ask: oracle*1_000_000 + 5000, LongSpread: 250 + slot, ShortSpread: 300,
		Position: -slot * 1_000_000_000, OpenInterest: slot * 2_000_000_000}
}

// rollup folds states into chunks, as the ingest does, one chunk at a time.
func rollup(t testing.TB, states ...amm.State) map[int64]map[amm.Row][]byte {
	t.Helper()
	out := map[int64]map[amm.Row][]byte{}
	for _, st := range states {
		start := amm.ChunkStart(st.Ts)
		if out[start] == nil {
			out[start] = map[amm.Row][]byte{}
		}
		if _, err := amm.Fold(start, out[start], []amm.State{st}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// sample runs a Sampler over the chunks in order and decodes its rows.
func sample(t *testing.T, chunks map[int64]map[amm.Row][]byte, s amm.Series, w amm.Window) [][]any {
	t.Helper()
	p := amm.NewSampler(w, s, []byte("["))
	first, last := w.Chunks()
	starts := slices.Sorted(func(yield func(int64) bool) {
		for k := range chunks {
			if !yield(k) {
				return
			}
		}
	})
	// As the store does: the last chunk before the window's first, then those of the window.
	var carry int64 = -1
	for _, k := range starts {
		if k < first {
			carry = k
		}
	}
	for _, k := range starts {
		if (k == carry || k >= first && k <= last) && chunks[k][amm.RowOf(s)] != nil {
			if err := p.Chunk(k, chunks[k][amm.RowOf(s)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	body, n := p.Finish()
	body = append(body, ']')
	var rows [][]any
	d := json.NewDecoder(bytesReader(body))
	d.UseNumber()
	if err := d.Decode(&rows); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if len(rows) != n {
		t.Errorf("Finish counted %d rows, wrote %d", n, len(rows))
	}
	return rows
}

// oracles are the [ts, oracle] rows of an oracle answer, as integers of whole units.
func oracles(t *testing.T, rows [][]any) [][2]any {
	t.Helper()
	out := make([][2]any, len(rows))
	for i, r := range rows {
		ts, _ := r[0].(json.Number).Int64()
		out[i] = [2]any{ts, r[1]}
	}
	return out
}

func TestSamplingByHand(t *testing.T) {
	chunks := rollup(t,
		state(base+5, 10, 100), state(base+12, 11, 101), state(base+19, 12, 102), // bucket 0: 102 last
		state(base+25, 13, 103),                       // bucket 1
		state(base+85, 14, 104),                       // bucket 4
		state(base+3600+10, 15, 105),                  // the next chunk's bucket 0
		state(base+7, 9, 99), state(base+19, 12, 102), // late and replayed states change nothing
	)
	cases := []struct {
		name       string
		start, end int64
		samples    int
		want       [][2]any
	}{
		{"before the first state, and within its bucket, no rows", base - 100, base + 18, 11000, nil},
		{"20-second steps from the first bucket", base, base + 100, 11000, [][2]any{
			{base + 20, "102.000000"}, {base + 40, "103.000000"}, {base + 60, "103.000000"},
			{base + 80, "103.000000"}, {base + 100, "104.000000"}}},
		{"instants on the buckets' last seconds", base + 19, base + 99, 11000, [][2]any{
			{base + 19, "102.000000"}, {base + 39, "103.000000"}, {base + 59, "103.000000"},
			{base + 79, "103.000000"}, {base + 99, "104.000000"}}},
		{"the state of a bucket incomplete at the instant is not shown", base + 38, base + 38, 1, [][2]any{
			{base + 38, "102.000000"}}},
		{"uneven step across the chunks: ceil(3700/3) = 1234", base, base + 3700, 3, [][2]any{
			{base + 1234, "104.000000"}, {base + 2468, "104.000000"}}},
		{"the next chunk's first bucket", base + 3619, base + 3640, 2, [][2]any{
			{base + 3619, "105.000000"}, {base + 3639, "105.000000"}}},
		{"the bucket before it, carried from the previous chunk", base + 3618, base + 3619, 1, [][2]any{
			{base + 3618, "104.000000"}}},
		{"a window wholly after the last state carries it", base + 7200, base + 7300, 2, [][2]any{
			{base + 7200, "105.000000"}, {base + 7250, "105.000000"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.start == c.end {
				c.end++ // one instant
			}
			got := oracles(t, sample(t, chunks, amm.Oracle, amm.NewWindow(c.start, c.end, c.samples)))
			if len(got) != len(c.want) || (len(got) > 0 && !slices.Equal(got, c.want)) {
				t.Errorf("rows:\n got %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestSeriesValues(t *testing.T) {
	chunks := rollup(t, state(base+5, 7, 150))
	w := amm.NewWindow(base+19, base+20, 1)
	want := map[amm.Series][]any{
		amm.Position:     {"-7.000000000"},
		amm.BidAsk:       {"149.995000", "150.005000"},
		amm.Oracle:       {"150.000000"},
		amm.Spreads:      {"0.0257", "0.0300"},
		amm.OpenInterest: {"14.000000000"},
	}
	for _, s := range amm.All {
		rows := sample(t, chunks, s, w)
		if len(rows) != 1 || len(rows[0]) != 1+s.Values() {
			t.Fatalf("%s: rows %v", s.Name(), rows)
		}
		if !slices.Equal(rows[0][1:], want[s]) {
			t.Errorf("%s: %v, want %v", s.Name(), rows[0][1:], want[s])
		}
	}
}

func TestFoldKeepsTheHighestSlot(t *testing.T) {
	chunks := map[amm.Row][]byte{}
	fold := func(sts ...amm.State) bool {
		t.Helper()
		changed, err := amm.Fold(base, chunks, sts)
		if err != nil {
			t.Fatal(err)
		}
		return changed
	}
	if !fold(state(base+1, 5, 100), state(base+3, 4, 99)) {
		t.Error("first fold: no change")
	}
	if fold(state(base+1, 5, 100)) || fold(state(base+2, 3, 98)) {
		t.Error("a replayed or an earlier state changed the chunk")
	}
	if !fold(state(base+19, 6, 101)) {
		t.Error("a later state did not change the chunk")
	}
	got, err := amm.Decode(amm.RowOf(amm.Oracle), base, chunks[amm.RowOf(amm.Oracle)])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Start != base || got[0].Values[0] != 101_000_000 {
		t.Errorf("oracle buckets %+v", got)
	}
	// A spot market's states have oracle and slots rows only.
	spot := map[amm.Row][]byte{}
	if _, err := amm.Fold(base, spot, []amm.State{{Ts: base, Slot: 1, Symbol: "SOL", Oracle: 1}}); err != nil {
		t.Fatal(err)
	}
	if len(spot) != 2 || spot[amm.SlotsRow] == nil || spot[amm.RowOf(amm.Oracle)] == nil {
		t.Errorf("spot rows: %d", len(spot))
	}
	if _, err := amm.Fold(base, chunks, []amm.State{state(base+3600, 9, 1)}); err == nil {
		t.Error("a state of another chunk: want an error")
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func TestStateOfRefusesWhatAnInt64Cannot(t *testing.T) {
	r := &events.MarketState{Ts: 1, Slot: 1, Symbol: "SOL-PERP", MarketType: events.MarketTypePerp,
		OraclePrice: "9223372036854775807", BidPrice: "-9223372036854775808", AskPrice: "0", LongSpread: "1",
		ShortSpread: "2", BaseAssetAmountWithAmm: "-3", OpenInterest: "4"}
	st, err := amm.StateOf(r)
	if err != nil || st.Oracle != math.MaxInt64 || st.Bid != math.MinInt64 || st.Position != -3 || st.OpenInterest != 4 {
		t.Fatalf("%+v %v", st, err)
	}
	for _, bad := range []events.Amount{"9223372036854775808", "-9223372036854775809", "99999999999999999999", "1.5", "", "-"} {
		r.OpenInterest = bad
		if _, err := amm.StateOf(r); err == nil || !strings.Contains(err.Error(), "openInterest") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestAppendDecimalAgainstBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		v := int64(rng.Uint64()) >> rng.IntN(64)
		d := rng.IntN(19)
		r := new(big.Rat).SetFrac(big.NewInt(v), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil))
		if got, want := string(amm.AppendDecimal(nil, v, d)), r.FloatString(d); got != want {
			t.Fatalf("AppendDecimal(%d, %d) = %q, want %q", v, d, got, want)
		}
	}
}

// TestChunkFormats: a chunk is narrow (int32 differences from a base) while every value's difference
// from its first entry fits, wide otherwise, and both read back exactly, extremes included.
func TestChunkFormats(t *testing.T) {
	narrow := rollup(t, state(base+1, 1, 150), state(base+21, 2, 2000)) // 1850e6 apart: fits
	for _, r := range amm.Rows {
		if c := narrow[base][r]; !amm.Narrow(c) || len(c) != r.ChunkSize(true) {
			t.Errorf("row %d: narrow %v, %d bytes", r, amm.Narrow(c), len(c))
		}
	}
	extreme := state(base+41, 3, 1)
	extreme.Oracle, extreme.Bid, extreme.Position = math.MaxInt64, math.MinInt64, math.MinInt64
	chunks := rollup(t, state(base+1, 1, 150), state(base+21, 2, 2200), extreme) // 2050e6 apart: does not
	want := map[amm.Row][][]int64{
		amm.RowOf(amm.Oracle):   {{150_000_000}, {2_200_000_000}, {math.MaxInt64}},
		amm.RowOf(amm.BidAsk):   {{149_995_000, 150_005_000}, {2_199_995_000, 2_200_005_000}, {math.MinInt64, 1_005_000}},
		amm.RowOf(amm.Position): {{-1_000_000_000}, {-2_000_000_000}, {math.MinInt64}},
		amm.RowOf(amm.Spreads):  {{251, 300}, {252, 300}, {253, 300}},
	}
	for r, vals := range want {
		c := chunks[base][r]
		if amm.Narrow(c) == (r != amm.RowOf(amm.Spreads)) {
			t.Errorf("row %d: narrow %v", r, amm.Narrow(c))
		}
		got, err := amm.Decode(r, base, c)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range got {
			if !slices.Equal(b.Values, vals[i]) {
				t.Errorf("row %d bucket %d: %v, want %v", r, i, b.Values, vals[i])
			}
		}
	}
	rows := oracles(t, sample(t, chunks, amm.Oracle, amm.NewWindow(base+19, base+59, 3)))
	if fmt.Sprint(rows) != fmt.Sprint([][2]any{{base + 19, "150.000000"}, {base + 39, "2200.000000"}, {base + 59, "9223372036854.775807"}}) {
		t.Errorf("rows %v", rows)
	}
	if _, err := amm.Decode(amm.RowOf(amm.Oracle), base, chunks[base][amm.RowOf(amm.Oracle)][:100]); err == nil {
		t.Error("a truncated chunk: want an error")
	}
}
