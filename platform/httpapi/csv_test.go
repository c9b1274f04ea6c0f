package httpapi_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/httpapi"
)

func TestCSVWriter(t *testing.T) {
	tests := []struct {
		name string
		rows [][]string
		want string
	}{
		{"plain", [][]string{{"ts", "txSig"}, {"1", "abc"}}, "\"ts\",\"txSig\"\n\"1\",\"abc\"\n"},
		{"empty field and row", [][]string{{"", "x"}, {}}, "\"\",\"x\"\n\n"},
		{"comma", [][]string{{"a,b", "c"}}, "\"a,b\",\"c\"\n"},
		{"quotes doubled", [][]string{{`say "hi"`, `"`, `""`}}, "\"say \"\"hi\"\"\",\"\"\"\",\"\"\"\"\"\"\n"},
		{"newlines kept inside quotes", [][]string{{"line1\nline2", "cr\r\nlf"}}, "\"line1\nline2\",\"cr\r\nlf\"\n"},
		{"negative amounts untouched", [][]string{{"-1500000", "=SUM(A1)"}}, "\"-1500000\",\"=SUM(A1)\"\n"},
	}
	// Every way to render a row must give the same bytes.
	ways := []struct {
		name  string
		write func(w *httpapi.CSVWriter, row []string) error
	}{
		{"Write", (*httpapi.CSVWriter).Write},
		{"WriteRow(AppendCSVRow)", func(w *httpapi.CSVWriter, row []string) error {
			return w.WriteRow(httpapi.AppendCSVRow([]byte("dropped"), row)[len("dropped"):])
		}},
		{"WriteRow(AppendCSVField)", func(w *httpapi.CSVWriter, row []string) error {
			var b []byte
			for i, f := range row {
				if i > 0 {
					b = append(b, ',')
				}
				b = httpapi.AppendCSVField(b, f)
			}
			return w.WriteRow(append(b, '\n'))
		}},
	}
	for _, tt := range tests {
		for _, way := range ways {
			t.Run(tt.name+"/"+way.name, func(t *testing.T) {
				var buf bytes.Buffer
				w := httpapi.NewCSVWriter(&buf)
				for _, row := range tt.rows {
					if err := way.write(w, row); err != nil {
						t.Fatal(err)
					}
				}
				if buf.Len() != 0 {
					t.Errorf("unbuffered: %d bytes before Flush", buf.Len())
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				if buf.String() != tt.want {
					t.Errorf("got  %q\nwant %q", buf.String(), tt.want)
				}
			})
		}
	}
}

// TestCSVWriterBuffers checks that rows go out once 32 KiB are buffered, whole and in order, rows
// larger than the buffer included.
func TestCSVWriterBuffers(t *testing.T) {
	small := []string{strings.Repeat("x", 1000)}
	huge := []string{strings.Repeat("y", 100<<10)}
	var want []byte
	var buf bytes.Buffer
	w := httpapi.NewCSVWriter(&buf)
	for i := range 100 {
		row := small
		if i == 50 {
			row = huge
		}
		if err := w.Write(row); err != nil {
			t.Fatal(err)
		}
		want = httpapi.AppendCSVRow(want, row)
		if pending := len(want) - buf.Len(); pending >= 32<<10 {
			t.Fatalf("row %d: %d bytes held back", i, pending)
		}
	}
	if buf.Len() == 0 {
		t.Fatal("nothing written before Flush")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("buffered output differs from the rows appended in order")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCSVWriterStickyError(t *testing.T) {
	w := httpapi.NewCSVWriter(failingWriter{})
	_ = w.Write([]string{"a"})
	if err := w.Flush(); err == nil {
		t.Fatal("Flush succeeded on a failing writer")
	}
	if err := w.Write([]string{"b"}); err == nil {
		t.Fatal("Write after a failure succeeded")
	}
	if err := w.WriteRow([]byte("\"c\"\n")); err == nil {
		t.Fatal("WriteRow after a failure succeeded")
	}
}

func TestCSVResponse(t *testing.T) {
	a := httpapi.New(httpapi.Options{})
	a.Handle(http.MethodGet, "/market/{symbol}/trades/{year}/{month}/{day}", func(r *http.Request) (any, error) {
		return httpapi.CSV{
			Filename: httpapi.CSVFilename("market", httpapi.PathVar(r, "symbol"), "trades", "2026-11-21"),
			Header:   []string{"ts", "txSig", "note"},
			Rows: [][]string{
				{"1763700000", "sig1", `with, comma and "quote"`},
				{"1763700001", "sig2", "multi\nline"},
			},
		}, nil
	})
	srv := mustServe(t, a)

	tests := []struct {
		name, symbol, wantDisposition string
	}{
		{"plain symbol", "SOL-PERP", `attachment; filename="market-SOL-PERP-trades-2026-11-21.csv"`},
		{"hostile symbol is sanitised", `a%22b%3B%20c`, `attachment; filename="market-a_b__c-trades-2026-11-21.csv"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustGet(t, srv.URL+"/market/"+tt.symbol+"/trades/2026/11/21")
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if got := r.header.Get("Content-Type"); got != "text/csv; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := r.header.Get("Content-Disposition"); got != tt.wantDisposition {
				t.Errorf("Content-Disposition = %q, want %q", got, tt.wantDisposition)
			}
			want := "\"ts\",\"txSig\",\"note\"\n" +
				"\"1763700000\",\"sig1\",\"with, comma and \"\"quote\"\"\"\n" +
				"\"1763700001\",\"sig2\",\"multi\nline\"\n"
			if r.body != want {
				t.Errorf("body = %q, want %q", r.body, want)
			}
		})
	}
}

// BenchmarkCSVWriter writes a row shaped like a fill's (39 short fields, one with quotes).
func BenchmarkCSVWriter(b *testing.B) {
	row := make([]string, 39)
	for i := range row {
		row[i] = strconv.Itoa(1_000_000_000 + i*7919)
	}
	row[5] = `say "hi"`
	w := httpapi.NewCSVWriter(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(row); err != nil {
			b.Fatal(err)
		}
	}
}
