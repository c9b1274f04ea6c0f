package e2e_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	notifysvc "github.com/tidemark/tidemark/services/notify/service"
	"github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/services/ws/wstest"
)

// TestNotificationsSeqOfAFreshReplica is the gap a replica made up: a wallet had notifications
// before the replica started, so it has read none of them, and without the notify service's count
// it acknowledged the wallet's channel at 0 and the next notification came as a gap. The notify
// service runs for real (its sinks make the notifications, its outbox numbers and publishes them),
// and the replica asks its internal route: the acknowledgement carries the wallet's count, the next
// notification is one more, and a wallet with none is acknowledged at 0.
func TestNotificationsSeqOfAFreshReplica(t *testing.T) {
	s := start(t, notifysvc.Service(notifysvc.Config{}))
	wallet, account, idle := kittest.Key(40), kittest.Key(41), kittest.Key(42)
	s.Ingest(t, kittest.Encode(t, events.TopicNewUsers, &events.NewUser{
		Tx:            events.Tx{Ts: kittest.DefaultNow.Unix() - 86400, TxSig: kittest.Sig("newus", 1), Slot: 1},
		UserAuthority: wallet, User: account, Name: "Main"})...)
	settle := func(id int) []events.Message {
		return kittest.Encode(t, events.TopicSettlePnl, kittest.SettlePnl(kittest.SOLPerp, account, kittest.DefaultNow.Unix()-60+int64(id), id))
	}
	const before = 3
	for id := 1; id <= before; id++ {
		s.Ingest(t, settle(id)...)
	}
	// They are on the topic before the replica starts: it reads from the end and never sees them.
	kittest.Eventually(t, 30*time.Second, "the notifications published", func() bool {
		return published(t, s, events.TopicEdgeNotifications) == before
	})
	e := wstest.Start(t, s.Kafka, service.Config{NotifyURL: s.InternalServer(t, "notify").URL}, true)

	c := wstest.Dial(t, e.URL)
	c.Send(`{"type":"subscribe","channelType":"notifications","authority":"` + wallet + `"}`)
	if ack := c.Expect("subscription", "notifications:"+wallet); ack.Seq != before {
		t.Fatalf("ack %s, want seq %d: the wallet's notifications so far", ack.Raw, before)
	}
	s.Ingest(t, settle(before+1)...)
	m := c.Expect("update", "notifications:"+wallet)
	var n struct {
		Title string `json:"title"`
	}
	if err := json.Unmarshal(m.Data, &n); err != nil || m.Seq != before+1 || n.Title == "" {
		t.Fatalf("next notification %s, want seq %d", m.Raw, before+1)
	}
	c.Quiet(200 * time.Millisecond)

	c.Send(`{"type":"subscribe","channelType":"notifications","authority":"` + idle + `"}`)
	if ack := c.Expect("subscription", "notifications:"+idle); ack.Seq != 0 {
		t.Errorf("ack of a wallet with no notifications %s, want seq 0", ack.Raw)
	}
}
