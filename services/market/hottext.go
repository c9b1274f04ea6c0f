package market

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
)

// Writing a candle's digits costs several times copying its bytes, and charts read the same recent
// buckets over and over in windows that differ by a bucket or two. So a series keeps the JSON of its
// traded candles once written, by chunks of textChunkBuckets buckets' time, made when first read and
// dropped when anything they were made from changes. An empty (carried) bucket is not kept: it is
// the carried closes, which appendWindow copies from the previous empty bucket of the answer.

// textChunkBuckets is the width of a chunk in buckets: a change makes at most this many candles be
// written again, and a 1000-candle answer takes its text from a handful of chunks.
const textChunkBuckets = 128

// DefaultTextBudget bounds the bytes of candle JSON a Hot keeps across all its series (about the
// JSON of 250,000 candles): past it, all of it is dropped and made again as it is read.
const DefaultTextBudget = 64 << 20

// candleText is a series' chunks of candle JSON. Its chunks are immutable once made: a reader keeps
// using one it got while a writer drops it from the map.
type candleText struct {
	span int64 // the chunk width in seconds; chunk k holds the candles of [k*span, (k+1)*span)
	size *atomic.Int64

	mu      sync.Mutex
	chunks  map[int64]*textChunk
	retired bool // its series was replaced: what a reader still makes is not kept
}

// textChunk is the JSON of the traded buckets of one chunk's time, in ascending order: candle n is
// text[offs[n]:offs[n+1]].
type textChunk struct {
	text []byte
	offs []uint32
}

func (c *textChunk) bytes() int64 { return int64(cap(c.text) + 4*cap(c.offs)) }

func newCandleText(res Resolution, size *atomic.Int64) *candleText {
	return &candleText{span: res.Step(0, textChunkBuckets), size: size, chunks: map[int64]*textChunk{}}
}

func (t *candleText) chunkOf(ts int64) int64 { return floorDiv(ts, t.span) }

// get returns chunk k of s, made from s's columns if it is not kept. The caller holds s.mu, for
// reading at least.
func (t *candleText) get(s *hotSeries, k int64) *textChunk {
	t.mu.Lock()
	c := t.chunks[k]
	t.mu.Unlock()
	if c != nil {
		return c
	}
	lo, hi := s.indexOf(k*t.span), s.indexOf((k+1)*t.span)
	c = &textChunk{offs: make([]uint32, 1, hi-lo+1)}
	for i := lo; i < hi; i++ {
		c.text = s.appendCandle(c.text, i)
		c.offs = append(c.offs, uint32(len(c.text)))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Readers making the same chunk at once make the same bytes: the first one kept is used.
	if kept := t.chunks[k]; kept != nil {
		return kept
	}
	if t.retired {
		return c
	}
	t.chunks[k] = c
	t.size.Add(c.bytes())
	return c
}

// drop forgets chunks first to last, inclusive.
func (t *candleText) drop(first, last int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, c := range t.chunks {
		if k >= first && k <= last {
			delete(t.chunks, k)
			t.size.Add(-c.bytes())
		}
	}
}

// dropAll forgets every chunk.
func (t *candleText) dropAll() { t.drop(math.MinInt64, math.MaxInt64) }

// retire forgets every chunk and keeps no more, for a series no longer held.
func (t *candleText) retire() {
	t.mu.Lock()
	t.retired = true
	t.mu.Unlock()
	t.dropAll()
}

// indexOf is the index of the first bucket at or after ts.
func (s *hotSeries) indexOf(ts int64) int {
	return sort.Search(len(s.ts), func(i int) bool { return s.ts[i] >= ts })
}

// textCursor reads the candles of a series' traded buckets from its chunks during one answer, moving
// from chunk to chunk as the answer does.
type textCursor struct {
	s     *hotSeries
	k     int64
	chunk *textChunk
	first int // the index of the chunk's first bucket
}

// candle is the JSON of bucket i.
func (c *textCursor) candle(i int) []byte {
	t := c.s.text
	if k := t.chunkOf(c.s.ts[i]); c.chunk == nil || k != c.k {
		c.k, c.chunk, c.first = k, t.get(c.s, k), c.s.indexOf(k*t.span)
	}
	n := i - c.first
	return c.chunk.text[c.chunk.offs[n]:c.chunk.offs[n+1]]
}
