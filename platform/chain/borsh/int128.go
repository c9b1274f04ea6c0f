package borsh

import (
	"fmt"
	"math/bits"
)

// Uint128 is an unsigned 128-bit integer, the program's u128 (balances, reserves, cumulative
// interest), as its two 64-bit halves.
type Uint128 struct{ Lo, Hi uint64 }

// Int128 is a signed 128-bit integer, the program's i128, as the two halves of its two's
// complement.
type Int128 struct{ Lo, Hi uint64 }

// U128 returns v as a Uint128.
func U128(v uint64) Uint128 { return Uint128{Lo: v} }

// I128 returns v as an Int128.
func I128(v int64) Int128 { return Int128{Lo: uint64(v), Hi: uint64(v >> 63)} }

// IsZero reports whether u is 0.
func (u Uint128) IsZero() bool { return u.Lo == 0 && u.Hi == 0 }

// Uint64 returns u's value and whether it fits in 64 bits.
func (u Uint128) Uint64() (uint64, bool) { return u.Lo, u.Hi == 0 }

// String is u in decimal.
func (u Uint128) String() string { return string(u.appendDecimal(nil)) }

// MarshalText gives u in decimal, the convention for amounts in tidemark's records.
func (u Uint128) MarshalText() ([]byte, error) { return u.appendDecimal(nil), nil }

// UnmarshalText parses a decimal u128.
func (u *Uint128) UnmarshalText(b []byte) error {
	v, err := ParseUint128(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// tenPow19 is the largest power of ten below 2^64: a 128-bit value is printed as at most three
// groups of 19 digits, each found with one 128-by-64 division.
const tenPow19 = 10_000_000_000_000_000_000

func (u Uint128) appendDecimal(b []byte) []byte {
	if u.Hi == 0 {
		return fmt.Appendf(b, "%d", u.Lo)
	}
	var groups [3]uint64
	n := 0
	for u.Hi != 0 {
		q, r := u.divmod(tenPow19)
		groups[n] = r
		n++
		u = q
	}
	b = fmt.Appendf(b, "%d", u.Lo)
	for i := n - 1; i >= 0; i-- {
		b = fmt.Appendf(b, "%019d", groups[i])
	}
	return b
}

// divmod divides u by a 64-bit divisor.
func (u Uint128) divmod(d uint64) (Uint128, uint64) {
	hq, hr := bits.Div64(0, u.Hi, d)
	lq, r := bits.Div64(hr, u.Lo, d)
	return Uint128{Lo: lq, Hi: hq}, r
}

// ParseUint128 parses a decimal u128.
func ParseUint128(s string) (Uint128, error) {
	if s == "" {
		return Uint128{}, fmt.Errorf("borsh: parse u128 %q: empty", s)
	}
	var u Uint128
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return Uint128{}, fmt.Errorf("borsh: parse u128 %q: invalid digit at %d", s, i)
		}
		hHi, hLo := bits.Mul64(u.Hi, 10)
		lHi, lLo := bits.Mul64(u.Lo, 10)
		hi, carry := bits.Add64(hLo, lHi, 0)
		lo, c2 := bits.Add64(lLo, uint64(c-'0'), 0)
		hi, carry2 := bits.Add64(hi, 0, c2)
		if hHi != 0 || carry != 0 || carry2 != 0 {
			return Uint128{}, fmt.Errorf("borsh: parse u128 %q: out of range", s)
		}
		u = Uint128{Lo: lo, Hi: hi}
	}
	return u, nil
}

// Negative reports whether i is below 0.
func (i Int128) Negative() bool { return int64(i.Hi) < 0 }

// IsZero reports whether i is 0.
func (i Int128) IsZero() bool { return i.Lo == 0 && i.Hi == 0 }

// Int64 returns i's value and whether it fits in 64 bits.
func (i Int128) Int64() (int64, bool) {
	v := int64(i.Lo)
	return v, i.Hi == uint64(v>>63)
}

// Neg returns -i, wrapping at the minimum as the program's arithmetic would not: callers meet it
// only for values read from data.
func (i Int128) Neg() Int128 {
	lo, borrow := bits.Sub64(0, i.Lo, 0)
	hi, _ := bits.Sub64(0, i.Hi, borrow)
	return Int128{Lo: lo, Hi: hi}
}

// abs is |i| as unsigned, exact for the minimum too.
func (i Int128) abs() Uint128 {
	if i.Negative() {
		return Uint128(i.Neg())
	}
	return Uint128(i)
}

// String is i in decimal.
func (i Int128) String() string { return string(i.appendDecimal(nil)) }

// MarshalText gives i in decimal.
func (i Int128) MarshalText() ([]byte, error) { return i.appendDecimal(nil), nil }

// UnmarshalText parses a decimal i128.
func (i *Int128) UnmarshalText(b []byte) error {
	v, err := ParseInt128(string(b))
	if err != nil {
		return err
	}
	*i = v
	return nil
}

func (i Int128) appendDecimal(b []byte) []byte {
	if i.Negative() {
		b = append(b, '-')
	}
	return i.abs().appendDecimal(b)
}

// ParseInt128 parses a decimal i128, with an optional leading '-'.
func ParseInt128(s string) (Int128, error) {
	neg := len(s) > 0 && s[0] == '-'
	digits := s
	if neg {
		digits = s[1:]
	}
	u, err := ParseUint128(digits)
	if err != nil {
		return Int128{}, fmt.Errorf("borsh: parse i128 %q: %w", s, err)
	}
	// The magnitude may reach 2^127 only for a negative value.
	if u.Hi > 1<<63 || (u.Hi == 1<<63 && (u.Lo != 0 || !neg)) {
		return Int128{}, fmt.Errorf("borsh: parse i128 %q: out of range", s)
	}
	if neg {
		return Int128(u).Neg(), nil
	}
	return Int128(u), nil
}
