package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/notify"
)

// stream is a known stream of the protocol's events for the accounts of alice and bob, all in the
// last minutes before the clock so that every notification goes to the edge too. The fills come
// before the new-user records of their accounts, as a consumer may see them.
func stream(t *testing.T) (early, owners, rest []events.Message) {
	t.Helper()
	ts := kittest.DefaultNow.Unix() - 600
	full := kittest.Fill(kittest.SOLPerp, ts, 1, 300_000_000, 2_000_000_000, 150_000_000) // alice long 2 @ $150, bob short
	partial := kittest.Fill(kittest.SOLPerp, ts+10, 2, 151_000_000, 1_000_000_000, 151_000_000)
	partial.TakerOrderBaseAssetAmount, partial.TakerOrderCumulativeBaseAssetAmountFilled = "3000000000", "1000000000"
	spot := kittest.Fill(kittest.SOLSpot, ts+20, 3, 149_000_000, 1_000_000_000, 149_000_000)
	early = kittest.Encode(t, events.TopicFills, full, partial, spot)

	owners = kittest.Encode(t, events.TopicNewUsers,
		newUser(aliceMain, alice, 0, "Main Account", nil, 1),
		newUser(aliceSub, alice, 1, "", nil, 2),
		newUser(bobMain, bob, 0, "Maker", &dave, 3),
	)

	liq := kittest.Liquidation(kittest.SOLPerp, aliceSub, ts+30, 1)
	deposit := kittest.Deposit(kittest.USDC, ts+40, 1, false)
	deposit.User, deposit.UserAuthority = aliceMain, alice.addr
	withdrawal := kittest.Deposit(kittest.SOLSpot, ts+50, 2, false)
	withdrawal.User, withdrawal.UserAuthority, withdrawal.Direction, withdrawal.Amount = aliceSub, alice.addr, events.DepositDirectionWithdraw, "2500000000"
	reward := kittest.Deposit(kittest.USDC, ts+60, 3, true)
	reward.User, reward.UserAuthority = aliceMain, alice.addr
	settled := kittest.SettlePnl(kittest.SOLPerp, bobMain, ts+70, 1)
	nothing := kittest.SettlePnl(kittest.SOLPerp, bobMain, ts+80, 2)
	nothing.Pnl = "0"
	small := kittest.FundingPayment(kittest.SOLPerp, aliceMain, ts+90, 1, -1500)
	large := kittest.FundingPayment(kittest.SOLPerp, aliceMain, ts+100, 2, -2_500_000)
	rest = append(rest, kittest.Encode(t, events.TopicLiquidations, liq)...)
	rest = append(rest, kittest.Encode(t, events.TopicDeposits, deposit, withdrawal, reward)...)
	rest = append(rest, kittest.Encode(t, events.TopicSettlePnl, settled, nothing)...)
	rest = append(rest, kittest.Encode(t, events.TopicFundingPayments, small, large)...)
	return early, owners, rest
}

// TestGenerationFromAKnownStream: each event becomes the notifications the reference lists, for the
// wallet of each account it concerns, whatever came first; delivered twice more (the same messages at
// new offsets) and replayed after a crash, the stream gives the same notifications, and
// edge.notifications carries each once, as the feed serves it.
func TestGenerationFromAKnownStream(t *testing.T) {
	h := start(t)
	early, owners, rest := stream(t)
	h.Ingest(t, early...)
	if n := h.Count(t, "notify.pending"); n != 6 {
		t.Fatalf("%d occurrences wait for their accounts, want the 6 sides of 3 fills", n)
	}
	if n := h.Count(t, "notify.notifications"); n != 0 {
		t.Fatalf("%d notifications before any account is known", n)
	}
	h.Ingest(t, owners...)
	h.Ingest(t, rest...)
	if n := h.Count(t, "notify.pending"); n != 0 {
		t.Fatalf("%d occurrences still wait", n)
	}

	aliceFeed, bobFeed := h.allOf(t, alice, notify.StatusSent), h.allOf(t, bob, notify.StatusSent)
	want := map[string][]string{ // title: body, newest first
		alice.addr: {
			"Funding payment: Main Account paid $2.50 of funding on SOL-PERP.",
			"Reward received: Main Account received 5 USDC of rewards.",
			"Withdrawal confirmed: Subaccount 1 withdrew 2.5 SOL.",
			"Deposit confirmed: Main Account deposited 5 USDC.",
			"Account liquidated: Subaccount 1 was liquidated: its SOL-PERP position. Margin freed: $0.10.",
			"Order filled: Your buy order #10003 on SOL is filled: $149.00 in this fill (Main Account).",
			"Order partially filled: Your long order #10002 on SOL-PERP is 1 of 3 filled: 1 at $151.00 (Main Account).",
			"Order filled: Your long order #10001 on SOL-PERP is filled: 2 at $150.00 (Main Account).",
		},
		bob.addr: {
			"P&L settled: Maker settled +$1.50 of SOL-PERP P&L.",
			"Order filled: Your sell order #20003 on SOL is filled: $149.00 in this fill (Maker).",
			"Order filled: Your short order #20002 on SOL-PERP is filled: 1 at $151.00 (Maker).",
			"Order filled: Your short order #20001 on SOL-PERP is filled: 2 at $150.00 (Maker).",
		},
	}
	for w, feed := range map[string][]notify.Notification{alice.addr: aliceFeed, bob.addr: bobFeed} {
		var got []string
		for _, n := range feed {
			got = append(got, n.Title+": "+n.Body)
			if n.Authority != w || n.Status != notify.StatusSent || n.SentAt != kittest.DefaultNow.Unix() ||
				!slices.Equal(n.Channels, []string{notify.ChannelApp}) || len(n.Actions) == 0 {
				t.Errorf("notification %+v", n)
			}
		}
		if !slices.Equal(got, want[w]) {
			t.Errorf("feed of %s:\n got %q\nwant %q", w, got, want[w])
		}
	}
	// The data and the links of one, and the type of the liquidation.
	fill := aliceFeed[len(aliceFeed)-1]
	var data map[string]any
	if err := json.Unmarshal(fill.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data["event"] != "fill" || data["accountId"] != aliceMain || data["symbol"] != "SOL-PERP" || data["role"] != "taker" ||
		data["orderId"] != "10001" || data["baseAssetAmountFilled"] != "2000000000" || data["fillRecordId"] != "1" {
		t.Errorf("fill data %s", fill.Data)
	}
	if fill.Type != notify.TypeRecordUpdate || fill.Actions[0].Link != "/user/"+aliceMain+"/orders/id/10001" ||
		fill.CreatedAt != kittest.DefaultNow.Unix()-600 ||
		fill.ID != notify.NotificationID(alice.addr, notify.SourceFill, kittest.Sig("fills", 1), 1, fill.CreatedAt) {
		t.Errorf("fill notification %+v", fill)
	}
	if liq := aliceFeed[4]; liq.Type != notify.TypeAccountUpdate {
		t.Errorf("liquidation type %s", liq.Type)
	}

	// Delivered twice more, then replayed from the start after a crash: nothing changes.
	before := h.dump(t)
	for range 2 {
		h.Ingest(t, slices.Concat(early, owners, rest)...)
	}
	h.Restart(t, "notify", true)
	h.Ingest(t, slices.Concat(early, owners, rest)...)
	if after := h.dump(t); !bytes.Equal(after, before) {
		t.Fatalf("the notifications changed on replay:\nbefore %s\nafter  %s", before, after)
	}

	// The edge got each notification once, byte for byte as the feed serves it.
	kittest.Eventually(t, 30*time.Second, "the outbox to drain", func() bool { return h.Count(t, "notify.outbox") == 0 })
	served := map[string][]byte{}
	for _, w := range []wallet{alice, bob} {
		rec := h.call(t, w, http.MethodGet, "/notifications", nil)
		var page struct {
			Records []json.RawMessage `json:"records"`
		}
		decode(t, rec, &page)
		for _, r := range page.Records {
			var n notify.Notification
			if err := json.Unmarshal(r, &n); err != nil {
				t.Fatal(err)
			}
			served[n.ID] = r
		}
	}
	msgs := readTopic(t, h, events.TopicEdgeNotifications)
	if len(msgs) != 12 {
		t.Fatalf("%d edge messages, want one per notification (12)", len(msgs))
	}
	seqs := map[string]int{} // the last seq read of each wallet's channel
	for _, m := range msgs {
		var n notify.Notification
		if err := json.Unmarshal(m.Value, &n); err != nil {
			t.Fatalf("edge message %s: %v", m.Value, err)
		}
		if string(m.Key) != n.Authority || !bytes.Equal(m.Value, served[n.ID]) {
			t.Errorf("edge message key %s value %s, want the feed's %s", m.Key, m.Value, served[n.ID])
		}
		if v, _ := header(m, events.HeaderEventType); v != "notification" {
			t.Errorf("event-type %q", v)
		}
		// Each wallet's messages are numbered 1, 2, 3... in the order of its partition.
		channel, _ := header(m, events.HeaderEdgeChannel)
		seq, _ := header(m, events.HeaderEdgeSeq)
		if channel != events.NotificationsChannel(n.Authority) || seq != itoa(int64(seqs[channel]+1)) {
			t.Errorf("edge message of %s: channel %q seq %q after %d", n.Authority, channel, seq, seqs[channel])
		}
		seqs[channel]++
	}
	if len(seqs) != 2 {
		t.Errorf("edge messages of %d wallets' channels, want 2", len(seqs))
	}
}

// TestOldEventsStayOffTheEdge: an event older than the edge window makes a notification in the feed,
// but none on edge.notifications.
func TestOldEventsStayOffTheEdge(t *testing.T) {
	h := start(t)
	h.owners(t)
	old := kittest.SettlePnl(kittest.SOLPerp, bobMain, kittest.DefaultNow.Add(-time.Hour).Unix(), 1)
	recent := kittest.SettlePnl(kittest.SOLPerp, bobMain, kittest.DefaultNow.Add(-time.Minute).Unix(), 2)
	h.Ingest(t, kittest.Encode(t, events.TopicSettlePnl, old, recent)...)
	if got := len(h.allOf(t, bob, notify.StatusSent)); got != 2 {
		t.Fatalf("%d notifications in the feed, want 2", got)
	}
	kittest.Eventually(t, 30*time.Second, "the outbox to drain", func() bool { return h.Count(t, "notify.outbox") == 0 })
	msgs := readTopic(t, h, events.TopicEdgeNotifications)
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Value), `"createdAt":`+itoa(recent.Ts)) {
		t.Fatalf("edge messages %d, want only the recent one", len(msgs))
	}
}

// TestLateAccountsAreSweptUp: an occurrence kept while its account was unknown, whose account was
// recorded beside it without seeing it, is delivered by the upkeep job.
func TestLateAccountsAreSweptUp(t *testing.T) {
	h := start(t)
	h.Ingest(t, kittest.Encode(t, events.TopicSettlePnl, kittest.SettlePnl(kittest.SOLPerp, bobMain, kittest.DefaultNow.Unix()-60, 1))...)
	if n := h.Count(t, "notify.pending"); n != 1 {
		t.Fatalf("%d pending", n)
	}
	// As a writer of new-users that could not see the pending row would leave it.
	if _, err := h.Pool.Exec(context.Background(), `INSERT INTO notify.accounts (account, authority, sub_account_id, name, slot)
		VALUES ($1, $2, 0, 'Maker', 1)`, bobMain, bob.addr); err != nil {
		t.Fatal(err)
	}
	kittest.Eventually(t, 30*time.Second, "the pending occurrence to be delivered", func() bool {
		return h.Count(t, "notify.notifications") == 1 && h.Count(t, "notify.pending") == 0
	})
	if f := h.allOf(t, bob, notify.StatusSent); len(f) != 1 || f[0].Title != "P&L settled" {
		t.Fatalf("bob's feed %+v", f)
	}
}

// dump is every notification of the schema, as stored, in id order.
func (h *harness) dump(t *testing.T) []byte {
	t.Helper()
	var out []byte
	err := h.Pool.QueryRow(context.Background(), `SELECT coalesce(json_agg(n ORDER BY notification_id), '[]')::text
		FROM notify.notifications n`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readTopic reads every message of topic, every partition to its end.
func readTopic(t *testing.T, h *harness, topic string) []kafkago.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []kafkago.Message
	for p := range 3 {
		conn, err := kafkago.DialLeader(ctx, "tcp", h.Kafka.Brokers[0], topic, p)
		if err != nil {
			t.Fatalf("dial %s/%d: %v", topic, p, err)
		}
		first, last, err := conn.ReadOffsets()
		conn.Close()
		if err != nil {
			t.Fatalf("offsets of %s/%d: %v", topic, p, err)
		}
		if last == first {
			continue
		}
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: h.Kafka.Brokers, Topic: topic, Partition: p, MaxWait: 50 * time.Millisecond})
		if err := r.SetOffset(first); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("read %s/%d: %v", topic, p, err)
			}
			out = append(out, m)
			if m.Offset >= last-1 {
				break
			}
		}
		r.Close()
	}
	return out
}

func header(m kafkago.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
