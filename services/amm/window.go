package amm

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// Window is the instants a query samples: start + i*Step for i in [0, Count).
//
// Step is max(Resolution, ceil((end-start)/samples)) seconds, and the instants are those of
// [start, end] but never more than samples of them. Row i carries the market's state as of instant
// t_i at the series' resolution: the state of the latest bucket that is complete at t_i (that ends
// with t_i's second or before it), or, when that bucket has none, of the nearest bucket before it
// with one. So a row never shows a state from after its timestamp, and shows the last state at or
// before it but for those of the incomplete bucket's seconds (at most Resolution-1 of them).
// Instants at which no bucket holding a state is complete yet (before the market's first state, or
// within its first bucket) have no row.
type Window struct {
	Start int64
	Step  uint64
	Count int
}

// NewWindow plans the instants of [start, end] (start < end) in at most samples (>= 1) rows. end-start
// may be any int64 difference: the arithmetic is unsigned.
func NewWindow(start, end int64, samples int) Window {
	span := uint64(end) - uint64(start)
	step := span / uint64(samples)
	if span%uint64(samples) != 0 {
		step++
	}
	step = max(step, Resolution)
	count := uint64(samples)
	if n := span/step + 1; n < count {
		count = n
	}
	return Window{Start: start, Step: step, Count: int(count)}
}

// At is instant i.
func (w Window) At(i int) int64 { return int64(uint64(w.Start) + uint64(i)*w.Step) }

// Until drops the instants after now: the state as of a time to come is not known yet.
func (w Window) Until(now int64) Window {
	if now < w.Start {
		w.Count = 0
		return w
	}
	if n := (uint64(now)-uint64(w.Start))/w.Step + 1; n < uint64(w.Count) {
		w.Count = int(n)
	}
	return w
}

// From drops the instants before t: no state is older than events.MinTs, and the bucket arithmetic
// keeps to instants from there on (an instant near math.MinInt64 has no bucket an int64 holds).
func (w Window) From(t int64) Window {
	if w.Count == 0 || w.Start >= t {
		return w
	}
	skip := (uint64(t) - uint64(w.Start) + w.Step - 1) / w.Step
	if skip >= uint64(w.Count) {
		w.Count = 0
		return w
	}
	w.Start = w.At(int(skip))
	w.Count -= int(skip)
	return w
}

// completeBucket is the start of the latest bucket complete at t: the one whose last second is t or
// before it.
func completeBucket(t int64) int64 { return (floorDiv(t+1, Resolution) - 1) * Resolution }

// Chunks is the range of chunk starts the window's instants read from (first > last when it has
// none); the chunk before first carries the state into the window.
func (w Window) Chunks() (first, last int64) {
	if w.Count == 0 {
		return 1, 0
	}
	return ChunkStart(completeBucket(w.At(0))), ChunkStart(completeBucket(w.At(w.Count - 1)))
}

// Sample appends the rows of series s of symbol over w to dst (an open JSON array), reading the rollup
// through store, and returns dst and the number of rows. A window whose instants are many per
// chunk reads the chunks it spans, each once; one whose instants are fewer than its chunks (a step
// of about an hour or more, a window of a year and more at 11,000 samples) looks each instant's
// entry up instead, so that no answer reads more than about one entry or one chunk per row.
func Sample(ctx context.Context, store Store, symbol string, s Series, w Window, dst []byte) ([]byte, int, error) {
	p := NewSampler(w, s, dst)
	first, last := w.Chunks()
	if first > last {
		out, n := p.Finish()
		return out, n, nil
	}
	var err error
	if chunks := (last-first)/ChunkSeconds + 1; chunks*int64(RowOf(s).ChunkSize(true)) > int64(w.Count)*pointCost {
		err = p.points(ctx, store, symbol)
	} else {
		err = store.Chunks(ctx, symbol, s, first, last, p.Chunk)
	}
	if err != nil {
		return nil, 0, err
	}
	out, n := p.Finish()
	return out, n, nil
}

// pointCost is what looking one entry up costs, in bytes of chunk read: an index probe each.
const pointCost = 1024

// SampleDense and SamplePoints are Sample with its reading forced, for tests.
func SampleDense(ctx context.Context, store Store, symbol string, s Series, w Window, dst []byte) ([]byte, int, error) {
	p := NewSampler(w, s, dst)
	if first, last := w.Chunks(); first <= last {
		err := store.Chunks(ctx, symbol, s, first, last, p.Chunk)
		if err != nil {
			return nil, 0, err
		}
	}
	out, n := p.Finish()
	return out, n, nil
}

// SamplePoints is Sample looking every instant's entry up.
func SamplePoints(ctx context.Context, store Store, symbol string, s Series, w Window, dst []byte) ([]byte, int, error) {
	p := NewSampler(w, s, dst)
	if err := p.points(ctx, store, symbol); err != nil {
		return nil, 0, err
	}
	out, n := p.Finish()
	return out, n, nil
}

// points emits every instant's row from Store.Points.
func (p *Sampler) points(ctx context.Context, store Store, symbol string) error {
	buckets := make([]int64, p.w.Count)
	for i := range buckets {
		buckets[i] = completeBucket(p.w.At(i))
	}
	var v [2]int64
	err := store.Points(ctx, symbol, p.s, buckets, func(i int, start int64, data []byte, exact bool) error {
		if exact {
			if err := exactValues(p.r, data, &v); err != nil {
				return err
			}
			p.emit(p.w.At(i), v, true)
			return nil
		}
		c, err := view(p.r, data)
		if err != nil {
			return err
		}
		b := ChunkBuckets - 1
		if k := buckets[i]; k < start+ChunkSeconds {
			b = int((k - start) / Resolution)
		}
		if b = c.latest(b); b >= 0 {
			for j := range c.n {
				v[j] = c.value(b, j)
			}
			p.emit(p.w.At(i), v, true)
		}
		return nil
	})
	p.i = p.w.Count
	return err
}

// exactValues reads what Store.Points gives for a bucket's own entry: the chunk's first
// PointHeader(r) bytes (bitmap, format, base values) and the entry.
func exactValues(r Row, data []byte, dst *[2]int64) error {
	n := r.Values()
	if len(data) < PointHeader(r) {
		return fmt.Errorf("amm: entry of row %d with %d bytes", r, len(data))
	}
	c := chunkView{data: data, n: n, w: 8 * n}
	if data[BitmapBytes] == formatNarrow {
		c.narrow, c.w = true, 4*n
		for j := range n {
			c.base[j] = int64(binary.LittleEndian.Uint64(data[HeaderBytes+8*j:]))
		}
	}
	e := data[PointHeader(r):]
	if len(e) != c.w {
		return fmt.Errorf("amm: entry of row %d with %d bytes, want %d", r, len(e), c.w)
	}
	c.entryValues(e, dst)
	return nil
}

// PointHeader is how many bytes of a chunk of row r come before the entry Store.Points gives: the
// bitmap, the format byte and room for the base values.
func PointHeader(r Row) int { return HeaderBytes + 8*r.Values() }

// Sampler writes the rows of one series over a window from the rollup's chunks, fed in ascending
// order of their start (the chunk before the window's first first, if any). It keeps only the last
// present entry of what it was fed, so chunks may be read straight from the database's buffers.
type Sampler struct {
	w    Window
	s    Series
	r    Row
	dst  []byte
	i    int      // the next instant
	last [2]int64 // the latest present entry fed so far
	has  bool
	rows int
}

// NewSampler writes the rows of s over w after dst (an open JSON array).
func NewSampler(w Window, s Series, dst []byte) *Sampler {
	return &Sampler{w: w, s: s, r: RowOf(s), dst: dst}
}

// RowBytes bounds the size of one row of s: a timestamp and values of up to 19 digits, a sign and a
// point each.
func RowBytes(s Series) int { return 24 + s.Values()*24 }

// Chunk feeds the chunk starting at start; data that is no chunk of the series' row is an error (the
// store's contract is broken).
func (p *Sampler) Chunk(start int64, chunk []byte) error {
	c, err := view(p.r, chunk)
	if err != nil {
		return fmt.Errorf("chunk at %d: %w", start, err)
	}
	var v [2]int64
	for ; p.i < p.w.Count; p.i++ {
		t := p.w.At(p.i)
		k := completeBucket(t)
		if k >= start+ChunkSeconds {
			break // this instant reads a later chunk
		}
		if k < start { // before the chunk: what was fed before it holds
			p.emit(t, p.last, p.has)
			continue
		}
		if b := c.latest(int((k - start) / Resolution)); b >= 0 {
			for j := range c.n {
				v[j] = c.value(b, j)
			}
			p.emit(t, v, true)
		} else {
			p.emit(t, p.last, p.has)
		}
	}
	if b := c.latest(ChunkBuckets - 1); b >= 0 {
		for j := range c.n {
			p.last[j] = c.value(b, j)
		}
		p.has = true
	}
	return nil
}

// Finish writes the rows of the instants after the last chunk and returns dst with every row
// appended (the array left open), and how many rows there are.
func (p *Sampler) Finish() ([]byte, int) {
	for ; p.i < p.w.Count; p.i++ {
		p.emit(p.w.At(p.i), p.last, p.has)
	}
	return p.dst, p.rows
}

func (p *Sampler) emit(t int64, v [2]int64, ok bool) {
	if !ok {
		return // before the market's first state
	}
	if p.rows > 0 {
		p.dst = append(p.dst, ',')
	}
	p.rows++
	p.dst = append(p.dst, '[')
	p.dst = AppendDecimal(p.dst, t, 0)
	for j, d := range p.s.decimals() {
		p.dst = append(p.dst, ',', '"')
		p.dst = AppendDecimal(p.dst, v[j], d)
		p.dst = append(p.dst, '"')
	}
	p.dst = append(p.dst, ']')
}

// digitPairs are "00" to "99": two digits per division halve the divisions of formatting.
const digitPairs = "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849" +
	"5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// pow10 are the powers of ten a uint64 holds.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// digits is the number of decimal digits of u (1 for 0).
func digits(u uint64) int {
	n := (bits.Len64(u)*1233)>>12 + 1 // log10(2) ~ 1233/4096: n or one more than the digits
	if n > 1 && u < pow10[n-1] {
		n--
	}
	return n
}

// AppendDecimal appends v/10^decimals exactly, with decimals places (0 <= decimals <= 18): the
// protocol's integers as the decimal numbers they stand for, without a float in between.
// AppendDecimal(b, -1500000, 6) appends "-1.500000". An answer is mostly formatted numbers
// (33,000 in the largest), hence digits written backwards, two per division, straight into
// their place in dst.
func AppendDecimal(dst []byte, v int64, decimals int) []byte {
	u := uint64(v)
	if v < 0 {
		u = -u // two's complement: exact for math.MinInt64 too
	}
	n := max(digits(u), decimals+1) // at least one digit before the point
	size := n
	if decimals > 0 {
		size++
	}
	if v < 0 {
		size++
	}
	dst = slices.Grow(dst, size)
	out := dst[len(dst) : len(dst)+size]
	i := size
	d := decimals
	for ; d >= 2; d -= 2 {
		q := u / 100
		r := u - q*100
		i -= 2
		out[i], out[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		u = q
	}
	if d == 1 {
		q := u / 10
		i--
		out[i] = byte('0' + u - q*10)
		u = q
	}
	if decimals > 0 {
		i--
		out[i] = '.'
	}
	for u >= 100 {
		q := u / 100
		r := u - q*100
		i -= 2
		out[i], out[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		u = q
	}
	if u >= 10 {
		i -= 2
		out[i], out[i+1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		i--
		out[i] = byte('0' + u)
	}
	if v < 0 {
		out[0] = '-'
	}
	return dst[:len(dst)+size]
}
