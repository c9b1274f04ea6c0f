package drift_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
)

// The real mainnet samples of testdata (see its README): event lines with the values an
// independent decoder gave, and account dumps with a summary of each.

type eventSample struct {
	Source        string         `json:"source"`
	Prefix        string         `json:"prefix"`
	Line          string         `json:"line"`
	Event         string         `json:"event"`
	FieldsPresent int            `json:"fieldsPresent"`
	FieldsTotal   int            `json:"fieldsTotal"`
	Decoded       map[string]any `json:"decoded"`
}

type accountSample struct {
	Source  string         `json:"source"`
	Account string         `json:"account"`
	Base64  string         `json:"base64"`
	Bytes   int            `json:"bytes"`
	Summary map[string]any `json:"summary"`
}

func TestEventSamples(t *testing.T) {
	samples := drifttest.Samples[eventSample](t, "events.jsonl")
	if len(samples) != 22 {
		t.Fatalf("%d event samples, want 22", len(samples))
	}
	for i, s := range samples {
		t.Run(fmt.Sprintf("%02d_%s_%d", i, s.Event, s.FieldsPresent), func(t *testing.T) {
			data := drifttest.Base64(t, s.Line)
			e, err := drift.DecodeEvent(data)
			if err != nil {
				t.Fatalf("%s: %v", s.Source, err)
			}
			if e.EventName() != s.Event {
				t.Fatalf("decoded a %s, want %s", e.EventName(), s.Event)
			}
			if e.FieldsPresent() != s.FieldsPresent {
				t.Errorf("%d fields present, want %d", e.FieldsPresent(), s.FieldsPresent)
			}
			got := drifttest.JSON(reflect.ValueOf(e).Elem(), e.FieldsPresent()).(map[string]any)
			if len(got) != s.FieldsPresent || len(s.Decoded) != s.FieldsPresent {
				t.Errorf("%d fields decoded, the sample has %d, want %d", len(got), len(s.Decoded), s.FieldsPresent)
			}
			compareJSON(t, "", s.Decoded, got)

			back, err := e.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, data) {
				t.Errorf("encoded\n%x\nwant\n%x", back, data)
			}
		})
	}
}

// newAccount returns a new account of the named type.
func newAccount(tb testing.TB, name string) interface {
	UnmarshalBinary([]byte) error
	MarshalBinary() ([]byte, error)
} {
	tb.Helper()
	switch name {
	case "State":
		return new(drift.State)
	case "PerpMarket":
		return new(drift.PerpMarket)
	case "SpotMarket":
		return new(drift.SpotMarket)
	case "User":
		return new(drift.User)
	case "UserStats":
		return new(drift.UserStats)
	}
	tb.Fatalf("no account type %s", name)
	return nil
}

func TestAccountSamples(t *testing.T) {
	samples := drifttest.Samples[accountSample](t, "accounts.jsonl")
	if len(samples) != 162 {
		t.Fatalf("%d account samples, want 162", len(samples))
	}
	sizes := map[string]int{
		"User": drift.UserSize, "UserStats": drift.UserStatsSize, "PerpMarket": drift.PerpMarketSize,
		"SpotMarket": drift.SpotMarketSize, "State": drift.StateSize,
	}
	for i, s := range samples {
		t.Run(fmt.Sprintf("%03d_%s", i, s.Account), func(t *testing.T) {
			data := drifttest.Base64(t, s.Base64)
			if len(data) != s.Bytes || len(data) != sizes[s.Account] {
				t.Fatalf("%d bytes, the sample says %d, the IDL %d", len(data), s.Bytes, sizes[s.Account])
			}
			a := newAccount(t, s.Account)
			if err := a.UnmarshalBinary(data); err != nil {
				t.Fatalf("%s: %v", s.Source, err)
			}
			full := drifttest.JSON(reflect.ValueOf(a).Elem(), -1).(map[string]any)
			for path, want := range s.Summary {
				got := lookup(t, full, path)
				if path == "name" {
					got = nameText(t, got)
				}
				compareJSON(t, path, want, got)
			}
			back, err := a.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, data) {
				t.Error("encoding gives other bytes than the dump")
			}
		})
	}
}

// lookup follows a dotted path ("amm.historicalOracleData.lastOraclePrice") through decoded JSON.
func lookup(tb testing.TB, v any, path string) any {
	tb.Helper()
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			tb.Fatalf("%s: %s is not an object", path, k)
		}
		if v, ok = m[k]; !ok {
			tb.Fatalf("%s: no field %s", path, k)
		}
	}
	return v
}

// nameText turns a 32-byte name, as hex, into the text the summaries give.
func nameText(tb testing.TB, v any) any {
	tb.Helper()
	b, err := hex.DecodeString(v.(string))
	if err != nil || len(b) != 32 {
		tb.Fatalf("name %v is not 32 bytes of hex", v)
	}
	return drift.Name([32]byte(b))
}

// compareJSON compares two JSON values after one trip through encoding/json, so that numbers
// compare as numbers; it reports each differing key.
func compareJSON(tb testing.TB, path string, want, got any) {
	tb.Helper()
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			tb.Fatal(err)
		}
		return out
	}
	w, g := norm(want), norm(got)
	wm, wok := w.(map[string]any)
	gm, gok := g.(map[string]any)
	if wok && gok {
		for k := range wm {
			compareJSON(tb, path+"."+k, wm[k], gm[k])
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				tb.Errorf("%s.%s: decoded %v, not in the sample", path, k, gm[k])
			}
		}
		return
	}
	if !reflect.DeepEqual(w, g) {
		tb.Errorf("%s: got %v, want %v", path, g, w)
	}
}
