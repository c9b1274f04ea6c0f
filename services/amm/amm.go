// Package amm is the AMM tag: five historical series of every market's per-slot state (AMM position,
// bid/ask price, oracle price, spreads, open interest), sampled over any window in at most 11,000
// points.
//
// This package holds the domain: the series, the sampling rule, the rollup's format (the last state
// of every 20-second bucket, kept at ingest) and the store contract. postgres/ stores the raw states
// and the rollup, http/ serves the series, service/ declares the service to the kit.
package amm

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tidemark/tidemark/platform/events"
)

// Resolution is the series' resolution in seconds: the rollup keeps the last state of every bucket
// [Resolution*k, Resolution*k+Resolution) of unix time, and no step between samples is shorter.
const Resolution = 20

// MaxSamples is the most rows an answer holds, and the default.
const MaxSamples = 11000

// Series is one of the five series.
type Series int

// The series, in the order of the spec's table.
const (
	Position Series = iota
	BidAsk
	Oracle
	Spreads
	OpenInterest
)

// All are the five series.
var All = []Series{Position, BidAsk, Oracle, Spreads, OpenInterest}

// Name is the series' path segment: /amm/<name>.
func (s Series) Name() string {
	switch s {
	case Position:
		return "position"
	case BidAsk:
		return "bidAskPrice"
	case Oracle:
		return "oraclePrice"
	case Spreads:
		return "spreads"
	case OpenInterest:
		return "openInterest"
	}
	return "series(" + strconv.Itoa(int(s)) + ")"
}

// decimals are the decimal places of each of the series' values: the protocol's precision of the
// integer each one is (base amounts 1e9, prices 1e6), and for spreads 4, since the protocol's
// percentage precision makes 1e6 a hundred percent, so that one unit is 0.0001 percent.
func (s Series) decimals() []int {
	switch s {
	case Position, OpenInterest:
		return []int{9}
	case BidAsk:
		return []int{6, 6}
	case Oracle:
		return []int{6}
	case Spreads:
		return []int{4, 4}
	}
	return nil
}

// Values is how many values a row of the series holds after its timestamp.
func (s Series) Values() int { return len(s.decimals()) }

// PerpOnly reports whether the series exists only for perp markets (spot markets have an oracle and
// no AMM).
func (s Series) PerpOnly() bool { return s != Oracle }

// State is a market state reduced to what the series show, in protocol integers.
type State struct {
	Ts     int64
	Slot   int64
	Symbol string
	Index  int // the market's index (perp and spot markets have index spaces of their own)
	Perp   bool
	Oracle int64 // price, 1e6
	// Perp markets only.
	Bid, Ask                int64 // price, 1e6
	LongSpread, ShortSpread int64 // percentage, 1e6 = 100%
	Position                int64 // the AMM's base asset amount (baseAssetAmountWithAmm), 1e9
	OpenInterest            int64 // base, 1e9
}

// StateOf reduces a market state record. Every value must fit an int64 (the rollup's format): the
// protocol's amounts are u64 and i128 on chain, and one beyond int64 (more than 9.2e9 whole base
// units, or 9.2e12 in price) is refused rather than rounded.
func StateOf(r *events.MarketState) (State, error) {
	s := State{Ts: r.Ts, Slot: r.Slot, Symbol: r.Symbol, Index: r.MarketIndex, Perp: r.MarketType == events.MarketTypePerp}
	// Field by field rather than over a table of destinations: pointers into s would move it, and
	// the table, to the heap for every state.
	var err error
	amount := func(name string, v events.Amount) int64 {
		x, ok := parseInt64(string(v))
		if !ok && err == nil {
			if _, perr := v.Int64(); perr != nil {
				err = fmt.Errorf("marketState %s: %w", name, perr)
			} else {
				err = fmt.Errorf("marketState %s: %q is not an integer", name, v)
			}
		}
		return x
	}
	s.Oracle = amount("oraclePrice", r.OraclePrice)
	if s.Perp {
		s.Bid, s.Ask = amount("bidPrice", r.BidPrice), amount("askPrice", r.AskPrice)
		s.LongSpread, s.ShortSpread = amount("longSpread", r.LongSpread), amount("shortSpread", r.ShortSpread)
		s.Position, s.OpenInterest = amount("baseAssetAmountWithAmm", r.BaseAssetAmountWithAmm), amount("openInterest", r.OpenInterest)
	}
	if err != nil {
		return State{}, err
	}
	return s, nil
}

// parseInt64 parses an optional '-' and decimal digits into an int64, reporting false on anything
// else or an overflow. A state carries seven of them, and strconv's general parser (after Amount's
// own check) handles bases, signs and errors these digits never need.
func parseInt64(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		u = u*10 + uint64(c)
	}
	// 19 digits fit a uint64; the int64 bounds are checked on it.
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// Market is the catalogue entry of the state's market.
func (st *State) Market() events.Market {
	t := events.MarketTypeSpot
	if st.Perp {
		t = events.MarketTypePerp
	}
	return events.Market{Index: st.Index, Symbol: st.Symbol, Type: t}
}

// values appends the values of series s of the state.
func (st *State) values(s Series, dst []int64) []int64 {
	switch s {
	case Position:
		return append(dst, st.Position)
	case BidAsk:
		return append(dst, st.Bid, st.Ask)
	case Oracle:
		return append(dst, st.Oracle)
	case Spreads:
		return append(dst, st.LongSpread, st.ShortSpread)
	case OpenInterest:
		return append(dst, st.OpenInterest)
	}
	return dst
}

// Store reads the rollup. Implementations are safe for concurrent use.
type Store interface {
	// Market returns the catalogue entry of symbol, learnt from the states ingested, or a
	// fault.NotFound error.
	Market(ctx context.Context, symbol string) (events.Market, error)
	// Chunks calls fn with the rollup chunks of symbol's series s (see Chunk) in ascending order of
	// their start: the last one starting before from, if any, then those starting in [from, to].
	// data is only valid during the call.
	Chunks(ctx context.Context, symbol string, s Series, from, to int64, fn func(start int64, data []byte) error) error
	// Points looks up, for each bucket of buckets (in order), the latest state of symbol's series s
	// at or before it, and calls fn with its index in buckets: when the bucket has its own entry,
	// exact is set and data is the first PointHeader bytes of its chunk followed by the entry;
	// otherwise data is the whole chunk (starting at start) holding that latest state. A bucket
	// with no state at or before it gets no call. data is only valid during the call.
	Points(ctx context.Context, symbol string, s Series, buckets []int64, fn func(i int, start int64, data []byte, exact bool) error) error
}
