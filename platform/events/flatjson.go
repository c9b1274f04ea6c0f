package events

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Strict decoding of message values. encoding/json spends most of its time scanning every value
// twice and resolving fields through its generic machinery; for the flat records that make up nearly
// all of the traffic (fills, orders, order actions, ...) a single pass over the bytes with per-type
// field tables reads each value once and resolves nothing at run time. Every record type that is not flat (nested objects, arrays,
// json.RawMessage, custom unmarshalers) keeps using encoding/json.
//
// The fast path must accept exactly the inputs encoding/json accepts (with DisallowUnknownFields and
// nothing but whitespace after the value) and produce the same record; FuzzDecodeMatchesEncodingJSON
// holds it to that. The reference is the default encoding/json of the Go release, not the
// GOEXPERIMENT=jsonv2 build, whose v1 emulation differs in corner cases.

// errTrailingData is the error for anything but whitespace after the record.
var errTrailingData = errors.New("trailing data after the record")

// decodeRecord decodes value into r, a pointer to a record struct, as strictly as decodeStd. The
// record's strings are substrings of one copy of value.
func decodeRecord(value []byte, r Record) error { return decodeInto(value, r, false) }

// decodeRecordOwned is decodeRecord for a value that nothing changes afterwards: the record's strings
// are substrings of value itself.
func decodeRecordOwned(value []byte, r Record) error { return decodeInto(value, r, true) }

func decodeInto(value []byte, r Record, owned bool) error {
	rv := reflect.ValueOf(r).Elem()
	d := flatDecoders()[rv.Type()]
	if d == nil {
		return decodeStd(value, r)
	}
	// Every string field without escapes becomes a substring of s instead of an allocation of its
	// own. The fields together hold nearly all of the message, so keeping it alive through them
	// costs little.
	var s string
	if owned {
		s = unsafe.String(unsafe.SliceData(value), len(value))
	} else {
		s = string(value)
	}
	if err := d.decode(s, rv); err != nil {
		// Rejected messages are rare (they go to the dead-letter topic), so decoding them again costs
		// nothing that matters and keeps the dead-letter reason worded as encoding/json words it, as it
		// always was. The record is reset first: the fast path may have filled part of it.
		rv.SetZero()
		return decodeStd(value, r)
	}
	return nil
}

// decodeStd is the reference decoder: encoding/json with unknown fields disallowed and nothing but
// whitespace allowed after the value.
func decodeStd(value []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// encoding/json keeps the offset of a syntax error out of the message; a dead-letter reason
		// is more useful with it.
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("%w (offset %d)", err, se.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w (offset %d)", err, len(value))
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errTrailingData
	}
	return nil
}

// flatDecoders maps each flat protocol record type to its decoder. It is a cache computed once from
// the fixed set of record types and never written afterwards, so sharing it between goroutines
// needs no lock; building the tables per message would cost more than the decoding they speed up.
var flatDecoders = sync.OnceValue(func() map[reflect.Type]*flatDecoder {
	m := make(map[reflect.Type]*flatDecoder)
	for _, t := range Topics() {
		if t.Edge() {
			continue
		}
		typ := reflect.TypeOf(t.New()).Elem()
		if d := newFlatDecoder(typ); d != nil {
			m[typ] = d
		}
	}
	return m
})

// flatKind is the Go kind a field stores a JSON value as.
type flatKind uint8

const (
	flatString flatKind = iota
	flatBool
	flatInt
	flatUint
	flatFloat
)

// flatField is one JSON-visible field of a flat struct.
type flatField struct {
	name  string   // JSON name
	index []int    // struct field index path, as reflect.Value.FieldByIndex takes it
	kind  flatKind // kind of the field, or of what it points to when ptr
	bits  int      // size of int, uint and float kinds, for range checks
	ptr   bool     // *T field: null sets it to nil, a value allocates it
	// rawKey is set when the name needs no escaping in JSON and is valid UTF-8, so a key whose raw
	// text equals the name is the name.
	rawKey bool
	typ    reflect.Type // field type
	// offset is the field's offset in the outermost struct (a promoted field's embedded struct's
	// offset included) and gokind its Go kind (of what it points to when ptr): values of fields that
	// are no pointers are stored straight into the struct's memory rather than through reflect's
	// generic setters, which would run for every field of every record.
	offset uintptr
	gokind reflect.Kind
}

// flatDecoder decodes JSON objects into one flat struct type: a struct whose JSON-visible fields
// are strings, bools, numbers or unnamed pointers to those, with no ",string" options and no custom
// unmarshalers. Structs embedded by value (the records' Tx) are flat when their own fields are: their
// fields are promoted to the outer object, as encoding/json promotes them.
type flatDecoder struct {
	typ    reflect.Type
	fields []flatField    // in struct order, promoted fields in place of their embedded struct
	exact  map[string]int // JSON name -> index into fields
	folded map[string]int // folded JSON name -> index of the first such field in struct order
}

// newFlatDecoder returns the decoder of struct type t, or nil when t is not flat. It follows
// encoding/json's typeFields for the cases it accepts and refuses every case where encoding/json
// has further rules (embedded pointers, duplicate names and their dominance by depth), so that
// refusing is always safe. Promoted fields are resolved here, once per type, into index paths and
// offsets in t: decoding a message never walks an embedded struct.
func newFlatDecoder(t reflect.Type) *flatDecoder {
	if t.Kind() != reflect.Struct || customUnmarshal(t) {
		return nil
	}
	d := &flatDecoder{typ: t, exact: map[string]int{}, folded: map[string]int{}}
	if !d.addFields(t, nil, 0) {
		return nil
	}
	return d
}

// addFields appends the JSON-visible fields of struct type t, which sits at index path and byte
// offset base in d.typ (nil and 0 for d.typ itself), in struct order: the fields of an embedded
// struct where it is embedded, as encoding/json orders them. It reports false when a field is not
// flat.
func (d *flatDecoder) addFields(t reflect.Type, path []int, base uintptr) bool {
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			// encoding/json ignores embedded unexported types unless they are structs (or pointers
			// to structs), whose exported fields it still promotes.
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if !sf.IsExported() && et.Kind() != reflect.Struct {
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			name = ""
		}
		for opt := range strings.SplitSeq(opts, ",") {
			if opt == "string" {
				return false // values quoted inside strings: left to encoding/json
			}
		}
		index := append(path[:len(path):len(path)], i)
		if name == "" && sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			// An embedded struct without a name of its own: its fields are promoted. One whose
			// type decodes JSON itself is left to encoding/json: whether that method is promoted to
			// the outer type depends on the other embedded fields.
			if customUnmarshal(sf.Type) || !d.addFields(sf.Type, index, base+sf.Offset) {
				return false
			}
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct {
			// An embedded pointer is allocated as its fields are set, or fails when its type is
			// unexported: left to encoding/json.
			return false
		}
		if name == "" {
			name = sf.Name
		}
		if !d.addField(sf, name, index, base+sf.Offset) {
			return false
		}
	}
	return true
}

// addField appends field sf of JSON name name, at index path index and byte offset offset in d.typ,
// or reports false when it is not flat.
func (d *flatDecoder) addField(sf reflect.StructField, name string, index []int, offset uintptr) bool {
	f := flatField{name: name, index: index, typ: sf.Type, rawKey: plainText(name), offset: offset}
	ft := sf.Type
	if ft.Kind() == reflect.Pointer && ft.Name() == "" {
		f.ptr, ft = true, ft.Elem()
	}
	f.gokind = ft.Kind()
	if customUnmarshal(ft) || ft == reflect.TypeFor[json.Number]() {
		return false
	}
	switch ft.Kind() {
	case reflect.String:
		f.kind = flatString
	case reflect.Bool:
		f.kind = flatBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.kind, f.bits = flatInt, ft.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		f.kind, f.bits = flatUint, ft.Bits()
	case reflect.Float32, reflect.Float64:
		f.kind, f.bits = flatFloat, ft.Bits()
	default:
		return false
	}
	if _, dup := d.exact[name]; dup {
		// encoding/json drops or ranks clashing names (by depth, for promoted fields); not worth
		// mirroring.
		return false
	}
	d.exact[name] = len(d.fields)
	// Like encoding/json, the first field in struct order owns a folded name.
	folded := string(appendFoldedName(nil, name))
	if _, taken := d.folded[folded]; !taken {
		d.folded[folded] = len(d.fields)
	}
	d.fields = append(d.fields, f)
	return true
}

// customUnmarshal reports whether encoding/json would hand values of type t to a method of t.
// Checking *t covers t's own methods too.
func customUnmarshal(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Unmarshaler]()) ||
		p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// validTagName is encoding/json's isValidTag: a name it rejects falls back to the Go field name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// appendFoldedName is encoding/json's key folding (fold.go): two names match case-insensitively
// exactly when their folded forms are equal. Folding follows Unicode simple folding, so "ſ" (long s)
// matches "s" and the Kelvin sign matches "k", as they do in encoding/json.
func appendFoldedName(out []byte, in string) []byte {
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(in[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

// foldRune returns the smallest rune of r's simple fold orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// syntaxError is malformed JSON found by the fast path; offset counts bytes from the value's start.
type syntaxError struct {
	msg    string
	offset int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("json: %s (offset %d)", e.msg, e.offset) }

func errSyntax(s string, i int, context string) error {
	if i >= len(s) {
		return &syntaxError{msg: "unexpected end of JSON input", offset: len(s)}
	}
	return &syntaxError{msg: fmt.Sprintf("invalid character %q %s", s[i], context), offset: i}
}

// decode decodes s into dst, an addressable value of d.typ. String fields may be substrings of s.
func (d *flatDecoder) decode(s string, dst reflect.Value) error {
	i := skipSpace(s, 0)
	if i == len(s) {
		return errSyntax(s, i, "")
	}
	switch s[i] {
	case '{':
	case 'n':
		// encoding/json lets a top-level null leave the struct as it is.
		if !strings.HasPrefix(s[i:], "null") {
			return errSyntax(s, i+literalMismatch(s[i:], "null"), "in literal null (expecting 'null')")
		}
		return end(s, i+4)
	default:
		kind, err := valueKind(s, i)
		if err != nil {
			return err
		}
		return &json.UnmarshalTypeError{Value: kind, Type: d.typ, Offset: int64(i)}
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return end(s, i+1)
	}
	next := 0 // the field tried first: encoders write fields in struct order
	base := dst.Addr().UnsafePointer()
	for {
		if i >= len(s) || s[i] != '"' {
			return errSyntax(s, i, "looking for beginning of object key string")
		}
		fi := next
		j, ok := d.rawMatch(s, i, fi)
		if !ok {
			key, end, err := readString(s, i)
			if err != nil {
				return err
			}
			if fi = d.lookup(key); fi < 0 {
				return fmt.Errorf("json: unknown field %q", key)
			}
			j = end
		}
		next = fi + 1
		var err error
		if i = skipSpace(s, j); i >= len(s) || s[i] != ':' {
			return errSyntax(s, i, "after object key")
		}
		if i, err = d.value(s, skipSpace(s, i+1), dst, base, &d.fields[fi]); err != nil {
			return err
		}
		if i = skipSpace(s, i); i >= len(s) {
			return errSyntax(s, i, "")
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return end(s, i+1)
		default:
			return errSyntax(s, i, "after object key:value pair")
		}
	}
}

// rawMatch reports whether the key literal at s[i] is field fi's name as is, and returns the offset
// after it. Comparing the raw bytes with the field expected next saves scanning the key; it is exact
// because a rawKey name is its own JSON text.
func (d *flatDecoder) rawMatch(s string, i, fi int) (int, bool) {
	if fi >= len(d.fields) || !d.fields[fi].rawKey {
		return 0, false
	}
	name := d.fields[fi].name
	end := i + 1 + len(name)
	if end < len(s) && s[end] == '"' && s[i+1:end] == name {
		return end + 1, true
	}
	return 0, false
}

// lookup finds the field of key as encoding/json does: the exact name first, then a case-insensitive
// match.
func (d *flatDecoder) lookup(key string) int {
	if fi, ok := d.exact[key]; ok {
		return fi
	}
	var buf [64]byte
	if fi, ok := d.folded[string(appendFoldedName(buf[:0], key))]; ok {
		return fi
	}
	return -1
}

// value decodes the value starting at s[i] into field f of dst and returns the offset after it.
func (d *flatDecoder) value(s string, i int, dst reflect.Value, base unsafe.Pointer, f *flatField) (int, error) {
	if i >= len(s) {
		return i, errSyntax(s, i, "")
	}
	switch c := s[i]; {
	case c == '"':
		str, j, err := readString(s, i)
		if err != nil {
			return j, err
		}
		if f.kind != flatString {
			return j, d.typeError("string", f, i)
		}
		if !f.ptr {
			*(*string)(unsafe.Add(base, f.offset)) = str
			return j, nil
		}
		d.field(dst, f).SetString(str)
		return j, nil
	case c == 'n':
		if !strings.HasPrefix(s[i:], "null") {
			return i, errSyntax(s, i+literalMismatch(s[i:], "null"), "in literal null (expecting 'null')")
		}
		// null sets a pointer to nil and leaves anything else as it is.
		if f.ptr {
			dst.FieldByIndex(f.index).SetZero()
		}
		return i + 4, nil
	case c == 't' || c == 'f':
		lit := "true"
		if c == 'f' {
			lit = "false"
		}
		if !strings.HasPrefix(s[i:], lit) {
			return i, errSyntax(s, i+literalMismatch(s[i:], lit), "in literal "+lit+" (expecting '"+lit+"')")
		}
		if f.kind != flatBool {
			return i, d.typeError("bool", f, i)
		}
		if !f.ptr {
			*(*bool)(unsafe.Add(base, f.offset)) = c == 't'
			return i + len(lit), nil
		}
		d.field(dst, f).SetBool(c == 't')
		return i + len(lit), nil
	case c == '-' || '0' <= c && c <= '9':
		j, err := scanNumber(s, i)
		if err != nil {
			return j, err
		}
		num := s[i:j]
		// The conversions are encoding/json's: ParseInt and ParseUint reject fractions, exponents
		// and out-of-range values, ParseFloat values beyond the type's range.
		switch f.kind {
		case flatInt:
			n, err := strconv.ParseInt(num, 10, f.bits)
			if err != nil {
				return j, d.typeError("number "+num, f, i)
			}
			if !f.ptr {
				setInt(unsafe.Add(base, f.offset), f.gokind, n)
				return j, nil
			}
			d.field(dst, f).SetInt(n)
		case flatUint:
			n, err := strconv.ParseUint(num, 10, f.bits)
			if err != nil {
				return j, d.typeError("number "+num, f, i)
			}
			d.field(dst, f).SetUint(n)
		case flatFloat:
			n, err := strconv.ParseFloat(num, f.bits)
			if err != nil {
				return j, d.typeError("number "+num, f, i)
			}
			d.field(dst, f).SetFloat(n)
		default:
			return j, d.typeError("number", f, i)
		}
		return j, nil
	case c == '{':
		return i, d.typeError("object", f, i)
	case c == '[':
		return i, d.typeError("array", f, i)
	}
	return i, errSyntax(s, i, "looking for beginning of value")
}

// setInt stores n, in range for the kind, into the integer field of kind k at p.
func setInt(p unsafe.Pointer, k reflect.Kind, n int64) {
	switch k {
	case reflect.Int:
		*(*int)(p) = int(n)
	case reflect.Int8:
		*(*int8)(p) = int8(n)
	case reflect.Int16:
		*(*int16)(p) = int16(n)
	case reflect.Int32:
		*(*int32)(p) = int32(n)
	default:
		*(*int64)(p) = n
	}
}

// field returns the settable value that field f of dst stores into, allocating a nil pointer.
func (d *flatDecoder) field(dst reflect.Value, f *flatField) reflect.Value {
	v := dst.FieldByIndex(f.index)
	if f.ptr {
		if v.IsNil() {
			v.Set(reflect.New(f.typ.Elem()))
		}
		v = v.Elem()
	}
	return v
}

// typeError is encoding/json's own error for a value of the wrong JSON type, so callers that look
// for *json.UnmarshalTypeError find it on either path.
func (d *flatDecoder) typeError(value string, f *flatField, offset int) error {
	return &json.UnmarshalTypeError{Value: value, Type: f.typ, Offset: int64(offset), Struct: d.typ.Name(), Field: f.name}
}

// end checks that only whitespace follows the value ending at s[i-1].
func end(s string, i int) error {
	if skipSpace(s, i) != len(s) {
		return errTrailingData
	}
	return nil
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// literalMismatch returns the offset in s of the first byte that departs from lit.
func literalMismatch(s, lit string) int {
	i := 0
	for i < len(s) && i < len(lit) && s[i] == lit[i] {
		i++
	}
	return i
}

// valueKind names the JSON value starting at s[i] for a type error, or reports a syntax error.
func valueKind(s string, i int) (string, error) {
	switch c := s[i]; {
	case c == '"':
		return "string", nil
	case c == '[':
		return "array", nil
	case c == 't' || c == 'f':
		return "bool", nil
	case c == '-' || '0' <= c && c <= '9':
		return "number", nil
	}
	return "", errSyntax(s, i, "looking for beginning of value")
}

// readString reads the string literal starting at s[i] (the opening quote) and returns its value
// and the offset after the closing quote. Plain literals are substrings of s; literals with escapes
// or invalid UTF-8 go through encoding/json itself, so surrogate pairs, lone surrogates and bad bytes
// come out exactly as there (U+FFFD replacements included).
func readString(s string, i int) (string, int, error) {
	// Nearly every literal is printable ASCII without escapes: find its end with IndexByte and vet
	// it eight bytes at a time before walking it byte by byte.
	if q := strings.IndexByte(s[i+1:], '"'); q >= 0 && plainASCII(s[i+1:i+1+q]) {
		return s[i+1 : i+1+q], i + q + 2, nil
	}
	escaped, ascii := false, true
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			raw := s[i+1 : j]
			if !escaped && (ascii || utf8.ValidString(raw)) {
				return raw, j + 1, nil
			}
			var out string
			if err := json.Unmarshal([]byte(s[i:j+1]), &out); err != nil {
				return "", j + 1, &syntaxError{msg: "invalid string literal: " + err.Error(), offset: i}
			}
			return out, j + 1, nil
		case c == '\\':
			// The escaped byte is skipped here (it may be a quote) and checked by json.Unmarshal.
			escaped = true
			j++
		case c < 0x20:
			return "", j, errSyntax(s, j, "in string literal")
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", len(s), errSyntax(s, len(s), "")
}

// plainText reports whether s is valid UTF-8 without control characters, quotes or backslashes: a
// string that JSON writes as is.
func plainText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' })
}

// plainASCII reports whether s holds only bytes 0x20..0x7f other than the backslash: a string
// literal whose value is its text. It tests eight bytes per step with the bit tricks of
// https://graphics.stanford.edu/~seander/bithacks.html#HasLessInWord, which are exact for "is
// there such a byte".
func plainASCII(s string) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	for len(s) >= 8 {
		// The compiler merges these byte loads into one 64-bit load.
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		bs := x ^ ('\\' * ones)
		if (x|(x-0x20*ones)&^x|(bs-ones)&^bs)&high != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

// scanNumber checks the JSON number starting at s[i] against the grammar and returns the offset
// after it.
func scanNumber(s string, i int) (int, error) {
	j := i
	if s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && '1' <= s[j] && s[j] <= '9':
		j = skipDigits(s, j+1)
	default:
		return j, errSyntax(s, j, "in numeric literal")
	}
	if j < len(s) && s[j] == '.' {
		if j++; j >= len(s) || !isDigit(s[j]) {
			return j, errSyntax(s, j, "after decimal point in numeric literal")
		}
		j = skipDigits(s, j+1)
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		if j++; j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j >= len(s) || !isDigit(s[j]) {
			return j, errSyntax(s, j, "in exponent of numeric literal")
		}
		j = skipDigits(s, j+1)
	}
	return j, nil
}

func skipDigits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
