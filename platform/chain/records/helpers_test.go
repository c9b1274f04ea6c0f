package records_test

import (
	"encoding/json"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
)

type eventSample struct {
	Line    string         `json:"line"`
	Event   string         `json:"event"`
	Decoded map[string]any `json:"decoded"`
}

type accountSample struct {
	Account string `json:"account"`
	Base64  string `json:"base64"`
}

// mustSampleEvents decodes every sample event line.
func mustSampleEvents(tb testing.TB) ([]eventSample, []drift.Event) {
	tb.Helper()
	samples := drifttest.Samples[eventSample](tb, "events.jsonl")
	evs := make([]drift.Event, len(samples))
	for i, s := range samples {
		ev, err := drift.DecodeEvent(drifttest.Base64(tb, s.Line))
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
	for _, a := range drifttest.Samples[accountSample](tb, "accounts.jsonl") {
		switch a.Account {
		case "PerpMarket":
			var m drift.PerpMarket
			if err := m.UnmarshalBinary(drifttest.Base64(tb, a.Base64)); err != nil {
				tb.Fatal(err)
			}
			perps = append(perps, m)
		case "SpotMarket":
			var m drift.SpotMarket
			if err := m.UnmarshalBinary(drifttest.Base64(tb, a.Base64)); err != nil {
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
