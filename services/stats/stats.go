// Package stats is the Stats tag and the public reads beside it: exchange-wide aggregates (market
// summaries, volumes, prices, funding averages, liquidations, bankruptcies, vaults, the insurance
// fund, spot rate histories), the monthly maker, taker, volume and P&L leaderboards of wallets,
// /params, /vaults, the aggregator's contract list, and the live market summaries and pricing the
// WebSocket edge serves.
//
// This package holds the domain: windows and months, what a market summary and its pricing are made
// of, how ranks are given. postgres/ keeps the aggregates at ingest and reads them, http/ serves
// them, service/ declares the service to the kit.
package stats

import (
	"context"
	"encoding/json"
	"math/big"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/series"
)

// Store reads the stats schema. Implementations are safe for concurrent use.
type Store interface {
	// Market returns the catalogue entry of symbol, or a fault.NotFound error.
	Market(ctx context.Context, symbol string) (events.Market, error)
	// Markets returns what every market with a price (a state sample or a fill) is made of, for
	// the 24-hour window w ending now.
	Markets(ctx context.Context, w Window) ([]MarketData, error)
	// Volumes returns every market's trading over w, markets without any included.
	Volumes(ctx context.Context, w Window) ([]MarketVolume, error)
	// FundingAverages returns each perp market's average hourly funding rate over the windows
	// ending at now.
	FundingAverages(ctx context.Context, now int64) ([]FundingAverages, error)
	// Leaderboard returns page of the board of month, ranked.
	Leaderboard(ctx context.Context, q LeaderboardQuery) (LeaderboardPage, error)
	// Standing returns a wallet's totals and ranks in month; zeros and no ranks when it did nothing.
	Standing(ctx context.Context, month int64, authority string) (Standing, error)
	// Liquidations returns up to limit liquidation records (bankruptcies only when bankruptcies),
	// newest first, within [since, until], strictly before after when set.
	Liquidations(ctx context.Context, bankruptcies bool, since, until int64, after *series.Cursor, limit int) ([]series.Row, error)
	// LiquidationStats counts the liquidations (bankruptcies aside) since each of since and sums
	// their quote value.
	LiquidationStats(ctx context.Context, since ...int64) ([]CountAmount, error)
	// BankruptcyStats sums every bankruptcy.
	BankruptcyStats(ctx context.Context) (BankruptcyStats, error)
	// Swaps returns up to limit swap records, newest first, within [since, until], strictly before
	// after when set.
	Swaps(ctx context.Context, since, until int64, after *series.Cursor, limit int) ([]series.Row, error)
	// RateHistory returns spot market symbol's hourly series of kind since since, oldest first.
	RateHistory(ctx context.Context, symbol string, kind RateKind, since int64) ([]RatePoint, error)
	// Vaults returns the newest record of every vault, by vault key.
	Vaults(ctx context.Context) ([]events.Vault, error)
	// InsuranceFunds returns each spot market's insurance fund as of now.
	InsuranceFunds(ctx context.Context, now int64) ([]InsuranceFund, error)
	// Params returns the newest parameter blob, or a fault.NotFound error before the first.
	Params(ctx context.Context) (ts int64, params json.RawMessage, err error)
	// Published returns the last message published to an edge topic for every market, by symbol,
	// and the seq of the topic's channel's last message, read together: the list is current to it.
	Published(ctx context.Context, topic string) (data []json.RawMessage, seq int64, err error)
}

// CountAmount is how many and how much (quote, 1e6).
type CountAmount struct {
	Count  int64         `json:"count"`
	Amount events.Amount `json:"amount"`
}

// BankruptcyStats are every bankruptcy's totals (quote, 1e6): what was lost, what the insurance fund
// paid, the rest (socialized).
type BankruptcyStats struct {
	TotalAmount events.Amount `json:"totalAmount"`
	IfPayment   events.Amount `json:"ifPayment"`
	SocialLoss  events.Amount `json:"socialLoss"`
	TotalCount  events.Amount `json:"totalCount"`
}

// MarketVolume is one market's trading over a window: quote 1e6, base 1e9.
type MarketVolume struct {
	Symbol      string        `json:"symbol"`
	MarketIndex int           `json:"marketIndex"`
	MarketType  string        `json:"marketType"`
	QuoteVolume events.Amount `json:"quoteVolume"`
	BaseVolume  events.Amount `json:"baseVolume"`
}

// FundingWindows are the windows of the funding averages, in the order they are listed.
var FundingWindows = []struct {
	Name  string
	Hours int64
}{{"24h", 24}, {"7d", 7 * 24}, {"30d", 30 * 24}, {"1y", 365 * 24}}

// FundingAverages are a perp market's average hourly funding rate (percent of the oracle TWAP) over
// each of FundingWindows; nil where the window holds no update.
type FundingAverages struct {
	Symbol      string
	MarketIndex int
	Averages    []*float64
}

// RateKind is a spot rate series.
type RateKind string

// The rate series of /stats/{symbol}/rateHistory/{kind}.
const (
	RateDeposit        RateKind = "deposit"
	RateBorrow         RateKind = "borrow"
	RateDepositBalance RateKind = "deposit_balance"
	RateBorrowBalance  RateKind = "borrow_balance"
)

// RateKinds lists every series.
var RateKinds = []RateKind{RateDeposit, RateBorrow, RateDepositBalance, RateBorrowBalance}

// RatePoint is one hour of a rate series: the hour's start and the value.
type RatePoint struct {
	Ts    int64
	Value string
}

// InsuranceFund is a spot market's insurance fund: token amounts in the market's precision.
type InsuranceFund struct {
	Symbol       string                   `json:"symbol"`
	MarketIndex  int                      `json:"marketIndex"`
	VaultBalance events.Amount            `json:"vaultBalance"`
	TotalShares  events.Amount            `json:"totalShares"`
	UserShares   *events.Amount           `json:"userShares"`
	Revenue      map[string]events.Amount `json:"revenue"`
	Apy          *string                  `json:"apy"`
	Ts           int64                    `json:"ts"`
	RecentFlows  []json.RawMessage        `json:"recentFlows"`
}

// CheckSpot is a fault.NotFound error unless m is a spot market (markets.CheckType's, as every
// service answers it).
func CheckSpot(m events.Market) error { return markets.CheckType(m, events.MarketTypeSpot) }

// CheckAuthority validates an authority path value.
func CheckAuthority(authority string) error {
	if !events.ValidPublicKey(authority) {
		return fault.Errorf(fault.Invalid, "authority must be a wallet's public key (base58, 32 bytes)")
	}
	return nil
}

// bigOf parses an integer string; ok is false for anything else.
func bigOf(s string) (*big.Int, bool) {
	v, ok := new(big.Int).SetString(s, 10)
	return v, ok
}
