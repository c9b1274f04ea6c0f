package service_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/kit/kittest"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// TestReplayWindowAndSweep: past the replay window, a notification channel nobody listens to is let
// go, and a client resuming it from before gets no replay (resumed false); one subscribed meanwhile
// keeps its channel.
func TestReplayWindowAndSweep(t *testing.T) {
	kc := wstest.Broker(t, 1)
	cfg := snapshots{}.serve(t)
	cfg.Hub.ReplayWindow = 300 * time.Millisecond
	e := wstest.Start(t, kc, cfg, true)
	alice, bob := wstest.Key(21), wstest.Key(22)
	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","channelType":"notifications","authority":"` + alice + `"}`)
	seq := c.Expect("subscription", "notifications:"+alice).Seq
	c.Send(`{"type":"subscribe","channelType":"notifications","authority":"` + bob + `"}`)
	c.Expect("subscription", "notifications:"+bob)
	c.Send(`{"type":"unsubscribe","channelType":"notifications","authority":"` + alice + `"}`)
	c.Expect("unsubscribed", "notifications:"+alice)
	base := e.Hub().Channels() // markets, pricing, and the two authorities'
	p := wstest.NewProducer(t, kc)
	p.Produce(events.TopicEdgeNotifications, "notification", wstest.Notification(alice, "n1", "missed"),
		wstest.Notification(bob, "n2", "seen"))
	c.Expect("update", "notifications:"+bob)
	kittest.Eventually(t, 10*time.Second, "alice's channel let go", func() bool { return e.Hub().Channels() == base-1 })

	r := wstest.Dial(t, e.URL)
	r.Send(fmt.Sprintf(`{"type":"subscribe","channelType":"notifications","authority":%q,"since":%d}`, alice, seq))
	if ack := r.Expect("subscription", "notifications:"+alice); ack.Resumed == nil || *ack.Resumed {
		t.Fatalf("ack = %s, want resumed false: n1 is gone from the replay buffer", ack.Raw)
	}
	r.Quiet(200 * time.Millisecond) // no init on the notifications channel, ever
	p.Produce(events.TopicEdgeNotifications, "notification", wstest.Notification(alice, "n3", "live"))
	r.Expect("update", "notifications:"+alice)
	if e.Hub().Channels() != base {
		t.Errorf("%d channels, want %d", e.Hub().Channels(), base)
	}
}
