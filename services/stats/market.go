package stats

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/platform/events"
)

// MarketData is what a market's summary and pricing are made of, as stored. Prices are 1e6.
type MarketData struct {
	Market events.Market
	// State is the newest state sample; nil before the first.
	State *State
	// Last is the newest fill; nil before the first.
	Last *LastTrade
	// AgoPrice is the price of the last fill before the window: the price 24 hours ago. nil when the
	// market had not traded then.
	AgoPrice *int64
	// Window is the trading of the window.
	Window WindowTrading
	// Funding is the newest funding rate update's long and short rates, for a perp market whose state
	// sample carries none; nil otherwise.
	Funding *LongShort
}

// State is a market's newest state sample; the optional fields are nil when it lacks them.
type State struct {
	Ts, Slot     int64
	OraclePrice  int64
	MarkPrice    *int64
	OILong       *string
	OIShort      *string
	OpenInterest *string
	FundingLong  *string
	FundingShort *string
}

// LastTrade is a market's newest fill (in ts, fillRecordId order).
type LastTrade struct {
	Ts, Slot, ID int64
	Price        int64
	OraclePrice  int64
}

// WindowTrading is a market's trading over a window: fills, volumes (quote 1e6, base 1e9), and the
// highest and lowest fill and oracle prices of its fills (nil without fills).
type WindowTrading struct {
	Fills                                    int64
	Quote, Base                              string
	FillHigh, FillLow, OracleHigh, OracleLow *int64
}

// LongShort is a pair of long and short figures.
type LongShort struct {
	Long  events.Amount `json:"long"`
	Short events.Amount `json:"short"`
}

// FillOracle is a pair of a fill and an oracle price; nil without fills.
type FillOracle struct {
	Fill   *events.Amount `json:"fill"`
	Oracle *events.Amount `json:"oracle"`
}

// MarketSummary is one market of /stats/markets and of edge.markets. Prices are 1e6, quote volume
// 1e6, base volume and open interest 1e9, funding rates 1e9 (the last hourly rate, quote per base);
// volumes, changes, highs and lows cover the 24 hours up to the current minute.
type MarketSummary struct {
	Symbol                string        `json:"symbol"`
	MarketIndex           int           `json:"marketIndex"`
	MarketType            string        `json:"marketType"`
	MarketFilter          string        `json:"marketFilter"`
	OraclePrice           events.Amount `json:"oraclePrice"`
	OraclePriceSlot       int64         `json:"oraclePriceSlot"`
	Price                 events.Amount `json:"price"`
	MarkPrice             events.Amount `json:"markPrice"`
	MarkPriceSlot         int64         `json:"markPriceSlot"`
	QuoteVolume           events.Amount `json:"quoteVolume"`
	BaseVolume            events.Amount `json:"baseVolume"`
	Fills                 int64         `json:"fills"`
	OpenInterest          LongShort     `json:"openInterest"`
	FundingRate           LongShort     `json:"fundingRate"`
	PriceChange24h        *string       `json:"priceChange24h"`
	PriceChange24hPercent *string       `json:"priceChange24hPercent"`
	PriceHigh             FillOracle    `json:"priceHigh"`
	PriceLow              FillOracle    `json:"priceLow"`
	LastTradeTs           *int64        `json:"lastTradeTs"`
	Ts                    int64         `json:"ts"`
}

// Pricing is one market of edge.pricing: its oracle, last and mark prices (1e6) with the slots they
// are of.
type Pricing struct {
	Symbol          string        `json:"symbol"`
	MarketIndex     int           `json:"marketIndex"`
	MarketType      string        `json:"marketType"`
	OraclePrice     events.Amount `json:"oraclePrice"`
	OraclePriceSlot int64         `json:"oraclePriceSlot"`
	Price           events.Amount `json:"price"`
	MarkPrice       events.Amount `json:"markPrice"`
	MarkPriceSlot   int64         `json:"markPriceSlot"`
}

// PriceChange is one market of /stats/markets/prices.
type PriceChange struct {
	Symbol             string  `json:"symbol"`
	MarketIndex        int     `json:"marketIndex"`
	MarketType         string  `json:"marketType"`
	CurrentPrice       *string `json:"currentPrice"`
	Price24hAgo        *string `json:"price24hAgo"`
	PriceChange        *string `json:"priceChange"`
	PriceChangePercent *string `json:"priceChangePercent"`
}

// oracle is the market's newest oracle price and its slot: the state sample's, or the newest fill's
// when that is of a later slot.
func (d MarketData) oracle() (int64, int64) {
	switch {
	case d.State != nil && (d.Last == nil || d.State.Slot >= d.Last.Slot):
		return d.State.OraclePrice, d.State.Slot
	case d.Last != nil:
		return d.Last.OraclePrice, d.Last.Slot
	}
	return 0, 0
}

// mark is the mark price and its slot: a perp market's AMM mark from its state, else its last fill
// price; a spot market has no AMM, and its mark is its oracle price.
func (d MarketData) mark() (int64, int64) {
	if d.Market.Type == events.MarketTypePerp {
		if d.State != nil && d.State.MarkPrice != nil {
			return *d.State.MarkPrice, d.State.Slot
		}
		if d.Last != nil {
			return d.Last.Price, d.Last.Slot
		}
	}
	return d.oracle()
}

// funding is a perp market's last hourly funding rates: its state sample's, else its newest funding
// rate update's, else none.
func (d MarketData) funding() LongShort {
	if st := d.State; st != nil && st.FundingLong != nil && st.FundingShort != nil {
		return LongShort{events.Amount(*st.FundingLong), events.Amount(*st.FundingShort)}
	}
	if d.Funding != nil {
		return *d.Funding
	}
	return LongShort{"0", "0"}
}

// price is the last fill price; before the first fill, the mark price.
func (d MarketData) price() int64 {
	if d.Last != nil {
		return d.Last.Price
	}
	p, _ := d.mark()
	return p
}

// change is the price change over the window and its percent (two decimals, rounded half away from
// zero); nil without a price 24 hours ago.
func (d MarketData) change() (abs, pct *string) {
	if d.AgoPrice == nil || d.Last == nil {
		return nil, nil
	}
	diff := d.Last.Price - *d.AgoPrice
	a := strconv.FormatInt(diff, 10)
	abs = &a
	if *d.AgoPrice != 0 {
		p := new(big.Rat).SetFrac(big.NewInt(diff*100), big.NewInt(*d.AgoPrice)).FloatString(2)
		pct = &p
	}
	return abs, pct
}

// Summary is the market's summary.
func (d MarketData) Summary() MarketSummary {
	oracle, oracleSlot := d.oracle()
	mark, markSlot := d.mark()
	s := MarketSummary{
		Symbol: d.Market.Symbol, MarketIndex: d.Market.Index, MarketType: string(d.Market.Type), MarketFilter: d.Market.Filter(),
		OraclePrice: events.NewAmount(oracle), OraclePriceSlot: oracleSlot,
		Price: events.NewAmount(d.price()), MarkPrice: events.NewAmount(mark), MarkPriceSlot: markSlot,
		QuoteVolume: amountOr(d.Window.Quote), BaseVolume: amountOr(d.Window.Base), Fills: d.Window.Fills,
		OpenInterest: LongShort{"0", "0"}, FundingRate: LongShort{"0", "0"},
		PriceHigh: FillOracle{price(d.Window.FillHigh), price(d.Window.OracleHigh)},
		PriceLow:  FillOracle{price(d.Window.FillLow), price(d.Window.OracleLow)},
	}
	s.PriceChange24h, s.PriceChange24hPercent = d.change()
	if st := d.State; st != nil {
		s.Ts = st.Ts
		if d.Market.Type == events.MarketTypePerp {
			s.OpenInterest = LongShort{amountOf(st.OILong), amountOf(st.OIShort)}
		}
	}
	if d.Market.Type == events.MarketTypePerp {
		s.FundingRate = d.funding()
	}
	if d.Last != nil {
		ts := d.Last.Ts
		s.LastTradeTs = &ts
		s.Ts = max(s.Ts, ts)
	}
	return s
}

// Pricing is the market's pricing data.
func (d MarketData) Pricing() Pricing {
	oracle, oracleSlot := d.oracle()
	mark, markSlot := d.mark()
	return Pricing{
		Symbol: d.Market.Symbol, MarketIndex: d.Market.Index, MarketType: string(d.Market.Type),
		OraclePrice: events.NewAmount(oracle), OraclePriceSlot: oracleSlot,
		Price: events.NewAmount(d.price()), MarkPrice: events.NewAmount(mark), MarkPriceSlot: markSlot,
	}
}

// PriceChange is the market's entry of /stats/markets/prices.
func (d MarketData) PriceChange() PriceChange {
	p := PriceChange{Symbol: d.Market.Symbol, MarketIndex: d.Market.Index, MarketType: string(d.Market.Type)}
	if d.Last != nil {
		cur := strconv.FormatInt(d.Last.Price, 10)
		p.CurrentPrice = &cur
	}
	if d.AgoPrice != nil {
		ago := strconv.FormatInt(*d.AgoPrice, 10)
		p.Price24hAgo = &ago
	}
	p.PriceChange, p.PriceChangePercent = d.change()
	return p
}

func price(p *int64) *events.Amount {
	if p == nil {
		return nil
	}
	a := events.NewAmount(*p)
	return &a
}

func amountOf(s *string) events.Amount {
	if s == nil {
		return "0"
	}
	return events.Amount(*s)
}

func amountOr(s string) events.Amount {
	if s == "" {
		return "0"
	}
	return events.Amount(s)
}

// Contract is a perp market as a price aggregator lists derivative contracts: figures in display
// units (prices and quote in USDC, base in tokens), funding rates in percent per hour, the next
// funding time in milliseconds.
type Contract struct {
	ContractIndex            int    `json:"contract_index"`
	TickerID                 string `json:"ticker_id"`
	BaseCurrency             string `json:"base_currency"`
	QuoteCurrency            string `json:"quote_currency"`
	LastPrice                string `json:"last_price"`
	BaseVolume               string `json:"base_volume"`
	QuoteVolume              string `json:"quote_volume"`
	High                     string `json:"high"`
	Low                      string `json:"low"`
	ProductType              string `json:"product_type"`
	OpenInterest             string `json:"open_interest"`
	OpenInterestUsd          string `json:"open_interest_usd"`
	IndexPrice               string `json:"index_price"`
	IndexName                string `json:"index_name"`
	IndexCurrency            string `json:"index_currency"`
	FundingRate              string `json:"funding_rate"`
	NextFundingRate          string `json:"next_funding_rate"`
	NextFundingRateTimestamp string `json:"next_funding_rate_timestamp"`
	ContractType             string `json:"contract_type"`
	ContractPriceCurrency    string `json:"contract_price_currency"`
}

// QuoteCurrency is what every market is quoted and settled in.
const QuoteCurrency = "USDC"

// Contract is a perp market's contract entry at now (unix seconds); ok is false for every other
// market (spot and prediction markets are no perpetual contracts).
func (d MarketData) Contract(now int64) (c Contract, ok bool) {
	if d.Market.Filter() != events.FilterPerp {
		return Contract{}, false
	}
	base := strings.TrimSuffix(d.Market.Symbol, "-PERP")
	oracle, _ := d.oracle()
	mark, _ := d.mark()
	last := d.price()
	high, low := last, last
	if d.Window.FillHigh != nil {
		high, low = *d.Window.FillHigh, *d.Window.FillLow
	}
	oi := "0"
	if st := d.State; st != nil && st.OpenInterest != nil {
		oi = *st.OpenInterest
	}
	fundingLong := string(d.funding().Long)
	oiUSD := "0"
	if v, ok := bigOf(oi); ok {
		// base 1e9 times price 1e6 is quote 1e15
		oiUSD = decimal(new(big.Int).Quo(new(big.Int).Mul(v, big.NewInt(oracle)), big.NewInt(1e9)).String(), 6)
	}
	return Contract{
		ContractIndex: d.Market.Index, TickerID: d.Market.Symbol, BaseCurrency: base, QuoteCurrency: QuoteCurrency,
		LastPrice: decimal(strconv.FormatInt(last, 10), 6), BaseVolume: decimal(string(amountOr(d.Window.Base)), 9),
		QuoteVolume: decimal(string(amountOr(d.Window.Quote)), 6),
		High:        decimal(strconv.FormatInt(high, 10), 6), Low: decimal(strconv.FormatInt(low, 10), 6),
		ProductType: "PERPETUAL", OpenInterest: decimal(oi, 9), OpenInterestUsd: oiUSD,
		IndexPrice: decimal(strconv.FormatInt(oracle, 10), 6), IndexName: base + "-USD", IndexCurrency: "USD",
		FundingRate:              fundingPercent(fundingLong, oracle),
		NextFundingRate:          predictedFunding(mark, oracle),
		NextFundingRateTimestamp: strconv.FormatInt((floor(now, Hour)+Hour)*1000, 10),
		ContractType:             "vanilla", ContractPriceCurrency: QuoteCurrency,
	}, true
}

// fundingPercent is an hourly funding rate (1e9 quote per base) as a percent of the oracle price.
func fundingPercent(rate string, oracle int64) string {
	r, ok := bigOf(rate)
	if !ok || oracle == 0 {
		return "0"
	}
	// rate/1e9 / (oracle/1e6) * 100 = rate*100 / (oracle*1e3)
	return new(big.Rat).SetFrac(new(big.Int).Mul(r, big.NewInt(100)), new(big.Int).Mul(big.NewInt(oracle), big.NewInt(1000))).FloatString(9)
}

// predictedFunding is the next hourly funding rate the premium of mark over oracle implies: the
// premium spread over the 24 periods of a day, in percent.
func predictedFunding(mark, oracle int64) string {
	if oracle == 0 {
		return "0"
	}
	return new(big.Rat).SetFrac(big.NewInt((mark-oracle)*100), big.NewInt(oracle*24)).FloatString(9)
}

// decimal writes the integer string v scaled down by 10^places: decimal("150250000", 6) is
// "150.250000".
func decimal(v string, places int) string {
	neg := strings.HasPrefix(v, "-")
	digits := strings.TrimPrefix(v, "-")
	if len(digits) <= places {
		digits = strings.Repeat("0", places-len(digits)+1) + digits
	}
	out := digits[:len(digits)-places] + "." + digits[len(digits)-places:]
	if neg && strings.Trim(digits, "0") != "" {
		out = "-" + out
	}
	return out
}
