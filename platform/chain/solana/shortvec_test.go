package solana

import (
	"bytes"
	"strings"
	"testing"
)

func TestShortVec(t *testing.T) {
	cases := []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{0x7f, []byte{0x7f}},
		{0x80, []byte{0x80, 0x01}},
		{0xff, []byte{0xff, 0x01}},
		{0x3fff, []byte{0xff, 0x7f}},
		{0x4000, []byte{0x80, 0x80, 0x01}},
		{0xffff, []byte{0xff, 0xff, 0x03}},
	}
	for _, c := range cases {
		got := appendShortVec(nil, c.n)
		if !bytes.Equal(got, c.want) {
			t.Errorf("encode %d: %x, want %x", c.n, got, c.want)
		}
		r := reader{b: got}
		n, err := r.shortVec("n")
		if err != nil || n != c.n || len(r.b) != 0 {
			t.Errorf("decode %x: %d, %v, %d bytes left", got, n, err, len(r.b))
		}
	}
}

func TestShortVecRefuses(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"unfinished", []byte{0x80}, "truncated"},
		{"past u16", []byte{0x80, 0x80, 0x04}, "past 65535"},
		{"four bytes", []byte{0x80, 0x80, 0x80, 0x01}, "longer than three"},
		{"not shortest", []byte{0x81, 0x00}, "shortest"},
		{"not shortest, three bytes", []byte{0xff, 0x80, 0x00}, "shortest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reader{b: c.b}
			_, err := r.shortVec("n")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}
