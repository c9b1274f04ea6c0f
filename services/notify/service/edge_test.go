package service_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/mesh"
)

// edgeSeq is GET /internal/edge/notifications?authority= on the internal port: its status and body.
func edgeSeq(t *testing.T, base, authority string, query bool) (int, map[string]any) {
	t.Helper()
	u := base + mesh.EdgeNotifications
	if query {
		u += "?" + url.Values{"authority": {authority}}.Encode()
	}
	a := kittest.Fetch(t, http.MethodGet, u)
	var body map[string]any
	if err := json.Unmarshal(a.Body, &body); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return a.Status, body
}

// TestEdgeSeqOfAWallet: the internal route answers the seq of a wallet's notifications channel, the
// number of its notifications published to the edge (an event older than the edge window makes one
// in the feed and none on the channel), and the same number the channel's last message carries; 0
// for a wallet with none; 400 naming a missing or malformed authority. It is not on the public port.
func TestEdgeSeqOfAWallet(t *testing.T) {
	h := start(t)
	h.owners(t)
	old := kittest.SettlePnl(kittest.SOLPerp, aliceMain, kittest.DefaultNow.Add(-time.Hour).Unix(), 99)
	h.Ingest(t, settlements(t, aliceMain, 4)...)
	h.Ingest(t, kittest.Encode(t, events.TopicSettlePnl, old)...)
	h.Ingest(t, settlements(t, bobMain, 2)...)
	internal := h.InternalServer(t, "notify").URL

	for _, c := range []struct {
		wallet string
		want   float64
	}{{alice.addr, 4}, {bob.addr, 2}, {eve.addr, 0}} {
		status, body := edgeSeq(t, internal, c.wallet, true)
		seqs, _ := body["seqs"].(map[string]any)
		if status != http.StatusOK || body["success"] != true || len(seqs) != 1 || seqs[events.NotificationsChannel(c.wallet)] != c.want {
			t.Errorf("%s: %d %v, want seqs {%s: %v}", c.wallet, status, body, events.NotificationsChannel(c.wallet), c.want)
		}
	}
	// The count is the seq the outbox gave alice's last edge message.
	kittest.Eventually(t, 30*time.Second, "the outbox to drain", func() bool { return h.Count(t, "notify.outbox") == 0 })
	var last string
	for _, m := range readTopic(t, h, events.TopicEdgeNotifications) {
		if string(m.Key) == alice.addr {
			last, _ = header(m, events.HeaderEdgeSeq)
		}
	}
	if last != "4" {
		t.Errorf("alice's last edge message has seq %q, want 4", last)
	}

	for _, c := range []struct {
		name      string
		authority string
		query     bool
		says      string
	}{
		{"missing", "", false, "authority is required"},
		{"empty", "", true, "authority is required"},
		{"not base58", "0OIl" + strings.Repeat("1", 40), true, "not a wallet address"},
		{"too short", "abc", true, "not a wallet address"},
	} {
		status, body := edgeSeq(t, internal, c.authority, c.query)
		msg, _ := body["message"].(string)
		if status != http.StatusBadRequest || body["success"] != false || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %v, want 400 saying %q", c.name, status, body, c.says)
		}
	}
	if rec := serve(h, newRequest(http.MethodGet, mesh.EdgeNotifications+"?authority="+alice.addr)); rec.Code != http.StatusNotFound {
		t.Errorf("the public port answers the internal route: %d %s", rec.Code, rec.Body)
	}
}
