package sim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
)

// BenchmarkGenerateFills generates what bench's BenchmarkIngestFills takes from the simulator:
// 300,000 fills at 3000 fills a minute, every other message generated and dropped.
func BenchmarkGenerateFills(b *testing.B) {
	const n = 300_000
	enough := errors.New("enough")
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for range b.N {
		cfg := sim.DefaultConfig()
		cfg.FillsPerMinute = 3000
		cfg.Now = func() time.Time { return end }
		fills, msgs := 0, 0
		err := sim.New(cfg).Generate(end.Add(-72*time.Hour), end, func(m events.Message) error {
			msgs++
			if m.Topic != events.TopicFills {
				return nil
			}
			if fills++; fills == n {
				return enough
			}
			return nil
		})
		if !errors.Is(err, enough) {
			b.Fatalf("Generate = %v after %d fills", err, fills)
		}
		b.ReportMetric(float64(msgs)/float64(n), "msgs/fill")
	}
}
