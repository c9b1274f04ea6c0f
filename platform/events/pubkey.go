package events

// base58Digits maps a byte to its value in the base58 alphabet of Solana keys and signatures, -1 for
// a byte outside it.
var base58Digits = func() [256]int8 {
	const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	var d [256]int8
	for i := range d {
		d[i] = -1
	}
	for i := range len(alphabet) {
		d[alphabet[i]] = int8(i)
	}
	return d
}()

// ValidPublicKey reports whether s is a public key (an account or a wallet): the base58 text of 32
// bytes. It decodes s exactly, so a string of the right length that encodes 31 or 33 bytes is refused.
func ValidPublicKey(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	// Big-endian base-256 digits of the value, least significant last; 33 bytes catch an overflow.
	var out [33]byte
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
	return out[0] == 0 && zeros+n == 32
}
