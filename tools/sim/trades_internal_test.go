package sim

import (
	"math"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

// TestTradeMessagesPerFill checks the fills flow's message rate that Live's rate relies on.
func TestTradeMessagesPerFill(t *testing.T) {
	for _, c := range []struct {
		fpm     float64
		minutes int64
	}{{300, 30}, {2000, 8}} {
		s := New(Config{Seed: 3, Authorities: 200, FillsPerMinute: c.fpm})
		start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
		// The fills flow's orders are those with a fill; the other flows' are never filled.
		type key struct{ user, id string }
		filled := map[key]bool{}
		var named []key // the order each order record and order action names
		fills, trade := 0, 0
		err := s.generate(start, start+60*c.minutes, func(_ int64, m events.Message) error {
			rec, err := events.Decode(m.Topic, m.Value)
			if err != nil {
				return err
			}
			switch r := rec.(type) {
			case *events.Fill:
				if r.Action == events.ActionFill {
					fills++
					trade++
					filled[key{r.Taker, r.TakerOrderID}] = true
					if r.Maker != "" {
						filled[key{r.Maker, r.MakerOrderID}] = true
					}
					return nil
				}
				named = append(named, key{r.Taker + r.Maker, r.TakerOrderID + r.MakerOrderID})
			case *events.Order:
				named = append(named, key{r.User, r.OrderID})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range named {
			if filled[k] {
				trade++
			}
		}
		if got := float64(trade) / float64(fills); math.Abs(got/tradeMessagesPerFill-1) > 0.02 {
			t.Errorf("%v fills a minute: %.3f messages of the fills flow per fill, tradeMessagesPerFill is %v", c.fpm, got, tradeMessagesPerFill)
		}
	}
}
