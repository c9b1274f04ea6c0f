package market

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"strconv"
)

// Trade is what a candle needs of one fill.
type Trade struct {
	Symbol       string
	Ts           int64
	FillRecordID int64
	Price        float64 // quote/base in dollars, rounded to 6 decimals
	Oracle       float64 // dollars
	Quote, Base  *big.Int
}

// TradeOf derives the candle inputs of a fill from its amount strings in protocol precision (quote
// 1e6, base 1e9, price 1e6). ok is false for fills that cannot move a candle (zero base).
func TradeOf(symbol string, ts int64, fillRecordID, quote, base, oracle string) (t Trade, ok bool) {
	q, qok := new(big.Int).SetString(quote, 10)
	b, bok := new(big.Int).SetString(base, 10)
	id, err := strconv.ParseInt(fillRecordID, 10, 64)
	o, oerr := strconv.ParseFloat(oracle, 64)
	if !qok || !bok || err != nil || oerr != nil || b.Sign() == 0 {
		return Trade{}, false
	}
	qf, _ := new(big.Float).SetInt(q).Float64()
	bf, _ := new(big.Float).SetInt(b).Float64()
	return Trade{
		Symbol: symbol, Ts: ts, FillRecordID: id,
		Price:  round6(math.Abs(qf/bf) * 1e3),
		Oracle: round6(o / 1e6),
		Quote:  q.Abs(q), Base: b.Abs(b),
	}, true
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

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
	Quote, Base            big.Int

	Trades []int // indexes of the trades in the input slice, in (ts, fillRecordId) order
}

// Aggregate folds trades into one delta per (symbol, resolution, bucket), for every resolution,
// ordered by symbol, resolution (as Resolutions lists them) and bucket.
func Aggregate(trades []Trade) []*Delta {
	order := make([]int, len(trades))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ta, tb := &trades[a], &trades[b]
		if ta.Ts != tb.Ts {
			return cmp.Compare(ta.Ts, tb.Ts)
		}
		return cmp.Compare(ta.FillRecordID, tb.FillRecordID)
	})
	type key struct {
		symbol string
		res    Resolution
		ts     int64
	}
	byKey := map[key]*Delta{}
	var out []*Delta
	for _, res := range Resolutions() {
		for _, i := range order {
			t := &trades[i]
			k := key{t.Symbol, res, res.Floor(t.Ts)}
			d := byKey[k]
			if d == nil {
				d = &Delta{
					Symbol: t.Symbol, Resolution: res, Ts: k.ts,
					FirstTs: t.Ts, FirstID: t.FillRecordID, FillFirst: t.Price, OracleFirst: t.Oracle,
					FillHigh: t.Price, FillLow: t.Price, OracleHigh: t.Oracle, OracleLow: t.Oracle,
				}
				byKey[k] = d
				out = append(out, d)
			}
			// Trades come in (ts, id) order, so the last one seen is the close.
			d.LastTs, d.LastID, d.FillClose, d.OracleClose = t.Ts, t.FillRecordID, t.Price, t.Oracle
			d.FillHigh, d.FillLow = math.Max(d.FillHigh, t.Price), math.Min(d.FillLow, t.Price)
			d.OracleHigh, d.OracleLow = math.Max(d.OracleHigh, t.Oracle), math.Min(d.OracleLow, t.Oracle)
			d.Quote.Add(&d.Quote, t.Quote)
			d.Base.Add(&d.Base, t.Base)
			d.Trades = append(d.Trades, i)
		}
	}
	resRank := map[Resolution]int{}
	for i, r := range Resolutions() {
		resRank[r] = i
	}
	slices.SortStableFunc(out, func(a, b *Delta) int {
		if a.Symbol != b.Symbol {
			if a.Symbol < b.Symbol {
				return -1
			}
			return 1
		}
		if a.Resolution != b.Resolution {
			return resRank[a.Resolution] - resRank[b.Resolution]
		}
		return cmp.Compare(a.Ts, b.Ts)
	})
	return out
}
