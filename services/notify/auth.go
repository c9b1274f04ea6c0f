package notify

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
)

// The three headers of a signed request.
const (
	HeaderWallet    = "x-wallet-address"
	HeaderSignature = "x-signature"
	HeaderMessage   = "x-signed-message"
)

// ActionNotifications is the signed message's action for every route of the group; the spec's claim
// and whitelist operations will have actions of their own.
const ActionNotifications = "notifications"

// DefaultWindow is how far a signed message's ts may be from the server's clock, either way.
const DefaultWindow = 5 * time.Minute

// Challenge is the WWW-Authenticate value of a refusal: the scheme names the three headers.
const Challenge = `WalletSignature realm="notifications", headers="x-wallet-address x-signature x-signed-message"`

// maxMessageLen bounds the signed message (a legitimate one is under 250 bytes) and maxSignatureLen
// the signature's text (88 characters in base58 or base64), so that no oversized header is parsed.
const (
	maxMessageLen   = 1024
	maxSignatureLen = 100
)

// Message is the signed message: JSON {action, ts, walletAddress, isDelegate?, serviceUserAccount?}.
// ts is unix seconds, whole or with a fraction (Date.now()/1000): ed25519 signs a message always
// alike and a signature is accepted once, so two requests signed within one second need a fraction
// to differ. With isDelegate, walletAddress is the delegate of the account serviceUserAccount and
// the request acts for that account's authority.
type Message struct {
	Action             string  `json:"action"`
	Ts                 float64 `json:"ts"`
	WalletAddress      string  `json:"walletAddress"`
	IsDelegate         bool    `json:"isDelegate,omitempty"`
	ServiceUserAccount string  `json:"serviceUserAccount,omitempty"`
}

// Caller is who a verified request acts for.
type Caller struct {
	Wallet    string // the wallet that signed
	Authority string // the wallet whose notifications, devices and preferences it reads and changes
	Delegate  bool   // Wallet signed as the delegate of one of Authority's accounts
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the caller a verified request carries; ok is false for a request that was not
// verified (a route registered without the verifier: a programming error).
func CallerOf(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Signatures records the signatures accepted, shared by every replica of the service.
type Signatures interface {
	// UseSignature records sig, the signature of a message signed at signedAt (its ts in unix
	// seconds, rounded down), as used until expires (unix seconds); false when it was already. A
	// signature verifies for one message only, so it always comes with the same signedAt.
	UseSignature(ctx context.Context, sig []byte, signedAt, expires int64) (bool, error)
}

// Accounts tells who owns an account and who its delegate is, as protocol.new-users says.
type Accounts interface {
	// AccountOwner returns the authority and the delegate ("" when none) of account; found is false
	// for an account no new-user record named.
	AccountOwner(ctx context.Context, account string) (authority, delegate string, found bool, err error)
}

// Verifier applies the rules of a signed request. Every field is required.
type Verifier struct {
	Action     string           // the action every message must sign
	Window     time.Duration    // how far ts may be from Now, either way, inclusive
	Now        func() time.Time // the server's clock
	Signatures Signatures
	Accounts   Accounts
}

// Verify checks the three header values of a request and returns who it acts for. The checks, each
// refusing with fault.Unauthorized naming the rule: the headers are present; the wallet is a public
// key; the message is one JSON object of the known fields, signs Action, and names the wallet; the
// signature is 64 bytes in base58 or base64 and verifies (ed25519) over the message's bytes as sent;
// ts is within Window of Now. A delegate's request then needs its account, and the wallet to be
// that account's delegate (fault.Forbidden otherwise). Last, the signature is recorded: a signature
// accepted once, in any encoding, is refused after (replay). No message repeats the signature.
func (v *Verifier) Verify(ctx context.Context, wallet, signature, message string) (Caller, error) {
	for _, h := range []struct{ name, value string }{
		{HeaderWallet, wallet}, {HeaderSignature, signature}, {HeaderMessage, message},
	} {
		if h.value == "" {
			return Caller{}, unauthorized("missing header %s", h.name)
		}
	}
	key, ok := events.PublicKey(wallet)
	if !ok {
		return Caller{}, unauthorized("%s must be a wallet's public key (base58 of 32 bytes)", HeaderWallet)
	}
	m, err := ParseMessage(message)
	if err != nil {
		return Caller{}, err
	}
	if m.Action != v.Action {
		return Caller{}, unauthorized("the signed message's action must be %q", v.Action)
	}
	if m.WalletAddress != wallet {
		return Caller{}, unauthorized("the signed message's walletAddress must equal %s", HeaderWallet)
	}
	sig, ok := DecodeSignature(signature)
	if !ok {
		return Caller{}, unauthorized("%s must be a 64-byte ed25519 signature in base58 or base64", HeaderSignature)
	}
	if !ed25519.Verify(key[:], []byte(message), sig) {
		return Caller{}, unauthorized("%s is not the signature of %s by %s", HeaderSignature, HeaderMessage, HeaderWallet)
	}
	now := float64(v.Now().UnixNano()) / 1e9
	window := v.Window.Seconds()
	switch {
	case m.Ts < now-window:
		return Caller{}, unauthorized("the signed message's ts is %s s old: requests are accepted within %s s of the server's clock (%s)",
			seconds(now-m.Ts), seconds(window), seconds(now))
	case m.Ts > now+window:
		return Caller{}, unauthorized("the signed message's ts is %s s in the future: requests are accepted within %s s of the server's clock (%s)",
			seconds(m.Ts-now), seconds(window), seconds(now))
	}
	caller := Caller{Wallet: wallet, Authority: wallet}
	if m.IsDelegate {
		if caller.Authority, err = v.delegateFor(ctx, wallet, m.ServiceUserAccount); err != nil {
			return Caller{}, err
		}
		caller.Delegate = true
	}
	// Once ts has left the window the signature is refused by the clock alone, so its record can go
	// then (with a minute to spare for replicas whose clocks differ a little).
	fresh, err := v.Signatures.UseSignature(ctx, sig, int64(math.Floor(m.Ts)), int64(math.Ceil(m.Ts+window))+60)
	if err != nil {
		return Caller{}, fmt.Errorf("record the signature: %w", err)
	}
	if !fresh {
		return Caller{}, unauthorized("this signature was already used: sign every request anew")
	}
	return caller, nil
}

// delegateFor returns the authority of account when wallet is its delegate.
func (v *Verifier) delegateFor(ctx context.Context, wallet, account string) (string, error) {
	if account == "" {
		return "", unauthorized("a signed message with isDelegate needs serviceUserAccount")
	}
	if !events.ValidPublicKey(account) {
		return "", unauthorized("the signed message's serviceUserAccount must be an account's public key (base58 of 32 bytes)")
	}
	authority, delegate, found, err := v.Accounts.AccountOwner(ctx, account)
	if err != nil {
		return "", fmt.Errorf("look up the delegate of %s: %w", account, err)
	}
	if !found || delegate != wallet {
		return "", fault.Errorf(fault.Forbidden, "%s is not the delegate of account %s", wallet, account)
	}
	return authority, nil
}

// Authenticate verifies r's headers and returns its context carrying the Caller, for
// httpapi.Authenticate.
func (v *Verifier) Authenticate(r *http.Request) (context.Context, error) {
	c, err := v.Verify(r.Context(), r.Header.Get(HeaderWallet), r.Header.Get(HeaderSignature), r.Header.Get(HeaderMessage))
	if err != nil {
		return nil, err
	}
	return WithCaller(r.Context(), c), nil
}

// ParseMessage decodes a signed message strictly: one JSON object, known fields only, each of its
// type.
func ParseMessage(s string) (Message, error) {
	var m Message
	if len(s) > maxMessageLen {
		return m, unauthorized("%s is longer than %d bytes", HeaderMessage, maxMessageLen)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	err := dec.Decode(&m)
	if t := strings.TrimLeft(s, " \t\r\n"); err == nil && !strings.HasPrefix(t, "{") {
		err = errors.New("not a JSON object")
	}
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err != nil {
		return m, unauthorized("%s must be the JSON object {action, ts, walletAddress, isDelegate?, serviceUserAccount?}: %s",
			HeaderMessage, err.Error())
	}
	return m, nil
}

// DecodeSignature decodes an ed25519 signature written in base58 (87 or 88 characters) or base64
// (standard or URL alphabet, padded or not). No text is both: 64 bytes take at least 87 base58
// digits, and base64 writes them in 86 characters, or 88 ending in "==". (Other texts may read as
// either: 86 base58 digits, say, are 64 bytes of base64, which then fail to verify.)
func DecodeSignature(s string) ([]byte, bool) {
	if len(s) > maxSignatureLen {
		return nil, false
	}
	if b, ok := events.DecodeBase58(s, ed25519.SignatureSize); ok {
		return b, true
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == ed25519.SignatureSize {
			return b, true
		}
	}
	return nil, false
}

// seconds writes a number of seconds to the millisecond, without trailing zeros.
func seconds(s float64) string {
	return strconv.FormatFloat(math.Round(s*1000)/1000, 'f', -1, 64)
}

func unauthorized(format string, args ...any) error {
	return fault.Errorf(fault.Unauthorized, format, args...)
}

// Encoding is how a signature is written in x-signature.
type Encoding int

const (
	Base58 Encoding = iota
	Base64
)

// SignedHeaders are the three headers of a signed request.
type SignedHeaders struct {
	Wallet, Signature, Message string
}

// Set sets the headers on h.
func (s SignedHeaders) Set(h http.Header) {
	h.Set(HeaderWallet, s.Wallet)
	h.Set(HeaderSignature, s.Signature)
	h.Set(HeaderMessage, s.Message)
}

// Sign signs m with key and returns the headers of the request; m.WalletAddress defaults to key's
// wallet. It is what a client does, for the signing tool and tests.
func Sign(key ed25519.PrivateKey, m Message, enc Encoding) (SignedHeaders, error) {
	wallet := events.EncodeBase58(key.Public().(ed25519.PublicKey))
	if m.WalletAddress == "" {
		m.WalletAddress = wallet
	}
	msg, err := json.Marshal(m)
	if err != nil {
		return SignedHeaders{}, fmt.Errorf("encode the message: %w", err)
	}
	sig := ed25519.Sign(key, msg)
	h := SignedHeaders{Wallet: wallet, Message: string(msg), Signature: events.EncodeBase58(sig)}
	if enc == Base64 {
		h.Signature = base64.StdEncoding.EncodeToString(sig)
	}
	return h, nil
}
