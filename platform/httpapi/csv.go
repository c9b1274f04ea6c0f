package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// CSV is a complete CSV answer: the header row and then every row, each field double-quoted.
type CSV struct {
	Filename string
	Header   []string
	Rows     [][]string
}

// Respond writes the CSV as an attachment named Filename (characters outside [A-Za-z0-9._-] become
// "_", so a path value can never break the header).
func (c CSV) Respond(w http.ResponseWriter, _ *http.Request) error {
	SetCSVHeaders(w, c.Filename)
	w.WriteHeader(http.StatusOK)
	cw := NewCSVWriter(w)
	if c.Header != nil {
		if err := cw.Write(c.Header); err != nil {
			return err
		}
	}
	for _, row := range c.Rows {
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	return cw.Flush()
}

// SetCSVHeaders sets Content-Type and Content-Disposition for a CSV attachment; streaming handlers that
// use CSVWriter directly call it before writing.
func SetCSVHeaders(w http.ResponseWriter, filename string) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+safeFilename(filename)+`"`)
}

// CSVFilename is "{entity}-{id}-{typ}-{label}.csv", e.g. "market-SOL-PERP-trades-2026-11-21.csv".
func CSVFilename(entity, id, typ, label string) string {
	return fmt.Sprintf("%s-%s-%s-%s.csv", entity, id, typ, label)
}

func safeFilename(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		default:
			return '_'
		}
	}, name)
}

// AppendCSVField appends f to dst as one CSV field: double-quoted, with each embedded quote doubled.
// It is the quoting rule of every CSV answer; code that renders rows itself (rather than passing
// []string to CSVWriter.Write) uses it, or AppendCSVRow, so that its bytes are the same.
func AppendCSVField(dst []byte, f string) []byte {
	dst = append(dst, '"')
	for {
		j := strings.IndexByte(f, '"')
		if j < 0 {
			break
		}
		dst = append(dst, f[:j+1]...)
		dst = append(dst, '"')
		f = f[j+1:]
	}
	dst = append(dst, f...)
	return append(dst, '"')
}

// AppendCSVRow appends fields to dst as one CSV row: each field as AppendCSVField renders it,
// separated by commas, ending in "\n". It is the row CSVWriter.Write writes.
func AppendCSVRow(dst []byte, fields []string) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendCSVField(dst, f)
	}
	return append(dst, '\n')
}

// csvBufferSize is how much CSV a CSVWriter holds before writing it out.
const csvBufferSize = 32 << 10

// CSVWriter streams CSV rows through a 32 KiB buffer, rendered as AppendCSVRow renders them. Errors
// are sticky: after a failed write every call returns the same error. Not safe for concurrent use.
type CSVWriter struct {
	w   io.Writer
	buf []byte
	err error
}

// NewCSVWriter writes to w through a 32 KiB buffer.
func NewCSVWriter(w io.Writer) *CSVWriter {
	// A row is appended whole before the buffer is written out, so it may run past csvBufferSize:
	// the spare capacity keeps the usual row from growing it.
	return &CSVWriter{w: w, buf: make([]byte, 0, csvBufferSize+4<<10)}
}

// Write appends one row.
func (c *CSVWriter) Write(fields []string) error {
	if c.err != nil {
		return c.err
	}
	c.buf = AppendCSVRow(c.buf, fields)
	return c.spill()
}

// WriteRow appends row unchanged: a row already rendered as AppendCSVRow renders one (fields quoted
// by AppendCSVField, commas, a final "\n"), by a caller that renders rows from something other than
// []string.
func (c *CSVWriter) WriteRow(row []byte) error {
	if c.err != nil {
		return c.err
	}
	c.buf = append(c.buf, row...)
	return c.spill()
}

// spill writes the buffer out once it holds csvBufferSize bytes.
func (c *CSVWriter) spill() error {
	if len(c.buf) < csvBufferSize {
		return nil
	}
	return c.Flush()
}

// Flush writes buffered rows to the underlying writer.
func (c *CSVWriter) Flush() error {
	if c.err != nil {
		return c.err
	}
	if len(c.buf) == 0 {
		return nil
	}
	if _, err := c.w.Write(c.buf); err != nil {
		c.err = fmt.Errorf("write csv: %w", err)
		return c.err
	}
	c.buf = c.buf[:0]
	return nil
}
