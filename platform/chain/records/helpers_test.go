package records_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
)

// The real mainnet samples of platform/chain/drift/testdata (see its README).
const testdata = "../drift/testdata/"

type eventSample struct {
	Line    string         `json:"line"`
	Event   string         `json:"event"`
	Decoded map[string]any `json:"decoded"`
}

type accountSample struct {
	Account string `json:"account"`
	Base64  string `json:"base64"`
}

func mustReadJSONL[T any](tb testing.TB, name string) []T {
	tb.Helper()
	f, err := os.Open(testdata + name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber() // ids above 2^53 and u32 order ids stay exact
		if err := d.Decode(&v); err != nil {
			tb.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func mustBase64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// mustSampleEvents decodes every sample event line.
func mustSampleEvents(tb testing.TB) ([]eventSample, []drift.Event) {
	tb.Helper()
	samples := mustReadJSONL[eventSample](tb, "events.jsonl")
	evs := make([]drift.Event, len(samples))
	for i, s := range samples {
		ev, err := drift.DecodeEvent(mustBase64(tb, s.Line))
		if err != nil {
			tb.Fatalf("sample %d: %v", i, err)
		}
		evs[i] = ev
	}
	return samples, evs
}

// mustSampleMarkets decodes the PerpMarket and SpotMarket dumps.
func mustSampleMarkets(tb testing.TB) ([]drift.PerpMarket, []drift.SpotMarket) {
	tb.Helper()
	var perps []drift.PerpMarket
	var spots []drift.SpotMarket
	for _, a := range mustReadJSONL[accountSample](tb, "accounts.jsonl") {
		switch a.Account {
		case "PerpMarket":
			var m drift.PerpMarket
			if err := m.UnmarshalBinary(mustBase64(tb, a.Base64)); err != nil {
				tb.Fatal(err)
			}
			perps = append(perps, m)
		case "SpotMarket":
			var m drift.SpotMarket
			if err := m.UnmarshalBinary(mustBase64(tb, a.Base64)); err != nil {
				tb.Fatal(err)
			}
			spots = append(spots, m)
		}
	}
	return perps, spots
}

// mustSampleCatalogue is the catalogue of the sample accounts, with extra markets.
func mustSampleCatalogue(tb testing.TB, extra ...events.Market) *records.Catalogue {
	tb.Helper()
	perps, spots := mustSampleMarkets(tb)
	c, err := records.NewCatalogue(perps, spots)
	if err != nil {
		tb.Fatal(err)
	}
	all := append(c.Markets(), extra...)
	c, err = records.CatalogueOf(all...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
