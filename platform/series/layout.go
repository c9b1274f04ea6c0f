package series

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
)

// Every CSV answer (dated pages and exports, see writeCSV) renders stored records through a Layout. Exports render millions of them, and decoding each into its struct to call CSVRow costs
// two allocations of the record's size, strconv and a []string per row, on top of the rest of the
// path. For flat records whose every CSV column is one JSON field rendered as it stands (a
// string's text, an integer's digits), the stored JSON already holds each cell: a Layout finds
// them in one pass over the bytes and appends them in column order, allocating nothing.
//
// The result must be byte for byte what decoding the record gives (json.Unmarshal, CSVRow,
// httpapi.AppendCSVRow): that reference path is also the layout's fallback. The fast path therefore
// only takes the JSON it is sure about — exact field names, string values with no escapes, canonical
// integers — and hands anything else (escapes, unknown or case-folded keys, floats, syntax errors) to
// the reference path. Whether
// a type's columns really are its fields unchanged is not assumed either: LayoutOf checks it
// against CSVRow and keeps the type on the reference path when it is not so.

// fieldKind is how the fast path reads a field's JSON value.
type fieldKind uint8

const (
	kindOther  fieldKind = iota // anything else: the record takes the reference path
	kindString                  // a string kind: the value's text
	kindInt                     // a 64-bit signed integer kind: its canonical digits
)

// jsonField is one JSON-visible field of a record type.
type jsonField struct {
	name string
	kind fieldKind
	col  int // CSV column rendering the field, -1 when none does
}

// Layout renders the stored JSON of one record type as CSV rows: the record type's CSVHeader and, for
// each record, its CSVRow. It is immutable and shared by every answer of the type; each answer reads
// through a csvEncoder of its own.
type Layout struct {
	header []string
	fields []jsonField    // in struct order, the order encoders write them in
	index  map[string]int // JSON name -> index into fields
	zero   [][]byte       // each column's cell, quoted for CSV, when its field is absent
	decode func(record []byte) ([]string, error)
	fast   bool // the columns are the fields unchanged (checked by LayoutOf)
}

// newCSVLayout builds the layout of record type T.
func LayoutOf[T any, P interface {
	*T
	events.CSVRecord
}]() *Layout {
	var none P // CSVHeader and CSVRow work on a nil record
	l := &Layout{
		header: none.CSVHeader(),
		index:  map[string]int{},
		decode: func(record []byte) ([]string, error) {
			rec := P(new(T))
			if err := json.Unmarshal(record, rec); err != nil {
				return nil, err
			}
			return rec.CSVRow(), nil
		},
	}
	for _, cell := range none.CSVRow() {
		l.zero = append(l.zero, httpapi.AppendCSVField(nil, cell))
	}
	l.fast = l.mapFields(reflect.TypeFor[T]()) && l.verify(reflect.TypeFor[T]())
	return l
}

// mapFields lists t's JSON fields and matches columns to them by name. It reports whether the fast
// path can serve t: every column is a field of a kind it reads, field names are unique and plain.
func (l *Layout) mapFields(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	cols := make(map[string]int, len(l.header))
	for i, h := range l.header {
		cols[h] = i
	}
	if !l.addFields(t, cols) {
		return false
	}
	if len(cols) > 0 {
		return false // a column that is no field of its own
	}
	for _, f := range l.fields {
		if f.col >= 0 && f.kind == kindOther {
			return false
		}
	}
	return true
}

// addFields appends the JSON fields of struct type t in the order encoders write them: those of a
// struct embedded without a tag (the records' events.Tx) where it is embedded, as encoding/json
// promotes them. It matches columns to them, taking the matched names out of cols, and reports
// false for a field the fast path cannot serve.
func (l *Layout) addFields(t reflect.Type, cols map[string]int) bool {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous {
			// Embedded pointers, non-structs and tagged embedded structs have rules of their own.
			if tag != "" || sf.Type.Kind() != reflect.Struct || !l.addFields(sf.Type, cols) {
				return false
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if tag == "-" && opts == "" {
			continue
		}
		if strings.Contains(opts, "string") {
			return false
		}
		name := sf.Name
		if tag != "" {
			name = tag
		}
		if _, dup := l.index[name]; dup || !plainName(name) {
			return false
		}
		f := jsonField{name: name, kind: kindOf(sf.Type), col: -1}
		if c, ok := cols[name]; ok {
			f.col = c
			delete(cols, name)
		}
		l.index[name] = len(l.fields)
		l.fields = append(l.fields, f)
	}
	return true
}

func kindOf(t reflect.Type) fieldKind {
	p := reflect.PointerTo(t)
	if p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return kindOther
	}
	switch t.Kind() {
	case reflect.String:
		return kindString
	case reflect.Int64:
		return kindInt
	case reflect.Int:
		if t.Size() == 8 {
			return kindInt
		}
	}
	return kindOther
}

// plainName reports whether name is printable ASCII that JSON writes without escapes.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return name != ""
}

// verify checks that the fast path renders what CSVRow renders: for a record with every field set,
// for the empty record, and for the full record with each field in turn left out (a column that
// derives a value from other fields when its own is empty would show there).
func (l *Layout) verify(t reflect.Type) bool {
	full := reflect.New(t).Elem()
	for i, sf := range reflect.VisibleFields(t) {
		f := full.FieldByIndex(sf.Index) // no embedded pointers: addFields refuses them
		switch {
		case !f.CanSet():
		case f.Kind() == reflect.String:
			f.SetString("v" + strconv.Itoa(i) + " x,y")
		case f.CanInt():
			v := int64(1000 + i)
			if i%2 == 1 {
				v = -v
			}
			f.SetInt(v)
		}
	}
	b, err := json.Marshal(full.Addr().Interface())
	if err != nil {
		return false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return false
	}
	samples := [][]byte{b, []byte("{}")}
	for name := range obj {
		rest := make(map[string]json.RawMessage, len(obj))
		for k, v := range obj {
			if k != name {
				rest[k] = v
			}
		}
		s, err := json.Marshal(rest)
		if err != nil {
			return false
		}
		samples = append(samples, s)
	}
	e := l.encoder()
	for _, s := range samples {
		want, err := l.decode(s)
		if err != nil {
			return false
		}
		got, ok := e.appendFast(nil, s)
		if !ok || !bytes.Equal(got, httpapi.AppendCSVRow(nil, want)) {
			return false
		}
	}
	return true
}

// csvEncoder holds one export's scratch space. Not safe for concurrent use.
type csvEncoder struct {
	l     *Layout
	cells [][]byte // this row's cell text per column; nil when the field is absent
}

func (l *Layout) encoder() *csvEncoder {
	return &csvEncoder{l: l, cells: make([][]byte, len(l.header))}
}

// appendRow appends the CSV row of record to dst. It fails only when the record does not decode.
func (e *csvEncoder) appendRow(dst, record []byte) ([]byte, error) {
	if e.l.fast {
		if out, ok := e.appendFast(dst, record); ok {
			return out, nil
		}
	}
	row, err := e.l.decode(record)
	if err != nil {
		return dst, fmt.Errorf("decode stored record: %w", err)
	}
	return httpapi.AppendCSVRow(dst, row), nil
}

// appendFast appends the row of record when the fast path can read it, and reports whether it did;
// when it cannot, dst is returned as it was.
func (e *csvEncoder) appendFast(dst, record []byte) ([]byte, bool) {
	if !e.scan(record) {
		return dst, false
	}
	for c, cell := range e.cells {
		if c > 0 {
			dst = append(dst, ',')
		}
		if cell == nil {
			dst = append(dst, e.l.zero[c]...)
			continue
		}
		// A cell is the text of a string without escapes, or digits: it holds no quote to double.
		dst = append(dst, '"')
		dst = append(dst, cell...)
		dst = append(dst, '"')
	}
	return append(dst, '\n'), true
}

// scan reads record into e.cells, accepting only what encoding/json would decode into the same
// fields; it reports false for anything else.
func (e *csvEncoder) scan(s []byte) bool {
	clear(e.cells)
	fields := e.l.fields
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return onlySpace(s, i+1)
	}
	next := 0 // the field tried first: encoders write fields in struct order
	for {
		if i >= len(s) || s[i] != '"' {
			return false
		}
		fi := -1
		if next < len(fields) {
			name := fields[next].name
			end := i + 1 + len(name)
			if end < len(s) && s[end] == '"' && string(s[i+1:end]) == name {
				fi, i = next, end+1
			}
		}
		if fi < 0 {
			n := bytes.IndexByte(s[i+1:], '"')
			if n < 0 {
				return false
			}
			key := s[i+1 : i+1+n]
			var ok bool
			// A key with escapes, or one that is no field's exact name (encoding/json also matches
			// names case-insensitively and ignores unknown keys), is the reference path's business.
			if fi, ok = e.l.index[string(key)]; !ok || bytes.IndexByte(key, '\\') >= 0 {
				return false
			}
			i += n + 2
		}
		next = fi + 1
		if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
			return false
		}
		if i = skipSpace(s, i+1); i >= len(s) {
			return false
		}
		f := &fields[fi]
		switch c := s[i]; {
		case c == 'n':
			// null leaves a non-pointer field as it was, as in encoding/json.
			if !bytes.HasPrefix(s[i:], []byte("null")) {
				return false
			}
			i += 4
		case c == '"' && f.kind == kindString:
			n := bytes.IndexByte(s[i+1:], '"')
			if n < 0 {
				return false
			}
			v := s[i+1 : i+1+n]
			if !plainText(v) {
				return false
			}
			if f.col >= 0 {
				e.cells[f.col] = v
			}
			i += n + 2
		case f.kind == kindInt:
			end, ok := canonicalInt(s, i)
			if !ok {
				return false
			}
			if f.col >= 0 {
				e.cells[f.col] = s[i:end]
			}
			i = end
		default:
			return false
		}
		if i = skipSpace(s, i); i >= len(s) {
			return false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return onlySpace(s, i+1)
		default:
			return false
		}
	}
}

// canonicalInt reads the integer literal at s[i] and reports whether it is canonical (an optional
// '-', no leading zero, not "-0") and short enough that any int64 holds it: its decimal rendering
// is then the literal itself. A number that goes on (fraction, exponent) is not an integer.
func canonicalInt(s []byte, i int) (int, bool) {
	start := i
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := i
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	n := i - digits
	switch {
	case n == 0 || n > 18:
		return i, false
	case s[digits] == '0' && (n > 1 || digits > start):
		return i, false
	case i < len(s) && (s[i] == '.' || s[i] == 'e' || s[i] == 'E'):
		return i, false
	}
	return i, true
}

// plainText reports whether the bytes of a string literal are its value: no escapes, no control
// characters, valid UTF-8. It tests eight bytes per step for "control character, non-ASCII byte or
// backslash" with the bit tricks of https://graphics.stanford.edu/~seander/bithacks.html#HasLessInWord
// (exact for "is there such a byte"), and looks closer only when there is one.
func plainText(v []byte) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	s := v
	for len(s) >= 8 {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		bs := x ^ ('\\' * ones)
		if (x|(x-0x20*ones)&^x|(bs-ones)&^bs)&high != 0 {
			return plainUnicode(v)
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return plainUnicode(v)
		}
	}
	return true
}

func plainUnicode(v []byte) bool {
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return utf8.Valid(v)
}

func skipSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func onlySpace(s []byte, i int) bool { return skipSpace(s, i) == len(s) }
