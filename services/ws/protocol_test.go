package ws_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/ws"
)

func TestParseRequest(t *testing.T) {
	auth := kittest.Key(7)
	tests := []struct {
		name, msg string
		want      ws.Request
		err       string // a substring of the error message; "" for none
	}{
		{"spec candle", `{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Candle, Symbol: "SOL-PERP", Resolution: "1"}}, ""},
		{"existing clients' candle: no channelType", `{"type":"subscribe","symbol":"SOL-PERP","resolution":"D"}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Candle, Symbol: "SOL-PERP", Resolution: "D"}}, ""},
		{"numeric resolution", `{"type":"subscribe","symbol":"SOL-PERP","resolution":60}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Candle, Symbol: "SOL-PERP", Resolution: "60"}}, ""},
		{"markets", `{"type":"subscribe","channelType":"markets"}`, ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Markets}}, ""},
		{"pricing with since", `{"type":"subscribe","channelType":"pricing","since":"0:4,2:9"}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Pricing}, Since: ws.Position{{0, 4}, {2, 9}}}, ""},
		{"notifications", `{"type":"subscribe","channelType":"notifications","authority":"` + auth + `"}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Notifications, Authority: auth}}, ""},
		{"notifications authorityId", `{"type":"subscribe","channelType":"notifications","authorityId":"` + auth + `"}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Notifications, Authority: auth}}, ""},
		{"unsubscribe everything", `{"type":"unsubscribe"}`, ws.Request{Action: ws.Unsubscribe, All: true}, ""},
		{"unsubscribe candle", `{"type":"unsubscribe","symbol":"SOL-PERP","resolution":"1"}`,
			ws.Request{Action: ws.Unsubscribe, Channel: ws.Channel{Type: ws.Candle, Symbol: "SOL-PERP", Resolution: "1"}}, ""},

		{"not JSON", `subscribe me`, ws.Request{}, "not a JSON object"},
		{"JSON array", `[1]`, ws.Request{}, "not a JSON object"},
		{"no type", `{"channelType":"markets"}`, ws.Request{}, "type is required"},
		{"type not a string", `{"type":1}`, ws.Request{}, "type must be a string"},
		{"unknown type", `{"type":"ping"}`, ws.Request{}, `unknown message type "ping"`},
		{"channelType not a string", `{"type":"subscribe","channelType":["candle"]}`, ws.Request{}, "channelType must be a string"},
		{"unknown channelType", `{"type":"subscribe","channelType":"trades"}`, ws.Request{}, `unknown channel type "trades"`},
		{"orderbook reserved", `{"type":"subscribe","channelType":"orderbook","symbol":"SOL-PERP"}`, ws.Request{}, "orderbook is reserved"},
		{"user reserved", `{"type":"subscribe","channelType":"user","accountId":"` + auth + `"}`, ws.Request{}, "user is reserved"},
		{"no channel", `{"type":"subscribe"}`, ws.Request{}, "channelType is required"},
		{"candle without symbol", `{"type":"subscribe","channelType":"candle","resolution":"1"}`, ws.Request{}, "symbol is required"},
		{"candle without resolution", `{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP"}`, ws.Request{}, "resolution is required"},
		{"unknown resolution", `{"type":"subscribe","symbol":"SOL-PERP","resolution":"2"}`, ws.Request{}, `unknown resolution "2"`},
		{"notifications without authority", `{"type":"subscribe","channelType":"notifications"}`, ws.Request{}, "authority is required"},
		{"notifications bad authority", `{"type":"subscribe","channelType":"notifications","authority":"0xabc"}`, ws.Request{}, "not a wallet address"},
		{"bad since", `{"type":"subscribe","channelType":"markets","since":"yesterday"}`, ws.Request{}, "since"},
		{"since not a string", `{"type":"subscribe","channelType":"markets","since":12}`, ws.Request{}, "since must be"},
		{"since out of order", `{"type":"subscribe","channelType":"markets","since":"2:1,1:1"}`, ws.Request{}, "out of order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.ParseRequest([]byte(tt.msg))
			if tt.err != "" {
				var re *ws.RequestError
				if !errors.As(err, &re) || !strings.Contains(re.Message, tt.err) {
					t.Fatalf("err = %v, want a RequestError containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Action != tt.want.Action || got.Channel != tt.want.Channel || got.All != tt.want.All || got.Since.String() != tt.want.Since.String() {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPosition(t *testing.T) {
	p := ws.Position{}.With(2, 10).With(0, 5).With(2, 11).With(1, 7)
	if p.String() != "0:5,1:7,2:11" {
		t.Fatalf("position = %s", p)
	}
	back, err := ws.ParsePosition(p.String())
	if err != nil || back.String() != p.String() {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if off, ok := p.Of(1); !ok || off != 7 {
		t.Errorf("Of(1) = %d %v", off, ok)
	}
	if _, ok := p.Of(3); ok {
		t.Error("Of(3) found")
	}
	for _, bad := range []string{"", "1", "1:", ":1", "a:1", "1:-1", "0:1,0:2", "-1:3", "1:1,"} {
		if _, err := ws.ParsePosition(bad); err == nil {
			t.Errorf("ParsePosition(%q) accepted", bad)
		}
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		c    ws.Channel
		want string
	}{
		{ws.Channel{Type: ws.Candle, Symbol: "SOL-PERP", Resolution: "1"}, "candle:SOL-PERP:1"},
		{ws.Channel{Type: ws.Markets}, "markets:summary"},
		{ws.Channel{Type: ws.Pricing}, "pricing"},
		{ws.Channel{Type: ws.Notifications, Authority: "abc"}, "notifications:abc"},
	} {
		if got := tt.c.Name(); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.c, got, tt.want)
		}
	}
}
