package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/platform/fault"
)

// RollingWindow is how far back rolling (token-paged) endpoints reach.
const RollingWindow = 31 * 24 * time.Hour

// cursorVersion is the first byte of every token, so the format can change without misreading old
// tokens: a token of another version is simply invalid.
const cursorVersion byte = 1

// maxCursorLen bounds the work done on a client-supplied token before its MAC is checked.
const maxCursorLen = 2048

// EncodeCursor returns an opaque page token holding v (JSON) bound to scope, e.g.
// "market/SOL-PERP/trades", so that a token cannot be replayed on another route or symbol.
// Layout before base64url (unpadded): version byte | JSON payload | HMAC-SHA256(PageKey, len(scope)
// scope version payload). v must marshal to JSON; a value that cannot is a programming error and panics
// (answered 500 by Handler's recovery).
func (a *API) EncodeCursor(scope string, v any) string {
	payload, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("httpapi: encode cursor for %q: %v", scope, err))
	}
	buf := make([]byte, 0, 1+len(payload)+sha256.Size)
	buf = append(buf, cursorVersion)
	buf = append(buf, payload...)
	buf = a.cursorMAC(buf, scope, buf) // appends the MAC of what buf holds so far
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodeCursor verifies token against scope and decodes its payload into v (strictly: unknown fields
// are rejected, so a token from an older cursor shape is refused rather than half-read). Any malformed,
// forged, foreign-scope or empty token is *fault.Error{Invalid, "Invalid page token"}.
func (a *API) DecodeCursor(scope, token string, v any) error {
	if token == "" || len(token) > maxCursorLen {
		return invalidPageToken()
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < 1+sha256.Size+1 || raw[0] != cursorVersion {
		return invalidPageToken()
	}
	signed, mac := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(mac, a.cursorMAC(nil, scope, signed)) {
		return invalidPageToken()
	}
	dec := json.NewDecoder(bytes.NewReader(signed[1:]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidPageToken()
	}
	return nil
}

// cursorMAC appends to dst the MAC of scope and the signed bytes; the scope is length-prefixed so that
// no (scope, payload) pair can collide with another split of the same bytes. The HMACs come from a
// pool: a fresh one hashes the key's two pads and allocates, work that every page with a next one
// would otherwise repeat.
func (a *API) cursorMAC(dst []byte, scope string, signed []byte) []byte {
	m := a.macs.Get().(hash.Hash)
	defer a.macs.Put(m)
	m.Reset()
	var n [binary.MaxVarintLen64]byte
	m.Write(n[:binary.PutUvarint(n[:], uint64(len(scope)))])
	m.Write([]byte(scope))
	m.Write(signed)
	return m.Sum(dst)
}

func invalidPageToken() *fault.Error {
	return &fault.Error{Code: fault.Invalid, Message: "Invalid page token"}
}

// PageAfter reads the page token of r (its page query parameter), bound to scope: the cursor of the
// last record of the page before, or nil when r asks for the first page.
func PageAfter[C any](a *API, r *http.Request, scope string) (*C, error) {
	tok := r.URL.Query().Get("page")
	if tok == "" {
		return nil, nil
	}
	after := new(C)
	if err := a.DecodeCursor(scope, tok, after); err != nil {
		return nil, err
	}
	return after, nil
}

// NextPage pages rows read with a limit of size+1: it returns them trimmed to size and the token of
// the page after the last one (its cursor, bound to scope), or nil when there is no further page.
func NextPage[T any](a *API, scope string, rows []T, size int, cursor func(T) any) ([]T, *string) {
	if len(rows) <= size {
		return rows, nil
	}
	rows = rows[:size]
	tok := a.EncodeCursor(scope, cursor(rows[size-1]))
	return rows, &tok
}
