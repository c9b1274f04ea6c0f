package series

import (
	"fmt"
	nethttp "net/http"

	"github.com/tidemark/tidemark/platform/httpapi"
)

// Every CSV answer of the service, a dated page or an export, is written by writeCSV: the layout of
// the series' record type renders each stored record and httpapi.CSVWriter writes the rows, so that
// the same record is the same bytes wherever it is served.

// writeCSV writes to w the CSV answer of l's record type named filename: the header row, then the
// row of every stored record read passes to emit, oldest first as read gives them. The status line
// and headers (the attachment's, and what header adds) go out with the first bytes of the body, when
// the CSVWriter's buffer first fills or at the end: a read or a record that fails before then leaves
// w untouched, so that the failure can still be answered as an error. started reports whether
// anything was written; rows counts the records written.
func writeCSV(w nethttp.ResponseWriter, filename string, l *Layout, header func(nethttp.Header),
	read func(emit func(record []byte) error) error) (rows int64, started bool, err error) {
	body := &csvBody{w: w, filename: filename, header: header}
	cw := httpapi.NewCSVWriter(body)
	enc := l.encoder()
	row := make([]byte, 0, 4<<10)
	err = cw.Write(l.header)
	if err == nil {
		err = read(func(record []byte) error {
			var err error
			if row, err = enc.appendRow(row[:0], record); err != nil {
				return err
			}
			rows++
			return cw.WriteRow(row)
		})
	}
	if err == nil {
		err = cw.Flush()
	}
	return rows, body.started, err
}

// csvBody is the body of a CSV answer: its first write sends the status line and headers.
type csvBody struct {
	w        nethttp.ResponseWriter
	filename string
	header   func(nethttp.Header) // nil when the answer has no headers of its own
	started  bool
}

func (b *csvBody) Write(p []byte) (int, error) {
	if !b.started {
		b.started = true
		httpapi.SetCSVHeaders(b.w, b.filename)
		if b.header != nil {
			b.header(b.w.Header())
		}
		b.w.WriteHeader(nethttp.StatusOK)
	}
	return b.w.Write(p)
}

// csvPage is a dated page answered as CSV.
type csvPage struct {
	filename string
	layout   *Layout
	rows     []Row
}

// Respond implements httpapi.Responder. A page is far smaller than the CSVWriter's buffer, so a
// record that does not decode is answered as an error rather than cutting the page short.
func (p *csvPage) Respond(w nethttp.ResponseWriter, _ *nethttp.Request) error {
	_, _, err := writeCSV(w, p.filename, p.layout, nil, func(emit func([]byte) error) error {
		for _, row := range p.rows {
			if err := emit(row.Record); err != nil {
				return fmt.Errorf("record %s/%d: %w", row.TxSig, row.TxSigIndex, err)
			}
		}
		return nil
	})
	return err
}
