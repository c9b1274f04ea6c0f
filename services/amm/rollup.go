package amm

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// The rollup keeps, for every market, the last state (the one of the highest slot) of every
// Resolution-second bucket, in chunks of ChunkBuckets buckets: one chunk per market, series and
// ChunkSeconds of time. An answer of 11,000 rows reads a few dozen to a few hundred chunks rather
// than as many rows, so that its cost is the bytes it formats, not the rows the database walks.
//
// A chunk is a presence bitmap of ChunkBuckets bits (bit b of byte b/8 tells whether bucket b has a
// state) followed by ChunkBuckets fixed-width entries, present or not, of the series' values as
// little-endian int64: bucket b of a chunk starting at c holds [c+b*Resolution, c+(b+1)*Resolution).
// The slots chunk (SlotsRow) holds each bucket's state's slot: a state replaces a bucket's when its
// slot is higher, which makes folding states in idempotent and free of order, so a replayed or late
// state leaves the rollup as a computation from scratch would.
const (
	ChunkBuckets = 180
	ChunkSeconds = ChunkBuckets * Resolution
	BitmapBytes  = (ChunkBuckets + 7) / 8
)

// Row is one of the rollup rows of a chunk: SlotsRow, or the row of a Series (RowOf).
type Row int

// SlotsRow holds each bucket's state's slot; the series' rows follow it.
const SlotsRow Row = 0

// RowOf is the row of series s.
func RowOf(s Series) Row { return Row(s) + 1 }

// Rows are every row of a chunk: the slots and the five series.
var Rows = []Row{SlotsRow, RowOf(Position), RowOf(BidAsk), RowOf(Oracle), RowOf(Spreads), RowOf(OpenInterest)}

// width is the size of one entry of row r.
func (r Row) width() int {
	if r == SlotsRow {
		return 8
	}
	return 8 * Series(r-1).Values()
}

// EntrySize is the size in bytes of one entry of row r.
func (r Row) EntrySize() int { return r.width() }

// ChunkSize is the size in bytes of a chunk of row r.
func (r Row) ChunkSize() int { return BitmapBytes + ChunkBuckets*r.width() }

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

func present(chunk []byte, b int) bool { return chunk[b>>3]&(1<<(b&7)) != 0 }

// entry is bucket b's entry in a chunk of width w.
func entry(chunk []byte, w, b int) []byte {
	off := BitmapBytes + b*w
	return chunk[off : off+w]
}

// Fold folds states into the chunks of one market starting at start: chunks[r] is row r's chunk,
// nil when the rollup has none yet (it is then made, when a state needs it). Every state must be of
// the market and within [start, start+ChunkSeconds). It reports whether any chunk changed; chunks it
// made or changed are in chunks.
func Fold(start int64, chunks map[Row][]byte, states []State) (changed bool, err error) {
	for r, c := range chunks {
		if c != nil && len(c) != r.ChunkSize() {
			return false, fmt.Errorf("amm: chunk of row %d at %d has %d bytes, want %d", r, start, len(c), r.ChunkSize())
		}
	}
	var vals []int64
	for i := range states {
		st := &states[i]
		if st.Ts < start || st.Ts >= start+ChunkSeconds {
			return false, fmt.Errorf("amm: state at %d folded into the chunk of %d", st.Ts, start)
		}
		b := int((st.Ts - start) / Resolution)
		slots := chunks[SlotsRow]
		if slots != nil && present(slots, b) && int64(binary.LittleEndian.Uint64(entry(slots, 8, b))) >= st.Slot {
			continue // the bucket holds this state or a later one
		}
		changed = true
		for _, r := range Rows {
			var v []int64
			if r == SlotsRow {
				v = append(vals[:0], st.Slot)
			} else {
				s := Series(r - 1)
				if s.PerpOnly() && !st.Perp {
					continue
				}
				v = st.values(s, vals[:0])
			}
			c := chunks[r]
			if c == nil {
				c = make([]byte, r.ChunkSize())
				chunks[r] = c
			}
			c[b>>3] |= 1 << (b & 7)
			e := entry(c, r.width(), b)
			for j, x := range v {
				binary.LittleEndian.PutUint64(e[8*j:], uint64(x))
			}
			vals = v
		}
	}
	return changed, nil
}

// Bucket is one bucket of a decoded chunk.
type Bucket struct {
	Start  int64   // the bucket's start, unix seconds
	Values []int64 // the row's values (the slot, for SlotsRow)
}

// Decode lists the present buckets of a chunk of row r starting at start, for tests and checks.
func Decode(r Row, start int64, chunk []byte) ([]Bucket, error) {
	if len(chunk) != r.ChunkSize() {
		return nil, fmt.Errorf("amm: chunk of row %d at %d has %d bytes, want %d", r, start, len(chunk), r.ChunkSize())
	}
	var out []Bucket
	w := r.width()
	for b := range ChunkBuckets {
		if !present(chunk, b) {
			continue
		}
		e := entry(chunk, w, b)
		v := make([]int64, w/8)
		for j := range v {
			v[j] = int64(binary.LittleEndian.Uint64(e[8*j:]))
		}
		out = append(out, Bucket{Start: start + int64(b)*Resolution, Values: v})
	}
	return out, nil
}

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
