// Package solana is what tidemark needs of Solana itself: public keys and their base58 text,
// program derived addresses (PDAs) found as the runtime finds them, address lookup tables, and
// transactions compiled, serialized, parsed and verified byte for byte as @solana/web3.js does.
package solana

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"

	"github.com/tidemark/tidemark/platform/chain/base58"
)

// PublicKeySize is the size of a public key (an ed25519 point or a PDA) in bytes.
const PublicKeySize = 32

// PublicKey is an account address: an ed25519 public key, or a PDA, which is off the curve so that
// no private key signs for it.
type PublicKey [PublicKeySize]byte

// ParsePublicKey parses the base58 text of a key, which must be exactly 32 bytes.
func ParsePublicKey(s string) (PublicKey, error) {
	b, err := base58.Decode(s)
	if err != nil {
		return PublicKey{}, fmt.Errorf("solana: parse public key %q: %w", s, err)
	}
	if len(b) != PublicKeySize {
		return PublicKey{}, fmt.Errorf("solana: parse public key %q: %d bytes, want %d", s, len(b), PublicKeySize)
	}
	return PublicKey(b), nil
}

// MustPublicKey parses a key known to be valid, such as a program id written in the source; it
// panics otherwise.
func MustPublicKey(s string) PublicKey {
	k, err := ParsePublicKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// String is the key's base58 text.
func (k PublicKey) String() string { return base58.Encode(k[:]) }

// IsZero reports whether k is the all-zero key, which the program writes for "no account".
func (k PublicKey) IsZero() bool { return k == PublicKey{} }

// MarshalText gives the key's base58 text.
func (k PublicKey) MarshalText() ([]byte, error) { return base58.Append(nil, k[:]), nil }

// UnmarshalText parses the key's base58 text.
func (k *PublicKey) UnmarshalText(b []byte) error {
	v, err := ParsePublicKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// The runtime's limits on PDA seeds (solana-program's MAX_SEEDS and MAX_SEED_LEN).
const (
	MaxSeeds   = 16
	MaxSeedLen = 32
)

// ErrOnCurve is returned by CreateProgramAddress when the hash is a point of the curve: such an
// address could have a private key, so the runtime refuses it.
var ErrOnCurve = errors.New("solana: address is on the ed25519 curve")

// CreateProgramAddress is the PDA of program for seeds, bump included: sha256(seeds || program ||
// "ProgramDerivedAddress"), refused when it is on the curve.
func CreateProgramAddress(seeds [][]byte, program PublicKey) (PublicKey, error) {
	if len(seeds) > MaxSeeds {
		return PublicKey{}, fmt.Errorf("solana: create program address: %d seeds, at most %d", len(seeds), MaxSeeds)
	}
	h := sha256.New()
	for i, s := range seeds {
		if len(s) > MaxSeedLen {
			return PublicKey{}, fmt.Errorf("solana: create program address: seed %d has %d bytes, at most %d", i, len(s), MaxSeedLen)
		}
		h.Write(s)
	}
	h.Write(program[:])
	h.Write([]byte("ProgramDerivedAddress"))
	var k PublicKey
	h.Sum(k[:0])
	if IsOnCurve(k) {
		return PublicKey{}, ErrOnCurve
	}
	return k, nil
}

// FindProgramAddress is the PDA of program for seeds with the highest bump (255 down to 0, appended
// as a last one-byte seed) that gives an address off the curve, as the runtime and the SDK's
// PublicKey.findProgramAddressSync find it.
func FindProgramAddress(seeds [][]byte, program PublicKey) (PublicKey, uint8, error) {
	if len(seeds) >= MaxSeeds {
		return PublicKey{}, 0, fmt.Errorf("solana: find program address: %d seeds leave no room for the bump", len(seeds))
	}
	withBump := append(seeds[:len(seeds):len(seeds)], nil)
	for bump := 255; bump >= 0; bump-- {
		withBump[len(seeds)] = []byte{byte(bump)}
		k, err := CreateProgramAddress(withBump, program)
		if err == nil {
			return k, uint8(bump), nil
		}
		if !errors.Is(err, ErrOnCurve) {
			return PublicKey{}, 0, fmt.Errorf("solana: find program address: %w", err)
		}
	}
	return PublicKey{}, 0, errors.New("solana: find program address: no bump gives an address off the curve")
}

// Curve25519 in Edwards form: p = 2^255 - 19 and d = -121665/121666 mod p.
const (
	fieldPrime = "57896044618658097711785492504343953926634992332820282019728792003956564819949"
	edwardsD   = "37095705934669439343138083508754565189542113879843219016388785533085940283555"
)

// IsOnCurve reports whether k decompresses to a point of the ed25519 curve, with the rules of
// curve25519-dalek's CompressedEdwardsY::decompress, which the runtime uses: the sign bit is
// ignored, y is taken modulo p even when not canonical, and the point exists when x^2 = (y^2 -
// 1) / (d y^2 + 1) has a root. PDAs are off the curve; about half of all 32-byte strings are on it.
func IsOnCurve(k PublicKey) bool {
	p, _ := new(big.Int).SetString(fieldPrime, 10)
	d, _ := new(big.Int).SetString(edwardsD, 10)

	// Little-endian y without the sign bit, as big.Int wants big-endian.
	var be [PublicKeySize]byte
	for i := range k {
		be[PublicKeySize-1-i] = k[i]
	}
	be[0] &= 0x7f
	y := new(big.Int).SetBytes(be[:])
	y.Mod(y, p)

	yy := new(big.Int).Mul(y, y)
	yy.Mod(yy, p)
	u := new(big.Int).Sub(yy, big.NewInt(1)) // y^2 - 1
	u.Mod(u, p)
	v := new(big.Int).Mul(d, yy) // d y^2 + 1
	v.Add(v, big.NewInt(1))
	v.Mod(v, p)

	if u.Sign() == 0 {
		return true // x = 0
	}
	if v.Sign() == 0 {
		return false // u/0 has no root
	}
	// u/v is a square exactly when u*v = (u/v) v^2 is one.
	uv := u.Mul(u, v)
	uv.Mod(uv, p)
	return big.Jacobi(uv, p) == 1
}
