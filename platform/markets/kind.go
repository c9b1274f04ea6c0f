package markets

import (
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
)

// CheckType is nil when m is of market type t, and otherwise the fault.NotFound error a route answers
// for a market of another kind ("SOL-PERP is not a spot market"). Prediction markets are perp
// markets here (their type is perp); an empty t takes every market.
func CheckType(m events.Market, t events.MarketType) error {
	if t == "" || m.Type == t {
		return nil
	}
	return notOfKind(m, string(t))
}

// CheckFilter is CheckType by marketFilter (events.FilterPerp, FilterSpot, FilterPrediction): a
// prediction market is of the prediction filter only, not of the perp one.
func CheckFilter(m events.Market, filter string) error {
	if m.Filter() == filter {
		return nil
	}
	return notOfKind(m, filter)
}

// notOfKind is the one message clients read for a market of the wrong kind.
func notOfKind(m events.Market, kind string) error {
	return fault.Errorf(fault.NotFound, "%s is not a %s market", m.Symbol, kind)
}
