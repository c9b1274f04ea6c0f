package market

import (
	"math"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

// Resolution is a candle width as the API names it (events.Resolution), with the bucket arithmetic
// the service builds candles with.
type Resolution events.Resolution

// Resolutions lists every resolution the service builds, in ascending width: all of events'.
func Resolutions() []Resolution {
	var out []Resolution
	for _, r := range events.Resolutions() {
		out = append(out, Resolution(r))
	}
	return out
}

// ParseResolution accepts exactly the API's path values.
func ParseResolution(s string) (Resolution, error) {
	r, err := events.ParseResolution(s)
	return Resolution(r), err
}

// fixedSeconds is the width of the resolutions that have one; D is fixed too (UTC days have no
// leap seconds in unix time). W and M are calendar-aligned and stepped with time arithmetic.
func (r Resolution) fixedSeconds() int64 {
	switch r {
	case "1":
		return 60
	case "5":
		return 300
	case "15":
		return 900
	case "60":
		return 3600
	case "240":
		return 14400
	case "D":
		return 86400
	}
	return 0
}

// Floor returns the start of the bucket holding ts. Weeks start on Monday 00:00 UTC (ISO weeks, as
// traders read weekly charts), months on the 1st 00:00 UTC.
func (r Resolution) Floor(ts int64) int64 {
	if s := r.fixedSeconds(); s > 0 {
		return floorDiv(ts, s) * s
	}
	t := time.Unix(ts, 0).UTC()
	switch r {
	case "W":
		day := floorDiv(ts, 86400) * 86400
		// Unix day 0 was a Thursday: Monday is 3 days earlier in the cycle.
		offset := (int64(t.Weekday()) + 6) % 7
		return day - offset*86400
	case "M":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	panic("market: unknown resolution " + string(r))
}

// Step moves a bucket start n buckets forward (n < 0: backward).
func (r Resolution) Step(start int64, n int) int64 {
	if s := r.fixedSeconds(); s > 0 {
		return start + int64(n)*s
	}
	switch r {
	case "W":
		return start + int64(n)*7*86400
	case "M":
		return time.Unix(start, 0).UTC().AddDate(0, n, 0).Unix()
	}
	panic("market: unknown resolution " + string(r))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Bucket is what the store keeps per traded bucket: the aggregate of its fills. Opens are not stored
// because they are the previous bucket's close, so a late fill that moves a close moves the next open
// without a rewrite.
type Bucket struct {
	Ts               int64
	FillFirst        float64 // price of the bucket's first fill, the open of a market's first bucket
	FillHigh         float64
	FillLow          float64
	FillClose        float64
	OracleFirst      float64
	OracleHigh       float64
	OracleLow        float64
	OracleClose      float64
	QuoteVolume      float64
	BaseVolume       float64
	LastTradeTs      int64
	LastFillRecordID string
}

// Candle is the REST candle record.
type Candle struct {
	Ts          int64   `json:"ts"`
	FillOpen    float64 `json:"fillOpen"`
	FillHigh    float64 `json:"fillHigh"`
	FillClose   float64 `json:"fillClose"`
	FillLow     float64 `json:"fillLow"`
	OracleOpen  float64 `json:"oracleOpen"`
	OracleHigh  float64 `json:"oracleHigh"`
	OracleClose float64 `json:"oracleClose"`
	OracleLow   float64 `json:"oracleLow"`
	QuoteVolume float64 `json:"quoteVolume"`
	BaseVolume  float64 `json:"baseVolume"`
}

// AppendJSON appends c as encoding/json would encode it (same keys, same order, shortest float
// form), without reflection.
func (c *Candle) AppendJSON(b []byte) []byte {
	return appendCandle(b, c.Ts, c.FillOpen, c.FillHigh, c.FillClose, c.FillLow,
		c.OracleOpen, c.OracleHigh, c.OracleClose, c.OracleLow, c.QuoteVolume, c.BaseVolume)
}

// appendCandle is AppendJSON of the candle with these fields: the one encoder of both the store's
// path and the memory's, which pass it the fields without making a Candle.
func appendCandle(b []byte, ts int64, fo, fh, fc, fl, oo, oh, oc, ol, qv, bv float64) []byte {
	b = append(b, `{"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = appendPrice(append(b, `,"fillOpen":`...), fo)
	b = appendPrice(append(b, `,"fillHigh":`...), fh)
	b = appendPrice(append(b, `,"fillClose":`...), fc)
	b = appendPrice(append(b, `,"fillLow":`...), fl)
	b = appendPrice(append(b, `,"oracleOpen":`...), oo)
	b = appendPrice(append(b, `,"oracleHigh":`...), oh)
	b = appendPrice(append(b, `,"oracleClose":`...), oc)
	b = appendPrice(append(b, `,"oracleLow":`...), ol)
	b = appendPrice(append(b, `,"quoteVolume":`...), qv)
	b = appendBase(append(b, `,"baseVolume":`...), bv)
	return append(b, '}')
}

// appendPrice is appendFloat for a number most likely in whole millionths: prices and quote volumes.
func appendPrice(b []byte, f float64) []byte {
	if d, ok := appendDecimal(b, f, 1e6, 6); ok {
		return d
	}
	return appendFloat(b, f)
}

// appendBase is appendFloat for a number most likely in whole billionths: base volumes.
func appendBase(b []byte, f float64) []byte {
	if d, ok := appendDecimal(b, f, 1e9, 9); ok {
		return d
	}
	return appendFloat(b, f)
}

// appendFloat formats like encoding/json: shortest representation, exponent form outside
// [1e-6, 1e21). NaN and infinities cannot occur (prices and volumes are finite) and become 0.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	// Prices are whole millionths and volumes whole units of protocol precision divided by theirs:
	// those are written from the integer, a fraction of strconv's cost, which dominates an answer.
	if d, ok := appendDecimal(b, f, 1e6, 6); ok {
		return d
	}
	if d, ok := appendDecimal(b, f, 1e9, 9); ok {
		return d
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	b = strconv.AppendFloat(b, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// encoding/json writes e-07 as e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// pairs are the two-digit numbers 00 to 99.
const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// triples are the three-digit numbers 000 to 999, three bytes each: a number's digits are written
// three at a time, a division by 1000 for three of them.
var triples = func() (t [3000]byte) {
	for i := range 1000 {
		t[3*i], t[3*i+1], t[3*i+2] = byte('0'+i/100), byte('0'+i/10%10), byte('0'+i%10)
	}
	return t
}()

// appendDecimal writes f as strconv's shortest form when fixedOf finds it a whole number n of
// 1/scale (scale = 10^digits, digits 6 or 9).
func appendDecimal(b []byte, f, scale float64, digits int) ([]byte, bool) {
	n, ok := fixedOf(f, scale)
	if !ok {
		return b, false
	}
	return appendSigned(b, n, digits), true
}

// fixedOf returns the integer n such that f is the float64 nearest to n/scale (scale 1e6 or 1e9),
// when |n| is below 1e15 and |f| at least 1e-6 (below that strconv writes an exponent), or f is +0
// (n = 0; -0 is written "-0"). Two decimals of at most 15 significant digits are never the same
// float64 (its precision is 15.9 digits), so the decimal n/scale, trailing zeros dropped, is then the
// only shortest string that reads back as f: the one strconv writes, which appendSigned writes from n.
func fixedOf(f, scale float64) (int64, bool) {
	if math.Float64bits(f) == 0 {
		return 0, true
	}
	a := math.Abs(f)
	// NaN fails the bounds.
	if !(a >= 1e-6 && a*scale < 1e15) {
		return 0, false
	}
	n := uint64(a*scale + 0.5)
	if float64(n)/scale != a {
		return 0, false
	}
	if f < 0 {
		return -int64(n), true
	}
	return int64(n), true
}

// appendSigned writes n/10^digits as appendFixed does, with its sign.
func appendSigned(b []byte, n int64, digits int) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	return appendFixed(b, uint64(n), digits)
}

// appendCandleFixed is appendCandle of fields given as whole millionths (base volume: billionths),
// as fixedOf gives them: the same bytes, without a float's checks.
func appendCandleFixed(b []byte, ts int64, fo, fh, fc, fl, oo, oh, oc, ol, qv, bv int64) []byte {
	b = append(b, `{"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = appendSigned(append(b, `,"fillOpen":`...), fo, 6)
	b = appendSigned(append(b, `,"fillHigh":`...), fh, 6)
	b = appendSigned(append(b, `,"fillClose":`...), fc, 6)
	b = appendSigned(append(b, `,"fillLow":`...), fl, 6)
	b = appendSigned(append(b, `,"oracleOpen":`...), oo, 6)
	b = appendSigned(append(b, `,"oracleHigh":`...), oh, 6)
	b = appendSigned(append(b, `,"oracleClose":`...), oc, 6)
	b = appendSigned(append(b, `,"oracleLow":`...), ol, 6)
	b = appendSigned(append(b, `,"quoteVolume":`...), qv, 6)
	b = appendSigned(append(b, `,"baseVolume":`...), bv, 9)
	return append(b, '}')
}

// appendFixed writes n/10^digits (digits 6 or 9, n below 1e15) as a decimal without trailing zeros,
// three digits at a time: the numbers are most of an answer's bytes and of its cost.
func appendFixed(b []byte, n uint64, digits int) []byte {
	p := uint64(1_000_000)
	if digits == 9 {
		p = 1_000_000_000
	}
	// Both parts fit 32 bits (n < 1e15), whose divisions by constants are the cheaper.
	whole, frac := uint32(n/p), uint32(n%p)
	b = appendWhole(b, whole)
	if frac == 0 {
		return b
	}
	b = append(b, '.')
	if digits == 9 {
		b = appendTriple(b, frac/1_000_000)
		frac %= 1_000_000
	}
	b = appendTriple(appendTriple(b, frac/1000), frac%1000)
	// frac is not 0: a digit other than 0 stays.
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	return b
}

// appendWhole writes w without leading zeros.
func appendWhole(b []byte, w uint32) []byte {
	switch {
	case w < 10:
		return append(b, byte('0'+w))
	case w < 100:
		return append(b, pairs[2*w], pairs[2*w+1])
	case w < 1000:
		return appendTriple(b, w)
	case w < 1_000_000:
		return appendTriple(appendWhole(b, w/1000), w%1000)
	}
	return appendTriple(appendTriple(appendWhole(b, w/1_000_000), w/1000%1000), w%1000)
}

// appendTriple writes x (below 1000) as three digits.
func appendTriple(b []byte, x uint32) []byte {
	return append(b, triples[3*x], triples[3*x+1], triples[3*x+2])
}

// CandleOf turns a stored bucket into a candle opening at the previous bucket's close (prev nil: at
// its own first fill). High and low include the open so that the bar always contains it.
func CandleOf(b Bucket, prev *Bucket) Candle {
	fo, oo := b.FillFirst, b.OracleFirst
	if prev != nil {
		fo, oo = prev.FillClose, prev.OracleClose
	}
	return Candle{
		Ts:          b.Ts,
		FillOpen:    fo,
		FillHigh:    math.Max(b.FillHigh, fo),
		FillClose:   b.FillClose,
		FillLow:     math.Min(b.FillLow, fo),
		OracleOpen:  oo,
		OracleHigh:  math.Max(b.OracleHigh, oo),
		OracleClose: b.OracleClose,
		OracleLow:   math.Min(b.OracleLow, oo),
		QuoteVolume: b.QuoteVolume,
		BaseVolume:  b.BaseVolume,
	}
}

// flat is a bucket without trades: it carries the previous close with zero volume.
func flat(ts int64, prev *Bucket) Candle {
	return Candle{
		Ts: ts, FillOpen: prev.FillClose, FillHigh: prev.FillClose, FillClose: prev.FillClose, FillLow: prev.FillClose,
		OracleOpen: prev.OracleClose, OracleHigh: prev.OracleClose, OracleClose: prev.OracleClose, OracleLow: prev.OracleClose,
	}
}

// CandleWindow is the bucket range one candles request covers.
type CandleWindow struct {
	Lo, Hi     int64 // first and last bucket start, inclusive
	Descending bool  // records newest first (startTs after endTs, as the protocol's API reads them)
}

// Window resolves a request's startTs, endTs and limit into at most limit buckets. The range runs
// from startTs towards endTs: backwards when startTs > endTs, which is how the protocol's existing API
// is called, forwards otherwise. Buckets after now's bucket are never produced.
func Window(r Resolution, startTs, endTs int64, limit int, now time.Time) CandleWindow {
	nowBucket := r.Floor(now.Unix())
	if startTs > endTs {
		hi := min(r.Floor(startTs), nowBucket)
		lo := max(r.Step(hi, -(limit-1)), r.Floor(endTs))
		return CandleWindow{Lo: lo, Hi: hi, Descending: true}
	}
	lo := r.Floor(startTs)
	hi := min(r.Floor(endTs), r.Step(lo, limit-1), nowBucket)
	return CandleWindow{Lo: lo, Hi: hi}
}

// Assemble lays out every bucket of w in ascending order from the stored (traded) buckets, carrying the
// previous close through buckets without trades. Buckets before a market's first trade are omitted.
// stored must be ascending and within [w.Lo, w.Hi]; before is the last stored bucket before w.Lo.
func Assemble(r Resolution, w CandleWindow, stored []Bucket, before *Bucket) []Candle {
	if w.Hi < w.Lo {
		return []Candle{}
	}
	out := make([]Candle, 0, min(len(stored)*2+16, 1000))
	prev := before
	i := 0
	for ts := w.Lo; ts <= w.Hi; ts = r.Step(ts, 1) {
		if i < len(stored) && stored[i].Ts == ts {
			out = append(out, CandleOf(stored[i], prev))
			prev = &stored[i]
			i++
			continue
		}
		if prev != nil {
			out = append(out, flat(ts, prev))
		}
	}
	if w.Descending {
		for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
			out[a], out[b] = out[b], out[a]
		}
	}
	return out
}
