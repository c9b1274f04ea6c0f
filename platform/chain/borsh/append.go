package borsh

import "encoding/binary"

// AppendU8 appends a u8.
func AppendU8(b []byte, v uint8) []byte { return append(b, v) }

// AppendU16 appends a little-endian u16.
func AppendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }

// AppendU32 appends a little-endian u32.
func AppendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

// AppendU64 appends a little-endian u64.
func AppendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// AppendU128 appends a little-endian u128.
func AppendU128(b []byte, v Uint128) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(b, v.Lo), v.Hi)
}

// AppendI8 appends an i8.
func AppendI8(b []byte, v int8) []byte { return append(b, uint8(v)) }

// AppendI16 appends a little-endian i16.
func AppendI16(b []byte, v int16) []byte { return AppendU16(b, uint16(v)) }

// AppendI32 appends a little-endian i32.
func AppendI32(b []byte, v int32) []byte { return AppendU32(b, uint32(v)) }

// AppendI64 appends a little-endian i64.
func AppendI64(b []byte, v int64) []byte { return AppendU64(b, uint64(v)) }

// AppendI128 appends a little-endian two's complement i128.
func AppendI128(b []byte, v Int128) []byte { return AppendU128(b, Uint128(v)) }

// AppendBool appends a bool as 0 or 1.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendOption appends an Option's tag; the caller appends the value after it when some is true.
func AppendOption(b []byte, some bool) []byte { return AppendBool(b, some) }

// AppendLength appends the u32 length of a Vec or String.
func AppendLength(b []byte, n int) []byte { return AppendU32(b, uint32(n)) }

// AppendBytes appends a Vec<u8>.
func AppendBytes(b, v []byte) []byte { return append(AppendLength(b, len(v)), v...) }

// AppendStr appends a String.
func AppendStr(b []byte, s string) []byte { return append(AppendLength(b, len(s)), s...) }
