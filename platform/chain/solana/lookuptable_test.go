package solana_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

// key is a deterministic test key.
func key(n byte) solana.PublicKey {
	var k solana.PublicKey
	for i := range k {
		k[i] = n + byte(i)
	}
	return k
}

// altBytes lays a lookup table account out field by field, independently of the encoder.
func altBytes(state uint32, deactivation, extended uint64, start uint8, authority *solana.PublicKey, addrs ...solana.PublicKey) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, state)
	b = binary.LittleEndian.AppendUint64(b, deactivation)
	b = binary.LittleEndian.AppendUint64(b, extended)
	b = append(b, start)
	if authority != nil {
		b = append(b, 1)
		b = append(b, authority[:]...)
	} else {
		b = append(b, 0)
	}
	b = append(b, make([]byte, 56-len(b))...)
	for _, a := range addrs {
		b = append(b, a[:]...)
	}
	return b
}

func TestLookupTableRoundTrip(t *testing.T) {
	auth := key(200)
	cases := []struct {
		name  string
		meta  solana.LookupTableMeta
		addrs []solana.PublicKey
	}{
		{"active with authority", solana.LookupTableMeta{DeactivationSlot: solana.LookupTableActive, LastExtendedSlot: 300_000_123, LastExtendedSlotStartIndex: 2, Authority: &auth}, []solana.PublicKey{key(1), key(2), key(3)}},
		{"frozen", solana.LookupTableMeta{DeactivationSlot: solana.LookupTableActive, LastExtendedSlot: 7}, []solana.PublicKey{key(9)}},
		{"deactivated, empty", solana.LookupTableMeta{DeactivationSlot: 12345, Authority: &auth}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := solana.EncodeLookupTable(c.meta, c.addrs)
			if err != nil {
				t.Fatal(err)
			}
			want := altBytes(1, c.meta.DeactivationSlot, c.meta.LastExtendedSlot, c.meta.LastExtendedSlotStartIndex, c.meta.Authority, c.addrs...)
			if !bytes.Equal(data, want) {
				t.Fatalf("encoded\n%x\nwant\n%x", data, want)
			}
			tbl, err := solana.DecodeLookupTable(key(50), data)
			if err != nil {
				t.Fatal(err)
			}
			if tbl.Key != key(50) || len(tbl.Addresses) != len(c.addrs) || (len(c.addrs) > 0 && !reflect.DeepEqual(tbl.Addresses, c.addrs)) {
				t.Errorf("decoded %+v, want addresses %v", tbl, c.addrs)
			}
			meta, err := solana.DecodeLookupTableMeta(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(meta, c.meta) {
				t.Errorf("meta %+v, want %+v", meta, c.meta)
			}
		})
	}
}

func TestLookupTableFrozenKeepsOldBytes(t *testing.T) {
	// Freezing rewrites only the bincode header, so the old authority's bytes stay after the
	// None tag: they must not be read as an authority.
	auth := key(200)
	data := altBytes(1, solana.LookupTableActive, 1, 0, &auth, key(1))
	data[21] = 0
	meta, err := solana.DecodeLookupTableMeta(data)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Authority != nil {
		t.Errorf("authority %s read from a frozen table", meta.Authority)
	}
}

func TestLookupTableRefuses(t *testing.T) {
	good := altBytes(1, solana.LookupTableActive, 0, 0, nil, key(1))
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"short header", good[:55], "shorter than"},
		{"uninitialized", altBytes(0, 0, 0, 0, nil), "uninitialized"},
		{"other state", altBytes(2, 0, 0, 0, nil), "state 2"},
		{"bad option", func() []byte { b := bytes.Clone(good); b[21] = 2; return b }(), "option tag"},
		{"partial address", good[:len(good)-1], "whole number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := solana.DecodeLookupTable(key(50), c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := solana.EncodeLookupTable(solana.LookupTableMeta{}, make([]solana.PublicKey, 257)); err == nil {
		t.Error("a table of 257 addresses was encoded")
	}
}
