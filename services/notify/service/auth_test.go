package service_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/services/notify"
	"github.com/tidemark/tidemark/services/notify/postgres"
	"github.com/tidemark/tidemark/services/notify/postgres/migrations"
	"github.com/tidemark/tidemark/services/notify/service"
)

// TestEveryRefusal: each rule of a signed request refuses the request that breaks it, and only that
// one: every case starts from a correctly signed request that is accepted (with a signature of the
// same encoding), then breaks one thing. Refusals are 401 {success:false, error:"Unauthorized",
// message} naming the rule, never echoing the signature.
func TestEveryRefusal(t *testing.T) {
	h := start(t)
	other := newWallet("other")
	cases := []struct {
		name    string
		breakIt func(t *testing.T, enc notify.Encoding, good notify.SignedHeaders) notify.SignedHeaders
		message string
	}{
		{"missing x-wallet-address", func(_ *testing.T, _ notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			g.Wallet = ""
			return g
		}, "missing header x-wallet-address"},
		{"missing x-signature", func(_ *testing.T, _ notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			g.Signature = ""
			return g
		}, "missing header x-signature"},
		{"missing x-signed-message", func(_ *testing.T, _ notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			g.Message = ""
			return g
		}, "missing header x-signed-message"},
		{"malformed wallet", func(_ *testing.T, _ notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			g.Wallet = g.Wallet[:20] + "0OIl" + g.Wallet[24:]
			return g
		}, "x-wallet-address must be a wallet's public key"},
		{"message not JSON", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			return resign(t, alice, "action=notifications", enc)
		}, "x-signed-message must be the JSON object"},
		{"message with an unknown field", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			return resign(t, alice, strings.Replace(g.Message, "{", `{"admin":true,`, 1), enc)
		}, `json: unknown field "admin"`},
		{"message of another action", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			m := h.message(alice)
			m.Action = "claim"
			return sign(t, alice, m, enc)
		}, `the signed message's action must be "notifications"`},
		{"message naming another wallet", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			m := h.message(alice)
			m.WalletAddress = other.addr
			return sign(t, alice, m, enc)
		}, "the signed message's walletAddress must equal x-wallet-address"},
		{"signature of 65 bytes", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			sig := append(ed25519.Sign(alice.key, []byte(g.Message)), 7)
			g.Signature = encodeSig(sig, enc)
			return g
		}, "x-signature must be a 64-byte ed25519 signature in base58 or base64"},
		{"signature in hex", func(t *testing.T, _ notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			g.Signature = strings.Repeat("ab", 64)
			return g
		}, "x-signature must be a 64-byte ed25519 signature"},
		{"signed by another wallet", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			g.Signature = encodeSig(ed25519.Sign(other.key, []byte(g.Message)), enc)
			return g
		}, "x-signature is not the signature of x-signed-message by x-wallet-address"},
		{"message changed after signing", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			g.Message = strings.Replace(g.Message, `"ts":`, `"ts": `, 1)
			return g
		}, "x-signature is not the signature of x-signed-message by x-wallet-address"},
		{"stale", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			m := h.message(alice)
			m.Ts = float64(kittest.DefaultNow.Unix() - 3600)
			return sign(t, alice, m, enc)
		}, "the signed message's ts is 3600 s old: requests are accepted within 300 s"},
		{"from the future", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			m := h.message(alice)
			m.Ts = float64(kittest.DefaultNow.Unix() + 3600)
			return sign(t, alice, m, enc)
		}, "the signed message's ts is 3600 s in the future"},
		{"in milliseconds", func(t *testing.T, enc notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			m := h.message(alice)
			m.Ts *= 1000
			return sign(t, alice, m, enc)
		}, "in the future"},
		{"replayed", func(_ *testing.T, _ notify.Encoding, g notify.SignedHeaders) notify.SignedHeaders {
			return g // the accepted request itself, again
		}, "this signature was already used: sign every request anew"},
	}
	for _, enc := range []notify.Encoding{notify.Base58, notify.Base64} {
		for _, tc := range cases {
			t.Run(map[notify.Encoding]string{notify.Base58: "base58", notify.Base64: "base64"}[enc]+"/"+tc.name, func(t *testing.T) {
				good := sign(t, alice, h.message(alice), enc)
				if rec := h.do(t, http.MethodGet, "/notifications", nil, &good); rec.Code != http.StatusOK {
					t.Fatalf("the correctly signed request: %d %s", rec.Code, rec.Body)
				}
				bad := tc.breakIt(t, enc, good)
				rec := h.do(t, http.MethodGet, "/notifications", nil, &bad)
				if rec.Code != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401: %s", rec.Code, rec.Body)
				}
				msg, errField := errorOf(t, rec)
				if errField != "Unauthorized" || !strings.Contains(msg, tc.message) {
					t.Errorf("error %q message %q, want Unauthorized and %q", errField, msg, tc.message)
				}
				if bad.Signature != "" && strings.Contains(rec.Body.String(), bad.Signature) {
					t.Errorf("the answer echoes the signature: %s", rec.Body)
				}
				if rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("no WWW-Authenticate challenge")
				}
			})
		}
	}
}

func resign(t *testing.T, w wallet, message string, enc notify.Encoding) notify.SignedHeaders {
	t.Helper()
	return notify.SignedHeaders{Wallet: w.addr, Message: message, Signature: encodeSig(ed25519.Sign(w.key, []byte(message)), enc)}
}

func encodeSig(sig []byte, enc notify.Encoding) string {
	if enc == notify.Base64 {
		return base64.StdEncoding.EncodeToString(sig)
	}
	return events.EncodeBase58(sig)
}

// A signature is accepted once whatever its encoding: the same bytes in base64 (standard or URL,
// padded or not) after base58 are a replay.
func TestReplayInAnotherEncoding(t *testing.T) {
	h := start(t)
	good := sign(t, alice, h.message(alice), notify.Base58)
	if rec := h.do(t, http.MethodGet, "/notifications", nil, &good); rec.Code != http.StatusOK {
		t.Fatalf("first use: %d %s", rec.Code, rec.Body)
	}
	sig, _ := events.DecodeBase58(good.Signature, 64)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		again := good
		again.Signature = enc.EncodeToString(sig)
		rec := h.do(t, http.MethodGet, "/notifications", nil, &again)
		if msg, _ := errorOf(t, rec); rec.Code != http.StatusUnauthorized || !strings.Contains(msg, "already used") {
			t.Errorf("%s: %d %s, want a replay refusal", again.Signature, rec.Code, rec.Body)
		}
	}
}

// TestReplayAcrossReplicas: two instances of the service on one database accept a signature once
// between them, whichever gets it first and however many times it is sent at once.
func TestReplayAcrossReplicas(t *testing.T) {
	h := start(t)
	replica, err := kit.Start(context.Background(), service.Service(h.cfg), kit.Runtime{
		Pool: h.Pool, Kafka: h.Kafka, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PageKey: kittest.PageKey,
		Now: func() time.Time { return kittest.DefaultNow },
	}, kit.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := []http.Handler{h.Instance(t, "notify").Handler(), replica.Handler()}
	send := func(i int, hdr notify.SignedHeaders) int {
		r := httptest.NewRequest(http.MethodGet, "/notifications", nil)
		hdr.Set(r.Header)
		rec := httptest.NewRecorder()
		replicas[i].ServeHTTP(rec, r)
		return rec.Code
	}
	// One after the other, both ways round.
	for first := range 2 {
		hdr := sign(t, alice, h.message(alice), notify.Base58)
		if got := send(first, hdr); got != http.StatusOK {
			t.Fatalf("replica %d: first use answered %d", first, got)
		}
		if got := send(1-first, hdr); got != http.StatusUnauthorized {
			t.Fatalf("replica %d: the replay answered %d, want 401", 1-first, got)
		}
	}
	// At once: 20 copies of each of 10 signatures, spread over both replicas.
	for range 10 {
		hdr := sign(t, alice, h.message(alice), notify.Base64)
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				code := send(i%2, hdr)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes[http.StatusOK] != 1 || codes[http.StatusUnauthorized] != 19 {
			t.Fatalf("20 concurrent copies of one signature: %v, want one 200 and nineteen 401", codes)
		}
	}
}

// TestSignaturePruning: a used signature's record stays until its message has left the clock window
// (with the minute to spare), so that a replay within the window is refused whenever the pruning
// runs; a replica pruning with a narrower window keeps the records that a wider one still needs.
func TestSignaturePruning(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	upkeep := postgres.NewUpkeep(h.Pool, postgres.NewIngest("notify", postgres.IngestConfig{}, h.clock.Now), h.clock.Now)
	now := kittest.DefaultNow.Add(41 * time.Second)
	h.clock.Set(now)
	window := int64(notify.DefaultWindow / time.Second)
	// A whole ts and one within its second: kept until ceil(ts + window) + 60, that is now+360 and
	// now+361 (a record goes once that has passed).
	base := h.Count(t, "notify.used_signatures")
	var signed []notify.SignedHeaders
	for _, ts := range []float64{float64(now.Unix()), float64(now.Unix()) + 0.5} {
		m := h.message(alice)
		m.Ts = ts
		hdr := sign(t, alice, m, notify.Base58)
		if rec := h.do(t, http.MethodGet, "/notifications", nil, &hdr); rec.Code != http.StatusOK {
			t.Fatalf("ts %.1f: %d %s", ts, rec.Code, rec.Body)
		}
		signed = append(signed, hdr)
	}
	prune := func(at int64, w time.Duration) int {
		t.Helper()
		h.clock.Set(time.Unix(at, 0))
		if _, err := upkeep.PruneSignatures(ctx, w); err != nil {
			t.Fatal(err)
		}
		return h.Count(t, "notify.used_signatures") - base
	}
	for _, tc := range []struct {
		name   string
		at     int64
		window time.Duration
		want   int
	}{
		{"within the window", now.Unix() + 10, notify.DefaultWindow, 2},
		{"a replica with a window of 30 s, within this one's", now.Unix() + window, 30 * time.Second, 2},
		{"the minute to spare", now.Unix() + window + 60, notify.DefaultWindow, 2},
		{"the whole ts's record gone", now.Unix() + window + 61, notify.DefaultWindow, 1},
		{"both gone", now.Unix() + window + 62, notify.DefaultWindow, 0},
	} {
		if got := prune(tc.at, tc.window); got != tc.want {
			t.Fatalf("%s (now%+d): %d records left, want %d", tc.name, tc.at-now.Unix(), got, tc.want)
		}
		if tc.at-now.Unix() <= window {
			// Still within the window: a replay is refused by the record.
			h.clock.Set(now)
			for _, hdr := range signed {
				rec := h.do(t, http.MethodGet, "/notifications", nil, &hdr)
				if msg, _ := errorOf(t, rec); rec.Code != http.StatusUnauthorized || !strings.Contains(msg, "already used") {
					t.Fatalf("%s: the replay answered %d %s", tc.name, rec.Code, rec.Body)
				}
			}
		}
	}
}

// TestDelegate: a delegate acts for the authority of the account it is the delegate of, and for no
// other; a wallet that is not the account's delegate is refused 403.
func TestDelegate(t *testing.T) {
	h := start(t)
	h.owners(t)
	h.Ingest(t, kittest.Encode(t, events.TopicSettlePnl, kittest.SettlePnl(kittest.SOLPerp, bobMain, kittest.DefaultNow.Unix()-60, 1))...)
	delegated := func(w wallet, account string) notify.Message {
		m := h.message(w)
		m.IsDelegate, m.ServiceUserAccount = true, account
		return m
	}
	// Accepted: dave reads bob's feed, as bob himself does.
	var asDave, asBob feed
	hdr := sign(t, dave, delegated(dave, bobMain), notify.Base58)
	if rec := h.do(t, http.MethodGet, "/notifications", nil, &hdr); rec.Code != 200 {
		t.Fatalf("the delegate: %d %s", rec.Code, rec.Body)
	} else {
		decode(t, rec, &asDave)
	}
	h.callJSON(t, bob, http.MethodGet, "/notifications", nil, 200, &asBob)
	if len(asDave.Records) != 1 || asDave.Records[0].Authority != bob.addr || asDave.Records[0].ID != asBob.Records[0].ID {
		t.Fatalf("the delegate's feed %+v, want bob's %+v", asDave.Records, asBob.Records)
	}
	// What the delegate changes is bob's.
	hdr = sign(t, dave, delegated(dave, bobMain), notify.Base64)
	if rec := h.do(t, http.MethodPut, "/notifications/preferences", map[string]any{"pushOptOutTypes": []string{"RECORD_UPDATE"}}, &hdr); rec.Code != 200 {
		t.Fatalf("the delegate's preferences: %d %s", rec.Code, rec.Body)
	}
	var prefs notify.Preferences
	h.callJSON(t, bob, http.MethodGet, "/notifications/preferences", nil, 200, &prefs)
	if len(prefs.PushOptOutTypes) != 1 {
		t.Fatalf("bob's preferences after his delegate's change: %+v", prefs)
	}

	recorded := h.Count(t, "notify.used_signatures")
	refusals := []struct {
		name    string
		m       notify.Message
		signer  wallet
		status  int
		message string
	}{
		{"not the account's delegate", delegated(eve, bobMain), eve, 403, "is not the delegate of account " + bobMain},
		{"the delegate of another account", delegated(dave, aliceMain), dave, 403, "is not the delegate of account " + aliceMain},
		{"an account nobody named", delegated(dave, kittest.Key(99)), dave, 403, "is not the delegate of account"},
		{"the authority is not its own delegate", delegated(bob, bobMain), bob, 403, "is not the delegate"},
		{"no account", delegated(dave, ""), dave, 401, "isDelegate needs serviceUserAccount"},
		{"a malformed account", delegated(dave, "not-an-account"), dave, 401, "serviceUserAccount must be an account's public key"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			hdr := sign(t, tc.signer, tc.m, notify.Base58)
			rec := h.do(t, http.MethodGet, "/notifications", nil, &hdr)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if msg, _ := errorOf(t, rec); !strings.Contains(msg, tc.message) {
				t.Errorf("message %q, want %q", msg, tc.message)
			}
		})
	}
	// A refused request does not use up its signature.
	if n := h.Count(t, "notify.used_signatures"); n != recorded {
		t.Errorf("%d signatures recorded after the refusals, want the %d accepted before", n, recorded)
	}
}

// TestClockWindow: ts is accepted exactly within the window of the server's clock, both ways, at the
// configured width.
func TestClockWindow(t *testing.T) {
	h := start(t)
	now := kittest.DefaultNow.Add(17 * time.Second)
	h.clock.Set(now)
	window := int64(notify.DefaultWindow / time.Second)
	for _, tc := range []struct {
		offset int64
		ok     bool
	}{
		{-window - 1, false}, {-window, true}, {-window + 1, true}, {0, true},
		{window - 1, true}, {window, true}, {window + 1, false},
	} {
		m := h.message(alice)
		m.Ts = float64(now.Unix() + tc.offset)
		hdr := sign(t, alice, m, notify.Base58)
		rec := h.do(t, http.MethodGet, "/notifications", nil, &hdr)
		if (rec.Code == 200) != tc.ok || (!tc.ok && rec.Code != 401) {
			t.Errorf("ts now%+d: %d %s, accepted want %v", tc.offset, rec.Code, rec.Body, tc.ok)
		}
	}
	// To the millisecond.
	for _, tc := range []struct {
		offset float64
		ok     bool
	}{
		{-float64(window) - 0.001, false}, {-float64(window) + 0.001, true},
		{float64(window) - 0.001, true}, {float64(window) + 0.001, false},
	} {
		m := h.message(alice)
		m.Ts = float64(now.Unix()) + tc.offset
		hdr := sign(t, alice, m, notify.Base58)
		rec := h.do(t, http.MethodGet, "/notifications", nil, &hdr)
		if (rec.Code == 200) != tc.ok || (!tc.ok && rec.Code != 401) {
			t.Errorf("ts now%+.3f: %d %s, accepted want %v", tc.offset, rec.Code, rec.Body, tc.ok)
		}
	}
	// The clock moves on: a message signed for the future becomes acceptable, one from the past not.
	m := h.message(alice)
	m.Ts = float64(now.Unix() + window + 30)
	early := sign(t, alice, m, notify.Base58)
	if rec := h.do(t, http.MethodGet, "/notifications", nil, &early); rec.Code != 401 {
		t.Fatalf("early: %d", rec.Code)
	}
	h.clock.Set(now.Add(31 * time.Second))
	if rec := h.do(t, http.MethodGet, "/notifications", nil, &early); rec.Code != 200 {
		t.Fatalf("the same message once the clock reached it: %d %s", rec.Code, rec.Body)
	}
}

// The window is the configured one.
func TestConfiguredWindow(t *testing.T) {
	clk := kittest.NewClock(kittest.DefaultNow)
	cfg := service.Config{Clock: clk.Now, AuthWindow: 30 * time.Second}
	h := &harness{Stack: kittest.Up(t, kittest.Options{}, service.Service(cfg)), clock: clk, cfg: cfg}
	for offset, want := range map[int64]int{-30: 200, -31: 401, 30: 200, 31: 401} {
		m := h.message(alice)
		m.Ts = float64(kittest.DefaultNow.Unix() + offset)
		hdr := sign(t, alice, m, notify.Base58)
		if rec := h.do(t, http.MethodGet, "/notifications", nil, &hdr); rec.Code != want {
			t.Errorf("ts now%+d with a 30 s window: %d, want %d", offset, rec.Code, want)
		}
	}
}

// TestFuzzedHeaders: hostile header values, alone and in well-signed messages, never get a 5xx (nor a
// 2xx, lacking a valid signature of a valid message).
func TestFuzzedHeaders(t *testing.T) {
	h := start(t)
	rng := rand.New(rand.NewPCG(3, 4))
	good := sign(t, alice, h.message(alice), notify.Base58)
	hostile := []string{
		"", " ", "\x00", "a\x00b", "\xff\xfe", "%00", "null", "{}", "[]", "true", "0", "-1", "1e400", `"`, `\`, "'",
		"{", `{"action":"notifications"`, `{"ts":"now"}`, `{"ts":1e99}`, `{"ts":-9223372036854775809}`,
		`{"action":"notifications","ts":1,"walletAddress":null}`, `{"isDelegate":"yes"}`, `{"action":1}`,
		`{"action":"notifications","ts":1,"walletAddress":"x"}{}`, strings.Repeat("A", 5000), strings.Repeat("z", 88),
		strings.Repeat("1", 88), strings.Repeat("=", 88), strings.Repeat("/", 88), "😀", "\u202e", good.Wallet,
		good.Signature, good.Message, good.Signature + "=", "==" + good.Signature, strings.ToLower(good.Signature),
		kittest.Key(2), strings.Repeat("1", 32), strings.Repeat("z", 44), events.EncodeBase58(make([]byte, 64)),
	}
	pick := func(real string) string {
		if rng.IntN(3) == 0 {
			return real
		}
		return hostile[rng.IntN(len(hostile))]
	}
	paths := []struct{ method, path string }{
		{http.MethodGet, "/notifications"}, {http.MethodGet, "/notifications?status=READ"},
		{http.MethodPut, "/notifications/0190b7a0-0000-7000-8000-000000000000/read"},
		{http.MethodGet, "/notifications/preferences"}, {http.MethodPut, "/notifications/preferences"},
		{http.MethodGet, "/notifications/devices"}, {http.MethodPost, "/notifications/devices"},
		{http.MethodDelete, "/notifications/devices/phone"},
	}
	handler := h.Handler()
	for i := range 3000 {
		p := paths[i%len(paths)]
		r := httptest.NewRequest(p.method, p.path, strings.NewReader(`{"pushOptOutTypes":[]}`))
		// Raw header values, as a client may send them, past net/http's client-side checks.
		r.Header[http.CanonicalHeaderKey(notify.HeaderWallet)] = []string{pick(good.Wallet)}
		r.Header[http.CanonicalHeaderKey(notify.HeaderSignature)] = []string{pick(good.Signature)}
		msg := pick(good.Message)
		r.Header[http.CanonicalHeaderKey(notify.HeaderMessage)] = []string{msg}
		if rng.IntN(4) == 0 { // a valid signature of whatever the message is
			r.Header.Set(notify.HeaderWallet, alice.addr)
			r.Header.Set(notify.HeaderSignature, events.EncodeBase58(ed25519.Sign(alice.key, []byte(msg))))
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, r)
		if rec.Code >= 500 || (rec.Code < 300 && msg != good.Message) {
			t.Fatalf("%s %s with %q: %d %s", p.method, p.path, r.Header, rec.Code, rec.Body)
		}
	}
}

func decode(t *testing.T, rec *httptest.ResponseRecorder, into any) {
	t.Helper()
	if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
}

// TestSignatureRecordMigration: the records kept before the replay record was keyed by time still
// refuse their replays once migrated, for a whole ts and one within its second alike.
func TestSignatureRecordMigration(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	all := migrations.FS
	first, err := fs.ReadFile(all, "001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Migrate(ctx, pool, "notify", fstest.MapFS{"001_init.sql": {Data: first}}); err != nil {
		t.Fatal(err)
	}
	// As the first layout recorded them: until ceil(ts + window) + 60.
	window := notify.DefaultWindow.Seconds()
	used := map[string]float64{"whole": 1_790_000_000, "within its second": 1_790_000_000.25}
	for name, ts := range used {
		if _, err := pool.Exec(ctx, `INSERT INTO notify.used_signatures (signature, expires_at) VALUES ($1, $2)`,
			[]byte(name), int64(math.Ceil(ts+window))+60); err != nil {
			t.Fatal(err)
		}
	}
	if err := pg.Migrate(ctx, pool, "notify", all); err != nil {
		t.Fatal(err)
	}
	store := postgres.NewStore(pool, "notify")
	for name, ts := range used {
		fresh, err := store.UseSignature(ctx, []byte(name), int64(math.Floor(ts)), int64(math.Ceil(ts+window))+60)
		if err != nil || fresh {
			t.Errorf("%s ts: the replay after the migration was taken as new (%v)", name, err)
		}
	}
	if fresh, err := store.UseSignature(ctx, []byte("new"), 1_790_000_000, 1_790_000_360); err != nil || !fresh {
		t.Errorf("a new signature after the migration: fresh %v (%v)", fresh, err)
	}
}
