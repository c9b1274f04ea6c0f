package events_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

func TestTopicsMatchDesign(t *testing.T) {
	want := map[string]string{ // DESIGN.md's topic table: name -> key field
		"protocol.fills": "marketIndex", "protocol.order-actions": "user", "protocol.orders": "user",
		"protocol.funding-rates": "marketIndex", "protocol.funding-payments": "user", "protocol.liquidations": "user",
		"protocol.deposits": "user", "protocol.swaps": "user", "protocol.settle-pnl": "user", "protocol.lp": "user",
		"protocol.insurance-fund": "spotMarketIndex", "protocol.if-stakes": "marketIndex",
		"protocol.lp-mint-redeem": "authority", "protocol.new-users": "userAuthority",
		"protocol.market-states": "marketIndex", "protocol.account-snapshots": "authority",
		"protocol.vaults": "", "protocol.params": "",
		"edge.candles": "symbol", "edge.markets": "symbol", "edge.pricing": "symbol", "edge.notifications": "authorityId",
	}
	got := map[string]string{}
	for _, tp := range events.Topics() {
		if _, dup := got[tp.Name]; dup {
			t.Errorf("topic %s listed twice", tp.Name)
		}
		got[tp.Name] = tp.Key
		if byName, ok := events.TopicByName(tp.Name); !ok || byName.Name != tp.Name {
			t.Errorf("TopicByName(%s) = %v, %v", tp.Name, byName.Name, ok)
		}
		if edge := strings.HasPrefix(tp.Name, "edge."); edge != tp.Edge() {
			t.Errorf("%s: Edge() = %v", tp.Name, tp.Edge())
		}
		if !tp.Edge() && tp.New() == nil {
			t.Errorf("%s: New returned nil", tp.Name)
		}
	}
	for name, key := range want {
		if k, ok := got[name]; !ok || k != key {
			t.Errorf("topic %s: key %q (present %v), want %q", name, k, ok, key)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d topics, want %d", len(got), len(want))
	}
	if _, ok := events.TopicByName("protocol.nope"); ok {
		t.Error("TopicByName found an unknown topic")
	}
	if slices.Contains(events.ProtocolTopics(), events.TopicEdgeCandles) {
		t.Error("ProtocolTopics lists an edge topic")
	}
}

func TestEncodeSetsKeyAndHeaders(t *testing.T) {
	wantKey := map[string]string{
		events.TopicFills: "0", events.TopicOrderActions: testUser, events.TopicOrders: testUser,
		events.TopicFundingRates: "2", events.TopicFundingPayments: testUser, events.TopicLiquidations: testUser,
		events.TopicDeposits: testUser, events.TopicSwaps: testUser, events.TopicSettlePnl: testUser,
		events.TopicLP: testUser, events.TopicInsuranceFund: "0", events.TopicIFStakes: "0",
		events.TopicLPMintRedeem: testAuth, events.TopicNewUsers: testAuth, events.TopicMarketStates: "0",
		events.TopicAccountSnapshots: testAuth, events.TopicVaults: "", events.TopicParams: "",
	}
	wantType := map[string]string{
		events.TopicFills: "fill", events.TopicOrderActions: "orderAction", events.TopicOrders: "order",
		events.TopicFundingRates: "fundingRate", events.TopicFundingPayments: "fundingPayment",
		events.TopicLiquidations: "liquidation", events.TopicDeposits: "deposit", events.TopicSwaps: "swap",
		events.TopicSettlePnl: "settlePnl", events.TopicLP: "perpLp", events.TopicInsuranceFund: "insuranceFund",
		events.TopicIFStakes: "ifStake", events.TopicLPMintRedeem: "lpMintRedeem", events.TopicNewUsers: "newUser",
		events.TopicMarketStates: "marketState", events.TopicAccountSnapshots: "accountSnapshot",
		events.TopicVaults: "vault", events.TopicParams: "params",
	}
	for _, s := range samples() {
		t.Run(s.topic, func(t *testing.T) {
			msg, err := events.Encode(s.topic, s.rec)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if msg.Topic != s.topic {
				t.Errorf("topic %q", msg.Topic)
			}
			if string(msg.Key) != wantKey[s.topic] {
				t.Errorf("key %q, want %q", msg.Key, wantKey[s.topic])
			}
			if wantKey[s.topic] == "" && msg.Key != nil {
				t.Errorf("unkeyed topic got key %q", msg.Key)
			}
			if got := msg.Headers[events.HeaderEventType]; got != wantType[s.topic] {
				t.Errorf("event-type %q, want %q", got, wantType[s.topic])
			}
			if got := msg.Headers[events.HeaderSchemaVersion]; got != "1" {
				t.Errorf("schema-version %q", got)
			}
		})
	}
}

func TestOrderActionKeyFallsBackToTaker(t *testing.T) {
	p := newPlace()
	p.User = ""
	msg, err := events.Encode(events.TopicOrderActions, p)
	if err != nil || string(msg.Key) != testUser {
		t.Fatalf("Encode = %q, %v; want key %s", msg.Key, err, testUser)
	}
}

func TestEncodeRejects(t *testing.T) {
	bad := newFill()
	bad.TakerFee = "0.5"
	tests := []struct {
		name  string
		topic string
		rec   events.Record
		want  string
	}{
		{"unknown topic", "protocol.nope", newFill(), "unknown topic"},
		{"edge topic", events.TopicEdgeCandles, newFill(), "NewMessage"},
		{"wrong record type", events.TopicFills, newDeposit(), "carries"},
		{"nil record", events.TopicFills, (*events.Fill)(nil), "carries"},
		{"non-fill on fills", events.TopicFills, newPlace(), "fills only"},
		{"invalid record", events.TopicFills, bad, "takerFee"},
		{"missing key", events.TopicDeposits, func() events.Record { d := newDeposit(); d.User = ""; return d }(), "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := events.Encode(tt.topic, tt.rec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Encode = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := events.Encode(events.TopicFills, newFill())
	if err != nil {
		t.Fatal(err)
	}
	place, err := events.Encode(events.TopicOrderActions, newPlace())
	if err != nil {
		t.Fatal(err)
	}
	value := string(good.Value)
	tests := []struct {
		name  string
		topic string
		value string
		want  string
	}{
		{"unknown field", events.TopicFills, strings.Replace(value, `"ts":`, `"extra":1,"ts":`, 1), "unknown field"},
		{"trailing data", events.TopicFills, value + `{}`, "trailing"},
		{"not JSON", events.TopicFills, `{"ts":`, "decode"},
		{"wrong JSON type", events.TopicFills, strings.Replace(value, `"slot":310000000`, `"slot":"310000000"`, 1), "slot"},
		{"null", events.TopicFills, `null`, "txSig is required"},
		{"bad amount", events.TopicFills, strings.Replace(value, `"takerFee":"52587"`, `"takerFee":"52.587"`, 1), "takerFee"},
		{"numeric amount", events.TopicFills, strings.Replace(value, `"takerFee":"52587"`, `"takerFee":52587`, 1), "takerFee"},
		{"place on fills", events.TopicFills, string(place.Value), "fills only"},
		{"unknown topic", "protocol.nope", value, "unknown topic"},
		{"edge topic", events.TopicEdgeCandles, value, "no protocol record"},
		{"ts in ms", events.TopicFills, strings.Replace(value, `"ts":1735689600`, `"ts":1735689600000`, 1), "ts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := events.Decode(tt.topic, []byte(tt.value))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode = %v, %v; want an error mentioning %q", r, err, tt.want)
			}
		})
	}
	if _, err := events.Decode(events.TopicFills, append(good.Value, " \n"...)); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}

func TestDecodeReturnsTheTopicType(t *testing.T) {
	for _, s := range samples() {
		msg, err := events.Encode(s.topic, s.rec)
		if err != nil {
			t.Fatal(err)
		}
		r, err := events.Decode(s.topic, msg.Value)
		if err != nil {
			t.Fatalf("%s: %v", s.topic, err)
		}
		if got, want := r.EventType(), s.rec.EventType(); got != want {
			t.Errorf("%s: decoded %s, want %s", s.topic, got, want)
		}
	}
	r, err := events.Decode(events.TopicOrderActions, mustEncode(t, events.TopicOrderActions, newPlace()).Value)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(*events.Fill); !ok {
		t.Errorf("order action decoded as %T, want *events.Fill", r)
	}
}

func mustEncode(tb testing.TB, topic string, r events.Record) events.Message {
	tb.Helper()
	m, err := events.Encode(topic, r)
	if err != nil {
		tb.Fatalf("Encode(%s): %v", topic, err)
	}
	return m
}

func TestNewMessage(t *testing.T) {
	candle := map[string]any{"symbol": "SOL-PERP", "resolution": "1", "fillOpen": 150.5}
	m, err := events.NewMessage(events.TopicEdgeCandles, "SOL-PERP", "candle", candle)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Key) != "SOL-PERP" || m.Headers[events.HeaderEventType] != "candle" ||
		m.Headers[events.HeaderSchemaVersion] != events.SchemaVersion {
		t.Errorf("message %+v", m)
	}
	if _, err := events.NewMessage(events.TopicEdgeCandles, "", "", candle); err == nil {
		t.Error("NewMessage without an event type: no error")
	}
	if _, err := events.NewMessage(events.TopicEdgeCandles, "", "x", func() {}); err == nil {
		t.Error("NewMessage of an unencodable value: no error")
	}
}
