package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/ws/hub"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// replica is a hub served over HTTP and fed by hand, partition 0 of edge.candles from offset 0.
type replica struct {
	*hub.Hub
	url string
}

func startReplica(t *testing.T) *replica {
	t.Helper()
	h := hub.New(hub.Config{}, wstest.Logger(), nil)
	starts := map[string]map[int]int64{}
	for _, topic := range hub.Topics() {
		starts[topic] = map[int]int64{0: 0}
	}
	h.Start(starts)
	c, err := json.Marshal(change(0).Candle)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WarmCandles([]json.RawMessage{c}); err != nil {
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
	return &replica{Hub: h, url: "ws" + strings.TrimPrefix(srv.URL, "http")}
}

// change is SOL-PERP's minute candle closing at 100+i.
func change(i int) market.EdgeCandleMessage {
	return wstest.CandleChange("SOL-PERP", "1", 1795100340, float64(100+i), 1, false, fmt.Sprint(i)).Value.(market.EdgeCandleMessage)
}

// apply feeds offsets from..to (inclusive) of partition 0.
func (r *replica) apply(t *testing.T, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		v, err := json.Marshal(change(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(hub.Message{Topic: events.TopicEdgeCandles, Partition: 0, Offset: int64(i), Time: time.Now(),
			Key: []byte("SOL-PERP"), Value: v}); err != nil {
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
	ahead, behind := startReplica(t), startReplica(t)
	c := wstest.Dial(t, ahead.url)
	c.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)
	c.Expect("subscription", "candle:SOL-PERP:1")
	c.Expect("init", "candle:SOL-PERP:1")
	ahead.apply(t, 1, 5)
	var seq string
	for i := 1; i <= 5; i++ {
		m := c.Expect("update", "")
		if closeOf(t, m) != float64(100+i) {
			t.Fatalf("update %d: %s", i, m.Raw)
		}
		seq = m.Seq
	}
	if seq != "0:6" {
		t.Fatalf("seq after offset 5 = %s, want 0:6", seq)
	}

	behind.apply(t, 1, 3) // this replica has read up to offset 3
	r := wstest.Dial(t, behind.url)
	r.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1","since":"` + seq + `"}`)
	if ack := r.Expect("subscription", ""); ack.Resumed == nil || !*ack.Resumed {
		t.Fatalf("ack = %s, want resumed", ack.Raw)
	}
	behind.apply(t, 4, 7)
	for _, want := range []float64{106, 107} {
		if m := r.Expect("update", ""); closeOf(t, m) != want {
			t.Fatalf("got %s, want close %v (4 and 5 were already the client's)", m.Raw, want)
		}
	}
	r.Quiet(100 * time.Millisecond)
}

// TestResumeBeforeTheReplicaStarted: a seq from before this replica's first offset cannot be
// resumed here (what came before is unknown to it): the client gets an init.
func TestResumeBeforeTheReplicaStarted(t *testing.T) {
	h := hub.New(hub.Config{}, wstest.Logger(), nil)
	starts := map[string]map[int]int64{}
	for _, topic := range hub.Topics() {
		starts[topic] = map[int]int64{0: 10}
	}
	h.Start(starts)
	c, _ := json.Marshal(change(0).Candle)
	if err := h.WarmCandles([]json.RawMessage{c}); err != nil {
		t.Fatal(err)
	}
	h.SetWarmed()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = h.Run(ctx) }()
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.CloseAll(hub.CloseGoingAway, "test over", time.Second)
	cl := wstest.Dial(t, "ws"+strings.TrimPrefix(srv.URL, "http"))
	cl.Send(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1","since":"0:7"}`)
	if ack := cl.Expect("subscription", ""); ack.Resumed == nil || *ack.Resumed || ack.Seq != "0:10" {
		t.Fatalf("ack = %s, want resumed false at 0:10", ack.Raw)
	}
	cl.Expect("init", "candle:SOL-PERP:1")
}
