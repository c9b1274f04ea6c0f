package markets_test

import (
	"errors"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/markets"
)

// TestKind: a market of the asked kind passes; any other is fault.NotFound with the message clients
// read. A prediction market is a perp market by type, but not by filter.
func TestKind(t *testing.T) {
	perp := events.Market{Symbol: "SOL-PERP", Type: events.MarketTypePerp}
	spot := events.Market{Symbol: "SOL", Type: events.MarketTypeSpot}
	bet := events.Market{Symbol: "TRUMP-WIN-2024-BET", Type: events.MarketTypePerp}
	tests := []struct {
		name string
		err  error
		want string // "" means passes
	}{
		{"perp is perp", markets.CheckType(perp, events.MarketTypePerp), ""},
		{"any type", markets.CheckType(spot, ""), ""},
		{"bet is a perp type", markets.CheckType(bet, events.MarketTypePerp), ""},
		{"perp is not spot", markets.CheckType(perp, events.MarketTypeSpot), "SOL-PERP is not a spot market"},
		{"spot is not perp", markets.CheckType(spot, events.MarketTypePerp), "SOL is not a perp market"},
		{"bet filter", markets.CheckFilter(bet, events.FilterPrediction), ""},
		{"spot filter", markets.CheckFilter(spot, events.FilterSpot), ""},
		{"perp is not prediction", markets.CheckFilter(perp, events.FilterPrediction), "SOL-PERP is not a prediction market"},
		{"bet is not a perp filter", markets.CheckFilter(bet, events.FilterPerp), "TRUMP-WIN-2024-BET is not a perp market"},
	}
	for _, tt := range tests {
		var f *fault.Error
		switch {
		case tt.want == "" && tt.err != nil:
			t.Errorf("%s: %v, want nil", tt.name, tt.err)
		case tt.want == "":
		case !errors.As(tt.err, &f) || f.Code != fault.NotFound || f.Message != tt.want:
			t.Errorf("%s: %#v, want NotFound %q", tt.name, tt.err, tt.want)
		}
	}
}
