package devstack_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	wsservice "github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/tools/sim"
)

// liveCandlesThroughRouter subscribes to SOL-PERP's minute candles through the edge router, which must
// pass the WebSocket upgrade through, and waits for a live change from the simulator.
func liveCandlesThroughRouter(t *testing.T, base string, deadline time.Time, edgePath func() string) {
	t.Helper()
	url := "ws" + strings.TrimPrefix(base, "http") + wsservice.Path
	var c *websocket.Conn
	eventually(t, deadline, "the WebSocket edge through the router", func() bool {
		conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		c = conn
		return true
	})
	defer c.Close()
	subscribe := func() {
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"subscribe","symbol":"SOL-PERP","resolution":"1"}`)); err != nil {
			t.Fatal(err)
		}
	}
	subscribe()
	_ = c.SetReadDeadline(deadline)
	var types []string
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %v: %v\nthe edge's path:\n%s", types, err, edgePath())
		}
		var m struct {
			Type    string          `json:"type"`
			Message string          `json:"message"`
			Candle  json.RawMessage `json:"candle"`
			Trades  json.RawMessage `json:"trades"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		// The backfill's candles are older than the market's edge window and the edge warmed before
		// they existed: it learns of SOL-PERP from its first live candle message, which may follow the
		// live trade the caller saw by a moment.
		if m.Type == "error" && strings.Contains(m.Message, "unknown symbol") && len(types) == 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			subscribe()
			continue
		}
		types = append(types, m.Type)
		if m.Type == "error" {
			t.Fatalf("error: %s", b)
		}
		if (m.Type == "update" || m.Type == "create") && len(m.Candle) > 0 && len(m.Trades) > 0 {
			if types[0] != "subscription" || types[1] != "init" {
				t.Fatalf("messages %v, want subscription and init first", types)
			}
			return
		}
	}
}

// TestREADMEListsEdgeVariables: the WebSocket edge's knobs are in the README too.
func TestREADMEListsEdgeVariables(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	vars := wsservice.Variables()
	if len(vars) < 10 {
		t.Fatalf("the edge reads only %d variables", len(vars))
	}
	for _, v := range vars {
		if !strings.Contains(string(readme), "`"+v.Name+"`") {
			t.Errorf("README.md does not list %s (read by the WebSocket edge)", v.Name)
		}
		if v.Name == "TIDEMARK_PAGE_KEY" || strings.HasPrefix(v.Name, "TIDEMARK_PG_") {
			t.Errorf("the edge reads %s, which it has no use for", v.Name)
		}
	}
}

// liveChannelsThroughRouter subscribes, through the edge router, to markets, pricing and the
// notifications of simulated wallets, and waits for what the mesh publishes live: the stats service's
// market summaries and pricing (an init, then an update of each) and a notification from the notify
// service for one of the wallets.
func liveChannelsThroughRouter(t *testing.T, base string, deadline time.Time, edgePath func() string) {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+wsservice.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer c.Close()
	// Within the edge's burst of client messages (50) and its subscriptions per connection (100).
	subs := []string{`{"type":"subscribe","channelType":"markets"}`, `{"type":"subscribe","channelType":"pricing"}`}
	seen := map[string]bool{}
	for _, a := range sim.New(sim.DefaultConfig()).Accounts() {
		if !seen[a.Authority] && len(subs) < 40 {
			seen[a.Authority] = true
			subs = append(subs, `{"type":"subscribe","channelType":"notifications","authority":"`+a.Authority+`"}`)
		}
	}
	for _, s := range subs {
		if err := c.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(deadline)
	got := map[string]bool{} // "<channelType> <type>"
	want := []string{"markets init", "markets update", "pricing init", "pricing update", "notifications update"}
	for {
		done := true
		for _, w := range want {
			done = done && got[w]
		}
		if done {
			return
		}
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %v: %v\nthe edge's path:\n%s", got, err, edgePath())
		}
		var m struct {
			Type        string          `json:"type"`
			ChannelType string          `json:"channelType"`
			Data        json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if m.Type == "error" {
			t.Fatalf("error: %s", b)
		}
		if m.Type != "subscription" && len(m.Data) < 3 { // at least one element or field
			t.Fatalf("%s %s without data: %s", m.ChannelType, m.Type, b)
		}
		got[m.ChannelType+" "+m.Type] = true
	}
}
