package market

import (
	"cmp"
	"maps"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Trade is what a candle needs of one fill.
type Trade struct {
	Symbol       string
	Ts           int64
	FillRecordID int64
	Price        float64 // quote/base in dollars, rounded to 6 decimals
	Oracle       float64 // dollars
	Quote, Base  Volume
}

// TradeOf derives the candle inputs of a fill from its amount strings in protocol precision (quote
// 1e6, base 1e9, price 1e6). ok is false for fills that cannot move a candle (zero base).
func TradeOf(symbol string, ts int64, fillRecordID, quote, base, oracle string) (t Trade, ok bool) {
	q, qok := ParseVolume(quote)
	b, bok := ParseVolume(base)
	id, err := strconv.ParseInt(fillRecordID, 10, 64)
	o, oerr := strconv.ParseFloat(oracle, 64)
	if !qok || !bok || err != nil || oerr != nil || b.IsZero() {
		return Trade{}, false
	}
	return Trade{
		Symbol: symbol, Ts: ts, FillRecordID: id,
		Price:  round6(q.Float64() / b.Float64() * 1e3),
		Oracle: round6(o / 1e6),
		Quote:  q, Base: b,
	}, true
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// Volume is a non-negative amount in protocol precision. Fill amounts and most bucket sums fit in
// 64 bits, which keeps summing them free of allocations; beyond that it is a big.Int, so no sum
// is ever rounded or wrapped.
type Volume struct {
	small uint64
	large *big.Int // nil while the amount fits small
}

// ParseVolume reads a decimal integer and keeps its magnitude (a short's negative base is volume
// all the same).
func ParseVolume(s string) (Volume, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] < '0' || digits[0] > '9' {
		return Volume{}, false
	}
	if u, err := strconv.ParseUint(digits, 10, 64); err == nil {
		return Volume{small: u}, true
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return Volume{}, false
	}
	return Volume{large: n}, true
}

// IsZero reports whether v is 0.
func (v Volume) IsZero() bool {
	if v.large != nil {
		return v.large.Sign() == 0
	}
	return v.small == 0
}

// Add adds w to v.
func (v *Volume) Add(w Volume) {
	if v.large == nil && w.large == nil {
		if sum, carry := bits.Add64(v.small, w.small, 0); carry == 0 {
			v.small = sum
			return
		}
	}
	sum := v.Big()
	v.large, v.small = sum.Add(sum, w.Big()), 0
}

// Big returns v as a new big.Int.
func (v Volume) Big() *big.Int {
	if v.large != nil {
		return new(big.Int).Set(v.large)
	}
	return new(big.Int).SetUint64(v.small)
}

// Float64 is the nearest float64 to v.
func (v Volume) Float64() float64 {
	if v.large == nil {
		return float64(v.small)
	}
	f, _ := new(big.Float).SetInt(v.large).Float64()
	return f
}

func (v Volume) String() string {
	if v.large != nil {
		return v.large.String()
	}
	return strconv.FormatUint(v.small, 10)
}

// Delta is what one batch of trades does to one bucket. Applying deltas is commutative: highs and
// lows are extremes, volumes are sums, and first/last are chosen by (ts, fillRecordId), so batches
// that arrive late or out of order converge to the same candle.
type Delta struct {
	Symbol     string
	Resolution Resolution
	Ts         int64

	FirstTs, FirstID       int64
	FillFirst, OracleFirst float64
	LastTs, LastID         int64
	FillClose, OracleClose float64
	FillHigh, FillLow      float64
	OracleHigh, OracleLow  float64
	Quote, Base            Volume

	// Trades are the indexes of the bucket's trades in the input slice, in (ts, fillRecordId) order.
	// Deltas share one backing array per symbol (capped, so an append copies) rather than growing
	// eight slices of their own for every trade.
	Trades []int
}

// Aggregate folds trades into one delta per (symbol, resolution, bucket), for every resolution,
// ordered by symbol, resolution (as Resolutions lists them) and bucket.
//
// It runs inside every fill batch's transaction, so it avoids a map lookup per trade and
// resolution: trades are split by symbol and put in (ts, fillRecordId) order once, after which
// each resolution's buckets follow one another and a trade either extends the current bucket or
// opens the next.
func Aggregate(trades []Trade) []*Delta {
	bySymbol := map[string][]int{}
	for i := range trades {
		bySymbol[trades[i].Symbol] = append(bySymbol[trades[i].Symbol], i)
	}
	symbols := slices.Sorted(maps.Keys(bySymbol))
	byTime := func(a, b int) int {
		ta, tb := &trades[a], &trades[b]
		if c := cmp.Compare(ta.Ts, tb.Ts); c != 0 {
			return c
		}
		return cmp.Compare(ta.FillRecordID, tb.FillRecordID)
	}
	var out []*Delta
	for _, sym := range symbols {
		order := bySymbol[sym]
		// Batches arrive in time order nearly always; the check spares the sort's comparisons.
		if !slices.IsSortedFunc(order, byTime) {
			slices.SortStableFunc(order, byTime)
		}
		for _, res := range Resolutions() {
			var d *Delta
			var end int64 // start of the bucket after d's
			first := 0    // d's first trade in order: a bucket's trades follow one another there
			for k, i := range order {
				t := &trades[i]
				if d == nil || t.Ts >= end {
					first = k
					start := res.Floor(t.Ts)
					d = &Delta{
						Symbol: sym, Resolution: res, Ts: start,
						FirstTs: t.Ts, FirstID: t.FillRecordID, FillFirst: t.Price, OracleFirst: t.Oracle,
						FillHigh: t.Price, FillLow: t.Price, OracleHigh: t.Oracle, OracleLow: t.Oracle,
					}
					end = res.Step(start, 1)
					out = append(out, d)
				}
				// Trades come in (ts, id) order, so the last one seen is the close.
				d.LastTs, d.LastID, d.FillClose, d.OracleClose = t.Ts, t.FillRecordID, t.Price, t.Oracle
				d.FillHigh, d.FillLow = max(d.FillHigh, t.Price), min(d.FillLow, t.Price)
				d.OracleHigh, d.OracleLow = max(d.OracleHigh, t.Oracle), min(d.OracleLow, t.Oracle)
				d.Quote.Add(t.Quote)
				d.Base.Add(t.Base)
				d.Trades = order[first : k+1 : k+1]
			}
		}
	}
	return out
}
