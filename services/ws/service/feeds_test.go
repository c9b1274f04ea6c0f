package service_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

func symbolsOf(t *testing.T, data json.RawMessage) []string {
	t.Helper()
	var items []struct {
		Symbol string `json:"symbol"`
		Price  string `json:"price"`
	}
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatalf("data %s: %v", data, err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Symbol + "@" + it.Price
	}
	return out
}

// TestMarketsAndPricing: each channel's init is every market's latest object (the snapshot, then
// what the topic changed), then one update per changed market, data an array of that one market.
func TestMarketsAndPricing(t *testing.T) {
	kc := wstest.Broker(t, 3)
	cfg := snapshots{
		markets: []wstest.KV{wstest.MarketSummary(solPerp, 0, "150000000"), wstest.MarketSummary("BTC-PERP", 1, "60000000000")},
		pricing: []wstest.KV{wstest.Pricing(solPerp, 0, "150000000", 100), wstest.Pricing("BTC-PERP", 1, "60000000000", 100)},
	}.serve(t)
	e := wstest.Start(t, kc, cfg, true)
	p := wstest.NewProducer(t, kc)
	for _, tt := range []struct {
		channelType, channel, topic string
		kv                          func(sym string, i int, price string) wstest.KV
	}{
		{"markets", "markets:summary", events.TopicEdgeMarkets, wstest.MarketSummary},
		{"pricing", "pricing", events.TopicEdgePricing, func(s string, i int, p string) wstest.KV { return wstest.Pricing(s, i, p, 200) }},
	} {
		t.Run(tt.channelType, func(t *testing.T) {
			c := wstest.Dial(t, e.URL)
			c.Send(map[string]string{"type": "subscribe", "channelType": tt.channelType})
			if ack := c.Expect("subscription", tt.channel); ack.ChannelType != tt.channelType || ack.Symbol != "" {
				t.Errorf("ack = %s", ack.Raw)
			}
			init := c.Expect("init", tt.channel)
			if got := fmt.Sprint(symbolsOf(t, init.Data)); got != "[SOL-PERP@150000000 BTC-PERP@60000000000]" {
				t.Errorf("init data = %s", got)
			}
			p.Produce(tt.topic, tt.channelType, tt.kv(solPerp, 0, "151000000"), tt.kv("ETH-PERP", 2, "3000000000"),
				tt.kv(solPerp, 0, "152000000"))
			// Markets of different partitions interleave; each market's updates come in order.
			var got []string
			for range 3 {
				m := c.Expect("update", tt.channel)
				items := symbolsOf(t, m.Data)
				if m.ChannelType != tt.channelType || len(items) != 1 {
					t.Fatalf("update = %s", m.Raw)
				}
				if items[0] != "ETH-PERP@3000000000" {
					got = append(got, items[0])
				}
			}
			if fmt.Sprint(got) != "[SOL-PERP@151000000 SOL-PERP@152000000]" {
				t.Errorf("SOL-PERP updates %v", got)
			}
			// The next init has every market as the updates left it; ETH-PERP joins at the end.
			c2 := wstest.Dial(t, e.URL)
			c2.Send(map[string]string{"type": "subscribe", "channelType": tt.channelType})
			c2.Expect("subscription", tt.channel)
			if got := fmt.Sprint(symbolsOf(t, c2.Expect("init", tt.channel).Data)); got != "[SOL-PERP@152000000 BTC-PERP@60000000000 ETH-PERP@3000000000]" {
				t.Errorf("second init data = %s", got)
			}
		})
	}
}

// TestNotifications: no init, then one update per notification of the authority subscribed, none of
// another's.
func TestNotifications(t *testing.T) {
	kc := wstest.Broker(t, 3)
	e := wstest.Start(t, kc, snapshots{}.serve(t), true)
	alice, bob := wstest.Key(11), wstest.Key(12)
	c := wstest.Dial(t, e.URL)
	c.Send(map[string]string{"type": "subscribe", "channelType": "notifications", "authority": alice})
	ack := c.Expect("subscription", "notifications:"+alice)
	if ack.Message != "Subscribed to notifications" {
		t.Errorf("ack = %s", ack.Raw)
	}
	p := wstest.NewProducer(t, kc)
	p.Produce(events.TopicEdgeNotifications, "notification", wstest.Notification(bob, "n1", "for bob"),
		wstest.Notification(alice, "n2", "first"), wstest.Notification(alice, "n3", "second"))
	for _, want := range []string{"n2", "n3"} {
		m := c.Expect("update", "notifications:"+alice)
		var n struct {
			NotificationID string `json:"notificationId"`
		}
		if err := json.Unmarshal(m.Data, &n); err != nil || n.NotificationID != want || m.ChannelType != "notifications" {
			t.Errorf("notification = %s, want %s", m.Raw, want)
		}
	}
	c.Quiet(200 * time.Millisecond)
}

// TestErrors: every message the server cannot process is answered with an error that says what was
// wrong, and a subscribe on the same connection succeeds after it.
func TestErrors(t *testing.T) {
	kc := wstest.Broker(t, 1)
	cfg := snapshots{candles: []wstest.KV{wstest.CandleChange(solPerp, "1", 1795100340, 150, 2, false, "41")}}.serve(t)
	cfg.Hub.MaxSubscriptions = 3
	cfg.Hub.MaxMessageBytes = 512
	// The hub's clock runs ahead of the wall clock by skew: the rate case moves it on instead of
	// waiting for the bucket to refill.
	var skew atomic.Int64
	cfg.Hub.Clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	e := wstest.Start(t, kc, cfg, true)
	tests := []struct {
		name string
		send func(c *wstest.Conn)
		want string
	}{
		{"not JSON", func(c *wstest.Conn) { c.Send("hello") }, "not a JSON object"},
		{"binary frame", func(c *wstest.Conn) {
			_ = c.WriteMessage(websocket.BinaryMessage, []byte(`{"type":"subscribe","channelType":"markets"}`))
		}, "binary frames are not accepted"},
		{"unknown type", func(c *wstest.Conn) { c.Send(`{"type":"subscribed"}`) }, `unknown message type "subscribed"`},
		{"malformed channelType", func(c *wstest.Conn) { c.Send(`{"type":"subscribe","channelType":7}`) }, "channelType must be a string"},
		{"unknown channelType", func(c *wstest.Conn) { c.Send(`{"type":"subscribe","channelType":"trades"}`) }, `unknown channel type "trades"`},
		{"orderbook", func(c *wstest.Conn) { c.Send(`{"type":"subscribe","channelType":"orderbook","symbol":"SOL-PERP"}`) }, "orderbook is reserved"},
		{"user", func(c *wstest.Conn) {
			c.Send(`{"type":"subscribe","channelType":"user","accountId":"` + wstest.Key(3) + `"}`)
		}, "user is reserved"},
		{"unknown symbol", func(c *wstest.Conn) {
			c.Send(`{"type":"subscribe","channelType":"candle","symbol":"DOGE-PERP","resolution":"1"}`)
		},
			`unknown symbol "DOGE-PERP"`},
		{"unknown resolution", func(c *wstest.Conn) {
			c.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"3"}`)
		},
			`unknown resolution "3"`},
		{"bad authority", func(c *wstest.Conn) { c.Send(`{"type":"subscribe","channelType":"notifications","authority":"me"}`) },
			"not a wallet address"},
		{"malformed since", func(c *wstest.Conn) { c.Send(`{"type":"subscribe","channelType":"markets","since":"last"}`) }, "since"},
		{"too large", func(c *wstest.Conn) {
			c.Send(`{"type":"subscribe","channelType":"markets","pad":"` + strings.Repeat("x", 600) + `"}`)
		}, "message exceeds 512 bytes"},
		{"too many subscriptions", func(c *wstest.Conn) {
			auths := []string{wstest.Key(1), wstest.Key(2), wstest.Key(3)}
			for _, a := range auths {
				c.Send(`{"type":"subscribe","channelType":"notifications","authority":"` + a + `"}`)
				c.Expect("subscription", "notifications:"+a)
			}
			c.Send(`{"type":"subscribe","channelType":"notifications","authority":"` + wstest.Key(4) + `"}`)
			m := c.Expect("error", "")
			if !strings.Contains(m.Message, "at most 3 subscriptions") {
				t.Errorf("error = %s", m.Raw)
			}
			c.Send(`{"type":"unsubscribe","channelType":"notifications","authority":"` + auths[0] + `"}`)
			c.Expect("unsubscribed", "notifications:"+auths[0])
			c.Send(`{"type":"unsubscribe","channelType":"notifications","authority":"` + auths[1] + `"}`)
			c.Expect("unsubscribed", "notifications:"+auths[1])
			c.Send("{")
		}, "not a JSON object"},
		{"rate", func(c *wstest.Conn) {
			// The burst (50) passes; what follows at once is refused.
			for range 60 {
				c.Send(`{"type":"unsubscribe","channelType":"markets"}`)
			}
			limited := 0
			for range 60 {
				if m := c.Next(); m.Type == "error" {
					if !strings.Contains(m.Message, "too many messages") {
						t.Errorf("error = %s", m.Raw)
					}
					limited++
				}
			}
			if limited < 5 {
				t.Errorf("%d of 60 messages sent at once were refused, want at least 5", limited)
			}
			skew.Add(int64(time.Second)) // the bucket refills at 20 a second
			c.Send("[]")
		}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := wstest.Dial(t, e.URL)
			tt.send(c)
			m := c.Expect("error", "")
			if !strings.Contains(m.Message, tt.want) {
				t.Errorf("error %q does not say %q", m.Message, tt.want)
			}
			c.Send(`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`)
			c.Expect("subscription", "candle:SOL-PERP:1")
			c.Expect("init", "candle:SOL-PERP:1")
		})
	}
	if n := e.Metric(t, "ws_request_errors_total"); n < float64(len(tests)) {
		t.Errorf("ws_request_errors_total = %v, want at least %d", n, len(tests))
	}
}
