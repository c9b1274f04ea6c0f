package service_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"

	"github.com/gorilla/websocket"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/ws/hub"
	"github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// TestExistingClients speaks as the protocol's TypeScript clients do: a candle subscription without
// channelType, acting only on update messages' candle and trades, and {"type":"unsubscribe"} naming
// nothing before closing. Unsubscribing stops a channel at once; resubscribing is idempotent.
func TestExistingClients(t *testing.T) {
	kc := wstest.Broker(t, 2)
	cfg := snapshots{
		candles: []wstest.KV{wstest.CandleChange(solPerp, "1", 1795100340, 150, 2, false, "41")},
		pricing: []wstest.KV{wstest.Pricing(solPerp, 0, "150000000", 100)},
	}.serve(t)
	e := wstest.Start(t, kc, cfg, true)
	p := wstest.NewProducer(t, kc)
	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
	c.Expect("subscription", "candle:SOL-PERP:1")
	c.Expect("init", "candle:SOL-PERP:1")
	// Resubscribing: the acknowledgement and the init again, and still one copy of each change.
	c.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
	c.Expect("subscription", "candle:SOL-PERP:1")
	c.Expect("init", "candle:SOL-PERP:1")
	c.Send(`{"type":"subscribe","channelType":"pricing"}`)
	c.Expect("subscription", "pricing")
	c.Expect("init", "pricing")
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 151, 3, false, "42"))
	if m := c.Expect("update", ""); m.Candle == nil || m.Trades == nil {
		t.Fatalf("update without candle and trades: %s", m.Raw)
	}
	c.Quiet(100 * time.Millisecond)

	// Unsubscribing from the candle stops it; pricing goes on.
	c.Send(`{"type":"unsubscribe","symbol":"SOL-PERP","resolution":"1"}`)
	if m := c.Expect("unsubscribed", "candle:SOL-PERP:1"); m.Message != "Unsubscribed from SOL-PERP 1" {
		t.Errorf("unsubscribed = %s", m.Raw)
	}
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 152, 4, false, "43"))
	p.Produce(events.TopicEdgePricing, "pricing", wstest.Pricing(solPerp, 0, "152000000", 101))
	c.Expect("update", "pricing")
	c.Quiet(100 * time.Millisecond)
	// The existing clients' last word.
	c.Send(`{"type":"unsubscribe"}`)
	if m := c.Expect("unsubscribed", ""); m.Message != "Unsubscribed from every channel" {
		t.Errorf("unsubscribed = %s", m.Raw)
	}
	p.Produce(events.TopicEdgePricing, "pricing", wstest.Pricing(solPerp, 0, "153000000", 102))
	c.Quiet(100 * time.Millisecond)
	kittest.Eventually(t, 5*time.Second, "no subscriptions left", func() bool { return e.Metric(t, "ws_subscriptions") == 0 })
}

// TestUnsubscribeTakesBackQueuedMessages: messages of a channel still queued when its unsubscribe is
// read are not sent after the acknowledgement.
func TestUnsubscribeTakesBackQueuedMessages(t *testing.T) {
	kc := wstest.Broker(t, 1)
	e := wstest.Start(t, kc, snapshots{pricing: []wstest.KV{wstest.Pricing(solPerp, 0, "1", 1)}}.serve(t), true)
	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","channelType":"pricing"}`)
	c.Expect("subscription", "pricing")
	c.Expect("init", "pricing")
	p := wstest.NewProducer(t, kc)
	kvs := make([]wstest.KV, 500)
	for i := range kvs {
		kvs[i] = wstest.Pricing(solPerp, 0, fmt.Sprint(1000+i), int64(i))
	}
	p.Produce(events.TopicEdgePricing, "pricing", kvs...)
	c.Send(`{"type":"unsubscribe","channelType":"pricing"}`)
	updates := 0
	for {
		m := c.Next()
		if m.Type == "unsubscribed" {
			break
		}
		updates++
	}
	c.Quiet(200 * time.Millisecond)
	t.Logf("%d of 500 updates came before the acknowledgement", updates)
}

// startSmallQueues is an edge on a broker of one partition, with a SOL-PERP pricing snapshot, a
// queue of 64 messages a client and a socket buffer of socketBuffer bytes: small enough for a
// client that does not keep up to overflow them soon.
func startSmallQueues(t *testing.T, socketBuffer int) (kafka.Config, *wstest.Edge) {
	t.Helper()
	kc := wstest.Broker(t, 1)
	cfg := snapshots{pricing: []wstest.KV{wstest.Pricing(solPerp, 0, "1", 1)}}.serve(t)
	cfg.Hub.QueueSize = 64
	cfg.Hub.SocketBuffer = socketBuffer
	return kc, wstest.Start(t, kc, cfg, true)
}

// TestSlowClient: a client that never reads is disconnected when its queue overflows, while 100 fast
// clients of the same channel get every message, in order.
func TestSlowClient(t *testing.T) {
	kc, e := startSmallQueues(t, 32<<10)

	// The slow client's socket holds little, so that its queue fills soon.
	slowDialer := *websocket.DefaultDialer
	slowDialer.NetDial = func(network, addr string) (net.Conn, error) {
		conn, err := net.Dial(network, addr)
		if err == nil {
			_ = conn.(*net.TCPConn).SetReadBuffer(4096)
		}
		return conn, err
	}
	slow := wstest.DialWith(t, e.URL, &slowDialer)
	slow.Send(`{"type":"subscribe","channelType":"pricing"}`)

	const fast, batches, batch = 100, 10, 20
	conns := make([]*wstest.Conn, fast)
	got := make([]atomic.Int32, fast)
	for i := range conns {
		conns[i] = wstest.Dial(t, e.URL)
		conns[i].Send(`{"type":"subscribe","channelType":"pricing"}`)
		conns[i].Expect("subscription", "pricing")
		conns[i].Expect("init", "pricing")
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			for n := range batches * batch {
				m, err := c.Read(20 * time.Second)
				var items []struct {
					Price string `json:"price"`
				}
				if err != nil || m.Type != "update" || json.Unmarshal(m.Data, &items) != nil || items[0].Price != fmt.Sprint(n) {
					t.Errorf("client %d, message %d: %s %v", i, n, m.Raw, err)
					return
				}
				got[i].Add(1)
			}
		})
	}
	p := wstest.NewProducer(t, kc)
	pad := strings.Repeat("p", 2000) // 2 KB a message: the slow socket's buffers hold a few dozen
	for b := range batches {
		kvs := make([]wstest.KV, batch)
		for i := range kvs {
			kv := wstest.Pricing(solPerp, 0, fmt.Sprint(b*batch+i), int64(i))
			kv.Value.(map[string]any)["pad"] = pad
			kvs[i] = kv
		}
		p.Produce(events.TopicEdgePricing, "pricing", kvs...)
		// The fast clients keep up: the next batch waits until every one has this one.
		kittest.Eventually(t, 20*time.Second, "every fast client has the batch", func() bool {
			for i := range got {
				if got[i].Load() < int32((b+1)*batch) && !t.Failed() {
					return false
				}
			}
			return true
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	kittest.Eventually(t, 10*time.Second, "the slow client's overflow", func() bool { return e.Metric(t, "ws_queue_overflows_total") == 1 })
	kittest.Eventually(t, 10*time.Second, "the slow client gone", func() bool { return e.Hub().Connections() == fast })
	if n := kittest.Metric(t, e.Registry, "ws_disconnects_total", map[string]string{"code": "1008"}); n != 1 {
		t.Errorf("%v disconnects counted under 1008, want the slow client's", n)
	}
	// Reading now, it finds the end: the close frame with the reason when it got through.
	code, reason := slow.CloseCode(10 * time.Second)
	if code != websocket.CloseAbnormalClosure && (code != hub.ClosePolicy || !strings.Contains(reason, "queue overflow")) {
		t.Errorf("slow client closed with %d %q, want 1008 and the reason, or the connection dropped without one (1006)", code, reason)
	}
	t.Logf("slow client: close %d %q", code, reason)
}

// TestResume: a client that reconnects with the seq of the last message it got receives exactly the
// messages it missed, then live ones; one whose seq is older than the replay buffer gets an init.
func TestResume(t *testing.T) {
	kc := wstest.Broker(t, 3)
	cfg := snapshots{
		candles: []wstest.KV{wstest.CandleChange(solPerp, "1", 1795100340, 150, 2, false, "41")},
		markets: []wstest.KV{wstest.MarketSummary(solPerp, 0, "1")},
	}.serve(t)
	cfg.Hub.ReplayMax = 20
	e := wstest.Start(t, kc, cfg, true)
	p := wstest.NewProducer(t, kc)

	candle := func(i int) wstest.KV {
		return wstest.CandleChange(solPerp, "1", 1795100340, float64(150+i), 2, false, fmt.Sprint(100+i))
	}
	closeOf := func(m wstest.Msg) float64 {
		var c struct {
			FillClose float64 `json:"fillClose"`
		}
		if err := json.Unmarshal(m.Candle, &c); err != nil {
			t.Fatalf("%s: %v", m.Raw, err)
		}
		return c.FillClose
	}
	sub := `{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"%s}`
	c := wstest.Dial(t, e.URL)
	c.Send(fmt.Sprintf(sub, ""))
	c.Expect("subscription", "")
	c.Expect("init", "")
	c.Send(`{"type":"subscribe","channelType":"markets"}`)
	c.Expect("subscription", "markets:summary")
	marketsSeq := c.Expect("init", "markets:summary").Seq
	p.Produce(events.TopicEdgeCandles, "candle", candle(1), candle(2))
	c.Expect("update", "")
	last := c.Expect("update", "").Seq
	c.Close()

	// Missed while away: 3..7 of SOL-PERP, and other symbols' changes in the same partitions.
	for i := 3; i <= 7; i++ {
		p.Produce(events.TopicEdgeCandles, "candle", candle(i), wstest.CandleChange("BTC-PERP", "1", 1795100340, 1, 1, false, "9"))
	}
	p.Produce(events.TopicEdgeMarkets, "markets", wstest.MarketSummary(solPerp, 0, "2"), wstest.MarketSummary("ETH-PERP", 2, "3"))
	// Every message so far: candles 1 and 2, five pairs of candles and the two summaries.
	kittest.Eventually(t, 10*time.Second, "the missed changes applied", func() bool { return e.Metric(t, "ws_edge_messages_total") >= 14 })

	c = wstest.Dial(t, e.URL)
	c.Send(fmt.Sprintf(sub, fmt.Sprintf(`,"since":%d`, last)))
	if ack := c.Expect("subscription", "candle:SOL-PERP:1"); ack.Resumed == nil || !*ack.Resumed {
		t.Fatalf("ack = %s, want resumed", ack.Raw)
	}
	for i := 3; i <= 7; i++ {
		if m := c.Expect("update", ""); closeOf(m) != float64(150+i) {
			t.Fatalf("replayed %s, want close %d", m.Raw, 150+i)
		}
	}
	c.Send(fmt.Sprintf(`{"type":"subscribe","channelType":"markets","since":%d}`, marketsSeq))
	if ack := c.Expect("subscription", "markets:summary"); ack.Resumed == nil || !*ack.Resumed {
		t.Fatalf("markets ack = %s, want resumed", ack.Raw)
	}
	got := map[string]bool{}
	for range 2 {
		for _, s := range symbolsOf(t, c.Expect("update", "markets:summary").Data) {
			got[s] = true
		}
	}
	if !got["SOL-PERP@2"] || !got["ETH-PERP@3"] {
		t.Errorf("markets replay %v", got)
	}
	c.Quiet(200 * time.Millisecond)
	p.Produce(events.TopicEdgeCandles, "candle", candle(8))
	if m := c.Expect("update", ""); closeOf(m) != 158 {
		t.Fatalf("live after the replay: %s", m.Raw)
	}

	// 30 more changes push the last seq out of a 20-message buffer: an init instead.
	for i := 9; i < 39; i++ {
		p.Produce(events.TopicEdgeCandles, "candle", candle(i))
	}
	// Those 14, candle 8 and these 30: the newest must be applied before the edge is asked for it.
	kittest.Eventually(t, 10*time.Second, "the changes applied", func() bool { return e.Metric(t, "ws_edge_messages_total") >= 45 })
	c2 := wstest.Dial(t, e.URL)
	c2.Send(fmt.Sprintf(sub, fmt.Sprintf(`,"since":%d`, last)))
	if ack := c2.Expect("subscription", ""); ack.Resumed == nil || *ack.Resumed {
		t.Fatalf("ack = %s, want resumed false", ack.Raw)
	}
	if init := c2.Expect("init", "candle:SOL-PERP:1"); closeOfRaw(t, init.Data) != 188 {
		t.Errorf("init = %s, want the newest candle", init.Raw)
	}
	if n := e.Metric(t, "ws_resumes_total"); n != 3 {
		t.Errorf("ws_resumes_total = %v, want 3", n)
	}
}

func closeOfRaw(t *testing.T, raw json.RawMessage) float64 {
	t.Helper()
	var c struct {
		FillClose float64 `json:"fillClose"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.FillClose
}

// TestShutdownAndFailover: stopping a replica closes every client with 1001; they reconnect to a
// second replica, which started later, and resume there with the seq the first one gave them.
func TestShutdownAndFailover(t *testing.T) {
	kc := wstest.Broker(t, 3)
	cfg := snapshots{candles: []wstest.KV{wstest.CandleChange(solPerp, "1", 1795100340, 150, 2, false, "41")}}.serve(t)
	first := wstest.Start(t, kc, cfg, true)
	p := wstest.NewProducer(t, kc)
	conns := make([]*wstest.Conn, 5)
	for i := range conns {
		conns[i] = wstest.Dial(t, first.URL)
		conns[i].Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
		conns[i].Expect("subscription", "")
		conns[i].Expect("init", "")
	}
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 151, 2, false, "42"))
	var seq int64
	for _, c := range conns {
		seq = c.Expect("update", "").Seq
	}
	second := wstest.Start(t, kc, cfg, true)
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 152, 2, false, "43"))
	for _, c := range conns {
		seq = c.Expect("update", "").Seq
	}
	kittest.Eventually(t, 10*time.Second, "the second replica has the change", func() bool {
		return second.Metric(t, "ws_edge_messages_total") == 1
	})

	first.Stop(t)
	for i, c := range conns {
		if code, reason := c.CloseCode(10 * time.Second); code != websocket.CloseGoingAway {
			t.Errorf("client %d closed with %d %q, want 1001", i, code, reason)
		}
	}
	if r, err := http.Get(first.Internal + "/readyz"); err == nil {
		r.Body.Close()
	}
	// While nobody serves them, two more changes.
	p.Produce(events.TopicEdgeCandles, "candle", wstest.CandleChange(solPerp, "1", 1795100340, 153, 2, false, "44"),
		wstest.CandleChange(solPerp, "1", 1795100340, 154, 2, false, "45"))
	for i := range conns {
		c := wstest.Dial(t, second.URL)
		c.Send(fmt.Sprintf(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1","since":%d}`, seq))
		if ack := c.Expect("subscription", ""); ack.Resumed == nil || !*ack.Resumed {
			t.Fatalf("client %d: ack = %s, want resumed on the second replica", i, ack.Raw)
		}
		for _, want := range []float64{153, 154} {
			if m := c.Expect("update", ""); closeOfRaw(t, m.Candle) != want {
				t.Fatalf("client %d: %s, want close %v", i, m.Raw, want)
			}
		}
	}
}

// TestReadiness: ready once the edge topics are read and every configured snapshot taken; a
// configured service that fails keeps it not ready while it retries, a service not configured is
// nothing to wait for; subscriptions made meanwhile wait for the snapshots.
func TestReadiness(t *testing.T) {
	kc := wstest.Broker(t, 1)
	var statsUp atomic.Bool
	url := wstest.Snapshot(t, map[string]func() (int, any){
		mesh.EdgeMarkets: func() (int, any) {
			if !statsUp.Load() {
				return http.StatusServiceUnavailable, nil
			}
			return http.StatusOK, []any{wstest.MarketSummary(solPerp, 0, "5").Value}
		},
		mesh.EdgePricing: func() (int, any) { return http.StatusOK, []any{} },
	})
	e := wstest.Start(t, kc, service.Config{StatsURL: url}, false) // no market service: no candles to warm
	readyz := func() (int, string) {
		resp, err := http.Get(e.Internal + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, mustRead(t, resp))
		return resp.StatusCode, b.String()
	}
	kittest.Eventually(t, 10*time.Second, "the stats snapshot to fail", func() bool {
		code, body := readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "snapshot stats markets") && strings.Contains(body, "503")
	})
	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","channelType":"markets"}`)
	time.Sleep(300 * time.Millisecond)
	statsUp.Store(true)
	kittest.Eventually(t, 20*time.Second, "ready", func() bool { code, _ := readyz(); return code == http.StatusOK })
	c.Expect("subscription", "markets:summary")
	if got := fmt.Sprint(symbolsOf(t, c.Expect("init", "markets:summary").Data)); got != "[SOL-PERP@5]" {
		t.Errorf("init after the warm-up = %s", got)
	}
}

func mustRead(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestSteadySlowReader: a client that reads, but slower than messages come, has its writes cut short
// by its full socket and finished by a writer of its own; it still gets every message whole and in
// order, and is not disconnected while its queue has room.
func TestSteadySlowReader(t *testing.T) {
	kc := wstest.Broker(t, 1)
	cfg := snapshots{pricing: []wstest.KV{wstest.Pricing(solPerp, 0, "1", 1)}}.serve(t)
	cfg.Hub.SocketBuffer = 8 << 10
	e := wstest.Start(t, kc, cfg, true)
	c := dialPricing(t, e.URL, 64<<10)
	const n = 200
	pad := strings.Repeat("s", 6000) // frames larger than the socket holds: writes end mid-frame
	producePricing(t, kc, n, pad)
	next := 0
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	for next < n {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %d updates: %v", next, err)
		}
		if !isPricingUpdate(t, b, next, pad) {
			continue
		}
		next++
		time.Sleep(2 * time.Millisecond) // slower than the messages come
	}
	if n := e.Metric(t, "ws_queue_overflows_total"); n != 0 {
		t.Errorf("%v overflows", n)
	}
	if n := e.Metric(t, "ws_slow_writes_total"); n == 0 {
		t.Error("no write found the socket full: the test did not reach the slow path")
	}
}

// TestOverflowCloseReachesAReader: a client that reads, but far too slowly for a burst, overflows its
// queue; the messages it reads are whole and in order up to the close frame, 1008 with the reason,
// even when the overflow cut a write short.
func TestOverflowCloseReachesAReader(t *testing.T) {
	kc, e := startSmallQueues(t, 16<<10)
	c := dialPricing(t, e.URL, 16<<10)
	const n = 300
	pad := strings.Repeat("o", 5000)
	producePricing(t, kc, n, pad)
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	next := 0
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "queue overflow") {
				t.Fatalf("after %d updates: %v, want close 1008 with the reason", next, err)
			}
			break
		}
		if !isPricingUpdate(t, b, next, pad) {
			continue
		}
		next++
		time.Sleep(5 * time.Millisecond)
	}
	if next >= n {
		t.Fatalf("all %d updates arrived: the queue never overflowed", next)
	}
	t.Logf("%d updates, then the close frame", next)
}

// dialPricing connects to the edge at url with a socket read buffer of readBuffer bytes, so that a
// client that reads slowly fills it soon, and subscribes to pricing. The connection closes with the
// test.
func dialPricing(t *testing.T, url string, readBuffer int) *websocket.Conn {
	t.Helper()
	dialer := *websocket.DefaultDialer
	dialer.NetDial = func(network, addr string) (net.Conn, error) {
		conn, err := net.Dial(network, addr)
		if err == nil {
			_ = conn.(*net.TCPConn).SetReadBuffer(readBuffer)
		}
		return conn, err
	}
	c, resp, err := dialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","channelType":"pricing"}`)); err != nil {
		t.Fatal(err)
	}
	return c
}

// producePricing publishes n pricing updates of SOL-PERP, the i-th at price i, each padded with pad.
func producePricing(t *testing.T, kc kafka.Config, n int, pad string) {
	t.Helper()
	kvs := make([]wstest.KV, n)
	for i := range kvs {
		kv := wstest.Pricing(solPerp, 0, fmt.Sprint(i), int64(i))
		kv.Value.(map[string]any)["pad"] = pad
		kvs[i] = kv
	}
	wstest.NewProducer(t, kc).Produce(events.TopicEdgePricing, "pricing", kvs...)
}

// isPricingUpdate reports whether b, read after next updates of producePricing's, is an update (the
// acknowledgement and the init are not); an update must be whole and the next in order.
func isPricingUpdate(t *testing.T, b []byte, next int, pad string) bool {
	t.Helper()
	var m struct {
		Type string `json:"type"`
		Data []struct {
			Price string `json:"price"`
			Pad   string `json:"pad"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("a broken message after %d updates: %v", next, err)
	}
	if m.Type != "update" {
		return false
	}
	if len(m.Data) != 1 || m.Data[0].Price != fmt.Sprint(next) || m.Data[0].Pad != pad {
		t.Fatalf("update %d: %.80s", next, b)
	}
	return true
}
