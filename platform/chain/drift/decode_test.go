package drift_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
)

// sampleBytes returns the bytes of the i-th event sample.
func sampleBytes(tb testing.TB, i int) []byte {
	tb.Helper()
	return drifttest.Base64(tb, drifttest.Samples[eventSample](tb, "events.jsonl")[i].Line)
}

// edit returns a copy of b with the byte at off set to v.
func edit(b []byte, off int, v byte) []byte {
	b = bytes.Clone(b)
	b[off] = v
	return b
}

func TestEventRefusals(t *testing.T) {
	oar := sampleBytes(t, 0)   // an OrderActionRecord of 2024: 28 of 36 fields
	order := sampleBytes(t, 1) // an OrderRecord
	swap := sampleBytes(t, 16) // a SwapRecord, all of its fields
	cases := []struct {
		name      string
		data      []byte
		wantType  string
		wantField string
		wantOff   int
		wantErr   error
	}{
		{"shorter than a discriminator", oar[:5], "event", "", 5, borsh.ErrEnd},
		{"unknown discriminator", edit(oar, 0, 0), "event", "", 0, drift.ErrUnknownEvent},
		{"no field at all", oar[:8], "OrderActionRecord", "ts", 8, borsh.ErrEnd},
		{"ends inside the first field", oar[:12], "OrderActionRecord", "ts", 8, borsh.ErrEnd},
		{"ends inside a later field", oar[:len(oar)-3], "OrderActionRecord", "oraclePrice", len(oar) - 8, borsh.ErrEnd},
		{"enum index out of range", edit(oar, 16, 9), "OrderActionRecord", "action", 16, borsh.ErrEnum},
		{"option tag 2", edit(oar, 21, 2), "OrderActionRecord", "filler", 21, borsh.ErrOption},
		{"bool 2 inside a struct", edit(order, 136, 2), "OrderRecord", "order", 136, borsh.ErrBool},
		// The offset is the start of the value that failed, inside the struct.
		{"ends inside a struct", order[:100], "OrderRecord", "order", 96, borsh.ErrEnd},
		{"a byte after the last field", append(bytes.Clone(swap), 0), "SwapRecord", "", len(swap), borsh.ErrTrailing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := drift.DecodeEvent(c.data)
			if err == nil {
				t.Fatalf("decoded a %s with %d fields, want an error", e.EventName(), e.FieldsPresent())
			}
			var de *drift.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is no *DecodeError", err)
			}
			if de.Type != c.wantType || de.Field != c.wantField || de.Offset != c.wantOff || !errors.Is(err, c.wantErr) {
				t.Errorf("error %q: type %s, field %s, offset %d; want %s, %s, %d, %v", err, de.Type, de.Field, de.Offset, c.wantType, c.wantField, c.wantOff, c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantType) || !strings.Contains(err.Error(), "offset") {
				t.Errorf("error %q names neither the event nor the offset", err)
			}
		})
	}
}

func TestWrongDiscriminator(t *testing.T) {
	var e drift.OrderActionRecord
	err := e.UnmarshalBinary(sampleBytes(t, 1))
	var de *drift.DecodeError
	if !errors.As(err, &de) || de.Type != "OrderActionRecord" || de.Offset != 0 {
		t.Errorf("an OrderRecord decoded as an OrderActionRecord: %v", err)
	}
}

func TestOldLayouts(t *testing.T) {
	// Every field boundary of today's layout is an older layout: an event cut there decodes with the
	// rest absent and encodes back to the same bytes.
	var full drift.OrderActionRecord
	if err := full.UnmarshalBinary(sampleBytes(t, 2)); err != nil {
		t.Fatal(err)
	}
	full.Absent = 0 // the same event as today's program would emit it
	full.BitFlags = 3
	full.TriggerPrice = borsh.Some[uint64](7)
	full.BuilderIdx = borsh.Some[uint8](1)
	full.BuilderFee = borsh.Some[uint64](99)
	data, err := full.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	boundaries := 0
	for n := 9; n <= len(data); n++ {
		var e drift.OrderActionRecord
		err := e.UnmarshalBinary(data[:n])
		if err != nil {
			continue // a cut inside a field
		}
		boundaries++
		back, err := e.MarshalBinary()
		if err != nil {
			t.Fatalf("%d bytes: encode: %v", n, err)
		}
		if !bytes.Equal(back, data[:n]) {
			t.Errorf("%d bytes (%d fields): encoded to other bytes", n, e.FieldsPresent())
		}
	}
	if boundaries != drift.OrderActionRecordFields {
		t.Errorf("%d prefixes decode, want one per field (%d)", boundaries, drift.OrderActionRecordFields)
	}
	var e drift.OrderActionRecord
	if err := e.UnmarshalBinary(data); err != nil || e != full {
		t.Errorf("today's layout: %v, %+v", err, e)
	}
}

func TestEncodeRefusesAbsent(t *testing.T) {
	for _, absent := range []int{-1, drift.SwapRecordFields} {
		e := drift.SwapRecord{Absent: absent}
		if _, err := e.MarshalBinary(); err == nil {
			t.Errorf("Absent %d encoded", absent)
		}
	}
}

func TestAccountRefusals(t *testing.T) {
	user := drifttest.Base64(t, drifttest.Samples[accountSample](t, "accounts.jsonl")[0].Base64)
	cases := []struct {
		name      string
		data      []byte
		wantField string
		wantOff   int
		wantErr   error
	}{
		{"cut in the authority", user[:20], "authority", 8, borsh.ErrEnd},
		{"cut near the end", user[:len(user)-1], "padding", len(user) - 12, borsh.ErrEnd},
		{"a byte too many", append(bytes.Clone(user), 0), "", len(user), borsh.ErrTrailing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var u drift.User
			err := u.UnmarshalBinary(c.data)
			var de *drift.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is no *DecodeError", err)
			}
			if de.Type != "User" || de.Field != c.wantField || de.Offset != c.wantOff || !errors.Is(err, c.wantErr) {
				t.Errorf("error %q: field %s, offset %d; want %s, %d, %v", err, de.Field, de.Offset, c.wantField, c.wantOff, c.wantErr)
			}
		})
	}
}

func FuzzDecodeEvent(f *testing.F) {
	// Seeds: every real sample, whole and cut in the middle, so that the short run of go test
	// covers the old layouts and the refusals.
	for _, s := range drifttest.Samples[eventSample](f, "events.jsonl") {
		b := drifttest.Base64(f, s.Line)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := drift.DecodeEvent(data)
		if err != nil {
			var de *drift.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is no *DecodeError", err)
			}
			if de.Type == "" || de.Offset < 0 || de.Offset > len(data) {
				t.Fatalf("error %q: type %q, offset %d of %d bytes", err, de.Type, de.Offset, len(data))
			}
			if !strings.Contains(err.Error(), de.Type) || !strings.Contains(err.Error(), "offset") {
				t.Fatalf("error %q names neither the event nor the offset", err)
			}
			return
		}
		// What decodes is exactly the bytes it came from.
		back, err := e.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: encode: %v", e.EventName(), err)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("%s: encoded\n%x\nfrom\n%x", e.EventName(), back, data)
		}
	})
}
