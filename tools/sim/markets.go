package sim

import (
	"math"
	"math/rand/v2"

	"github.com/tidemark/tidemark/platform/events"
)

// marketSpec is a simulated market: its catalogue entry and how its prices and trades behave.
type marketSpec struct {
	events.Market
	pos      int     // index in Simulator.markets
	path     int     // price path index; -1 = pegged at $1 (USDC)
	step     int64   // base amount granularity in 1e9 (or token) units
	notional float64 // median fill size in dollars
	weight   float64 // share of fills; 0 = not traded
	decimals int     // token precision exponent (spot markets)
	oi       float64 // perp open interest per side, dollars
	supply   float64 // spot deposits, tokens
}

// pathSpec is one price process: an Ornstein-Uhlenbeck walk in log space (logit space for prediction
// markets) reverting to level with a half-life of days, so prices wander for weeks but stay in sane
// bands forever.
type pathSpec struct {
	level      float64 // dollars (probability for prediction markets)
	dailyVol   float64 // of the log (logit) price
	prediction bool
}

func pathSpecs() []pathSpec {
	return []pathSpec{
		{level: 150, dailyVol: 0.05},                    // SOL (perp and spot share the oracle)
		{level: 60000, dailyVol: 0.03},                  // BTC
		{level: 3000, dailyVol: 0.04},                   // ETH
		{level: 0.35, dailyVol: 0.15, prediction: true}, // TRUMP-WIN-2028-BET
	}
}

func marketSpecs() []marketSpec {
	perp, spot := events.MarketTypePerp, events.MarketTypeSpot
	return []marketSpec{
		{Market: events.Market{Index: 0, Symbol: "SOL-PERP", Type: perp}, path: 0, step: 10_000_000, notional: 1500, weight: 0.32, oi: 6e7},
		{Market: events.Market{Index: 1, Symbol: "BTC-PERP", Type: perp}, path: 1, step: 100_000, notional: 5000, weight: 0.25, oi: 1.5e8},
		{Market: events.Market{Index: 2, Symbol: "ETH-PERP", Type: perp}, path: 2, step: 1_000_000, notional: 3000, weight: 0.20, oi: 8e7},
		{Market: events.Market{Index: 3, Symbol: "TRUMP-WIN-2028-BET", Type: perp}, path: 3, step: 1_000_000_000, notional: 150, weight: 0.08, oi: 2e6},
		{Market: events.Market{Index: 0, Symbol: "USDC", Type: spot}, path: -1, decimals: 6, supply: 2e8},
		{Market: events.Market{Index: 1, Symbol: "SOL", Type: spot}, path: 0, step: 10_000_000, notional: 800, weight: 0.15, decimals: 9, supply: 1.5e6},
	}
}

// Markets is the simulated catalogue: SOL-PERP, BTC-PERP, ETH-PERP and the prediction market
// TRUMP-WIN-2028-BET (perp 0..3), USDC and SOL (spot 0 and 1).
func Markets() []events.Market {
	specs := marketSpecs()
	out := make([]events.Market, len(specs))
	for i, m := range specs {
		out[i] = m.Market
	}
	return out
}

// hourPoint is a price path at the start of an hour, with the funding it produced then.
type hourPoint struct {
	x         float64 // log price, or logit probability
	premium   float64 // mark TWAP / oracle TWAP - 1 over the hour before
	twap      float64 // oracle TWAP over the hour before, dollars
	rateLong  int64   // funding rate of the update at this hour, 1e9 quote per base
	rateShort int64
	cumLong   int64 // cumulative funding after this hour's update
	cumShort  int64
	ammBase   int64 // AMM net position after the update, base 1e9
}

// path holds one price process's hourly points from the epoch, grown on demand; the walk always runs
// from the epoch so that a point depends only on the seed and the hour, never on the query window.
type path struct {
	id     int
	seed   uint64
	spec   pathSpec
	walk   *rand.Rand // consumed strictly in hour order by point
	points []hourPoint

	bridgeHour int64
	bridge     []float64 // per-minute Brownian bridge inside bridgeHour
}

func newPath(seed uint64, id int, spec pathSpec) *path {
	return &path{id: id, seed: seed, spec: spec, walk: newRand(seed, streamWalk, int64(id)), bridgeHour: -1}
}

const (
	hoursPerDay      = 24
	revertHalfLife   = 10 * hoursPerDay // hours
	premiumReversion = 0.15             // per hour
	premiumVol       = 0.00015          // per hour
	premiumBias      = 0.00004          // longs pay a little on average, as on real venues
)

func (p *path) mean() float64 {
	if p.spec.prediction {
		return logit(p.spec.level)
	}
	return math.Log(p.spec.level)
}

func (p *path) price(x float64) float64 {
	if p.spec.prediction {
		return 1 / (1 + math.Exp(-x))
	}
	return math.Exp(x)
}

// point returns the path at hour h (h >= 0), extending the walk as needed.
func (p *path) point(h int64) hourPoint {
	if len(p.points) == 0 {
		x := p.mean()
		p.points = append(p.points, hourPoint{x: x, twap: p.price(x)})
	}
	theta := math.Ln2 / revertHalfLife
	sigma := p.spec.dailyVol / math.Sqrt(hoursPerDay)
	mu := p.mean()
	for int64(len(p.points)) <= h {
		prev := p.points[len(p.points)-1]
		next := prev
		next.x = prev.x + theta*(mu-prev.x) + sigma*p.walk.NormFloat64()
		if p.spec.prediction {
			next.x = math.Max(-4.5, math.Min(4.5, next.x))
		}
		next.premium = prev.premium + premiumReversion*(premiumBias-prev.premium) + premiumVol*p.walk.NormFloat64()
		next.twap = p.price((prev.x + next.x) / 2)
		rate := next.twap * next.premium / hoursPerDay * events.FundingRatePrecision
		next.rateLong = int64(math.Round(rate))
		// The protocol pays the side the AMM cannot fully fund less: model it as a smaller rate for
		// shorts whenever the premium is large.
		next.rateShort = next.rateLong
		if math.Abs(next.premium) > 0.0005 {
			next.rateShort = int64(math.Round(rate * 0.8))
		}
		next.cumLong = prev.cumLong + next.rateLong
		next.cumShort = prev.cumShort + next.rateShort
		// The AMM takes the other side of the crowd the premium reflects: ~$40M per 100% premium.
		next.ammBase = int64(-next.premium * 4e7 / next.twap * events.BasePrecision)
		p.points = append(p.points, next)
	}
	return p.points[h]
}

// at returns the price at second sec (0..3599) of hour h: the line between the hour's two points plus
// a per-minute Brownian bridge, linear inside a minute.
func (p *path) at(h, sec int64) float64 {
	x0, x1 := p.point(h).x, p.point(h+1).x
	if p.bridgeHour != h {
		p.bridge = p.makeBridge(h, p.bridge)
		p.bridgeHour = h
	}
	m, r := sec/60, float64(sec%60)/60
	b := p.bridge[m] + (p.bridge[m+1]-p.bridge[m])*r
	x := x0 + (x1-x0)*float64(sec)/3600 + b
	if p.spec.prediction {
		x = math.Max(-4.6, math.Min(4.6, x))
	}
	return p.price(x)
}

// makeBridge draws the hour's minute steps from a generator seeded by the hour alone, so any window
// sees the same path inside the hour.
func (p *path) makeBridge(h int64, buf []float64) []float64 {
	rng := newRand(p.seed, streamBridge, h<<4|int64(p.id))
	sigma := p.spec.dailyVol / math.Sqrt(hoursPerDay*60)
	b := append(buf[:0], 0)
	for i := 1; i <= 60; i++ {
		b = append(b, b[i-1]+sigma*rng.NormFloat64())
	}
	end := b[60]
	for i := range b {
		b[i] -= end * float64(i) / 60
	}
	return b
}

func logit(q float64) float64 { return math.Log(q / (1 - q)) }
