package sim

import (
	"math/big"
	"strings"
	"testing"
)

// base58Ref is the textbook big-integer encoding the fast one must match.
func base58Ref(b []byte) string {
	n := new(big.Int).SetBytes(b)
	var out []byte
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), mod)
		out = append([]byte{b58[mod.Int64()]}, out...)
	}
	return string(out)
}

func TestBase58MatchesReference(t *testing.T) {
	rng := newRand(1, 99, 0)
	for i := range 2000 {
		b := make([]byte, []int{32, 64, 5, 1}[i%4])
		fill(rng, b)
		b[0] |= 1
		if got, want := base58(b), base58Ref(b); got != want {
			t.Fatalf("base58(%x) = %s, want %s", b, got, want)
		}
	}
	for range 500 {
		if s := signature(rng); len(s) != 88 {
			t.Fatalf("signature %s has %d characters", s, len(s))
		}
		if k := pubkey(rng); len(k) != 44 {
			t.Fatalf("pubkey %s has %d characters", k, len(k))
		}
	}
}

func TestSignaturesDecodeTo64Bytes(t *testing.T) {
	rng := newRand(1, 98, 0)
	low := new(big.Int).Lsh(big.NewInt(1), 510)
	high := new(big.Int).Lsh(big.NewInt(1), 512)
	seen := map[string]bool{}
	for range 2000 {
		s := signature(rng)
		n := new(big.Int)
		for i := range len(s) {
			d := strings.IndexByte(b58, s[i])
			if d < 0 {
				t.Fatalf("signature %s: %q is not a base58 digit", s, s[i])
			}
			n.Mul(n, big.NewInt(58)).Add(n, big.NewInt(int64(d)))
		}
		if len(s) != 88 || n.Cmp(low) < 0 || n.Cmp(high) >= 0 || seen[s] {
			t.Fatalf("signature %s: %d characters, outside [2^510, 2^512) or repeated", s, len(s))
		}
		if base58(n.FillBytes(make([]byte, 64))) != s {
			t.Fatalf("signature %s does not round-trip through 64 bytes", s)
		}
		seen[s] = true
	}
}
