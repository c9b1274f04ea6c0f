// Package base58 is the Bitcoin alphabet's base58, the text form of Solana keys and signatures.
//
// Leading zero bytes become leading '1's and back, so a 32-byte key with leading zeros keeps its
// length through a round trip, as the Solana tools expect.
package base58

import (
	"fmt"
)

const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// invalid marks the bytes of the decode table that are not in the alphabet.
const invalid = 0xff

// decodeTable maps an ASCII byte to its digit, or invalid. Built by a constant expression so that
// the package has no init-time state.
var decodeTable = func() (t [256]byte) {
	for i := range t {
		t[i] = invalid
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// Encode returns the base58 text of b.
func Encode(b []byte) string {
	return string(Append(nil, b))
}

// Append appends the base58 text of b to dst.
func Append(dst, b []byte) []byte {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	// log(256)/log(58) < 1.37: the digits of the rest fit in this many bytes.
	size := (len(b)-zeros)*137/100 + 1
	digits := make([]byte, size)
	high := size - 1
	for _, c := range b[zeros:] {
		carry := int(c)
		j := size - 1
		for ; j > high || carry != 0; j-- {
			carry += 256 * int(digits[j])
			digits[j] = byte(carry % 58)
			carry /= 58
		}
		high = j
	}
	start := 0
	for start < size && digits[start] == 0 {
		start++
	}
	for range zeros {
		dst = append(dst, '1')
	}
	for _, d := range digits[start:] {
		dst = append(dst, alphabet[d])
	}
	return dst
}

// Decode returns the bytes of the base58 text s.
func Decode(s string) ([]byte, error) {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	// log(58)/log(256) < 0.733: the bytes of the rest fit in this many.
	size := (len(s)-zeros)*733/1000 + 1
	out := make([]byte, size)
	high := size - 1
	for i := zeros; i < len(s); i++ {
		d := decodeTable[s[i]]
		if d == invalid {
			return nil, fmt.Errorf("base58: invalid character %q at offset %d", s[i], i)
		}
		carry := int(d)
		j := size - 1
		for ; j > high || carry != 0; j-- {
			carry += 58 * int(out[j])
			out[j] = byte(carry)
			carry >>= 8
		}
		high = j
	}
	start := 0
	for start < size && out[start] == 0 {
		start++
	}
	res := make([]byte, zeros+size-start)
	copy(res[zeros:], out[start:])
	return res, nil
}
