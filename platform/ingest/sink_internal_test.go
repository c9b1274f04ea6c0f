package ingest

import (
	"bytes"
	"testing"
)

// TestHasSpace checks the word-at-a-time scan against the byte test at every position and
// alignment, next to every kind of byte around the boundary.
func TestHasSpace(t *testing.T) {
	for _, c := range []byte{0, '\t', '\n', '\r', ' ', '!', '"', 0x7f, 0x80, 0xa0, 0xff} {
		for n := 0; n <= 20; n++ {
			for at := 0; at < n; at++ {
				b := bytes.Repeat([]byte{'a'}, n)
				b[at] = c
				if got, want := hasSpace(b), c <= ' '; got != want {
					t.Fatalf("hasSpace(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
	// Bytes that are not whitespace but sit right above it, or have the top bit set, in every lane.
	if hasSpace([]byte(`{"a":"!!!!!!!!\x80\xff\xa1\x21~~"}`)) {
		t.Fatal("no whitespace, found some")
	}
}

func BenchmarkHasSpace(b *testing.B) {
	v := bytes.Repeat([]byte(`{"ts":1790000000,"txSig":"5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"}`), 14)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if hasSpace(v) {
			b.Fatal("space")
		}
	}
}
