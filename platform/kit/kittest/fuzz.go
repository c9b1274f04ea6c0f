package kittest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostile are path, query and string values a client may send: malformed encodings, control
// characters, overlong, numeric edge cases, injection attempts.
var hostile = []string{
	"", " ", "\x00", "a\x00b", "\xf6c\xc4\x9f", "\xff", "%", "%00", "../../etc/passwd", "a/b", "..", ".",
	"' OR '1'='1", `"`, `\`, "<script>", "SOL-PERP\n", "\t", "sol-perp", strings.Repeat("A", 300),
	strings.Repeat("Ω", 100), "😀", "\u202e", "-1", "0", "1.5", "1e9", "0x10", "99999999999999999999999",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "NaN", "null", "true", "[]", "{}",
	"eyJ0IjoxfQ", "AQ==", strings.Repeat("z", 5000),
}

// edgeNumbers are JSON numbers at the edges of the types a decoder may read them into: zero and
// its sign, the integer widths' bounds and one past them, fractions, and floats that overflow or
// underflow.
var edgeNumbers = []string{
	"0", "-0", "0.0", "1", "-1", "0.5", "1.5", "-1.5", "1e-320", "1e308", "-1e308", "1e309", "1E+2", "2e0",
	"127", "128", "255", "256", "-129", "65535", "65536", "4294967295", "4294967296", "-2147483649",
	"9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "123456789012345678901234567890",
	"0.000000000000000000000000000001", "100.123456789012345678",
}

// malformed are bodies that are no JSON, or no single JSON value.
var malformed = []string{
	"{", "}", "[", `{"a":`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{'a':1}`, `{a:1}`, `{"a":1}}`, `{"a":1} {"b":2}`,
	`{"a":1}x`, "nul", "tru", `"unterminated`, `{"a":"\x00"}`, "{\"a\":\"\xff\xfe\"}", `{"a":"\ud800"}`,
	`{"a":NaN}`, `{"a":Infinity}`, `{"a":-}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":0x10}`,
	"\xef\xbb\xbf{}", "\x00", "<xml/>", "a=1&b=2", "--boundary\r\n",
}

// bareValues are bodies that are JSON but no object.
var bareValues = []string{"", " ", "\n\t", "null", "true", "0", "-1", `""`, `"{}"`, "[]", "[{}]", "{}"}

// Fuzz sends n requests to the operations the handler serves, chosen in turn, with hostile path and
// query values and, to those that take a body, hostile bodies (malformed JSON, bare values, wrong
// types, huge strings, deep nesting, unknown and duplicated properties, numbers at the edges, a body
// over MaxBody, bodies valid but for one property), all drawn with a fixed seed. It fails the test
// on any answer of 500 or more: bad input is the client's fault, whatever it is.
func (w Walk) Fuzz(t testing.TB, n int) {
	t.Helper()
	ops := w.operations(t)
	if len(ops) == 0 {
		t.Fatal("the handler serves no operation of the document")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// bases are the bodies the hostile ones are made from: the contract walk's, as objects.
	bases := map[string][]map[string]any{}
	withBodies := 0
	for _, o := range ops {
		if o.body == nil {
			continue
		}
		withBodies++
		for _, b := range w.bodies(t, o) {
			var m map[string]any
			if json.Unmarshal(b, &m) == nil {
				bases[o.id] = append(bases[o.id], m)
			}
		}
		if len(bases[o.id]) == 0 {
			bases[o.id] = []map[string]any{{}}
		}
	}
	// pick is a value for a parameter: a candidate, more often where the operation takes a body so
	// that the body gets read, or a hostile value.
	pick := func(name string, o operation) string {
		if vs := w.Values[name]; len(vs) > 0 && (rng.IntN(2) == 0 || o.body != nil && rng.IntN(4) != 0) {
			return vs[rng.IntN(len(vs))]
		}
		return hostile[rng.IntN(len(hostile))]
	}
	failures := 0
	for i := range n {
		o := ops[i%len(ops)]
		vals := map[string]string{}
		for _, p := range o.params {
			vals[p] = pick(p, o)
		}
		q := url.Values{}
		for _, p := range o.query {
			if rng.IntN(2) == 0 {
				q.Set(p.Name, pick(p.Name, o))
			}
		}
		if rng.IntN(8) == 0 {
			q.Set(pick("param", o), pick("value", o))
		}
		target := fillPath(o.path, vals)
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		var body []byte
		contentType := "application/json"
		if o.body != nil {
			body = w.hostileBody(rng, o, bases[o.id])
			switch rng.IntN(20) {
			case 0:
				contentType = ""
			case 1:
				contentType = "text/plain"
			}
		}
		rec := httptest.NewRecorder()
		w.Handler.ServeHTTP(rec, w.request(o, target, body, contentType))
		if rec.Code >= 500 {
			failures++
			if failures <= 20 {
				t.Errorf("%s: %s %s with body %.500q answered %d: %s", o.id, o.method, target, body, rec.Code, rec.Body)
			}
		}
	}
	if failures > 20 {
		t.Errorf("%d answers of %d were 5xx", failures, n)
	}
	t.Logf("kittest: the fuzz walk made %d hostile requests over %d operations (%d of them take a body)", n, len(ops), withBodies)
}

// hostileBody is a body for o made from one of its valid bases, hostile in one way.
func (w Walk) hostileBody(rng *rand.Rand, o operation, bases []map[string]any) []byte {
	base := maps.Clone(bases[rng.IntN(len(bases))])
	names := slices.Sorted(maps.Keys(o.body.Properties))
	for name := range base {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		names = []string{"a"}
	}
	prop := names[rng.IntN(len(names))]
	encode := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("kittest: encode a hostile body: %v", err)) // only raw values that are valid JSON are used
		}
		return b
	}
	with := func(v any) []byte {
		base[prop] = v
		return encode(base)
	}
	// withRaw is base with prop's value written as v, verbatim: encoding/json would refuse a
	// json.RawMessage nested deeper than it decodes.
	withRaw := func(v string) []byte {
		delete(base, prop)
		rest := encode(base)
		head := slices.Concat([]byte("{"), encode(prop), []byte(":"), []byte(v))
		if len(rest) == 2 {
			return append(head, '}')
		}
		return slices.Concat(head, []byte(","), rest[1:])
	}
	limit := w.maxBody()
	switch rng.IntN(12) {
	case 0: // no JSON
		if rng.IntN(2) == 0 {
			return []byte(malformed[rng.IntN(len(malformed))])
		}
		b := encode(base)
		return b[:rng.IntN(len(b))] // truncated
	case 1: // JSON, but no object
		return []byte(bareValues[rng.IntN(len(bareValues))])
	case 2: // one property of another type
		return with(otherType(rng, base[prop]))
	case 3: // one property hostile as a string, or null, or left out
		switch rng.IntN(4) {
		case 0:
			return with(nil)
		case 1:
			delete(base, prop)
			return encode(base)
		default:
			return with(hostile[rng.IntN(len(hostile))])
		}
	case 4: // numbers at the edges, as they are written
		return withRaw(edgeNumbers[rng.IntN(len(edgeNumbers))])
	case 5: // a huge string within the limit
		return with(strings.Repeat("7", limit/2+rng.IntN(limit/4)))
	case 6: // deep nesting within the limit
		depth := min(limit/2-64, 100_000)
		open, shut := "[", "]"
		if rng.IntN(2) == 0 {
			open, shut = `{"a":`, "}"
			depth = min(limit/6-64, 100_000)
		}
		return withRaw(strings.Repeat(open, depth) + "1" + strings.Repeat(shut, depth))
	case 7: // an unknown property, a known one written in another case, or one given twice
		switch rng.IntN(3) {
		case 0:
			base[hostile[rng.IntN(len(hostile))]+"x"] = 1
			return encode(base)
		case 1:
			if v, ok := base[prop]; ok {
				delete(base, prop)
				base[flipCase(prop)] = v
			} else {
				base[flipCase(prop)] = 1
			}
			return encode(base)
		default:
			b := encode(base)
			extra := encode(map[string]any{prop: hostile[rng.IntN(len(hostile))]})
			if len(b) > 2 {
				return slices.Concat(b[:len(b)-1], []byte(","), extra[1:])
			}
			return extra
		}
	case 8: // over the limit: a long string, or a valid body padded with spaces
		if rng.IntN(2) == 0 {
			return with(strings.Repeat("A", limit+1))
		}
		b := encode(base)
		return append(b, []byte(strings.Repeat(" ", limit+1-len(b)+rng.IntN(8)))...)
	case 9: // an array of many items, or of hostile ones
		items := make([]any, 0, 64)
		for range 1 + rng.IntN(64) {
			items = append(items, pickAny(rng))
		}
		if rng.IntN(4) == 0 {
			items = make([]any, 1000+rng.IntN(limit/8))
			for i := range items {
				items[i] = i
			}
		}
		return with(items)
	case 10: // an object where a value is expected, with hostile contents
		inner := map[string]any{}
		for range 1 + rng.IntN(4) {
			inner[names[rng.IntN(len(names))]] = pickAny(rng)
		}
		return with(inner)
	default: // every property hostile at once
		for _, name := range names {
			if rng.IntN(2) == 0 {
				base[name] = pickAny(rng)
			}
		}
		return encode(base)
	}
}

// otherType is a value of a JSON type other than v's.
func otherType(rng *rand.Rand, v any) any {
	alternatives := []any{"1", float64(1), true, nil, []any{"1"}, map[string]any{"a": 1}}
	for {
		a := alternatives[rng.IntN(len(alternatives))]
		if fmt.Sprintf("%T", a) != fmt.Sprintf("%T", v) {
			return a
		}
	}
}

// pickAny is a hostile value of any JSON type.
func pickAny(rng *rand.Rand) any {
	switch rng.IntN(4) {
	case 0:
		return hostile[rng.IntN(len(hostile))]
	case 1:
		return json.RawMessage(edgeNumbers[rng.IntN(len(edgeNumbers))])
	case 2:
		return rng.IntN(2) == 0
	default:
		return nil
	}
}

// flipCase is name with the case of its first letter changed: a name a case-insensitive decoder
// would take for name.
func flipCase(name string) string {
	r, size := utf8.DecodeRuneInString(name)
	if unicode.IsUpper(r) {
		return string(unicode.ToLower(r)) + name[size:]
	}
	return string(unicode.ToUpper(r)) + name[size:]
}
