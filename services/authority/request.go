package authority

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/fault"
)

// MaxExportBody is the largest export request body read: a request names at most
// MaxExportAccounts keys of 44 characters, far below it.
const MaxExportBody = 64 << 10

// MaxExportAccounts bounds userPublicKeys, as the ExportJob resource does.
const MaxExportAccounts = 100

// MaxExportTs bounds from and to (9999-12-31T23:59:59Z), as the export streams do.
const MaxExportTs = 253402300799

// marketScoped are the file types whose records belong to one market rather than to accounts: their
// export names the market (the market service streams them a market at a time).
var marketScoped = []v1alpha1.FileType{"market-trades", "funding-rates"}

var marketPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,31}$`)

// ExportRequest is the body of POST /authority/{authorityId}/exports, checked.
type ExportRequest struct {
	FileType       v1alpha1.FileType
	From, To       int64 // unix seconds, both inclusive
	UserPublicKeys []string
	Market         *string
}

// ParseExportRequest reads an export request body strictly: a JSON object with exactly the spec's
// properties, each of its type and within its rules. The error is a fault.Invalid whose message names
// the property at fault.
func ParseExportRequest(body []byte) (ExportRequest, error) {
	var req ExportRequest
	fields, err := objectFields(body)
	if err != nil {
		return req, err
	}
	for name := range fields {
		switch name {
		case "fileType", "from", "to", "userPublicKeys", "market":
		default:
			return req, invalid("unknown property %q: the body takes fileType, from, to, userPublicKeys and market", name)
		}
	}
	if req.FileType, err = fileType(fields["fileType"]); err != nil {
		return req, err
	}
	if req.From, err = seconds("from", fields["from"]); err != nil {
		return req, err
	}
	if req.To, err = seconds("to", fields["to"]); err != nil {
		return req, err
	}
	if req.From > req.To {
		return req, invalid("from must not be after to")
	}
	if req.To-req.From > exportstream.MaxRangeSeconds {
		return req, invalid("the range from..to may span at most 366 days (%d seconds)", exportstream.MaxRangeSeconds)
	}
	if req.UserPublicKeys, err = accountKeys(fields["userPublicKeys"]); err != nil {
		return req, err
	}
	if req.Market, err = market(fields["market"]); err != nil {
		return req, err
	}
	if req.Market == nil && slices.Contains(marketScoped, req.FileType) {
		return req, invalid("market is required for fileType %s", req.FileType)
	}
	return req, nil
}

func invalid(format string, args ...any) error { return fault.Errorf(fault.Invalid, format, args...) }

// objectFields splits a JSON object into its properties, refusing any other value and a property
// given twice (encoding/json would keep the last one silently).
func objectFields(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("invalid JSON body: %s", err.Error())
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalid("the body must be a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("invalid JSON body: %s", err.Error())
		}
		name, _ := tok.(string) // inside an object, keys are strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalid("invalid JSON body: %s", err.Error())
		}
		if _, dup := fields[name]; dup {
			return nil, invalid("property %q appears twice", name)
		}
		fields[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, invalid("invalid JSON body: %s", err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid("invalid JSON body: unexpected data after the JSON value")
	}
	return fields, nil
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }

func fileType(v json.RawMessage) (v1alpha1.FileType, error) {
	names := make([]string, len(v1alpha1.FileTypes))
	for i, t := range v1alpha1.FileTypes {
		names[i] = string(t)
	}
	oneOf := "fileType must be one of " + strings.Join(names, ", ")
	if v == nil {
		return "", invalid("fileType is required: %s", strings.TrimPrefix(oneOf, "fileType must be "))
	}
	var s string
	if isNull(v) || json.Unmarshal(v, &s) != nil {
		return "", invalid("fileType must be a string: one of %s", strings.Join(names, ", "))
	}
	if !slices.Contains(names, s) {
		return "", invalid("%s", oneOf)
	}
	return v1alpha1.FileType(s), nil
}

// seconds reads from or to: a JSON integer (no fraction, no exponent) of unix seconds.
func seconds(name string, v json.RawMessage) (int64, error) {
	if v == nil {
		return 0, invalid("%s is required (unix seconds)", name)
	}
	if isNull(v) || (len(v) > 0 && (v[0] == '"' || v[0] == '{' || v[0] == '[' || v[0] == 't' || v[0] == 'f')) {
		return 0, invalid("%s must be an integer (unix seconds)", name)
	}
	s := string(v)
	if strings.ContainsAny(s, ".eE") {
		return 0, invalid("%s must be an integer (unix seconds), not %s", name, s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && strings.HasPrefix(s, "-"), err == nil && n < 0:
		return 0, invalid("%s must be >= 0", name)
	case err != nil, n > MaxExportTs:
		return 0, invalid("%s must be at most %d", name, int64(MaxExportTs))
	}
	return n, nil
}

func accountKeys(v json.RawMessage) ([]string, error) {
	if v == nil {
		return nil, invalid("userPublicKeys is required: the accounts whose records are exported")
	}
	var raw []json.RawMessage
	if isNull(v) || json.Unmarshal(v, &raw) != nil {
		return nil, invalid("userPublicKeys must be an array of account keys")
	}
	switch {
	case len(raw) == 0:
		return nil, invalid("userPublicKeys needs at least 1 item")
	case len(raw) > MaxExportAccounts:
		return nil, invalid("userPublicKeys takes at most %d items", MaxExportAccounts)
	}
	keys := make([]string, len(raw))
	for i, r := range raw {
		var k string
		if isNull(r) || json.Unmarshal(r, &k) != nil || !events.ValidPublicKey(k) {
			return nil, invalid("userPublicKeys[%d] must be an account's public key (base58, 32 bytes)", i)
		}
		if j := slices.Index(keys[:i], k); j >= 0 {
			return nil, invalid("userPublicKeys[%d] repeats userPublicKeys[%d] (%s)", i, j, k)
		}
		keys[i] = k
	}
	return keys, nil
}

func market(v json.RawMessage) (*string, error) {
	if v == nil || isNull(v) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return nil, invalid("market must be a string or null")
	}
	if !marketPattern.MatchString(s) {
		return nil, invalid("market must be a market symbol such as SOL-PERP (letters, digits and '-', at most 32)")
	}
	return &s, nil
}

// Spec is the ExportJob spec of the request by authority.
func (r ExportRequest) Spec(authority string) v1alpha1.ExportJobSpec {
	keys := make([]v1alpha1.PublicKey, len(r.UserPublicKeys))
	for i, k := range r.UserPublicKeys {
		keys[i] = v1alpha1.PublicKey(k)
	}
	return v1alpha1.ExportJobSpec{
		Authority: v1alpha1.PublicKey(authority), FileType: r.FileType, From: r.From, To: r.To,
		UserPublicKeys: keys, Market: r.Market,
	}
}

// sameRequest reports whether a job's spec is what the request asks (userPublicKeys as a set).
func sameRequest(a, b v1alpha1.ExportJobSpec) bool {
	return a.Authority == b.Authority && a.FileType == b.FileType && a.From == b.From && a.To == b.To &&
		ptrEqual(a.Market, b.Market) && slices.Equal(sortedKeys(a.UserPublicKeys), sortedKeys(b.UserPublicKeys))
}

func ptrEqual(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sortedKeys(keys []v1alpha1.PublicKey) []v1alpha1.PublicKey {
	out := slices.Clone(keys)
	slices.Sort(out)
	return out
}

// requestName is the name of the job of spec requested in minute (unix seconds / 60): a hash of the
// wallet, the canonical request and the minute, so that replicas handed the same request in the
// same minute name the same job, and the API server makes it once.
func requestName(spec v1alpha1.ExportJobSpec, minute int64) string {
	market := ""
	if spec.Market != nil {
		market = *spec.Market
	}
	keys := sortedKeys(spec.UserPublicKeys)
	canon, _ := json.Marshal([]any{spec.Authority, spec.FileType, spec.From, spec.To, keys, market, minute}) // plain values always encode
	sum := sha256.Sum256(canon)
	return fmt.Sprintf("export-%s", hex.EncodeToString(sum[:16]))
}
