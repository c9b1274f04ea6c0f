// Package e2e_test runs the edge on the market service's real output: fills ingested by the market
// service, its candle changes published through its outbox to edge.candles, its snapshot route
// warming the edge.
package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/market"
	marketsvc "github.com/tidemark/tidemark/services/market/service"
	"github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }

// start starts svc on a stack whose broker has the edge's topics too.
func start(t *testing.T, svc kit.Service) *kittest.Stack {
	t.Helper()
	s := kittest.Up(t, kittest.Options{}, svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, s.Kafka.Brokers, 3, service.Topics()...); err != nil {
		t.Fatal(err)
	}
	return s
}

// published is the number of messages on topic, all its partitions together; -1 when the broker
// does not say.
func published(t *testing.T, s *kittest.Stack, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := s.Kafka.EndOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	var n int64
	for _, off := range ends[topic] {
		n += off
	}
	return n
}

// TestCandlesFromTheMarketService: the init is the candle the market's candles route serves, and each
// fill ingested after comes as the market published it: an update of the bucket with its trade, then
// a create for the next bucket's first trade.
func TestCandlesFromTheMarketService(t *testing.T) {
	s := start(t, marketsvc.Service(marketsvc.Config{}))
	t0 := kittest.DefaultNow.Unix() - 300 // recent: the market publishes changes of the last 15 minutes
	bucket := t0 - t0%60
	s.Ingest(t, kittest.Encode(t, events.TopicFills, kittest.Fill(kittest.SOLPerp, bucket+1, 1, 150_000_000, 1_000_000_000, 149_500_000))...)
	// The edge starts after the market published that fill's changes (one per resolution): they are
	// in the snapshot, not in what the edge reads.
	kittest.Eventually(t, 30*time.Second, "the first fill's candle changes published", func() bool {
		return published(t, s, events.TopicEdgeCandles) == int64(len(market.Resolutions()))
	})
	e := wstest.Start(t, s.Kafka, service.Config{MarketURL: s.InternalServer(t, "market").URL}, true)

	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`)
	c.Expect("subscription", "candle:SOL-PERP:1")
	init := c.Expect("init", "candle:SOL-PERP:1")
	var rest struct {
		Records []market.Candle `json:"records"`
	}
	s.GetJSON(t, fmt.Sprintf("/market/SOL-PERP/candles/1?limit=1&startTs=%d", bucket), 200, &rest)
	var got market.EdgeCandle
	if err := json.Unmarshal(init.Data, &got); err != nil || len(rest.Records) != 1 || got.Candle != rest.Records[0] ||
		got.LastFillRecordID == nil || *got.LastFillRecordID != "1" {
		t.Fatalf("init %s, candles route %+v", init.Data, rest.Records)
	}
	// The snapshot includes the channel's first message: the init is at 1, the changes follow at 2, 3.
	if init.Seq != 1 {
		t.Errorf("init seq %d, want 1", init.Seq)
	}

	s.Ingest(t, kittest.Encode(t, events.TopicFills,
		kittest.Fill(kittest.SOLPerp, bucket+10, 2, 303_000_000, 2_000_000_000, 151_000_000))...)
	s.Ingest(t, kittest.Encode(t, events.TopicFills,
		kittest.Fill(kittest.SOLPerp, bucket+70, 3, 152_000_000, 1_000_000_000, 152_000_000))...)
	for _, want := range []struct {
		typ   string
		ts    int64
		close float64
		fill  string
	}{{"update", bucket, 151.5, "2"}, {"create", bucket + 60, 152, "3"}} {
		m := c.Expect(want.typ, "")
		if m.Seq != init.Seq+1 {
			t.Errorf("%s at seq %d after %d", want.typ, m.Seq, init.Seq)
		}
		init.Seq = m.Seq
		var ch market.EdgeCandle
		var trades []market.EdgeTrade
		if json.Unmarshal(m.Candle, &ch) != nil || json.Unmarshal(m.Trades, &trades) != nil || ch.Ts != want.ts ||
			ch.FillClose != want.close || len(trades) != 1 || trades[0].FillRecordID != want.fill {
			t.Fatalf("got %s, want %s of %d closing at %v with fill %s", m.Raw, want.typ, want.ts, want.close, want.fill)
		}
	}
}

// TestCandleInitOfHistoryLoadedAfterStart is the init of a market whose candles the edge did not
// warm: the market service held none when the edge took its snapshot (its history was still being
// loaded, and history is too old to be published to edge.candles). The subscription fetches that
// market's snapshot before it answers, so the init carries the newest candle, not null.
func TestCandleInitOfHistoryLoadedAfterStart(t *testing.T) {
	s := start(t, marketsvc.Service(marketsvc.Config{}))
	e := wstest.Start(t, s.Kafka, service.Config{MarketURL: s.InternalServer(t, "market").URL}, true)

	old := kittest.DefaultNow.Unix() - 3*86400 // outside the edge window: stored, never published
	s.Ingest(t, kittest.Encode(t, events.TopicFills,
		kittest.Fill(kittest.SOLPerp, old, 1, 150_000_000, 1_000_000_000, 149_500_000),
		kittest.Fill(kittest.SOLPerp, old+90, 2, 152_000_000, 1_000_000_000, 151_000_000))...)

	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`)
	ack := c.Expect("subscription", "candle:SOL-PERP:1")
	init := c.Expect("init", "candle:SOL-PERP:1")
	var got market.EdgeCandle
	if err := json.Unmarshal(init.Data, &got); err != nil || got.Ts != old+90-(old+90)%60 || got.FillClose != 152 {
		t.Fatalf("init %s, want the candle of fill 2", init.Raw)
	}
	if ack.Seq != 0 || init.Seq != 0 {
		t.Errorf("ack seq %d, init seq %d: nothing was published, want 0", ack.Seq, init.Seq)
	}
	// Every resolution of it too, from the same fetch.
	c.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"D"}`)
	c.Expect("subscription", "candle:SOL-PERP:D")
	if init := c.Expect("init", "candle:SOL-PERP:D"); string(init.Data) == "null" {
		t.Fatalf("daily init %s", init.Raw)
	}
	// A market that has never traded is still unknown.
	c.Send(`{"type":"subscribe","channelType":"candle","symbol":"BTC-PERP","resolution":"1"}`)
	c.Expect("error", "")
}
