package asyncapitest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/api/asyncapitest"
)

// TestDocument: the document is AsyncAPI 2.6, every message its channel names is defined and
// compiles, and the validator tells a valid message from an invalid one.
func TestDocument(t *testing.T) {
	doc, err := api.AsyncAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		AsyncAPI string                     `json:"asyncapi"`
		Channels map[string]json.RawMessage `json:"channels"`
	}
	if err := json.Unmarshal(doc, &head); err != nil || head.AsyncAPI != "2.6.0" || head.Channels["/ws"] == nil {
		t.Fatalf("head = %+v, %v", head, err)
	}
	v, err := asyncapitest.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range strings.Split(string(head.Channels["/ws"]), `"$ref":"#/components/messages/`)[1:] {
		name := ref[:strings.IndexByte(ref, '"')]
		if err := v.ValidateAs(name, []byte(`{}`)); err == nil || strings.Contains(err.Error(), "no message") {
			t.Errorf("message %s: an empty object validates or the message is missing: %v", name, err)
		}
	}
	tests := []struct {
		msg  string
		good bool
	}{
		{`{"type":"error","message":"unknown channel type"}`, true},
		{`{"type":"error","message":"x","extra":1}`, false},
		{`{"type":"subscription","message":"Subscribed to pricing updates","channelType":"pricing","channel":"pricing","seq":4}`, true},
		{`{"type":"subscription","message":"m","channelType":"pricing","channel":"pricing","seq":0}`, true},
		{`{"type":"subscription","message":"m","channelType":"pricing","channel":"pricing","seq":"0:1,1:4"}`, false},
		{`{"type":"subscription","message":"m","channelType":"pricing","channel":"pricing","seq":-1}`, false},
		{`{"type":"subscription","message":"m","channelType":"pricing","channel":"pricing","seq":1.5}`, false},
		{`{"type":"update","candle":{},"trades":[],"seq":1}`, false},
		{`{"type":"update","channelType":"markets","channel":"pricing","data":[],"seq":1}`, false},
	}
	for _, tt := range tests {
		err := v.Validate([]byte(tt.msg))
		if (err == nil) != tt.good {
			t.Errorf("%s: valid %v, want %v (%v)", tt.msg, err == nil, tt.good, err)
		}
	}
}
