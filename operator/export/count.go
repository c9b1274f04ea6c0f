package export

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/tidemark/tidemark/platform/exportstream"
)

// countingReader passes a CSV stream through, counting its bytes and records (rows after the
// header) as they go by, so a running job can report progress and the stored count is the count of
// what was stored. At the end of the stream it checks the count the service declared: a mismatch
// or a missing declaration becomes the read error, so the upload fails instead of completing.
type countingReader struct {
	r        io.Reader
	declared func() (int64, bool)

	inQuote bool
	lines   atomic.Int64
	bytes   atomic.Int64
}

// records is the number of complete rows after the header seen so far.
func (c *countingReader) records() int64 { return max(c.lines.Load()-1, 0) }

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.scan(p[:n])
	if err == io.EOF {
		if verr := c.verify(); verr != nil {
			return n, verr
		}
	}
	return n, err
}

// scan counts newlines outside double quotes. Every field is quoted and quotes inside fields are
// doubled, so toggling on each quote tracks whether a newline ends a row or sits inside a field.
func (c *countingReader) scan(b []byte) {
	var lines int64
	q := c.inQuote
	for _, ch := range b {
		switch ch {
		case '"':
			q = !q
		case '\n':
			if !q {
				lines++
			}
		}
	}
	c.inQuote = q
	c.lines.Add(lines)
	c.bytes.Add(int64(len(b)))
}

func (c *countingReader) verify() error {
	if c.inQuote {
		return fmt.Errorf("export stream ended inside a quoted field")
	}
	if c.lines.Load() == 0 {
		return fmt.Errorf("export stream ended before its header row")
	}
	n, ok := c.declared()
	if !ok {
		return fmt.Errorf("export stream ended without its %s trailer after %d records (cut short)", exportstream.RecordCountTrailer, c.records())
	}
	if n != c.records() {
		return fmt.Errorf("export stream declared %d records but carried %d", n, c.records())
	}
	return nil
}
