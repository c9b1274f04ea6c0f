// Package market is the Market tag: per-market history keyed by symbol (trades, predictions, funding
// rates, insurance-fund flows, IF stakes, swaps, deposits, rewards) and OHLC candles built from fills.
//
// This package holds the domain: the markets' kinds, candle arithmetic and the store contract.
// postgres/ stores the schema and writes the ingest sinks, http/ serves the candles, service/ declares
// the service to the kit (its series among it).
package market

import (
	"context"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/markets"
)

// Store reads what the ingest wrote beside the event series. Implementations are safe for concurrent
// use.
type Store interface {
	// Market returns the catalogue entry for symbol, learnt from the events ingested, or a
	// fault.NotFound error.
	Market(ctx context.Context, symbol string) (events.Market, error)
	// Candles returns the stored (traded) buckets of symbol at res with lo <= ts <= hi in ascending
	// order, plus the last stored bucket before lo (nil if none) so that gaps and opens can be carried.
	Candles(ctx context.Context, symbol string, res Resolution, lo, hi int64) (stored []Bucket, before *Bucket, err error)
}

// Kind tells whether a market is one a list serves: a fault.NotFound error when it is not.
type Kind func(events.Market) error

// The kinds of market the lists serve.
var (
	AnyMarket Kind = func(events.Market) error { return nil }

	PredictionMarket Kind = func(m events.Market) error { return markets.CheckFilter(m, events.FilterPrediction) }
	PerpMarket       Kind = func(m events.Market) error { return markets.CheckType(m, events.MarketTypePerp) }
	SpotMarket       Kind = func(m events.Market) error { return markets.CheckType(m, events.MarketTypeSpot) }
)

// Check looks symbol up in store and checks it is of kind k.
func (k Kind) Check(ctx context.Context, store Store, symbol string) (events.Market, error) {
	m, err := store.Market(ctx, symbol)
	if err != nil {
		return events.Market{}, err
	}
	return m, k(m)
}
