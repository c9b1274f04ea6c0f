package records_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
)

// sampleSig is the jit-arb transaction of the 2024-03-20 samples; the tests give every sample it,
// with the sample's position as txSigIndex, since the event lines carry no transaction of their own.
const sampleSig = "2jLk34wWwgecuws9iD9Ug63JdL8kYBePdtcakzG34zEx9KYVYD6HuokxMZYpFw799cJZBcaCMZ47WAxkGJjM7zNC"

func sampleContext(i int) records.Context {
	return records.Context{TxSig: sampleSig, TxSigIndex: i, Slot: 255235241}
}

func sampleTx(i int, ts int64) events.Tx {
	return events.Tx{Ts: ts, TxSig: sampleSig, TxSigIndex: i, Slot: 255235241}
}

// TestSampleRecords: the real samples that feed a topic map to a valid record with the values read
// off the sample's decoded JSON by the Data API's rules (enums lowerCamel as the API spells them,
// ids and amounts as integer strings, a fill's missing amounts "0", makerRebate = makerFee, symbol
// and marketFilter from the market accounts).
func TestSampleRecords(t *testing.T) {
	_, evs := mustSampleEvents(t)
	m := records.New(mustSampleCatalogue(t, events.Market{Index: 30, Symbol: "DRIFT-PERP", Type: events.MarketTypePerp}))
	const (
		jup   = "5iqawn52cdBmsjC4hDegyFnX1iNRTNDV5mRsGzgqbuyD"
		keep  = "7q6FkeUEvTDS6DaM2WTHw6s1gTzbBasGTPATLzMZW41S"
		btcMM = "HFq8BNL2UNqHqaASthr4q9JF4xbaG8ehEk26UTtVTnPp"
	)
	perp := events.MarketTypePerp
	tests := []struct {
		sample int
		topic  string
		want   events.Record
	}{
		{0, events.TopicOrderActions, &events.Fill{
			Tx: sampleTx(0, 1710893646), Action: "place", ActionExplanation: "none", MarketIndex: 24, MarketType: perp,
			Taker: jup, TakerOrderID: "3568025", TakerOrderDirection: "short", TakerOrderBaseAssetAmount: "219000000000",
			TakerOrderCumulativeBaseAssetAmountFilled: "0", TakerOrderCumulativeQuoteAssetAmountFilled: "0",
			OraclePrice: "1137555", MarketFilter: "perp", User: jup, Symbol: "JUP-PERP",
		}},
		{1, events.TopicOrders, &events.Order{
			Tx: sampleTx(1, 1710893646), User: jup, Status: "open", OrderType: "limit", MarketType: perp, MarketFilter: "perp",
			OrderID: "3568025", UserOrderID: 0, MarketIndex: 24, Price: "1133900", BaseAssetAmount: "219000000000",
			QuoteAssetAmount: "0", BaseAssetAmountFilled: "0", QuoteAssetAmountFilled: "0", Direction: "short",
			TriggerPrice: "0", TriggerCondition: "above", ExistingPositionDirection: "long", ImmediateOrCancel: true,
			OraclePriceOffset: "0", AuctionStartPrice: "0", AuctionEndPrice: "0", MaxTs: 0, Symbol: "JUP-PERP",
			LastUpdatedTs: 1710893646, LastActionStatus: "open", LastActionExplanation: "none", CumulativeFee: "0",
		}},
		{2, events.TopicFills, &events.Fill{
			Tx: sampleTx(2, 1710893646), FillerReward: "0", BaseAssetAmountFilled: "219000000000",
			QuoteAssetAmountFilled: "248324100", TakerFee: "74498", MakerRebate: "-49664", ReferrerReward: "0",
			QuoteAssetAmountSurplus: "0", TakerOrderBaseAssetAmount: "219000000000",
			TakerOrderCumulativeBaseAssetAmountFilled: "219000000000", TakerOrderCumulativeQuoteAssetAmountFilled: "248324100",
			MakerOrderBaseAssetAmount: "873000000000", MakerOrderCumulativeBaseAssetAmountFilled: "873000000000",
			MakerOrderCumulativeQuoteAssetAmountFilled: "989894700", OraclePrice: "1137555", MakerFee: "-49664",
			Action: "fill", ActionExplanation: "orderFilledWithMatch", MarketIndex: 24, MarketType: perp, Filler: jup,
			FillRecordID: "236231", Taker: jup, TakerOrderID: "3568025", TakerOrderDirection: "short",
			Maker: "GgZkrSFgTAXZn1rNtZ533wpZi6nxx8whJC9bxRESB22c", MakerOrderID: "15923", MakerOrderDirection: "long",
			SpotFulfillmentMethodFee: "0", MarketFilter: "perp", Symbol: "JUP-PERP",
		}},
		{5, events.TopicFills, &events.Fill{ // the AMM and its LPs fill: no maker
			Tx: sampleTx(5, 1710893646), FillerReward: "0", BaseAssetAmountFilled: "48000000000",
			QuoteAssetAmountFilled: "54220800", TakerFee: "16267", MakerRebate: "0", ReferrerReward: "0",
			QuoteAssetAmountSurplus: "-964360", TakerOrderBaseAssetAmount: "219000000000",
			TakerOrderCumulativeBaseAssetAmountFilled: "48000000000", TakerOrderCumulativeQuoteAssetAmountFilled: "54220800",
			MakerOrderBaseAssetAmount: "0", MakerOrderCumulativeBaseAssetAmountFilled: "0",
			MakerOrderCumulativeQuoteAssetAmountFilled: "0", OraclePrice: "1137555", MakerFee: "0",
			Action: "fill", ActionExplanation: "orderFilledWithAmmJitLpSplit", MarketIndex: 24, MarketType: perp, Filler: jup,
			FillRecordID: "236232", Taker: jup, TakerOrderID: "3568026", TakerOrderDirection: "long",
			SpotFulfillmentMethodFee: "0", MarketFilter: "perp", Symbol: "JUP-PERP",
		}},
		{8, events.TopicOrderActions, &events.Fill{ // a trigger, 2025 layout (bitFlags and existing amounts present)
			Tx: sampleTx(8, 1751442612), FillerReward: "3000", TakerFee: "3000", Action: "trigger", ActionExplanation: "none",
			MarketIndex: 0, MarketType: perp, Filler: keep, Taker: "8i9z13L3fhw6iGhYuxTQCQkR31ckvJYS5JvKa8TVU8UY",
			TakerOrderID: "279", TakerOrderDirection: "short", TakerOrderBaseAssetAmount: "500000000",
			TakerOrderCumulativeBaseAssetAmountFilled: "0", TakerOrderCumulativeQuoteAssetAmountFilled: "0",
			OraclePrice: "149121775", MarketFilter: "perp", User: "8i9z13L3fhw6iGhYuxTQCQkR31ckvJYS5JvKa8TVU8UY", Symbol: "SOL-PERP",
		}},
		{9, events.TopicFills, &events.Fill{
			Tx: sampleTx(9, 1751442612), FillerReward: "1863", BaseAssetAmountFilled: "500000000",
			QuoteAssetAmountFilled: "74552236", TakerFee: "18639", MakerRebate: "0", ReferrerReward: "0",
			QuoteAssetAmountSurplus: "8649", TakerOrderBaseAssetAmount: "500000000",
			TakerOrderCumulativeBaseAssetAmountFilled: "500000000", TakerOrderCumulativeQuoteAssetAmountFilled: "74552236",
			MakerOrderBaseAssetAmount: "0", MakerOrderCumulativeBaseAssetAmountFilled: "0",
			MakerOrderCumulativeQuoteAssetAmountFilled: "0", OraclePrice: "149121775", MakerFee: "0",
			Action: "fill", ActionExplanation: "orderFilledWithAmm", MarketIndex: 0, MarketType: perp, Filler: keep,
			FillRecordID: "11890212", Taker: "8i9z13L3fhw6iGhYuxTQCQkR31ckvJYS5JvKa8TVU8UY", TakerOrderID: "279",
			TakerOrderDirection: "short", SpotFulfillmentMethodFee: "0", TakerExistingQuoteEntryAmount: "72344326",
			MarketFilter: "perp", Symbol: "SOL-PERP",
		}},
		{10, events.TopicOrderActions, &events.Fill{ // a post-only order names its account on the maker side
			Tx: sampleTx(10, 1751867218), Action: "place", ActionExplanation: "none", MarketIndex: 1, MarketType: perp,
			Maker: btcMM, MakerOrderID: "1432564", MakerOrderDirection: "long", MakerOrderBaseAssetAmount: "1800000",
			MakerOrderCumulativeBaseAssetAmountFilled: "0", MakerOrderCumulativeQuoteAssetAmountFilled: "0",
			OraclePrice: "109120829869", MarketFilter: "perp", User: btcMM, Symbol: "BTC-PERP",
		}},
		{14, events.TopicOrderActions, &events.Fill{
			Tx: sampleTx(14, 1751867218), FillerReward: "0", Action: "cancel", ActionExplanation: "none", MarketIndex: 1,
			MarketType: perp, Maker: btcMM, MakerOrderID: "1432564", MakerOrderDirection: "long",
			MakerOrderBaseAssetAmount: "1800000", MakerOrderCumulativeBaseAssetAmountFilled: "900000",
			MakerOrderCumulativeQuoteAssetAmountFilled: "98200890", OraclePrice: "109120829869", MarketFilter: "perp",
			User: btcMM, Symbol: "BTC-PERP",
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.sample), func(t *testing.T) {
			got, ok, err := m.Map(evs[tt.sample], sampleContext(tt.sample))
			if err != nil || !ok {
				t.Fatalf("Map: %v, %v", ok, err)
			}
			if got.Topic != tt.topic {
				t.Errorf("topic %s, want %s", got.Topic, tt.topic)
			}
			if err := got.Record.Validate(); err != nil {
				t.Errorf("invalid: %v", err)
			}
			if !reflect.DeepEqual(got.Record, tt.want) {
				t.Errorf("got  %s\nwant %s", mustJSON(t, got.Record), mustJSON(t, tt.want))
			}
		})
	}
}

// TestSampleFillFields checks every OrderActionRecord sample field by field against its decoded
// JSON: each event field the record has, under the same name, holds the sample's value (null is
// "0" for a fill's amounts and empty otherwise), so no field is dropped or mixed up.
func TestSampleFillFields(t *testing.T) {
	samples, evs := mustSampleEvents(t)
	m := records.New(mustSampleCatalogue(t))
	n := 0
	for i, s := range samples {
		if s.Event != "OrderActionRecord" {
			continue
		}
		n++
		got, _, err := m.Map(evs[i], sampleContext(i))
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if err := got.Record.Validate(); err != nil {
			t.Errorf("sample %d: %v", i, err)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(mustJSON(t, got.Record)), &rec); err != nil {
			t.Fatal(err)
		}
		fill := s.Decoded["action"] == "Fill"
		for k, v := range s.Decoded {
			var want any
			switch {
			case k == "ts" || k == "marketType" || k == "action" || k == "actionExplanation":
				continue // the literal cases of TestSampleRecords cover the renamed enums
			case k == "bitFlags" && fmt.Sprint(v) == "0":
				want = nil // omitted when 0
			case v == nil && fill && !strings.HasSuffix(k, "Id") && k != "filler" && k != "taker" && k != "maker" &&
				!strings.HasSuffix(k, "Direction") && !strings.Contains(k, "Existing"):
				want = "0"
			case v == nil:
				want = nil // absent or ""
			case k == "takerOrderDirection" || k == "makerOrderDirection":
				want = strings.ToLower(v.(string))
			case k == "marketIndex":
				want = v
			default:
				want = fmt.Sprint(v)
			}
			gotV, present := rec[k]
			if want == nil {
				if present && gotV != "" {
					t.Errorf("sample %d: %s = %v, want none", i, k, gotV)
				}
				continue
			}
			if !present || fmt.Sprint(gotV) != fmt.Sprint(want) {
				t.Errorf("sample %d: %s = %v, want %v", i, k, gotV, want)
			}
		}
		if mr, mf := rec["makerRebate"], rec["makerFee"]; mr != mf {
			t.Errorf("sample %d: makerRebate %v, makerFee %v: the Data API writes the fee", i, mr, mf)
		}
	}
	if n != 12 {
		t.Errorf("%d OrderActionRecord samples, want 12", n)
	}
}

// TestSamplesUnmapped: the samples no topic carries map to nothing, without error.
func TestSamplesUnmapped(t *testing.T) {
	samples, evs := mustSampleEvents(t)
	m := records.New(mustSampleCatalogue(t))
	for i, s := range samples {
		switch s.Event {
		case "SpotInterestRecord", "CurveRecord":
			if got, ok, err := m.Map(evs[i], sampleContext(i)); ok || err != nil {
				t.Errorf("sample %d %s: %v, %v, %v", i, s.Event, got, ok, err)
			}
		}
	}
}

// TestSampleRoundTrip: each mapped sample record maps back to the event's bytes when the event
// has today's full layout, and to the same record in any case.
func TestSampleRoundTrip(t *testing.T) {
	samples, evs := mustSampleEvents(t)
	m := records.New(mustSampleCatalogue(t, events.Market{Index: 30, Symbol: "DRIFT-PERP", Type: events.MarketTypePerp}))
	for i, ev := range evs {
		got, ok, err := m.Map(ev, sampleContext(i))
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if !ok {
			continue
		}
		back, err := records.Event(got.Record)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		again, _, err := m.Map(back, sampleContext(i))
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Errorf("sample %d %s: record -> event -> record\ngot  %s\nwant %s", i, samples[i].Event,
				mustJSON(t, again.Record), mustJSON(t, got.Record))
		}
	}
}
