package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/notify/service"
	"github.com/tidemark/tidemark/tools/sim"
)

func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }

// TestSignsForTheSimulatedWallets runs the tool against the notify service fed the simulator's
// new-user records: a simulated wallet, its delegate, a key given in base58 and a keypair file each
// sign requests the service accepts.
func TestSignsForTheSimulatedWallets(t *testing.T) {
	s := kittest.Up(t, kittest.Options{}, service.Service(service.Config{}))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	simulator := sim.New(sim.DefaultConfig())
	var users []events.Record
	var delegated sim.Account
	for i, a := range simulator.Accounts() {
		users = append(users, &events.NewUser{Tx: events.Tx{Ts: kittest.DefaultNow.Unix() - 3600, TxSig: kittest.Sig("newus", i), Slot: int64(i + 1)},
			UserAuthority: a.Authority, User: a.User, SubAccountID: a.SubAccountID, Name: a.Name, Delegate: a.Delegate})
		if a.Delegate != "" && delegated.User == "" {
			delegated = a
		}
	}
	first := simulator.Accounts()[0]
	s.Ingest(t, kittest.Encode(t, events.TopicNewUsers, users...)...)
	s.Ingest(t, kittest.Encode(t, events.TopicSettlePnl, kittest.SettlePnl(kittest.SOLPerp, first.User, kittest.DefaultNow.Unix()-60, 1))...)

	// The service's clock stands still; the tool's moves a millisecond a run, as a person's would more.
	clock := kittest.DefaultNow
	tool := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		clock = clock.Add(time.Millisecond)
		code, err := run(context.Background(), append([]string{"-url", srv.URL}, args...), &out, &errOut, srv.Client(),
			func() time.Time { return clock })
		if err != nil {
			t.Fatalf("notifysign %v: %v (%s)", args, err, errOut.String())
		}
		return code, out.String(), errOut.String()
	}
	// The first simulated wallet reads its feed, by index and by address, in either encoding.
	for _, args := range [][]string{{"-wallet", "0", "/notifications"}, {"-wallet", first.Authority, "-base64", "/notifications"}} {
		code, out, status := tool(args...)
		if code != 0 || !strings.Contains(out, `"title": "P\u0026L settled"`) || !strings.Contains(status, "200 OK") {
			t.Fatalf("%v: exit %d, %s %s", args, code, status, out)
		}
	}
	// Its delegate reads the same feed.
	if code, out, status := tool("-wallet", delegated.Delegate, "-delegate-for", delegated.User, "/notifications"); code != 0 {
		t.Fatalf("the delegate: exit %d, %s %s", code, status, out)
	}
	// A body, and the answer's status as the exit code.
	if code, out, _ := tool("-wallet", "0", "-X", "PUT", "-d", `{"pushOptOutTypes":["RECORD_UPDATE"]}`, "/notifications/preferences"); code != 0 ||
		!strings.Contains(out, "RECORD_UPDATE") {
		t.Fatalf("preferences: exit %d, %s", code, out)
	}
	if code, out, _ := tool("-wallet", "0", "-X", "PUT", "-d", `{}`, "/notifications/preferences"); code != 1 || !strings.Contains(out, "pushOptOutTypes is required") {
		t.Fatalf("a bad body: exit %d, %s", code, out)
	}
	// Keys given directly: a base58 seed, a base58 keypair and a keypair file.
	seed := sha256.Sum256([]byte("notifysign test"))
	key := ed25519.NewKeyFromSeed(seed[:])
	file := filepath.Join(t.TempDir(), "id.json")
	nums := make([]int, len(key))
	for i, b := range key {
		nums[i] = int(b)
	}
	raw, _ := json.Marshal(nums)
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-key", events.EncodeBase58(seed[:])}, {"-key", events.EncodeBase58(key)}, {"-key-file", file}} {
		if code, out, status := tool(append(args, "/notifications/devices")...); code != 0 || !strings.Contains(status, events.EncodeBase58(key.Public().(ed25519.PublicKey))) {
			t.Fatalf("%v: exit %d, %s %s", args, code, status, out)
		}
	}
	// The headers alone, for curl, sign a request the service accepts.
	_, out, _ := tool("-wallet", "1", "-headers", "/notifications")
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/notifications", nil)
	for _, part := range strings.Split(strings.TrimSpace(out), "' -H '") {
		name, value, ok := strings.Cut(strings.Trim(strings.TrimPrefix(part, "-H '"), "'"), ": ")
		if !ok {
			t.Fatalf("headers %q", out)
		}
		req.Header.Set(name, value)
	}
	resp, err := srv.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("curl with the printed headers: %v %v", err, resp.Status)
	}
	resp.Body.Close()

	for _, args := range [][]string{{"/notifications"}, {"-wallet", "300", "/notifications"}, {"-wallet", "0", "-key", "x", "/notifications"},
		{"-key", "not-a-key", "/notifications"}, {"-wallet", "0", "notifications"}} {
		var stdout, stderr bytes.Buffer
		if _, err := run(context.Background(), args, &stdout, &stderr, srv.Client(), time.Now); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestListsWallets: -list shows wallets with their accounts and delegates.
func TestListsWallets(t *testing.T) {
	var out bytes.Buffer
	if code, err := run(context.Background(), []string{"-list", "40"}, &out, &out, http.DefaultClient, time.Now); err != nil || code != 0 {
		t.Fatal(code, err)
	}
	s := sim.New(sim.DefaultConfig())
	if !strings.HasPrefix(out.String(), "0  "+s.Authorities()[0]+"\n") || !strings.Contains(out.String(), "delegate ") ||
		!strings.Contains(out.String(), "account "+s.Accounts()[0].User) {
		t.Fatalf("list:\n%s", out.String())
	}
}
