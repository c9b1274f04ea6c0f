package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/tidemark/tidemark/platform/httpapi"
)

type tradeCursor struct {
	Ts         int64  `json:"ts"`
	TxSig      string `json:"txSig"`
	TxSigIndex int    `json:"txSigIndex"`
}

// cursorServer pages with cursors scoped by symbol, echoing the decoded cursor and a next token.
func cursorServer(tb testing.TB, key []byte) (*httpapi.API, string) {
	tb.Helper()
	a := httpapi.New(httpapi.Options{PageKey: key})
	a.Handle(http.MethodGet, "/market/{symbol}/trades", func(r *http.Request) (any, error) {
		scope := "market/" + httpapi.PathVar(r, "symbol") + "/trades"
		cur := tradeCursor{Ts: 1_800_000_000}
		if page := r.URL.Query().Get("page"); page != "" {
			if err := a.DecodeCursor(scope, page, &cur); err != nil {
				return nil, err
			}
		}
		next := a.EncodeCursor(scope, tradeCursor{Ts: cur.Ts - 1, TxSig: "sig", TxSigIndex: 2})
		return httpapi.NewList([]tradeCursor{cur}, httpapi.RollingMeta{NextPage: &next}), nil
	})
	return a, mustServe(tb, a).URL
}

func TestCursorRoundTrip(t *testing.T) {
	a := httpapi.New(httpapi.Options{PageKey: []byte("0123456789abcdef0123456789abcdef")})
	in := tradeCursor{Ts: 1_763_700_000, TxSig: "5h3k+/=\"quoted\"", TxSigIndex: 7}
	tok := a.EncodeCursor("market/SOL-PERP/trades", in)
	if strings.ContainsAny(tok, "+/=") {
		t.Errorf("token %q is not unpadded base64url", tok)
	}
	if strings.Contains(tok, "1763700000") {
		t.Errorf("token %q shows its payload", tok)
	}
	var out tradeCursor
	if err := a.DecodeCursor("market/SOL-PERP/trades", tok, &out); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if out != in {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
}

func TestCursorRejected(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	a, base := cursorServer(t, key)
	good := a.EncodeCursor("market/SOL-PERP/trades", tradeCursor{Ts: 1_763_700_000, TxSig: "abc", TxSigIndex: 1})
	raw, err := base64.RawURLEncoding.DecodeString(good)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
	other := httpapi.New(httpapi.Options{PageKey: []byte("another key, another service, 32b")})

	tests := []struct {
		name, symbol, token string
	}{
		{"flipped version byte", "SOL-PERP", flip(0)},
		{"flipped payload byte", "SOL-PERP", flip(5)},
		{"flipped last mac byte", "SOL-PERP", flip(len(raw) - 1)},
		{"truncated", "SOL-PERP", good[:len(good)-4]},
		{"wrong scope", "BTC-PERP", good},
		{"other key", "SOL-PERP", other.EncodeCursor("market/SOL-PERP/trades", tradeCursor{Ts: 1})},
		{"not base64", "SOL-PERP", "!!!not*base64!!!"},
		{"padded base64", "SOL-PERP", good + "=="},
		{"base64 of plain json", "SOL-PERP", base64.RawURLEncoding.EncodeToString([]byte(`{"ts":1763700000}`))},
		{"short", "SOL-PERP", "AQ"},
		{"huge", "SOL-PERP", strings.Repeat("A", 5000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustGet(t, base+"/market/"+tt.symbol+"/trades?page="+url.QueryEscape(tt.token))
			if r.status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400 (body %s)", r.status, r.body)
			}
			if success, msg := errorEnvelope(t, r); success || msg != "Invalid page token" {
				t.Errorf("body = %s", r.body)
			}
		})
	}

	// The good token works on its own route, and so does the token the API hands out.
	r := mustGet(t, base+"/market/SOL-PERP/trades?page="+good)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"ts":1763700000`) {
		t.Fatalf("good token: %d %s", r.status, r.body)
	}
}

func TestCursorPayloadMismatch(t *testing.T) {
	// A correctly signed token whose payload no longer fits the cursor type (a deploy changed it).
	a := httpapi.New(httpapi.Options{PageKey: []byte("0123456789abcdef0123456789abcdef")})
	tok := a.EncodeCursor("s", map[string]any{"legacy": true})
	var cur tradeCursor
	err := a.DecodeCursor("s", tok, &cur)
	if fault.CodeOf(err) != fault.Invalid || err.Error() != "Invalid page token" {
		t.Errorf("err = %v", err)
	}
}

// TestPaging: NextPage trims a read of size+1 rows and gives the token of the last row kept, which
// PageAfter reads back; the first page has no token, and the last page no next one.
func TestPaging(t *testing.T) {
	a := httpapi.New(httpapi.Options{PageKey: []byte("0123456789abcdef0123456789abcdef")})
	const scope = "market/SOL-PERP/trades"
	rows := []tradeCursor{{Ts: 5}, {Ts: 4}, {Ts: 3}}
	cursor := func(c tradeCursor) any { return c }
	for _, tc := range []struct {
		name string
		read []tradeCursor
		want int
		next bool
	}{
		{"a further page", rows, 2, true},
		{"the last page, full", rows[:2], 2, false},
		{"the last page, short", rows[:1], 1, false},
		{"nothing", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, next := httpapi.NextPage(a, scope, tc.read, 2, cursor)
			if len(page) != tc.want || (next != nil) != tc.next {
				t.Fatalf("%d rows, next %v; want %d rows, next %v", len(page), next, tc.want, tc.next)
			}
			if next == nil {
				return
			}
			r, _ := http.NewRequest(http.MethodGet, "/x?page="+url.QueryEscape(*next), nil)
			after, err := httpapi.PageAfter[tradeCursor](a, r, scope)
			if err != nil || after == nil || *after != page[len(page)-1] {
				t.Fatalf("PageAfter = %v, %v; want %+v", after, err, page[len(page)-1])
			}
			if _, err := httpapi.PageAfter[tradeCursor](a, r, "market/BTC-PERP/trades"); fault.CodeOf(err) != fault.Invalid {
				t.Errorf("a token of another scope: %v", err)
			}
		})
	}
	r, _ := http.NewRequest(http.MethodGet, "/x", nil)
	if after, err := httpapi.PageAfter[tradeCursor](a, r, scope); after != nil || err != nil {
		t.Errorf("first page: %v, %v", after, err)
	}
}

// TestRollingFrom: a page answered while it is read is the RawList of its first size records, and the
// row beyond them gives the token of the last record kept, as NextPage's does; a failed read answers
// as the handler's error would.
func TestRollingFrom(t *testing.T) {
	a := httpapi.New(httpapi.Options{PageKey: []byte("0123456789abcdef0123456789abcdef")})
	const scope = "market/SOL-PERP/trades"
	rows := []tradeCursor{{Ts: 5}, {Ts: 4}, {Ts: 3}}
	var read []tradeCursor
	a.Handle(http.MethodGet, "/rolling", func(*http.Request) (any, error) {
		return httpapi.RollingFrom(a, scope, 2, 64, func(_ context.Context, each func(tradeCursor, []byte) error) error {
			for _, c := range read {
				if err := each(c, fmt.Appendf(nil, `{"ts":%d}`, c.Ts)); err != nil {
					return err
				}
			}
			return nil
		}), nil
	})
	a.Handle(http.MethodGet, "/failed", func(*http.Request) (any, error) {
		return httpapi.RollingFrom(a, scope, 2, 64, func(context.Context, func(tradeCursor, []byte) error) error {
			return fault.Errorf(fault.Invalid, "no such thing")
		}), nil
	})
	srv := mustServe(t, a)
	for _, tc := range []struct {
		name    string
		read    []tradeCursor
		records string
		next    bool
	}{
		{"a further page", rows, `[{"ts":5},{"ts":4}]`, true},
		{"the last page, full", rows[:2], `[{"ts":5},{"ts":4}]`, false},
		{"the last page, short", rows[:1], `[{"ts":5}]`, false},
		{"nothing", nil, `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read = tc.read
			resp := mustGet(t, srv.URL+"/rolling")
			var body struct {
				Success bool                `json:"success"`
				Records json.RawMessage     `json:"records"`
				Meta    httpapi.RollingMeta `json:"meta"`
			}
			if err := json.Unmarshal([]byte(resp.body), &body); err != nil || resp.status != 200 || !body.Success {
				t.Fatalf("%d %s (%v)", resp.status, resp.body, err)
			}
			if string(body.Records) != tc.records || (body.Meta.NextPage != nil) != tc.next {
				t.Fatalf("records %s, next %v; want %s, next %v", body.Records, body.Meta.NextPage, tc.records, tc.next)
			}
			if !tc.next {
				return
			}
			r, _ := http.NewRequest(http.MethodGet, "/x?page="+url.QueryEscape(*body.Meta.NextPage), nil)
			if after, err := httpapi.PageAfter[tradeCursor](a, r, scope); err != nil || after == nil || *after != rows[1] {
				t.Fatalf("PageAfter = %v, %v; want %+v", after, err, rows[1])
			}
		})
	}
	if resp := mustGet(t, srv.URL+"/failed"); resp.status != 400 || resp.body != `{"success":false,"message":"no such thing"}`+"\n" {
		t.Errorf("a failed read: %d %q", resp.status, resp.body)
	}
}
