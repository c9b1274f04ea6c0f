package amm

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The rollup keeps, for every market, the last state (the one of the highest slot) of every
// Resolution-second bucket, in chunks of ChunkBuckets buckets: one chunk per market, series and
// ChunkSeconds of time. An answer of 11,000 rows reads a few dozen to a few hundred chunks rather
// than as many rows, so that its cost is the bytes it reads and formats, not the rows the database
// walks; the bytes are what a chunk's format keeps few.
//
// A chunk is a presence bitmap of ChunkBuckets bits (bit b of byte b/8 tells whether bucket b has a
// state), a format byte, and ChunkBuckets fixed-width entries of the row's values, present or not:
// bucket b of a chunk starting at c holds [c+b*Resolution, c+(b+1)*Resolution). Wide chunks hold
// each value as a little-endian int64; narrow ones, which most are, a base int64 per value (the
// first present entry's) and then each value as its little-endian int32 difference from the base:
// half the bytes, and still one entry at a fixed offset. A chunk is narrow when every difference
// fits.
//
// The slots chunk (SlotsRow) holds each bucket's state's slot: a state replaces a bucket's when its
// slot is higher, which makes folding states in idempotent and free of order, so a replayed or late
// state leaves the rollup as a computation from scratch would.
const (
	ChunkBuckets = 180
	ChunkSeconds = ChunkBuckets * Resolution
	BitmapBytes  = (ChunkBuckets + 7) / 8
	// HeaderBytes are the bitmap and the format byte (formatWide or formatNarrow).
	HeaderBytes = BitmapBytes + 1
)

const (
	formatWide   = 0
	formatNarrow = 1
)

// Row is one of the rollup rows of a chunk: SlotsRow, or the row of a Series (RowOf).
type Row int

// SlotsRow holds each bucket's state's slot; the series' rows follow it.
const SlotsRow Row = 0

// RowOf is the row of series s.
func RowOf(s Series) Row { return Row(s) + 1 }

// Rows are every row of a chunk: the slots and the five series.
var Rows = []Row{SlotsRow, RowOf(Position), RowOf(BidAsk), RowOf(Oracle), RowOf(Spreads), RowOf(OpenInterest)}

// Values is how many values an entry of row r holds.
func (r Row) Values() int {
	if r == SlotsRow {
		return 1
	}
	return Series(r - 1).Values()
}

// ChunkSize is the size in bytes of a chunk of row r, narrow or wide.
func (r Row) ChunkSize(narrow bool) int {
	if narrow {
		return HeaderBytes + 8*r.Values() + ChunkBuckets*4*r.Values()
	}
	return HeaderBytes + ChunkBuckets*8*r.Values()
}

// ChunkStart is the start of the chunk holding unix time ts.
func ChunkStart(ts int64) int64 { return floorDiv(ts, ChunkSeconds) * ChunkSeconds }

// floorDiv is a/b rounded towards minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// chunkView reads a chunk of one row.
type chunkView struct {
	data   []byte
	n      int // values per entry
	narrow bool
	base   [2]int64
	off    int // of entry 0
	w      int // entry width
}

// view checks data is a chunk of row r and reads its layout.
func view(r Row, data []byte) (chunkView, error) {
	c := chunkView{data: data, n: r.Values()}
	if len(data) < HeaderBytes {
		return c, fmt.Errorf("amm: chunk of row %d has %d bytes", r, len(data))
	}
	switch data[BitmapBytes] {
	case formatWide:
		c.off, c.w = HeaderBytes, 8*c.n
	case formatNarrow:
		c.narrow, c.off, c.w = true, HeaderBytes+8*c.n, 4*c.n
		for j := range c.n {
			c.base[j] = int64(binary.LittleEndian.Uint64(data[HeaderBytes+8*j:]))
		}
	default:
		return c, fmt.Errorf("amm: chunk of row %d has format %d", r, data[BitmapBytes])
	}
	if len(data) != r.ChunkSize(c.narrow) {
		return c, fmt.Errorf("amm: chunk of row %d has %d bytes, want %d", r, len(data), r.ChunkSize(c.narrow))
	}
	return c, nil
}

func (c *chunkView) present(b int) bool { return c.data[b>>3]&(1<<(b&7)) != 0 }

// value is value j of bucket b's entry.
func (c *chunkView) value(b, j int) int64 {
	e := c.off + b*c.w
	if c.narrow {
		return c.base[j] + int64(int32(binary.LittleEndian.Uint32(c.data[e+4*j:])))
	}
	return int64(binary.LittleEndian.Uint64(c.data[e+8*j:]))
}

// latest is the latest present bucket at or before b, -1 when none.
func (c *chunkView) latest(b int) int {
	for b >= 0 && !c.present(b) {
		b--
	}
	return b
}

// entryValues reads one entry of a view's format out of an entry's bytes (Store.Points).
func (c *chunkView) entryValues(e []byte, dst *[2]int64) {
	for j := range c.n {
		if c.narrow {
			dst[j] = c.base[j] + int64(int32(binary.LittleEndian.Uint32(e[4*j:])))
		} else {
			dst[j] = int64(binary.LittleEndian.Uint64(e[8*j:]))
		}
	}
}

// dense is a chunk decoded, for folding.
type dense struct {
	present [ChunkBuckets]bool
	values  [ChunkBuckets][2]int64
}

func decodeDense(r Row, data []byte) (*dense, error) {
	d := &dense{}
	if data == nil {
		return d, nil
	}
	c, err := view(r, data)
	if err != nil {
		return nil, err
	}
	for b := range ChunkBuckets {
		if d.present[b] = c.present(b); d.present[b] {
			for j := range c.n {
				d.values[b][j] = c.value(b, j)
			}
		}
	}
	return d, nil
}

// encode writes d as a chunk of row r, narrow when every value's difference from the first present
// entry's fits an int32.
func (d *dense) encode(r Row) []byte {
	n := r.Values()
	var base [2]int64
	narrow, first := true, true
	for b := range ChunkBuckets {
		if !d.present[b] {
			continue
		}
		if first {
			base, first = d.values[b], false
		}
		for j := range n {
			if diff := d.values[b][j] - base[j]; diff < math.MinInt32 || diff > math.MaxInt32 ||
				(d.values[b][j] < base[j]) != (diff < 0) { // the subtraction overflowed
				narrow = false
			}
		}
	}
	out := make([]byte, r.ChunkSize(narrow))
	for b := range ChunkBuckets {
		if d.present[b] {
			out[b>>3] |= 1 << (b & 7)
		}
	}
	if !narrow {
		out[BitmapBytes] = formatWide
		for b := range ChunkBuckets {
			if d.present[b] {
				for j := range n {
					binary.LittleEndian.PutUint64(out[HeaderBytes+b*8*n+8*j:], uint64(d.values[b][j]))
				}
			}
		}
		return out
	}
	out[BitmapBytes] = formatNarrow
	for j := range n {
		binary.LittleEndian.PutUint64(out[HeaderBytes+8*j:], uint64(base[j]))
	}
	off := HeaderBytes + 8*n
	for b := range ChunkBuckets {
		if d.present[b] {
			for j := range n {
				binary.LittleEndian.PutUint32(out[off+b*4*n+4*j:], uint32(int32(d.values[b][j]-base[j])))
			}
		}
	}
	return out
}

// Fold folds states into the chunks of one market starting at start: chunks[r] is row r's chunk,
// nil when the rollup has none yet (it is then made, when a state needs it). Every state must be of
// the market and within [start, start+ChunkSeconds). It reports whether any chunk changed; chunks it
// made or changed are in chunks.
func Fold(start int64, chunks map[Row][]byte, states []State) (changed bool, err error) {
	rows := map[Row]*dense{}
	for _, r := range Rows {
		d, err := decodeDense(r, chunks[r])
		if err != nil {
			return false, fmt.Errorf("amm: chunk at %d: %w", start, err)
		}
		rows[r] = d
	}
	touched := map[Row]bool{}
	slots := rows[SlotsRow]
	for i := range states {
		st := &states[i]
		if st.Ts < start || st.Ts >= start+ChunkSeconds {
			return false, fmt.Errorf("amm: state at %d folded into the chunk of %d", st.Ts, start)
		}
		b := int((st.Ts - start) / Resolution)
		if slots.present[b] && slots.values[b][0] >= st.Slot {
			continue // the bucket holds this state or a later one
		}
		for _, r := range Rows {
			if r != SlotsRow && Series(r-1).PerpOnly() && !st.Perp {
				continue
			}
			d := rows[r]
			d.present[b] = true
			copy(d.values[b][:], st.Values(r))
			touched[r] = true
		}
	}
	for r := range touched {
		chunks[r] = rows[r].encode(r)
	}
	return len(touched) > 0, nil
}

// Bucket is one bucket of a decoded chunk.
type Bucket struct {
	Start  int64   // the bucket's start, unix seconds
	Values []int64 // the row's values (the slot, for SlotsRow)
}

// Decode lists the present buckets of a chunk of row r starting at start, for tests and checks.
func Decode(r Row, start int64, chunk []byte) ([]Bucket, error) {
	c, err := view(r, chunk)
	if err != nil {
		return nil, err
	}
	var out []Bucket
	for b := range ChunkBuckets {
		if !c.present(b) {
			continue
		}
		v := make([]int64, c.n)
		for j := range v {
			v[j] = c.value(b, j)
		}
		out = append(out, Bucket{Start: start + int64(b)*Resolution, Values: v})
	}
	return out, nil
}

// Narrow reports whether a chunk is in the narrow format, for tests.
func Narrow(chunk []byte) bool { return len(chunk) > BitmapBytes && chunk[BitmapBytes] == formatNarrow }

// Rollup computes from scratch what the rollup of states holds: the last state (highest slot) of
// every bucket of every market, by symbol, buckets in order. It is the rollup's definition, which
// tests hold the stored one to.
func Rollup(states []State) map[string][]State {
	last := map[string]map[int64]State{}
	for _, st := range states {
		m := last[st.Symbol]
		if m == nil {
			m = map[int64]State{}
			last[st.Symbol] = m
		}
		b := floorDiv(st.Ts, Resolution)
		if cur, ok := m[b]; !ok || st.Slot > cur.Slot {
			m[b] = st
		}
	}
	out := map[string][]State{}
	for sym, m := range last {
		for _, st := range m {
			out[sym] = append(out[sym], st)
		}
		slices.SortFunc(out[sym], func(a, b State) int { return cmp.Compare(a.Ts, b.Ts) })
	}
	return out
}

// Values are the values of row r of a state, as a chunk stores them.
func (st *State) Values(r Row) []int64 {
	if r == SlotsRow {
		return []int64{st.Slot}
	}
	return st.values(Series(r-1), nil)
}
