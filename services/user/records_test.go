package user_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/user"
)

// TestActionJSON: an action other than a fill has null for the fill-only fields it leaves empty, keeps
// those it carries, and keeps the record type's field order.
func TestActionJSON(t *testing.T) {
	a := kittest.Fill(kittest.SOLPerp, 1_800_000_000, 7, 0, 0, 0)
	a.Action, a.ActionExplanation = events.ActionCancel, "none"
	a.FillerReward, a.Filler, a.FillRecordID, a.Maker, a.MakerOrderID = "", "", "", "", ""
	a.Taker = `a "quoted" taker`
	b, err := user.ActionJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"ts":1800000000,`) {
		t.Errorf("not in the record's order: %s", b)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"fillerReward": nil, "filler": nil, "fillRecordId": nil, "maker": nil, "makerOrderId": nil,
		"taker": `a "quoted" taker`, "takerOrderId": a.TakerOrderID, "action": "cancel",
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %#v (present %v), want %#v", k, v, ok, want)
		}
	}
}
