package txlog_test

import (
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
	"github.com/tidemark/tidemark/platform/chain/txlog"
)

// BenchmarkParse parses the real transactions, all five per round, and reports events per second:
// the figure an indexer's throughput is bounded by once blocks are fetched.
func BenchmarkParse(b *testing.B) {
	var logs [][]string
	lines := 0
	for _, tx := range drifttest.Samples[txSample](b, "transactions.jsonl") {
		logs = append(logs, tx.LogMessages)
		lines += len(tx.LogMessages)
	}
	events := 0
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range logs {
			r, err := txlog.Parse(l, false)
			if err != nil {
				b.Fatal(err)
			}
			events += len(r.Events)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "lines/s")
}
