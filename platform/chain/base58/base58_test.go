package base58_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/base58"
)

func TestRoundTrip(t *testing.T) {
	// Vectors from the Bitcoin Core base58 tests and Solana's well-known keys.
	cases := []struct {
		hex, text string
	}{
		{"", ""},
		{"61", "2g"},
		{"626262", "a3gV"},
		{"636363", "aPEr"},
		{"73696d706c792061206c6f6e6720737472696e67", "2cFupjhnEsSn59qHXstmK2ffpLv2"},
		{"00eb15231dfceb60925886b67d065299925915aeb172c06647", "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"},
		{"516b6fcd0f", "ABnLTmg"},
		{"bf4f89001e670274dd", "3SEo3LWLoPntC"},
		{"572e4794", "3EFU7m"},
		{"ecac89cad93923c02321", "EJDM8drfXA6uyA"},
		{"10c8511e", "Rt5zm"},
		{"00000000000000000000", "1111111111"},
		{"0000000000000000000000000000000000000000000000000000000000000000", "11111111111111111111111111111111"},
	}
	for _, c := range cases {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := base58.Encode(b); got != c.text {
			t.Errorf("Encode(%s) = %q, want %q", c.hex, got, c.text)
		}
		got, err := base58.Decode(c.text)
		if err != nil {
			t.Errorf("Decode(%q): %v", c.text, err)
			continue
		}
		if !bytes.Equal(got, b) {
			t.Errorf("Decode(%q) = %x, want %s", c.text, got, c.hex)
		}
	}
}

func TestKeys(t *testing.T) {
	// Real keys: 32 bytes each, and back to the same text.
	for _, s := range []string{
		"dRiftyHA39MWEi3m9aunc5MzRF1JYuBsbn6VPcn33UH",
		"11111111111111111111111111111111",
		"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
	} {
		b, err := base58.Decode(s)
		if err != nil {
			t.Fatalf("Decode(%q): %v", s, err)
		}
		if len(b) != 32 {
			t.Errorf("Decode(%q) has %d bytes, want 32", s, len(b))
		}
		if got := base58.Encode(b); got != s {
			t.Errorf("Encode(Decode(%q)) = %q", s, got)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, s := range []string{"0", "O", "I", "l", "abc!", "1 1", "é"} {
		if _, err := base58.Decode(s); err == nil {
			t.Errorf("Decode(%q) succeeded, want an error", s)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 1})
	f.Add(bytes.Repeat([]byte{0xff}, 32))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := base58.Decode(base58.Encode(b))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("round trip of %x gave %x", b, got)
		}
	})
}
