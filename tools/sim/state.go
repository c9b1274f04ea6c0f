package sim

import (
	"math"

	"github.com/tidemark/tidemark/platform/events"
)

// Slowly varying state (balances, open interest, positions) is a smooth function of time rather than
// an accumulated ledger, so that any window can be generated without replaying history.

const (
	secondsPerDay  = 86400
	secondsPerYear = 31557600
)

func days(ts int64) float64  { return float64(ts-epoch) / secondsPerDay }
func years(ts int64) float64 { return float64(ts-epoch) / secondsPerYear }

// wave is a smooth oscillation in [-1, 1] with the given period in days.
func wave(ts int64, periodDays, phase float64) float64 {
	return math.Sin(2*math.Pi*days(ts)/periodDays + phase)
}

func (s *Simulator) perp(index int) *marketSpec { return s.market(events.MarketTypePerp, index) }
func (s *Simulator) spot(index int) *marketSpec { return s.market(events.MarketTypeSpot, index) }

func (s *Simulator) market(t events.MarketType, index int) *marketSpec {
	for i := range s.markets {
		if m := &s.markets[i]; m.Type == t && m.Index == index {
			return m
		}
	}
	panic("sim: no such market")
}

// level is the price a market reverts to, in dollars.
func (s *Simulator) level(spec *marketSpec) float64 {
	if spec.path < 0 {
		return 1
	}
	return s.paths[spec.path].spec.level
}

// tokenScale is 10^decimals of a spot market's token.
func tokenScale(spec *marketSpec) float64 { return math.Pow10(spec.decimals) }

// spotState is a spot market's lending state at ts: balances in token precision, cumulative interest
// 1e10, yearly rates percentage 1e6.
type spotState struct {
	deposits, borrows               int64
	depositInterest, borrowInterest int64
	depositRate, borrowRate         int64
}

func (s *Simulator) spotState(spec *marketSpec, ts int64) spotState {
	ph := float64(spec.Index)
	dep := spec.supply * (1 + 0.15*wave(ts, 27, ph) + 0.1*years(ts))
	util := 0.35 + 0.1*wave(ts, 11, ph)
	borrowRate := 0.03 + 0.15*util
	depositRate := borrowRate * util * 0.9
	// Cumulative interest compounds at the long-run average rates so that it only ever grows.
	avgDep, avgBorrow := 0.05, 0.08
	if spec.Index != 0 {
		avgDep, avgBorrow = 0.03, 0.06
	}
	scale := tokenScale(spec)
	return spotState{
		deposits:        int64(dep * scale),
		borrows:         int64(dep * util * scale),
		depositInterest: int64(events.SpotCumulativeInterestScale * math.Exp(avgDep*years(ts))),
		borrowInterest:  int64(events.SpotCumulativeInterestScale * math.Exp(avgBorrow*years(ts))),
		depositRate:     int64(depositRate * events.PercentagePrecision),
		borrowRate:      int64(borrowRate * events.PercentagePrecision),
	}
}

// position is an account's perp position (base 1e9, negative = short) during one day: about a third
// of accounts hold one in a given market.
func (s *Simulator) position(a *actor, spec *marketSpec, day int64) int64 {
	rng := newRand(s.seed, streamPosition, day, int64(a.index), int64(spec.Index))
	if rng.Float64() > 0.3 {
		return 0
	}
	notional := 2 * spec.notional * math.Exp(rng.NormFloat64()) * math.Sqrt(a.weight)
	base := roundStep(notional/s.level(spec)*events.BasePrecision, spec.step)
	if rng.IntN(2) == 0 {
		return -base
	}
	return base
}

// ifShares is an authority's insurance fund stake in a spot market during one day, in token precision
// (shares start at one token each).
func (s *Simulator) ifShares(authority string, spec *marketSpec, day int64) int64 {
	idx := s.pop.authIndex[authority][0]
	rng := newRand(s.seed, streamIFStakes, day, int64(idx), int64(spec.Index))
	if rng.Float64() < 0.4 {
		return 0
	}
	tokens := 3000 * math.Exp(rng.NormFloat64()) / s.level(spec)
	return int64(tokens * tokenScale(spec))
}

// ifTotals are a spot market's insurance fund totals at ts: all shares, stakers' shares and the
// value of one share in tokens.
func (s *Simulator) ifTotals(spec *marketSpec, ts int64) (total, users int64, sharePrice float64) {
	tokens := 1.2e7 / s.level(spec) * (1 + 0.2*wave(ts, 45, float64(spec.Index)))
	total = int64(tokens * tokenScale(spec))
	return total, total * 82 / 100, 1 + 0.06*years(ts)
}

// roundStep rounds v down to a multiple of step, at least one step.
func roundStep(v float64, step int64) int64 {
	return max(step, int64(v)/step*step)
}

// moved returns p moved by frac (e.g. 0.001 = 10 bps) in 1e6 precision.
func moved(p, frac float64) int64 { return priceInt(p * (1 + frac)) }
