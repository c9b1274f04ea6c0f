// Package market is the Market tag: per-market history keyed by symbol (trades, predictions, funding
// rates, insurance-fund flows, IF stakes, swaps, deposits, rewards) and OHLC candles built from fills.
//
// This package holds the domain: the series the API serves, candle arithmetic and the store contract.
// postgres/ implements the store and the ingest sinks, http/ the routes, service/ wires them together.
package market

import (
	"context"
	"encoding/json"

	"github.com/tidemark/tidemark/platform/events"
)

// Series names one list the API serves for a market. Each maps to one table and filter in the store.
type Series string

const (
	Trades             Series = "trades"
	Predictions        Series = "predictions"
	FundingRates       Series = "fundingRates"
	InsuranceFund      Series = "insuranceFund"
	InsuranceFundStake Series = "insuranceFundStake"
	Swaps              Series = "swaps"
	Deposits           Series = "deposits"
	Rewards            Series = "rewards"
)

// Cursor is the keyset position of a record: series are ordered by (ts, txSig, txSigIndex).
type Cursor struct {
	Ts         int64  `json:"t"`
	TxSig      string `json:"s"`
	TxSigIndex int    `json:"i"`
}

// Row is one stored record: its position and its API JSON, kept verbatim so reads never re-encode.
type Row struct {
	Cursor
	Record json.RawMessage
}

// RollingQuery selects the newest records of a series: Since <= ts <= Until, strictly before After
// when set, newest first, at most Limit.
type RollingQuery struct {
	Series       Series
	Symbol       string
	Since, Until int64
	After        *Cursor
	Limit        int
}

// DatedQuery selects one page of a series over [Start, End), oldest first.
type DatedQuery struct {
	Series     Series
	Symbol     string
	Start, End int64
	Offset     int
	Limit      int
}

// ExportQuery selects every record of a series with From <= ts <= To (unix seconds, both ends
// inclusive) of the market Symbol, or of every market when Symbol is "" (Trades and FundingRates
// only: the export route serves no other series so).
type ExportQuery struct {
	Series   Series
	Symbol   string
	From, To int64
}

// Exporter streams whole ranges of a series for export jobs. Implementations are safe for concurrent
// use.
type Exporter interface {
	// Export calls emit with the stored JSON of every record q selects, oldest first by (ts, txSig,
	// txSigIndex). Records are read incrementally, so memory stays flat whatever the range; record
	// is only valid during the call. Export stops at emit's first error and returns it (wrapped), as it
	// does the database's.
	Export(ctx context.Context, q ExportQuery, emit func(record []byte) error) error
}

// Store reads what the ingest wrote. Implementations are safe for concurrent use.
type Store interface {
	// Market returns the catalogue entry for symbol, learnt from the events ingested, or an httpapi
	// NotFound error.
	Market(ctx context.Context, symbol string) (events.Market, error)
	// Rolling returns rows newest first.
	Rolling(ctx context.Context, q RollingQuery) ([]Row, error)
	// Dated returns one page oldest first and the number of records in the whole range.
	Dated(ctx context.Context, q DatedQuery) (rows []Row, total int, err error)
	// Candles returns the stored (traded) buckets of symbol at res with lo <= ts <= hi in ascending
	// order, plus the last stored bucket before lo (nil if none) so that gaps and opens can be carried.
	Candles(ctx context.Context, symbol string, res Resolution, lo, hi int64) (stored []Bucket, before *Bucket, err error)
}
