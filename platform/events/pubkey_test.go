package events_test

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

func TestValidPublicKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"8qbHbw2BbbTHBW1sbeqakYXVKRQM8Ne7pLK7m6CVfeR", true},   // 43 characters
		{"4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T", true},  // 44
		{"11111111111111111111111111111111", true},              // the zero key
		{"So11111111111111111111111111111111111111112", true},   // wrapped SOL's mint
		{"4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB40", false}, // '0' is not base58
		{"4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4l", false}, // nor 'l'
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", false}, // 44 characters, more than 32 bytes
		{"1111111111111111111111111111111", false},              // 31 zero bytes
		{"2222222222222222222222222222222", false},              // too short
		{"", false},
		{strings.Repeat("A", 100), false},
		{"Acct0000000000000000000000000000000000000001", false},
	}
	for _, tt := range tests {
		if got := events.ValidPublicKey(tt.key); got != tt.want {
			t.Errorf("ValidPublicKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// base58Ref is the textbook big-integer encoding the codec must match.
func base58Ref(b []byte) string {
	const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	var out []byte
	n := new(big.Int).SetBytes(b)
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), mod)
		out = append([]byte{alphabet[mod.Int64()]}, out...)
	}
	for _, v := range b {
		if v != 0 {
			break
		}
		out = append([]byte{'1'}, out...)
	}
	return string(out)
}

// The codec round-trips keys and signatures of every shape, leading zero bytes included, and agrees
// with the textbook encoding.
func TestBase58RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 3000 {
		n := []int{32, 64, 1, 5}[i%4]
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		for j := 0; j < i%5 && j < n; j++ { // some leading zero bytes
			b[j] = 0
		}
		s := events.EncodeBase58(b)
		if want := base58Ref(b); s != want {
			t.Fatalf("EncodeBase58(%x) = %s, want %s", b, s, want)
		}
		got, ok := events.DecodeBase58(s, n)
		if !ok || !bytes.Equal(got, b) {
			t.Fatalf("DecodeBase58(%s, %d) = %x, %v; want %x", s, n, got, ok, b)
		}
		if _, ok := events.DecodeBase58(s, n+1); ok {
			t.Fatalf("DecodeBase58(%s, %d) accepted %d bytes", s, n+1, n)
		}
		if n == 32 {
			key, ok := events.PublicKey(s)
			if !ok || !bytes.Equal(key[:], b) {
				t.Fatalf("PublicKey(%s) = %x, %v; want %x", s, key, ok, b)
			}
		}
	}
}

func TestDecodeBase58Refuses(t *testing.T) {
	sig := events.EncodeBase58(bytes.Repeat([]byte{0xab}, 64))
	tests := []struct {
		name string
		s    string
		n    int
	}{
		{"empty", "", 64},
		{"outside the alphabet", sig[:40] + "0" + sig[41:], 64},
		{"one byte short", events.EncodeBase58(bytes.Repeat([]byte{0xab}, 63)), 64},
		{"one byte over", events.EncodeBase58(bytes.Repeat([]byte{0xab}, 65)), 64},
		{"far too long", strings.Repeat("z", 1000), 64},
		{"no length", "2", 0},
	}
	for _, tt := range tests {
		if b, ok := events.DecodeBase58(tt.s, tt.n); ok {
			t.Errorf("%s: DecodeBase58 accepted %q as %x", tt.name, tt.s, b)
		}
	}
}
