package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/ws/hub"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// replica is a hub served over HTTP and fed by hand: SOL-PERP's minute candles, warmed from a snapshot
// current to seq warm.
type replica struct {
	*hub.Hub
	url string
	reg *prometheus.Registry
}

// startReplica starts a replica; setup runs before it serves (the hub's Set* calls).
func startReplica(t *testing.T, warm int64, setup ...func(*hub.Hub)) *replica {
	t.Helper()
	reg := prometheus.NewRegistry()
	h := hub.New(hub.Config{}, wstest.Logger(), reg)
	for _, f := range setup {
		f(h)
	}
	h.Start()
	c, err := json.Marshal(change(0).Candle)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WarmCandles([]json.RawMessage{c}, map[string]int64{"candle:SOL-PERP:1": warm}); err != nil {
		t.Fatal(err)
	}
	h.SetWarmed()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.CloseAll(hub.CloseGoingAway, "test over", time.Second)
		cancel()
		<-done
		srv.Close()
	})
	return &replica{Hub: h, url: "ws" + strings.TrimPrefix(srv.URL, "http"), reg: reg}
}

// change is SOL-PERP's minute candle closing at 100+i.
func change(i int) market.EdgeCandleMessage {
	return wstest.CandleChange("SOL-PERP", "1", 1795100340, float64(100+i), 1, false, fmt.Sprint(i)).Value.(market.EdgeCandleMessage)
}

// apply feeds the changes of seqs from..to (inclusive), change i closing at 100+i.
func (r *replica) apply(t *testing.T, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		v, err := json.Marshal(change(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(hub.Message{Topic: events.TopicEdgeCandles, Partition: 0, Offset: int64(1000 + i), Time: time.Now(),
			Key: []byte("SOL-PERP"), Value: v, Channel: "candle:SOL-PERP:1", Seq: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func closeOf(t *testing.T, m wstest.Msg) float64 {
	t.Helper()
	var c struct {
		FillClose float64 `json:"fillClose"`
	}
	if err := json.Unmarshal(m.Candle, &c); err != nil {
		t.Fatalf("%s: %v", m.Raw, err)
	}
	return c.FillClose
}

// TestResumeOnALaggingReplica: a client whose seq is ahead of the replica it reconnects to (the first
// one had read further) is resumed, and gets neither the messages it already has when this replica
// reaches them nor a gap after.
func TestResumeOnALaggingReplica(t *testing.T) {
	ahead, behind := startReplica(t, 0), startReplica(t, 0)
	c := wstest.Dial(t, ahead.url)
	c.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
	c.Expect("subscription", "candle:SOL-PERP:1")
	c.Expect("init", "candle:SOL-PERP:1")
	ahead.apply(t, 1, 5)
	var seq int64
	for i := 1; i <= 5; i++ {
		m := c.Expect("update", "")
		if closeOf(t, m) != float64(100+i) || m.Seq != int64(i) {
			t.Fatalf("update %d: %s", i, m.Raw)
		}
		seq = m.Seq
	}

	behind.apply(t, 1, 3) // this replica has read up to seq 3
	r := wstest.Dial(t, behind.url)
	r.Send(fmt.Sprintf(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1","since":%d}`, seq))
	if ack := r.Expect("subscription", ""); ack.Resumed == nil || !*ack.Resumed {
		t.Fatalf("ack = %s, want resumed", ack.Raw)
	}
	behind.apply(t, 4, 7)
	for _, want := range []float64{106, 107} {
		if m := r.Expect("update", ""); closeOf(t, m) != want || m.Seq != int64(want-100) {
			t.Fatalf("got %s, want close %v (4 and 5 were already the client's)", m.Raw, want)
		}
	}
	r.Quiet(100 * time.Millisecond)
}

// TestResumeBeforeTheReplicaStarted: a seq from before the snapshot this replica was warmed from
// cannot be resumed here (what came before is unknown to it): the client gets an init, at the
// snapshot's seq.
func TestResumeBeforeTheReplicaStarted(t *testing.T) {
	r := startReplica(t, 10)
	cl := wstest.Dial(t, r.url)
	cl.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1","since":7}`)
	if ack := cl.Expect("subscription", ""); ack.Resumed == nil || *ack.Resumed || ack.Seq != 10 {
		t.Fatalf("ack = %s, want resumed false at 10", ack.Raw)
	}
	if init := cl.Expect("init", "candle:SOL-PERP:1"); init.Seq != 10 || closeOf(t, init) != 100 {
		t.Fatalf("init = %s, want the snapshot at 10", init.Raw)
	}
}

// TestRepeatsAndGaps: a message whose seq the channel already has (an outbox that published it again
// after a crash, or one the snapshot included) is dropped; one that skips seqs goes out with its own,
// so the client sees the gap, and resuming from before the gap gets an init.
func TestRepeatsAndGaps(t *testing.T) {
	r := startReplica(t, 3)
	c := wstest.Dial(t, r.url)
	c.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
	if ack := c.Expect("subscription", ""); ack.Seq != 3 {
		t.Fatalf("ack = %s, want seq 3", ack.Raw)
	}
	c.Expect("init", "candle:SOL-PERP:1")
	r.apply(t, 2, 5) // 2 and 3 are in the snapshot
	r.apply(t, 4, 5) // published again
	r.apply(t, 8, 8) // 6 and 7 never came
	for _, want := range []int64{4, 5, 8} {
		if m := c.Expect("update", ""); m.Seq != want || closeOf(t, m) != float64(100+want) {
			t.Fatalf("got %s, want seq %d", m.Raw, want)
		}
	}
	c.Quiet(100 * time.Millisecond)
	if got := kittest.Metric(t, r.reg, "ws_edge_repeats_total", nil); got != 4 {
		t.Errorf("%v repeats counted, want 4", got)
	}
	if got := kittest.Metric(t, r.reg, "ws_edge_gaps_total", nil); got != 1 {
		t.Errorf("%v gaps counted, want 1", got)
	}
	for since, resumed := range map[int64]bool{5: false, 7: true, 8: true} {
		cl := wstest.Dial(t, r.url)
		cl.Send(fmt.Sprintf(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1","since":%d}`, since))
		if ack := cl.Expect("subscription", ""); ack.Resumed == nil || *ack.Resumed != resumed || ack.Seq != 8 {
			t.Errorf("since %d: ack = %s, want resumed %v at 8", since, ack.Raw, resumed)
		}
		if !resumed {
			cl.Expect("init", "candle:SOL-PERP:1")
		}
		if since == 7 {
			if m := cl.Expect("update", ""); m.Seq != 8 {
				t.Errorf("since 7: replayed %s, want seq 8", m.Raw)
			}
		}
		cl.Quiet(50 * time.Millisecond)
	}
}

// TestNotificationsSeqReadWhileMessagesCome: a wallet the replica has had no message of is
// acknowledged at the seq the notify service read (57), and its message 58, which the replica
// applies while that read is in flight (before any subscriber is on the channel), follows the
// acknowledgement from the replay buffer: nothing lost, nothing doubled, then 59 live. A second
// subscription meanwhile shares the one read, and its stream is as consistent, whether it came
// before 58 (acknowledged at 57, then 58) or after (at 58).
func TestNotificationsSeqReadWhileMessagesCome(t *testing.T) {
	alice := wstest.Key(1)
	var reads atomic.Int32
	reading, release := make(chan struct{}, 4), make(chan struct{})
	r := startReplica(t, 0, func(h *hub.Hub) {
		h.SetNotificationsSeq(func(ctx context.Context, authority string) (int64, error) {
			reads.Add(1)
			reading <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			return 57, nil
		})
	})
	notification := func(seq int64) {
		t.Helper()
		v, err := json.Marshal(wstest.Notification(alice, fmt.Sprint("n", seq), "t").Value)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(hub.Message{Topic: events.TopicEdgeNotifications, Offset: seq, Time: time.Now(), Key: []byte(alice),
			Value: v, Channel: events.NotificationsChannel(alice), Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	sub := `{"type":"subscribe","channelType":"notifications","authority":"` + alice + `"}`
	first := wstest.Dial(t, r.url)
	first.Send(sub)
	<-reading
	second := wstest.Dial(t, r.url)
	second.Send(sub)
	notification(58)
	close(release)

	if ack := first.Expect("subscription", events.NotificationsChannel(alice)); ack.Seq != 57 {
		t.Fatalf("ack %s, want the read seq 57", ack.Raw)
	}
	if m := first.Next(); m.Seq != 58 {
		t.Fatalf("after the ack: %s, want 58, which came during the read", m.Raw)
	}
	ack := second.Expect("subscription", events.NotificationsChannel(alice))
	if ack.Seq != 57 && ack.Seq != 58 {
		t.Fatalf("second ack %s, want 57 or 58", ack.Raw)
	}
	if ack.Seq == 57 {
		if m := second.Next(); m.Seq != 58 {
			t.Fatalf("second, after an ack at 57: %s, want 58", m.Raw)
		}
	}
	notification(59)
	for i, c := range []*wstest.Conn{first, second} {
		if m := c.Next(); m.Seq != 59 {
			t.Errorf("client %d: live %s, want 59", i, m.Raw)
		}
		c.Quiet(100 * time.Millisecond)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads of the seq, want 1 shared", n)
	}
	// Known now: a third subscription is acknowledged where the channel is, without a read.
	third := wstest.Dial(t, r.url)
	third.Send(sub)
	if ack := third.Expect("subscription", events.NotificationsChannel(alice)); ack.Seq != 59 || reads.Load() != 1 {
		t.Errorf("third ack %s after %d reads, want 59 after 1", ack.Raw, reads.Load())
	}
	third.Quiet(100 * time.Millisecond)
}

// TestDisconnectsByCloseCode: every way a connection ends is counted once, under the code it ended
// with; codes a client makes up share one label.
func TestDisconnectsByCloseCode(t *testing.T) {
	cases := []struct {
		name string
		end  func(r *replica, c *wstest.Conn)
		code string
	}{
		{"the client closes normally", func(_ *replica, c *wstest.Conn) { sendClose(t, c, websocket.CloseNormalClosure) }, "1000"},
		{"the client closes with its own code", func(_ *replica, c *wstest.Conn) { sendClose(t, c, 4321) }, "other"},
		{"the client's connection drops", func(_ *replica, c *wstest.Conn) { c.UnderlyingConn().Close() }, "1006"},
		{"the replica stops", func(r *replica, _ *wstest.Conn) { r.CloseAll(hub.CloseGoingAway, "stopping", time.Second) }, "1001"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startReplica(t, 0)
			c := wstest.Dial(t, r.url)
			c.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
			c.Expect("subscription", "candle:SOL-PERP:1")
			tc.end(r, c)
			deadline := time.Now().Add(5 * time.Second)
			for kittest.Metric(t, r.reg, "ws_disconnects_total", map[string]string{"code": tc.code}) < 1 {
				if time.Now().After(deadline) {
					t.Fatalf("no disconnect counted under code %s", tc.code)
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // the connection's later ends (its reader, its writer) must not count again
			if got := kittest.Metric(t, r.reg, "ws_disconnects_total", nil); got != 1 {
				t.Fatalf("%v disconnects counted, want 1", got)
			}
		})
	}
}

// sendClose writes a close frame of code and waits for the answer.
func sendClose(t *testing.T, c *wstest.Conn, code int) {
	t.Helper()
	if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, "")); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.CloseCode(5 * time.Second); got != code {
		t.Fatalf("the edge answered close %d with %d", code, got)
	}
}
