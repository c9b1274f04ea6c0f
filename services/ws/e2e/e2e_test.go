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
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/services/market"
	marketsvc "github.com/tidemark/tidemark/services/market/service"
	"github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

var pgServer *pglocal.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pgServer)) }

// TestCandlesFromTheMarketService: the init is the candle the market's candles route serves, and each
// fill ingested after comes as the market published it: an update of the bucket with its trade, then
// a create for the next bucket's first trade.
func TestCandlesFromTheMarketService(t *testing.T) {
	s := kittest.Start(t, pgServer, kittest.Options{}, marketsvc.Service(marketsvc.Config{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, s.Kafka.Brokers, 3, service.Topics()...); err != nil {
		t.Fatal(err)
	}
	t0 := kittest.DefaultNow.Unix() - 300 // recent: the market publishes changes of the last 15 minutes
	bucket := t0 - t0%60
	s.Ingest(t, kittest.Encode(t, events.TopicFills, kittest.Fill(kittest.SOLPerp, bucket+1, 1, 150_000_000, 1_000_000_000, 149_500_000))...)
	// The edge starts after the market published that fill's changes (one per resolution): they are
	// in the snapshot, not in what the edge reads.
	wstest.Eventually(t, 30*time.Second, "the first fill's candle changes published", func() bool {
		ends, err := s.Kafka.EndOffsets(ctx, events.TopicEdgeCandles)
		var n int64
		for _, off := range ends[events.TopicEdgeCandles] {
			n += off
		}
		return err == nil && n == int64(len(market.Resolutions()))
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
		var ch market.EdgeCandle
		var trades []market.EdgeTrade
		if json.Unmarshal(m.Candle, &ch) != nil || json.Unmarshal(m.Trades, &trades) != nil || ch.Ts != want.ts ||
			ch.FillClose != want.close || len(trades) != 1 || trades[0].FillRecordID != want.fill {
			t.Fatalf("got %s, want %s of %d closing at %v with fill %s", m.Raw, want.typ, want.ts, want.close, want.fill)
		}
	}
}
