package service_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// snapshots are what the owning services' internal ports answer at start.
type snapshots struct {
	candles, markets, pricing []wstest.KV
}

func (s snapshots) serve(t *testing.T) service.Config {
	t.Helper()
	values := func(kvs []wstest.KV, f func(any) any) func() (int, any) {
		return func() (int, any) {
			out := make([]any, len(kvs))
			for i, kv := range kvs {
				out[i] = f(kv.Value)
			}
			return http.StatusOK, out
		}
	}
	id := func(v any) any { return v }
	url := wstest.Snapshot(t, map[string]func() (int, any){
		mesh.EdgeCandles: values(s.candles, func(v any) any { return v.(market.EdgeCandleMessage).Candle }),
		mesh.EdgeMarkets: values(s.markets, id),
		mesh.EdgePricing: values(s.pricing, id),
	})
	return service.Config{MarketURL: url, StatsURL: url}
}

// same reports whether raw is v's JSON, key order aside.
func same(t *testing.T, raw json.RawMessage, v any) bool {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal(want, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

func candleOf(t *testing.T, raw json.RawMessage) market.EdgeCandle {
	t.Helper()
	var c market.EdgeCandle
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("candle %s: %v", raw, err)
	}
	return c
}

const solPerp = "SOL-PERP"

// TestCandleChannel: acknowledgement, the init with the newest candle (data and its duplicate
// candle), then every create and update of that symbol and resolution in order, with their trades
// and without channel fields; other resolutions and symbols are not sent.
func TestCandleChannel(t *testing.T) {
	kc := wstest.Broker(t, 3)
	warm := wstest.CandleChange(solPerp, "1", 1795100340, 150, 2, false, "41")
	cfg := snapshots{candles: []wstest.KV{warm, wstest.CandleChange("BTC-PERP", "1", 1795100340, 60000, 1, false, "40")}}.serve(t)
	e := wstest.Start(t, kc, cfg, true)
	c := wstest.Dial(t, e.URL)
	c.Send(map[string]string{"type": "subscribe", "channelType": "candle", "symbol": solPerp, "resolution": "1"})
	ack := c.Expect("subscription", "candle:SOL-PERP:1")
	if ack.Message != "Subscribed to SOL-PERP 1" || ack.ChannelType != "candle" || ack.Symbol != solPerp || ack.Resolution != "1" || ack.Resumed != nil {
		t.Errorf("ack = %s", ack.Raw)
	}
	init := c.Expect("init", "candle:SOL-PERP:1")
	if string(init.Data) != string(init.Candle) || !same(t, init.Data, warm.Value.(market.EdgeCandleMessage).Candle) {
		t.Errorf("init = %s, want the snapshot's candle as data and candle", init.Raw)
	}
	if init.Seq != ack.Seq {
		t.Errorf("init seq %d, ack seq %d", init.Seq, ack.Seq)
	}

	p := wstest.NewProducer(t, kc)
	changes := []wstest.KV{
		wstest.CandleChange(solPerp, "1", 1795100340, 151, 3, false, "42"),
		wstest.CandleChange(solPerp, "5", 1795100100, 151, 3, false, "42"), // another resolution
		wstest.CandleChange("BTC-PERP", "1", 1795100340, 60001, 2, false, "43"),
		wstest.CandleChange(solPerp, "1", 1795100400, 152, 1, true, "44", "45"),
		wstest.CandleChange(solPerp, "1", 1795100400, 153, 2, false), // changed without a new fill
	}
	p.Produce(events.TopicEdgeCandles, "candle", changes...)
	want := []wstest.KV{changes[0], changes[3], changes[4]}
	prev := init.Seq
	for _, w := range want {
		m := c.Next()
		wm := w.Value.(market.EdgeCandleMessage)
		if m.Type != wm.Type || m.ChannelType != "" || m.Channel != "" || !same(t, m.Candle, wm.Candle) {
			t.Fatalf("got %s, want %s of %+v", m.Raw, wm.Type, wm.Candle)
		}
		var trades []market.EdgeTrade
		if err := json.Unmarshal(m.Trades, &trades); err != nil || len(trades) != len(wm.Trades) {
			t.Fatalf("trades %s, want %d", m.Trades, len(wm.Trades))
		}
		if !same(t, m.Trades, wm.Trades) {
			t.Errorf("trades %s, want %+v", m.Trades, wm.Trades)
		}
		if m.Seq != prev+1 {
			t.Errorf("seq %d after %d, want one more", m.Seq, prev)
		}
		prev = m.Seq
	}
	c.Quiet(200 * time.Millisecond)

	// A new subscriber's init is the newest candle as the last change left it.
	c2 := wstest.Dial(t, e.URL)
	c2.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
	c2.Expect("subscription", "candle:SOL-PERP:1")
	if got := c2.Expect("init", "candle:SOL-PERP:1"); !same(t, got.Data, changes[4].Value.(market.EdgeCandleMessage).Candle) || got.Seq != prev {
		t.Errorf("init after changes = %s, want the last change's candle at seq %d", got.Raw, prev)
	}
	// A late fill's update of an older bucket is sent but does not become the init.
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 149, 4, false, "39"))
	if got := c2.Next(); candleOf(t, got.Candle).Ts != 1795100340 {
		t.Fatalf("late update = %s", got.Raw)
	}
	c3 := wstest.Dial(t, e.URL)
	c3.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
	c3.Expect("subscription", "")
	if got := c3.Expect("init", ""); candleOf(t, got.Data).Ts != 1795100400 {
		t.Errorf("init after a late update = %s, want the 1795100400 bucket", got.Raw)
	}
}
