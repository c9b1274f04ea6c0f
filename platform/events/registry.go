// Package events defines the protocol records that travel on tidemark's Kafka topics: one struct per
// record with the JSON field names the public API emits, validation, the topic registry (name, key,
// record type), strict decoding for consumers, encoding with the standard headers for producers, and
// the CSV layout of the exportable records. Amounts are integer strings in protocol precision and
// timestamps unix seconds.
package events

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Record is one protocol event. Validate checks it against the wall clock, ValidateAt against now.
type Record interface {
	EventType() string
	Validate() error
	ValidateAt(now time.Time) error
}

// Protocol topics: producers publish protocol events here, services consume them.
const (
	TopicFills            = "protocol.fills"         // *Fill with action fill; key marketIndex
	TopicOrderActions     = "protocol.order-actions" // *OrderAction of any action; key user account
	TopicOrders           = "protocol.orders"        // *Order; key user account
	TopicFundingRates     = "protocol.funding-rates" // *FundingRate; key marketIndex
	TopicFundingPayments  = "protocol.funding-payments"
	TopicLiquidations     = "protocol.liquidations"
	TopicDeposits         = "protocol.deposits" // rewards included
	TopicSwaps            = "protocol.swaps"
	TopicSettlePnl        = "protocol.settle-pnl"
	TopicLP               = "protocol.lp"
	TopicInsuranceFund    = "protocol.insurance-fund" // key spotMarketIndex
	TopicIFStakes         = "protocol.if-stakes"      // key marketIndex
	TopicLPMintRedeem     = "protocol.lp-mint-redeem" // key authority
	TopicNewUsers         = "protocol.new-users"      // key userAuthority
	TopicMarketStates     = "protocol.market-states"  // key marketIndex
	TopicAccountSnapshots = "protocol.account-snapshots"
	TopicVaults           = "protocol.vaults" // no key
	TopicParams           = "protocol.params" // no key
)

// Edge topics carry what services derive for the WebSocket edge. Their payloads belong to the
// producing service (a candle is not a protocol record); they are built with NewMessage.
const (
	TopicEdgeCandles       = "edge.candles"
	TopicEdgeMarkets       = "edge.markets"
	TopicEdgePricing       = "edge.pricing"
	TopicEdgeNotifications = "edge.notifications"
)

// Message headers.
const (
	HeaderEventType     = "event-type"
	HeaderSchemaVersion = "schema-version"
	SchemaVersion       = "1"
)

// Topic describes one topic: Key names the JSON field whose value keys its messages ("" = unkeyed),
// New makes an empty record of the topic's type (nil for edge topics).
type Topic struct {
	Name string
	Key  string
	New  func() Record

	// route checks that a record belongs on the topic and returns its message key.
	route func(Record) (string, error)
}

// Edge reports whether t is an edge topic (no protocol record type).
func (t Topic) Edge() bool { return t.New == nil }

// topicNames lists every topic in a stable order: the protocol topics of DESIGN.md's table, then the
// edge topics.
func topicNames() []string {
	return []string{
		TopicFills, TopicOrderActions, TopicOrders, TopicFundingRates, TopicFundingPayments,
		TopicLiquidations, TopicDeposits, TopicSwaps, TopicSettlePnl, TopicLP, TopicInsuranceFund,
		TopicIFStakes, TopicLPMintRedeem, TopicNewUsers, TopicMarketStates, TopicAccountSnapshots,
		TopicVaults, TopicParams,
		TopicEdgeCandles, TopicEdgeMarkets, TopicEdgePricing, TopicEdgeNotifications,
	}
}

// Topics returns every topic, protocol topics first.
func Topics() []Topic {
	names := topicNames()
	out := make([]Topic, 0, len(names))
	for _, n := range names {
		t, _ := TopicByName(n)
		out = append(out, t)
	}
	return out
}

// ProtocolTopics returns the names of the topics that carry protocol records.
func ProtocolTopics() []string {
	var out []string
	for _, t := range Topics() {
		if !t.Edge() {
			out = append(out, t.Name)
		}
	}
	return out
}

// TopicByName looks a topic up by its name.
func TopicByName(name string) (Topic, bool) {
	t, ok := topicTable()[name]
	return t, ok
}

// topicTable maps every topic name to its Topic. The topics are fixed, so the table is built once
// and only read afterwards: Decode looks a topic up per message, and building a Topic allocates its
// closures.
var topicTable = sync.OnceValue(func() map[string]Topic {
	m := make(map[string]Topic)
	for _, name := range topicNames() {
		t, _ := newTopic(name)
		m[name] = t
	}
	return m
})

// newTopic builds the topic called name.
func newTopic(name string) (Topic, bool) {
	idx := func(i int) string { return strconv.Itoa(i) }
	switch name {
	case TopicFills:
		return topic(name, "marketIndex", func(r *Fill) (string, error) {
			if r.Action != ActionFill {
				return "", fmt.Errorf("action %q: %s carries fills only", r.Action, name)
			}
			return idx(r.MarketIndex), nil
		}), true
	case TopicOrderActions:
		// Place and cancel actions name only the account that acts; user is set when the record is
		// about one account.
		return topic(name, "user", func(r *OrderAction) (string, error) {
			return firstOf(r.User, r.Taker, r.Maker), nil
		}), true
	case TopicOrders:
		return topic(name, "user", func(r *Order) (string, error) { return r.User, nil }), true
	case TopicFundingRates:
		return topic(name, "marketIndex", func(r *FundingRate) (string, error) { return idx(r.MarketIndex), nil }), true
	case TopicFundingPayments:
		return topic(name, "user", func(r *FundingPayment) (string, error) { return r.User, nil }), true
	case TopicLiquidations:
		return topic(name, "user", func(r *Liquidation) (string, error) { return r.User, nil }), true
	case TopicDeposits:
		return topic(name, "user", func(r *Deposit) (string, error) { return r.User, nil }), true
	case TopicSwaps:
		return topic(name, "user", func(r *Swap) (string, error) { return r.User, nil }), true
	case TopicSettlePnl:
		return topic(name, "user", func(r *SettlePnl) (string, error) { return r.User, nil }), true
	case TopicLP:
		return topic(name, "user", func(r *PerpLP) (string, error) { return r.User, nil }), true
	case TopicInsuranceFund:
		return topic(name, "spotMarketIndex", func(r *InsuranceFund) (string, error) { return idx(r.SpotMarketIndex), nil }), true
	case TopicIFStakes:
		return topic(name, "marketIndex", func(r *IFStake) (string, error) { return idx(r.MarketIndex), nil }), true
	case TopicLPMintRedeem:
		return topic(name, "authority", func(r *LPMintRedeem) (string, error) { return r.Authority, nil }), true
	case TopicNewUsers:
		return topic(name, "userAuthority", func(r *NewUser) (string, error) { return r.UserAuthority, nil }), true
	case TopicMarketStates:
		return topic(name, "marketIndex", func(r *MarketState) (string, error) { return idx(r.MarketIndex), nil }), true
	case TopicAccountSnapshots:
		return topic(name, "authority", func(r *AccountSnapshot) (string, error) { return r.Authority, nil }), true
	case TopicVaults:
		return topic(name, "", func(*Vault) (string, error) { return "", nil }), true
	case TopicParams:
		return topic(name, "", func(*Params) (string, error) { return "", nil }), true
	case TopicEdgeCandles, TopicEdgeMarkets, TopicEdgePricing:
		return Topic{Name: name, Key: "symbol"}, true
	case TopicEdgeNotifications:
		return Topic{Name: name, Key: "authorityId"}, true
	}
	return Topic{}, false
}

// topic builds a protocol topic for record type T from its key function.
func topic[T any, P interface {
	*T
	Record
}](name, key string, keyOf func(P) (string, error)) Topic {
	return Topic{
		Name: name,
		Key:  key,
		New:  func() Record { return P(new(T)) },
		route: func(r Record) (string, error) {
			p, ok := r.(P)
			if !ok || p == nil {
				return "", fmt.Errorf("%s carries %T records, not %T", name, P(nil), r)
			}
			return keyOf(p)
		},
	}
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Decode parses a message value of a protocol topic strictly (unknown fields, trailing data and type
// mismatches are errors) and validates the record. The error text is meant as a dead-letter reason.
func Decode(topic string, value []byte) (Record, error) {
	return decodeTopic(topic, value, decodeRecord, time.Now())
}

// DecodeOwned is Decode for a value handed over to the record: its strings share value's memory, so
// value must never change afterwards. It saves copying the message's strings, which would otherwise
// be most of what decoding a fill allocates. A consumer's message values
// qualify: kafka-go allocates each one, and the consumer only reads it.
func DecodeOwned(topic string, value []byte) (Record, error) {
	return DecodeOwnedAt(topic, value, time.Now())
}

// DecodeOwnedAt is DecodeOwned validating against now: a consumer reads its clock once for many
// messages (a record's time may lie up to MaxClockSkew ahead of it, so a clock some milliseconds old
// judges alike), rather than once per message for records that take little more to decode.
func DecodeOwnedAt(topic string, value []byte, now time.Time) (Record, error) {
	return decodeTopic(topic, value, decodeRecordOwned, now)
}

// decodeTopic is Decode with the JSON decoder as a parameter, so that tests and benchmarks can run
// the encoding/json path (decodeStd) beside the fast one.
func decodeTopic(topic string, value []byte, decode func([]byte, Record) error, now time.Time) (Record, error) {
	t, ok := TopicByName(topic)
	if !ok {
		return nil, fmt.Errorf("unknown topic %q", topic)
	}
	if t.Edge() {
		return nil, fmt.Errorf("%s carries no protocol record", topic)
	}
	r := t.New()
	if err := decode(value, r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", topic, err)
	}
	if err := r.ValidateAt(now); err != nil {
		return nil, fmt.Errorf("%s: %w", topic, err)
	}
	if _, err := t.route(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Encode validates r and encodes it for topic, keyed by the topic's key field and with the
// event-type and schema-version headers.
func Encode(topic string, r Record) (Message, error) {
	t, ok := TopicByName(topic)
	if !ok {
		return Message{}, fmt.Errorf("unknown topic %q", topic)
	}
	if t.Edge() {
		return Message{}, fmt.Errorf("%s carries no protocol record: use NewMessage", topic)
	}
	key, err := t.route(r)
	if err != nil {
		return Message{}, err
	}
	if t.Key != "" && key == "" {
		return Message{}, fmt.Errorf("%s: %s record has no %s to key it by", topic, r.EventType(), t.Key)
	}
	if err := r.Validate(); err != nil {
		return Message{}, fmt.Errorf("%s: %w", topic, err)
	}
	return NewMessage(topic, key, r.EventType(), r)
}

// NewMessage encodes any value v as JSON with the standard headers; the edge topics' producers use it
// for their own payloads. An empty key leaves the message unkeyed.
func NewMessage(topic, key, eventType string, v any) (Message, error) {
	if topic == "" || eventType == "" || strings.TrimSpace(eventType) != eventType {
		return Message{}, fmt.Errorf("message needs a topic and an event type (got %q, %q)", topic, eventType)
	}
	value, err := json.Marshal(v)
	if err != nil {
		return Message{}, fmt.Errorf("encode %s %s: %w", topic, eventType, err)
	}
	m := Message{
		Topic:   topic,
		Value:   value,
		Headers: map[string]string{HeaderEventType: eventType, HeaderSchemaVersion: SchemaVersion},
	}
	if key != "" {
		m.Key = []byte(key)
	}
	return m, nil
}

// DLQTopic is where a consumer sends the messages of topic it cannot decode or store.
func DLQTopic(topic string) string { return topic + ".dlq" }
