// Package borsh reads and writes Borsh, the binary layout of Solana programs' accounts, instruction
// arguments and Anchor events: little-endian integers up to 128 bits, bool and Option as one-byte tags,
// enums as a one-byte variant index, Vec and String as a u32 length then the items, fixed arrays as
// their items.
//
// Decoding is built for generated straight-line code: a Decoder keeps the first failure and its
// offset instead of returning an error from every read, so a generated decoder reads field after
// field and checks once where it matters (at a field boundary, at the end). Writing is a set of
// Append functions in the style of encoding/binary's AppendUvarint.
package borsh

import (
	"encoding/binary"
	"fmt"
)

// Error is the kind of a refusal; a Decoder's error wraps one of these, with the value read where
// there is one.
type Error string

func (e Error) Error() string { return string(e) }

// The ways a buffer can fail to be Borsh of the expected layout. Rust's borsh refuses the same
// things (and so does the Anchor TypeScript coder, which throws on a bool, option tag or enum index
// out of range).
const (
	ErrEnd      Error = "unexpected end of data"
	ErrBool     Error = "invalid bool"
	ErrOption   Error = "invalid option tag"
	ErrEnum     Error = "invalid enum index"
	ErrLength   Error = "length exceeds the remaining data"
	ErrTrailing Error = "trailing bytes"
)

// A Decoder reads Borsh values from a byte slice. The zero Decoder reads an empty slice.
//
// After the first failure every read returns a zero value and the failure is kept: check Err once
// after a group of reads. Done reports true from then on, so a loop over fields stops.
//
// The readers are small enough to be inlined: a failed read only sets lim to -1 (every later read
// then fails too and the offset stays where the failure was), and the error is made when asked for.
type Decoder struct {
	buf    []byte
	off    int
	lim    int   // len(buf), or -1 once a read failed
	kind   Error // an invalid tag or index at off, when lim is -1 and err nil
	err    error
	errOff int
}

// NewDecoder returns a Decoder reading b from offset off. Offsets in errors are offsets in b, so
// a caller that skipped a header (a discriminator) still reports positions in the whole buffer.
func NewDecoder(b []byte, off int) *Decoder {
	d := new(Decoder)
	d.Reset(b, off)
	return d
}

// Reset makes d read b from offset off, as NewDecoder does, without allocating a Decoder.
func (d *Decoder) Reset(b []byte, off int) {
	*d = Decoder{buf: b, off: off, lim: len(b)}
	if off < 0 || off > len(b) {
		d.off = len(b)
		d.Fail(ErrEnd, off)
	}
}

// Offset is where the next read starts, or where the first failure is.
func (d *Decoder) Offset() int { return d.off }

// Len is the number of bytes left, 0 after a failure.
func (d *Decoder) Len() int { return max(d.lim-d.off, 0) }

// Done reports whether nothing is left to read, because the data ended or a read failed.
func (d *Decoder) Done() bool { return d.off >= d.lim }

// Err is the first failure, nil if every read so far succeeded.
func (d *Decoder) Err() error {
	switch {
	case d.err != nil || d.lim >= 0:
		return d.err
	case d.kind != "":
		return fmt.Errorf("%w %d", d.kind, d.buf[d.off])
	}
	return ErrEnd
}

// ErrOffset is the offset of the first failure: where the value that failed starts.
func (d *Decoder) ErrOffset() int {
	if d.err == nil {
		return d.off
	}
	return d.errOff
}

// Fail records a failure at offset off, unless one is already recorded; the caller's own checks
// (a discriminator, trailing bytes) use it too.
func (d *Decoder) Fail(err error, off int) {
	if d.lim >= 0 {
		d.err = err
		d.errOff = off
	}
	d.lim = -1
}

// U8 reads a u8.
func (d *Decoder) U8() uint8 {
	if d.off >= d.lim {
		d.lim = -1
		return 0
	}
	v := d.buf[d.off]
	d.off++
	return v
}

// U16 reads a little-endian u16.
func (d *Decoder) U16() uint16 {
	if d.off+2 > d.lim {
		d.lim = -1
		return 0
	}
	v := binary.LittleEndian.Uint16(d.buf[d.off:])
	d.off += 2
	return v
}

// U32 reads a little-endian u32.
func (d *Decoder) U32() uint32 {
	if d.off+4 > d.lim {
		d.lim = -1
		return 0
	}
	v := binary.LittleEndian.Uint32(d.buf[d.off:])
	d.off += 4
	return v
}

// U64 reads a little-endian u64.
func (d *Decoder) U64() uint64 {
	if d.off+8 > d.lim {
		d.lim = -1
		return 0
	}
	v := binary.LittleEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return v
}

// U128 reads a little-endian u128.
func (d *Decoder) U128() Uint128 {
	if d.off+16 > d.lim {
		d.lim = -1
		return Uint128{}
	}
	b := d.buf[d.off:]
	d.off += 16
	return Uint128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}

// I8 reads an i8.
func (d *Decoder) I8() int8 { return int8(d.U8()) }

// I16 reads a little-endian i16.
func (d *Decoder) I16() int16 { return int16(d.U16()) }

// I32 reads a little-endian i32.
func (d *Decoder) I32() int32 { return int32(d.U32()) }

// I64 reads a little-endian i64.
func (d *Decoder) I64() int64 { return int64(d.U64()) }

// I128 reads a little-endian two's complement i128.
func (d *Decoder) I128() Int128 { return Int128(d.U128()) }

// Bool reads a bool: 0 or 1, anything else is a failure.
func (d *Decoder) Bool() bool {
	v := d.U8()
	if v > 1 {
		d.invalid(ErrBool)
	}
	return v == 1
}

// Option reads an Option's tag and reports whether a value follows.
func (d *Decoder) Option() bool {
	v := d.U8()
	if v > 1 {
		d.invalid(ErrOption)
	}
	return v == 1
}

// Enum reads the variant index of an enum of n variants.
func (d *Decoder) Enum(n int) uint8 {
	v := d.U8()
	if int(v) >= n {
		d.invalid(ErrEnum)
		return 0
	}
	return v
}

// invalid records a tag or index out of range in the byte just read. It only notes the kind and
// steps back onto the byte, which keeps Bool, Option and Enum small enough to inline; Err makes
// the error.
func (d *Decoder) invalid(kind Error) {
	d.off--
	d.kind = kind
	d.lim = -1
}

// Length reads the u32 length of a Vec or String whose items take at least min bytes each, and
// fails when they cannot fit in what is left, so that hostile input never makes a caller allocate
// more than the data could hold.
func (d *Decoder) Length(min int) int {
	off := d.off
	n := int(d.U32())
	if n > d.Len()/max(min, 1) {
		d.off = off
		d.Fail(fmt.Errorf("%w: %d items", ErrLength, n), off)
		return 0
	}
	return n
}

// Fill reads len(p) bytes into p: a fixed array of u8.
func (d *Decoder) Fill(p []byte) {
	if d.off+len(p) > d.lim {
		d.lim = -1
		return
	}
	d.off += copy(p, d.buf[d.off:])
}

// Bytes reads a Vec<u8> into a new slice.
func (d *Decoder) Bytes() []byte {
	n := d.Length(1)
	if n == 0 {
		return nil
	}
	p := make([]byte, n)
	d.Fill(p)
	return p
}

// Str reads a String. Its bytes are kept as they are: the program only writes UTF-8, and the
// TypeScript SDK does not refuse what is not.
func (d *Decoder) Str() string {
	n := d.Length(1)
	if n == 0 {
		return ""
	}
	s := string(d.buf[d.off : d.off+n])
	d.off += n
	return s
}
