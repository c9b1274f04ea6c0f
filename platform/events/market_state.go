package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// MarketType is the protocol's market kind. Prediction markets are perp markets (see MarketFilter).
type MarketType string

const (
	MarketTypePerp MarketType = "perp"
	MarketTypeSpot MarketType = "spot"
)

// Valid reports whether t is perp or spot.
func (t MarketType) Valid() bool { return t == MarketTypePerp || t == MarketTypeSpot }

// Market filters, as the API's marketFilter field and path segment spell them.
const (
	FilterPerp       = "perp"
	FilterSpot       = "spot"
	FilterPrediction = "prediction"
)

// PredictionSuffix ends the symbol of every prediction (BET) market.
const PredictionSuffix = "-BET"

// MarketFilter classifies a market the way the API's marketFilter does: prediction markets are perp
// markets whose symbol ends in "-BET"; everything else follows its market type.
func MarketFilter(marketType MarketType, symbol string) string {
	if marketType == MarketTypePerp && strings.HasSuffix(symbol, PredictionSuffix) {
		return FilterPrediction
	}
	return string(marketType)
}

// Market is one entry of a market catalogue. Perp and spot markets have separate index spaces, so a
// market is identified by (Type, Index) or by Symbol.
type Market struct {
	Index  int
	Symbol string
	Type   MarketType
}

// Filter returns the market's marketFilter value.
func (m Market) Filter() string { return MarketFilter(m.Type, m.Symbol) }

// MaxDecimals bounds a token's precision exponent: 10^MaxDecimals still fits an int64.
const MaxDecimals = 18

// MarketState is a per-slot sample of one market's AMM and oracle (protocol.market-states). It feeds
// the AMM series and the market summaries; it is not a transaction, so it has no txSig. Perp-only
// fields are empty for spot markets and spot-only fields empty for perp markets. A spot market's
// decimals tell what its token amounts (deposits, borrows, liquidation transfers) are worth: a
// token amount over 10^decimals is whole tokens.
type MarketState struct {
	Ts          int64      `json:"ts"`
	Slot        int64      `json:"slot"`
	MarketIndex int        `json:"marketIndex"`
	MarketType  MarketType `json:"marketType"`
	Symbol      string     `json:"symbol"`
	OraclePrice Amount     `json:"oraclePrice"` // 1e6

	// Perp AMM.
	MarkPrice              Amount `json:"markPrice,omitempty"`              // 1e6
	BidPrice               Amount `json:"bidPrice,omitempty"`               // 1e6
	AskPrice               Amount `json:"askPrice,omitempty"`               // 1e6
	LongSpread             Amount `json:"longSpread,omitempty"`             // percentage 1e6
	ShortSpread            Amount `json:"shortSpread,omitempty"`            // percentage 1e6
	BaseAssetAmountWithAmm Amount `json:"baseAssetAmountWithAmm,omitempty"` // AMM position, base 1e9
	BaseAssetAmountLong    Amount `json:"baseAssetAmountLong,omitempty"`    // base 1e9
	BaseAssetAmountShort   Amount `json:"baseAssetAmountShort,omitempty"`   // base 1e9, negative
	OpenInterest           Amount `json:"openInterest,omitempty"`           // base 1e9
	FundingRateLong        Amount `json:"fundingRateLong,omitempty"`        // last hourly rate, 1e9
	FundingRateShort       Amount `json:"fundingRateShort,omitempty"`       // last hourly rate, 1e9

	// Spot lending.
	Decimals       *int   `json:"decimals,omitempty"`       // the token's precision exponent (USDC 6, SOL 9)
	DepositBalance Amount `json:"depositBalance,omitempty"` // token precision
	BorrowBalance  Amount `json:"borrowBalance,omitempty"`  // token precision
	DepositRate    Amount `json:"depositRate,omitempty"`    // yearly, percentage 1e6
	BorrowRate     Amount `json:"borrowRate,omitempty"`     // yearly, percentage 1e6
}

func (*MarketState) EventType() string { return "marketState" }
func (r *MarketState) Validate() error { return r.ValidateAt(time.Now()) }
func (r *MarketState) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.ts("ts", r.Ts)
	if r.Slot <= 0 {
		c.fail("slot %d must be positive", r.Slot)
	}
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.market(r.MarketType, r.Symbol, "")
	c.str("symbol", r.Symbol)
	c.amount("oraclePrice", r.OraclePrice)
	perp := []struct {
		name string
		v    Amount
	}{
		{"markPrice", r.MarkPrice}, {"bidPrice", r.BidPrice}, {"askPrice", r.AskPrice},
		{"longSpread", r.LongSpread}, {"shortSpread", r.ShortSpread},
		{"baseAssetAmountWithAmm", r.BaseAssetAmountWithAmm}, {"baseAssetAmountLong", r.BaseAssetAmountLong},
		{"baseAssetAmountShort", r.BaseAssetAmountShort}, {"openInterest", r.OpenInterest},
		{"fundingRateLong", r.FundingRateLong}, {"fundingRateShort", r.FundingRateShort},
	}
	for _, f := range perp {
		if r.MarketType == MarketTypePerp {
			c.amount(f.name, f.v)
		} else {
			c.optAmount(f.name, f.v)
		}
	}
	if r.Decimals != nil && (*r.Decimals < 0 || *r.Decimals > MaxDecimals) {
		c.fail("decimals %d must be 0..%d", *r.Decimals, MaxDecimals)
	}
	c.optAmount("depositBalance", r.DepositBalance)
	c.optAmount("borrowBalance", r.BorrowBalance)
	c.optAmount("depositRate", r.DepositRate)
	c.optAmount("borrowRate", r.BorrowRate)
	return c.err(r.EventType())
}

// Vault is the state of one vault (protocol.vaults), the source of GET /vaults and the vault stats.
type Vault struct {
	Ts                int64  `json:"ts"`
	Slot              int64  `json:"slot"`
	Vault             string `json:"vault"` // vault account
	Name              string `json:"name"`
	Manager           string `json:"manager"`
	SpotMarketIndex   int    `json:"spotMarketIndex"` // deposit token
	Symbol            string `json:"symbol"`          // deposit token symbol
	TotalShares       Amount `json:"totalShares"`
	TotalDeposits     Amount `json:"totalDeposits"`     // token precision
	TotalWithdraws    Amount `json:"totalWithdraws"`    // token precision
	NetDeposits       Amount `json:"netDeposits"`       // token precision
	TotalAccountValue Amount `json:"totalAccountValue"` // token precision
	ManagementFee     Amount `json:"managementFee"`     // yearly, percentage 1e6
	ProfitShare       Amount `json:"profitShare"`       // percentage 1e6
	Permissioned      bool   `json:"permissioned"`
}

func (*Vault) EventType() string { return "vault" }
func (r *Vault) Validate() error { return r.ValidateAt(time.Now()) }
func (r *Vault) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.ts("ts", r.Ts)
	if r.Slot <= 0 {
		c.fail("slot %d must be positive", r.Slot)
	}
	c.str("vault", r.Vault)
	c.str("name", r.Name)
	c.str("manager", r.Manager)
	c.nonNeg("spotMarketIndex", int64(r.SpotMarketIndex))
	c.str("symbol", r.Symbol)
	c.amount("totalShares", r.TotalShares)
	c.amount("totalDeposits", r.TotalDeposits)
	c.amount("totalWithdraws", r.TotalWithdraws)
	c.amount("netDeposits", r.NetDeposits)
	c.amount("totalAccountValue", r.TotalAccountValue)
	c.amount("managementFee", r.ManagementFee)
	c.amount("profitShare", r.ProfitShare)
	return c.err(r.EventType())
}

// Params is the dashboard parameter blob served by GET /params (protocol.params). Its content is opaque
// to tidemark; it only has to be a JSON object.
type Params struct {
	Ts     int64           `json:"ts"`
	Params json.RawMessage `json:"params"`
}

func (*Params) EventType() string { return "params" }
func (r *Params) Validate() error { return r.ValidateAt(time.Now()) }
func (r *Params) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.ts("ts", r.Ts)
	if p := bytes.TrimSpace(r.Params); len(p) == 0 || p[0] != '{' || !json.Valid(p) {
		c.fail("params must be a JSON object")
	}
	return c.err(r.EventType())
}
