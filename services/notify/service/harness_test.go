package service_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/notify"
	"github.com/tidemark/tidemark/services/notify/service"
)

func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }

// wallet is a test wallet: an ed25519 key and its address.
type wallet struct {
	key  ed25519.PrivateKey
	addr string
}

func newWallet(name string) wallet {
	seed := sha256.Sum256([]byte("notify test wallet " + name))
	k := ed25519.NewKeyFromSeed(seed[:])
	return wallet{key: k, addr: events.EncodeBase58(k.Public().(ed25519.PublicKey))}
}

// The wallets of the tests: alice owns accounts Key(2) (the taker of kittest.Fill) and Key(12), bob
// owns Key(3) (its maker) and has dave as its delegate; eve owns nothing.
var (
	alice, bob, dave, eve = newWallet("alice"), newWallet("bob"), newWallet("dave"), newWallet("eve")

	aliceMain, aliceSub, bobMain = kittest.Key(2), kittest.Key(12), kittest.Key(3)
)

// harness is a stack running the notify service, with the verifier on a clock of its own.
type harness struct {
	*kittest.Stack
	clock *kittest.Clock // the verifier's clock, moved by tests
	cfg   service.Config
	seq   atomic.Int64
}

func start(t *testing.T) *harness {
	t.Helper()
	clk := kittest.NewClock(kittest.DefaultNow)
	cfg := service.Config{Clock: clk.Now}
	return &harness{Stack: kittest.Up(t, kittest.Options{}, service.Service(cfg)), clock: clk, cfg: cfg}
}

// message is the signed message of w at the verifier's present, plus a millisecond per message made:
// every message of a test differs, so its signature does (the clock stands still).
func (h *harness) message(w wallet) notify.Message {
	ms := h.seq.Add(1)
	return notify.Message{Action: notify.ActionNotifications, Ts: float64(h.clock.Now().Unix()) + float64(ms)/1000,
		WalletAddress: w.addr}
}

func sign(t *testing.T, w wallet, m notify.Message, enc notify.Encoding) notify.SignedHeaders {
	t.Helper()
	hdr, err := notify.Sign(w.key, m, enc)
	if err != nil {
		t.Fatal(err)
	}
	return hdr
}

// do serves a request with hdr (nil: none) and body (nil: none; a string is sent as is) and validates
// the exchange against the OpenAPI document.
func (h *harness) do(t *testing.T, method, path string, body any, hdr *notify.SignedHeaders) *httptest.ResponseRecorder {
	t.Helper()
	var r *http.Request
	switch b := body.(type) {
	case nil:
		r = httptest.NewRequest(method, path, nil)
	case string:
		r = httptest.NewRequest(method, path, strings.NewReader(b))
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = httptest.NewRequest(method, path, bytes.NewReader(raw))
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if hdr != nil {
		hdr.Set(r.Header)
	}
	return h.Validator.Serve(t, h.Handler(), r)
}

// call signs a fresh request of w and serves it.
func (h *harness) call(t *testing.T, w wallet, method, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	hdr := sign(t, w, h.message(w), notify.Base58)
	return h.do(t, method, path, body, &hdr)
}

// callJSON is call expecting status and decoding the answer into into.
func (h *harness) callJSON(t *testing.T, w wallet, method, path string, body any, status int, into any) {
	t.Helper()
	rec := h.call(t, w, method, path, body)
	if rec.Code != status {
		t.Fatalf("%s %s as %s: status %d, want %d: %s", method, path, w.addr, rec.Code, status, rec.Body)
	}
	if into != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, rec.Body, err)
		}
	}
}

// feed is a page of the feed.
type feed struct {
	Success bool                  `json:"success"`
	Records []notify.Notification `json:"records"`
	Meta    struct {
		NextPage *string `json:"nextPage"`
	} `json:"meta"`
}

// allOf reads every page of w's feed of status.
func (h *harness) allOf(t *testing.T, w wallet, status string) []notify.Notification {
	t.Helper()
	var out []notify.Notification
	path := "/notifications?status=" + status
	for {
		var f feed
		h.callJSON(t, w, http.MethodGet, path, nil, http.StatusOK, &f)
		out = append(out, f.Records...)
		if f.Meta.NextPage == nil {
			return out
		}
		path = "/notifications?status=" + status + "&page=" + *f.Meta.NextPage
	}
}

// errorOf decodes an error answer: its message and its error field.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) (message, errField string) {
	t.Helper()
	var e struct {
		Success *bool  `json:"success"`
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Success == nil || *e.Success {
		t.Fatalf("not an error answer: %d %s", rec.Code, rec.Body)
	}
	return e.Message, e.Error
}

// newUser is the new-user record of account, owned by w, named name, with delegate (nil: none).
func newUser(account string, w wallet, sub int, name string, delegate *wallet, slot int64) *events.NewUser {
	u := &events.NewUser{Tx: events.Tx{Ts: kittest.DefaultNow.Unix() - 86400, TxSig: kittest.Sig("newus", int(slot)), Slot: slot},
		UserAuthority: w.addr, User: account, SubAccountID: sub, Name: name}
	if delegate != nil {
		u.Delegate = delegate.addr
	}
	return u
}

// owners ingests the accounts of the tests.
func (h *harness) owners(t *testing.T) {
	t.Helper()
	h.Ingest(t, kittest.Encode(t, events.TopicNewUsers,
		newUser(aliceMain, alice, 0, "Main Account", nil, 1),
		newUser(aliceSub, alice, 1, "", nil, 2),
		newUser(bobMain, bob, 0, "Maker", &dave, 3),
	)...)
}

func newRequest(method, path string) *http.Request { return httptest.NewRequest(method, path, nil) }

// serve serves r without validating it (preflights are no documented operation).
func serve(h *harness, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.Handler().ServeHTTP(rec, r)
	return rec
}
