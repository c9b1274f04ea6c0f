package httpapi

import (
	"bufio"
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

// CSVWriter streams CSV rows through a buffer: every field is double-quoted with embedded quotes
// doubled, rows end in "\n". Errors are sticky: after a failed write every call returns the same error.
// Not safe for concurrent use.
type CSVWriter struct {
	w   *bufio.Writer
	err error
}

// NewCSVWriter writes to w through a 32 KiB buffer.
func NewCSVWriter(w io.Writer) *CSVWriter {
	return &CSVWriter{w: bufio.NewWriterSize(w, 32<<10)}
}

// Write appends one row.
func (c *CSVWriter) Write(fields []string) error {
	if c.err != nil {
		return c.err
	}
	for i, f := range fields {
		if i > 0 {
			c.w.WriteByte(',')
		}
		c.w.WriteByte('"')
		for {
			j := strings.IndexByte(f, '"')
			if j < 0 {
				break
			}
			c.w.WriteString(f[:j+1])
			c.w.WriteByte('"')
			f = f[j+1:]
		}
		c.w.WriteString(f)
		c.w.WriteByte('"')
	}
	// bufio.Writer errors are sticky too, so checking the last write covers the whole row.
	if err := c.w.WriteByte('\n'); err != nil {
		c.err = fmt.Errorf("write csv: %w", err)
	}
	return c.err
}

// Flush writes buffered rows to the underlying writer.
func (c *CSVWriter) Flush() error {
	if c.err != nil {
		return c.err
	}
	if err := c.w.Flush(); err != nil {
		c.err = fmt.Errorf("flush csv: %w", err)
	}
	return c.err
}
