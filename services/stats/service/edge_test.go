package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/stats"
)

// edgeLog collects what the service publishes to the edge topics.
type edgeLog struct {
	mu   sync.Mutex
	msgs []kafkago.Message
}

// symbolOf is the market an edge message is of (the key is the channel, the same for all).
func symbolOf(m kafkago.Message) string {
	var k struct{ Symbol string }
	_ = json.Unmarshal(m.Value, &k)
	return k.Symbol
}

func (l *edgeLog) of(topic, symbol string) []kafkago.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []kafkago.Message
	for _, m := range l.msgs {
		if m.Topic == topic && symbolOf(m) == symbol {
			out = append(out, m)
		}
	}
	return out
}

// latest is the newest value published to topic for every market.
func (l *edgeLog) latest(topic string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for _, m := range l.msgs {
		if m.Topic == topic {
			out[symbolOf(m)] = string(m.Value)
		}
	}
	return out
}

func follow(t *testing.T, kc kafka.Config) *edgeLog {
	t.Helper()
	log := &edgeLog{}
	r := kc.NewReader(t.Name()+"-edge", []string{events.TopicEdgeMarkets, events.TopicEdgePricing})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				return
			}
			log.mu.Lock()
			log.msgs = append(log.msgs, m)
			log.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = r.Close()
	})
	return log
}

// snapshotRoute is the internal route that serves the snapshot of each edge topic stats publishes.
var snapshotRoute = map[string]string{events.TopicEdgeMarkets: mesh.EdgeMarkets, events.TopicEdgePricing: mesh.EdgePricing}

// snapshotOf is GET snapshotRoute[topic] of the internal port, by symbol.
func snapshotOf(t *testing.T, base, topic string) map[string]string {
	t.Helper()
	out, _ := snapshotWithSeqs(t, base, topic)
	return out
}

// snapshotWithSeqs is GET snapshotRoute[topic] of the internal port, by symbol, and its seqs.
func snapshotWithSeqs(t *testing.T, base, topic string) (map[string]string, map[string]int64) {
	t.Helper()
	a := kittest.Fetch(t, http.MethodGet, base+snapshotRoute[topic])
	var body struct {
		Success bool
		Data    []json.RawMessage
		Seqs    map[string]int64
	}
	if err := json.Unmarshal(a.Body, &body); err != nil || !body.Success || a.Status != http.StatusOK {
		t.Fatalf("snapshot of %s: %d %v", topic, a.Status, err)
	}
	out := map[string]string{}
	for _, d := range body.Data {
		var k struct{ Symbol string }
		if err := json.Unmarshal(d, &k); err != nil {
			t.Fatal(err)
		}
		out[k.Symbol] = string(d)
	}
	return out, body.Seqs
}

// TestEdgePublications: after the commits that change them, each market's summary goes to
// edge.markets and its pricing to edge.pricing, as /stats/markets serves them; a burst of changes is
// published at most once a second per market, the last change always; the internal snapshots are the
// last publications.
func TestEdgePublications(t *testing.T) {
	s := start(t)
	log := follow(t, s.Kafka)
	internal := s.InternalServer(t, "stats")

	feed(t, s, streamMessages(t)...)
	kittest.Eventually(t, 20*time.Second, "SOL-PERP's summary", func() bool {
		return len(log.of(events.TopicEdgeMarkets, "SOL-PERP")) > 0 && len(log.of(events.TopicEdgePricing, "SOL-PERP")) > 0
	})
	// What was published is what the API serves: the summary exactly as /stats/markets lists it.
	served := map[string]string{}
	var list struct{ Records []json.RawMessage }
	s.GetJSON(t, "/stats/markets", http.StatusOK, &list)
	for _, r := range list.Records {
		var k struct{ Symbol string }
		_ = json.Unmarshal(r, &k)
		served[k.Symbol] = string(r)
	}
	kittest.Eventually(t, 20*time.Second, "every market's summary as served", func() bool {
		got := log.latest(events.TopicEdgeMarkets)
		for sym, v := range served {
			if got[sym] != v {
				return false
			}
		}
		return len(got) == len(served)
	})
	m := log.of(events.TopicEdgeMarkets, "SOL-PERP")[0]
	if h, _ := kafka.Header(m, events.HeaderEventType); h != "marketSummary" {
		t.Errorf("event type %q", h)
	}
	var pricing map[string]any
	if err := json.Unmarshal(log.of(events.TopicEdgePricing, "SOL-PERP")[0].Value, &pricing); err != nil {
		t.Fatal(err)
	}
	var fields []string
	for k := range pricing {
		fields = append(fields, k)
	}
	slices.Sort(fields)
	if want := []string{"markPrice", "markPriceSlot", "marketIndex", "marketType", "oraclePrice", "oraclePriceSlot", "price", "symbol"}; !slices.Equal(fields, want) {
		t.Errorf("pricing fields %v, want %v", fields, want)
	}

	// A burst: ten oracle moves of SOL-PERP, each in a commit of its own, within about a second.
	before := len(log.of(events.TopicEdgePricing, "SOL-PERP"))
	start := time.Now()
	var last int64
	for i := range 10 {
		last = 156*usd + int64(i)*10_000
		feed(t, s, encode(t, events.TopicMarketStates, perpState(kittest.SOLPerp, nowS, 300_000_000+nowS+200+int64(i), last, last+100_000))...)
	}
	kittest.Eventually(t, 20*time.Second, "the burst's last oracle price", func() bool {
		var p stats.Pricing
		all := log.of(events.TopicEdgePricing, "SOL-PERP")
		return json.Unmarshal(all[len(all)-1].Value, &p) == nil && p.OraclePrice == events.NewAmount(last)
	})
	elapsed := time.Since(start)
	burst := log.of(events.TopicEdgePricing, "SOL-PERP")[before:]
	if max := int(elapsed/time.Second) + 2; len(burst) > max {
		t.Errorf("%d publications of SOL-PERP in %s, want at most %d", len(burst), elapsed, max)
	}
	for i := 1; i < len(burst); i++ {
		// The publisher commits a market at most once a second; the outbox, woken at once, writes
		// it within moments.
		if gap := burst[i].Time.Sub(burst[i-1].Time); gap < 800*time.Millisecond {
			t.Errorf("publications %d and %d of SOL-PERP %s apart", i-1, i, gap)
		}
	}

	// The snapshots an edge replica warms from are the last publications.
	for _, topic := range []string{events.TopicEdgeMarkets, events.TopicEdgePricing} {
		name := topic[len("edge."):]
		kittest.Eventually(t, 20*time.Second, "the "+name+" snapshot to be the last publications", func() bool {
			got, want := snapshotOf(t, internal.URL, topic), log.latest(topic)
			if len(got) != len(want) {
				return false
			}
			for k, v := range want {
				if got[k] != v {
					return false
				}
			}
			return true
		})
	}

	// A restarted service publishes what changes, and nothing that has not: BTC-PERP's first state
	// sample is published, SOL-PERP is not published again.
	n := len(log.of(events.TopicEdgeMarkets, "SOL-PERP"))
	s.Restart(t, "stats", false)
	feed(t, s, encode(t, events.TopicMarketStates, perpState(kittest.BTCPerp, nowS, 300_000_000+nowS+500, 61_000*usd, 61_001*usd))...)
	kittest.Eventually(t, 20*time.Second, "BTC-PERP's new oracle", func() bool {
		all := log.of(events.TopicEdgePricing, "BTC-PERP")
		var p stats.Pricing
		return len(all) > 0 && json.Unmarshal(all[len(all)-1].Value, &p) == nil && p.OraclePrice == events.NewAmount(61_000*usd)
	})
	if got := len(log.of(events.TopicEdgeMarkets, "SOL-PERP")); got != n {
		t.Errorf("%d publications of SOL-PERP after a restart with nothing new for it, want %d", got, n)
	}

	// Each topic is one channel, keyed by it: its messages are numbered 1, 2, 3... in the order they
	// are read, across the restart, and the snapshot is current to the last number.
	for topic, channel := range map[string]string{events.TopicEdgeMarkets: events.MarketsChannel, events.TopicEdgePricing: events.PricingChannel} {
		kittest.Eventually(t, 20*time.Second, "the "+topic+" snapshot to be current to the last message", func() bool {
			log.mu.Lock()
			var msgs []kafkago.Message
			for _, m := range log.msgs {
				if m.Topic == topic {
					msgs = append(msgs, m)
				}
			}
			log.mu.Unlock()
			_, seqs := snapshotWithSeqs(t, internal.URL, topic)
			return seqs[channel] == int64(len(msgs))
		})
		log.mu.Lock()
		var i int64
		for _, m := range log.msgs {
			if m.Topic != topic {
				continue
			}
			i++
			c, _ := kafka.Header(m, events.HeaderEdgeChannel)
			seq, _ := kafka.Header(m, events.HeaderEdgeSeq)
			if string(m.Key) != channel || c != channel || seq != fmt.Sprint(i) {
				t.Errorf("%s message %d: key %q channel %q seq %q", topic, i, m.Key, c, seq)
			}
		}
		log.mu.Unlock()
	}
}
