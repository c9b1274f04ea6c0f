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
)

// liveCandlesThroughRouter subscribes to SOL-PERP's minute candles through the edge router, which must
// pass the WebSocket upgrade through, and waits for a live change from the simulator.
func liveCandlesThroughRouter(t *testing.T, base string, deadline time.Time) {
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
			t.Fatalf("after %v: %v", types, err)
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
