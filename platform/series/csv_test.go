package series

import (
	"bytes"
	"errors"
	nethttp "net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
)

// TestWriteCSV checks when a CSV answer starts: not before its first buffer of rows, so a failure
// up to then leaves the response untouched for the caller to answer as an error.
func TestWriteCSV(t *testing.T) {
	l := LayoutOf[events.Fill]()
	fill := mustMarshal(t, sampleFill())
	errRead := errors.New("read failed")
	header := func(h nethttp.Header) { h.Set("Trailer", "X-Count") }
	cases := []struct {
		name        string
		records     int   // good records emitted before the read ends
		bad         bool  // then a record that does not decode
		readErr     error // then the read's own error
		wantStarted bool
	}{
		{"empty", 0, false, nil, true},
		{"a few records", 3, false, nil, true},
		{"read fails at once", 0, false, errRead, false},
		{"bad first record", 0, true, nil, false},
		{"read fails within the first buffer", 10, false, errRead, false},
		{"read fails after the first buffer", 1000, false, errRead, true},
		{"bad record after the first buffer", 1000, true, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			rows, started, err := writeCSV(w, "f.csv", l, header, func(emit func([]byte) error) error {
				for range c.records {
					if err := emit(fill); err != nil {
						return err
					}
				}
				if c.bad {
					if err := emit([]byte(`{"ts":"x"}`)); err != nil {
						return err
					}
				}
				return c.readErr
			})
			if fails := c.bad || c.readErr != nil; (err != nil) != fails {
				t.Fatalf("error %v, want one: %v", err, fails)
			}
			if rows != int64(c.records) {
				t.Errorf("%d rows, want %d", rows, c.records)
			}
			if started != c.wantStarted || (w.Body.Len() > 0) != started || (w.Header().Get("Content-Type") != "") != started {
				t.Fatalf("started %v with %d bytes and headers %v, want started %v", started, w.Body.Len(), w.Header(), c.wantStarted)
			}
			if !started {
				return
			}
			if got := w.Header().Get("Trailer"); got != "X-Count" {
				t.Errorf("Trailer %q", got)
			}
			if err == nil {
				want := wantCSV(l, fill, c.records)
				if !bytes.Equal(w.Body.Bytes(), want) {
					t.Errorf("body %q, want %q", w.Body.Bytes(), want)
				}
			}
		})
	}
}

// wantCSV is l's header row and then n rows of record.
func wantCSV(l *Layout, record []byte, n int) []byte {
	b := httpapi.AppendCSVRow(nil, l.header)
	for range n {
		b, _ = l.encoder().appendRow(b, record)
	}
	return b
}
