package service_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/notify"
)

// settlements are n settlements of account, a minute apart, the newest a minute before the clock.
func settlements(t *testing.T, account string, n int) []events.Message {
	t.Helper()
	var recs []events.Record
	for i := range n {
		recs = append(recs, kittest.SettlePnl(kittest.SOLPerp, account, kittest.DefaultNow.Unix()-int64(60*(n-i)), i+1))
	}
	return kittest.Encode(t, events.TopicSettlePnl, recs...)
}

// TestEveryOperationOfTheDocument calls every Notifications operation with signed requests, each
// answer validated against api/openapi.yaml, and requires each to have answered a validated 2xx.
func TestEveryOperationOfTheDocument(t *testing.T) {
	h := start(t)
	h.owners(t)
	h.Ingest(t, settlements(t, aliceMain, 3)...)
	var f feed
	h.callJSON(t, alice, http.MethodGet, "/notifications", nil, 200, &f)
	h.callJSON(t, alice, http.MethodPut, "/notifications/"+f.Records[0].ID+"/read", nil, 200, nil)
	h.callJSON(t, alice, http.MethodGet, "/notifications?status=READ", nil, 200, nil)
	h.callJSON(t, alice, http.MethodGet, "/notifications/preferences", nil, 200, nil)
	h.callJSON(t, alice, http.MethodPut, "/notifications/preferences", map[string]any{"pushOptOutTypes": []string{"PRICE_ALERT"}}, 200, nil)
	h.callJSON(t, alice, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "phone", "token": "tok", "platform": "ios"}, 200, nil)
	h.callJSON(t, alice, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "laptop", "token": "tok2"}, 200, nil)
	h.callJSON(t, alice, http.MethodGet, "/notifications/devices", nil, 200, nil)
	h.callJSON(t, alice, http.MethodDelete, "/notifications/devices/phone", nil, 200, nil)
	h.Validator.RequireCovered(t, "/notifications")
	// And the refusals are documented as they are answered.
	h.do(t, http.MethodGet, "/notifications/devices", nil, nil)
	hdr := sign(t, eve, notify.Message{Action: notify.ActionNotifications, Ts: float64(kittest.DefaultNow.Unix()), WalletAddress: eve.addr,
		IsDelegate: true, ServiceUserAccount: bobMain}, notify.Base58)
	if rec := h.do(t, http.MethodGet, "/notifications/preferences", nil, &hdr); rec.Code != 403 {
		t.Fatalf("a wallet that is no delegate: %d", rec.Code)
	}
}

// TestFeed: newest first, 20 a page, a token bound to its wallet and status; read notifications move
// from SENT to READ; a wallet nothing happened to has an empty feed.
func TestFeed(t *testing.T) {
	h := start(t)
	h.owners(t)
	h.Ingest(t, settlements(t, aliceMain, 45)...)
	all := h.allOf(t, alice, notify.StatusSent)
	if len(all) != 45 {
		t.Fatalf("%d notifications, want 45", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].CreatedAt >= all[i-1].CreatedAt {
			t.Fatalf("not newest first at %d", i)
		}
	}
	var first feed
	h.callJSON(t, alice, http.MethodGet, "/notifications", nil, 200, &first)
	if len(first.Records) != 20 || first.Meta.NextPage == nil {
		t.Fatalf("first page: %d records, next %v", len(first.Records), first.Meta.NextPage)
	}
	tok := *first.Meta.NextPage
	for _, tc := range []struct {
		w    wallet
		path string
	}{
		{bob, "/notifications?page=" + tok},                // another wallet's token
		{alice, "/notifications?status=READ&page=" + tok},  // another status's
		{alice, "/notifications?page=" + tok[:len(tok)-2]}, // damaged
	} {
		rec := h.call(t, tc.w, http.MethodGet, tc.path, nil)
		if msg, _ := errorOf(t, rec); rec.Code != 400 || msg != "Invalid page token" {
			t.Errorf("%s as %s: %d %s", tc.path, tc.w.addr, rec.Code, rec.Body)
		}
	}
	for _, status := range []string{"sent", "UNREAD", ""} {
		if rec := h.call(t, alice, http.MethodGet, "/notifications?status="+status, nil); rec.Code != 400 ||
			!strings.Contains(rec.Body.String(), "status") {
			t.Errorf("status %q: %d %s", status, rec.Code, rec.Body)
		}
	}
	// Read two: they leave SENT for READ, the first read time kept.
	for _, n := range all[:2] {
		var r struct {
			Record notify.Notification `json:"record"`
		}
		h.callJSON(t, alice, http.MethodPut, "/notifications/"+n.ID+"/read", nil, 200, &r)
		if r.Record.Status != notify.StatusRead || r.Record.ID != n.ID {
			t.Fatalf("read answer %+v", r.Record)
		}
		h.callJSON(t, alice, http.MethodPut, "/notifications/"+n.ID+"/read", nil, 200, nil) // again: unchanged
	}
	if read, sent := h.allOf(t, alice, notify.StatusRead), h.allOf(t, alice, notify.StatusSent); len(read) != 2 || len(sent) != 43 ||
		read[0].ID != all[0].ID {
		t.Fatalf("%d read, %d sent", len(read), len(sent))
	}
	for _, status := range []string{notify.StatusPending, notify.StatusFailed} {
		if got := h.allOf(t, alice, status); len(got) != 0 {
			t.Errorf("%d %s", len(got), status)
		}
	}
	if got := h.allOf(t, eve, notify.StatusSent); len(got) != 0 {
		t.Fatalf("a wallet nothing happened to has %d notifications", len(got))
	}
	for _, id := range []string{"nope", strings.ToUpper(all[5].ID), "0190b7a0-0000-7000-8000-00000000000"} {
		if rec := h.call(t, alice, http.MethodPut, "/notifications/"+id+"/read", nil); rec.Code != 400 {
			t.Errorf("id %q: %d %s", id, rec.Code, rec.Body)
		}
	}
}

// TestWalletsAreIsolated: a wallet never reads or changes another's notifications, devices or
// preferences, even knowing their ids.
func TestWalletsAreIsolated(t *testing.T) {
	h := start(t)
	h.owners(t)
	h.Ingest(t, settlements(t, aliceMain, 2)...)
	h.Ingest(t, settlements(t, bobMain, 3)...)
	aliceN, bobN := h.allOf(t, alice, notify.StatusSent), h.allOf(t, bob, notify.StatusSent)
	if len(aliceN) != 2 || len(bobN) != 3 {
		t.Fatalf("feeds of %d and %d", len(aliceN), len(bobN))
	}
	for _, n := range bobN {
		if n.Authority != bob.addr {
			t.Fatalf("bob's feed has %s's notification", n.Authority)
		}
	}
	// Marking another's notification read: not found, and it stays unread.
	rec := h.call(t, alice, http.MethodPut, "/notifications/"+bobN[0].ID+"/read", nil)
	if msg, _ := errorOf(t, rec); rec.Code != 404 || !strings.Contains(msg, "not found") {
		t.Fatalf("alice reading bob's notification: %d %s", rec.Code, rec.Body)
	}
	if len(h.allOf(t, bob, notify.StatusSent)) != 3 {
		t.Fatal("bob's notification changed")
	}
	// Devices of the same id are each wallet's own.
	h.callJSON(t, alice, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "shared", "token": "alice-token"}, 200, nil)
	h.callJSON(t, bob, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "shared", "token": "bob-token", "platform": "web"}, 200, nil)
	h.callJSON(t, bob, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "bobs", "token": "t"}, 200, nil)
	if rec := h.call(t, alice, http.MethodDelete, "/notifications/devices/bobs", nil); rec.Code != 404 {
		t.Fatalf("alice removing bob's device: %d %s", rec.Code, rec.Body)
	}
	var devs struct {
		Records []notify.Device `json:"records"`
	}
	h.callJSON(t, bob, http.MethodGet, "/notifications/devices", nil, 200, &devs)
	i := slices.IndexFunc(devs.Records, func(d notify.Device) bool { return d.DeviceID == "shared" })
	if len(devs.Records) != 2 || i < 0 || devs.Records[i].Platform == nil || *devs.Records[i].Platform != "web" {
		t.Fatalf("bob's devices %+v", devs.Records)
	}
	h.callJSON(t, alice, http.MethodDelete, "/notifications/devices/shared", nil, 200, nil)
	h.callJSON(t, bob, http.MethodGet, "/notifications/devices", nil, 200, &devs)
	if len(devs.Records) != 2 {
		t.Fatalf("alice's removal took bob's device: %+v", devs.Records)
	}
	var token string
	if err := h.Pool.QueryRow(t.Context(), `SELECT token FROM notify.devices WHERE authority = $1 AND device_id = 'shared'`, bob.addr).Scan(&token); err != nil || token != "bob-token" {
		t.Fatalf("bob's token %q %v", token, err)
	}
	// Preferences are each wallet's own.
	h.callJSON(t, alice, http.MethodPut, "/notifications/preferences", map[string]any{"pushOptOutTypes": []string{"RECORD_UPDATE"}}, 200, nil)
	var prefs notify.Preferences
	h.callJSON(t, bob, http.MethodGet, "/notifications/preferences", nil, 200, &prefs)
	if len(prefs.PushOptOutTypes) != 0 {
		t.Fatalf("bob's preferences %+v", prefs)
	}
}

// TestPushFollowsPreferencesAndDevices: a notification goes out on push when the wallet has a device
// and did not opt out of its type; on the app channel always.
func TestPushFollowsPreferencesAndDevices(t *testing.T) {
	h := start(t)
	h.owners(t)
	h.Ingest(t, settlements(t, aliceMain, 1)...) // no device yet
	h.callJSON(t, alice, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "phone", "token": "t", "platform": "android"}, 200, nil)
	h.Ingest(t, kittest.Encode(t, events.TopicSettlePnl, kittest.SettlePnl(kittest.SOLPerp, aliceMain, kittest.DefaultNow.Unix()-30, 50))...)
	h.callJSON(t, alice, http.MethodPut, "/notifications/preferences", map[string]any{"pushOptOutTypes": []string{"RECORD_UPDATE", "RECORD_UPDATE"}}, 200, nil)
	h.Ingest(t, kittest.Encode(t, events.TopicSettlePnl, kittest.SettlePnl(kittest.SOLPerp, aliceMain, kittest.DefaultNow.Unix()-20, 51))...)
	got := h.allOf(t, alice, notify.StatusSent)
	want := [][]string{{"app"}, {"app", "push"}, {"app"}} // newest first: opted out, queued, no device
	if len(got) != 3 {
		t.Fatalf("%d notifications", len(got))
	}
	for i, n := range got {
		if !slices.Equal(n.Channels, want[i]) {
			t.Errorf("notification %d channels %v, want %v", i, n.Channels, want[i])
		}
	}
	var pushes []string
	rows, err := h.Pool.Query(t.Context(), `SELECT push FROM notify.notifications ORDER BY created_at DESC`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pushes = append(pushes, p)
	}
	if !slices.Equal(pushes, []string{"skipped", "queued", "skipped"}) {
		t.Errorf("push states %v", pushes)
	}
}

// TestBodies: bad bodies are 400s naming the field; bodies over 16 KiB are refused; a wallet keeps at
// most 20 devices.
func TestBodies(t *testing.T) {
	h := start(t)
	cases := []struct {
		method, path string
		body         string
		message      string
	}{
		{http.MethodPut, "/notifications/preferences", ``, "request body is empty"},
		{http.MethodPut, "/notifications/preferences", `{}`, "pushOptOutTypes is required"},
		{http.MethodPut, "/notifications/preferences", `{"pushOptOutTypes":null}`, "pushOptOutTypes is required"},
		{http.MethodPut, "/notifications/preferences", `{"pushOptOutTypes":"RECORD_UPDATE"}`, "pushOptOutTypes"},
		{http.MethodPut, "/notifications/preferences", `{"pushOptOutTypes":["record_update"]}`, `pushOptOutTypes: "record_update" is not a notification type`},
		{http.MethodPut, "/notifications/preferences", `{"pushOptOutTypes":[],"email":true}`, `unknown field "email"`},
		{http.MethodPut, "/notifications/preferences", `{"pushOptOutTypes":[]} {}`, "unexpected data after the JSON value"},
		{http.MethodPut, "/notifications/preferences", `{"pushOptOutTypes":["` + strings.Repeat("A", 17<<10) + `"]}`, "request body exceeds 16384 bytes"},
		{http.MethodPost, "/notifications/devices", `{"token":"t"}`, "deviceId is required"},
		{http.MethodPost, "/notifications/devices", `{"deviceId":"","token":"t"}`, "deviceId is required"},
		{http.MethodPost, "/notifications/devices", `{"deviceId":"` + strings.Repeat("d", 129) + `","token":"t"}`, "deviceId is required: printable text of at most 128 bytes"},
		{http.MethodPost, "/notifications/devices", `{"deviceId":"a\u0000b","token":"t"}`, "deviceId"},
		{http.MethodPost, "/notifications/devices", `{"deviceId":"p"}`, "token is required"},
		{http.MethodPost, "/notifications/devices", `{"deviceId":"p","token":"` + strings.Repeat("t", 4097) + `"}`, "token is required"},
		{http.MethodPost, "/notifications/devices", `{"deviceId":"p","token":"t","platform":"windows"}`, "platform must be one of ios, android, web"},
		{http.MethodPost, "/notifications/devices", `{"deviceId":7,"token":"t"}`, "deviceId"},
		{http.MethodPost, "/notifications/devices", `[]`, "invalid JSON body"},
	}
	for _, tc := range cases {
		rec := h.call(t, alice, tc.method, tc.path, tc.body)
		if msg, _ := errorOf(t, rec); rec.Code != 400 || !strings.Contains(msg, tc.message) {
			t.Errorf("%s %s %.60q: %d %s, want 400 with %q", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.message)
		}
	}
	for i := range notify.MaxDevices {
		h.callJSON(t, alice, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": fmt.Sprint("d", i), "token": "t"}, 200, nil)
	}
	// The 21st is refused; registering one of the 20 again updates it.
	rec := h.call(t, alice, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "d20", "token": "t"})
	if msg, _ := errorOf(t, rec); rec.Code != 409 || !strings.Contains(msg, "at most 20 devices") {
		t.Fatalf("21st device: %d %s", rec.Code, rec.Body)
	}
	var d struct {
		Record notify.Device `json:"record"`
	}
	h.callJSON(t, alice, http.MethodPost, "/notifications/devices", map[string]any{"deviceId": "d3", "token": "new", "platform": "ios"}, 200, &d)
	if d.Record.Platform == nil || *d.Record.Platform != "ios" {
		t.Fatalf("updated device %+v", d.Record)
	}
	if rec := h.call(t, alice, http.MethodDelete, "/notifications/devices/"+strings.Repeat("x", 129), nil); rec.Code != 400 {
		t.Fatalf("overlong device id: %d", rec.Code)
	}
	if rec := h.call(t, alice, http.MethodDelete, "/notifications/devices/unknown", nil); rec.Code != 404 {
		t.Fatalf("unknown device: %d", rec.Code)
	}
}

// TestPreflight: browsers on other origins may send the three headers.
func TestPreflight(t *testing.T) {
	h := start(t)
	for _, method := range []string{http.MethodGet, http.MethodPut} {
		r := newRequest(http.MethodOptions, "/notifications/preferences")
		r.Header.Set("Origin", "https://app.example")
		r.Header.Set("Access-Control-Request-Method", method)
		rec := serve(h, r)
		allowed := rec.Header().Get("Access-Control-Allow-Headers")
		if rec.Code != 204 || !strings.Contains(allowed, "x-wallet-address") || !strings.Contains(allowed, "x-signature") ||
			!strings.Contains(allowed, "x-signed-message") {
			t.Errorf("preflight of %s: %d, Allow-Headers %q", method, rec.Code, allowed)
		}
	}
}
