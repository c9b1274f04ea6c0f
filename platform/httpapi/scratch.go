package httpapi

import (
	"context"
	"math/bits"
	"sync"
)

// Scratch returns an empty slice with capacity for at least n bytes, lent for the request ctx
// belongs to: once the API has written that request's response, the memory goes back to a pool and
// is handed to later requests. Use it for what only lives to build one response (a page's records
// read from the database, an answer's body), and never keep such a slice, or anything sliced from it,
// past the response: it would be overwritten under your feet.
//
// Pages of records are the bulk of what the read routes allocate (a page of fills, twice: once read,
// once written): allocating them afresh would give the garbage collector work in proportion to the
// traffic. Outside a request served by an API, and for sizes past the largest pooled
// one, Scratch simply allocates.
func Scratch(ctx context.Context, n int) []byte {
	st := stateFrom(ctx)
	if st == nil || n > maxScratch {
		return make([]byte, 0, n)
	}
	buf := st.pools.get(n)
	st.mu.Lock()
	st.lent = append(st.lent, buf)
	st.mu.Unlock()
	return (*buf)[:0]
}

// Scratch sizes: powers of two from 4 KB to 1 MB, a pool each, so that a request never gets a buffer
// too small for it and a big one is not spent on a small need.
const (
	minScratchBits = 12
	maxScratchBits = 20
	maxScratch     = 1 << maxScratchBits
)

// scratchPools holds an API's scratch buffers, a pool per size class.
type scratchPools [maxScratchBits - minScratchBits + 1]sync.Pool

// get returns a buffer of at least n bytes (n <= maxScratch).
func (p *scratchPools) get(n int) *[]byte {
	class := scratchClass(n)
	if b, ok := p[class].Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 1<<(minScratchBits+class))
	return &b
}

func (p *scratchPools) put(b *[]byte) { p[scratchClass(cap(*b))].Put(b) }

// scratchClass is the index of the smallest pool whose buffers hold n bytes (n <= maxScratch).
func scratchClass(n int) int {
	if n <= 1<<minScratchBits {
		return 0
	}
	return bits.Len(uint(n-1)) - minScratchBits
}

// releaseScratch returns what the request borrowed. The response is written by then: net/http copies
// what it buffers, and an io.Writer may not keep the slices it is given.
func (st *reqState) releaseScratch() {
	st.mu.Lock()
	lent := st.lent
	st.lent = nil
	st.mu.Unlock()
	for _, buf := range lent {
		st.pools.put(buf)
	}
}
