package stats

import (
	"cmp"
	"fmt"
	"maps"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/platform/events"
)

// Sum is an exact integer sum of amounts in protocol precision: in 64 bits while it fits, which
// keeps summing a batch free of allocations, and a big.Int beyond, so that no sum is ever wrapped.
type Sum struct {
	small int64
	large *big.Int // nil while the sum fits small
}

// ParseSum reads an integer string.
func ParseSum(s string) (Sum, bool) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Sum{small: v}, true
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return Sum{}, false
	}
	return Sum{large: v}, true
}

// Add adds v to s.
func (s *Sum) Add(v Sum) {
	if s.large == nil && v.large == nil {
		if r, overflow := addInt64(s.small, v.small); !overflow {
			s.small = r
			return
		}
	}
	s.large = new(big.Int).Add(s.big(), v.big())
	s.small = 0
}

func (s Sum) big() *big.Int {
	if s.large != nil {
		return s.large
	}
	return big.NewInt(s.small)
}

// IsZero reports whether s is 0.
func (s Sum) IsZero() bool {
	return s.large == nil && s.small == 0 || s.large != nil && s.large.Sign() == 0
}

// Sign is -1, 0 or +1.
func (s Sum) Sign() int {
	if s.large != nil {
		return s.large.Sign()
	}
	return cmp.Compare(s.small, 0)
}

// String is the decimal integer.
func (s Sum) String() string {
	if s.large != nil {
		return s.large.String()
	}
	return strconv.FormatInt(s.small, 10)
}

func addInt64(a, b int64) (int64, bool) {
	r := a + b
	return r, (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0)
}

// Fill is a fill as the stats take it: its identity, its market, its accounts ("" for an AMM side)
// and its amounts, quote 1e6 and base 1e9, the fill price (quote per base, 1e6) and the oracle's.
type Fill struct {
	Ts, Slot, ID int64
	TxSig        string
	TxSigIndex   int
	Market       events.Market
	Taker, Maker string
	Quote, Base  string
	quote, base  Sum
	Price        int64
	OraclePrice  int64
}

// FillOf checks f for what the stats need of it and reads its figures: a symbol, a fill record id,
// a positive base amount, a quote amount that is not negative and an oracle price.
func FillOf(f *events.Fill) (Fill, error) {
	out := Fill{
		Ts: f.Ts, Slot: f.Slot, TxSig: f.TxSig, TxSigIndex: f.TxSigIndex,
		Market: events.Market{Index: f.MarketIndex, Symbol: f.Symbol, Type: f.MarketType},
		Taker:  f.Taker, Maker: f.Maker, Quote: string(f.QuoteAssetAmountFilled), Base: string(f.BaseAssetAmountFilled),
	}
	if f.Symbol == "" {
		return Fill{}, fmt.Errorf("fill has no symbol: the stats are kept per market symbol")
	}
	var err error
	if out.ID, err = strconv.ParseInt(f.FillRecordID, 10, 64); err != nil {
		return Fill{}, fmt.Errorf("fillRecordId %q is beyond 64 bits", f.FillRecordID)
	}
	var ok bool
	if out.quote, ok = ParseSum(out.Quote); !ok || out.quote.Sign() < 0 {
		return Fill{}, fmt.Errorf("quoteAssetAmountFilled %q must not be negative", out.Quote)
	}
	if out.base, ok = ParseSum(out.Base); !ok || out.base.Sign() <= 0 {
		return Fill{}, fmt.Errorf("baseAssetAmountFilled %q must be positive: a fill without base has no price", out.Base)
	}
	if out.OraclePrice, err = strconv.ParseInt(string(f.OraclePrice), 10, 64); err != nil || out.OraclePrice < 0 {
		return Fill{}, fmt.Errorf("oraclePrice %q must be a price of 64 bits", f.OraclePrice)
	}
	if out.Price, ok = fillPrice(out.quote, out.base); !ok {
		return Fill{}, fmt.Errorf("the price of quote %s for base %s is beyond 64 bits", out.Quote, out.Base)
	}
	return out, nil
}

// fillPrice is quote (1e6) per base (1e9) in 1e6, rounded half up: quote * 1e9 / base.
func fillPrice(quote, base Sum) (int64, bool) {
	if quote.large == nil && base.large == nil {
		hi, lo := bits.Mul64(uint64(quote.small), events.BasePrecision)
		lo, carry := bits.Add64(lo, uint64(base.small)/2, 0)
		hi += carry
		if hi < uint64(base.small) {
			q, _ := bits.Div64(hi, lo, uint64(base.small))
			if q <= 1<<63-1 {
				return int64(q), true
			}
		}
		return 0, false
	}
	n := new(big.Int).Mul(quote.big(), big.NewInt(events.BasePrecision))
	n.Add(n, new(big.Int).Quo(base.big(), big.NewInt(2)))
	n.Quo(n, base.big())
	if !n.IsInt64() {
		return 0, false
	}
	return n.Int64(), true
}

// Bucket is what some fills of a market did to one bucket of its trading (a minute or an hour).
type Bucket struct {
	Symbol                                   string
	Ts                                       int64
	Fills                                    int64
	Quote, Base                              Sum
	FillHigh, FillLow, OracleHigh, OracleLow int64
	// The last fill in (ts, fill record id) order, whose prices close the bucket.
	LastTs, LastID, LastSlot, Close, CloseOracle int64
}

// Buckets folds fills into buckets of size seconds, in (symbol, ts) order: the order writers must
// lock them in.
func Buckets(fills []Fill, size int64) []Bucket {
	type key struct {
		symbol string
		ts     int64
	}
	byKey := make(map[key]*Bucket)
	for i := range fills {
		f := &fills[i]
		k := key{f.Market.Symbol, floor(f.Ts, size)}
		b := byKey[k]
		if b == nil {
			b = &Bucket{Symbol: k.symbol, Ts: k.ts, FillHigh: f.Price, FillLow: f.Price, OracleHigh: f.OraclePrice,
				OracleLow: f.OraclePrice, LastTs: f.Ts, LastID: f.ID, LastSlot: f.Slot, Close: f.Price, CloseOracle: f.OraclePrice}
			byKey[k] = b
		}
		b.Fills++
		b.Quote.Add(f.quote)
		b.Base.Add(f.base)
		b.FillHigh, b.FillLow = max(b.FillHigh, f.Price), min(b.FillLow, f.Price)
		b.OracleHigh, b.OracleLow = max(b.OracleHigh, f.OraclePrice), min(b.OracleLow, f.OraclePrice)
		if f.Ts > b.LastTs || f.Ts == b.LastTs && f.ID > b.LastID {
			b.LastTs, b.LastID, b.LastSlot, b.Close, b.CloseOracle = f.Ts, f.ID, f.Slot, f.Price, f.OraclePrice
		}
	}
	out := make([]Bucket, 0, len(byKey))
	for _, b := range byKey {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Or(strings.Compare(a.Symbol, b.Symbol), cmp.Compare(a.Ts, b.Ts)) })
	return out
}

// Rollup folds buckets (of one size, in (symbol, ts) order) into buckets of size seconds, in the same
// order: the hours of a batch's minutes, without going through its fills again.
func Rollup(buckets []Bucket, size int64) []Bucket {
	var out []Bucket
	for _, b := range buckets {
		ts := floor(b.Ts, size)
		if n := len(out); n > 0 && out[n-1].Symbol == b.Symbol && out[n-1].Ts == ts {
			o := &out[n-1]
			o.Fills += b.Fills
			o.Quote.Add(b.Quote)
			o.Base.Add(b.Base)
			o.FillHigh, o.FillLow = max(o.FillHigh, b.FillHigh), min(o.FillLow, b.FillLow)
			o.OracleHigh, o.OracleLow = max(o.OracleHigh, b.OracleHigh), min(o.OracleLow, b.OracleLow)
			if b.LastTs > o.LastTs || b.LastTs == o.LastTs && b.LastID > o.LastID {
				o.LastTs, o.LastID, o.LastSlot, o.Close, o.CloseOracle = b.LastTs, b.LastID, b.LastSlot, b.Close, b.CloseOracle
			}
			continue
		}
		b.Ts = ts
		out = append(out, b)
	}
	return out
}

// AccountVolume is what an account traded in a month (quote, 1e6), as maker and as taker.
type AccountVolume struct {
	Month        int64
	Account      string
	Maker, Taker Sum
}

// AccountVolumes folds fills into each side's account's month, in (month, account) order. A fill
// counts for its taker as taker volume and for its maker as maker volume; an account on both sides
// of a fill has both.
func AccountVolumes(fills []Fill) []AccountVolume {
	type key struct {
		month   int64
		account string
	}
	byKey := make(map[key]*AccountVolume)
	add := func(month int64, account string, q Sum, maker bool) {
		if account == "" {
			return
		}
		k := key{month, account}
		v := byKey[k]
		if v == nil {
			v = &AccountVolume{Month: month, Account: account}
			byKey[k] = v
		}
		if maker {
			v.Maker.Add(q)
		} else {
			v.Taker.Add(q)
		}
	}
	var month, monthEnd int64
	for i := range fills {
		f := &fills[i]
		if f.Ts < month || f.Ts >= monthEnd {
			month = MonthOf(f.Ts)
			monthEnd = MonthOf(month + 32*24*3600)
		}
		add(month, f.Taker, f.quote, false)
		add(month, f.Maker, f.quote, true)
	}
	out := make([]AccountVolume, 0, len(byKey))
	for _, k := range slices.SortedFunc(maps.Keys(byKey), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.month, b.month), strings.Compare(a.account, b.account))
	}) {
		out = append(out, *byKey[k])
	}
	return out
}
