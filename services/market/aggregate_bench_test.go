package market_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/tidemark/tidemark/services/market"
)

// fillBatch is one ingest batch's worth of fills as the amount strings arrive: six markets, 3000
// fills a minute in time order, sizes and prices moving.
type fillAmounts struct {
	symbol                  string
	ts                      int64
	id, quote, base, oracle string
}

func fillBatch(n int) []fillAmounts {
	rng := rand.New(rand.NewPCG(7, 9))
	symbols := []string{"SOL-PERP", "BTC-PERP", "ETH-PERP", "SOL", "JUP", "TRUMP-WIN-BET"}
	prices := []float64{150, 60000, 3000, 150, 1, 0.5}
	out := make([]fillAmounts, n)
	ts := int64(1_790_000_000)
	for i := range out {
		if i%50 == 0 {
			ts++
		}
		m := rng.IntN(len(symbols))
		base := int64(1+rng.IntN(5000)) * 1_000_000
		price := prices[m] * (1 + (rng.Float64()-0.5)/100)
		quote := int64(float64(base) / 1e3 * price)
		if rng.IntN(2) == 0 {
			base = -base
		}
		out[i] = fillAmounts{symbols[m], ts, strconv.Itoa(i + 1), strconv.FormatInt(quote, 10),
			strconv.FormatInt(base, 10), strconv.FormatInt(int64(price*1e6), 10)}
	}
	return out
}

// BenchmarkAggregate is the candle work of one 10k-fill ingest batch: parse every fill's amounts
// and fold them into all eight resolutions. It runs inside the batch's transaction.
func BenchmarkAggregate(b *testing.B) {
	fills := fillBatch(10_000)
	b.ReportAllocs()
	for b.Loop() {
		trades := make([]market.Trade, 0, len(fills))
		for _, f := range fills {
			t, ok := market.TradeOf(f.symbol, f.ts, f.id, f.quote, f.base, f.oracle)
			if ok {
				trades = append(trades, t)
			}
		}
		if len(market.Aggregate(trades)) == 0 {
			b.Fatal("no deltas")
		}
	}
}
