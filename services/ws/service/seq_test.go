package service_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/kit/kittest"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// TestSeqAcrossReplicas: two replicas warmed from numbered snapshots give every channel's init the
// snapshot's seq and each message after it one more, the same seq for the same message on both, for
// candle creates and updates, markets, pricing and notifications; a client that leaves one replica
// and resumes on the other with since gets exactly what it missed, numbered on from there.
func TestSeqAcrossReplicas(t *testing.T) {
	kc := wstest.Broker(t, 3)
	alice := wstest.Key(1)
	warm := wstest.CandleChange(solPerp, "1", 1795100340, 150, 2, false, "41")
	url := wstest.Snapshot(t, map[string]func() (int, any){
		mesh.EdgeCandles: func() (int, any) {
			return http.StatusOK, wstest.Numbered{Data: []any{warm.Value.(market.EdgeCandleMessage).Candle},
				Seqs: map[string]int64{"candle:SOL-PERP:1": 40}}
		},
		mesh.EdgeMarkets: func() (int, any) {
			return http.StatusOK, wstest.Numbered{Data: []any{wstest.MarketSummary(solPerp, 0, "1").Value},
				Seqs: map[string]int64{"markets:summary": 7}}
		},
		mesh.EdgePricing: func() (int, any) {
			return http.StatusOK, wstest.Numbered{Data: []any{}, Seqs: map[string]int64{}} // nothing published yet
		},
	})
	cfg := service.Config{MarketURL: url, StatsURL: url}
	replicas := []*wstest.Edge{wstest.Start(t, kc, cfg, true), wstest.Start(t, kc, cfg, true)}
	p := wstest.NewProducer(t, kc)
	p.SetSeq("candle:SOL-PERP:1", 40)
	p.SetSeq("markets:summary", 7)
	p.SetSeq("notifications:"+alice, 12)

	subs := []struct {
		msg, channel string
		init         int64 // the seq of the init (-1: no init, notifications); the ack's too
	}{
		{`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`, "candle:SOL-PERP:1", 40},
		{`{"type":"subscribe","channelType":"markets"}`, "markets:summary", 7},
		{`{"type":"subscribe","channelType":"pricing"}`, "pricing", 0},
	}
	conns := make([]*wstest.Conn, len(replicas))
	for i, e := range replicas {
		c := wstest.Dial(t, e.URL)
		for _, s := range subs {
			c.Send(s.msg)
			if ack := c.Expect("subscription", s.channel); ack.Seq != s.init {
				t.Errorf("replica %d: ack %s, want seq %d", i, ack.Raw, s.init)
			}
			if init := c.Expect("init", s.channel); init.Seq != s.init || string(init.Data) == "null" && s.channel != "pricing" {
				t.Errorf("replica %d: init %s, want seq %d", i, init.Raw, s.init)
			}
		}
		conns[i] = c
	}
	// A notification of alice reaches both replicas before anyone subscribes: they know her channel.
	p.Produce(events.TopicEdgeNotifications, "notification", wstest.Notification(alice, "n13", "first"))
	for i, e := range replicas {
		kittest.Eventually(t, 10*time.Second, fmt.Sprintf("replica %d has the notification", i), func() bool {
			return e.Metric(t, "ws_edge_messages_total") >= 1
		})
		conns[i].Send(`{"type":"subscribe","channelType":"notifications","authority":"` + alice + `"}`)
		if ack := conns[i].Expect("subscription", "notifications:"+alice); ack.Seq != 13 {
			t.Errorf("replica %d: notifications ack %s, want seq 13", i, ack.Raw)
		}
	}

	// One of each: candle update, a create of the next bucket, updates of it, markets, pricing,
	// notifications; every replica's client reads them all.
	produce := func(round int) {
		p.Produce(events.TopicEdgeCandles, "candle",
			wstest.CandleChange(solPerp, "1", 1795100340, float64(150+round), 2, false, fmt.Sprint(100+round)),
			wstest.CandleChange(solPerp, "1", 1795100400+60*int64(round), float64(150+round), 1, true, fmt.Sprint(200+round)))
		p.Produce(events.TopicEdgeMarkets, "marketSummary", wstest.MarketSummary(solPerp, 0, fmt.Sprint(round)))
		p.Produce(events.TopicEdgePricing, "pricing", wstest.Pricing(solPerp, 0, fmt.Sprint(round), int64(round)))
		p.Produce(events.TopicEdgeNotifications, "notification", wstest.Notification(alice, fmt.Sprint("n", 20+round), "n"))
	}
	// channelOf names the channel of a server message (candle changes carry none: the only candle
	// channel subscribed).
	channelOf := func(m wstest.Msg) string {
		if m.Channel == "" {
			return "candle:SOL-PERP:1"
		}
		return m.Channel
	}
	want := map[string]int64{"candle:SOL-PERP:1": 40, "markets:summary": 7, "pricing": 0, "notifications:" + alice: 13}
	const rounds = 3
	for r := range rounds {
		produce(r)
	}
	perMessage := 2 + 1 + 1 + 1
	seen := make([]map[string][]int64, len(replicas))
	for i, c := range conns {
		seen[i] = map[string][]int64{}
		last := map[string]int64{}
		for k, v := range want {
			last[k] = v
		}
		for range rounds * perMessage {
			m := c.Next()
			ch := channelOf(m)
			if m.Seq != last[ch]+1 {
				t.Errorf("replica %d: %s at seq %d after %d, want one more", i, ch, m.Seq, last[ch])
			}
			last[ch] = m.Seq
			seen[i][ch] = append(seen[i][ch], m.Seq)
			if ch == "candle:SOL-PERP:1" {
				if wantType := []string{"update", "create"}[(len(seen[i][ch])-1)%2]; m.Type != wantType {
					t.Errorf("replica %d: candle message %s, want %s", i, m.Raw, wantType)
				}
			}
		}
		c.Quiet(100 * time.Millisecond)
	}
	if fmt.Sprint(seen[0]) != fmt.Sprint(seen[1]) {
		t.Errorf("the replicas numbered the same messages differently:\n%v\n%v", seen[0], seen[1])
	}

	// The first replica's client leaves after 43 (its last candle message was 46), more comes, it
	// resumes on the second replica from 43.
	conns[0].Close()
	produce(rounds)
	kittest.Eventually(t, 10*time.Second, "the second replica has the last round", func() bool {
		return replicas[1].Metric(t, "ws_edge_messages_total") >= float64(1+(rounds+1)*perMessage)
	})
	c := wstest.Dial(t, replicas[1].URL)
	c.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1","since":43}`)
	if ack := c.Expect("subscription", "candle:SOL-PERP:1"); ack.Resumed == nil || !*ack.Resumed || ack.Seq != 48 {
		t.Fatalf("ack %s, want resumed at 48", ack.Raw)
	}
	for want := int64(44); want <= 48; want++ {
		if m := c.Next(); m.Seq != want {
			t.Fatalf("replayed %s, want seq %d", m.Raw, want)
		}
	}
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 1, 1, false, "9"))
	if m := c.Next(); m.Seq != 49 {
		t.Fatalf("live after the replay: %s, want seq 49", m.Raw)
	}
	// A since from before the snapshot the replicas started from is older than the window: an init.
	c.Send(`{"type":"subscribe","channelType":"markets","since":3}`)
	if ack := c.Expect("subscription", "markets:summary"); ack.Resumed == nil || *ack.Resumed || ack.Seq != 7+rounds+1 {
		t.Fatalf("ack %s, want not resumed, at %d", ack.Raw, 7+rounds+1)
	}
	c.Expect("init", "markets:summary")
}

// TestCandleInitFetchesWhatTheSnapshotLacked is the init: the edge warmed while the market
// service had no candles yet (it was loading its history), and learned of SOL-PERP from the markets
// channel; a candle subscription then fetches SOL-PERP's snapshot from the market service before it
// answers, and its init carries the candle and the channel's seq. Without a market service to ask,
// the init says what the edge has.
func TestCandleInitFetchesWhatTheSnapshotLacked(t *testing.T) {
	kc := wstest.Broker(t, 1)
	var loaded atomic.Bool
	var fetches atomic.Int32
	candle := wstest.CandleChange(solPerp, "1", 1795100340, 150, 2, false, "41").Value.(market.EdgeCandleMessage).Candle
	url := wstest.Snapshot(t, map[string]func() (int, any){
		mesh.EdgeCandles: func() (int, any) {
			fetches.Add(1)
			if !loaded.Load() {
				return http.StatusOK, wstest.Numbered{Data: []any{}, Seqs: map[string]int64{}}
			}
			return http.StatusOK, wstest.Numbered{Data: []any{candle}, Seqs: map[string]int64{"candle:SOL-PERP:1": 5}}
		},
		mesh.EdgeMarkets: func() (int, any) {
			return http.StatusOK, wstest.Numbered{Data: []any{wstest.MarketSummary(solPerp, 0, "1").Value}, Seqs: map[string]int64{"markets:summary": 1}}
		},
		mesh.EdgePricing: func() (int, any) { return http.StatusOK, wstest.Numbered{Data: []any{}, Seqs: map[string]int64{}} },
	})
	e := wstest.Start(t, kc, service.Config{MarketURL: url, StatsURL: url}, true)
	loaded.Store(true) // the history is in now
	before := fetches.Load()

	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`)
	if ack := c.Expect("subscription", "candle:SOL-PERP:1"); ack.Seq != 5 {
		t.Errorf("ack %s, want seq 5", ack.Raw)
	}
	init := c.Expect("init", "candle:SOL-PERP:1")
	if !same(t, init.Data, candle) || init.Seq != 5 {
		t.Fatalf("init %s, want the market service's candle at seq 5", init.Raw)
	}
	if n := fetches.Load() - before; n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
	p := wstest.NewProducer(t, kc)
	p.SetSeq("candle:SOL-PERP:1", 5)
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 151, 3, false, "42"))
	if m := c.Expect("update", ""); m.Seq != 6 {
		t.Errorf("first update %s, want seq 6", m.Raw)
	}
	// Known now: another subscription is answered without asking again.
	c2 := wstest.Dial(t, e.URL)
	c2.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`)
	c2.Expect("subscription", "")
	if init := c2.Expect("init", ""); init.Seq != 6 || string(init.Data) == "null" {
		t.Errorf("second init %s, want seq 6", init.Raw)
	}
	if n := fetches.Load() - before; n != 1 {
		t.Errorf("%d fetches after a second subscription, want still 1", n)
	}
}
