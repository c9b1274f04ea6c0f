package amm_test

import (
	"testing"

	"github.com/tidemark/tidemark/services/amm"
)

// BenchmarkSampler writes 11,000 rows of bid/ask prices over the longest 20-second window: the part
// of an answer that is the service's own work once the chunks are read.
func BenchmarkSampler(b *testing.B) {
	var states []amm.State
	for i := range int64(11_000) {
		states = append(states, state(base+20*i+7, i+1, 150+i%7))
	}
	b.ReportAllocs()
	chunks := rollup(b, states...)
	w := amm.NewWindow(base+19, base+19+220_000, amm.MaxSamples)
	first, last := w.Chunks()
	buf := make([]byte, 0, 1<<20)
	b.ResetTimer()
	for range b.N {
		p := amm.NewSampler(w, amm.BidAsk, buf[:0])
		for s := first; s <= last; s += amm.ChunkSeconds {
			if c := chunks[s]; c != nil {
				if err := p.Chunk(s, c[amm.RowOf(amm.BidAsk)]); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, n := p.Finish(); n != 11_000 {
			b.Fatalf("%d rows", n)
		}
	}
}
