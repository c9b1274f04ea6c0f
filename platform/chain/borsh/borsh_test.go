package borsh_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/borsh"
)

func TestReadWrite(t *testing.T) {
	// Each case writes with the Append functions, reads back with the Decoder, and checks both the
	// bytes (little-endian, one-byte tags, u32 lengths) and the value.
	cases := []struct {
		name  string
		bytes []byte
		write func([]byte) []byte
		read  func(*borsh.Decoder) any
		want  any
	}{
		{"u8", []byte{0xfe}, func(b []byte) []byte { return borsh.AppendU8(b, 0xfe) }, func(d *borsh.Decoder) any { return d.U8() }, uint8(0xfe)},
		{"u16", []byte{0x34, 0x12}, func(b []byte) []byte { return borsh.AppendU16(b, 0x1234) }, func(d *borsh.Decoder) any { return d.U16() }, uint16(0x1234)},
		{"u32", []byte{4, 3, 2, 1}, func(b []byte) []byte { return borsh.AppendU32(b, 0x01020304) }, func(d *borsh.Decoder) any { return d.U32() }, uint32(0x01020304)},
		{"u64", []byte{8, 7, 6, 5, 4, 3, 2, 1}, func(b []byte) []byte { return borsh.AppendU64(b, 0x0102030405060708) }, func(d *borsh.Decoder) any { return d.U64() }, uint64(0x0102030405060708)},
		{"i8", []byte{0xff}, func(b []byte) []byte { return borsh.AppendI8(b, -1) }, func(d *borsh.Decoder) any { return d.I8() }, int8(-1)},
		{"i16", []byte{0xfe, 0xff}, func(b []byte) []byte { return borsh.AppendI16(b, -2) }, func(d *borsh.Decoder) any { return d.I16() }, int16(-2)},
		{"i32", []byte{0xfd, 0xff, 0xff, 0xff}, func(b []byte) []byte { return borsh.AppendI32(b, -3) }, func(d *borsh.Decoder) any { return d.I32() }, int32(-3)},
		{"i64", bytes.Repeat([]byte{0xff}, 8), func(b []byte) []byte { return borsh.AppendI64(b, -1) }, func(d *borsh.Decoder) any { return d.I64() }, int64(-1)},
		{"u128", append([]byte{1}, append(make([]byte, 7), 2, 0, 0, 0, 0, 0, 0, 0)...), func(b []byte) []byte { return borsh.AppendU128(b, borsh.Uint128{Lo: 1, Hi: 2}) }, func(d *borsh.Decoder) any { return d.U128() }, borsh.Uint128{Lo: 1, Hi: 2}},
		{"i128", bytes.Repeat([]byte{0xff}, 16), func(b []byte) []byte { return borsh.AppendI128(b, borsh.I128(-1)) }, func(d *borsh.Decoder) any { return d.I128() }, borsh.I128(-1)},
		{"bool", []byte{1}, func(b []byte) []byte { return borsh.AppendBool(b, true) }, func(d *borsh.Decoder) any { return d.Bool() }, true},
		{"none", []byte{0}, func(b []byte) []byte { return borsh.AppendOption(b, false) }, func(d *borsh.Decoder) any { return d.Option() }, false},
		{"enum", []byte{2}, func(b []byte) []byte { return borsh.AppendU8(b, 2) }, func(d *borsh.Decoder) any { return d.Enum(3) }, uint8(2)},
		{"string", []byte{2, 0, 0, 0, 'h', 'i'}, func(b []byte) []byte { return borsh.AppendStr(b, "hi") }, func(d *borsh.Decoder) any { return d.Str() }, "hi"},
		{"bytes", []byte{1, 0, 0, 0, 9}, func(b []byte) []byte { return borsh.AppendBytes(b, []byte{9}) }, func(d *borsh.Decoder) any { return string(d.Bytes()) }, "\x09"},
		{"array", []byte{1, 2, 3}, func(b []byte) []byte { return append(b, 1, 2, 3) }, func(d *borsh.Decoder) any { var a [3]byte; d.Fill(a[:]); return a }, [3]byte{1, 2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.write(nil); !bytes.Equal(got, c.bytes) {
				t.Errorf("wrote %x, want %x", got, c.bytes)
			}
			d := borsh.NewDecoder(c.bytes, 0)
			got := c.read(d)
			if err := d.Err(); err != nil {
				t.Fatalf("read: %v", err)
			}
			if got != c.want {
				t.Errorf("read %v, want %v", got, c.want)
			}
			if !d.Done() || d.Len() != 0 {
				t.Errorf("%d bytes left", d.Len())
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	cases := []struct {
		name    string
		data    []byte
		read    func(*borsh.Decoder)
		wantErr error
		wantOff int
	}{
		{"short u64", []byte{1, 2, 3}, func(d *borsh.Decoder) { d.U64() }, borsh.ErrEnd, 0},
		{"short after a u8", []byte{1, 2}, func(d *borsh.Decoder) { d.U8(); d.U32() }, borsh.ErrEnd, 1},
		{"first failure kept", []byte{1}, func(d *borsh.Decoder) { d.U16(); d.U8() }, borsh.ErrEnd, 0},
		{"bool 2", []byte{0, 2}, func(d *borsh.Decoder) { d.U8(); d.Bool() }, borsh.ErrBool, 1},
		{"option tag 7", []byte{7, 0}, func(d *borsh.Decoder) { d.Option() }, borsh.ErrOption, 0},
		{"enum out of range", []byte{0, 0, 5}, func(d *borsh.Decoder) { d.U16(); d.Enum(5) }, borsh.ErrEnum, 2},
		{"vec longer than the data", []byte{0xff, 0xff, 0xff, 0xff, 1}, func(d *borsh.Decoder) { d.Length(4) }, borsh.ErrLength, 0},
		{"vec of u32 cut", []byte{2, 0, 0, 0, 1, 0, 0, 0}, func(d *borsh.Decoder) { d.Length(4) }, borsh.ErrLength, 0},
		{"string cut", []byte{3, 0, 0, 0, 'a'}, func(d *borsh.Decoder) { d.Str() }, borsh.ErrLength, 0},
		{"array cut", []byte{1, 2}, func(d *borsh.Decoder) { var a [3]byte; d.Fill(a[:]) }, borsh.ErrEnd, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := borsh.NewDecoder(c.data, 0)
			c.read(d)
			if !errors.Is(d.Err(), c.wantErr) {
				t.Fatalf("err = %v, want %v", d.Err(), c.wantErr)
			}
			if d.ErrOffset() != c.wantOff {
				t.Errorf("offset = %d, want %d", d.ErrOffset(), c.wantOff)
			}
			if !d.Done() {
				t.Error("Done is false after a failure")
			}
			if d.U64() != 0 || d.Err() == nil {
				t.Error("a read after a failure succeeded")
			}
		})
	}
}

func TestNewDecoderOffset(t *testing.T) {
	d := borsh.NewDecoder([]byte{1, 2, 3}, 4)
	if !errors.Is(d.Err(), borsh.ErrEnd) || d.ErrOffset() != 4 {
		t.Errorf("err %v at %d, want the end at 4", d.Err(), d.ErrOffset())
	}
}

func TestInt128Text(t *testing.T) {
	cases := []struct {
		text string
		u    *borsh.Uint128
		i    *borsh.Int128
	}{
		{"0", &borsh.Uint128{}, &borsh.Int128{}},
		{"18446744073709551615", &borsh.Uint128{Lo: ^uint64(0)}, &borsh.Int128{Lo: ^uint64(0)}},
		{"18446744073709551616", &borsh.Uint128{Hi: 1}, &borsh.Int128{Hi: 1}},
		{"340282366920938463463374607431768211455", &borsh.Uint128{Lo: ^uint64(0), Hi: ^uint64(0)}, nil},
		{"170141183460469231731687303715884105727", &borsh.Uint128{Lo: ^uint64(0), Hi: 1<<63 - 1}, &borsh.Int128{Lo: ^uint64(0), Hi: 1<<63 - 1}},
		{"-1", nil, &borsh.Int128{Lo: ^uint64(0), Hi: ^uint64(0)}},
		{"-245777000000000", nil, ptr(borsh.I128(-245777000000000))},
		{"-170141183460469231731687303715884105728", nil, &borsh.Int128{Hi: 1 << 63}},
		{"100000000000000000000000000000000000000", &borsh.Uint128{Lo: 687399551400673280, Hi: 5421010862427522170}, &borsh.Int128{Lo: 687399551400673280, Hi: 5421010862427522170}},
	}
	for _, c := range cases {
		if c.u != nil {
			if got := c.u.String(); got != c.text {
				t.Errorf("Uint128%v.String() = %s, want %s", *c.u, got, c.text)
			}
			if got, err := borsh.ParseUint128(c.text); err != nil || got != *c.u {
				t.Errorf("ParseUint128(%s) = %v, %v, want %v", c.text, got, err, *c.u)
			}
		} else if _, err := borsh.ParseUint128(c.text); err == nil {
			t.Errorf("ParseUint128(%s) succeeded, want an error", c.text)
		}
		if c.i != nil {
			if got := c.i.String(); got != c.text {
				t.Errorf("Int128%v.String() = %s, want %s", *c.i, got, c.text)
			}
			if got, err := borsh.ParseInt128(c.text); err != nil || got != *c.i {
				t.Errorf("ParseInt128(%s) = %v, %v, want %v", c.text, got, err, *c.i)
			}
		} else if _, err := borsh.ParseInt128(c.text); err == nil {
			t.Errorf("ParseInt128(%s) succeeded, want an error", c.text)
		}
	}
	for _, bad := range []string{"", "-", "1x", "+1", "340282366920938463463374607431768211456", "170141183460469231731687303715884105728"} {
		if _, err := borsh.ParseInt128(bad); err == nil {
			t.Errorf("ParseInt128(%q) succeeded, want an error", bad)
		}
	}
}

func ptr[T any](v T) *T { return &v }
