package events

import "time"

// FundingRate is a perp market's hourly funding rate update (protocol.funding-rates). Rates are quote
// per base in 1e9 precision; cumulative rates add each period's rate; TWAPs 1e6; periodRevenue quote 1e6;
// base amounts 1e9.
type FundingRate struct {
	Tx
	MarketIndex                    int    `json:"marketIndex"`
	RecordID                       string `json:"recordId"`
	Symbol                         string `json:"symbol"`
	FundingRate                    Amount `json:"fundingRate"`
	FundingRateLong                Amount `json:"fundingRateLong"`
	FundingRateShort               Amount `json:"fundingRateShort"`
	CumulativeFundingRateLong      Amount `json:"cumulativeFundingRateLong"`
	CumulativeFundingRateShort     Amount `json:"cumulativeFundingRateShort"`
	OraclePriceTwap                Amount `json:"oraclePriceTwap"`
	MarkPriceTwap                  Amount `json:"markPriceTwap"`
	PeriodRevenue                  Amount `json:"periodRevenue"`
	BaseAssetAmountWithAmm         Amount `json:"baseAssetAmountWithAmm"`
	BaseAssetAmountWithUnsettledLp Amount `json:"baseAssetAmountWithUnsettledLp"`
}

func (*FundingRate) EventType() string { return "fundingRate" }
func (r *FundingRate) Validate() error { return r.ValidateAt(time.Now()) }
func (r *FundingRate) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.id("recordId", r.RecordID)
	c.str("symbol", r.Symbol)
	c.amount("fundingRate", r.FundingRate)
	c.amount("fundingRateLong", r.FundingRateLong)
	c.amount("fundingRateShort", r.FundingRateShort)
	c.amount("cumulativeFundingRateLong", r.CumulativeFundingRateLong)
	c.amount("cumulativeFundingRateShort", r.CumulativeFundingRateShort)
	c.amount("oraclePriceTwap", r.OraclePriceTwap)
	c.amount("markPriceTwap", r.MarkPriceTwap)
	c.amount("periodRevenue", r.PeriodRevenue)
	c.amount("baseAssetAmountWithAmm", r.BaseAssetAmountWithAmm)
	c.amount("baseAssetAmountWithUnsettledLp", r.BaseAssetAmountWithUnsettledLp)
	return c.err(r.EventType())
}

// FundingPayment is the funding settled into one account's perp position (protocol.funding-payments).
// fundingPayment is quote 1e6 (negative when the account pays), baseAssetAmount 1e9, the cumulative
// funding fields 1e9.
type FundingPayment struct {
	Tx
	UserAuthority             string `json:"userAuthority"`
	User                      string `json:"user"`
	MarketIndex               int    `json:"marketIndex"`
	FundingPayment            Amount `json:"fundingPayment"`
	BaseAssetAmount           Amount `json:"baseAssetAmount"`
	UserLastCumulativeFunding Amount `json:"userLastCumulativeFunding"`
	AmmCumulativeFundingLong  Amount `json:"ammCumulativeFundingLong"`
	AmmCumulativeFundingShort Amount `json:"ammCumulativeFundingShort"`
}

func (*FundingPayment) EventType() string { return "fundingPayment" }
func (r *FundingPayment) Validate() error { return r.ValidateAt(time.Now()) }
func (r *FundingPayment) ValidateAt(now time.Time) error {
	c := newCheck(now)
	c.tx(r.Tx)
	c.str("userAuthority", r.UserAuthority)
	c.str("user", r.User)
	c.nonNeg("marketIndex", int64(r.MarketIndex))
	c.amount("fundingPayment", r.FundingPayment)
	c.amount("baseAssetAmount", r.BaseAssetAmount)
	c.amount("userLastCumulativeFunding", r.UserLastCumulativeFunding)
	c.amount("ammCumulativeFundingLong", r.AmmCumulativeFundingLong)
	c.amount("ammCumulativeFundingShort", r.AmmCumulativeFundingShort)
	return c.err(r.EventType())
}
