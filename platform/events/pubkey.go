package events

// base58Alphabet is the alphabet of Solana keys and signatures (Bitcoin's).
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Digits maps a byte to its value in the base58 alphabet, -1 for a byte outside it.
var base58Digits = func() [256]int8 {
	var d [256]int8
	for i := range d {
		d[i] = -1
	}
	for i := range len(base58Alphabet) {
		d[base58Alphabet[i]] = int8(i)
	}
	return d
}()

// ValidPublicKey reports whether s is a public key (an account or a wallet): the base58 text of 32
// bytes. It decodes s exactly, so a string of the right length that encodes 31 or 33 bytes is refused.
func ValidPublicKey(s string) bool {
	_, ok := PublicKey(s)
	return ok
}

// PublicKey decodes s, the base58 text of a public key, into its 32 bytes; ok is false when s is not
// exactly that.
func PublicKey(s string) (key [32]byte, ok bool) {
	if len(s) < 32 || len(s) > 44 {
		return key, false
	}
	var out [33]byte
	if !decodeBase58(s, out[:]) {
		return key, false
	}
	copy(key[:], out[1:])
	return key, true
}

// DecodeBase58 decodes s into exactly n bytes (leading '1's are leading zero bytes, as in Solana's
// keys and signatures); ok is false when s holds a character outside the alphabet or encodes a
// number of bytes other than n.
func DecodeBase58(s string, n int) (b []byte, ok bool) {
	// n bytes take at most n*138/100+1 characters, and each character at least one.
	if n <= 0 || len(s) < 1 || len(s) > n*138/100+1 {
		return nil, false
	}
	out := make([]byte, n+1)
	if !decodeBase58(s, out) {
		return nil, false
	}
	return out[1:], true
}

// decodeBase58 decodes s into out as a big-endian number of len(out)-1 bytes; the extra first byte
// catches an overflow. It reports whether s is valid and encodes exactly len(out)-1 bytes.
func decodeBase58(s string, out []byte) bool {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := range len(s) {
		carry := int(base58Digits[s[i]])
		if carry < 0 {
			return false
		}
		for j := len(out) - 1; j >= 0; j-- {
			carry += int(out[j]) * 58
			out[j] = byte(carry)
			carry >>= 8
		}
		if carry != 0 {
			return false
		}
	}
	// Leading '1's are leading zero bytes; the rest of the value must take the remaining bytes.
	n := len(out)
	for n > 0 && out[len(out)-n] == 0 {
		n--
	}
	return out[0] == 0 && zeros+n == len(out)-1
}

// EncodeBase58 is the base58 text of b: a '1' for each leading zero byte, then the digits of the rest
// as a big-endian number. DecodeBase58(EncodeBase58(b), len(b)) gives b back.
func EncodeBase58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	// Digits of the value, least significant first.
	digits := make([]byte, 0, len(b)*138/100+1)
	for _, v := range b[zeros:] {
		carry := int(v)
		for i := range digits {
			carry += int(digits[i]) << 8
			digits[i] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits = append(digits, byte(carry%58))
			carry /= 58
		}
	}
	out := make([]byte, zeros+len(digits))
	for i := range zeros {
		out[i] = '1'
	}
	for i, d := range digits {
		out[len(out)-1-i] = base58Alphabet[d]
	}
	return string(out)
}
