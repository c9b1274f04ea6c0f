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
		{"pricing with since", `{"type":"subscribe","channelType":"pricing","since":49}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Pricing}, Since: seq(49)}, ""},
		{"since as a string", `{"type":"subscribe","channelType":"pricing","since":"49"}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Pricing}, Since: seq(49)}, ""},
		{"since 0", `{"type":"subscribe","channelType":"markets","since":0}`,
			ws.Request{Action: ws.Subscribe, Channel: ws.Channel{Type: ws.Markets}, Since: seq(0)}, ""},
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
		{"the old partition token", `{"type":"subscribe","channelType":"markets","since":"0:51,1:0"}`, ws.Request{}, "is not a seq"},
		{"negative since", `{"type":"subscribe","channelType":"markets","since":-1}`, ws.Request{}, "non-negative integer"},
		{"fractional since", `{"type":"subscribe","channelType":"markets","since":1.5}`, ws.Request{}, "is not a seq"},
		{"since an object", `{"type":"subscribe","channelType":"markets","since":{}}`, ws.Request{}, "is not a seq"},
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
			if got.Action != tt.want.Action || got.Channel != tt.want.Channel || got.All != tt.want.All || !sameSeq(got.Since, tt.want.Since) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func seq(n int64) *int64 { return &n }

func sameSeq(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

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
		// The producers name the channels in their messages' headers with the same names.
		if got := tt.c.Name(); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.c, got, tt.want)
		}
	}
}
