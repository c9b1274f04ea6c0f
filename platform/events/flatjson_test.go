package events_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

// simFill is a fill as the simulator publishes it (tools/sim, seed 1): the typical ingest message.
const simFill = `{"ts":1746835207,"txSig":"57fUttLF4TAr8GixxDM37NV7m9VmospxFNA6mfy8E8bcbN3bEbwVngYcvMrLTDgiWB3Ma4fNSdLMjLyikHj9dm6v",` +
	`"txSigIndex":0,"slot":344920018,"fillerReward":"328226","baseAssetAmountFilled":"66430000000",` +
	`"quoteAssetAmountFilled":"9377913932","takerFee":"3282269","makerRebate":"187558","referrerReward":"0",` +
	`"quoteAssetAmountSurplus":"0","takerOrderBaseAssetAmount":"66430000000",` +
	`"takerOrderCumulativeBaseAssetAmountFilled":"66430000000","takerOrderCumulativeQuoteAssetAmountFilled":"9377913932",` +
	`"makerOrderBaseAssetAmount":"107190000000","makerOrderCumulativeBaseAssetAmountFilled":"66430000000",` +
	`"makerOrderCumulativeQuoteAssetAmountFilled":"9377913932","oraclePrice":"141215001","makerFee":"-187558",` +
	`"action":"fill","actionExplanation":"orderFilledWithMatch","marketIndex":0,"marketType":"perp",` +
	`"filler":"4PhgGC6KqXGWdBVZdstqii3aSnQnWC76Vzw5AuFM4ZLf","fillRecordId":"71280000001",` +
	`"taker":"Bifx2G4aMQYCABDyDhQZcHqau6ViQCFTkAhuBLx577mb","takerOrderId":"71280000002","takerOrderDirection":"short",` +
	`"maker":"HURFQJetGF7cKj3p4CbS3rvmiCuLeky1wRjEWSLcn5vU","makerOrderId":"71280040002","makerOrderDirection":"long",` +
	`"spotFulfillmentMethodFee":"0","marketFilter":"perp","symbol":"SOL-PERP"}`

// kinds has a field of every kind the fast decoder handles and the tag forms encoding/json treats
// specially; no protocol record has all of them.
type kinds struct {
	Header                 // promoted fields, as in the protocol records (events.Tx)
	S        string        `json:"s"`
	B        bool          `json:"b"`
	I8       int8          `json:"i8"`
	I        int           `json:"i"`
	U16      uint16        `json:"u16"`
	U        uint64        `json:"u"`
	F32      float32       `json:"f32"`
	F        float64       `json:"f"`
	A        events.Amount `json:"a"`
	PI       *int          `json:"pi,omitempty"`
	PS       *string       `json:"ps"`
	PB       *bool         `json:"pb"`
	PF       *float64      `json:"pf"`
	Skipped  string        `json:"-"`
	Dash     string        `json:"-,"`
	Untagged string
	BadTag   string     `json:"a\\b"` // not a valid name: encoding/json uses "BadTag"
	Upper    string     `json:"ID"`   // owns the folded name "ID"
	Mixed    string     `json:"Id"`   // matched only exactly
	K        string     `json:"k"`    // the Kelvin sign folds to k
	HK       string     `json:"HK"`   // folds as Header's "Hk", which comes first and owns it
	Code                // an embedded non-struct is a field named after its type
	label               // an embedded unexported non-struct is no field
	Ignored  `json:"-"` // nor is an embedded struct tagged "-"
}

// Header is embedded in kinds as events.Tx is in the protocol records: encoding/json promotes its
// fields, and those of the unexported struct it embeds in turn, into kinds' own object.
type Header struct {
	HS string  `json:"hs"`
	HI int64   `json:"hi"`
	HP *int    `json:"hp"`
	HF float32 `json:"hf"`
	hidden
}

// hidden is an unexported embedded struct: encoding/json promotes its exported fields all the same.
type hidden struct {
	HU  uint16  `json:"hu"`
	HPS *string `json:"hps"`
	Hk  string  `json:"Hk"`
	h   string  // unexported: no field
}

type (
	Code    int8
	label   string
	Ignored struct{ X string }
)

func newKinds() *kinds {
	i, s, b, f, hi, hs := -7, "ps", true, 2.5, 3, "hps"
	return &kinds{
		S: "s", B: true, I8: -128, I: 1 << 40, U16: 65535, U: 1<<64 - 1, F32: 1.5, F: -1e300, A: "-12",
		PI: &i, PS: &s, PB: &b, PF: &f, Dash: "dash", Untagged: "u", BadTag: "bad", Upper: "up", Mixed: "mixed", K: "k",
		HK: "HK", Code: -3, Header: Header{HS: "hs", HI: -1 << 40, HP: &hi, HF: 0.25, hidden: hidden{HU: 7, HPS: &hs, Hk: "hk"}},
	}
}

// fuzzType is a struct type the fast decoder must decode exactly as encoding/json does.
type fuzzType struct {
	name   string
	new    func() any
	sample any // a valid value, the root of the seed inputs
}

// fuzzTypes lists every flat protocol record type and kinds, in a fixed order (the fuzzer picks one
// by index).
func fuzzTypes(tb testing.TB) []fuzzType {
	tb.Helper()
	var out []fuzzType
	seen := map[reflect.Type]bool{}
	for _, s := range samples() {
		typ := reflect.TypeOf(s.rec).Elem()
		if seen[typ] || !events.UsesFastPath(s.rec) {
			continue
		}
		seen[typ] = true
		out = append(out, fuzzType{name: typ.Name(), new: func() any { return reflect.New(typ).Interface() }, sample: s.rec})
	}
	return append(out, fuzzType{name: "kinds", new: func() any { return new(kinds) }, sample: newKinds()})
}

// member is one raw key/value pair of a JSON object.
type member struct{ key, val string }

func members(tb testing.TB, b []byte) []member {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		tb.Fatal(err)
	}
	var out []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			tb.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			tb.Fatal(err)
		}
		key, _ := json.Marshal(k)
		out = append(out, member{string(key), string(v)})
	}
	return out
}

func object(ms []member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.key + ":" + m.val
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// with returns a copy of ms with member i changed by f.
func with(ms []member, i int, f func(*member)) []member {
	out := append([]member(nil), ms...)
	f(&out[i])
	return out
}

// awkwardValues returns values that test the edges of encoding/json's conversions.
func awkwardValues() []string {
	return []string{
		`1`, `"1"`, `true`, `false`, `null`, `{}`, `[]`, `[1]`, `{"a":1}`, `1.5`, `1e3`, `1E3`, `-0`, `0.0`, `-1`,
		`127`, `128`, `-129`, `65536`, `99999999999999999999`, `-9223372036854775808`, `9223372036854775808`,
		`18446744073709551615`, `18446744073709551616`, `1e400`, `1e-400`, `3.4028235e38`, `3.5e38`,
		`""`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"a\"b\\c\/d\b\f\n\r\t"`,
		"\"\xff\xfe\"", "\"\xc3\"", `"ſK"`, "\"tab\there\"", `01`, `-`, `1.`, `.5`, `+1`, `1e`, `nul`, `tru`, `NaN`,
		`"\u00"`, `"\x"`,
		// Long literals, where the fast path tests eight bytes at a time.
		"\"0123456789\xff0123456789\"", "\"0123456789\x01abcdef\"", "\"0123456789\x7fabcdef\"",
		`"0123456789\u00e9abcdefgh"`, `"0123456789\"abcdefghij"`, `"0123456789\\abcdefghij"`,
		`"0123456789éabcdefgh"`, `"0123456789😀abcdefgh"`, "\"0123456789\xed\xa0\x80abcdefgh\"",
	}
}

// seeds returns inputs derived from ft's sample: the record itself and mutations of its keys,
// values and framing.
func seeds(tb testing.TB, ft fuzzType) []string {
	tb.Helper()
	b, err := json.Marshal(ft.sample)
	if err != nil {
		tb.Fatal(err)
	}
	base := string(b)
	ms := members(tb, b)
	last := len(ms) - 1
	indented, err := json.MarshalIndent(ft.sample, "\r", "\t ")
	if err != nil {
		tb.Fatal(err)
	}
	out := []string{
		base, string(indented), " \n" + base + "\t\r\n ",
		strings.ReplaceAll(strings.ReplaceAll(base, ":", " : "), ",", " ,\n"),
		// Framing.
		base + "x", base + "{}", base + ",", base + "]", base + " null", base + "\x00",
		base[:len(base)-1], base[:len(base)/2], base[:1], base[:len(base)-1] + ",}",
		"{}", "{ }", "{,}", `{"a"}`, `{"a":}`, "null", " null ", "nul", "nullx", "[]", `""`, "1", "true", "", " ",
		"[" + base + "]", "\ufeff" + base,
		// Keys.
		object(append(ms, member{`"nope"`, `1`})),
		object(append([]member{{`"nope"`, `null`}}, ms...)),
		object(with(ms, 0, func(m *member) { m.key = strings.ToUpper(m.key) })),
		object(with(ms, last, func(m *member) { m.key = strings.ToUpper(m.key) })),
		object(with(ms, 0, func(m *member) { m.key = `"\u` + fmt.Sprintf("%04x", m.key[1]) + m.key[2:] })),
		object(with(ms, 0, func(m *member) { m.key = m.key[:len(m.key)-1] + "\xff\"" })),
		object(with(ms, last, func(m *member) { m.key = "\"\xff" + m.key[1:] })),
		object(with(ms, 0, func(m *member) { m.key = m.key[:len(m.key)-1] + " \"" })),
		object(append(ms, ms[0])),
		object(append(ms, member{ms[0].key, `null`})),
		object(append(ms, member{strings.ToUpper(ms[0].key), ms[0].val})),
	}
	// Unicode folding: the long s folds to S and the Kelvin sign to K.
	for i, m := range ms {
		for _, r := range []struct{ old, new string }{{"s", "ſ"}, {"S", "ſ"}, {"k", "\u212a"}, {"K", "\u212a"}} {
			if strings.Contains(m.key, r.old) {
				out = append(out, object(with(ms, i, func(m *member) { m.key = strings.Replace(m.key, r.old, r.new, 1) })))
			}
		}
	}
	// Values: every field gets null, and the first field of each JSON type every awkward value.
	tried := map[byte]bool{}
	for i, m := range ms {
		out = append(out, object(with(ms, i, func(m *member) { m.val = "null" })))
		if tried[m.val[0]] {
			continue
		}
		tried[m.val[0]] = true
		for _, v := range awkwardValues() {
			out = append(out, object(with(ms, i, func(m *member) { m.val = v })))
		}
	}
	return out
}

// sameAsEncodingJSON fails when the fast decoder and encoding/json disagree on data for ft.
func sameAsEncodingJSON(t *testing.T, ft fuzzType, data []byte) (accepted bool) {
	t.Helper()
	fast, std := ft.new(), ft.new()
	flat, errFast := events.DecodeFlat(data, fast)
	if !flat {
		t.Fatalf("%s: no fast decoder", ft.name)
	}
	errStd := events.DecodeStd(data, std)
	if (errFast == nil) != (errStd == nil) {
		t.Fatalf("%s %q:\nfast decoder: %v\nencoding/json: %v", ft.name, data, errFast, errStd)
	}
	if errFast == nil && !reflect.DeepEqual(fast, std) {
		t.Fatalf("%s %q:\nfast decoder: %+v\nencoding/json: %+v", ft.name, data, fast, std)
	}
	return errFast == nil
}

func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	types := fuzzTypes(f)
	for i, ft := range types {
		for _, s := range seeds(f, ft) {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Add(uint8(0), []byte(simFill))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		sameAsEncodingJSON(t, types[int(which)%len(types)], data)
	})
}

func TestFastPathCoversFlatRecords(t *testing.T) {
	nested := map[string]bool{ // records with arrays, objects or raw JSON: encoding/json decodes them
		events.TopicLiquidations: true, events.TopicAccountSnapshots: true, events.TopicParams: true,
		events.TopicNewUsers: true,
	}
	for _, s := range samples() {
		if got := events.UsesFastPath(s.rec); got == nested[s.topic] {
			t.Errorf("%s: fast path %v, want %v", s.topic, got, !nested[s.topic])
		}
	}
}

type (
	embedded struct{ A string }
	text     string
)

func (t *text) UnmarshalText(b []byte) error { *t = text(b); return nil }

func TestFastDecoderLeavesOtherTypesToEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"embedded pointer to struct", &struct {
			*embedded
			B string
		}{}},
		{"embedded struct with a name", &struct {
			embedded `json:"e"`
		}{}},
		{"field shadowing a promoted one", &struct {
			embedded
			A string
		}{}},
		{"promoted field that is not flat", &struct {
			Header
			Nested struct{ embedded }
		}{}},
		{"string option", &struct {
			N int `json:"n,string"`
		}{}},
		{"json.Number", &struct{ N json.Number }{}},
		{"slice", &struct{ L []string }{}},
		{"nested struct", &struct{ E embedded }{}},
		{"pointer to pointer", &struct{ P **int }{}},
		{"text unmarshaler", &struct{ T text }{}},
		{"pointer to text unmarshaler", &struct{ T *text }{}},
		{"interface", &struct{ X any }{}},
		// Built at run time: vet rightly rejects the clash in a struct literal.
		{"same name twice", reflect.New(reflect.StructOf([]reflect.StructField{
			{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
			{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
		})).Interface()},
		{"liquidation", new(events.Liquidation)},
		{"params", new(events.Params)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if flat, _ := events.DecodeFlat([]byte(`{}`), tt.v); flat {
				t.Errorf("%T decoded by the fast decoder", tt.v)
			}
		})
	}
}

// TestFastDecoderEdgeCases pins down encoding/json behaviour the fast decoder reproduces, beside
// the differential check.
func TestFastDecoderEdgeCases(t *testing.T) {
	k := fuzzType{name: "kinds", new: func() any { return new(kinds) }}
	tests := []struct {
		name   string
		input  string
		accept bool
	}{
		{"empty object", `{}`, true},
		{"top-level null leaves the struct alone", ` null `, true},
		{"top-level array", `[]`, false},
		{"top-level string", `"s"`, false},
		{"empty input", ``, false},
		{"case-insensitive key", `{"S":"x","I":1}`, true},
		{"first field owns a folded name", `{"id":"x"}`, true},
		{"exact match wins over fold", `{"Id":"x","ID":"y"}`, true},
		{"Kelvin sign folds to k", "{\"\u212a\":\"x\"}", true},
		{"long s folds to s", `{"ſ":"x"}`, true},
		{"escaped key", `{"\u0073":"x"}`, true},
		{"untagged field by Go name", `{"untagged":"x"}`, true},
		{"invalid tag falls back to the Go name", `{"BadTag":"x"}`, true},
		{"dash comma tag names the field -", `{"-":"x"}`, true},
		{"dash tag hides the field", `{"Skipped":"x"}`, false},
		{"unknown field", `{"s":"x","nope":1}`, false},
		{"duplicate key: last wins", `{"s":"a","s":"b"}`, true},
		{"null keeps a value", `{"s":"a","s":null,"i":1,"i":null}`, true},
		{"null clears a pointer", `{"pi":1,"pi":null}`, true},
		{"number into string", `{"s":1}`, false},
		{"string into int", `{"i":"1"}`, false},
		{"fraction into int", `{"i":1.5}`, false},
		{"exponent into int", `{"i":1e3}`, false},
		{"minus zero into int", `{"i":-0}`, true},
		{"int8 overflow", `{"i8":128}`, false},
		{"negative into uint", `{"u":-1}`, false},
		{"minus zero into uint", `{"u":-0}`, false},
		{"uint64 max", `{"u":18446744073709551615}`, true},
		{"int overflow", `{"i":9223372036854775808}`, false},
		{"float out of range", `{"f":1e400}`, false},
		{"float32 out of range", `{"f32":3.5e38}`, false},
		{"float underflow", `{"f":1e-400}`, true},
		{"bool into string", `{"s":true}`, false},
		{"object into string", `{"s":{}}`, false},
		{"surrogate pair and lone surrogate", `{"s":"\ud83d\ude00\ud800"}`, true},
		{"invalid UTF-8 replaced", "{\"s\":\"\xff\"}", true},
		{"control character in string", "{\"s\":\"a\tb\"}", false},
		{"bad escape", `{"s":"\x"}`, false},
		{"whitespace everywhere", " {\n\"s\"\t:\r\"x\" ,\n\"i\" : 1 } \n", true},
		{"trailing comma", `{"s":"x",}`, false},
		{"trailing data", `{"s":"x"} x`, false},
		{"second value", `{}{}`, false},
		{"truncated", `{"s":"x"`, false},
		{"leading zero", `{"i":01}`, false},
		{"promoted fields", `{"hs":"x","hi":1,"hp":2,"hf":0.5,"hu":3,"hps":"y","Hk":"z"}`, true},
		{"promoted field before and after the others", `{"hu":3,"s":"x","hs":"y"}`, true},
		{"promoted field folded", `{"HS":"x","hK":"y"}`, true},
		{"promoted field owns a folded name", `{"hk":"x"}`, true},
		{"exact name beside a promoted folded one", `{"HK":"x","Hk":"y"}`, true},
		{"null clears a promoted pointer", `{"hp":1,"hp":null}`, true},
		{"wrong type into a promoted field", `{"hi":"1"}`, false},
		{"embedded struct is no key", `{"Header":{}}`, false},
		{"embedded struct by its own name", `{"hidden":{}}`, false},
		{"unexported promoted field", `{"h":"x"}`, false},
		{"embedded non-struct by its type name", `{"Code":-3}`, true},
		{"embedded unexported non-struct", `{"label":"x"}`, false},
		{"embedded struct tagged -", `{"X":"x"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameAsEncodingJSON(t, k, []byte(tt.input)); got != tt.accept {
				t.Errorf("accepted %v, want %v", got, tt.accept)
			}
		})
	}
}

// TestDecodeMatchesEncodingJSONPath runs Decode and the encoding/json path over the seed inputs of
// every flat record type: same records, same errors word for word.
func TestDecodeMatchesEncodingJSONPath(t *testing.T) {
	for _, s := range samples() {
		if !events.UsesFastPath(s.rec) {
			continue
		}
		ft := fuzzType{name: s.topic, new: func() any { return reflect.New(reflect.TypeOf(s.rec).Elem()).Interface() }, sample: s.rec}
		for _, in := range seeds(t, ft) {
			got, gotErr := events.Decode(s.topic, []byte(in))
			want, wantErr := events.DecodeStdlib(s.topic, []byte(in))
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s %q:\nDecode: %v, %v\nencoding/json: %v, %v", s.topic, in, got, gotErr, want, wantErr)
			}
		}
	}
}

func TestFastDecoderErrorsNameTheProblem(t *testing.T) {
	tests := []struct {
		input string
		want  string
	}{
		{`{"ts":1,"nope":1}`, `unknown field "nope"`},
		{`{"slot":"1"}`, "Fill.slot of type int64"},
		{`{"takerFee":1}`, "Fill.takerFee of type events.Amount"},
		{`{"ts":1,}`, "offset 8"},
		{`{"ts":1`, "unexpected end of JSON input (offset 7)"},
		{`{} x`, "trailing data"},
	}
	for _, tt := range tests {
		_, err := events.DecodeFlat([]byte(tt.input), new(events.Fill))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tt.input, err, tt.want)
		}
	}
}

func BenchmarkDecodeFill(b *testing.B) {
	for _, bm := range []struct {
		name   string
		decode func(topic string, value []byte) (events.Record, error)
	}{
		{"encoding-json", events.DecodeStdlib},
		{"flat", events.Decode},
		{"flat-owned", events.DecodeOwned},
	} {
		b.Run(bm.name, func(b *testing.B) {
			value := []byte(simFill)
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bm.decode(events.TopicFills, value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Decode's records own their memory; DecodeOwned's share the value's, which is what saves the copy.
func TestDecodeOwnership(t *testing.T) {
	want, err := events.Decode(events.TopicFills, []byte(simFill))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		decode func(topic string, value []byte) (events.Record, error)
		shares bool
	}{
		{"Decode", events.Decode, false},
		{"DecodeOwned", events.DecodeOwned, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			value := []byte(simFill)
			r, err := tt.decode(events.TopicFills, value)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("decoded %+v, want %+v", r, want)
			}
			// Overwrite the value's bytes: a record that shares them sees its strings change.
			for i := range value {
				if value[i] >= 'a' && value[i] <= 'z' {
					value[i] = 'x'
				}
			}
			if changed := !reflect.DeepEqual(r, want); changed != tt.shares {
				t.Errorf("record changed with its value: %v, want %v (taker now %q)", changed, tt.shares, r.(*events.Fill).Taker)
			}
		})
	}
}
