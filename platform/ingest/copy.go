package ingest

import (
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
)

// COPY payloads come in two formats. Binary saves Postgres the parsing of every number and
// escape (its one backend is what limits ingest), but needs a wire encoding per column type, so
// it is used only when every column has one here; any other table is copied as text.
//
// Both formats accept the same values: a value without a direct binary encoding for its column
// is rendered as it would be in text format and that text converted, as Postgres would parse
// it, into the column's binary form. pgx's own binary encoders are not used: they need a
// concrete Go type per column (a decimal string into numeric goes through big.Int, and fails
// for strings into most types) where text input accepts anything that renders right.

// colKind is a column type the binary encoder writes.
type colKind uint8

const (
	kindInt2 colKind = iota + 1
	kindInt4
	kindInt8
	kindFloat4
	kindFloat8
	kindBool
	kindText // text and varchar: the bytes themselves (varchar's length limit is checked by the server)
	kindJSON // json's binary form is its text
	kindJSONB
	kindNumeric
)

var binaryKinds = map[uint32]colKind{
	pgtype.Int2OID:    kindInt2,
	pgtype.Int4OID:    kindInt4,
	pgtype.Int8OID:    kindInt8,
	pgtype.Float4OID:  kindFloat4,
	pgtype.Float8OID:  kindFloat8,
	pgtype.BoolOID:    kindBool,
	pgtype.TextOID:    kindText,
	pgtype.VarcharOID: kindText,
	pgtype.JSONOID:    kindJSON,
	pgtype.JSONBOID:   kindJSONB,
	pgtype.NumericOID: kindNumeric,
}

var kindNames = [...]string{
	kindInt2: "smallint", kindInt4: "integer", kindInt8: "bigint", kindFloat4: "real", kindFloat8: "double precision",
	kindBool: "boolean", kindText: "text", kindJSON: "json", kindJSONB: "jsonb", kindNumeric: "numeric",
}

// binaryHeader is the signature, the flags (none) and the length of the header extension (0).
const binaryHeader = "PGCOPY\n\377\r\n\000" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

var be = binary.BigEndian

// copyEncoder renders rows for COPY FROM STDIN, in binary format when kinds is set.
type copyEncoder struct {
	m     *pgtype.Map
	oids  []uint32
	kinds []colKind // per column; nil for text format
	buf   []byte    // the payload rendered and not yet read (see rowStream)
	tmp   []byte    // a value's text rendering, or a numeric's padded digits
}

func newCopyEncoder(m *pgtype.Map, oids []uint32) *copyEncoder {
	e := &copyEncoder{m: m, oids: oids, tmp: make([]byte, 0, 64)}
	kinds := make([]colKind, len(oids))
	for i, oid := range oids {
		k, ok := binaryKinds[oid]
		if !ok {
			return e
		}
		kinds[i] = k
	}
	e.kinds = kinds
	return e
}

func (e *copyEncoder) binary() bool { return e.kinds != nil }

// options is the COPY statement's suffix for the encoder's format.
func (e *copyEncoder) options() string {
	if e.binary() {
		return " (FORMAT binary)"
	}
	return ""
}

// rowStream renders records as a COPY payload while the payload is read, a window at a time, so
// that Postgres parses the first rows while later ones are still being encoded (rendering a whole
// batch first kept the server idle meanwhile), and a batch never holds its whole payload (megabytes
// for a batch of fills). Keeping it would serve only the rare batch that falls back to the
// staging path, and that batch renders its rows again instead. With ordinals, each row ends with
// one more int4 column holding its index in recs (the staging table's _ord).
type rowStream[T any] struct {
	e        *copyEncoder
	recs     []T
	row      func(T) []any
	ordinals bool
	next     int  // the first record not rendered yet
	off      int  // how much of the window (e.buf) has been read
	done     bool // the payload is complete
	err      error
}

// streamWindow is the window's initial capacity: pgconn reads the payload 64 KB at a time, and a
// window holds a read's worth plus the row that straddles it.
const streamWindow = 80 << 10

func newRowStream[T any](e *copyEncoder, recs []T, row func(T) []any, ordinals bool) *rowStream[T] {
	e.buf = make([]byte, 0, streamWindow)
	if e.binary() {
		e.buf = append(e.buf, binaryHeader...)
	}
	return &rowStream[T]{e: e, recs: recs, row: row, ordinals: ordinals}
}

// Read serves the payload, rendering rows until p can be filled.
func (s *rowStream[T]) Read(p []byte) (int, error) {
	if s.off > 0 { // keep only what is unread: less than a row
		n := copy(s.e.buf, s.e.buf[s.off:])
		s.e.buf, s.off = s.e.buf[:n], 0
	}
	for len(s.e.buf) < len(p) && !s.done && s.err == nil {
		s.step()
	}
	if s.err != nil {
		return 0, s.err
	}
	n := copy(p, s.e.buf)
	s.off = n
	if n == 0 && s.done {
		return 0, io.EOF
	}
	return n, nil
}

// step renders the next row, or ends the payload after the last.
func (s *rowStream[T]) step() {
	e := s.e
	bin := e.binary()
	if s.next == len(s.recs) {
		if bin {
			e.buf = append(e.buf, 0xff, 0xff) // field count -1 ends the data
		}
		s.done = true
		return
	}
	r := s.next
	s.next++
	vals := s.row(s.recs[r])
	if len(vals) != len(e.oids) {
		s.err = fmt.Errorf("row %d has %d values for %d columns", r, len(vals), len(e.oids))
		return
	}
	if bin {
		fields := len(vals)
		if s.ordinals {
			fields++
		}
		e.buf = be.AppendUint16(e.buf, uint16(fields))
	}
	for i, v := range vals {
		var err error
		if bin {
			err = e.appendBinary(i, v)
		} else {
			if i > 0 {
				e.buf = append(e.buf, '\t')
			}
			err = e.appendText(i, v)
		}
		if err != nil {
			s.err = fmt.Errorf("row %d column %d: %w", r, i, err)
			return
		}
	}
	switch {
	case s.ordinals && bin:
		e.buf = be.AppendUint32(e.buf, 4)
		e.buf = be.AppendUint32(e.buf, uint32(int32(r)))
	case s.ordinals:
		e.buf = append(e.buf, '\t')
		e.buf = strconv.AppendInt(e.buf, int64(r), 10)
	}
	if !bin {
		e.buf = append(e.buf, '\n')
	}
}

// valueError is a record's value that its column cannot hold: out of range, or text that does not
// parse as the column's type. Unlike a value of a Go type the encoder does not know (a sink's bug,
// which every record repeats), it condemns only its record.
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }

func badValue(format string, args ...any) error { return &valueError{fmt.Sprintf(format, args...)} }

// appendText writes v for column i, escaped for COPY text.
func (e *copyEncoder) appendText(i int, v any) error {
	if s, ok := v.(string); ok { // most values: skip the copy below
		e.buf = appendEscaped(e.buf, s)
		return nil
	}
	start := len(e.buf)
	out, null, err := e.render(e.buf, i, v)
	if err != nil {
		return err
	}
	if null {
		e.buf = append(e.buf[:start], `\N`...)
		return nil
	}
	e.buf = out
	if needsEscape(out[start:]) {
		e.tmp = append(e.tmp[:0], out[start:]...)
		e.buf = appendEscaped(out[:start], e.tmp)
	}
	return nil
}

// render appends v's text for column i, as Postgres would take it as input, unescaped; null
// reports SQL NULL (and out is then to be ignored).
func (e *copyEncoder) render(b []byte, i int, v any) (out []byte, null bool, err error) {
	switch x := v.(type) {
	case nil:
		return b, true, nil
	case string:
		return append(b, x...), false, nil
	case int64:
		return strconv.AppendInt(b, x, 10), false, nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), false, nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), false, nil
	case uint64:
		return strconv.AppendUint(b, x, 10), false, nil
	case float64:
		return appendFloat(b, x, 64), false, nil
	case float32:
		return appendFloat(b, float64(x), 32), false, nil
	case bool:
		if x {
			return append(b, 't'), false, nil
		}
		return append(b, 'f'), false, nil
	case driver.Valuer, []byte:
		return e.renderPgx(b, i, v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String: // events.Amount and other named strings
		return append(b, rv.String()...), false, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, rv.Int(), 10), false, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, rv.Uint(), 10), false, nil
	case reflect.Pointer:
		if rv.IsNil() {
			return b, true, nil
		}
		return e.render(b, i, rv.Elem().Interface())
	}
	return e.renderPgx(b, i, v)
}

// renderPgx uses pgx's text encoding for the column's type (time, bytea, json, arrays, pgtype...).
func (e *copyEncoder) renderPgx(b []byte, i int, v any) ([]byte, bool, error) {
	if b == nil {
		b = []byte{} // Encode answers nil for NULL: an empty value must not look like one
	}
	out, err := e.m.Encode(e.oids[i], pgtype.TextFormatCode, v, b)
	if err != nil {
		return nil, false, fmt.Errorf("encode %T: %w", v, err)
	}
	return out, out == nil, nil
}

// appendBinary writes v for column i as a binary COPY field: its length, then its bytes.
func (e *copyEncoder) appendBinary(i int, v any) error {
	k := e.kinds[i]
	// The types rows carry go straight to the wire; the rest is rendered as text and parsed.
	switch x := v.(type) {
	case nil:
		e.buf = be.AppendUint32(e.buf, math.MaxUint32) // -1: NULL
		return nil
	case string:
		switch k {
		case kindText, kindJSON, kindJSONB:
			e.buf = appendString(e.buf, k, x)
			return nil
		case kindNumeric:
			return e.appendNumeric(x)
		}
	case []byte:
		if x != nil && (k == kindText || k == kindJSON || k == kindJSONB) {
			e.buf = appendString(e.buf, k, x)
			return nil
		}
	case int64:
		if ok, err := e.appendInteger(k, x); ok {
			return err
		}
	case int32:
		if ok, err := e.appendInteger(k, int64(x)); ok {
			return err
		}
	case int:
		if ok, err := e.appendInteger(k, int64(x)); ok {
			return err
		}
	case float64:
		switch k {
		case kindFloat8:
			e.buf = be.AppendUint32(e.buf, 8)
			e.buf = be.AppendUint64(e.buf, math.Float64bits(x))
			return nil
		case kindFloat4:
			e.buf = be.AppendUint32(e.buf, 4)
			e.buf = be.AppendUint32(e.buf, math.Float32bits(float32(x)))
			return nil
		}
	case bool:
		if k == kindBool {
			e.buf = be.AppendUint32(e.buf, 1)
			if x {
				e.buf = append(e.buf, 1)
			} else {
				e.buf = append(e.buf, 0)
			}
			return nil
		}
	}
	t, null, err := e.render(e.tmp[:0], i, v)
	if err != nil {
		return err
	}
	if null {
		e.buf = be.AppendUint32(e.buf, math.MaxUint32)
		return nil
	}
	e.tmp = t
	return e.appendParsed(k, string(t))
}

// appendString writes text or json bytes; jsonb's binary form is a version byte, then the text.
func appendString[S ~string | ~[]byte](b []byte, k colKind, s S) []byte {
	if k == kindJSONB {
		b = be.AppendUint32(b, uint32(len(s)+1))
		b = append(b, 1)
	} else {
		b = be.AppendUint32(b, uint32(len(s)))
	}
	return append(b, s...)
}

// appendInteger writes x into an integer or float column; ok is false for other kinds.
func (e *copyEncoder) appendInteger(k colKind, x int64) (ok bool, err error) {
	switch k {
	case kindInt8:
		e.buf = be.AppendUint32(e.buf, 8)
		e.buf = be.AppendUint64(e.buf, uint64(x))
	case kindInt4:
		if x < math.MinInt32 || x > math.MaxInt32 {
			return true, badValue("value %d is out of range for type integer", x)
		}
		e.buf = be.AppendUint32(e.buf, 4)
		e.buf = be.AppendUint32(e.buf, uint32(int32(x)))
	case kindInt2:
		if x < math.MinInt16 || x > math.MaxInt16 {
			return true, badValue("value %d is out of range for type smallint", x)
		}
		e.buf = be.AppendUint32(e.buf, 2)
		e.buf = be.AppendUint16(e.buf, uint16(int16(x)))
	case kindFloat8:
		e.buf = be.AppendUint32(e.buf, 8)
		e.buf = be.AppendUint64(e.buf, math.Float64bits(float64(x)))
	case kindFloat4:
		e.buf = be.AppendUint32(e.buf, 4)
		e.buf = be.AppendUint32(e.buf, math.Float32bits(float32(x)))
	default:
		return false, nil
	}
	return true, nil
}

// appendParsed writes a value's text rendering as column kind k, parsed as Postgres would
// parse it (the common syntax; exotic input such as PG16's hex integers is refused).
func (e *copyEncoder) appendParsed(k colKind, s string) error {
	switch k {
	case kindText, kindJSON, kindJSONB:
		e.buf = appendString(e.buf, k, s)
		return nil
	case kindNumeric:
		return e.appendNumeric(s)
	case kindInt2, kindInt4, kindInt8:
		bits := 64
		switch k {
		case kindInt2:
			bits = 16
		case kindInt4:
			bits = 32
		}
		x, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			return badValue("invalid input for type %s: %v", kindNames[k], err)
		}
		_, err = e.appendInteger(k, x)
		return err
	case kindFloat4, kindFloat8:
		bits := 64
		if k == kindFloat4 {
			bits = 32
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
		if err != nil {
			return badValue("invalid input for type %s: %v", kindNames[k], err)
		}
		if k == kindFloat4 {
			e.buf = be.AppendUint32(e.buf, 4)
			e.buf = be.AppendUint32(e.buf, math.Float32bits(float32(f)))
		} else {
			e.buf = be.AppendUint32(e.buf, 8)
			e.buf = be.AppendUint64(e.buf, math.Float64bits(f))
		}
		return nil
	case kindBool:
		var b byte
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "tr", "tru", "true", "y", "ye", "yes", "on", "1":
			b = 1
		case "f", "fa", "fal", "fals", "false", "n", "no", "off", "0":
		default:
			return badValue("invalid input syntax for type boolean: %q", s)
		}
		e.buf = be.AppendUint32(e.buf, 1)
		e.buf = append(e.buf, b)
		return nil
	}
	return fmt.Errorf("no binary encoding for column kind %d", k) // unreachable: kinds come from binaryKinds
}

// Numeric's binary form: digit count, weight (of the first digit, in powers of 10000), sign,
// display scale, then base-10000 digits, all int16.
const (
	numericPos  = 0x0000
	numericNeg  = 0x4000
	numericNaN  = 0xC000
	numericPInf = 0xD000
	numericNInf = 0xF000
	// maxExponent keeps a silly exponent from allocating much before the server refuses it.
	maxExponent = 1 << 17
)

// appendNumeric writes decimal text ([+-]digits[.digits][e[+-]digits], NaN, [+-]Infinity) as
// numeric, as Postgres's numeric_in reads it: the display scale is the count of fraction digits
// less the exponent, and digits beyond it are kept exactly.
func (e *copyEncoder) appendNumeric(s string) error {
	bad := func() error { return badValue("invalid input syntax for type numeric: %q", s) }
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "nan") {
		e.appendNumericHeader(0, 0, numericNaN, 0)
		return nil
	}
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if strings.EqualFold(t, "infinity") || strings.EqualFold(t, "inf") {
		sign := uint16(numericPInf)
		if neg {
			sign = numericNInf
		}
		e.appendNumericHeader(0, 0, sign, 0)
		return nil
	}
	n := 0
	for n < len(t) && '0' <= t[n] && t[n] <= '9' {
		n++
	}
	intPart, rest := t[:n], t[n:]
	var frac string
	if rest != "" && rest[0] == '.' {
		n = 1
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		frac, rest = rest[1:n], rest[n:]
	}
	if intPart == "" && frac == "" {
		return bad()
	}
	exp := 0
	if rest != "" && (rest[0] == 'e' || rest[0] == 'E') {
		x, err := strconv.Atoi(rest[1:])
		if err != nil {
			return bad()
		}
		if x > maxExponent || x < -maxExponent {
			return badValue("value overflows numeric format: %q", s)
		}
		exp, rest = x, ""
	}
	if rest != "" {
		return bad()
	}
	dscale := max(0, len(frac)-exp)

	// Lay the digits out with the decimal point at p, padded with zeros so that both the part
	// before the point and the part after it are whole base-10000 digits.
	p := len(intPart) + exp
	lead := max(0, -p)
	p += lead
	digits := lead + len(intPart) + len(frac)
	trail := max(0, p-digits)
	digits += trail
	pad := (4 - p%4) % 4
	p += pad
	digits += pad
	trail += (4 - (digits-p)%4) % 4
	d := e.tmp[:0]
	d = append(d, strings.Repeat("0", lead+pad)...)
	d = append(d, intPart...)
	d = append(d, frac...)
	d = append(d, strings.Repeat("0", trail)...)
	e.tmp = d

	weight := p/4 - 1
	for len(d) >= 4 && string(d[:4]) == "0000" {
		d = d[4:]
		weight--
	}
	for len(d) >= 4 && string(d[len(d)-4:]) == "0000" {
		d = d[:len(d)-4]
	}
	ndigits := len(d) / 4
	sign := uint16(numericPos)
	switch {
	case ndigits == 0:
		weight = 0
	case neg:
		sign = numericNeg
	}
	if ndigits > math.MaxInt16 || weight > math.MaxInt16 || weight < math.MinInt16 || dscale > 0x3FFF {
		return badValue("value overflows numeric format: %q", s)
	}
	e.appendNumericHeader(ndigits, weight, sign, dscale)
	for j := 0; j < len(d); j += 4 {
		g := uint16(d[j]-'0')*1000 + uint16(d[j+1]-'0')*100 + uint16(d[j+2]-'0')*10 + uint16(d[j+3]-'0')
		e.buf = be.AppendUint16(e.buf, g)
	}
	return nil
}

func (e *copyEncoder) appendNumericHeader(ndigits, weight int, sign uint16, dscale int) {
	e.buf = be.AppendUint32(e.buf, uint32(8+2*ndigits))
	e.buf = be.AppendUint16(e.buf, uint16(ndigits))
	e.buf = be.AppendUint16(e.buf, uint16(int16(weight)))
	e.buf = be.AppendUint16(e.buf, sign)
	e.buf = be.AppendUint16(e.buf, uint16(dscale))
}

func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits) // "NaN" for NaN; every type we target accepts exponents
}

func needsEscape[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '\t', '\n', '\r':
			return true
		}
	}
	return false
}

// appendEscaped escapes the characters COPY text gives a meaning to.
func appendEscaped[S ~string | ~[]byte](b []byte, s S) []byte {
	if !needsEscape(s) {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
