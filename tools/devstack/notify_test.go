package devstack_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark/services/notify"
	"github.com/tidemark/tidemark/tools/sim"
)

// notificationsThroughTheEdge signs requests as the simulated wallet that owns account (make run's
// simulator, seed 1) and reads its feed through the edge until the notification of account's fill at
// ts is there; an unsigned request is refused.
func notificationsThroughTheEdge(t *testing.T, base, account string, ts int64, deadline time.Time) {
	t.Helper()
	s := sim.New(sim.DefaultConfig())
	var wallet string
	for _, a := range s.Accounts() {
		if a.User == account {
			wallet = a.Authority
		}
	}
	key, ok := s.WalletKey(wallet)
	if !ok {
		t.Fatalf("account %s has no simulated wallet", account)
	}
	get := func(path string, signed bool) (int, []byte) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if signed {
			hdr, err := notify.Sign(key, notify.Message{Action: notify.ActionNotifications, Ts: float64(time.Now().UnixMicro()) / 1e6}, notify.Base58)
			if err != nil {
				t.Fatal(err)
			}
			hdr.Set(req.Header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if code, body := get("/notifications", false); code != http.StatusUnauthorized {
		t.Fatalf("an unsigned request: %d %s", code, body)
	}
	eventually(t, deadline, "the notification of the taker's fill in its wallet's feed", func() bool {
		path := "/notifications"
		for range 20 { // pages, newest first, down to the fill
			code, body := get(path, true)
			var page struct {
				Records []notify.Notification `json:"records"`
				Meta    struct {
					NextPage *string `json:"nextPage"`
				} `json:"meta"`
			}
			if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
				t.Fatalf("GET %s as %s: %d %s", path, wallet, code, body)
			}
			for _, n := range page.Records {
				var data struct {
					Event   string `json:"event"`
					Account string `json:"accountId"`
				}
				if json.Unmarshal(n.Data, &data) == nil && n.CreatedAt == ts && data.Event == "fill" && data.Account == account {
					return true
				}
				if n.CreatedAt < ts {
					return false
				}
			}
			if page.Meta.NextPage == nil {
				return false
			}
			path = "/notifications?page=" + *page.Meta.NextPage
		}
		return false
	})
}
