package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"

	"github.com/tidemark/tidemark/platform/fault"
)

// List is the envelope of every list answer: {"success":true,"records":[...],"meta":{...}}.
// Records is always an array in JSON, never null; Meta is omitted when nil (candles have none).
type List[T any] struct {
	Success bool `json:"success"`
	Records []T  `json:"records"`
	Meta    any  `json:"meta,omitempty"`
}

// NewList is a successful List.
func NewList[T any](records []T, meta any) List[T] {
	return List[T]{Success: true, Records: records, Meta: meta}
}

// MarshalJSON writes nil Records as [] so clients can always iterate.
func (l List[T]) MarshalJSON() ([]byte, error) {
	recs := l.Records
	if recs == nil {
		recs = []T{}
	}
	return json.Marshal(struct {
		Success bool `json:"success"`
		Records []T  `json:"records"`
		Meta    any  `json:"meta,omitempty"`
	}{l.Success, recs, l.Meta})
}

// RollingMeta is the meta of rolling (token-paged) lists; NextPage is nil on the last page.
type RollingMeta struct {
	NextPage *string `json:"nextPage"`
}

// DatedMeta is the meta of dated (number-paged) lists. Every field is nullable in the spec; NewDatedMeta
// fills them all.
type DatedMeta struct {
	Records        *int  `json:"records"`
	TotalRecords   *int  `json:"totalRecords"`
	CurrentPage    *int  `json:"currentPage"`
	TotalPages     *int  `json:"totalPages"`
	NextPage       *int  `json:"nextPage"`
	IncludesLatest *bool `json:"includesLatest"`
}

// NewDatedMeta describes page (1-based) of a range holding total records, of which returned are in this
// answer. totalPages = ceil(total/DatedPageSize); NextPage is nil on the last page and beyond it.
// includesLatest tells whether the range reaches the present, so its counts can still grow.
func NewDatedMeta(total, page, returned int, includesLatest bool) DatedMeta {
	pages := (total + DatedPageSize - 1) / DatedPageSize
	m := DatedMeta{
		Records:        &returned,
		TotalRecords:   &total,
		CurrentPage:    &page,
		TotalPages:     &pages,
		IncludesLatest: &includesLatest,
	}
	if page < pages {
		next := page + 1
		m.NextPage = &next
	}
	return m
}

// RawJSON is an already encoded JSON document answered as is (status 200).
type RawJSON []byte

// Respond writes the document.
func (j RawJSON) Respond(w http.ResponseWriter, _ *http.Request) error {
	return writeBody(w, http.StatusOK, j)
}

// RawList is a successful list whose records are already encoded JSON, as services store them. It is
// written by concatenation: encoding/json would re-validate and compact every record byte on the
// hottest paths of the API. Records must each be one valid JSON value; Meta is encoded normally.
type RawList struct {
	Records []json.RawMessage
	Meta    any
}

// Respond writes {"success":true,"records":[...],"meta":...}.
func (l RawList) Respond(w http.ResponseWriter, r *http.Request) error {
	meta, err := json.Marshal(l.Meta)
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	size := 40 + len(meta)
	for _, rec := range l.Records {
		size += len(rec) + 1
	}
	b := append(Scratch(r.Context(), size), listStart...)
	for i, rec := range l.Records {
		b = appendRecord(b, i, rec)
	}
	return writeBody(w, http.StatusOK, appendListEnd(b, meta))
}

// The pieces of a list's envelope around its records, for the lists written by concatenation.
const listStart = `{"success":true,"records":[`

// appendRecord appends the i-th record of a list (from 0) to b.
func appendRecord(b []byte, i int, rec []byte) []byte {
	if i > 0 {
		b = append(b, ',')
	}
	return append(b, rec...)
}

// appendListEnd closes a list's records with its encoded meta.
func appendListEnd(b, meta []byte) []byte {
	b = append(b, `],"meta":`...)
	b = append(b, meta...)
	return append(b, '}')
}

// RollingFrom is a rolling list answered while it is read, for a page that need not be copied out of
// the driver's buffer: read (called with the request's context) calls each for the rows of the page
// in order, up to size+1 of them, with the row's cursor and its record, encoded JSON lent for the call
// only. The first size are the page, written as RawList writes them; a row beyond them gives the token
// of the next page, the size-th row's cursor bound to scope (as NextPage does). sizeHint is the page's
// expected size in bytes.
func RollingFrom[C any](a *API, scope string, size, sizeHint int,
	read func(ctx context.Context, each func(cursor C, record []byte) error) error) Responder {
	return AppendJSONFrom(sizeHint, func(ctx context.Context, dst []byte) ([]byte, error) {
		dst = append(dst, listStart...)
		n, more := 0, false
		var last C
		err := read(ctx, func(cursor C, record []byte) error {
			if n == size {
				more = true
				return nil
			}
			dst = appendRecord(dst, n, record)
			n++
			last = cursor
			return nil
		})
		if err != nil {
			return nil, err
		}
		var meta RollingMeta
		if more {
			tok := a.EncodeCursor(scope, last)
			meta.NextPage = &tok
		}
		m, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("encode meta: %w", err)
		}
		return appendListEnd(dst, m), nil
	})
}

// ServeOpenAPI serves doc, the JSON form of the API description, at whatever route it is registered on.
// An invalid document answers 500 rather than failing start-up: the contract tests catch it first.
func ServeOpenAPI(doc []byte) Func {
	valid := json.Valid(doc)
	body := RawJSON(bytes.Clone(doc))
	return func(*http.Request) (any, error) {
		if !valid {
			return nil, errors.New("openapi document is not valid JSON")
		}
		return body, nil
	}
}

// DecodeJSON decodes the request body into v strictly: at most maxBytes, one JSON value, no unknown
// property, none given twice or in another case than its field's (see checkNames). Any problem is
// an Invalid error naming it.
func DecodeJSON(r *http.Request, maxBytes int64, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return fault.Errorf(fault.Invalid, "request body exceeds %d bytes", maxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fault.Errorf(fault.Invalid, "request body is empty")
		}
		return fault.Errorf(fault.Invalid, "invalid JSON body: %s", err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fault.Errorf(fault.Invalid, "invalid JSON body: unexpected data after the JSON value")
	}
	if err := checkNames(body, reflect.TypeOf(v)); err != nil {
		return fault.Errorf(fault.Invalid, "invalid JSON body: %s", err.Error())
	}
	return nil
}

// encodeJSON encodes v fully before anything is written, so an encoding failure can still be answered
// as a proper 500.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return buf.Bytes(), nil
}

// writeBody writes a JSON body. A write error means the client is gone; the caller has nobody to tell.
func writeBody(w http.ResponseWriter, status int, body []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// writeJSON encodes and writes v; errorBody always encodes, so callers with it need no error path.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encodeJSON(v)
	if err != nil {
		body = []byte(`{"success":false,"message":"internal error"}` + "\n")
		status = http.StatusInternalServerError
	}
	_ = writeBody(w, status, body)
}

// AppendJSON is a JSON answer that appendTo renders itself (a route whose body is large and regular,
// such as a thousand candles, where encoding/json's reflection would dominate). appendTo appends the
// whole document to dst, which has room for at least sizeHint bytes, and returns the result. The memory
// is lent by the API for the request and taken back once the answer is written, so appendTo must not
// keep dst or any part of it.
func AppendJSON(sizeHint int, appendTo func(dst []byte) []byte) Responder {
	return appendedJSON{size: sizeHint, appendTo: appendTo}
}

type appendedJSON struct {
	size     int
	appendTo func(dst []byte) []byte
}

func (a appendedJSON) Respond(w http.ResponseWriter, r *http.Request) error {
	return writeBody(w, http.StatusOK, a.appendTo(Scratch(r.Context(), a.size)))
}

// AppendJSONFrom is AppendJSON for an answer read while it is written, so that what it is made of
// (rows in a database driver's buffer, say) need not be copied or kept: appendTo runs when the answer
// is written, with the request's context, appends the whole document to dst (room for at least
// sizeHint bytes, lent as AppendJSON lends it) and returns the result, or an error. Nothing is written
// before appendTo returns, so its error is answered as the handler's would have been.
func AppendJSONFrom(sizeHint int, appendTo func(ctx context.Context, dst []byte) ([]byte, error)) Responder {
	return appendedJSONFrom{size: sizeHint, appendTo: appendTo}
}

type appendedJSONFrom struct {
	size     int
	appendTo func(ctx context.Context, dst []byte) ([]byte, error)
}

func (a appendedJSONFrom) Respond(w http.ResponseWriter, r *http.Request) error {
	body, err := a.appendTo(r.Context(), Scratch(r.Context(), a.size))
	if err != nil {
		return err
	}
	return writeBody(w, http.StatusOK, body)
}
